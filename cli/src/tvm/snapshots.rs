//! `tvm test --snapshots`: results and listings kept in files of insta's format under
//! `snapshots/` beside the sources. A new or changed one is written as `.snap.new`,
//! which `cargo insta review` shows and accepts in a Cargo project; how a changed one
//! differs is printed, and `--accept` writes the `.snap` itself.
//!
//! The format: a YAML header between `---` lines (`source`, `expression`), then the
//! text. As insta does, texts are compared with trailing whitespace and `\r\n`
//! normalized, and the header is not compared.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tv_compiler::ast::Item;
use tv_compiler::driver::Compilation;
use tv_runtime::files;
use tv_vm::bundle::Bundle;

pub(crate) struct Mode {
    on: bool,
    accept: bool,
    /// The snapshot files compared so far (lowercased, as a file system that ignores
    /// case sees them) and what each holds: two things never share one.
    taken: RefCell<HashMap<PathBuf, String>>,
}

impl Mode {
    pub(crate) fn new(on: bool, accept: bool) -> Mode {
        Mode {
            on,
            accept,
            taken: RefCell::default(),
        }
    }

    pub(crate) fn on(&self) -> bool {
        self.on
    }

    /// Compares `text` with `dir/snapshots/NAME.snap`: `None` when they match (or
    /// snapshots are off, or `--accept` wrote it), else what is wrong. An error is a
    /// file that could not be written.
    pub(crate) fn compare(
        &self,
        dir: &Path,
        name: &str,
        source: &str,
        expression: &str,
        text: &str,
    ) -> Result<Option<String>, String> {
        if !self.on {
            return Ok(None);
        }
        let folder = dir.join("snapshots");
        let snap = folder.join(format!("{name}.snap"));
        let key = PathBuf::from(snap.to_string_lossy().to_lowercase());
        if let Some(first) = self.taken.borrow().get(&key) {
            return Ok(Some(format!(
                "{expression} would be kept in {}, as {first} is: rename one of them",
                snap.display()
            )));
        }
        self.taken.borrow_mut().insert(key, expression.to_string());
        let pending = folder.join(format!("{name}.snap.new"));
        let kept = match read_beneath(&folder, &format!("{name}.snap")) {
            Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            Err(files::FileError::Missing) => None,
            Err(e) => return Err(format!("the snapshot {} {e}", snap.display())),
        };
        let old = kept.as_deref().and_then(body).map(normalize);
        let new = normalize(text);
        if old.as_ref() == Some(&new) {
            remove_stale(&pending)?;
            return Ok(None);
        }
        let file = format!("{}\n{new}\n", header(source, expression));
        write_new(&folder, &pending, &file)?;
        if self.accept {
            // Written beside it, then renamed over it: a run killed while writing never
            // leaves half a snapshot.
            std::fs::rename(&pending, &snap)
                .map_err(|e| format!("cannot write {}: {e}", snap.display()))?;
            return Ok(None);
        }
        let what = if kept.is_some() { "changed" } else { "new" };
        let mut problem = format!(
            "{expression} is {what}: {} written (review it with `cargo insta review` in a Cargo project, or run again with --accept)",
            pending.display()
        );
        if let Some(old) = &old {
            problem.push('\n');
            problem.push_str(&difference(old, &new));
        }
        Ok(Some(problem))
    }
}

/// The most lines of a changed snapshot's difference `tvm test` prints.
const DIFF_LINES: usize = 40;

/// How the kept text and the new one differ: the changed lines (`-` kept, `+` new) with
/// one line of context around each change, at most [`DIFF_LINES`] of them, so a
/// change can be judged without another tool.
fn difference(old: &str, new: &str) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut lines: Vec<String> = Vec::new();
    for (i, group) in diff.grouped_ops(1).iter().enumerate() {
        if i > 0 {
            lines.push("...".into());
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    similar::ChangeTag::Delete => '-',
                    similar::ChangeTag::Insert => '+',
                    similar::ChangeTag::Equal => ' ',
                };
                lines.push(format!("{sign} {}", change.value().trim_end_matches('\n')));
            }
        }
    }
    if lines.len() > DIFF_LINES {
        let more = lines.len() - DIFF_LINES;
        lines.truncate(DIFF_LINES);
        lines.push(format!("... and {more} more lines"));
    }
    lines.join("\n")
}

/// The snapshot `name` of `folder`, opened beneath it: a snapshot that is a link leading
/// out of the folder (to a file of the user's, planted with the sources) is not read.
fn read_beneath(folder: &Path, name: &str) -> Result<Vec<u8>, files::FileError> {
    let dir = match files::open_dir(folder) {
        Ok(dir) => dir,
        Err(e) => return Err(files::FileError::from(e)),
    };
    files::read_open(
        &files::open_beneath(&dir, Path::new(name))?,
        files::SNAPSHOT,
    )
}

/// Writes `text` as the new file `pending` in `folder`, made if missing. Sources and
/// their `snapshots/` folder may come from anyone: a `.snap.new` there may be a link to
/// a file of the user's (`~/.bashrc`), which writing through would overwrite. So the
/// folder must be a folder, not a link, and whatever has the pending name is removed
/// (a link, not what it points at) and the file made anew, never through a link.
fn write_new(folder: &Path, pending: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::symlink_metadata(folder) {
        Ok(m) if !m.is_dir() => {
            return Err(format!(
                "{} is not a folder (a link, or a file): tvm writes snapshots only into a \
                 folder of its own beside the sources",
                folder.display()
            ))
        }
        Ok(_) => {}
        Err(_) => std::fs::create_dir_all(folder)
            .map_err(|e| format!("cannot make {}: {e}", folder.display()))?,
    }
    remove_stale(pending)?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(pending)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", pending.display()))
}

fn remove_stale(pending: &Path) -> Result<(), String> {
    match std::fs::remove_file(pending) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove {}: {e}", pending.display()))
        }
        _ => Ok(()),
    }
}

/// The YAML header insta writes: values as double-quoted YAML strings (JSON's escapes
/// are YAML's), so any path or name reads back as it was.
fn header(source: &str, expression: &str) -> String {
    let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
    format!(
        "---\nsource: {}\nexpression: {}\n---",
        quoted(source),
        quoted(expression)
    )
}

/// The text of a snapshot file: what follows the header's closing `---`.
fn body(file: &str) -> Option<&str> {
    let rest = file.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    Some(&rest[end + 5..])
}

fn normalize(text: &str) -> String {
    text.trim_end().replace("\r\n", "\n")
}

/// A test's name as part of a file name: lowercase letters, digits and `_`.
pub(crate) fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_string()
}

/// Compares the listing of every template and task of the sources (`tvm disasm`'s
/// text, item by item) with its snapshot; one line for each that does not match.
pub(crate) fn listings(
    c: &Compilation,
    bundle: &Bundle,
    mode: &Mode,
) -> Result<Vec<String>, String> {
    let mut problems = Vec::new();
    for module in c.program.modules.iter().filter(|m| !m.std) {
        let path = &c.sources.get(module.file).path;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let stem = path
            .file_stem()
            .map_or("templates".into(), |s| s.to_string_lossy().into_owned());
        for item in &module.items {
            let name = &item.name().node;
            let listing = tv_vm::disasm::disassemble_item(bundle, name);
            if listing.is_empty() {
                continue;
            }
            // Positions name the file as it was given (`examples/x.xml`, `./x.xml`);
            // the snapshot beside it names it alone, so it matches from any directory.
            let listing = listing.replace(
                &format!("# {}:", path.display()),
                &format!(
                    "# {}:",
                    path.file_name().unwrap_or_default().to_string_lossy()
                ),
            );
            let kind = match item {
                Item::Template(_) => "template",
                Item::Task(_) => "task",
            };
            let what = format!("the bytecode of {kind} `{name}`");
            let file = format!("{stem}__bytecode_{}", slug(name));
            let source = path.display().to_string();
            problems.extend(mode.compare(dir, &file, &source, &what, &listing)?);
        }
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_file_is_a_header_then_the_text() {
        let file = format!("{}\n{}\n", header("a \"b\".xml", "x"), "line 1\nline 2");
        assert_eq!(
            file,
            "---\nsource: \"a \\\"b\\\".xml\"\nexpression: \"x\"\n---\nline 1\nline 2\n"
        );
        assert_eq!(body(&file), Some("line 1\nline 2\n"));
    }

    #[test]
    fn a_changed_snapshot_shows_its_changed_lines_with_a_line_around_them() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh";
        let new = "a\nB\nc\nd\ne\nf\ng\nH";
        assert_eq!(
            difference(old, new),
            "  a\n- b\n+ B\n  c\n...\n  g\n- h\n+ H"
        );
        let long: String = (0..100).map(|i| format!("{i}\n")).collect();
        let shown = difference("", &long);
        assert_eq!(shown.lines().count(), DIFF_LINES + 1);
        assert!(shown.ends_with("... and 60 more lines"), "{shown}");
    }

    #[test]
    fn names_become_file_names() {
        assert_eq!(slug("Approves a small diff!"), "approves_a_small_diff");
        assert_eq!(slug("a/../b"), "a_b");
    }
}
