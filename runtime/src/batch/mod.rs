//! `tvm batch` (DESIGN §16): one entry point run once per row of a JSON-lines file,
//! rows running side by side through one host, so that they share its provider cap,
//! its `--max-cost` budget and its reply cache.
//!
//! Rows stream: at most `concurrency` are read ahead of the rows that ended, and each
//! row's result is written as one line the moment it ends and then dropped, so memory
//! does not grow with the number of rows. A line that is not a row (not JSON, not an
//! object, arguments of the wrong type) is a failed row naming its line, never a
//! stopped batch.

mod folder;
pub mod front;
mod lines;
mod results;
mod state;

pub(crate) use folder::apart_from_state;
pub use lines::Lines;
pub(crate) use lines::MAX_ROW_BYTES;
pub use state::{Start, State};

use crate::host::AsyncHost;
use crate::observe::Progress;
use crate::run::{Ran, Run};
use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::{json, Map, Value};
use std::io::{BufRead, Write};
use tv_vm::args;
use tv_vm::bundle::{Bundle, Verified};
use tv_vm::limits::{Limits, Spending};
use tv_vm::result::{Reason, Resource, Status, TaskError, TaskResult};

/// One input row: where it stood, its id, and its arguments bound to the entry's
/// parameters (or why they could not be).
pub(crate) struct Row {
    pub index: u64,
    pub id: Value,
    pub args: Result<Vec<Value>, String>,
}

/// What a batch did, for its summary line and exit code.
#[derive(Debug, Default)]
pub struct Summary {
    pub rows: u64,
    pub completed: u64,
    pub failed: u64,
    /// The LLM calls of every row, by model.
    pub spending: Spending,
    /// The batch was stopped (Ctrl-C) with rows still to run.
    pub interrupted: bool,
}

impl Summary {
    /// `rows: N completed, M failed; calls, tokens, cost`, for stderr.
    pub fn line(&self) -> String {
        let t = &self.spending.total;
        let cost = match t.cost_usd() {
            Some(_) => format!("${}", crate::ledger::dollars(t.cost)),
            None => "cost unknown (a model has no price)".to_string(),
        };
        format!(
            "{} rows: {} completed, {} failed; {} LLM calls, {} input and {} output tokens, {cost}",
            self.rows, self.completed, self.failed, t.calls, t.input_tokens, t.output_tokens
        )
    }
}

/// What a batch runs: a bundle's entry point with these limits, at most `concurrency`
/// rows at once, with its state in `state` when it keeps one.
pub struct Batch<'a, H> {
    pub bundle: &'a Verified,
    pub function: u32,
    pub host: &'a H,
    pub limits: &'a Limits,
    pub concurrency: usize,
    pub state: Option<&'a State>,
    /// Told of every row that starts and ends.
    pub progress: Option<&'a Progress>,
}

/// Runs `function` once per row of `inputs`, at most `concurrency` rows at once, and
/// writes one line per row to `out` as it ends: `{"index", "id", "status", "result"}`.
/// Rows the state holds as finished are skipped. Fails only when reading the inputs or
/// writing a result fails.
pub async fn run<H: AsyncHost>(
    b: &Batch<'_, H>,
    inputs: impl BufRead,
    out: &mut impl Write,
) -> Result<Summary, String> {
    run_until(b, inputs, out, std::future::pending()).await
}

/// [`run`], stopped when `stop` is ready (Ctrl-C): rows in flight are dropped where they
/// are, their journals keeping what they had received, and the summary says
/// `interrupted`.
pub(crate) async fn run_until<H: AsyncHost>(
    b: &Batch<'_, H>,
    inputs: impl BufRead,
    out: &mut impl Write,
    stop: impl std::future::Future<Output = ()>,
) -> Result<Summary, String> {
    let mut stop = std::pin::pin!(stop);
    let Batch {
        bundle,
        function,
        host,
        limits,
        concurrency,
        state,
        progress,
    } = *b;
    let mut summary = Summary::default();
    if let Some(s) = state {
        (summary.completed, summary.failed) = s.earlier();
        summary.rows = summary.completed + summary.failed;
    }
    let mut lines = Lines::new(inputs, MAX_ROW_BYTES);
    let mut running = FuturesUnordered::new();
    let mut index = 0u64;
    let mut more = true;
    loop {
        while more && running.len() < concurrency.max(1) {
            let Some(next) = lines.next() else {
                more = false;
                break;
            };
            let (n, line) = next.map_err(|e| format!("cannot read the inputs: {e}"))?;
            if line.as_ref().is_ok_and(|l| l.trim().is_empty()) {
                continue;
            }
            index += 1;
            if state.and_then(|s| s.finished(index - 1)).is_some() {
                continue;
            }
            if let Some(failed) = line.as_ref().ok().and_then(|t| too_heavy(t, n, limits)) {
                write_row(out, &mut summary, index - 1, Value::Null, failed)?;
                if let Some(p) = progress {
                    p.row_ended(false, false);
                }
                continue;
            }
            let row = match line {
                Ok(text) => read_row(bundle, function, index - 1, n, &text),
                Err(why) => Row {
                    index: index - 1,
                    id: Value::Null,
                    args: Err(why),
                },
            };
            match row.args {
                Err(why) => {
                    let failed =
                        TaskResult::failed(TaskError::failure(Reason::InputValidationFailure, why));
                    write_row(out, &mut summary, row.index, row.id, failed)?;
                    if let Some(p) = progress {
                        p.row_ended(false, false);
                    }
                }
                Ok(values) => {
                    let journal =
                        state.map(|s| s.journal(row.index, named(bundle, function, &values)));
                    if let Some(p) = progress {
                        p.row_started();
                    }
                    running.push(async move {
                        let limits = limits.clone();
                        let run = Run::new(bundle, function, values, limits);
                        let (ran, journal) = match journal {
                            Some(Err(why)) => {
                                let e = TaskError::failure(why.reason(), why.to_string());
                                (Ran::unstarted(TaskResult::failed(e)), None)
                            }
                            Some(Ok(j)) => {
                                let journal = Some(&j);
                                (Run { journal, ..run }.on(host).await, Some(j))
                            }
                            None => (run.on(host).await, None),
                        };
                        (row.index, row.id, ran.result, ran.usage.spending, journal)
                    });
                }
            }
        }
        let next = tokio::select! {
            biased;
            () = &mut stop => {
                summary.interrupted = true;
                break;
            }
            next = running.next() => next,
        };
        let Some((i, id, result, spent, journal)) = next else {
            break;
        };
        summary.spending.add(&spent);
        let completed = result.status == Status::Complete;
        write_row(out, &mut summary, i, id, result)?;
        if let Some(p) = progress {
            p.row_ended(completed, true);
        }
        // Only now that its line is written may the row's journal go.
        if let (Some(s), Some(j)) = (state, journal) {
            s.ended(j, completed);
        }
    }
    Ok(summary)
}

/// The failure of a row whose line `n`, `text`, would take more than the run's memory
/// budget once parsed: a line of 64 MiB of small values would take gigabytes before
/// the machine could refuse it, so it is measured first and not parsed.
fn too_heavy(text: &str, n: u64, limits: &Limits) -> Option<TaskResult> {
    let bound = tv_stdlib::values::json_weight_bound(text.as_bytes());
    (bound > limits.memory).then(|| {
        TaskResult::failed(TaskError::exhausted(
            Resource::Memory,
            format!(
                "line {n}: the row's arguments would take more than {} bytes (--max-memory) \
                 once read, so the line was not parsed",
                limits.memory
            ),
            bound,
            limits.memory,
        ))
    })
}

/// A row's arguments by parameter name, as its journal keeps them.
pub(crate) fn named(bundle: &Bundle, function: u32, values: &[Value]) -> Map<String, Value> {
    let params = bundle
        .functions
        .get(function as usize)
        .map(|f| f.params.as_slice());
    params
        .unwrap_or_default()
        .iter()
        .map(|p| p.name.clone())
        .zip(values.iter().cloned())
        .collect()
}

/// Row `index`, from line `line` of the inputs: `{"id": ..., "args": {...}}` (an
/// object whose only keys are `args`, itself an object, and `id`), or an object of
/// arguments. In the latter an `id` is the row's id, and an argument too only when the
/// entry point has a parameter `id`.
pub(crate) fn read_row(bundle: &Bundle, function: u32, index: u64, line: u64, text: &str) -> Row {
    let Some(f) = bundle.functions.get(function as usize) else {
        let why = "the entry point has no function".to_string();
        return Row {
            index,
            id: Value::Null,
            args: Err(why),
        };
    };
    let mut id = Value::Null;
    let args = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(mut m)) => {
            let wrapped = matches!(m.get("args"), Some(Value::Object(_)))
                && m.keys().all(|k| k == "args" || k == "id");
            if wrapped {
                id = m.remove("id").unwrap_or(Value::Null);
                match m.remove("args") {
                    Some(Value::Object(a)) => Ok(a),
                    _ => Ok(Map::new()),
                }
            } else {
                let takes_id = f.params.iter().any(|p| p.name == "id");
                id = match takes_id {
                    true => m.get("id").cloned(),
                    false => m.remove("id"),
                }
                .unwrap_or(Value::Null);
                Ok(m)
            }
        }
        Ok(other) => Err(format!(
            "line {line}: a row is a JSON object of arguments, not {}",
            match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "true or false",
                _ => "null",
            }
        )),
        Err(e) => Err(format!("line {line}: not JSON: {e}")),
    };
    let args = args.and_then(|given| args::bind(f, given).map_err(|e| format!("line {line}: {e}")));
    Row { index, id, args }
}

fn write_row(
    out: &mut impl Write,
    summary: &mut Summary,
    index: u64,
    id: Value,
    result: TaskResult,
) -> Result<(), String> {
    summary.rows += 1;
    if result.status == Status::Complete {
        summary.completed += 1;
    } else {
        summary.failed += 1;
    }
    let line = json!({"index": index, "id": id, "status": result.status, "result": result});
    // Each line is flushed as it is written: a batch stopped part-way keeps every row
    // that ended.
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write a result: {e}"))
}
