//! `tvm test PATH...`: compiles the templates, runs each `<test>` offline (its replies,
//! then its cassettes; nothing is sent to a provider), checks its expectations, and
//! prints one line per test and `N passed, M failed` (DESIGN §17). The running and
//! checking are the runtime's ([`tv_runtime::testing`]); here the compiler's tests
//! become its [`TestSpec`]s, and snapshots are compared and lines printed.

use crate::{output, snapshots, source};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tv_compiler::ast::{Check, TestCase, TestValue};
use tv_compiler::driver::Compilation;
use tv_runtime::observe::Trace;
use tv_runtime::testing::{self, TestSpec};
use tv_runtime::ReplyRule;

#[derive(Args)]
pub(crate) struct TestArgs {
    /// Template files, or directories of them, compiled as one program.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Only the tests whose name holds this text.
    #[arg(long, value_name = "TEXT")]
    filter: Option<String>,
    /// Also compare each test's result and each template's listing with its `.snap`
    /// file under `snapshots/` beside the sources; a new or changed one is written as
    /// `.snap.new` for `cargo insta review`.
    #[arg(long)]
    snapshots: bool,
    /// With --snapshots: write new and changed snapshots as `.snap` directly.
    #[arg(long, requires = "snapshots")]
    accept: bool,
    /// Write one JSON line per host call of the tests, as `tvm run --trace` does, each
    /// naming its test first.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
}

pub(crate) fn test(args: TestArgs) -> Result<ExitCode, String> {
    let (c, loaded) = source::compile(&args.paths)?;
    let tests: Vec<&TestCase> = c
        .program
        .modules
        .iter()
        .flat_map(|m| &m.tests)
        .filter(|t| args.filter.as_ref().is_none_or(|f| t.name.node.contains(f)))
        .collect();
    // Nothing tested is no success: a filter with a typo, or tests that went missing,
    // would otherwise pass in CI.
    if tests.is_empty() && (args.filter.is_some() || !args.snapshots) {
        output::say(&format!("tvm: error: {}\n", nothing_to_run(&c, &args)));
        return Ok(ExitCode::from(1));
    }
    let trace = args.trace.as_deref().map(Trace::create).transpose()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let mode = snapshots::Mode::new(args.snapshots, args.accept);
    let (mut passed, mut failed) = (0usize, 0usize);
    for test in &tests {
        let dir = folder(&c, test);
        let traced = trace.as_ref().map(|t| t.for_test(&test.name.node));
        let spec = spec(test, &dir);
        let mut problems = match runtime.block_on(spec.run(&loaded.bundle, traced)) {
            Ok(result) => {
                let mut problems = spec.unmet(&result);
                let name = format!(
                    "{}__test_{}",
                    stem(&c, test),
                    snapshots::slug(&test.name.node)
                );
                let text = serde_json::to_string_pretty(&result).unwrap_or_default();
                let what = format!("the result of test `{}`", test.name.node);
                problems.extend(mode.compare(&dir, &name, &source_of(&c, test), &what, &text)?);
                problems
            }
            Err(problem) => vec![problem],
        };
        let at = position(&c, test);
        if problems.is_empty() {
            passed += 1;
            output::print(&format!("PASS  {}  {at}\n", test.name.node))?;
        } else {
            failed += 1;
            output::print(&format!("FAIL  {}  {at}\n", test.name.node))?;
            for p in problems.drain(..) {
                output::print(&format!("      {}\n", p.replace('\n', "\n      ")))?;
            }
        }
    }
    if mode.on() {
        for problem in snapshots::listings(&c, &loaded.bundle, &mode)? {
            failed += 1;
            output::print(&format!("FAIL  {problem}\n"))?;
        }
    }
    output::print(&format!("{passed} passed, {failed} failed\n"))?;
    if tests.is_empty() {
        output::say("tvm: warning: no <test> elements: only the listings were compared\n");
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Why no test runs: the filter matches none of the tests (named, so that a typo
/// shows), or the templates hold none.
fn nothing_to_run(c: &Compilation, args: &TestArgs) -> String {
    let names: Vec<&str> = (c.program.modules.iter())
        .flat_map(|m| &m.tests)
        .map(|t| t.name.node.as_str())
        .collect();
    let paths: Vec<String> = args.paths.iter().map(|p| p.display().to_string()).collect();
    let Some(filter) = &args.filter else {
        return format!(
            "no <test> elements in {}: nothing was tested",
            paths.join(" ")
        );
    };
    if names.is_empty() {
        return format!(
            "--filter `{filter}`: no <test> elements in {}: nothing was tested",
            paths.join(" ")
        );
    }
    const SHOWN: usize = 10;
    let mut shown: Vec<String> = names
        .iter()
        .take(SHOWN)
        .map(|n| format!("    {n}"))
        .collect();
    if names.len() > SHOWN {
        shown.push(format!("    and {} more", names.len() - SHOWN));
    }
    format!(
        "--filter `{filter}`: no test's name holds it, so nothing was tested; the tests are:\n{}",
        shown.join("\n")
    )
}

/// The file a test is written in, as given.
fn source_of(c: &Compilation, test: &TestCase) -> String {
    c.sources.get(test.span.file).path.display().to_string()
}

fn stem(c: &Compilation, test: &TestCase) -> String {
    let path = &c.sources.get(test.span.file).path;
    path.file_stem()
        .map_or("tests".into(), |s| s.to_string_lossy().into_owned())
}

/// The folder of a test's file: its relative paths start there.
fn folder(c: &Compilation, test: &TestCase) -> PathBuf {
    let path = &c.sources.get(test.span.file).path;
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn position(c: &Compilation, test: &TestCase) -> String {
    let file = c.sources.get(test.span.file);
    let (line, col) = file.line_col(test.span.start as usize);
    format!("{}:{line}:{col}", file.path.display())
}

/// The runtime's description of a test: what the compiler read, with its paths
/// relative to the test's folder `dir`.
fn spec(test: &TestCase, dir: &Path) -> TestSpec {
    let value = |v: &TestValue| match v {
        TestValue::Text(t) => testing::TestValue::Text(t.clone()),
        TestValue::File(p) => testing::TestValue::File(p.node.clone()),
    };
    let check = |c: &Check| match c {
        Check::Status(s) => testing::Check::Status(s.clone()),
        Check::Equals { path, value } => testing::Check::Equals {
            path: path.clone(),
            value: value.clone(),
        },
        Check::Contains { path, value } => testing::Check::Contains {
            path: path.clone(),
            value: value.clone(),
        },
        Check::Exists { path } => testing::Check::Exists { path: path.clone() },
    };
    TestSpec {
        entry: test.entry.node.clone(),
        args: (test.args.iter())
            .map(|a| (a.name.node.clone(), value(&a.value)))
            .collect(),
        replies: (test.replies.iter())
            .map(|r| ReplyRule {
                matches: r.matches.clone(),
                text: r.text.clone(),
            })
            .collect(),
        cassettes: test.cassettes.iter().map(|c| c.node.clone()).collect(),
        expects: test.expects.iter().map(|e| check(&e.check)).collect(),
        folder: dir.to_path_buf(),
    }
}
