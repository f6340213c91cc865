//! `tvc check --watch`: checks the paths, then checks them again whenever a `*.xml`
//! file below them changes, until the process is interrupted (a module of the `tvc`
//! binary, not of the library).
//!
//! Ctrl-C ends it the way the signal ends any program (the shell reports 130): there is
//! nothing to save or clean up, so no handler is installed.

use crate::{plural, say, stderr_color, Color};
use notify::event::{AccessKind, AccessMode, MetadataKind, ModifyKind};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};
use tv_compiler::driver::{self, Compilation};

/// How long the files must stay quiet before they are checked again: one save is often
/// several events (truncate, write, rename), and a checkout or a formatter many.
const QUIET: Duration = Duration::from_millis(150);

/// The longest a stream of changes delays the next check, so that a file rewritten
/// without pause is still checked now and then.
const LONGEST_DELAY: Duration = Duration::from_secs(2);

type Events = Receiver<notify::Result<Event>>;

/// What is watched, by real path: directories (every `*.xml` below them) and files.
#[derive(Default)]
struct Watched {
    dirs: Vec<PathBuf>,
    files: Vec<PathBuf>,
}

impl Watched {
    /// Whether a change at `path` may change what a check says: a watched file, a
    /// template below a watched directory, or a directory made or moved there (its
    /// templates may be in place before the directory itself is watched, and then
    /// give no event of their own).
    fn covers(&self, path: &Path) -> bool {
        self.files.iter().any(|f| f == path)
            || (self.dirs.iter().any(|d| path.starts_with(d))
                && (path.extension().is_some_and(|e| e == "xml") || path.is_dir()))
    }
}

/// Checks `paths`, then again after each change, until interrupted. A path that cannot
/// be checked at the start is a usage error (exit 2), as for `tvc check`; later (a
/// directory emptied, a file removed) the error is printed and watching goes on.
pub(crate) fn run(paths: &[PathBuf], color: Color) -> ExitCode {
    let color = stderr_color(color);
    let (tx, events) = std::sync::mpsc::channel();
    let mut watcher = match notify::recommended_watcher(tx) {
        Ok(w) => w,
        Err(e) => {
            say(&format!("tvc: error: cannot watch files: {e}\n"));
            return ExitCode::from(2);
        }
    };
    // Watching starts before the first check, so that no change after it is missed.
    let watched = match watch(&mut watcher, paths) {
        Ok(w) => w,
        Err(e) => {
            say(&format!("tvc: error: {e}\n"));
            return ExitCode::from(2);
        }
    };
    let mut first = true;
    loop {
        match driver::check_paths(paths) {
            Ok(comp) => report(&comp, paths, color),
            Err(e) if first => {
                say(&format!("tvc: error: {e}\n"));
                return ExitCode::from(2);
            }
            Err(e) => say(&format!("tvc: error: {e}\n")),
        }
        first = false;
        say("tvc: watching for changes to *.xml files (Ctrl-C ends)\n");
        let Some(changed) = next_change(&events, &watched) else {
            say("tvc: error: the file watcher stopped\n");
            return ExitCode::from(2);
        };
        if std::io::stderr().is_terminal() {
            say("\x1b[2J\x1b[H");
        } else {
            // A log keeps every report: a line tells where the next one starts.
            say(&format!(
                "\n---- {changed} changed, checking again ----\n\n"
            ));
        }
    }
}

/// Starts watching every path that exists (one that does not is reported by the check).
/// A file is watched through its directory: an editor that saves by writing another
/// file and renaming it over the first replaces the file a watch would be tied to.
fn watch(watcher: &mut RecommendedWatcher, paths: &[PathBuf]) -> Result<Watched, String> {
    let mut watched = Watched::default();
    for path in paths.iter().filter(|p| p.exists()) {
        let fail = |e: &dyn std::fmt::Display| format!("cannot watch {}: {e}", path.display());
        if path.is_dir() {
            let real = std::fs::canonicalize(path).map_err(|e| fail(&e))?;
            watcher
                .watch(&real, RecursiveMode::Recursive)
                .map_err(|e| fail(&e))?;
            watched.dirs.push(real);
        } else {
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            let dir = std::fs::canonicalize(parent).map_err(|e| fail(&e))?;
            watcher
                .watch(&dir, RecursiveMode::NonRecursive)
                .map_err(|e| fail(&e))?;
            watched
                .files
                .push(dir.join(path.file_name().unwrap_or_default()));
        }
    }
    Ok(watched)
}

/// The diagnostics, as `tvc check` prints them, and a line that sums them up.
fn report(comp: &Compilation, paths: &[PathBuf], color: bool) {
    say(&comp.diags.render(&comp.sources, color));
    let files = comp.sources.files().filter(|(_, f)| !f.std).count();
    let (e, w) = (comp.diags.error_count(), comp.diags.warning_count());
    let verdict = match (e, w) {
        (0, 0) => "ok, 0 errors".to_string(),
        (0, w) => format!("ok, 0 errors and {}", plural(w, "warning")),
        (e, w) => format!("{} and {}", plural(e, "error"), plural(w, "warning")),
    };
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    say(&format!(
        "tvc: {verdict} in {} ({})\n",
        plural(files, "file"),
        names.join(", ")
    ));
}

/// Waits for a change of a watched file, then for the burst it starts to end; names the
/// files that changed. `None` when the watcher is gone.
fn next_change(events: &Events, watched: &Watched) -> Option<String> {
    let mut changed = Vec::new();
    while !note(events.recv().ok()?, watched, &mut changed) {}
    let start = Instant::now();
    loop {
        let left = LONGEST_DELAY.saturating_sub(start.elapsed());
        match events.recv_timeout(QUIET.min(left)) {
            Ok(event) => {
                note(event, watched, &mut changed);
            }
            Err(RecvTimeoutError::Timeout) => break,
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
    Some(describe(&changed))
}

/// Adds the watched files an event changed to `changed`; whether there were any. A
/// watcher's error (events lost when too many came at once) counts as a change, since
/// what changed is unknown.
fn note(event: notify::Result<Event>, watched: &Watched, changed: &mut Vec<PathBuf>) -> bool {
    let event = match event {
        Ok(e) => e,
        Err(e) => {
            say(&format!("tvc: warning: the file watcher says: {e}\n"));
            return true;
        }
    };
    if !is_change(&event.kind) {
        return false;
    }
    let mut touched = false;
    for path in event.paths.into_iter().filter(|p| watched.covers(p)) {
        touched = true;
        if !changed.contains(&path) {
            changed.push(path);
        }
    }
    touched
}

/// Whether an event may change what a check says: not a read (the check's own reads are
/// events too) and not an access time.
fn is_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)) => false,
        _ => true,
    }
}

/// `a.xml`, or `a.xml and 2 more files`: paths shown relative to the working directory.
fn describe(changed: &[PathBuf]) -> String {
    let here = std::env::current_dir().ok();
    let shown = |p: &PathBuf| {
        let short = here.as_ref().and_then(|h| p.strip_prefix(h).ok());
        short.unwrap_or(p).display().to_string()
    };
    match changed {
        [] => "something".to_string(),
        [one] => shown(one),
        [one, rest @ ..] => format!("{} and {}", shown(one), plural(rest.len(), "more file")),
    }
}
