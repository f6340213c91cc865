//! What the tests that run `tvm` share: the checked-in bundles, a fresh folder per
//! scenario, and a runtime for the test server.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A checked-in bundle of `tests/golden/`.
pub fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../tests/golden/{name}.bin"))
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
