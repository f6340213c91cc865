//! Fresh context's search of the workspace: the request's words as a query, every text
//! file under the workspace scored by TF-IDF (a term in a file's path counts extra), and
//! an excerpt of the best files around their matching lines.

use super::assembly::Globs;
use super::{own, secrets};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tv_stdlib::text::{words, Words};

/// Lines of one file shown by fresh context, and lines kept around each matching line.
const EXCERPT_LINES: usize = 40;
const EXCERPT_CONTEXT: usize = 3;
/// A query term in a file's path says more about the file than one in its text.
const PATH_BONUS: f64 = 2.0;
/// Files read by one search, so that a huge workspace costs bounded time.
pub(super) const MAX_CANDIDATES: usize = 10_000;
/// Terms of one query at most. A prompt of any size searches with its most frequent
/// words, so that the work per file and the weights kept per matching file stay bounded
/// (a 540 KB prompt had 40,000 distinct words; kept for each of 6,000 files, 2.8 GB).
pub(super) const MAX_QUERY_TERMS: usize = 256;
/// Words too common to say what a request is about.
const STOP_WORDS: &[&str] = &[
    "about", "all", "also", "and", "any", "are", "been", "but", "can", "could", "did", "does",
    "each", "for", "from", "had", "has", "have", "her", "his", "how", "into", "its", "just", "may",
    "more", "most", "must", "not", "now", "only", "other", "our", "out", "please", "she", "should",
    "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "those", "use", "very", "was", "were", "what", "when", "where", "which", "while",
    "who", "why", "will", "with", "would", "you", "your",
];

/// The lowercased words of 3+ characters that are not stop words; words split at
/// non-alphanumerics and inside camelCase, so `loginToken` matches "login token".
fn tokens(text: &str) -> impl Iterator<Item = Cow<'_, str>> {
    let how = Words {
        min_chars: 3,
        split_camel: true,
        stop_words: STOP_WORDS,
    };
    words(text, how)
}

/// The terms of a search: the request's MAX_QUERY_TERMS most frequent words (ties: the
/// earlier first), each with its place in the per-term vectors, in sorted order so that
/// sums are reproducible.
pub(super) struct Query {
    pub(super) index: HashMap<String, usize>,
}

impl Query {
    pub(super) fn new(text: &str) -> Option<Query> {
        // Per distinct word: how often, and where it first appeared.
        let mut seen: HashMap<String, (u32, usize)> = HashMap::new();
        for (at, t) in tokens(text).enumerate() {
            match seen.get_mut(t.as_ref()) {
                Some((n, _)) => *n += 1,
                None => {
                    seen.insert(t.into_owned(), (1, at));
                }
            }
        }
        let mut ranked: Vec<(String, (u32, usize))> = seen.into_iter().collect();
        ranked.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
        ranked.truncate(MAX_QUERY_TERMS);
        let mut terms: Vec<String> = ranked.into_iter().map(|(t, _)| t).collect();
        terms.sort();
        let index: HashMap<String, usize> = terms.into_iter().zip(0..).collect();
        (!index.is_empty()).then_some(Query { index })
    }

    /// How often each term occurs in `text`.
    fn counts(&self, text: &str) -> Vec<u32> {
        let mut counts = vec![0; self.index.len()];
        for t in tokens(text) {
            if let Some(&i) = self.index.get(t.as_ref()) {
                counts[i] += 1;
            }
        }
        counts
    }
}

/// A workspace file that holds at least one query term, in its text or its path.
pub(super) struct Hit {
    pub(super) path: PathBuf,
    pub(super) display: String,
    /// The query terms the file holds, each with w(tf) + PATH_BONUS if the term is in
    /// the path (see [`rank`]); sparse, since most files hold few of the terms.
    weights: Vec<(u16, f64)>,
    pub(super) score: f64,
}

/// A workspace file that a `context_assembly` glob puts first or last.
pub(super) struct Found {
    pub(super) path: PathBuf,
    pub(super) display: String,
}

/// What one walk of the workspace found.
pub(super) struct Walked {
    /// The text files that hold a query term (none without a query).
    pub(super) hits: Vec<Hit>,
    /// How many text files were read, and whether the walk stopped at MAX_CANDIDATES.
    pub(super) total: usize,
    pub(super) capped: bool,
    /// The files matching a primary glob, and those matching a secondary one (and no
    /// primary one), in path order, whatever their text.
    pub(super) primary: Vec<Found>,
    pub(super) secondary: Vec<Found>,
    /// The files passed over as secrets, with the rule each matched.
    pub(super) secrets: Vec<(String, &'static str)>,
}

/// Reads a workspace file (its path relative to the workspace) within a cap: its text,
/// or None when it cannot or may not be used.
pub(super) type Read<'a> = &'a dyn Fn(&str, usize) -> Option<String>;

/// Walks the workspace: with a query, the matching text files; with `context_assembly`
/// globs, the primary and secondary files. Excluded files, secret files and the run's
/// `own` files (relative to the workspace) are passed over unread.
pub(super) fn walk(
    ws: &Path,
    q: Option<&Query>,
    cap: usize,
    globs: &Globs,
    own: &[String],
    read: Read,
) -> Walked {
    // By default hidden files are skipped and .gitignore, .ignore and
    // .git/info/exclude are honoured.
    let walk = ignore::WalkBuilder::new(ws)
        // The user's global excludes differ between machines; results must not.
        .git_global(false)
        // A plain folder's .gitignore counts too, not only a repository's.
        .require_git(false)
        // A symlink could lead out of the workspace; only regular files are read.
        .follow_links(false)
        .sort_by_file_path(|a, b| a.cmp(b))
        .build();
    let mut out = Walked {
        hits: Vec::new(),
        total: 0,
        capped: false,
        primary: Vec::new(),
        secondary: Vec::new(),
        secrets: Vec::new(),
    };
    for entry in walk.flatten() {
        let regular = entry.file_type().is_some_and(|t| t.is_file());
        let display = entry.path().strip_prefix(ws).ok().and_then(Path::to_str);
        let (true, Some(display)) = (regular, display) else {
            continue;
        };
        if globs.excluded.matches(&[display]) || own::listed(own, display) {
            continue;
        }
        if let Some(rule) = secrets::rule(display) {
            out.secrets.push((display.to_owned(), rule));
            continue;
        }
        let ordered = if globs.primary.matches(&[display]) {
            Some(&mut out.primary)
        } else if globs.secondary.matches(&[display]) {
            Some(&mut out.secondary)
        } else {
            None
        };
        if let Some(list) = ordered.filter(|l| l.len() < MAX_CANDIDATES) {
            list.push(Found {
                path: entry.path().to_path_buf(),
                display: display.to_owned(),
            });
        }
        let Some(q) = q else {
            continue;
        };
        if !entry.metadata().is_ok_and(|m| m.len() <= cap as u64) {
            continue;
        }
        let Some(text) = read(display, cap).filter(|t| t.len() <= cap) else {
            continue;
        };
        if out.total == MAX_CANDIDATES {
            out.capped = true;
            return out;
        }
        out.total += 1;
        let in_path = q.counts(display);
        let tf_weight = |n: u32| if n == 0 { 0.0 } else { 1.0 + f64::from(n).ln() };
        let weights: Vec<(u16, f64)> = (q.counts(&text).into_iter().zip(in_path))
            .map(|(n, p)| tf_weight(n) + if p > 0 { PATH_BONUS } else { 0.0 })
            .zip(0u16..)
            .filter(|&(w, _)| w > 0.0)
            .map(|(w, i)| (i, w))
            .collect();
        if !weights.is_empty() {
            let (path, display) = (entry.path().to_path_buf(), display.to_owned());
            out.hits.push(Hit {
                path,
                display,
                weights,
                score: 0.0,
            });
        }
    }
    out
}

/// Scores and sorts the hits (best first, then by path) and returns the idf of each term.
/// With N the text files read and df(t) the hits that hold term t:
/// idf(t) = ln(1 + N / df(t)), score(f) = Σ_t idf(t) · (w(tf(t, f)) + PATH_BONUS · [t in
/// f's path]), where w(0) = 0 and w(n) = 1 + ln n, so that repetition alone does not win.
pub(super) fn rank(hits: &mut [Hit], total: usize, terms: usize) -> Vec<f64> {
    let mut df = vec![0usize; terms];
    for h in hits.iter() {
        for &(i, _) in &h.weights {
            df[usize::from(i)] += 1;
        }
    }
    let idf: Vec<f64> = (df.iter())
        .map(|&df| (1.0 + total as f64 / df.max(1) as f64).ln())
        .collect();
    for h in hits.iter_mut() {
        let weighted = h.weights.iter().map(|&(i, w)| w * idf[usize::from(i)]);
        h.score = weighted.sum();
    }
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.display.cmp(&b.display))
    });
    idf
}

/// The idf of the distinct terms in a line.
pub(super) fn line_score(line: &str, q: &Query, idf: &[f64]) -> f64 {
    let counts = q.counts(line);
    counts
        .iter()
        .zip(idf)
        .filter(|(&n, _)| n > 0)
        .map(|(_, w)| w)
        .sum()
}

/// A short file whole; a long one as the lines around its best-matching lines (each line
/// scored by the idf of the distinct terms it holds), at most EXCERPT_LINES in all.
pub(super) fn excerpt(text: &str, q: &Query, idf: &[f64]) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= EXCERPT_LINES {
        return text.to_owned();
    }
    let mut scored: Vec<(f64, usize)> = (lines.iter().enumerate())
        .map(|(i, l)| (line_score(l, q, idf), i))
        .filter(|&(s, _)| s > 0.0)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut keep = vec![false; lines.len()];
    let mut kept = 0;
    for &(_, i) in &scored {
        let hi = (i + EXCERPT_CONTEXT).min(lines.len() - 1);
        for k in &mut keep[i.saturating_sub(EXCERPT_CONTEXT)..=hi] {
            if kept < EXCERPT_LINES && !*k {
                *k = true;
                kept += 1;
            }
        }
        if kept == EXCERPT_LINES {
            break;
        }
    }
    if kept == 0 {
        // Matched by its path only: its beginning says most about it.
        keep[..EXCERPT_LINES].fill(true);
    }
    render(&lines, &keep)
}

/// The kept lines, each run under a `[lines a-b]` header (1-based, inclusive).
pub(super) fn render(lines: &[&str], keep: &[bool]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < lines.len() {
        if !keep[i] {
            i += 1;
            continue;
        }
        let start = i;
        while i < lines.len() && keep[i] {
            i += 1;
        }
        out.push_str(&format!("[lines {}-{}]\n", start + 1, i));
        for line in &lines[start..i] {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
