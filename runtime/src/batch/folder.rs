//! A batch's state folder as a place on the disk: which folders a batch may take, the
//! lock that keeps a second batch out, and the only files it ever removes there.
//!
//! A folder is a batch's state when it holds the `batch.json` tvm writes: an object of
//! exactly the bundle's hash, the entry point and a hash of the rows, so that a
//! `batch.json` of the user's own is never taken for one. A batch takes a folder that
//! does not exist (it makes it), an empty one, or one that holds its `batch.json`;
//! anything else (files and no `batch.json`, a folder of another user or that every
//! user may write to, a `batch.json` that is a link) is refused before anything in it
//! is touched. From it a batch removes only its own files: row journals (`N.journal`)
//! and spares (`N.spare`) that are plain files, never a link, never the folder.
//!
//! The lock is `flock` on `batch.json` itself, taken before it is read and held until
//! the batch ends, as a journal's is ([`crate::journal::lock`]): a second batch on the
//! folder is refused naming the first one's pid.

use crate::files::{self, FileError};
use crate::journal::{lock, Refused};
use nix::fcntl::{Flock, OFlag};
use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The state folder's own file, naming the batch.
pub(super) const MARKER: &str = "batch.json";

/// What a state folder is found to be.
pub(super) enum Found {
    /// There is no folder (`exists: false`), or it is empty: a batch may start there.
    Empty { exists: bool },
    /// A batch's state: its `batch.json`, locked by this process, and what it says.
    Batch { marker: Flock<File>, record: Value },
}

/// What the folder `dir` is, reading nothing but its `batch.json` (locked first) and
/// touching nothing.
pub(super) fn inspect(dir: &Path) -> Result<Found, String> {
    let shown = dir.display();
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Found::Empty { exists: false }),
        Err(e) => return Err(format!("the state folder {shown}: {e}")),
    };
    if !meta.is_dir() {
        return Err(format!("the state folder {shown} is not a folder"));
    }
    trusted(dir, &meta)?;
    let path = dir.join(MARKER);
    // Not through a link, and never waiting on a FIFO planted under the name.
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
        .open(&path);
    let file = match opened.map_err(FileError::from).and_then(files::regular) {
        Ok(f) => f,
        Err(FileError::Missing) => {
            let empty = std::fs::read_dir(dir)
                .map_err(|e| format!("the state folder {shown}: {e}"))?
                .next()
                .is_none();
            return match empty {
                true => Ok(Found::Empty { exists: true }),
                false => Err(format!(
                    "the state folder {shown} holds files and no {MARKER}: it is not a batch's \
                     state, and tvm touches nothing in it; name a new or empty folder with \
                     --state DIR"
                )),
            };
        }
        Err(e @ (FileError::NotRegular(_) | FileError::TooLarge(_))) => {
            return Err(format!("{} {e}", path.display()))
        }
        Err(FileError::Io(e)) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
            return Err(format!(
                "{} is a link, and tvm never follows a link to its own files; name another \
                 folder with --state DIR",
                path.display()
            ))
        }
        Err(e) => return Err(not_ours(dir, &format!("{MARKER} cannot be opened ({e})"))),
    };
    let marker = lock(file).map_err(|refused| match refused {
        Refused::Held(holder) => format!(
            "the state folder {shown} is in use by {holder}, another tvm batch: two batches \
             on one folder would pay for every row twice; wait for it to end, or stop it"
        ),
        Refused::Failed(errno) => format!("cannot lock {}: {errno}", path.display()),
    })?;
    let record = read_marker(&marker, &path)?;
    Ok(Found::Batch { marker, record })
}

/// Refuses a folder another user could have filled: its journals would be answers this
/// batch never received, taken as its own.
fn trusted(dir: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    let shown = dir.display();
    if meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(format!(
            "the state folder {shown} belongs to another user (uid {}); a batch keeps its \
             state only in a folder of its own user: name one with --state DIR",
            meta.uid()
        ));
    }
    if meta.mode() & 0o002 != 0 {
        return Err(format!(
            "the state folder {shown} may be written by every user, who could leave journals \
             in it for the batch to take as its answers; name a folder of your own with \
             --state DIR"
        ));
    }
    Ok(())
}

fn not_ours(dir: &Path, why: &str) -> String {
    format!(
        "the state folder {} is not a batch's state: {why}; tvm touches nothing in it (name \
         another with --state DIR)",
        dir.display()
    )
}

/// What the `batch.json` in `file` (at `path`) says, if tvm wrote it: a regular file
/// of at most [`files::BATCH_RECORD`] holding exactly the three strings tvm writes.
fn read_marker(file: &File, path: &Path) -> Result<Value, String> {
    let text = files::read_open(file, files::BATCH_RECORD)
        .map_err(|e| format!("{} {e}", path.display()))?;
    let record: Value = serde_json::from_slice(&text).unwrap_or(Value::Null);
    let ours = record.as_object().is_some_and(|m| {
        m.len() == 3
            && ["bundle_sha256", "entry", "rows_sha256"]
                .iter()
                .all(|k| m.get(*k).is_some_and(Value::is_string))
    });
    match ours {
        true => Ok(record),
        false => Err(not_ours(
            path.parent().unwrap_or(path),
            &format!("its {MARKER} was not written by tvm batch"),
        )),
    }
}

/// Makes `dir` the state of the batch `record`, found as `found`, and returns its
/// `batch.json`, locked: a new or empty folder gets one; a batch's folder that starts
/// over (`restart`) loses its journals and spares and gets `record` if it named another.
pub(super) fn claim(
    dir: &Path,
    record: &Value,
    found: Found,
    restart: bool,
) -> Result<Flock<File>, String> {
    match found {
        Found::Empty { exists } => {
            if !exists {
                std::fs::create_dir_all(dir).map_err(|e| {
                    format!("cannot create the state folder {}: {e}", dir.display())
                })?;
            }
            write_marker(dir, record, false)
        }
        Found::Batch {
            marker,
            record: held,
        } => {
            if restart {
                clear(dir);
            }
            if held == *record {
                return Ok(marker);
            }
            // Locked until the new one, locked too, has taken its name.
            let new = write_marker(dir, record, true);
            drop(marker);
            new
        }
    }
}

/// Writes `record` as `dir`'s `batch.json`: beside it first, locked and synced, then
/// under its name, so that no other batch ever sees it unlocked or half written. A new
/// one takes the name by a link, which refuses a name taken meanwhile; one started
/// over replaces the old by a rename.
fn write_marker(dir: &Path, record: &Value, replace: bool) -> Result<Flock<File>, String> {
    let path = dir.join(MARKER);
    let temp = dir.join(format!(".{MARKER}.{}", std::process::id()));
    let cannot = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(OFlag::O_NOFOLLOW.bits())
        .open(&temp)
        .map_err(cannot)?;
    let written = match lock(file) {
        Ok(mut file) => file
            .write_all(record.to_string().as_bytes())
            .and_then(|()| file.sync_all())
            .and_then(|()| match replace {
                true => std::fs::rename(&temp, &path),
                false => std::fs::hard_link(&temp, &path),
            })
            .map(|()| file),
        Err(_) => Err(std::io::Error::other("the new file could not be locked")),
    };
    let _ = std::fs::remove_file(&temp);
    let file = written.map_err(|e| match e.kind() {
        ErrorKind::AlreadyExists => format!(
            "the state folder {} was taken by another tvm batch as this one started",
            dir.display()
        ),
        _ => cannot(e),
    })?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(file)
}

/// Refuses each of `files` (a flag and the path it names) that is one of the files a
/// batch makes in its state folder `dir` (`N.journal`, `N.spare`, `batch.json` and its
/// temporary name): the batch would write its journals over it, and `--rerun` would
/// remove it as its own. Compared by the folder's device and inode, else (a folder not
/// made yet) by the paths as written, made absolute.
pub(crate) fn apart_from_state(dir: &Path, files: &[(&str, &Path)]) -> Result<(), String> {
    for (flag, file) in files {
        let Some(name) = file.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let made = own_name(name) || name == MARKER || name.starts_with(&format!(".{MARKER}."));
        if made && same_folder(dir, file.parent()) {
            return Err(format!(
                "{flag} {} is named as a file of the batch's state folder {}, which the batch \
                 writes and removes as its own; name another file, or another --state DIR",
                file.display(),
                dir.display()
            ));
        }
    }
    Ok(())
}

fn same_folder(dir: &Path, parent: Option<&Path>) -> bool {
    let parent = match parent {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (std::fs::metadata(dir), std::fs::metadata(parent)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => lexical(dir) == lexical(parent),
    }
}

/// `path` made absolute, with `.` and `..` taken as written.
fn lexical(path: &Path) -> Option<std::path::PathBuf> {
    let mut out = std::path::PathBuf::new();
    for c in std::path::absolute(path).ok()?.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    Some(out)
}

/// Whether `name` is one of the files a batch makes in its folder beside `batch.json`:
/// a row's journal, `N.journal`, or a spare, `N.spare`.
fn own_name(name: &str) -> bool {
    let stem = name
        .strip_suffix(".journal")
        .or_else(|| name.strip_suffix(".spare"));
    stem.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
}

/// Removes the journals and spares of a batch's folder `dir` that are plain files.
pub(super) fn clear(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let plain = e.file_type().is_ok_and(|t| t.is_file());
        if plain && e.file_name().to_str().is_some_and(own_name) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::own_name;

    #[test]
    fn only_numbered_journals_and_spares_are_a_batchs_own_files() {
        for (name, own) in [
            ("3.journal", true),
            ("12.spare", true),
            ("batch.json", false),
            (".journal", false),
            ("notes.journal", false),
            ("3.journal.bak", false),
            ("-1.spare", false),
        ] {
            assert_eq!(own_name(name), own, "{name}");
        }
    }
}
