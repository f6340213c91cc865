//! What a script cannot do to the run (DESIGN §18): read the API keys from
//! `/proc/<tvm>/environ`. `tvm` marks itself non-dumpable; root may read any process's
//! environment (CAP_SYS_PTRACE) whatever the flag, so the run is made as an unprivileged
//! user, nobody (65534), through `setpriv`, as a deployment that cares runs `tvm`.

#[path = "support/files.rs"]
mod files;
#[path = "support/http.rs"]
mod http;

use files::{golden, runtime, scratch};
use http::{Reply, Server};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use tv_vm::bundle::{Bundle, Const};

const KEY: &str = "sk-proc-environ-SECRET-31337";

/// `script_between_llm_steps` with its script's `sleep 3;` replaced by a read of the
/// parent's (tvm's) environment, one variable a line.
fn environ_reading_bundle(dir: &Path) -> std::path::PathBuf {
    let bytes = std::fs::read(golden("script_between_llm_steps")).expect("golden");
    let mut b = Bundle::from_bytes(&bytes).expect("bundle");
    let mut replaced = 0;
    for c in &mut b.constants {
        if let Const::Str(s) = c {
            if s.starts_with("sleep 3; ") {
                *s = s.replacen("sleep 3; ", "tr '\\0' '\\n' < /proc/$PPID/environ; ", 1);
                replaced += 1;
            }
        }
    }
    assert_eq!(replaced, 1, "the golden script changed: {:?}", b.constants);
    let path = dir.join("environ.bin");
    std::fs::write(&path, b.to_bytes()).expect("write");
    path
}

/// `tvm` as user and group 65534, without root's groups or capabilities.
fn tvm_as_nobody(args: &[&str], url: &str) -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_tvm"))
        .args(args)
        .env_remove("TVM_PROVIDER")
        .env("OPENAI_BASE_URL", url)
        .env("OPENAI_API_KEY", KEY)
        .env("ANTHROPIC_API_KEY", KEY);
    cmd
}

#[test]
fn a_script_of_the_same_user_cannot_read_the_keys_from_tvms_proc_environ() {
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("setpriv (util-linux) is not installed; the test cannot change user");
        return;
    }
    let rt = runtime();
    let server = rt.block_on(Server::start(|_, _| {
        Reply::json(
            200,
            json!({"choices": [{"message": {"role": "assistant", "content": "ok"}}]}),
        )
    }));
    let dir = scratch("key_reach", "environ");
    // nobody writes the journal and the trace here.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let bundle = environ_reading_bundle(&dir);
    let (journal, trace) = (dir.join("run.jsonl"), dir.join("trace.jsonl"));
    let args = [
        "run",
        bundle.to_str().expect("path"),
        "--provider",
        "openai",
        "--journal",
        journal.to_str().expect("path"),
        "--trace",
        trace.to_str().expect("path"),
    ];
    let out = tvm_as_nobody(&args, &server.url())
        .output()
        .expect("run tvm");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let journal_text = std::fs::read_to_string(&journal).expect("journal");
    let trace_text = std::fs::read_to_string(&trace).unwrap_or_default();
    for (what, text) in [
        ("result", &*stdout),
        ("stderr", &*stderr),
        ("journal", &journal_text),
        ("trace", &trace_text),
    ] {
        assert!(!text.contains(KEY), "the key reached the {what}:\n{text}");
    }
    // The script did try, and was refused.
    let script = journal_text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["reply"]["kind"] == "script")
        .expect("the script's answer");
    let err = script["reply"]["stderr"].as_str().unwrap_or("");
    assert!(err.contains("Permission denied"), "{script}");
    let _ = std::fs::remove_dir_all(&dir);
}
