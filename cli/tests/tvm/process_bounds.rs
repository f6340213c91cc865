//! What a script cannot do to the run (DESIGN §18): read the API keys from
//! `/proc/<tvm>/environ` (`tvm` marks itself non-dumpable; root may read any process's
//! environment, CAP_SYS_PTRACE, whatever the flag, so that run is made as an
//! unprivileged user, nobody (65534), through `setpriv`, as a deployment that cares runs
//! `tvm`); leave processes behind by leaving its process group (`setsid`); or fail to
//! start because an input is too large for the environment or holds a NUL byte.

use crate::support::files;
use crate::support::http;

use files::{golden, runtime, scratch};
use http::{Reply, Server};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use tv_runtime::script::ScriptRunner;
use tv_vm::bundle::{Bundle, Const, TaskMeta};
use tv_vm::host::ScriptRequest;
use tv_vm::shell_quote;

const KEY: &str = "sk-proc-environ-SECRET-31337";

/// `script_between_llm_steps` with its script's `sleep 3;` replaced by a read of the
/// parent's (tvm's) environment, one variable a line.
fn environ_reading_bundle(dir: &Path) -> std::path::PathBuf {
    let bytes = std::fs::read(golden("script_between_llm_steps")).expect("golden");
    let mut b = Bundle::from_bytes(&bytes).expect("bundle").into_bundle();
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
    assert!(
        Command::new("setpriv").arg("--version").output().is_ok(),
        "setpriv (util-linux) is needed to run tvm as another user; .ci/run installs it"
    );
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

fn request(command: &str, inputs: serde_json::Value, timeout: Option<u64>) -> ScriptRequest {
    ScriptRequest {
        task: TaskMeta {
            timeout,
            ..TaskMeta::named("bounds#1")
        }
        .into(),
        command: command.into(),
        inputs: inputs.as_object().cloned().unwrap_or_default(),
    }
}

fn run(req: &ScriptRequest) -> Result<tv_vm::host::ScriptReply, tv_vm::host::HostError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(ScriptRunner::default().run(req))
}

/// Whether process `pid` still runs (a zombie waiting to be reaped does not).
fn runs(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    !stat.is_empty() && !stat.contains(") Z ")
}

fn pid_file(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("tvm-bounds-{}-{name}.pid", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

fn escaping(pid_file: &Path, then: &str) -> String {
    // Outside the group and the session, with its output away from the pipes.
    let quoted = shell_quote(&pid_file.display().to_string());
    format!("setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $! > {quoted}; {then}")
}

#[test]
fn a_process_that_left_the_group_with_setsid_dies_when_the_script_times_out() {
    let pids = pid_file("timeout");
    let err =
        run(&request(&escaping(&pids, "sleep 30"), json!({}), Some(1))).expect_err("times out");
    assert_eq!(err.reason, tv_vm::result::Reason::ExecutionTimeout);
    let pid = std::fs::read_to_string(&pids).expect("pid file");
    assert!(!runs(&pid), "the setsid process {pid} survived the timeout");
    let _ = std::fs::remove_file(&pids);
}

#[test]
fn a_process_that_left_the_group_with_setsid_dies_when_the_script_exits() {
    let pids = pid_file("exit");
    let started = Instant::now();
    let reply = run(&request(&escaping(&pids, "exit 0"), json!({}), Some(30))).expect("runs");
    assert_eq!(reply.exit_code, 0);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let pid = std::fs::read_to_string(&pids).expect("pid file");
    assert!(!runs(&pid), "the setsid process {pid} outlived its script");
    let _ = std::fs::remove_file(&pids);
}

#[test]
fn a_one_mib_input_reaches_the_script_through_a_file_and_stdin() {
    let big = "x".repeat(1 << 20);
    let command = r#"printf '%s|' "${TVM_INPUT_BIG-unset}" "$TVM_INPUT_SMALL" "$(wc -c < "$TVM_INPUT_BIG_FILE")" "$(wc -c)"; printf '%s' "$TVM_INPUT_BIG_FILE""#;
    let reply = run(&request(command, json!({"big": big, "small": "s"}), None)).expect("starts");
    assert_eq!(reply.exit_code, 0, "{}", reply.stderr);
    let parts: Vec<&str> = reply.stdout.split('|').map(str::trim).collect();
    let stdin_bytes = json!({"big": big, "small": "s"})
        .to_string()
        .len()
        .to_string();
    assert_eq!(
        parts[..4],
        ["unset", "s", "1048576", stdin_bytes.as_str()],
        "{}",
        reply.stdout
    );
    assert!(
        !Path::new(parts[4]).exists(),
        "the input file {} was left behind",
        parts[4]
    );
    let note = reply.notes.iter().any(|n| n.contains("TVM_INPUT_BIG_FILE"));
    assert!(note, "{:?}", reply.notes);
}

#[test]
fn an_input_holding_a_nul_byte_reaches_the_script_through_a_file_and_stdin() {
    let command = r#"printf '%s|%s' "${TVM_INPUT_RAW-unset}" "$(od -An -c < "$TVM_INPUT_RAW_FILE" | tr -d ' \n')""#;
    let reply = run(&request(command, json!({"raw": "a\u{0}b"}), None)).expect("starts");
    assert_eq!(reply.exit_code, 0, "{}", reply.stderr);
    assert_eq!(reply.stdout, r"unset|a\0b");
    assert!(
        reply.notes.iter().any(|n| n.contains("NUL")),
        "{:?}",
        reply.notes
    );
}

#[test]
fn a_command_holding_a_nul_byte_is_refused_with_a_clear_error() {
    let command = format!("echo {}", shell_quote("a\u{0}b"));
    let err = run(&request(&command, json!({}), None)).expect_err("refused");
    assert!(err.message.contains("NUL byte"), "{}", err.message);
}

#[test]
fn a_command_too_long_for_one_argument_still_runs() {
    let command = format!("printf %s {} | wc -c", shell_quote(&"y".repeat(300_000)));
    let reply = run(&request(&command, json!({}), None)).expect("starts");
    assert_eq!(
        (reply.exit_code, reply.stdout.trim()),
        (0, "300000"),
        "{}",
        reply.stderr
    );
}
