//! The run journal: every host-call outcome is appended and synced to disk before the
//! machine goes on, so a run that crashed, was killed or lost power can be resumed
//! without paying again for the calls it had finished. (A batch row's journal,
//! `Journal::deferred`, syncs before the row's next call instead, and the batch makes
//! the row's last answers durable with its results file.) The echo provider's answers
//! are not kept: asking again costs nothing and gives the same reply.
//!
//! The file is JSON lines: a [`Header`] naming the bundle (by SHA-256), the entry, the
//! arguments and the run's settings (never a key), then one [`Record`] per event. Calls
//! are named by their place in the run, not by when they finished: the root machine's
//! calls are `1`, `2`, ...; the branches of a gather that was the machine's call `n`
//! are `n.0/`, `n.1/`, ... and their calls `n.0/1`, and so on. The bodies of a
//! machine's iterations over run-time lists are named by their tags: item `i` of its
//! iteration `e` (counted from 0 in the order they began) is `e{e}.{i}/`, its calls
//! `e0.3/1`; they do not count among the machine's calls. Each machine runs
//! deterministically given its replies, so a resumed run asks the same calls and
//! starts the same bodies under the same names, whatever order concurrent branches
//! and bodies finished in.
//!
//! A body that COMPLETED is recorded whole ([`Record::BodyEnded`]): a resumed run
//! takes its result and runs none of it again. A failed body is not recorded; it runs
//! again, its finished calls answered from the journal. A reader meets records in
//! the order they were written and refuses a record it does not know as damage, so a
//! `tvm` from before body records refuses a journal that holds one.

mod error;
mod layer;
mod lock;
mod remote;
mod spare;
mod writer;

pub use error::{JournalError, JournalKind};
pub use layer::Journaled;
pub use remote::RemoteLog;
use remote::Sink;

pub use spare::Spares;
use writer::Output;

use crate::config::RunConfig;
use crate::digest::sha256_hex;
use crate::files;
use crate::host::{AsyncHost, CallId};
use lock::{create_locked, lock_exclusive};
pub(crate) use lock::{lock, Refused};
use nix::fcntl::Flock;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tv_vm::host::{HostError, HostReply, HostRequest, LlmReply, ScriptReply};
use tv_vm::limits::Spending;
use tv_vm::result::TaskResult;

/// The journal format; a reader refuses any other. Format 2 keeps the run's settings
/// as one [`RunConfig`]; format 1 kept them field by field.
pub const FORMAT: u32 = 2;

/// The first line: what was run, and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub journal: u32,
    /// The bundle's path when the run started (absolute), and the hash of its bytes.
    pub bundle: PathBuf,
    pub bundle_sha256: String,
    pub entry: String,
    /// The entry's arguments by parameter name.
    pub args: Map<String, Value>,
    /// The run's settings, as the run settled them. Keys stay in the environment.
    pub config: RunConfig,
}

impl Header {
    /// Reads a header from its JSON, refusing another format than this tvm's first,
    /// with what to do about it; `shown` names where it was read.
    pub fn read(value: Value, shown: &str) -> Result<Header, JournalError> {
        let format = value.get("journal").and_then(Value::as_u64);
        let message = match format {
            Some(1) => format!(
                "{shown} was written by an older tvm (journal format 1); this tvm reads \
                 format {FORMAT}: finish the run with the tvm that started it, or run it again"
            ),
            Some(f) if f != u64::from(FORMAT) => {
                format!("{shown}: journal format {f} is not the format {FORMAT} this tvm reads")
            }
            _ => return serde_json::from_value(value).map_err(|e| not_a_header(&shown, e)),
        };
        let found = format.unwrap_or_default();
        Err(JournalError::new(JournalKind::Format { found }, message))
    }

    /// The header of a run of `entry` of the bundle at `bundle` (made absolute, so a
    /// resume from another folder finds it), whose bytes hash to `hash`, with `config`
    /// as a journal keeps it ([`RunConfig::journaled`]); no arguments yet.
    pub fn new(bundle: &Path, hash: String, entry: &str, config: &RunConfig) -> Header {
        Header {
            journal: FORMAT,
            bundle: std::fs::canonicalize(bundle).unwrap_or(bundle.to_path_buf()),
            bundle_sha256: hash,
            entry: entry.to_string(),
            args: Map::new(),
            config: config.journaled(),
        }
    }

    /// Whether the echo provider answers the run's LLM calls.
    fn echo(&self) -> bool {
        self.config.provider.choice == Some(crate::host::Choice::Echo)
    }
}

/// One event of the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Record {
    /// A script is about to run; its effects on the world may happen from now on.
    ScriptStarted {
        call: String,
        request: String,
        task: String,
        command: String,
    },
    /// A call's answer, which a resumed run is given instead of calling again.
    Answered {
        call: String,
        request: String,
        reply: Answer,
    },
    /// A body of an iteration (a map's, a reduce's inner task) that COMPLETED, which
    /// a resumed run takes instead of running it again; `request` identifies the
    /// call it was (`body_request`).
    BodyEnded {
        body: String,
        request: String,
        result: TaskResult,
        /// The body's calls and tokens, counted again when a resumed run takes it.
        #[serde(default)]
        spent: Spending,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    Llm(LlmReply),
    Script(ScriptReply),
}

/// A script that was running when the run stopped.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Interrupted {
    pub call: String,
    pub task: String,
    pub command: String,
}

/// An open journal: what it already holds, and where new events go.
pub struct Journal {
    /// Its file (see [`writer`]), or a log kept elsewhere ([`RemoteLog`]).
    out: Sink,
    /// The run's LLM calls are answered by the echo provider, whose reply is the
    /// request read back: asking again costs nothing and gives the same reply, so the
    /// journal keeps none (a dry run then writes nothing, and waits on no disk).
    echo: bool,
    /// Records are synced before the run's next call or script rather than as they are
    /// written ([`Journal::deferred`]).
    sync_later: bool,
    answers: HashMap<String, (String, Answer)>,
    started: HashMap<String, Interrupted>,
    /// Bodies that completed, by name: their requests and results.
    bodies: HashMap<String, (String, TaskResult, Spending)>,
    /// Calls answered from the journal, and calls made, in this process.
    replayed: AtomicUsize,
    made: AtomicUsize,
    /// Bodies taken from the journal, in this process.
    bodies_replayed: AtomicUsize,
}

/// What the journal holds of a run, read back from its records.
#[derive(Default)]
struct Held {
    answers: HashMap<String, (String, Answer)>,
    started: HashMap<String, Interrupted>,
    bodies: HashMap<String, (String, TaskResult, Spending)>,
}

/// What identifies a request: the hash of all the machine put into it.
fn request_hash(r: &HostRequest) -> String {
    sha256_hex(serde_json::to_string(r).unwrap_or_default().as_bytes())
}

/// What identifies a body: the hash of the function it calls and its arguments.
pub(crate) fn body_request(function: u32, args: &[Value]) -> String {
    let call = (function, args);
    sha256_hex(serde_json::to_string(&call).unwrap_or_default().as_bytes())
}

impl Journal {
    /// Starts a journal for a new run: creates the file (an empty one left by a run that
    /// stopped before its header may be taken over), locks it, refuses one that holds a
    /// run already, and writes and syncs the header, so an unwritable path or a full disk
    /// is reported before any host call is made.
    pub fn create(path: &Path, header: &Header) -> Result<Journal, JournalError> {
        let out = Output::open(path, create_locked(path)?, true);
        let line = serde_json::to_string(header).map_err(unwritable)?;
        out.write(&line, true)?;
        let out = Sink::File(out);
        Ok(Journal::over(out, header.echo(), false, Held::default()))
    }

    /// A journal for a new run whose file is made, as [`Journal::create`] makes it (or
    /// taken from `spares`), with its first record: a run that has nothing to keep (a
    /// batch's rows answered by the echo provider) touches no file. Its records are
    /// written at once but synced only before the run's next call or script starts, so
    /// that a run's last records hold up nothing: whoever takes the run's result makes
    /// it durable (a batch syncs its results file before the row's journal goes).
    pub(crate) fn deferred(path: &Path, header: Header, spares: Option<Arc<Spares>>) -> Journal {
        let echo = header.echo();
        let out = Sink::File(Output::deferred(path, header, spares));
        Journal::over(out, echo, true, Held::default())
    }

    /// A journal kept in `log`, which holds `lines` already (a header, then records;
    /// none for a new run): a run on one machine resumed on another. A last line cut
    /// short is refused, as a log's appends are whole.
    pub fn remote(
        header: &Header,
        lines: &str,
        log: std::sync::Arc<dyn RemoteLog>,
    ) -> Result<Journal, JournalError> {
        let shown = log.name();
        let held = Held::read(lines.lines().enumerate().skip(1), &shown)?;
        Ok(Journal::over(Sink::Remote(log), header.echo(), false, held))
    }

    /// Where the journal is, for messages: its file, or the log's name.
    pub fn name(&self) -> String {
        self.out.name()
    }

    /// Where the journal's file is (or will be, for a deferred journal not yet written);
    /// empty for a journal kept elsewhere.
    pub fn path(&self) -> &Path {
        self.out.path()
    }

    /// Whether the journal's file exists: it was opened, or has been written to.
    pub(crate) fn on_disk(&self) -> bool {
        self.out.on_disk()
    }

    /// The journal's open file, when it has one and no write of it is under way.
    fn into_file(self) -> Option<Flock<File>> {
        match self.out {
            Sink::File(out) => out.into_file(),
            Sink::Remote(_) => None,
        }
    }

    /// Syncs the journal's file and closes it, kept for a later run to resume: a batch
    /// row that failed keeps its answers for `--retry-failed`. (A write still under way
    /// is left to finish unsynced.)
    pub(crate) fn close_synced(self) {
        if let Some(file) = self.into_file() {
            let _ = file.sync_data();
        }
    }

    /// Opens a journal to resume it: its header, and a journal that answers what it
    /// holds. A last line cut short by the crash is dropped; any other damage is refused.
    pub fn open(path: &Path) -> Result<(Header, Journal), JournalError> {
        let shown = path.display();
        let refused = |kind, e: files::FileError| {
            JournalError::new(kind, format!("the journal {shown} {e}")).because(e)
        };
        let file = files::open_with(path, OpenOptions::new().read(true).append(true))
            .map_err(|e| refused(JournalKind::Open, e))?;
        // Locked before it is read, so that what it holds cannot change underneath.
        let mut file = lock_exclusive(path, file)?;
        let text =
            files::read_open(&file, files::JOURNAL).map_err(|e| refused(JournalKind::Read, e))?;
        let complete = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let lines = std::str::from_utf8(&text[..complete]).map_err(|e| {
            let kind = JournalKind::Damaged { line: None };
            JournalError::new(
                kind,
                format!("the journal {shown} is damaged: it is not UTF-8"),
            )
            .because(e)
        })?;
        let mut lines = lines.lines().enumerate();
        let header: Header = match lines.next() {
            Some((_, l)) => {
                let value: Value = serde_json::from_str(l).map_err(|e| not_a_header(&shown, e))?;
                Header::read(value, &shown.to_string())?
            }
            None => {
                return Err(JournalError::new(
                    JournalKind::Empty,
                    format!("the journal {shown} is empty: the run stopped before it began"),
                ))
            }
        };
        let held = Held::read(lines, &shown)?;
        // Drop a torn last line, so new events start on a line of their own; appends
        // then go to the new end.
        file.set_len(complete as u64)
            .and_then(|()| file.seek(SeekFrom::End(0)).map(|_| ()))
            .map_err(|e| writer::failed(JournalKind::Write, path, e))?;
        let out = Sink::File(Output::open(path, file, false));
        let journal = Journal::over(out, header.echo(), false, held);
        Ok((header, journal))
    }

    fn over(out: Sink, echo: bool, sync_later: bool, held: Held) -> Journal {
        Journal {
            out,
            echo,
            sync_later,
            answers: held.answers,
            started: held.started,
            bodies: held.bodies,
            replayed: AtomicUsize::new(0),
            made: AtomicUsize::new(0),
            bodies_replayed: AtomicUsize::new(0),
        }
    }

    /// Scripts that started and never finished: their effects may have happened.
    pub(crate) fn interrupted(&self) -> Vec<Interrupted> {
        let mut v: Vec<Interrupted> = self.started.values().cloned().collect();
        v.sort_by(|a, b| a.call.cmp(&b.call));
        v
    }

    /// Calls answered from the journal and calls made so far. A body taken whole from
    /// the journal counts in neither, nor do its calls: see [`Journal::bodies_replayed`].
    pub fn counts(&self) -> (usize, usize) {
        (
            self.replayed.load(Ordering::Relaxed),
            self.made.load(Ordering::Relaxed),
        )
    }

    /// Bodies taken whole from the journal so far.
    pub fn bodies_replayed(&self) -> usize {
        self.bodies_replayed.load(Ordering::Relaxed)
    }

    /// The result body `name` completed with, when the journal holds one for the same
    /// call (`request`, from `body_request`). A body asked with other arguments is
    /// run again; its own calls are then checked against the journal as any are.
    pub fn body(&self, name: &str, request: &str) -> Option<(TaskResult, Spending)> {
        let (journaled, result, spent) = self.bodies.get(name)?;
        if journaled != request {
            return None;
        }
        self.bodies_replayed.fetch_add(1, Ordering::Relaxed);
        Some((result.clone(), spent.clone()))
    }

    /// Journals that body `name`, the call `request`, COMPLETED with `result`.
    pub async fn body_ended(
        &self,
        name: &str,
        request: &str,
        result: &TaskResult,
        spent: &Spending,
    ) -> Result<(), JournalError> {
        let record = Record::BodyEnded {
            body: name.to_string(),
            request: request.to_string(),
            result: result.clone(),
            spent: spent.clone(),
        };
        self.append(&record, !self.sync_later).await
    }

    /// Answers call `at` from the journal, or makes it on `host` and journals its
    /// answer before returning it (synced, unless the journal syncs later:
    /// `Journal::deferred`). Failed calls are not journaled: a resumed run tries them
    /// again.
    pub async fn call<H: AsyncHost>(
        &self,
        host: &H,
        at: CallId<'_>,
        request: &HostRequest,
    ) -> HostReply {
        let call = &at.to_string();
        let held = self.answers.get(call);
        if held.is_none() && self.echo && matches!(request, HostRequest::Llm(_)) {
            self.made.fetch_add(1, Ordering::Relaxed);
            return host.call(at, request).await;
        }
        let hash = request_hash(request);
        if let Some((journaled, answer)) = held {
            if *journaled != hash {
                let kind = JournalKind::Mismatch {
                    call: call.to_string(),
                };
                return halted(request, JournalError::new(kind, format!(
                    "the journal {} does not match this run: call {call} asks something else than it did (were the bundle, the arguments or the workspace changed?)",
                    self.name()
                )));
            }
            self.replayed.fetch_add(1, Ordering::Relaxed);
            return match answer.clone() {
                Answer::Llm(r) => HostReply::Llm(Ok(r)),
                Answer::Script(r) => HostReply::Script(Ok(r)),
            };
        }
        // What the run knows must be kept before it acts on it again.
        if let Err(e) = self.out.sync().await {
            return halted(request, e);
        }
        if let HostRequest::Script(s) = request {
            let started = Record::ScriptStarted {
                call: call.clone(),
                request: hash.clone(),
                task: s.task.name.clone(),
                command: s.command.clone(),
            };
            // A script's effects may begin at once: the record is synced first.
            if let Err(e) = self.append(&started, true).await {
                return halted(request, e);
            }
        }
        self.made.fetch_add(1, Ordering::Relaxed);
        let reply = host.call(at, request).await;
        let answer = match &reply {
            HostReply::Llm(Ok(r)) => Answer::Llm(r.clone()),
            HostReply::Script(Ok(r)) => Answer::Script(r.clone()),
            _ => return reply,
        };
        let record = Record::Answered {
            call: call.clone(),
            request: hash,
            reply: answer,
        };
        match self.append(&record, !self.sync_later).await {
            Ok(()) => reply,
            Err(e) => halted(request, e),
        }
    }

    async fn append(&self, record: &Record, sync: bool) -> Result<(), JournalError> {
        let line = serde_json::to_string(record).map_err(unwritable)?;
        self.out.append(line, sync).await
    }
}

impl Held {
    /// The records of numbered `lines` (counted from 0), for the journal `shown`.
    fn read<'a>(
        lines: impl Iterator<Item = (usize, &'a str)>,
        shown: &dyn std::fmt::Display,
    ) -> Result<Held, JournalError> {
        let mut held = Held::default();
        for (i, line) in lines {
            let record: Record = serde_json::from_str(line).map_err(|e| {
                let kind = JournalKind::Damaged { line: Some(i + 1) };
                let message = format!("{shown}:{}: the journal is damaged: {e}", i + 1);
                JournalError::new(kind, message).because(e)
            })?;
            held.take(record);
        }
        Ok(held)
    }

    fn take(&mut self, record: Record) {
        match record {
            Record::ScriptStarted {
                call,
                task,
                command,
                ..
            } => {
                let interrupted = Interrupted {
                    call: call.clone(),
                    task,
                    command,
                };
                self.started.insert(call, interrupted);
            }
            Record::Answered {
                call,
                request,
                reply,
            } => {
                self.started.remove(&call);
                self.answers.insert(call, (request, reply));
            }
            Record::BodyEnded {
                body,
                request,
                result,
                spent,
            } => {
                self.bodies.insert(body, (request, result, spent));
            }
        }
    }
}

/// A first line that is not a header, in the journal `shown`.
fn not_a_header(shown: &dyn std::fmt::Display, e: serde_json::Error) -> JournalError {
    let kind = JournalKind::Damaged { line: Some(1) };
    JournalError::new(kind, format!("{shown}:1: not a journal header: {e}")).because(e)
}

/// A record that cannot be put into words (it always can: its fields are JSON's).
fn unwritable(e: serde_json::Error) -> JournalError {
    JournalError::new(JournalKind::Write, e.to_string()).because(e)
}

/// The run stops: its record of what happened can no longer be trusted or kept.
fn halted(request: &HostRequest, e: JournalError) -> HostReply {
    let e = HostError::from(e);
    match request {
        HostRequest::Llm(_) => HostReply::Llm(Err(e)),
        HostRequest::Script(_) => HostReply::Script(Err(e)),
    }
}

#[cfg(test)]
mod tests;
