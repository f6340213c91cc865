//! What the tests that run `tvm` share: the checked-in bundles, a fresh folder per
//! scenario, and a runtime for the test server.

#![allow(dead_code)]

pub use super::temp::TempDir;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A checked-in bundle of `tests/golden/`.
pub fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../tests/golden/{name}.bin"))
}

/// `tvm run` of a code-review bundle's `summarize_change` with a one-line diff for
/// `ops`; callers add the provider and whatever else the scenario needs.
pub fn summarize_change(bundle: &str) -> Vec<&str> {
    vec![
        "run",
        bundle,
        "--entry",
        "summarize_change",
        "--arg",
        "diff=+x",
        "--arg",
        "audience=ops",
    ]
}

/// `source` compiled into `dir/survey.bin` (the program kept as `dir/survey.xml`),
/// where `tvm` can read it.
pub fn compiled(dir: &Path, source: &str) -> PathBuf {
    let xml = dir.join("survey.xml");
    std::fs::write(&xml, source).expect("write the program");
    let compiled = tv_compiler::driver::check_paths(&[xml]).expect("reads the program");
    let (_, bundle) = tv_compiler::driver::compile(&compiled).expect("compiles");
    let path = dir.join("survey.bin");
    std::fs::write(&path, bundle.to_bytes()).expect("write the bundle");
    path
}

/// A fresh, empty folder for one scenario of the test binary `suite`.
pub fn scratch(suite: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tvm-{suite}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// A runtime whose workers serve the test server while `tvm` runs as a child.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

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

/// Waits until `what` holds, for a process running beside the test; fails after 20 s.
pub fn wait_for(what: impl Fn() -> bool) {
    let started = Instant::now();
    while !what() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the run never got there"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}
