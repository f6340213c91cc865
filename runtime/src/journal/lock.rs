//! The journal's lock: one process at a time writes a journal (and one batch at a time
//! uses a state folder).

use super::{JournalError, JournalKind};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Locks `file` (the journal at `path`) for this process, or says who holds it.
///
/// The journal's lock (DESIGN §18): one process at a time writes a journal. Two resumes
/// of one journal would each pay for the calls it lacks, run its scripts twice and
/// interleave their records into a journal neither could resume.
///
/// The lock is `flock(LOCK_EX | LOCK_NB)` on the journal's own open file, held for as
/// long as the run has the file open. The kernel drops it when the process ends, however
/// it ends, so a crash never leaves a stale lock behind, and nothing besides the journal
/// is written. Who holds it is read from `/proc/locks`, where the kernel lists each
/// lock with the holder's pid and the file's device and inode: always the true holder,
/// never a stale record.
pub(super) fn lock_exclusive(path: &Path, file: File) -> Result<Flock<File>, JournalError> {
    let shown = path.display();
    lock(file).map_err(|refused| match refused {
        Refused::Held(holder) => JournalError::new(
            JournalKind::Locked,
            format!(
                "the journal {shown} is in use by {holder}: a second run on it would repeat its \
                 calls and scripts; wait for that run to end, or stop it, then resume"
            ),
        ),
        Refused::Failed(errno) => JournalError::new(
            JournalKind::Open,
            format!("cannot lock the journal {shown}: {errno}"),
        )
        .because(errno),
    })
}

/// Creates the journal file at `path` for a new run and locks it: an empty one left by
/// a run that stopped before its header is taken over; one that holds a run is refused.
pub(super) fn create_locked(path: &Path) -> Result<Flock<File>, JournalError> {
    let shown = path.display();
    let mut options = OpenOptions::new();
    options.read(true).append(true);
    let unopened = |message: String, e: Box<dyn std::error::Error + Send + Sync>| {
        JournalError::new(JournalKind::Open, message).because(e)
    };
    // create-new: two runs starting at once cannot both create it.
    let file = match options.clone().create_new(true).open(path) {
        // One that exists must be a regular file: a FIFO would take the records away.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            crate::files::open_with(path, &mut options)
                .map_err(|e| unopened(format!("the journal {shown} {e}"), e.into()))?
        }
        opened => opened
            .map_err(|e| unopened(format!("cannot create the journal {shown}: {e}"), e.into()))?,
    };
    let file = lock_exclusive(path, file)?;
    // Checked under the lock: a run that held it may have written its header since.
    if file.metadata().is_ok_and(|m| m.is_file() && m.len() > 0) {
        return Err(JournalError::new(JournalKind::Exists, format!(
            "the journal {shown} already exists: resume it with `tvm resume {shown}`, or remove it to start afresh"
        )));
    }
    Ok(file)
}

/// Why a file could not be locked.
pub(crate) enum Refused {
    /// Another process holds the lock: `another process (pid N)`, or without the pid
    /// when it cannot be told.
    Held(String),
    Failed(Errno),
}

/// Locks `file` for this process (the journal's lock, above; a batch's state folder's
/// lock on its `batch.json` too), or says who holds it.
pub(crate) fn lock(mut file: File) -> Result<Flock<File>, Refused> {
    // A killed run's lock can outlive it by a moment: a script it was starting holds
    // the file until its `exec` closes it. So a busy lock is tried again for a second
    // before it is taken to be another run's.
    let mut tries = 0;
    let (file, errno) = loop {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => return Ok(locked),
            Err((back, Errno::EWOULDBLOCK)) if tries < 20 => {
                tries += 1;
                file = back;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(refused) => break refused,
        }
    };
    if errno != Errno::EWOULDBLOCK {
        return Err(Refused::Failed(errno));
    }
    let holder = file
        .metadata()
        .ok()
        .and_then(|m| holder(m.dev(), m.ino()))
        .map_or_else(
            || "another process".to_owned(),
            |pid| format!("another process (pid {pid})"),
        );
    Err(Refused::Held(holder))
}

/// The pid that holds a `flock` on the file with device `dev` and inode `ino`.
fn holder(dev: u64, ino: u64) -> Option<u32> {
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    // Linux's encoding of a device number into its major and minor parts.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let id = format!("{major:02x}:{minor:02x}:{ino}");
    // `1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF`; waiters are marked `->`.
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [_, "FLOCK", _, _, pid, file, ..] if *file == id => pid.parse().ok(),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_a_locked_journal_is_refused_naming_the_holder() {
        let path = std::env::temp_dir().join(format!("tvm-lock-{}.jsonl", std::process::id()));
        let first = lock_exclusive(&path, File::create(&path).expect("created")).expect("locked");
        let again = File::open(&path).expect("opened");
        let err = lock_exclusive(&path, again).expect_err("held by the first");
        assert_eq!(err.kind(), &JournalKind::Locked);
        let expected = format!(
            "the journal {} is in use by another process (pid {}): a second run on it would \
             repeat its calls and scripts; wait for that run to end, or stop it, then resume",
            path.display(),
            std::process::id()
        );
        assert_eq!(err.to_string(), expected);
        drop(first);
        let third = File::open(&path).expect("opened");
        assert!(
            lock_exclusive(&path, third).is_ok(),
            "free once the first is dropped"
        );
        let _ = std::fs::remove_file(&path);
    }
}
