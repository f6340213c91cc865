//! The context of one request as it is built: each file's section once, within the
//! limits on files and bytes, with a warning for what was left out.

use super::{Assembled, Limits};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The context so far, within the limits.
pub(super) struct Builder<'a> {
    pub(super) limits: &'a Limits,
    pub(super) out: Assembled,
    /// Canonical paths already included, so that no file appears twice.
    pub(super) seen: HashSet<PathBuf>,
}

impl Builder<'_> {
    pub(super) fn warn(&mut self, warning: String) {
        self.out.warnings.push(warning);
    }

    /// Adds a section unless its file is in already; says why not when a limit is reached.
    pub(super) fn add(&mut self, path: &Path, display: String, section: String) -> Option<String> {
        let (l, key) = (self.limits, canonical(path));
        if self.out.files.len() >= l.max_files && !self.seen.contains(&key) {
            return Some(format!("the limit of {} files was reached", l.max_files));
        }
        if self.out.text.len() + section.len() > l.max_total_bytes && !self.seen.contains(&key) {
            return Some(format!(
                "the limit of {} bytes was reached",
                l.max_total_bytes
            ));
        }
        if self.seen.insert(key) {
            self.out.files.push(display);
            self.out.text.push_str(&section);
        }
        None
    }

    /// Stops adding: this file and the rest, `left` in all, do not fit.
    pub(super) fn left_out(&mut self, label: &str, left: usize, reason: &str) {
        let files = if left == 1 { "file" } else { "files" };
        self.warn(format!("{label}: {left} {files} left out: {reason}"));
    }
}

/// `--- header ---` and the text, cut at `max` bytes on a character boundary.
pub(super) fn section(header: &str, text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let kept = &text[..end];
    let mut s = format!("--- {header} ---\n{kept}");
    if !kept.ends_with('\n') {
        s.push('\n');
    }
    if end < text.len() {
        s.push_str(&format!("[... cut at {end} bytes]\n"));
    }
    s
}

pub(super) fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}
