//! A batch's state folder (`--state DIR`, by default `results.jsonl.state/`): what lets
//! the same command, run again after a crash or Ctrl-C, skip the rows that finished and
//! resume the others without repeating an LLM call they had finished.
//!
//! A row is finished once its line is in the results file; the results file is the
//! record of that. A row in flight has a journal of its own, `DIR/ROW.journal`, made
//! and read as `tvm run --journal` makes and `tvm resume` reads one, once the row has a
//! call to keep; once the row's line is written it is emptied and kept as a spare
//! (`DIR/N.spare`) for a later row's journal, as making files costs more than renaming
//! them. `DIR/batch.json` names the bundle, the entry point and a
//! hash of the rows, so a folder left by another batch, or by this one over rows since
//! edited, is refused rather than resumed.

use crate::files;
use crate::journal::{Header, Journal, Spares};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, OnceLock};
use tv_vm::result::Status;

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
}

/// The thread that puts away the journals of rows that ended. A row's journal is no
/// longer needed once its line is on the disk, so the results file is synced first,
/// once for all the rows that ended meanwhile: the rows' own journals are then never
/// synced for their last calls ([`Journal::deferred`]). A file emptied and kept as a
/// spare and its lock released take a hundred microseconds or more on a busy disk, and
/// on the thread that drives the rows they would hold up every row.
struct Retirer {
    send: mpsc::Sender<Journal>,
    thread: std::thread::JoinHandle<()>,
}

impl Retirer {
    fn start(results: File, spares: Arc<Spares>) -> Option<Retirer> {
        let (send, receive) = mpsc::channel::<Journal>();
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

/// Puts away the journals of rows whose lines `results` holds: kept as spares once the
/// lines are on the disk; if they cannot be put there, the journals stay for a resume.
fn retire(results: &File, spares: &Spares, ended: Vec<Journal>) {
    if results.sync_data().is_ok() {
        ended.into_iter().for_each(|j| spares.keep(j));
    }
}

impl State {
    /// Opens the state folder for a batch run with `header` (no arguments), and the
    /// results file `out` to append to: when the folder holds this batch's state, the
    /// rows already in `out` are finished (a line cut short by the crash is dropped);
    /// otherwise the batch starts afresh and `out` is emptied.
    pub fn open(
        dir: &Path,
        header: Header,
        rows_sha256: &str,
        out: &Path,
    ) -> Result<(State, File), String> {
        let marker = dir.join("batch.json");
        let this = json!({"bundle_sha256": header.bundle_sha256, "entry": header.entry, "rows_sha256": rows_sha256});
        let resuming = match files::read(&marker, files::BATCH_RECORD) {
            Ok(text) => {
                let earlier: Value = serde_json::from_slice(&text).unwrap_or(Value::Null);
                if earlier != this {
                    return Err(format!(
                        "the state folder {} belongs to a batch of another bundle, entry point or \
                         inputs; remove it to start afresh, or choose another with --state DIR",
                        dir.display()
                    ));
                }
                true
            }
            Err(files::FileError::Missing) => false,
            Err(e) => return Err(format!("{} {e}", marker.display())),
        };
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the state folder {}: {e}", dir.display()))?;
        // A FIFO or device would never end the read of the rows it holds.
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        let mut file = files::open_with(out, &mut options)
            .map_err(|e| format!("--out {} {e}", out.display()))?;
        let finished = if resuming {
            finished_rows(&mut file, out)?
        } else {
            file.set_len(0)
                .map_err(|e| format!("--out {}: {e}", out.display()))?;
            std::fs::write(&marker, this.to_string())
                .map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
            HashMap::new()
        };
        file.seek(SeekFrom::End(0))
            .map_err(|e| format!("--out {}: {e}", out.display()))?;
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
        };
        // A row whose line was written just before the crash may still have a journal,
        // and the spares of the stopped run hold nothing.
        for &row in state.finished.keys() {
            let _ = std::fs::remove_file(state.journal_path(row));
        }
        if resuming {
            Spares::clear(dir);
        }
        Ok((state, file))
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
    /// record ([`Journal::deferred`]): rows that keep nothing (answered by the echo
    /// provider) make no file, and the others sync their header with their first call.
    pub fn journal(
        &self,
        index: u64,
        args: serde_json::Map<String, Value>,
    ) -> Result<Journal, String> {
        let path = self.journal_path(index);
        let held = self.resuming && std::fs::metadata(&path).is_ok_and(|m| m.len() > 0);
        if held {
            let (header, journal) = Journal::open(&path)?;
            if header.args == args {
                return Ok(journal);
            }
            // The inputs changed under the batch: this row's journal is not for it.
            drop(journal);
            std::fs::remove_file(&path)
                .map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
        }
        let header = Header {
            args,
            ..self.header.clone()
        };
        Ok(Journal::deferred(&path, header, Some(self.spares.clone())))
    }

    /// A row's line is written to the results file: its journal, if it made a file, is
    /// put away on a thread of the state's own once the line is on the disk.
    pub fn ended(&self, journal: Journal) {
        if !journal.on_disk() {
            return;
        }
        let retirer = self.retirer.get_or_init(|| {
            let results = self.results.try_clone().ok()?;
            Retirer::start(results, self.spares.clone())
        });
        let unsent = match retirer {
            Some(r) => r.send.send(journal).err().map(|mpsc::SendError(j)| j),
            None => Some(journal),
        };
        if let Some(journal) = unsent {
            retire(&self.results, &self.spares, vec![journal]);
        }
    }

    /// Every row finished: the state is no longer needed, and the same command run
    /// again starts the batch afresh.
    pub fn finish(self) {
        if let Some(Some(r)) = self.retirer.into_inner() {
            drop(r.send);
            let _ = r.thread.join();
        }
        drop(self.spares);
        // Renamed away first, in one step: a batch killed while the folder was being
        // emptied would otherwise leave one without `batch.json`, and the same command
        // would take it for a new batch and empty the finished results.
        let mut ended = self.dir.clone().into_os_string();
        ended.push(".ended");
        let ended = PathBuf::from(ended);
        let _ = std::fs::remove_dir_all(&ended);
        match std::fs::rename(&self.dir, &ended) {
            Ok(()) => {
                let _ = std::fs::remove_dir_all(&ended);
            }
            Err(_) => {
                let _ = std::fs::remove_dir_all(&self.dir);
            }
        }
    }

    fn journal_path(&self, index: u64) -> PathBuf {
        self.dir.join(format!("{index}.journal"))
    }
}

/// The rows the results file holds whole, and whether each completed; a last line cut
/// short is cut off the file.
fn finished_rows(file: &mut File, out: &Path) -> Result<HashMap<u64, bool>, String> {
    let mut text = Vec::new();
    file.read_to_end(&mut text)
        .map_err(|e| format!("cannot read {}: {e}", out.display()))?;
    let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    file.set_len(whole as u64)
        .map_err(|e| format!("--out {}: {e}", out.display()))?;
    let mut finished = HashMap::new();
    for line in String::from_utf8_lossy(&text[..whole]).lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let Some(i) = v.get("index").and_then(Value::as_u64) {
            let completed =
                v.get("status").and_then(|s| Status::deserialize(s).ok()) == Some(Status::Complete);
            finished.insert(i, completed);
        }
    }
    Ok(finished)
}
