//! Tests of workflows (DESIGN §17): a test's entry run offline, with its arguments,
//! its replies and then its cassettes (nothing is sent to a provider), and its
//! expectations checked against the result. `tvm test` builds a [`TestSpec`] from each
//! `<test>` the compiler reads, runs it here, and prints what it finds; a program
//! using the library can run the same tests.

mod expect;

pub use expect::Check;

use crate::cassette::Cassette;
use crate::files;
use crate::host::{Choice, RunHost};
use crate::observe::Trace;
use crate::offline::{Offline, ReplyRule};
use crate::run::Run;
use crate::script::ScriptRunner;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use tv_vm::bundle::Verified;
use tv_vm::limits::Limits;

/// One test: what it runs, what answers its model calls, what it expects.
#[derive(Clone, Debug)]
pub struct TestSpec {
    /// The entry point it runs, by name.
    pub entry: String,
    /// Its arguments by parameter name, in the order written.
    pub args: Vec<(String, TestValue)>,
    /// Replies to model calls, tried before the cassettes (see `Offline::answer`).
    pub replies: Vec<ReplyRule>,
    /// Cassettes answering what no reply matches, in order, by path relative to
    /// `folder`.
    pub cassettes: Vec<String>,
    pub expects: Vec<Check>,
    /// Where the test's relative paths start (its file's folder); its scripts run
    /// there, and it is the workspace its context reads.
    pub folder: PathBuf,
}

/// An argument's value as the test writes it.
#[derive(Clone, Debug)]
pub enum TestValue {
    /// Read as JSON for parameters typed other than string.
    Text(String),
    /// A file's text, verbatim, by path relative to the test's folder.
    File(String),
}

impl TestSpec {
    /// Runs the test's entry with its arguments and offline replies, one call at a time
    /// so that replies are used in the order the workflow asks, and gives its result as
    /// JSON (with `notes.usage`, as `tvm run` prints it), or why it could not run.
    /// `trace` gets a line per host call.
    pub async fn run(&self, program: &Verified, trace: Option<Trace>) -> Result<Value, String> {
        let entry = program
            .entry(&self.entry)
            .ok_or_else(|| format!("the bundle has no entry point `{}`", self.entry))?;
        let f = &program.functions[entry.function as usize];
        let mut given = Map::new();
        for (name, value) in &self.args {
            let raw = match value {
                TestValue::Text(t) => t.clone(),
                TestValue::File(p) => beneath(&self.folder, p, files::ARGUMENT)
                    .and_then(|b| String::from_utf8(b).map_err(|_| "is not UTF-8 text".into()))
                    .map_err(|e| format!("argument `{name}`: {p}: {e}"))?,
            };
            let ty = f
                .params
                .iter()
                .find(|p| p.name == *name)
                .map_or(tv_stdlib::types::Type::Any, |p| p.ty.to_type());
            given.insert(name.clone(), tv_vm::args::parse_arg(name, &ty, &raw)?);
        }
        let values = tv_vm::args::bind(f, given)?;
        let host = self.host(trace)?;
        let limits = Limits {
            concurrency: 1,
            ..Limits::default()
        };
        let ran = Run::new(program, entry.function, values, limits)
            .on(&host)
            .await;
        serde_json::to_value(&ran.result).map_err(|e| format!("the result is not JSON: {e}"))
    }

    /// The host a test runs on: its replies and cassettes answer every model call, its
    /// scripts run in its folder, and no context is searched for.
    fn host(&self, trace: Option<Trace>) -> Result<RunHost, String> {
        let mut cassettes = Vec::new();
        for c in &self.cassettes {
            let bytes = beneath(&self.folder, c, files::CASSETTE)
                .map_err(|e| format!("cassette {c}: {e}"))?;
            let text =
                String::from_utf8(bytes).map_err(|_| format!("cassette {c}: is not UTF-8 text"))?;
            cassettes.push(Cassette::parse(&text, c)?);
        }
        let dir = &self.folder;
        // Scripts run where the test is written, as its relative paths do.
        let scripts = ScriptRunner {
            workdir: Some(dir.canonicalize().unwrap_or_else(|_| dir.clone())),
            ..ScriptRunner::default()
        };
        let mut host = RunHost::with_adapters(Choice::Replay, None, None, scripts);
        let replies = Offline::new(self.replies.clone(), cassettes);
        let replay = crate::model::Replay::test(replies, None);
        host.models.set(Choice::Replay, std::sync::Arc::new(replay));
        host.context.workspace = Some(dir.clone());
        host.context.no_search = true;
        host.trace = trace;
        Ok(host)
    }

    /// What of the test's expectations `result` does not meet. A test that states no
    /// status expects its run to complete: a failure never passes unnoticed.
    pub fn unmet(&self, result: &Value) -> Vec<String> {
        let status = result.get("status").and_then(Value::as_str).unwrap_or("");
        let mut problems = Vec::new();
        let states_status = self.expects.iter().any(|e| matches!(e, Check::Status(_)));
        if !states_status && status != "COMPLETE" {
            let mut problem = format!("the run ended {status}: {}", error_of(result));
            if let Some(tail) = script_stderr(result) {
                problem.push_str(&format!("\nthe script's stderr ended:\n{tail}"));
            }
            problems.push(problem);
        }
        problems.extend(self.expects.iter().filter_map(|e| e.unmet(result)));
        problems
    }
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
