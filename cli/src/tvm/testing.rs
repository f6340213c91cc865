//! `tvm test PATH...`: compiles the templates, runs each `<test>` offline (its replies,
//! then its cassettes; nothing is sent to a provider), checks its expectations, and
//! prints one line per test and `N passed, M failed` (DESIGN §17).

use crate::{output, snapshots, source};
use clap::Args;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tv_compiler::ast::{Check, TestCase, TestValue};
use tv_compiler::driver::Compilation;
use tv_runtime::cassette::Cassette;
use tv_runtime::driver;
use tv_runtime::files;
use tv_runtime::host::{Choice, RunHost};
use tv_runtime::observe::Trace;
use tv_runtime::offline::{Offline, ReplyRule};
use tv_runtime::script::ScriptRunner;
use tv_vm::bundle::Bundle;
use tv_vm::limits::Limits;

#[derive(Args)]
pub struct TestArgs {
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

pub fn test(args: TestArgs) -> Result<ExitCode, String> {
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
        let mut problems = match runtime.block_on(run(&loaded.bundle, test, &dir, traced)) {
            Ok(result) => {
                let mut problems = expectations(test, &result);
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

/// Runs one test's entry with its arguments and offline replies, one call at a time so
/// that replies are used in the order the workflow asks.
async fn run(
    bundle: &Bundle,
    test: &TestCase,
    dir: &Path,
    trace: Option<Trace>,
) -> Result<Value, String> {
    let entry = bundle
        .entry(&test.entry.node)
        .ok_or_else(|| format!("the bundle has no entry point `{}`", test.entry.node))?;
    let f = &bundle.functions[entry.function as usize];
    let mut given = Map::new();
    for arg in &test.args {
        let raw = match &arg.value {
            TestValue::Text(t) => t.clone(),
            TestValue::File(p) => beneath(dir, &p.node, files::ARGUMENT)
                .and_then(|bytes| String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".into()))
                .map_err(|e| format!("argument `{}`: {}: {e}", arg.name.node, p.node))?,
        };
        let ty = f
            .params
            .iter()
            .find(|p| p.name == arg.name.node)
            .map_or(tv_stdlib::types::Type::Any, |p| p.ty.to_type());
        let value = tv_vm::args::parse_arg(&arg.name.node, &ty, &raw)?;
        given.insert(arg.name.node.clone(), value);
    }
    let values = tv_vm::args::bind(f, given)?;
    let mut cassettes = Vec::new();
    for c in &test.cassettes {
        let bytes = beneath(dir, &c.node, files::CASSETTE)
            .map_err(|e| format!("cassette {}: {e}", c.node))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| format!("cassette {}: is not UTF-8 text", c.node))?;
        cassettes.push(Cassette::parse(&text, &c.node)?);
    }
    let rules = test
        .replies
        .iter()
        .map(|r| ReplyRule {
            matches: r.matches.clone(),
            text: r.text.clone(),
        })
        .collect();
    // Scripts run where the test is written, as its relative paths do.
    let scripts = ScriptRunner {
        workdir: Some(dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())),
        ..ScriptRunner::default()
    };
    let mut host = RunHost::with_adapters(Choice::Replay, None, None, scripts);
    host.offline = Some(Offline::new(rules, cassettes));
    host.context.workspace = Some(dir.to_path_buf());
    host.context.no_search = true;
    host.trace = trace;
    let limits = Limits {
        concurrency: 1,
        ..Limits::default()
    };
    let (mut result, usage) =
        driver::run_journaled(bundle, entry.function, values, limits, &host, None).await;
    result.set_note("usage", usage.notes());
    serde_json::to_value(&result).map_err(|e| format!("the result is not JSON: {e}"))
}

/// The bytes of the file `written` names in the test's folder `dir`, within `bound`:
/// the compiler refuses `..` and absolute paths, and the file is opened beneath the
/// folder, so a link that leads out of it is refused too, when it is opened.
fn beneath(dir: &Path, written: &str, bound: files::Bound) -> Result<Vec<u8>, String> {
    let folder = files::open_dir(dir).map_err(|e| format!("cannot be read: {e}"))?;
    let file = files::open_beneath(&folder, Path::new(written)).map_err(|e| match e {
        files::FileError::Outside => {
            "leads out of the test's folder through a link, so it is not read".to_string()
        }
        e => e.to_string(),
    })?;
    files::read_open(&file, bound).map_err(|e| e.to_string())
}

/// What of the test's expectations the result does not meet. A test that states no
/// status expects its run to complete: a failure never passes unnoticed.
fn expectations(test: &TestCase, result: &Value) -> Vec<String> {
    let status = result.get("status").and_then(Value::as_str).unwrap_or("");
    let mut problems = Vec::new();
    let states_status = test
        .expects
        .iter()
        .any(|e| matches!(e.check, Check::Status(_)));
    if !states_status && status != "COMPLETE" {
        let mut problem = format!("the run ended {status}: {}", error_of(result));
        if let Some(tail) = script_stderr(result) {
            problem.push_str(&format!("\nthe script's stderr ended:\n{tail}"));
        }
        problems.push(problem);
    }
    for e in &test.expects {
        if let Some(p) = crate::expect::check(&e.check, result) {
            problems.push(p);
        }
    }
    problems
}

/// A failed result's error message, for the line that says the run failed.
fn error_of(result: &Value) -> String {
    result
        .pointer("/notes/error/message")
        .and_then(Value::as_str)
        .unwrap_or("no error message")
        .to_string()
}

/// Lines of a failed script's stderr shown under a failed test.
const STDERR_LINES: usize = 10;
/// Characters of them shown at most.
const STDERR_CHARS: usize = 2000;
/// How deep the errors of nested tasks are followed.
const ERROR_DEPTH: usize = 32;

/// The end of the stderr of the script a failed run ended on: the result's own
/// `scriptOutput`, or that of the error of the step, item or input that failed, down
/// the chain of nested errors.
fn script_stderr(result: &Value) -> Option<String> {
    let mut output = result.pointer("/notes/scriptOutput");
    let mut error = result.pointer("/notes/error");
    for _ in 0..ERROR_DEPTH {
        if output.is_some() {
            break;
        }
        let details = error?.get("details")?;
        output = details.get("scriptOutput");
        error = ["stepError", "itemError", "inputError", "subtaskError"]
            .iter()
            .find_map(|k| details.get(*k));
    }
    let stderr = output?.get("stderr")?.as_str()?.trim_end();
    if stderr.is_empty() {
        return None;
    }
    let lines: Vec<&str> = stderr.lines().collect();
    let tail = lines[lines.len().saturating_sub(STDERR_LINES)..].join("\n");
    let skip = tail.chars().count().saturating_sub(STDERR_CHARS);
    Some(tail.chars().skip(skip).collect())
}
