//! What the tests that run `tvm` share, but for running it (which only the command
//! line's tests can: the binary's path is theirs): the checked-in bundles, programs
//! compiled for `tvm` to read, a fresh folder per scenario, and a runtime for the test
//! server.

pub use crate::temp::TempDir;
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
