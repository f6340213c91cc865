//! Every file `tvm` reads goes through here (DESIGN §18): it is opened without waiting,
//! must be a regular file, and is read no further than the bound of its kind.
//!
//! Opening is where a FIFO would block (until a writer comes, which may be never), so a
//! file is opened with `O_NONBLOCK` and checked on the handle it was opened as: the
//! check and the read are about the same file, whatever is renamed over the path in
//! between. A device, FIFO, socket or directory is refused naming what it is; a regular
//! file's size is checked before anything is read, and the read stops one byte past the
//! bound, so a file that grows while it is read is refused as too large rather than
//! read without end.
//!
//! Files named by a template or a model are opened beneath a folder ([`open_beneath`]):
//! `cap-std` resolves the path inside the folder's handle (`openat2` with
//! `RESOLVE_BENEATH` on Linux), so neither `..` nor a link, even one swapped in after
//! every check, leads out of it.

use cap_std::fs::{Dir, OpenOptions as DirOpenOptions, OpenOptionsExt as _};
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The most bytes one kind of file may have, and what the kind is called in messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    pub what: &'static str,
    pub max: u64,
}

/// A bundle `tvm run`, `resume`, `batch` or `info` loads: as large as `tvc` reads a
/// template file.
pub const PROGRAM: Bound = Bound {
    what: "a program file",
    max: 64 << 20,
};
/// `--arg NAME=@FILE`, and a `<test>`'s argument file.
pub const ARGUMENT: Bound = Bound {
    what: "an argument file",
    max: 64 << 20,
};
/// `--cassette`, and a `<test>`'s cassette: replies of 8 MiB each leave room for 32.
pub(crate) const CASSETTE: Bound = Bound {
    what: "a cassette",
    max: 256 << 20,
};
/// A `.env`: a file of keys and settings is small.
pub(crate) const DOTENV: Bound = Bound {
    what: "a .env file",
    max: 1 << 20,
};
/// A journal `tvm resume` reads whole: every reply of a run.
pub(crate) const JOURNAL: Bound = Bound {
    what: "a journal",
    max: 1 << 30,
};
/// One entry of the reply cache (a reply of the largest `--max-reply-bytes` worth
/// keeping, and its frame).
pub(crate) const CACHE_ENTRY: Bound = Bound {
    what: "a reply cache entry",
    max: 16 << 20,
};
/// `--prices`: a table is a few KB.
pub(crate) const PRICES: Bound = Bound {
    what: "a price file",
    max: 1 << 20,
};
/// A `.snap` file `tvm test --snapshots` compares with.
pub const SNAPSHOT: Bound = Bound {
    what: "a snapshot",
    max: 64 << 20,
};
/// A NATS credentials file, CA certificate, client certificate or key: a CA bundle of
/// every public authority is a few hundred KB.
pub(crate) const NATS_FILE: Bound = Bound {
    what: "a NATS credentials or certificate file",
    max: 1 << 20,
};
/// The record a batch's state folder keeps of what it runs.
pub(crate) const BATCH_RECORD: Bound = Bound {
    what: "a batch's state record",
    max: 64 << 10,
};

/// Why a file is not read.
#[derive(Debug)]
pub enum FileError {
    Missing,
    /// Not a regular file: what it is instead.
    NotRegular(&'static str),
    TooLarge(Bound),
    /// Opened beneath a folder, it would lead out of it (`..` or a link).
    Outside,
    Io(io::Error),
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Missing => f.write_str("does not exist"),
            FileError::NotRegular(kind) => {
                write!(f, "is {kind}, not a regular file")
            }
            FileError::TooLarge(b) => write!(
                f,
                "is larger than {}, the most {} may have",
                size(b.max),
                b.what
            ),
            FileError::Outside => f.write_str("leads out of its folder, so it is not read"),
            FileError::Io(e) => write!(f, "cannot be read: {e}"),
        }
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FileError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for FileError {
    fn from(e: io::Error) -> FileError {
        match e.kind() {
            io::ErrorKind::NotFound => FileError::Missing,
            _ => FileError::Io(e),
        }
    }
}

/// `64 MiB`, `1 GiB`, `16 KiB`, or bytes.
pub(crate) fn size(bytes: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{} {unit}", bytes >> shift);
        }
    }
    format!("{bytes} bytes")
}

/// Opens `path` for reading without waiting on a FIFO; only a regular file is returned.
pub(crate) fn open(path: &Path) -> Result<File, FileError> {
    let mut options = OpenOptions::new();
    options.read(true);
    open_with(path, &mut options)
}

/// Opens `path` with `options` (plus `O_NONBLOCK`, cleared once open); only a regular
/// file is returned. For files tvm also writes, such as journals.
pub(crate) fn open_with(path: &Path, options: &mut OpenOptions) -> Result<File, FileError> {
    let file = options
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(path)
        .map_err(refused)?;
    regular(file)
}

/// Opens `path` with `options` for writing a stream to (`--trace`), without waiting: a
/// FIFO no process reads is refused instead of waited on (a FIFO with a reader, a
/// terminal or `/dev/stderr` are taken). Blocking again once open.
/// The error says why: `is a FIFO that no process reads ...`, or `cannot be opened: ...`.
pub(crate) fn open_stream(path: &Path, options: &mut OpenOptions) -> Result<File, String> {
    let file = options
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ENXIO) => {
                "is a FIFO that no process reads, and tvm does not wait for one".to_string()
            }
            _ => format!("cannot be opened: {e}"),
        })?;
    let blocking = fcntl(&file, FcntlArg::F_GETFL).and_then(|flags| {
        let flags = OFlag::from_bits_truncate(flags) - OFlag::O_NONBLOCK;
        fcntl(&file, FcntlArg::F_SETFL(flags))
    });
    blocking.map_err(|e| format!("cannot be opened: {e}"))?;
    Ok(file)
}

/// Opens `rel` for reading beneath the folder `dir`: `..` and links are resolved inside
/// it, and a path that would lead out of it is refused, at the moment of opening.
pub fn open_beneath(dir: &Dir, rel: &Path) -> Result<File, FileError> {
    let mut options = DirOpenOptions::new();
    options.read(true).custom_flags(OFlag::O_NONBLOCK.bits());
    let file = dir.open_with(rel, &options).map_err(refused)?;
    regular(file.into_std())
}

/// Opens the folder `path` names, for [`open_beneath`].
pub fn open_dir(path: &Path) -> io::Result<Dir> {
    Dir::open_ambient_dir(path, cap_std::ambient_authority())
}

/// The open error of a path: ENXIO is what a FIFO opened for writing without a reader
/// gives, which names nothing a user would recognise.
fn refused(e: io::Error) -> FileError {
    if e.raw_os_error() == Some(nix::libc::ENXIO) {
        return FileError::NotRegular("a FIFO or socket");
    }
    // cap-std's refusal of an escape carries no OS error; a real EACCES does.
    if e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none() {
        return FileError::Outside;
    }
    FileError::from(e)
}

/// What a file that is not a regular file is, for messages; `None` for a regular file.
pub(crate) fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    }
}

/// `file` if it is a regular file, back in blocking mode.
pub(crate) fn regular(file: File) -> Result<File, FileError> {
    if let Some(what) = not_regular(&file.metadata()?) {
        return Err(FileError::NotRegular(what));
    }
    let flags = fcntl(&file, FcntlArg::F_GETFL).map_err(io::Error::from)?;
    let flags = OFlag::from_bits_truncate(flags) - OFlag::O_NONBLOCK;
    fcntl(&file, FcntlArg::F_SETFL(flags)).map_err(io::Error::from)?;
    Ok(file)
}

/// The bytes of an open regular file, at most `bound.max` of them: its size is checked
/// first, and the read stops one byte past the bound in case it grows meanwhile.
pub fn read_open(mut file: &File, bound: Bound) -> Result<Vec<u8>, FileError> {
    let len = file.metadata()?.len();
    if len > bound.max {
        return Err(FileError::TooLarge(bound));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.by_ref().take(bound.max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > bound.max {
        return Err(FileError::TooLarge(bound));
    }
    Ok(bytes)
}

/// The bytes of the file at `path`, within `bound`.
pub fn read(path: &Path, bound: Bound) -> Result<Vec<u8>, FileError> {
    read_open(&open(path)?, bound)
}

/// Syncs the folder that holds a new file, so the file's name survives a power loss
/// with its content.
pub(crate) fn sync_parent(path: &Path) {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let Ok(dir) = File::open(parent) {
        // Some file systems cannot sync a folder; the file's own sync still holds.
        let _ = dir.sync_all();
    }
}

/// The text of the file at `path`, within `bound`; an error is `PATH: why`.
pub(crate) fn read_text(path: &Path, bound: Bound) -> Result<String, String> {
    let shown = path.display();
    let bytes = read(path, bound).map_err(|e| format!("{shown} {e}"))?;
    String::from_utf8(bytes).map_err(|_| format!("{shown} is not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_written_in_the_largest_whole_unit() {
        assert_eq!(size(64 << 20), "64 MiB");
        assert_eq!(size(1 << 30), "1 GiB");
        assert_eq!(size(64 << 10), "64 KiB");
        assert_eq!(size(1000), "1000 bytes");
    }

    #[test]
    fn a_device_and_a_directory_are_refused_naming_what_they_are() {
        let e = read(Path::new("/dev/zero"), ARGUMENT).unwrap_err();
        assert_eq!(e.to_string(), "is a device, not a regular file");
        let e = read(Path::new("/"), ARGUMENT).unwrap_err();
        assert_eq!(e.to_string(), "is a directory, not a regular file");
        let e = read(Path::new("/no/such/file"), ARGUMENT).unwrap_err();
        assert_eq!(e.to_string(), "does not exist");
    }
}
