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

/// Runs `check` on every fixture of one folder, each fixture its own snapshot (insta's
/// `glob!`): a mismatch is reported and the other fixtures still run; the test fails at
/// the end with every mismatch shown.
pub fn each_fixture(kind: &str, mut check: impl FnMut(&Fixture)) {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let crate_dir = crate_dir
        .canonicalize()
        .unwrap_or_else(|_| crate_dir.into());
    insta::glob!("fixtures", &format!("{kind}/*"), |path| {
        if !(path.is_dir() || path.extension().is_some_and(|e| e == "xml")) {
            return;
        }
        let name = path.file_stem().expect("file name");
        check(&Fixture {
            name: name.to_string_lossy().into_owned(),
            path: path.strip_prefix(&crate_dir).unwrap_or(path).to_path_buf(),
        });
    });
}

pub fn compile(f: &Fixture) -> Compilation {
    driver::check_paths(std::slice::from_ref(&f.path)).unwrap_or_else(|e| panic!("{e}"))
}

/// The fixture checked as `tvc compile` checks a large program: its items held as
/// outlines, built again `window` at a time, and lowered as they are checked when
/// `bundle`.
pub fn outlined(f: &Fixture, window: usize, bundle: bool) -> Compilation {
    let how = driver::Outlined { window, bundle };
    driver::check_paths_outlined(std::slice::from_ref(&f.path), how)
        .unwrap_or_else(|e| panic!("{e}"))
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
    // Each fixture names its own snapshot: not the suffix and input file `glob!` sets.
    settings.remove_snapshot_suffix();
    settings.remove_input_file();
    settings.bind(assert);
}

/// A compiled program, ready to run.
pub fn bundle_of(src: &str) -> tv_vm::bundle::Verified {
    let c = driver::check_texts([("test.xml", src)]);
    assert!(
        !c.diags.has_errors(),
        "{}",
        c.diags.render_short(&c.sources)
    );
    let (_, bundle) = driver::compile(&c).expect("compiles");
    tv_vm::bundle::Bundle::from_bytes(&bundle.to_bytes()).expect("loads back")
}

/// A deterministic host: LLM replies come from `reply`, scripts echo their command,
/// and every request is kept for the test to inspect.
pub struct Scripted<F> {
    pub reply: F,
    pub requests: Vec<tv_vm::host::HostRequest>,
}

impl<F: FnMut(&tv_vm::host::LlmRequest) -> String> tv_vm::host::Host for Scripted<F> {
    fn call(&mut self, request: &tv_vm::host::HostRequest) -> tv_vm::host::HostReply {
        use tv_vm::host::{HostReply, HostRequest, LlmReply, ScriptReply};
        self.requests.push(request.clone());
        match request {
            HostRequest::Llm(r) => HostReply::Llm(Ok(LlmReply {
                content: (self.reply)(r),
                input_tokens: 10,
                output_tokens: 5,
                ..LlmReply::default()
            })),
            HostRequest::Script(s) => HostReply::Script(Ok(ScriptReply {
                stdout: s.command.clone(),
                ..ScriptReply::default()
            })),
        }
    }
}

/// Runs `entry` with named arguments through a synchronous host loop.
pub fn run_with(
    bundle: &tv_vm::bundle::Verified,
    entry: &str,
    args: serde_json::Value,
    limits: tv_vm::limits::Limits,
    host: &mut impl tv_vm::host::Host,
) -> serde_json::Value {
    use tv_vm::interp::Vm;
    let (function, values) = bundle
        .entry_args(entry, &args)
        .unwrap_or_else(|| panic!("no entry {entry}"));
    let mut vm = Vm::new(bundle, function, values, limits);
    vm.run_with(host).into()
}

/// The user message of every LLM request, in order.
pub fn prompts(requests: &[tv_vm::host::HostRequest]) -> Vec<String> {
    requests
        .iter()
        .filter_map(|r| match r {
            tv_vm::host::HostRequest::Llm(l) => l.messages.last().map(|m| m.content.clone()),
            tv_vm::host::HostRequest::Script(_) => None,
        })
        .collect()
}

/// A scripted host answering every LLM call with `reply`.
pub fn scripted<F: FnMut(&tv_vm::host::LlmRequest) -> String>(reply: F) -> Scripted<F> {
    Scripted {
        reply,
        requests: Vec::new(),
    }
}

/// The `status` of a task result.
pub fn status(r: &serde_json::Value) -> &str {
    r["status"].as_str().unwrap_or("")
}
