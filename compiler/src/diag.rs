//! Diagnostics: what every stage reports, and how the driver prints it.
//!
//! Stages push [`Diagnostic`]s into a [`Diagnostics`] list and keep going; only the driver
//! decides whether errors stop the run. Printing puts `path:line:col: error: message` on
//! the first line, so editors and `grep` can jump to it, and an excerpt below.

use crate::source::{SourceMap, Span};
use ariadne::{CharSet, Config, IndexType, Label, Report, ReportKind};
use std::fmt;
use std::io::Write as _;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub severity: Severity,
    pub span: Span,
    pub message: String,
    /// What to put under the primary span; empty means "here".
    pub label: String,
    /// Further places that explain the problem (the earlier definition, ...).
    pub secondary: Vec<(Span, String)>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Self {
        Self::new(Severity::Error, span, message.into())
    }

    pub fn warning(span: Span, message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, span, message.into())
    }

    fn new(severity: Severity, span: Span, message: String) -> Self {
        Diagnostic {
            severity,
            span,
            message,
            label: String::new(),
            secondary: Vec::new(),
            help: None,
        }
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    pub fn with_secondary(mut self, span: Span, label: impl Into<String>) -> Self {
        self.secondary.push((span, label.into()));
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

/// Whether diagnostics are coloured when the user did not say: on a terminal, unless
/// `NO_COLOR` is set to anything but the empty string (<https://no-color.org>).
pub fn color_by_default(no_color: Option<&std::ffi::OsStr>, is_terminal: bool) -> bool {
    is_terminal && no_color.is_none_or(|v| v.is_empty())
}

/// The diagnostics of one run, in the order they were found.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }

    pub fn error(&mut self, span: Span, message: impl Into<String>) {
        self.push(Diagnostic::error(span, message));
    }

    pub fn warning(&mut self, span: Span, message: impl Into<String>) {
        self.push(Diagnostic::warning(span, message));
    }

    pub fn extend(&mut self, other: Diagnostics) {
        self.items.extend(other.items);
    }

    pub fn has_errors(&self) -> bool {
        self.items.iter().any(|d| d.severity == Severity::Error)
    }

    pub fn error_count(&self) -> usize {
        self.count(Severity::Error)
    }

    pub fn warning_count(&self) -> usize {
        self.count(Severity::Warning)
    }

    fn count(&self, s: Severity) -> usize {
        self.items.iter().filter(|d| d.severity == s).count()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }

    /// Source order, duplicates removed: the order a reader of the file expects.
    pub fn sorted(&self) -> Vec<&Diagnostic> {
        let mut v: Vec<&Diagnostic> = self.items.iter().collect();
        v.sort_by(|a, b| {
            (a.span.file, a.span.start, a.severity, &a.message).cmp(&(
                b.span.file,
                b.span.start,
                b.severity,
                &b.message,
            ))
        });
        v.dedup_by(|a, b| a.span == b.span && a.message == b.message);
        v
    }

    /// Every diagnostic rendered with its excerpt, in source order.
    pub fn render(&self, sources: &SourceMap, color: bool) -> String {
        let mut out = Vec::new();
        // Only the files the diagnostics point into are copied for ariadne: none at all
        // for a clean program, whose text may be tens of megabytes.
        let shown: rustc_hash::FxHashSet<_> = self
            .items
            .iter()
            .flat_map(|d| std::iter::once(d.span).chain(d.secondary.iter().map(|s| s.0)))
            .map(|s| s.file)
            .collect();
        let mut cache = ariadne::sources(
            sources
                .files()
                .filter(|(id, _)| shown.contains(id))
                .map(|(_, f)| (f.path.display().to_string(), f.text.clone())),
        );
        for d in self.sorted() {
            render_one(d, sources, color, &mut cache, &mut out);
        }
        let text = String::from_utf8_lossy(&out).into_owned();
        if color {
            text
        } else {
            strip_ansi(&text)
        }
    }

    /// One line per diagnostic, `path:line:col: severity: message`.
    pub fn render_short(&self, sources: &SourceMap) -> String {
        self.sorted()
            .iter()
            .map(|d| {
                format!(
                    "{}: {}: {}\n",
                    sources.location(d.span),
                    d.severity,
                    d.message
                )
            })
            .collect()
    }
}

/// Lines longer than this are not shown as excerpts.
const MAX_EXCERPT_LINE: usize = 400;

fn line_is_too_long(sources: &SourceMap, span: Span) -> bool {
    let text = &sources.get(span.file).text;
    let at = (span.start as usize).min(text.len());
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    end - start > MAX_EXCERPT_LINE
}

type AriadneSpan = (String, std::ops::Range<usize>);

fn render_one(
    d: &Diagnostic,
    sources: &SourceMap,
    color: bool,
    cache: &mut impl ariadne::Cache<String>,
    out: &mut Vec<u8>,
) {
    // ariadne counts in characters here: with byte offsets it would read the character
    // offsets it derives for another file's header as bytes.
    let clamp = |s: Span| -> AriadneSpan {
        let file = sources.get(s.file);
        let start = file.char_offset(s.start as usize);
        let end_byte = (s.end as usize).min(file.text.len());
        // An end inside a character takes the whole character.
        let past = usize::from(!file.text.is_char_boundary(end_byte));
        let end = (file.char_offset(end_byte) + past).max(start);
        (file.path.display().to_string(), start..end)
    };
    let head = format!("{}: {}", sources.location(d.span), d.severity);
    if line_is_too_long(sources, d.span) {
        // An excerpt of a minified or generated line would bury the message.
        let _ = writeln!(out, "{head}: {}", d.message);
        for (span, msg) in &d.secondary {
            let _ = writeln!(out, "  = note: {}: {msg}", sources.location(*span));
        }
        if let Some(help) = &d.help {
            let _ = writeln!(out, "  = help: {help}");
        }
        return;
    }
    let kind_color = match d.severity {
        Severity::Error => ariadne::Color::Red,
        Severity::Warning => ariadne::Color::Yellow,
    };
    let mut report = Report::build(ReportKind::Custom(&head, kind_color), clamp(d.span))
        .with_config(
            Config::default()
                .with_color(color)
                .with_index_type(IndexType::Char)
                .with_char_set(CharSet::Unicode),
        )
        .with_message(&d.message);
    // ariadne draws no underline for a label without a message.
    let text = if d.label.is_empty() {
        "here"
    } else {
        d.label.as_str()
    };
    for (order, (span, msg, is_primary)) in label_order(d).into_iter().enumerate() {
        let mut label = Label::new(clamp(span))
            .with_message(msg.unwrap_or(text))
            .with_order(i32::try_from(order).unwrap_or(i32::MAX));
        if is_primary && color {
            label = label.with_color(kind_color);
        }
        report.add_label(label);
    }
    if let Some(help) = &d.help {
        report.set_help(help);
    }
    // Writing into a Vec cannot fail; a failure here would only lose the excerpt.
    let _ = report.finish().write(&mut *cache, &mut *out);
}

/// The labels of a diagnostic (span, message or `None` for the primary's, whether
/// primary) in the order ariadne is to draw them: the primary's file first, and in each
/// file by position. ariadne starts a new excerpt, headed with the primary's location,
/// whenever a label comes before the previous one in its file; in this order each file
/// gets one excerpt, and each header names a place in that excerpt.
fn label_order(d: &Diagnostic) -> Vec<(Span, Option<&str>, bool)> {
    let mut labels = vec![(d.span, None, true)];
    labels.extend(
        d.secondary
            .iter()
            .map(|(s, m)| (*s, Some(m.as_str()), false)),
    );
    // ariadne groups by the line a label ends on.
    labels.sort_by_key(|(s, _, _)| (s.file != d.span.file, s.file, s.end, s.start));
    labels
}

/// ariadne colours a custom report kind even when colour is off; plain output must
/// carry no escape sequences.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('\x1b') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        match rest.find('m') {
            Some(end) if rest[1..].starts_with('[') => rest = &rest[end + 1..],
            _ => {
                out.push('\x1b');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}
