//! Context look-ups for an LLM call (DESIGN §9, "files" and "memory"): the files a task
//! names through `file_paths`, and for fresh context the workspace files that best match
//! the request's text.
//!
//! Everything here is best effort: a path that cannot be used becomes a warning for the
//! notes, never an error, because a missing file should not cost a whole run. A local file
//! reaches a model only when the task names it or it lies under the workspace the user gave
//! (`tvm run --workspace DIR`); without a workspace nothing is searched.

use crate::bundle::{FilePaths, TaskMeta};
use crate::host::{LlmRequest, ScriptRequest};
use crate::script::ScriptRunner;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Caps that keep one request's context within what any model accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes kept of one file; fresh context considers files up to four times this size.
    pub max_file_bytes: usize,
    /// Bytes of context added to one request, all sources together.
    pub max_total_bytes: usize,
    /// Files added to one request, all sources together.
    pub max_files: usize,
    /// For a `file_paths` command.
    pub command_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 64 << 10,
            max_total_bytes: 256 << 10,
            max_files: 20,
            command_timeout: Duration::from_secs(10),
        }
    }
}

/// Looks up the files for LLM requests.
#[derive(Clone, Debug, Default)]
pub struct Assembler {
    /// The folder the user named; fresh context and descriptions search only here.
    pub workspace: Option<PathBuf>,
    pub limits: Limits,
}

/// The context found for one request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Assembled {
    /// To append to the request's context.
    pub text: String,
    /// The paths included, relative to the workspace when possible.
    pub files: Vec<String>,
    pub warnings: Vec<String>,
}

const NO_WORKSPACE: &str = "fresh context was requested but no workspace was given \
     (tvm run --workspace DIR); no files were searched";
/// Lines of one file shown by fresh context, and lines kept around each matching line.
const EXCERPT_LINES: usize = 40;
const EXCERPT_CONTEXT: usize = 3;
/// A query term in a file's path says more about the file than one in its text.
const PATH_BONUS: f64 = 2.0;
/// Files read by one search, so that a huge workspace costs bounded time.
const MAX_CANDIDATES: usize = 10_000;
/// Bytes kept of a `file_paths` command's output: plenty for a list of paths.
const COMMAND_OUTPUT: usize = 256 << 10;
/// Words too common to say what a request is about.
const STOP_WORDS: &[&str] = &[
    "about", "all", "also", "and", "any", "are", "been", "but", "can", "could", "did", "does",
    "each", "for", "from", "had", "has", "have", "her", "his", "how", "into", "its", "just", "may",
    "more", "most", "must", "not", "now", "only", "other", "our", "out", "please", "she", "should",
    "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "those", "use", "very", "was", "were", "what", "when", "where", "which", "while",
    "who", "why", "will", "with", "would", "you", "your",
];

impl Assembler {
    pub async fn assemble(&self, req: &LlmRequest) -> Assembled {
        let mut warnings = Vec::new();
        let (paths, description) = match &req.task.file_paths {
            FilePaths::None => (Vec::new(), None),
            FilePaths::Literal(p) => (p.clone(), None),
            FilePaths::Command(c) => (self.command_paths(req, c, &mut warnings).await, None),
            FilePaths::Description(d) => (Vec::new(), Some(d.as_str())),
        };
        let search = self.search_for(req, description, &mut warnings);
        if paths.is_empty() && (search.is_none() || self.workspace.is_none()) {
            // Most tasks read no file: no thread is started for them.
            return Assembled {
                warnings,
                ..Assembled::default()
            };
        }
        let this = self.clone();
        // Walking a workspace is blocking file I/O: keep it off the async threads.
        let mut out = tokio::task::spawn_blocking(move || this.collect(&paths, search))
            .await
            .unwrap_or_else(|e| Assembled {
                warnings: vec![format!("the context look-up failed: {e}")],
                ..Assembled::default()
            });
        warnings.append(&mut out.warnings);
        out.warnings = warnings;
        out
    }

    /// The text to search the workspace with, and the label of its warnings, if the task
    /// asks for a search and a workspace was given.
    fn search_for(
        &self,
        req: &LlmRequest,
        description: Option<&str>,
        warnings: &mut Vec<String>,
    ) -> Option<(String, &'static str)> {
        let fresh = req.task.context.fresh;
        if self.workspace.is_none() {
            if description.is_some() {
                warnings.push("file_paths description needs --workspace".into());
            }
            if fresh {
                warnings.push(NO_WORKSPACE.into());
            }
            return None;
        }
        if !fresh {
            return description.map(|d| (d.to_owned(), "file_paths description"));
        }
        let mut text = req.system_prompt.clone();
        for m in req.messages.iter() {
            text.push('\n');
            text.push_str(&m.content);
        }
        text.push('\n');
        text.push_str(description.unwrap_or_default());
        Some((text, "fresh context"))
    }

    /// Runs a `file_paths` command; each non-empty line of its output is a path.
    async fn command_paths(
        &self,
        req: &LlmRequest,
        command: &str,
        warnings: &mut Vec<String>,
    ) -> Vec<String> {
        let timeout = self.limits.command_timeout;
        let runner = ScriptRunner {
            max_output: COMMAND_OUTPUT,
            default_timeout: timeout,
            workdir: self.workspace.clone(),
        };
        // The context limit applies, not the task's own script timeout.
        let task = TaskMeta {
            timeout: None,
            ..(*req.task).clone()
        };
        let command = command.to_owned();
        let what = format!("file_paths: the command `{command}`");
        let script = ScriptRequest {
            task: task.into(),
            command,
            inputs: serde_json::Map::new(),
        };
        let warning = match runner.run(&script).await {
            Ok(r) if r.exit_code == 0 => {
                warnings.extend(r.notes.iter().map(|n| format!("{what}: {n}")));
                let lines = r.stdout.lines().map(str::trim).filter(|l| !l.is_empty());
                return lines.map(String::from).collect();
            }
            Ok(r) => {
                let why = r.stderr.lines().find(|l| !l.trim().is_empty());
                let why = why.map_or(String::new(), |w| format!(": {}", w.trim()));
                format!("{what} failed with exit code {}{why}", r.exit_code)
            }
            Err(e) if e.reason == "execution_timeout" => {
                format!("{what} did not finish within {timeout:?}; no files were taken from it")
            }
            Err(e) => format!("{what} could not run: {}", e.message),
        };
        warnings.push(warning);
        Vec::new()
    }

    fn collect(&self, paths: &[String], search: Option<(String, &str)>) -> Assembled {
        let mut b = Builder {
            limits: &self.limits,
            out: Assembled::default(),
            seen: HashSet::new(),
        };
        self.add_named(paths, &mut b);
        if let (Some(ws), Some((text, label))) = (&self.workspace, search) {
            self.add_found(ws, &text, label, &mut b);
        }
        b.out
    }

    fn add_named(&self, paths: &[String], b: &mut Builder) {
        let ws = self.workspace.as_deref();
        for (i, written) in paths.iter().map(|p| p.trim()).enumerate() {
            if written.is_empty() {
                continue;
            }
            // Relative to the workspace when there is one, else to the current directory.
            let path = ws.map_or_else(|| PathBuf::from(written), |ws| ws.join(written));
            let text = match read_text(&path, self.limits.max_file_bytes) {
                Ok(text) => text,
                Err(why) => {
                    b.warn(format!("file_paths: `{written}` {why}"));
                    continue;
                }
            };
            let display = ws.and_then(|ws| relative(ws, &path));
            let display = display.unwrap_or_else(|| written.to_owned());
            let section = section(&display, &text, self.limits.max_file_bytes);
            if let Some(reason) = b.add(&path, display, section) {
                return b.left_out("file_paths", paths.len() - i, &reason);
            }
        }
    }

    fn add_found(&self, ws: &Path, text: &str, label: &str, b: &mut Builder) {
        let Some(query) = Query::new(text) else {
            return b.warn(format!("{label}: the request has no words to search for"));
        };
        if !ws.is_dir() {
            let ws = ws.display();
            return b.warn(format!("{label}: the workspace `{ws}` is not a directory"));
        }
        let cap = self.limits.max_file_bytes.saturating_mul(4);
        let (mut hits, total, capped) = walk(ws, &query, cap);
        if capped {
            b.warn(format!(
                "{label}: only the first {MAX_CANDIDATES} files were searched"
            ));
        }
        let idf = rank(&mut hits, total, query.index.len());
        let top = &hits[..hits.len().min(self.limits.max_files)];
        let best = top.first().map_or(1.0, |h| h.score);
        for (i, hit) in top.iter().enumerate() {
            let Ok(text) = read_text(&hit.path, cap) else {
                continue;
            };
            let header = format!("{} (relevance {:.2})", hit.display, hit.score / best);
            let excerpt = excerpt(&text, &query, &idf);
            let section = section(&header, &excerpt, self.limits.max_file_bytes);
            if let Some(reason) = b.add(&hit.path, hit.display.clone(), section) {
                return b.left_out(label, top.len() - i, &reason);
            }
        }
    }
}

/// The context so far, within the limits.
struct Builder<'a> {
    limits: &'a Limits,
    out: Assembled,
    /// Canonical paths already included, so that no file appears twice.
    seen: HashSet<PathBuf>,
}

impl Builder<'_> {
    fn warn(&mut self, warning: String) {
        self.out.warnings.push(warning);
    }

    /// Adds a section unless its file is in already; says why not when a limit is reached.
    fn add(&mut self, path: &Path, display: String, section: String) -> Option<String> {
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
    fn left_out(&mut self, label: &str, left: usize, reason: &str) {
        let files = if left == 1 { "file" } else { "files" };
        self.warn(format!("{label}: {left} {files} left out: {reason}"));
    }
}

/// `--- header ---` and the text, cut at `max` bytes on a character boundary.
fn section(header: &str, text: &str, max: usize) -> String {
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

/// The text of a file, read only a little past `cap` bytes (longer means more than `cap`);
/// the error says why the file cannot be used.
fn read_text(path: &Path, cap: usize) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "does not exist".to_owned(),
        _ => format!("cannot be read: {e}"),
    })?;
    if !meta.is_file() {
        return Err("is not a regular file".into());
    }
    let limit = cap.saturating_add(4);
    let mut buf = Vec::new();
    File::open(path)
        .and_then(|f| f.take(limit as u64).read_to_end(&mut buf))
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

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// `path` relative to `ws`, as written or once both are canonical; None when outside it.
fn relative(ws: &Path, path: &Path) -> Option<String> {
    let (ws_c, path_c) = (canonical(ws), canonical(path));
    let rel = path
        .strip_prefix(ws)
        .or_else(|_| path_c.strip_prefix(&ws_c))
        .ok()?;
    rel.to_str().filter(|s| !s.is_empty()).map(str::to_owned)
}

/// Calls `f` with each lowercased word of 3+ characters that is not a stop word; words
/// split at non-alphanumerics and inside camelCase, so `loginToken` matches "login token".
fn for_each_token(text: &str, mut f: impl FnMut(&str)) {
    let mut word = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            emit(&mut word, &mut f);
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            emit(&mut word, &mut f);
        }
        prev_lower = c.is_lowercase() || c.is_numeric();
        word.extend(c.to_lowercase());
    }
    emit(&mut word, &mut f);
}

fn emit(word: &mut String, f: &mut impl FnMut(&str)) {
    if word.chars().count() >= 3 && !STOP_WORDS.contains(&word.as_str()) {
        f(word);
    }
    word.clear();
}

/// The distinct terms of a search, in sorted order so that sums are reproducible.
struct Query {
    /// Each term and its place in the per-term vectors.
    index: HashMap<String, usize>,
}

impl Query {
    fn new(text: &str) -> Option<Query> {
        let mut set = BTreeSet::new();
        for_each_token(text, |t| {
            set.insert(t.to_owned());
        });
        let index: HashMap<String, usize> = set.into_iter().zip(0..).collect();
        (!index.is_empty()).then_some(Query { index })
    }

    /// How often each term occurs in `text`.
    fn counts(&self, text: &str) -> Vec<u32> {
        let mut counts = vec![0; self.index.len()];
        for_each_token(text, |t| {
            if let Some(&i) = self.index.get(t) {
                counts[i] += 1;
            }
        });
        counts
    }
}

/// A workspace file that holds at least one query term, in its text or its path.
struct Hit {
    path: PathBuf,
    display: String,
    /// Per query term: w(tf) + PATH_BONUS if the term is in the path (see [`rank`]).
    weights: Vec<f64>,
    score: f64,
}

/// The matching text files under `ws`, how many text files were read, and whether the
/// walk stopped at MAX_CANDIDATES.
fn walk(ws: &Path, q: &Query, cap: usize) -> (Vec<Hit>, usize, bool) {
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
    let (mut hits, mut total) = (Vec::new(), 0);
    for entry in walk.flatten() {
        let regular = entry.file_type().is_some_and(|t| t.is_file());
        let small = entry.metadata().is_ok_and(|m| m.len() <= cap as u64);
        let display = entry.path().strip_prefix(ws).ok().and_then(Path::to_str);
        let (true, true, Some(display)) = (regular, small, display) else {
            continue;
        };
        let Some(text) = read_text(entry.path(), cap).ok().filter(|t| t.len() <= cap) else {
            continue;
        };
        if total == MAX_CANDIDATES {
            return (hits, total, true);
        }
        total += 1;
        let in_path = q.counts(display);
        let tf_weight = |n: u32| if n == 0 { 0.0 } else { 1.0 + f64::from(n).ln() };
        let weights: Vec<f64> = (q.counts(&text).into_iter().zip(in_path))
            .map(|(n, p)| tf_weight(n) + if p > 0 { PATH_BONUS } else { 0.0 })
            .collect();
        if weights.iter().any(|&w| w > 0.0) {
            let (path, display) = (entry.path().to_path_buf(), display.to_owned());
            hits.push(Hit {
                path,
                display,
                weights,
                score: 0.0,
            });
        }
    }
    (hits, total, false)
}

/// Scores and sorts the hits (best first, then by path) and returns the idf of each term.
/// With N the text files read and df(t) the hits that hold term t:
/// idf(t) = ln(1 + N / df(t)), score(f) = Σ_t idf(t) · (w(tf(t, f)) + PATH_BONUS · [t in
/// f's path]), where w(0) = 0 and w(n) = 1 + ln n, so that repetition alone does not win.
fn rank(hits: &mut [Hit], total: usize, terms: usize) -> Vec<f64> {
    let idf: Vec<f64> = (0..terms)
        .map(|i| {
            let df = hits.iter().filter(|h| h.weights[i] > 0.0).count();
            (1.0 + total as f64 / df.max(1) as f64).ln()
        })
        .collect();
    for h in hits.iter_mut() {
        h.score = h.weights.iter().zip(&idf).map(|(w, idf)| w * idf).sum();
    }
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.display.cmp(&b.display))
    });
    idf
}

/// The idf of the distinct terms in a line.
fn line_score(line: &str, q: &Query, idf: &[f64]) -> f64 {
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
fn excerpt(text: &str, q: &Query, idf: &[f64]) -> String {
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
fn render(lines: &[&str], keep: &[bool]) -> String {
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
