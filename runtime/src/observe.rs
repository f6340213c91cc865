//! Watching a run: `--trace FILE` writes one JSON line per host call (what was asked,
//! how long it took, tokens, outcome), and a progress line on stderr shows calls done,
//! in flight and tokens while the run goes on. Neither ever holds an API key: requests
//! carry none, and provider errors arrive already scrubbed.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tv_vm::host::{HostReply, HostRequest};

pub struct Trace {
    file: Arc<Mutex<std::fs::File>>,
    seq: Arc<AtomicU64>,
    /// `tvm test`: the test whose calls these are, first on each line.
    test: Option<String>,
}

impl Trace {
    /// The trace at `path`, made or emptied; a FIFO that no process reads is refused
    /// rather than waited on.
    pub fn create(path: &Path) -> Result<Trace, String> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        let file = crate::files::open_stream(path, &mut options)
            .map_err(|e| format!("--trace {} {e}", path.display()))?;
        Ok(Trace {
            file: Arc::new(Mutex::new(file)),
            seq: Arc::new(AtomicU64::new(0)),
            test: None,
        })
    }

    /// The same file, its lines naming the test `name` (`tvm test --trace`).
    pub fn for_test(&self, name: &str) -> Trace {
        Trace {
            file: self.file.clone(),
            seq: self.seq.clone(),
            test: Some(name.to_string()),
        }
    }

    pub fn write(&self, request: &HostRequest, reply: &HostReply, took: Duration) {
        let mut line = match &self.test {
            Some(name) => {
                let mut first = json!({ "test": name });
                if let (Value::Object(f), Value::Object(rest)) =
                    (&mut first, describe(request, reply))
                {
                    f.extend(rest);
                }
                first
            }
            None => describe(request, reply),
        };
        line["seq"] = json!(self.seq.fetch_add(1, Ordering::SeqCst) + 1);
        line["ms"] = json!(took.as_millis() as u64);
        if let Ok(mut f) = self.file.lock() {
            // A trace that cannot be written must not stop the run it describes.
            let _ = writeln!(f, "{line}").and_then(|()| f.flush());
        }
    }
}

fn describe(request: &HostRequest, reply: &HostReply) -> Value {
    let mut line = match request {
        HostRequest::Llm(r) => {
            // The model that answered; before an answer, the one asked for.
            let model = match reply {
                HostReply::Llm(Ok(a)) if !a.model.is_empty() => a.model.clone(),
                _ => r
                    .model
                    .clone()
                    .unwrap_or_else(|| "(provider default)".into()),
            };
            let mut line = json!({
                "kind": "llm",
                "task": r.task.name,
                "model": model,
                "system": r.system_prompt,
                "context": r.context.to_string(),
                "prompt": r.messages.last().map(|m| m.content.as_str()).unwrap_or(""),
                "turn": r.messages.len().div_ceil(2),
                "context_chars": r.context.chars().count(),
            });
            if !r.settings.is_empty() {
                line["settings"] = json!(r.settings);
            }
            line
        }
        HostRequest::Script(s) => {
            json!({"kind": "script", "task": s.task.name, "command": s.command})
        }
    };
    match reply {
        HostReply::Llm(Ok(r)) => {
            line["outcome"] = json!(if r.subtask_request.is_some() {
                "subtask"
            } else {
                "ok"
            });
            line["tokens"] = json!({"input": r.input_tokens, "output": r.output_tokens});
            if r.cache_read_tokens + r.cache_write_tokens > 0 {
                line["tokens"]["cacheRead"] = json!(r.cache_read_tokens);
                line["tokens"]["cacheWrite"] = json!(r.cache_write_tokens);
            }
            line["costUsd"] = json!(r.cost.map(crate::prices::usd));
            if r.cached {
                line["cached"] = json!(true);
            }
            if r.truncated {
                line["truncated"] = json!(true);
            }
            line["reply_chars"] = json!(r.content.chars().count());
        }
        HostReply::Script(Ok(r)) => {
            line["outcome"] = json!("ok");
            line["exit_code"] = json!(r.exit_code);
        }
        HostReply::Llm(Err(e)) | HostReply::Script(Err(e)) => {
            line["outcome"] = json!("error");
            line["error"] = json!({"reason": e.reason, "message": e.message});
        }
    }
    line
}

/// Calls done and in flight, tokens and cost, and for a batch its rows, on one line of
/// stderr (hidden when stderr is not a terminal).
pub struct Progress {
    bar: ProgressBar,
    /// Whether stderr is a terminal: the line is written only then, and so only then
    /// built (twice per call).
    visible: bool,
    done: AtomicU64,
    in_flight: AtomicU64,
    tokens: AtomicU64,
    /// Picodollars of the calls done, and how many had no price.
    cost: AtomicU64,
    unpriced: AtomicU64,
    rows: Rows,
}

/// A batch's rows, for its progress line (all 0 outside a batch).
#[derive(Default)]
struct Rows {
    total: AtomicU64,
    /// Rows ended, those of an earlier run of a resumed batch included.
    done: AtomicU64,
    failed: AtomicU64,
    running: AtomicU64,
    /// Rows ended in this run, and when it began: the rate and the time left.
    ended_now: AtomicU64,
    began: Mutex<Option<std::time::Instant>>,
}

impl Progress {
    pub fn new() -> Progress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        // The ticker is a thread of its own; nobody sees it when stderr is not a terminal.
        let visible = !bar.is_hidden();
        if visible {
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        Progress {
            bar,
            visible,
            done: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            tokens: AtomicU64::new(0),
            cost: AtomicU64::new(0),
            unpriced: AtomicU64::new(0),
            rows: Rows::default(),
        }
    }

    pub fn started(&self) {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.show();
    }

    pub fn finished(&self, reply: &HostReply) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.done.fetch_add(1, Ordering::SeqCst);
        if let HostReply::Llm(Ok(r)) = reply {
            self.tokens
                .fetch_add(r.input_tokens + r.output_tokens, Ordering::SeqCst);
            match r.cost {
                Some(c) => self.cost.fetch_add(c, Ordering::SeqCst),
                None => self.unpriced.fetch_add(1, Ordering::SeqCst),
            };
        }
        self.show();
    }

    /// A batch of `total` rows begins, `done` of them (`failed` of which failed)
    /// already ended in an earlier run.
    pub fn batch(&self, total: u64, done: u64, failed: u64) {
        let r = &self.rows;
        r.total.store(total, Ordering::SeqCst);
        r.done.store(done, Ordering::SeqCst);
        r.failed.store(failed, Ordering::SeqCst);
        if let Ok(mut b) = r.began.lock() {
            *b = Some(std::time::Instant::now());
        }
        self.show();
    }

    pub(crate) fn row_started(&self) {
        self.rows.running.fetch_add(1, Ordering::SeqCst);
        self.show();
    }

    /// A row ended; `ran`: it ran in this batch (a bad line did not).
    pub(crate) fn row_ended(&self, completed: bool, ran: bool) {
        let r = &self.rows;
        if ran {
            r.running.fetch_sub(1, Ordering::SeqCst);
        }
        r.done.fetch_add(1, Ordering::SeqCst);
        r.ended_now.fetch_add(1, Ordering::SeqCst);
        if !completed {
            r.failed.fetch_add(1, Ordering::SeqCst);
        }
        self.show();
    }

    /// The line's text.
    fn message(&self) -> String {
        let (d, f, t) = (
            self.done.load(Ordering::SeqCst),
            self.in_flight.load(Ordering::SeqCst),
            self.tokens.load(Ordering::SeqCst),
        );
        let cost = crate::ledger::dollars(self.cost.load(Ordering::SeqCst));
        // A model without a price makes the sum a lower bound, and it says so.
        let more = if self.unpriced.load(Ordering::SeqCst) > 0 {
            "+?"
        } else {
            ""
        };
        let calls = format!("{d} calls done · {f} in flight · {t} tokens · ${cost}{more}");
        match self.rows.line() {
            Some(rows) => format!("{rows} · {calls}"),
            None => calls,
        }
    }

    fn show(&self) {
        if self.visible {
            self.bar.set_message(self.message());
        }
    }

    /// Prints a line on stderr without garbling the progress line.
    pub fn say(&self, line: &str) {
        self.bar.suspend(|| say(line));
    }

    /// A handle that prints lines above this progress line, for as long as it shows.
    pub fn above(&self) -> Above {
        Above(self.bar.clone())
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Rows {
    /// `rows 40/100 (2 failed, 8 running) · 3.1 rows/s · 19 s left`, or `None` outside
    /// a batch.
    fn line(&self) -> Option<String> {
        let total = self.total.load(Ordering::SeqCst);
        if total == 0 {
            return None;
        }
        let (done, failed, running) = (
            self.done.load(Ordering::SeqCst),
            self.failed.load(Ordering::SeqCst),
            self.running.load(Ordering::SeqCst),
        );
        let mut line = format!("rows {done}/{total} ({failed} failed, {running} running)");
        let elapsed = self
            .began
            .lock()
            .ok()
            .and_then(|b| *b)
            .map(|b| b.elapsed().as_secs_f64());
        let now = self.ended_now.load(Ordering::SeqCst);
        if let Some(secs) = elapsed.filter(|s| *s > 0.0 && now > 0) {
            let rate = now as f64 / secs;
            let left = total.saturating_sub(done) as f64 / rate;
            line.push_str(&format!(" · {rate:.1} rows/s · {left:.0} s left"));
        }
        Some(line)
    }
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}

/// Prints lines above a progress line ([`Progress::above`]).
#[derive(Clone)]
pub struct Above(ProgressBar);

impl Above {
    /// Prints a line on stderr without garbling the progress line.
    pub fn say(&self, line: &str) {
        self.0.suspend(|| say(line));
    }
}

/// Prints a line on stderr. A closed or full stderr loses the line, never the run
/// (`eprintln!` would panic): workers and long runs often have no stderr to speak to.
pub fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::Progress;

    #[test]
    fn a_batch_line_shows_rows_done_failed_running_and_what_is_left() {
        let p = Progress::new();
        assert!(!p.message().starts_with("rows"), "{}", p.message());
        p.batch(10, 2, 1);
        p.row_started();
        p.row_started();
        p.row_ended(true, true);
        let m = p.message();
        assert!(m.starts_with("rows 3/10 (1 failed, 1 running) · "), "{m}");
        assert!(m.contains("rows/s · ") && m.contains(" s left"), "{m}");
        assert!(m.contains("0 calls done"), "{m}");
    }
}
