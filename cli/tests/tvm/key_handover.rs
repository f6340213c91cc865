//! The keys leave `tvm`'s environment block before anything runs (DESIGN §18):
//! `/proc/PID/environ` shows the environment a process was started with, and root reads
//! it of any process, non-dumpable or not. A script that reads the environment of every
//! process above it, `tvm` first, finds no key, whether `tvm` runs as root (as these
//! tests do where they run as root) or not, in `tvm run`, `tvm batch` and `tvm test`; nor
//! does it inherit the pipe the keys came on, nor find a key in its own environment. The
//! NATS token and password are keys too. Neither its output, nor the journal, nor the
//! result holds a key.

use crate::support::files::{self, TempDir};
use std::process::Output;

const KEY: &str = "sk-handover-SECRET-4242";

/// A script that prints the environment of each process above it (`tvm`, then
/// `tvm`'s parents) and then `verdict: clean`, or `verdict: LEAK` when one holds a key
/// or its own environment does (the pattern is cut, so that the command itself holds
/// none), or `verdict: FD` when the descriptor the keys came on is open in the script.
/// A test of it expects `clean`.
const PEEK: &str = r#"<library>
  <task name="peek" type="script">
    <script_execution><command>verdict=clean; p=$PPID
case "$(env)" in *sk-hand""over-*) verdict=LEAK;; esac
while [ "$p" -gt 1 ]; do
  env=$(tr '\0' '\n' &lt; /proc/$p/environ 2&gt;&amp;1)
  printf '== %s\n%s\n' "$p" "$env"
  case "$env" in *sk-hand""over-*) verdict=LEAK;; esac
  p=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$p/status)
done
fd=$(tr '\0' '\n' &lt; /proc/$PPID/environ | sed -n 's/^TVM_KEYS_FD=//p')
if [ -n "$fd" ] &amp;&amp; [ -e /proc/self/fd/$fd ]; then verdict=FD; fi
echo "verdict: $verdict"</command></script_execution>
  </task>
  <test name="no process above a script holds a key" entry="peek">
    <expect path="content" contains="verdict: clean"/>
  </test>
</library>"#;

/// `tvm` in `dir` with both keys and the NATS token and password in its environment,
/// and a marker beside them.
fn tvm(dir: &TempDir, args: &[&str]) -> Output {
    files::tvm(args)
        .current_dir(dir.path())
        .env("OPENAI_API_KEY", KEY)
        .env("ANTHROPIC_API_KEY", KEY)
        .env("NATS_TOKEN", KEY)
        .env("NATS_PASSWORD", KEY)
        .env("HANDOVER_MARKER", "visible")
        .output()
        .expect("run tvm")
}

/// Whether the tests run as root (`/proc/self` belongs to the process's user).
fn root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Checks what a script printed: it ran, read `tvm`'s environment block when it could
/// (as root: the marker is there, and the descriptor the keys came on is named), and
/// found no key there or in any process above.
fn check_script_output(what: &str, text: &str) {
    assert!(text.contains("verdict: clean"), "{what}: {text}");
    if root() {
        assert!(text.contains("HANDOVER_MARKER=visible"), "{what}: {text}");
        assert!(text.contains("TVM_KEYS_FD="), "{what}: {text}");
    }
}

/// Neither key nor its start in any of `texts`.
fn assert_no_key(what: &str, texts: &[&str]) {
    for text in texts {
        assert!(!text.contains(&KEY[..14]), "{what}: the key is in {text}");
    }
}

#[test]
fn a_script_of_tvm_run_finds_no_key_in_the_environment_of_tvm_or_any_process_above() {
    let dir = TempDir::new("handover-run");
    dir.write("peek.xml", PEEK);
    let out = tvm(&dir, &["run", "peek.xml", "--journal", "run.jsonl"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let journal = std::fs::read_to_string(dir.path().join("run.jsonl")).expect("journal");
    check_script_output("run", &stdout);
    assert_no_key("run", &[&stdout, &stderr, &journal]);
}

#[test]
fn a_script_of_tvm_batch_finds_no_key_either() {
    let dir = TempDir::new("handover-batch");
    dir.write("peek.xml", PEEK).write("rows.jsonl", "{}\n{}\n");
    let args = [
        "batch",
        "peek.xml",
        "--inputs",
        "rows.jsonl",
        "--out",
        "out.jsonl",
    ];
    let out = tvm(&dir, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results = std::fs::read_to_string(dir.path().join("out.jsonl")).expect("results");
    assert_eq!(results.lines().count(), 2, "{results}");
    for line in results.lines() {
        let row: serde_json::Value = serde_json::from_str(line).expect("a row");
        check_script_output("batch", row["result"]["content"].as_str().unwrap_or(""));
    }
    assert_no_key("batch", &[&results, &stderr]);
}

#[test]
fn a_script_of_tvm_test_finds_no_key_either() {
    let dir = TempDir::new("handover-test");
    dir.write("peek.xml", PEEK);
    let out = tvm(&dir, &["test", "peek.xml"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.starts_with("PASS  no process above a script holds a key"),
        "{stdout}"
    );
    assert_no_key("test", &[&stdout, &stderr]);
}

#[test]
fn tvm_started_again_keeps_its_pid_exit_code_and_arguments() {
    let dir = TempDir::new("handover-exit");
    // A usage error (exit 2) names the file given, as the first start would have.
    let out = tvm(&dir, &["run", "missing.xml"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("tvm: error: missing.xml"), "{stderr}");
    // A script's `$PPID` is the pid the test started: no process was left in between.
    dir.write(
        "ppid.xml",
        r#"<task name="ppid" type="script"><script_execution><command>echo $PPID</command></script_execution></task>"#,
    );
    let child = files::tvm(&["run", "ppid.xml", "--output", "text"])
        .current_dir(dir.path())
        .env("OPENAI_API_KEY", KEY)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("tvm starts");
    let pid = child.id();
    let out = child.wait_with_output().expect("tvm ends");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), pid.to_string());
}
