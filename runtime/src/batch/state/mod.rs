//! A batch's state folder (`--state DIR`, by default `results.jsonl.state/`): what lets
//! the same command, run again after a crash or Ctrl-C, skip the rows that are done and
//! resume the others without repeating an LLM call they had finished.
//!
//! A row is done once its line is in the results file; the results file is the record
//! of that ([`results`]). A row in flight has a journal of its own, `DIR/ROW.journal`,
//! made and read as `tvm run --journal` makes and `tvm resume` reads one, once the row
//! has a call to keep. Once a completed row's line is written its journal is emptied and
//! kept as a spare (`DIR/N.spare`) for a later row's journal, as making files costs more
//! than renaming them; a failed row's journal is kept, so that `--retry-failed` pays only
//! for the calls it lacks. `DIR/batch.json` names the bundle, the entry point and a hash
//! of the rows, so a folder left by another batch, or by this one over rows since
//! edited, is refused rather than resumed; it stays when the batch ends, so that the
//! same command run again knows the results are this batch's and done. What folders a
//! batch takes, and what it removes from them, is [`folder`]'s.

use super::folder::{self, Found};
use super::results;
use crate::journal::{Header, Journal, JournalError, JournalKind, Spares};
use nix::fcntl::Flock;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, OnceLock};

pub struct State {
    dir: PathBuf,
    /// Every row journal's header but its arguments.
    header: Header,
    /// Rows whose line the results file holds, and whether they completed.
    finished: HashMap<u64, bool>,
    /// The folder holds this batch's state from an earlier run, so rows may have
    /// journals; a new batch's rows have none, and nothing is looked up for them.
    resuming: bool,
    /// The results file, synced before the journals of rows whose lines it holds go.
    results: File,
    /// The files of journals whose rows ended, for the next rows' journals.
    spares: Arc<Spares>,
    /// Started with the first journal that ended; `None` if no thread could be started,
    /// and journals are then put away where their rows end.
    retirer: OnceLock<Option<Retirer>>,
    /// `batch.json`, locked while the batch runs: a second batch on the folder is refused.
    _marker: Flock<File>,
    /// The results file, locked while the batch runs: a batch of another state folder
    /// writing the same file is refused.
    _out_lock: Option<Flock<File>>,
    /// Where `--rerun` kept the earlier results.
    previous: Option<PathBuf>,
}

/// The thread that puts away the journals of rows that ended. A row's journal is no
/// longer needed once its line is on the disk, so the results file is synced first,
/// once for all the rows that ended meanwhile: the rows' own journals are then never
/// synced for their last calls ([`Journal::deferred`]). A file emptied and kept as a
/// spare and its lock released take a hundred microseconds or more on a busy disk, and
/// on the thread that drives the rows they would hold up every row.
struct Retirer {
    /// Journals of rows that ended, and whether each row completed.
    send: mpsc::Sender<(Journal, bool)>,
    thread: std::thread::JoinHandle<()>,
}

impl Retirer {
    fn start(results: File, spares: Arc<Spares>) -> Option<Retirer> {
        let (send, receive) = mpsc::channel::<(Journal, bool)>();
        let work = move || {
            while let Ok(first) = receive.recv() {
                let ended = std::iter::once(first).chain(receive.try_iter()).collect();
                retire(&results, &spares, ended);
            }
        };
        let thread = std::thread::Builder::new()
            .name("tvm batch state".into())
            .spawn(work)
            .ok()?;
        Some(Retirer { send, thread })
    }
}

/// Puts away the journals of rows whose lines `results` holds, once the lines are on the
/// disk: a completed row's is kept as a spare, a failed row's is synced and kept for
/// `--retry-failed`. If the lines cannot be put there, the journals stay for a resume.
fn retire(results: &File, spares: &Spares, ended: Vec<(Journal, bool)>) {
    if results.sync_data().is_ok() {
        for (journal, completed) in ended {
            match completed {
                true => spares.keep(journal),
                false => journal.close_synced(),
            }
        }
    }
}

/// How a batch treats the rows an earlier run of it finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Rows whose lines the results file holds are done; the others run (or resume).
    Continue,
    /// As [`Start::Continue`], and the rows that failed run again: their lines are taken
    /// out of the results file, and they resume from the journals they kept.
    RetryFailed,
    /// Every row runs again: the earlier results are kept as `OUT.previous`, the
    /// folder's journals are removed.
    Rerun,
}

impl State {
    /// Opens the state folder `dir` for a batch run with `header` (no arguments) over
    /// rows hashing to `rows_sha256`, and the results file `out` to append to. Every
    /// refusal comes before anything is written, moved or removed: a folder that is not
    /// this batch's state, one another batch holds, and a results file that no state
    /// says is this batch's, unless `start` is [`Start::Rerun`].
    pub fn open(
        dir: &Path,
        header: Header,
        rows_sha256: &str,
        out: &Path,
        start: Start,
    ) -> Result<(State, File), String> {
        let this = json!({"bundle_sha256": header.bundle_sha256, "entry": header.entry, "rows_sha256": rows_sha256});
        folder::apart_from_state(dir, &[("--out", out)])?;
        let found = folder::inspect(dir)?;
        let resuming = resumes(&found, &this, start, dir, out)?;
        // Two batches with state folders of their own may still name one results file:
        // locked before it is looked at, so that what is seen is not being written.
        let held = results::lock(out, None)?;
        // Results no state says are this batch's: only --rerun goes on, moving them aside.
        let aside = !resuming && results::size(out)? > 0;
        if aside {
            match start {
                Start::Rerun => results::check_previous_free(out)?,
                _ => return Err(unclaimed(dir, out)),
            }
        }
        // Nothing was touched until here.
        let marker = folder::claim(dir, &this, found, start == Start::Rerun)?;
        let previous = aside.then(|| results::move_aside(out)).transpose()?;
        let (file, finished) = done_rows(out, resuming, start, previous.is_some())?;
        let out_lock = results::lock(out, Some((held, &file)))?;
        let state = State {
            dir: dir.to_path_buf(),
            header,
            finished,
            resuming,
            results: file
                .try_clone()
                .map_err(|e| format!("--out {}: {e}", out.display()))?,
            spares: Arc::new(Spares::new(dir)),
            retirer: OnceLock::new(),
            _marker: marker,
            _out_lock: out_lock,
            previous,
        };
        // A row whose line was written just before the crash may still have a journal;
        // a failed row's is kept for --retry-failed; the spares of the stopped run hold
        // nothing.
        for (&row, &completed) in &state.finished {
            let path = state.journal_path(row);
            if completed && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                let _ = std::fs::remove_file(path);
            }
        }
        if resuming {
            Spares::clear(dir);
        }
        Ok((state, file))
    }

    /// Where `--rerun` kept the earlier results, if it moved any.
    pub fn previous(&self) -> Option<&Path> {
        self.previous.as_deref()
    }

    /// Whether row `index` finished in an earlier run, and if so whether it completed.
    pub fn finished(&self, index: u64) -> Option<bool> {
        self.finished.get(&index).copied()
    }

    /// Rows finished in an earlier run: (completed, failed).
    pub fn earlier(&self) -> (u64, u64) {
        let completed = self.finished.values().filter(|c| **c).count() as u64;
        (completed, self.finished.len() as u64 - completed)
    }

    /// The journal of row `index`: the one it left when it was stopped, else a new one
    /// for its arguments `args` (by parameter name), whose file is made with its first
    /// record (`Journal::deferred`): rows that keep nothing (answered by the echo
    /// provider) make no file, and the others sync their header with their first call.
    /// A journal left without a whole header (the row stopped as it began) or for other
    /// arguments starts afresh; any other journal that cannot be resumed fails the row.
    pub fn journal(
        &self,
        index: u64,
        args: serde_json::Map<String, Value>,
    ) -> Result<Journal, JournalError> {
        let path = self.journal_path(index);
        // What a stopped run of this batch left: a plain file, never one through a link.
        let left = match self.resuming {
            true => std::fs::symlink_metadata(&path).ok(),
            false => None,
        };
        if left.as_ref().is_some_and(|m| !m.is_file()) {
            return Err(JournalError::new(
                JournalKind::Open,
                format!(
                    "{} is not a journal tvm wrote (a link or a special file); tvm neither \
                     reads nor removes it: remove it, then run the batch again",
                    path.display()
                ),
            ));
        }
        let held = left.is_some_and(|m| m.len() > 0);
        if held {
            match Journal::open(&path) {
                Ok((header, journal)) if header.args == args => return Ok(journal),
                // The inputs changed under the batch: this row's journal is not for it.
                Ok(_) => {}
                // Nothing was kept before the row stopped.
                Err(e) if *e.kind() == JournalKind::Empty => {}
                Err(e) => return Err(e),
            }
            std::fs::remove_file(&path).map_err(|e| {
                let message = format!("cannot remove {}: {e}", path.display());
                JournalError::new(JournalKind::Write, message).because(e)
            })?;
        }
        let header = Header {
            args,
            ..self.header.clone()
        };
        Ok(Journal::deferred(&path, header, Some(self.spares.clone())))
    }

    /// A row's line is written to the results file: its journal, if it made a file, is
    /// put away on a thread of the state's own once the line is on the disk, as a spare
    /// if the row `completed`, else kept for `--retry-failed`.
    pub fn ended(&self, journal: Journal, completed: bool) {
        if !journal.on_disk() {
            return;
        }
        let retirer = self.retirer.get_or_init(|| {
            let results = self.results.try_clone().ok()?;
            Retirer::start(results, self.spares.clone())
        });
        let unsent = match retirer {
            Some(r) => r
                .send
                .send((journal, completed))
                .err()
                .map(|mpsc::SendError(j)| j),
            None => Some((journal, completed)),
        };
        if let Some(ended) = unsent {
            retire(&self.results, &self.spares, vec![ended]);
        }
    }

    /// The batch ended, or was stopped: the journals of rows that ended are put away
    /// and the spares removed. The folder keeps `batch.json` and the journals of rows
    /// that failed or were stopped in flight; the lock goes with this process.
    pub fn close(self) {
        if let Some(Some(r)) = self.retirer.into_inner() {
            drop(r.send);
            let _ = r.thread.join();
        }
        self.spares.remove_all();
    }

    fn journal_path(&self, index: u64) -> PathBuf {
        self.dir.join(format!("{index}.journal"))
    }
}

/// Whether the batch `this` goes on from the state `found` in `dir`: it does when the
/// folder names it, unless it starts over; a folder naming another batch is refused but
/// for `--rerun`.
fn resumes(
    found: &Found,
    this: &Value,
    start: Start,
    dir: &Path,
    out: &Path,
) -> Result<bool, String> {
    let rerun = start == Start::Rerun;
    match found {
        Found::Batch { record, .. } if record == this => Ok(!rerun),
        Found::Batch { .. } if rerun => Ok(false),
        Found::Batch { .. } => Err(format!(
            "the state folder {} belongs to a batch of another bundle, entry point or \
             inputs: --rerun starts this batch over (keeping earlier results in {} as {}), \
             or choose another --state and --out",
            dir.display(),
            out.display(),
            results::previous(out).display()
        )),
        Found::Empty { .. } => Ok(false),
    }
}

/// The refusal of results at `out` that no state in `dir` says are this batch's.
fn unclaimed(dir: &Path, out: &Path) -> String {
    format!(
        "--out {} holds results, and no state folder ({}) says they are this batch's: \
         --rerun runs every row again (the earlier results are kept as {}), or choose \
         another --out",
        out.display(),
        dir.join(folder::MARKER).display(),
        results::previous(out).display()
    )
}

/// The results file at `out` (`new`: it was moved aside, and is made again), open at its
/// end, and the rows it holds when the batch is `resuming`; with `--retry-failed` the
/// failed rows' lines are taken out, and they are no longer done.
fn done_rows(
    out: &Path,
    resuming: bool,
    start: Start,
    new: bool,
) -> Result<(File, HashMap<u64, bool>), String> {
    let mut file = results::open(out, new)?;
    if !resuming {
        return Ok((file, HashMap::new()));
    }
    let mut finished = results::finished(&mut file, out)?;
    let failed: HashSet<u64> = finished
        .iter()
        .filter(|(_, completed)| !**completed)
        .map(|(i, _)| *i)
        .collect();
    if start == Start::RetryFailed && !failed.is_empty() {
        file = results::without(out, &failed)?;
        finished.retain(|_, completed| *completed);
    }
    Ok((file, finished))
}

#[cfg(test)]
mod tests;
