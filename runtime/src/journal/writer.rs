//! Where a journal's lines go: its file, locked for as long as the journal is open, or,
//! for a journal whose file is made with its first record, the header that file will
//! start with.
//!
//! Syncing a line takes milliseconds, and making a file can take more (see
//! [`super::spare`]). On the thread that drives the run either would stop every other
//! branch, body and batch row for that long, so both are done on tokio's blocking pool
//! when there is one, where the syncs of many rows overlap. Appending a line that is
//! not synced yet is a copy into the page cache, made where it is asked for.

use super::lock::create_locked;
use super::spare::Spares;
use super::{Header, JournalError, JournalKind};
use nix::fcntl::Flock;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A journal's file, shared with the blocking-pool threads that write it.
pub(super) struct Output {
    path: PathBuf,
    writer: Arc<Mutex<Writer>>,
}

enum Writer {
    Open {
        /// Opened to append.
        file: Flock<File>,
        /// Lines written since the last sync.
        unsynced: bool,
        /// The file is new and its folder not synced since: after a power loss the
        /// file itself might be gone.
        unnamed: bool,
    },
    /// Not made yet: the file is made with the first line, starting with this header,
    /// from a spare file when there is one. The header is written out only then: a run
    /// with nothing to keep (a batch's dry-run rows) never spends the time.
    Deferred {
        header: Box<Header>,
        spares: Option<Arc<Spares>>,
    },
}

impl Output {
    /// A file that is there, opened and locked; `new`: made by this run.
    pub(super) fn open(path: &Path, file: Flock<File>, new: bool) -> Output {
        Output::over(
            path,
            Writer::Open {
                file,
                unsynced: false,
                unnamed: new,
            },
        )
    }

    /// A file made with the first line, which follows `header`.
    pub(super) fn deferred(path: &Path, header: Header, spares: Option<Arc<Spares>>) -> Output {
        let header = Box::new(header);
        Output::over(path, Writer::Deferred { header, spares })
    }

    fn over(path: &Path, writer: Writer) -> Output {
        Output {
            path: path.to_path_buf(),
            writer: Arc::new(Mutex::new(writer)),
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file exists: it was opened, or a line made it.
    pub(super) fn on_disk(&self) -> bool {
        self.writer
            .lock()
            .map_or(true, |w| matches!(*w, Writer::Open { .. }))
    }

    /// Whether a line that is not synced can be written where it is asked for: the
    /// file is there, or a spare is (naming a spare is as quick as appending).
    fn quick(&self) -> bool {
        self.writer.lock().is_ok_and(|w| match &*w {
            Writer::Open { .. } => true,
            Writer::Deferred { spares, .. } => spares.as_ref().is_some_and(|s| s.any()),
        })
    }

    /// The open file, when there is one and no write of it is under way.
    pub(super) fn into_file(self) -> Option<Flock<File>> {
        match Arc::into_inner(self.writer)?.into_inner().ok()? {
            Writer::Open { file, .. } => Some(file),
            Writer::Deferred { .. } => None,
        }
    }

    /// Writes one line; with `sync`, it and every line before it are on the disk when
    /// this returns.
    pub(super) fn write(&self, line: &str, sync: bool) -> Result<(), JournalError> {
        write(&self.path, &self.writer, line, sync)
    }

    /// [`Output::write`], on the blocking pool when it syncs or makes a file.
    pub(super) async fn append(&self, line: String, sync: bool) -> Result<(), JournalError> {
        if (!sync && self.quick()) || tokio::runtime::Handle::try_current().is_err() {
            return self.write(&line, sync);
        }
        let (path, writer) = (self.path.clone(), self.writer.clone());
        tokio::task::spawn_blocking(move || write(&path, &writer, &line, sync))
            .await
            .map_err(|e| failed(JournalKind::Write, &self.path, e))?
    }

    /// Syncs the lines written since the last sync, on the blocking pool.
    pub(super) async fn sync(&self) -> Result<(), JournalError> {
        let pending = self.writer.lock().is_ok_and(|w| match *w {
            Writer::Open {
                unsynced, unnamed, ..
            } => unsynced || unnamed,
            Writer::Deferred { .. } => false,
        });
        if !pending {
            return Ok(());
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return sync(&self.path, &self.writer);
        }
        let (path, writer) = (self.path.clone(), self.writer.clone());
        tokio::task::spawn_blocking(move || sync(&path, &writer))
            .await
            .map_err(|e| failed(JournalKind::Sync, &self.path, e))?
    }
}

/// A write (`kind`) of the journal at `path` that failed for `e`.
pub(super) fn failed(
    kind: JournalKind,
    path: &Path,
    e: impl std::error::Error + Send + Sync + 'static,
) -> JournalError {
    let message = format!("cannot write the journal {}: {e}", path.display());
    JournalError::new(kind, message).because(e)
}

fn locked(writer: &Mutex<Writer>) -> Result<std::sync::MutexGuard<'_, Writer>, JournalError> {
    writer
        .lock()
        .map_err(|_| JournalError::new(JournalKind::Write, "the journal writer failed earlier"))
}

fn write(path: &Path, writer: &Mutex<Writer>, line: &str, sync: bool) -> Result<(), JournalError> {
    let mut writer = locked(writer)?;
    let unwritten = |e| failed(JournalKind::Write, path, e);
    match &mut *writer {
        Writer::Deferred { header, spares } => {
            let header = serde_json::to_string(header).map_err(super::unwritable)?;
            let mut file = open_file(path, spares.as_deref())?;
            file.write_all(format!("{header}\n{line}\n").as_bytes())
                .map_err(unwritten)?;
            // Only a file whose header is written takes the next lines; one that failed
            // stays empty, and is taken over as a run that stopped before its header.
            *writer = Writer::Open {
                file,
                unsynced: true,
                unnamed: true,
            };
        }
        Writer::Open { file, unsynced, .. } => {
            let mut bytes = Vec::with_capacity(line.len() + 1);
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
            file.write_all(&bytes).map_err(unwritten)?;
            *unsynced = true;
        }
    }
    if sync {
        synced(path, &mut writer)?;
    }
    Ok(())
}

fn sync(path: &Path, writer: &Mutex<Writer>) -> Result<(), JournalError> {
    synced(path, &mut *locked(writer)?)
}

/// Puts what was written on the disk: the lines, and a new file's name in its folder.
fn synced(path: &Path, writer: &mut Writer) -> Result<(), JournalError> {
    let Writer::Open {
        file,
        unsynced,
        unnamed,
    } = writer
    else {
        return Ok(());
    };
    if *unsynced {
        file.sync_data()
            .map_err(|e| failed(JournalKind::Sync, path, e))?;
        *unsynced = false;
    }
    if *unnamed {
        crate::files::sync_parent(path);
        *unnamed = false;
    }
    Ok(())
}

/// The journal file at `path` for a new run: a spare when there is one, else a file
/// made for it.
fn open_file(path: &Path, spares: Option<&Spares>) -> Result<Flock<File>, JournalError> {
    match spares.and_then(|s| s.take(path)) {
        Some(file) => Ok(file),
        None => create_locked(path),
    }
}
