//! Scripts are real processes: inputs, exit codes, timeouts that kill a whole process
//! group, capped output, bytes that are not UTF-8, and values that try to inject.

use serde_json::json;
use std::time::{Duration, Instant};
use tv_runtime::script::ScriptRunner;
use tv_vm::bundle::TaskMeta;
use tv_vm::host::ScriptRequest;
use tv_vm::shell_quote;

fn request(command: &str, inputs: serde_json::Value, timeout: Option<u64>) -> ScriptRequest {
    ScriptRequest {
        task: TaskMeta {
            timeout,
            ..TaskMeta::named("test#1")
        }
        .into(),
        command: command.into(),
        inputs: inputs.as_object().cloned().unwrap_or_default(),
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn inputs_arrive_in_the_environment_and_as_json_on_stdin() {
    let req = request(
        r#"printf '%s|' "$TVM_INPUT_NAME"; cat"#,
        json!({"name": "Ada", "n": 3}),
        None,
    );
    let r = rt()
        .block_on(ScriptRunner::default().run(&req))
        .expect("runs");
    assert_eq!(r.exit_code, 0);
    assert_eq!(r.stdout, r#"Ada|{"name":"Ada","n":3}"#);
}

#[test]
fn a_non_zero_exit_is_reported_with_its_stderr() {
    let req = request("echo broken >&2; exit 3", json!({}), None);
    let r = rt()
        .block_on(ScriptRunner::default().run(&req))
        .expect("runs");
    assert_eq!((r.exit_code, r.stderr.as_str()), (3, "broken\n"));
}

#[test]
fn a_timeout_kills_the_script_and_the_children_it_started() {
    let dir = std::env::temp_dir().join(format!("tvm-script-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let pidfile = dir.join("child.pid");
    let cmd = format!(
        "sleep 30 & echo $! > {}; wait",
        shell_quote(&pidfile.display().to_string())
    );
    let start = Instant::now();
    let err = rt()
        .block_on(ScriptRunner::default().run(&request(&cmd, json!({}), Some(1))))
        .expect_err("times out");
    assert_eq!(err.reason, tv_vm::result::Reason::ExecutionTimeout);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
    let pid = std::fs::read_to_string(&pidfile).expect("pid file");
    std::thread::sleep(Duration::from_millis(200));
    // Gone, or a zombie waiting for its new parent: either way no longer running.
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z "),
        "the child still runs: {stat}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn huge_output_is_cut_at_the_cap_with_a_note() {
    let runner = ScriptRunner {
        max_output: 1000,
        ..ScriptRunner::default()
    };
    let req = request("head -c 3000000 /dev/zero | tr '\\0' a", json!({}), None);
    let r = rt().block_on(runner.run(&req)).expect("runs");
    assert_eq!(r.stdout.len(), 1000);
    assert_eq!(r.notes, vec!["stdout cut at 1000 of 3000000 bytes"]);
}

#[test]
fn output_that_is_not_utf8_survives_with_a_note() {
    let req = request(r"printf 'ok \377 end'", json!({}), None);
    let r = rt()
        .block_on(ScriptRunner::default().run(&req))
        .expect("runs");
    assert_eq!(r.stdout, "ok \u{fffd} end");
    assert_eq!(
        r.notes,
        vec!["stdout is not UTF-8; invalid bytes were replaced"]
    );
}

#[test]
fn a_quoted_value_cannot_inject_a_command() {
    let dir = std::env::temp_dir().join(format!("tvm-inject-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let target = dir.join("pwned");
    for hostile in [
        format!("x'; touch {}; echo '", target.display()),
        format!("$(touch {})", target.display()),
        format!("`touch {}`", target.display()),
        format!("a\"; touch {}; \"", target.display()),
    ] {
        let cmd = format!("echo {}", shell_quote(&hostile));
        let r = rt()
            .block_on(ScriptRunner::default().run(&request(&cmd, json!({}), None)))
            .expect("runs");
        assert_eq!(r.stdout, format!("{hostile}\n"));
        assert!(!target.exists(), "{hostile} ran a command");
    }
    std::fs::remove_dir_all(&dir).ok();
}
