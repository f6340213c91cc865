//! Running `tvm` as a user does: only the command line's tests know where cargo built it.

/// `tvm` with `args`, nothing on stdin, and none of the provider settings of the
/// environment the tests run in: each test sets what it needs.
pub(crate) fn tvm(args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tvm"));
    cmd.args(args).stdin(std::process::Stdio::null());
    for k in [
        "TVM_PROVIDER",
        "TVM_MODEL",
        "TVM_JSON_MODE",
        "TVM_CACHE",
        "TVM_MAX_COST",
        "TVM_CONCURRENCY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    ] {
        cmd.env_remove(k);
    }
    cmd
}

/// Runs `tvm` with `args` and the environment variables `env` set; its exit code,
/// stdout and stderr.
pub(crate) fn run_tvm(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = tvm(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run tvm");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// How long a run that must not wait on a file may take before it is taken to wait.
const DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

/// Runs `cmd`, killing it at the deadline (and failing the test, naming `what`): its
/// exit code and what it wrote, stdout then stderr. For runs that must end at once
/// rather than wait on a FIFO, a device or a lock.
pub(crate) fn within_deadline(mut cmd: std::process::Command, what: &str) -> (i32, String) {
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tvm starts");
    let started = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: tvm was still running after {DEADLINE:?}, blocked on the file");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = child.wait_with_output().expect("output");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}
