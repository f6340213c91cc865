//! Which files `file_paths` and fresh context may read, and reading them (DESIGN §18).
//!
//! A bundle is untrusted code: its `file_paths` (or a command it runs, or a link someone
//! left in a folder) must not carry `/etc/passwd` or `~/.ssh/id_rsa` to a model. A path
//! is read only once resolved, links followed, and found inside a folder the user named:
//! - with `--workspace DIR`, every entry (literal, command-listed or matched) must stay
//!   inside DIR; a literal one may also lie inside an `--allow-read PATH`;
//! - without a workspace, only literal entries are read: a relative one must stay inside
//!   the current directory, and one that is absolute, uses `..` or leads out through a
//!   link must lie inside an `--allow-read PATH`.
//!
//! Resolving decides and names; it does not make the read safe, since a folder on the
//! way may be swapped for a link right after. The read opens the file beneath the
//! folder that holds it ([`files::open_beneath`]), so a link swapped in then cannot lead
//! out, and the file opened must be the one resolved (same device and inode), so that
//! what the names were checked for is what is read.

use crate::files::{self, FileError};
use cap_std::fs::Dir;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// Where a `file_paths` entry came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Source {
    Literal,
    /// Listed by a command, or named by a model's subtask request.
    Command,
}

/// A folder reads may happen in: as given, resolved, and opened once per look-up.
struct Root {
    given: PathBuf,
    real: PathBuf,
    dir: Option<Dir>,
}

impl Root {
    fn new(given: &Path) -> Root {
        let real = resolved(given);
        let dir = files::open_dir(&real).ok();
        Root {
            given: given.to_path_buf(),
            real,
            dir,
        }
    }
}

/// The folders reads may happen in, each resolved once per look-up.
pub(super) struct Scope {
    workspace: Option<Root>,
    /// The current directory, when there is no workspace.
    current: Option<Root>,
    allowed: Vec<PathBuf>,
}

impl Scope {
    pub(super) fn new(workspace: Option<&Path>, allow_read: &[PathBuf]) -> Scope {
        let workspace = workspace.map(Root::new);
        let current = match workspace {
            Some(_) => None,
            None => std::env::current_dir().ok().map(|d| Root::new(&d)),
        };
        Scope {
            workspace,
            current,
            allowed: allow_read.iter().map(|p| resolved(p)).collect(),
        }
    }

    /// The resolved workspace, if there is one.
    pub(super) fn workspace(&self) -> Option<&Path> {
        self.workspace.as_ref().map(|w| w.real.as_path())
    }

    /// A resolved path relative to the workspace, else to the current directory.
    pub(super) fn relative_name(&self, real: &Path) -> Option<String> {
        let base = self.workspace.as_ref().or(self.current.as_ref())?;
        let rel = real.strip_prefix(&base.real).ok()?.to_str()?;
        (!rel.is_empty()).then(|| rel.to_owned())
    }

    /// A resolved path relative to the folder it is read from (the workspace, the current
    /// directory or an `--allow-read` folder; an allowed file by its name): the part of
    /// it that says what the file is, whatever the folders above are called.
    pub(super) fn name_in_root(&self, real: &Path) -> Option<String> {
        let roots = (self.workspace.iter().chain(self.current.iter())).map(|r| r.real.as_path());
        let root = roots
            .chain(self.allowed.iter().map(PathBuf::as_path))
            .find(|root| real.starts_with(root))?;
        let rel = match real.strip_prefix(root).ok()? {
            rel if rel.as_os_str().is_empty() => Path::new(real.file_name()?),
            rel => rel,
        };
        rel.to_str().map(str::to_owned)
    }

    /// The path to read for `written`, or why it is not read.
    pub(super) fn resolve(&self, written: &str, source: Source) -> Result<PathBuf, String> {
        if written.contains('\0') {
            return Err("holds a NUL byte, which no path can; skipped".into());
        }
        let given = Path::new(written);
        let (path, inside) = match (&self.workspace, source) {
            (Some(ws), _) => (ws.given.join(given), Some(&ws.real)),
            (None, Source::Literal) => (given.to_path_buf(), None),
            (None, _) => return Err("is read only with --workspace DIR".into()),
        };
        let real = path
            .canonicalize()
            .map_err(|e| FileError::from(e).to_string())?;
        if inside.is_some_and(|ws| real.starts_with(ws)) {
            return Ok(real);
        }
        let granted = source == Source::Literal && self.allowed.iter().any(|a| real.starts_with(a));
        if granted {
            return Ok(real);
        }
        if inside.is_some() {
            return Err("leads outside the workspace; skipped".into());
        }
        let escapes = given.is_absolute() || given.components().any(|c| c == Component::ParentDir);
        let here = (self.current.as_ref()).is_some_and(|d| real.starts_with(&d.real));
        if here && !escapes {
            return Ok(real);
        }
        Err(
            "is outside the current directory (absolute, `..` or a link); \
             skipped: pass --allow-read PATH to let it be read"
                .into(),
        )
    }

    /// The text of the resolved path `real`, at most a little past `cap` bytes, opened
    /// beneath the folder that holds it; the error says why it cannot be used.
    pub(super) fn read(&self, real: &Path, cap: usize) -> Result<String, String> {
        let expected = std::fs::metadata(real).map_err(|e| FileError::from(e).to_string())?;
        let file = self.open(real).map_err(|e| match e {
            FileError::Outside => {
                "leads outside its folder (a link was swapped in); skipped".into()
            }
            e => e.to_string(),
        })?;
        let opened = file
            .metadata()
            .map_err(|e| FileError::from(e).to_string())?;
        if (opened.dev(), opened.ino()) != (expected.dev(), expected.ino()) {
            return Err(
                "changed while it was being read (a link or folder was swapped); skipped".into(),
            );
        }
        text(file, cap)
    }

    /// Opens `real` beneath the root that holds it: the workspace, the current directory
    /// or an `--allow-read` path (a folder, or the file itself).
    fn open(&self, real: &Path) -> Result<std::fs::File, FileError> {
        let roots = self.workspace.iter().chain(self.current.iter());
        for root in roots {
            if let (Ok(rel), Some(dir)) = (real.strip_prefix(&root.real), &root.dir) {
                return files::open_beneath(dir, rel);
            }
        }
        let allowed = self.allowed.iter().find(|a| real.starts_with(a));
        let Some(allowed) = allowed else {
            return Err(denied("it lies outside every folder it may be read from"));
        };
        // A granted file is opened beneath its own folder, by its name.
        let (folder, rel) = match real.strip_prefix(allowed) {
            Ok(rel) if !rel.as_os_str().is_empty() => (allowed.as_path(), rel),
            _ => match (real.parent(), real.file_name()) {
                (Some(parent), Some(name)) => (parent, Path::new(name)),
                _ => return Err(denied("it names no file")),
            },
        };
        files::open_beneath(&files::open_dir(folder)?, rel)
    }
}

fn denied(why: &str) -> FileError {
    FileError::Io(std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        why,
    ))
}

/// The text of an open file, read only a little past `cap` bytes (longer means more
/// than `cap`); the error says why the file cannot be used.
fn text(file: std::fs::File, cap: usize) -> Result<String, String> {
    use std::io::Read;
    let limit = cap.saturating_add(4);
    let mut buf = Vec::new();
    file.take(limit as u64)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot be read: {e}"))?;
    let binary = || "is not a text file (binary or not UTF-8); skipped".to_owned();
    if buf.contains(&0) {
        return Err(binary());
    }
    match std::str::from_utf8(&buf) {
        Ok(s) => Ok(s.to_owned()),
        // A character split by the read limit is no sign of binary data.
        Err(e) if e.error_len().is_none() && buf.len() == limit => {
            Ok(String::from_utf8_lossy(&buf[..e.valid_up_to()]).into_owned())
        }
        Err(_) => Err(binary()),
    }
}

/// `path` with links and `..` resolved; as given when it cannot be (it then matches
/// nothing it should not: a resolved path never contains `..`).
pub(super) fn resolved(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}
