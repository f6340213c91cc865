//! A batch's results file (`--out`): the record of which rows are done. A row whose
//! line the file holds is done, completed or failed; the file is read back one line at
//! a time, its lines' `result`s skipped unread, so a large file costs the memory of
//! one line and of a flag per row.

use crate::files;
use nix::fcntl::Flock;
use serde::Deserialize;
use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, ErrorKind, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use tv_vm::result::Status;

/// What the results file holds of a row: the first fields of its line.
#[derive(Deserialize)]
struct Head {
    index: u64,
    status: Status,
}

/// The bytes the results file at `out` holds: 0 when there is none. Anything but a
/// regular file is refused: a FIFO would hold the batch up, a device swallow the rows
/// that are done.
pub(super) fn size(out: &Path) -> Result<u64, String> {
    match std::fs::metadata(out) {
        Ok(m) => match files::not_regular(&m) {
            None => Ok(m.len()),
            Some(what) => Err(not_a_file(out, what)),
        },
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(0),
        Err(e) => Err(format!("--out {}: {e}", out.display())),
    }
}

fn not_a_file(out: &Path, what: &str) -> String {
    format!(
        "--out {} is {what}, not a regular file: the results file is the batch's record of \
         the rows that are done, so it must be one",
        out.display()
    )
}

/// The results file at `out`, made when there is none, to read and append to.
pub(super) fn open(out: &Path, new: bool) -> Result<File, String> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .create_new(new)
        .truncate(false)
        .open(out)
        .map_err(|e| format!("--out {}: {e}", out.display()))?;
    // Checked on what was opened: the path may have changed since it was looked at.
    match file.metadata().map(|m| files::not_regular(&m)) {
        Ok(None) => Ok(file),
        Ok(Some(what)) => Err(not_a_file(out, what)),
        Err(e) => Err(format!("--out {}: {e}", out.display())),
    }
}

/// Locks the results file at `out` for this batch, or says which batch writes it. With
/// `now`, the lock taken before (if any) and the results file opened since: the lock is
/// kept when it is on that file, else that file is locked in its place (`--rerun` and
/// `--retry-failed` make a new one).
pub(super) fn lock(
    out: &Path,
    now: Option<(Option<Flock<File>>, &File)>,
) -> Result<Option<Flock<File>>, String> {
    use std::os::unix::fs::MetadataExt;
    let id = |f: &File| f.metadata().ok().map(|m| (m.dev(), m.ino()));
    let file = match now {
        Some((Some(held), file)) if id(&held) == id(file) => return Ok(Some(held)),
        Some((_, file)) => file
            .try_clone()
            .map_err(|e| format!("--out {}: {e}", out.display()))?,
        None => match files::open(out) {
            Ok(file) => file,
            Err(files::FileError::Missing) => return Ok(None),
            Err(e) => return Err(format!("--out {} {e}", out.display())),
        },
    };
    crate::journal::lock(file)
        .map(Some)
        .map_err(|refused| match refused {
            crate::journal::Refused::Held(holder) => format!(
                "--out {} is being written by {holder}, another tvm batch: two batches writing \
             one results file would take each other's rows for their own; wait for it to \
             end, or name another --out",
                out.display()
            ),
            crate::journal::Refused::Failed(errno) => {
                format!("cannot lock the results {}: {errno}", out.display())
            }
        })
}

/// The rows whose lines `file` (the results at `out`) holds whole, and whether each
/// completed; a last line cut short (by a crash) is cut off the file. A line that is
/// not a row's is passed over; it does not make any row done.
pub(super) fn finished(file: &mut File, out: &Path) -> Result<HashMap<u64, bool>, String> {
    let cannot = |e: std::io::Error| format!("cannot read the results {}: {e}", out.display());
    file.seek(SeekFrom::Start(0)).map_err(cannot)?;
    let mut reader = BufReader::new(&*file);
    let (mut finished, mut line, mut whole) = (HashMap::new(), Vec::new(), 0u64);
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(cannot)?;
        if n == 0 || line.last() != Some(&b'\n') {
            break;
        }
        whole += n as u64;
        if let Ok(head) = serde_json::from_slice::<Head>(&line) {
            finished.insert(head.index, head.status == Status::Complete);
        }
    }
    drop(reader);
    file.set_len(whole)
        .and_then(|()| file.seek(SeekFrom::End(0)).map(|_| ()))
        .map_err(|e| format!("--out {}: {e}", out.display()))?;
    Ok(finished)
}

/// Writes the results at `out` again without the lines of `rows` (rows that failed, to
/// run again): into a new file beside it, synced, then renamed over it, so that a
/// crash leaves either the old file or the new one, never a part. The new file, open
/// at its end, is returned.
pub(super) fn without(out: &Path, rows: &HashSet<u64>) -> Result<File, String> {
    let shown = out.display();
    let real = std::fs::canonicalize(out).map_err(|e| format!("--out {shown}: {e}"))?;
    let old = File::open(&real).map_err(|e| format!("--out {shown}: {e}"))?;
    let temp = beside(&real, "tvm-retry");
    let mut new = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&temp)
        .map_err(|e| format!("cannot write {}: {e}", temp.display()))?;
    let copied = copy_without(&old, &mut new, rows)
        .and_then(|()| match old.metadata() {
            Ok(m) => new.set_permissions(m.permissions()),
            Err(e) => Err(e),
        })
        .and_then(|()| new.sync_all())
        .and_then(|()| std::fs::rename(&temp, &real));
    if let Err(e) = copied {
        let _ = std::fs::remove_file(&temp);
        return Err(format!("cannot write the results {shown} again: {e}"));
    }
    crate::files::sync_parent(&real);
    Ok(new)
}

/// Copies the lines of `from` to `to` but those of `rows`.
fn copy_without(from: &File, to: &mut File, rows: &HashSet<u64>) -> std::io::Result<()> {
    let mut reader = BufReader::new(from);
    let mut writer = std::io::BufWriter::new(to);
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let head = serde_json::from_slice::<Head>(&line).ok();
        if !head.is_some_and(|h| rows.contains(&h.index)) {
            writer.write_all(&line)?;
        }
    }
    writer.flush()
}

/// Where `--rerun` keeps the results at `out` that it starts over from.
pub(super) fn previous(out: &Path) -> PathBuf {
    let mut p = out.as_os_str().to_owned();
    p.push(".previous");
    PathBuf::from(p)
}

/// Refuses to start over when the earlier results could not be kept: their name is taken.
pub(super) fn check_previous_free(out: &Path) -> Result<(), String> {
    let kept = previous(out);
    match std::fs::symlink_metadata(&kept) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        _ => Err(format!(
            "--rerun keeps the earlier results as {}, which exists already; move or remove \
             it first",
            kept.display()
        )),
    }
}

/// Moves the results at `out` to [`previous`]: linked there first, which refuses a
/// name taken meanwhile, then unlinked from `out`.
pub(super) fn move_aside(out: &Path) -> Result<PathBuf, String> {
    let kept = previous(out);
    std::fs::hard_link(out, &kept)
        .and_then(|()| std::fs::remove_file(out))
        .map_err(|e| {
            format!(
                "cannot keep the earlier results {} as {}: {e}",
                out.display(),
                kept.display()
            )
        })?;
    crate::files::sync_parent(out);
    Ok(kept)
}

/// A name beside `path` for a file of this process: `.NAME.WHAT-PID`.
fn beside(path: &Path, what: &str) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "results".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{what}-{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_rows_are_read_past_a_line_that_is_no_row_and_a_torn_last_line_is_cut() {
        let path = std::env::temp_dir().join(format!("tv-results-{}.jsonl", std::process::id()));
        let big = "x".repeat(1 << 20);
        let text = format!(
            "{{\"index\":0,\"id\":null,\"status\":\"COMPLETE\",\"result\":\"{big}\"}}\n\
             not a row\n\
             {{\"index\":2,\"status\":\"FAILED\",\"result\":{{}}}}\n\
             {{\"index\":3,\"status\":\"COMP"
        );
        std::fs::write(&path, &text).expect("write");
        let mut file = open(&path, false).expect("open");
        let rows = finished(&mut file, &path).expect("read");
        assert_eq!(rows, HashMap::from([(0, true), (2, false)]));
        let kept = std::fs::read_to_string(&path).expect("read back");
        assert!(kept.ends_with("\"result\":{}}\n"), "the torn line is cut");
        let _ = std::fs::remove_file(&path);
    }
}
