//! Spare journal files: a batch's rows each keep a journal only while they run, and
//! a file made for every row costs more than the row's own work on some file systems
//! (ext4 without a journal searches its inode tables past every recently freed inode:
//! half a millisecond of CPU per file on a machine that makes and removes many). So the
//! journal of a row that ended is emptied and kept, open and locked, under a spare
//! name, and the next row's journal is that file under the row's name.
//!
//! A spare holds nothing: a stopped batch's spares are removed when it is resumed
//! ([`Spares::clear`]), and a row's journal that was a spare starts empty, as a new one.

use super::Journal;
use nix::fcntl::Flock;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The spare files of one folder.
pub struct Spares {
    dir: PathBuf,
    free: Mutex<Vec<Spare>>,
    /// Names the next spare: `N.spare`.
    named: AtomicU64,
}

struct Spare {
    path: PathBuf,
    file: Flock<File>,
}

/// More than a batch has rows running; past this many, an ended journal is removed.
const MOST: usize = 4096;

impl Spares {
    pub fn new(dir: &Path) -> Spares {
        Spares {
            dir: dir.to_path_buf(),
            free: Mutex::new(Vec::new()),
            named: AtomicU64::new(0),
        }
    }

    /// Removes the spares a stopped run left in `dir` (plain files only: a link of
    /// that name is not one).
    pub fn clear(dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let plain = e.file_type().is_ok_and(|t| t.is_file());
            if plain && e.path().extension().is_some_and(|x| x == "spare") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    /// Removes the spares kept so far: the batch that kept them has ended.
    pub(crate) fn remove_all(&self) {
        let Ok(mut free) = self.free.lock() else {
            return;
        };
        for spare in free.drain(..) {
            let _ = std::fs::remove_file(&spare.path);
        }
    }

    /// Whether a spare is there to take.
    pub(super) fn any(&self) -> bool {
        self.free.lock().is_ok_and(|f| !f.is_empty())
    }

    /// A spare file, empty and locked, under the name `path`; `None` when there is none
    /// or it cannot be named so (a file of that name is there already: a spare never
    /// replaces one).
    pub(super) fn take(&self, path: &Path) -> Option<Flock<File>> {
        let spare = self.free.lock().ok()?.pop()?;
        // A link, not a rename: it refuses a name that is taken.
        let named = std::fs::hard_link(&spare.path, path);
        let _ = std::fs::remove_file(&spare.path);
        named.ok().map(|()| spare.file)
    }

    /// `journal`'s run ended and nothing will read it again: its file, emptied, becomes
    /// a spare; it is removed instead when it cannot be (a write of it still under way,
    /// the file system refusing), or when enough are kept.
    pub fn keep(&self, journal: Journal) {
        let path = journal.path().to_path_buf();
        let file = journal.into_file();
        let room = self.free.lock().is_ok_and(|f| f.len() < MOST);
        let Some(file) = file.filter(|_| room) else {
            let _ = std::fs::remove_file(&path);
            return;
        };
        let spare = self.dir.join(format!(
            "{}.spare",
            self.named.fetch_add(1, Ordering::Relaxed)
        ));
        match file
            .set_len(0)
            .and_then(|()| std::fs::rename(&path, &spare))
        {
            Ok(()) => {
                if let Ok(mut free) = self.free.lock() {
                    free.push(Spare { path: spare, file });
                }
            }
            Err(_) => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}
