//! Scripts are real processes: inputs, exit codes, timeouts that kill a whole process
//! group, capped output, bytes that are not UTF-8, and values that try to inject.

use serde_json::json;
use std::time::{Duration, Instant};
use tv_runtime::script::ScriptRunner;
use tv_vm::bundle::TaskMeta;
use tv_vm::host::ScriptRequest;
use tv_vm::shell::shell_quote;

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

/// `tvm run` of the template `xml`, written to `t.xml` in `dir`, run in `dir` with
/// the echo provider and `args`: its result.
fn run_in(dir: &std::path::Path, xml: &str, args: &[&str]) -> serde_json::Value {
    std::fs::write(dir.join("t.xml"), xml).expect("write the template");
    let mut all = vec!["run", "t.xml", "--provider", "echo"];
    all.extend_from_slice(args);
    let out = crate::support::files::tvm(&all)
        .current_dir(dir)
        .output()
        .expect("run tvm");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn a_value_that_would_be_read_as_an_option_fails_the_script_before_it_starts() {
    let dir = crate::support::temp::TempDir::new("option");
    let owned = dir.path().join("owned");
    let order = format!("order=--output={}", owned.display());
    let xml = r#"<task name="sorted" type="script">
      <inputs><input name="order">How to sort</input></inputs>
      <script_execution><command>touch started; sort {{order}} /dev/null</command></script_execution>
    </task>"#;
    let r = run_in(dir.path(), xml, &["--arg", &order]);
    let error = &r["notes"]["error"];
    assert_eq!(
        (&r["status"], &error["reason"]),
        (&json!("FAILED"), &json!("input_validation_failure"))
    );
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`{{order}}`") && message.contains("option"),
        "{message}"
    );
    assert_eq!(error["details"]["hole"], "order");
    assert!(!owned.exists(), "sort wrote the file the value named");
    assert!(!dir.path().join("started").exists(), "the script started");

    // After `--`, the value is an operand: sort looks for a file of that name.
    let r = run_in(
        dir.path(),
        &xml.replace("sort {{order}}", "sort -- {{order}}"),
        &["--arg", &order],
    );
    assert_eq!(r["notes"]["error"]["details"]["exitCode"], 2);
    assert!(!owned.exists());
    // A value that does not start with `-` runs as always.
    let r = run_in(dir.path(), xml, &["--arg", "order=-"]);
    assert_eq!(r["notes"]["error"]["reason"], "input_validation_failure");
    let r = run_in(dir.path(), xml, &["--arg", "order=/dev/null"]);
    assert_eq!(r["status"], "COMPLETE");
}
