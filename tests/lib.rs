//! Helpers shared by the fixture-driven tests: every fixture is a file or a folder
//! (one program) under `tests/fixtures/{valid,invalid}`.

use std::path::{Path, PathBuf};
use tv_compiler::driver::{self, Compilation};

/// A fixture and the name its snapshots are filed under.
pub struct Fixture {
    pub name: String,
    pub path: PathBuf,
}

/// The fixtures of one folder, in name order. Paths are relative to this crate, which
/// is the working directory of its tests, so diagnostics show short stable paths.
pub fn fixtures(kind: &str) -> Vec<Fixture> {
    let dir = Path::new("tests/fixtures").join(kind);
    let mut out: Vec<Fixture> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "xml"))
        .map(|path| Fixture {
            name: path
                .file_stem()
                .expect("file name")
                .to_string_lossy()
                .into_owned(),
            path,
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

pub fn compile(f: &Fixture) -> Compilation {
    driver::check_paths(std::slice::from_ref(&f.path)).unwrap_or_else(|e| panic!("{e}"))
}

/// The diagnostics as `tvc check` prints them, without colour.
pub fn rendered(c: &Compilation) -> String {
    c.diags.render(&c.sources, false)
}

/// Runs `assert` with insta writing to `snapshots/<suite>/` at the repository root.
pub fn in_suite(suite: &str, assert: impl FnOnce()) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("snapshots")
            .join(suite),
    );
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(assert);
}
