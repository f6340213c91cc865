//! Running `tvm` as a user does: only the command line's tests know where cargo built it.

/// `tvm` with `args`, nothing on stdin, and none of the provider settings of the
/// environment the tests run in: each test sets what it needs.
pub fn tvm(args: &[&str]) -> std::process::Command {
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
pub fn run_tvm(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
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
