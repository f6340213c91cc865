//! Context look-ups for an LLM call (DESIGN §9, "files" and "memory"): the files a task
//! names through `file_paths`, and for fresh context the workspace files that best match
//! the request's text.
//!
//! Almost everything here is best effort: a path that cannot be used becomes a warning
//! for the notes, never an error, because a missing file should not cost a whole run. The
//! exceptions: a `file_paths` command that fails or times out (the task needs the files
//! it would list), and under `--require-files` any file a task names that cannot be read
//! ([`Assembler::require_files`]). Then the task fails ([`Assembled::failure`]) and the
//! model is not called.
//! A local file reaches a model only when the task names it or it lies under the workspace
//! the user gave (`tvm run --workspace DIR`); without a workspace nothing is searched.
//! `context_assembly` globs order the files a search finds and keep excluded ones out of
//! every source (see `assembly`).

mod assembly;
mod builder;
mod own;
mod scope;
mod search;
mod secrets;

use crate::script::ScriptRunner;
use assembly::{written_form, Globs};
use builder::{canonical, section, Builder};
use scope::{Scope, Source};
use search::{excerpt, rank, walk, Hit, Query, MAX_CANDIDATES};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tv_vm::bundle::{Assembly, FilePaths, TaskMeta};
use tv_vm::host::{LlmRequest, ScriptRequest};
use tv_vm::result::Reason;

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
    /// Folders outside the workspace (or the current directory) whose files a task may
    /// name literally (`tvm run --allow-read PATH`); see `scope`.
    pub allow_read: Vec<PathBuf>,
    /// The run's own files and folders (its journal, trace, cassettes, cache): never
    /// searched, even when they lie in the workspace (see `own`).
    pub own_files: Vec<PathBuf>,
    pub limits: Limits,
    /// `tvm run --require-files`: a file a task's own `file_paths` names (written out or
    /// listed by its command) that cannot be read fails the task instead of being left
    /// out with a warning. Paths a subtask request names are a model's guess, and stay
    /// warnings.
    pub require_files: bool,
    /// Set by `tvm test`: the workspace is where the files a task names are found, but
    /// nothing searches it (fresh context, a `file_paths` description), so that a test
    /// does not depend on the other files of its folder; the notes say so.
    pub no_search: bool,
}

/// The context found for one request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Assembled {
    /// To append to the request's context.
    pub text: String,
    /// The paths included, relative to the workspace when possible.
    pub files: Vec<String>,
    pub warnings: Vec<String>,
    /// Those of `warnings` that say a file the task named was not read: said on stderr
    /// as well, since the model is asked without it.
    pub unread: Vec<String>,
    /// Set when the context the task needs could not be retrieved (its `file_paths`
    /// command failed or timed out): the LLM call is not made, and the task fails with
    /// TASK_FAILURE `context_retrieval_failure` and this message.
    pub failure: Option<String>,
}

const NO_WORKSPACE: &str = "fresh context was requested but no workspace was given \
     (tvm run --workspace DIR); no files were searched";
const NO_WORKSPACE_COMMAND: &str = "file_paths: a command's paths are read only with \
     --workspace DIR; the command was not run";
const NO_SEARCH_IN_TESTS: &str = "a workspace search (fresh context or a file_paths \
     description) is not made in tvm test, so that a test does not depend on the other files \
     of its folder; no files were searched";
/// Added to the failure of a file `--require-files` makes required.
const REQUIRED: &str = "; the task needs every file it names (--require-files), so the \
     model was not called";
const NO_WORKSPACE_REQUESTED: &str = "file_paths: the paths a subtask request names are \
     read only with --workspace DIR; none was read";
/// Bytes kept of a `file_paths` command's output: plenty for a list of paths.
const COMMAND_OUTPUT: usize = 256 << 10;

impl Assembler {
    pub async fn assemble(&self, req: &LlmRequest) -> Assembled {
        let mut warnings = Vec::new();
        let (paths, source, description) = match &req.task.file_paths {
            _ if !req.requested_files.is_empty() => self.requested(req, &mut warnings),
            FilePaths::None => (Vec::new(), Source::Literal, None),
            FilePaths::Literal(p) => (p.clone(), Source::Literal, None),
            // Its paths could not be read: the command is not run at all.
            FilePaths::Command(_) if self.workspace.is_none() => {
                if self.require_files {
                    return Assembled {
                        failure: Some(format!("{NO_WORKSPACE_COMMAND}{REQUIRED}")),
                        ..Assembled::default()
                    };
                }
                warnings.push(NO_WORKSPACE_COMMAND.into());
                (Vec::new(), Source::Command, None)
            }
            FilePaths::Command(c) => match self.command_paths(req, c, &mut warnings).await {
                Ok(listed) => (listed, Source::Command, None),
                Err(failure) => {
                    return Assembled {
                        warnings,
                        failure: Some(failure),
                        ..Assembled::default()
                    }
                }
            },
            FilePaths::Description(d) => (Vec::new(), Source::Literal, Some(d.as_str())),
        };
        // What was said so far about named files that are not read.
        let mut unread: Vec<String> = (warnings.iter())
            .filter(|w| [NO_WORKSPACE_COMMAND, NO_WORKSPACE_REQUESTED].contains(&w.as_str()))
            .cloned()
            .collect();
        let search = self.search_for(req, description, &mut warnings);
        self.unused_assembly(&req.task.assembly, search.is_some(), &mut warnings);
        if paths.is_empty() && (search.is_none() || self.workspace.is_none()) {
            // Most tasks read no file: no thread is started for them.
            return Assembled {
                warnings,
                unread,
                ..Assembled::default()
            };
        }
        let this = self.clone();
        let task = req.task.clone();
        let required = self.require_files && req.requested_files.is_empty();
        // Walking a workspace is blocking file I/O: keep it off the async threads.
        let mut out = tokio::task::spawn_blocking(move || {
            this.collect(&paths, source, required, search, &task.assembly)
        })
        .await
        .unwrap_or_else(|e| Assembled {
            warnings: vec![format!("the context look-up failed: {e}")],
            ..Assembled::default()
        });
        warnings.append(&mut out.warnings);
        out.warnings = warnings;
        unread.append(&mut out.unread);
        out.unread = unread;
        out
    }

    /// The paths a subtask request named (DESIGN §19), which replace the task's
    /// `file_paths`. A model chose them, so they are read like a command's: only inside
    /// the workspace, never without one.
    fn requested<'r>(
        &self,
        req: &LlmRequest,
        warnings: &mut Vec<String>,
    ) -> (Vec<String>, Source, Option<&'r str>) {
        if self.workspace.is_none() {
            warnings.push(NO_WORKSPACE_REQUESTED.into());
            return (Vec::new(), Source::Command, None);
        }
        (req.requested_files.clone(), Source::Command, None)
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
        if self.no_search && (fresh || description.is_some()) {
            warnings.push(NO_SEARCH_IN_TESTS.into());
            return None;
        }
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
        let mut text = fresh_query(req);
        text.push('\n');
        text.push_str(description.unwrap_or_default());
        Some((text, "fresh context"))
    }

    /// Says when `primary_elements` or `secondary_elements` were given but cannot order
    /// anything: they choose among the files a workspace search finds.
    fn unused_assembly(&self, assembly: &Assembly, searched: bool, warnings: &mut Vec<String>) {
        if assembly.primary.is_empty() && assembly.secondary.is_empty() {
            return;
        }
        if self.workspace.is_none() {
            warnings.push(
                "context_assembly: primary_elements and secondary_elements choose workspace \
                 files, and no workspace was given (tvm run --workspace DIR); they were not used"
                    .into(),
            );
        } else if !searched {
            warnings.push(
                "context_assembly: primary_elements and secondary_elements order the files a \
                 workspace search finds (fresh_context or a file_paths description), and this \
                 task runs none; they were not used"
                    .into(),
            );
        }
    }

    /// Runs a `file_paths` command; each non-empty line of its output is a path. A
    /// command that fails, times out or cannot run is the error: the task needs its files.
    async fn command_paths(
        &self,
        req: &LlmRequest,
        command: &str,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<String>, String> {
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
        match runner.run(&script).await {
            Ok(r) if r.exit_code == 0 => {
                warnings.extend(r.notes.iter().map(|n| format!("{what}: {n}")));
                let lines = r.stdout.lines().map(str::trim).filter(|l| !l.is_empty());
                Ok(lines.map(String::from).collect())
            }
            Ok(r) => {
                let why = r.stderr.lines().find(|l| !l.trim().is_empty());
                let why = why.map_or(String::new(), |w| format!(": {}", w.trim()));
                Err(format!("{what} failed with exit code {}{why}", r.exit_code))
            }
            Err(e) if e.reason == Reason::ExecutionTimeout => Err(format!(
                "{what} did not finish within {timeout:?} and was stopped"
            )),
            Err(e) => Err(format!("{what} could not run: {}", e.message)),
        }
    }

    fn collect(
        &self,
        paths: &[String],
        source: Source,
        required: bool,
        search: Option<(String, &str)>,
        assembly: &Assembly,
    ) -> Assembled {
        let mut b = Builder {
            limits: &self.limits,
            out: Assembled::default(),
            seen: HashSet::new(),
        };
        let globs = Globs::new(assembly, &mut b.out.warnings);
        let scope = Scope::new(self.workspace.as_deref(), &self.allow_read);
        self.add_named(paths, (source, required), &scope, &globs, &mut b);
        if b.out.failure.is_some() {
            return b.out;
        }
        if let (Some(ws), Some((text, label))) = (&self.workspace, search) {
            self.add_found(ws, &scope, &text, label, &globs, &mut b);
        }
        b.out
    }

    /// The files a task names; `required`: one that cannot be read fails the task.
    fn add_named(
        &self,
        paths: &[String],
        (source, required): (Source, bool),
        scope: &Scope,
        globs: &Globs,
        b: &mut Builder,
    ) {
        let ws = self.workspace.as_deref();
        for (i, written) in paths.iter().map(|p| p.trim()).enumerate() {
            if written.is_empty() {
                continue;
            }
            // Relative to the workspace when there is one, else to the current directory.
            let resolved = scope.resolve(written, source);
            let excluded = resolved
                .as_ref()
                .ok()
                .and_then(|path| excluded_name(globs, scope, written, path));
            if let Some(glob) = excluded {
                // The author left it out on purpose: no missing file, even if required.
                let glob = format!("matches {} `{glob}`; skipped", globs.excluded.name());
                b.warn(format!("file_paths: `{written}` {glob}"));
                continue;
            }
            let text = resolved
                .and_then(|path| match secret(source, scope, written, &path) {
                    Some(rule) => Err(format!(
                        "matches the secret-file rule `{rule}`; skipped (only a literal \
                         <path> of the template reads such a file)"
                    )),
                    None => Ok(path),
                })
                .and_then(|path| Ok((scope.read(&path, self.limits.max_file_bytes)?, path)));
            let (text, path) = match text {
                Ok(read) => read,
                Err(why) if required => {
                    b.out.failure = Some(format!("file_paths: `{written}` {why}{REQUIRED}"));
                    return;
                }
                Err(why) => {
                    let warning = format!("file_paths: `{written}` {why}");
                    b.out.unread.push(warning.clone());
                    b.warn(warning);
                    continue;
                }
            };
            let display = ws.and_then(|ws| relative(ws, &path));
            let display = display.unwrap_or_else(|| written.to_owned());
            let section = section(&display, &text, self.limits.max_file_bytes);
            if let Some(reason) = b.add(&path, display, section) {
                let left = paths.len() - i;
                if required {
                    b.out.failure = Some(format!(
                        "file_paths: `{written}` and the files after it ({left} in all) do \
                         not fit: {reason}{REQUIRED}"
                    ));
                    return;
                }
                b.left_out("file_paths", left, &reason);
                let last = b.out.warnings.last().cloned().unwrap_or_default();
                return b.out.unread.push(last);
            }
        }
    }

    /// The files a workspace search finds, in order: those matching a primary glob (in
    /// path order), the ranked ones, then those matching a secondary glob that were not
    /// ranked in; all within the limits. Excluded files, secret files and tvm's own
    /// files never.
    fn add_found(
        &self,
        ws: &Path,
        scope: &Scope,
        text: &str,
        label: &str,
        globs: &Globs,
        b: &mut Builder,
    ) {
        let query = Query::new(text);
        if query.is_none() {
            b.warn(format!("{label}: the request has no words to search for"));
            if !globs.orders() {
                return;
            }
        }
        let (true, Some(ws_real)) = (ws.is_dir(), scope.workspace()) else {
            let ws = ws.display();
            return b.warn(format!("{label}: the workspace `{ws}` is not a directory"));
        };
        // Read beneath the workspace; what turns out to be tvm's own is not context.
        let read = |display: &str, cap: usize| {
            let text = scope.read(&ws_real.join(display), cap).ok()?;
            own::kind(&text).is_none().then_some(text)
        };
        let own = own::inside(ws_real, &self.own_files);
        let cap = self.limits.max_file_bytes.saturating_mul(4);
        let mut walked = walk(ws, query.as_ref(), cap, globs, &own, &read);
        if walked.capped {
            b.warn(format!(
                "{label}: only the first {MAX_CANDIDATES} files were searched"
            ));
        }
        if !walked.secrets.is_empty() {
            b.warn(secrets::passed_over(label, &walked.secrets));
        }
        let idf = match &query {
            Some(q) => rank(&mut walked.hits, walked.total, q.index.len()),
            None => Vec::new(),
        };
        // The ranked rest: primary files have their place already.
        let top: Vec<&Hit> = (walked.hits.iter())
            .filter(|h| !globs.primary.matches(&[&h.display]))
            .take(self.limits.max_files)
            .collect();
        let ranked_in: HashSet<&str> = top.iter().map(|h| h.display.as_str()).collect();
        let mut picks: Vec<Pick> = walked.primary.iter().map(Pick::Primary).collect();
        picks.extend(top.iter().map(|h| Pick::Ranked(h)));
        picks.extend(
            (walked.secondary.iter())
                .filter(|f| !ranked_in.contains(f.display.as_str()))
                .map(Pick::Secondary),
        );
        let best = top.first().map_or(1.0, |h| h.score);
        for (i, pick) in picks.iter().enumerate() {
            let (path, display) = pick.file();
            let section = match (pick, &query) {
                (Pick::Ranked(hit), Some(q)) => {
                    let Some(text) = read(display, cap) else {
                        continue;
                    };
                    let header = format!("{display} (relevance {:.2})", hit.score / best);
                    section(
                        &header,
                        &excerpt(&text, q, &idf),
                        self.limits.max_file_bytes,
                    )
                }
                _ => {
                    let Some(text) = read(display, self.limits.max_file_bytes) else {
                        continue;
                    };
                    let header = format!("{display} ({})", pick.kind());
                    section(&header, &text, self.limits.max_file_bytes)
                }
            };
            if let Some(reason) = b.add(path, display.to_owned(), section) {
                return b.left_out(label, picks.len() - i, &reason);
            }
        }
    }
}

/// The secret-file rule a named file falls under, as written or as found (links
/// followed). A literal path of the template that itself names a secret file is read:
/// its author chose it; one that only leads to one through a link is not.
fn secret(source: Source, scope: &Scope, written: &str, real: &Path) -> Option<&'static str> {
    let as_written = written_form(written).trim_start_matches('/');
    let found = scope.name_in_root(real);
    let found = found.as_deref().unwrap_or_default();
    if source == Source::Literal && secrets::rule(as_written).is_some() {
        return None;
    }
    secrets::rule_of(&[as_written, found])
}

/// A file a workspace search adds, and why.
enum Pick<'a> {
    Primary(&'a search::Found),
    Ranked(&'a Hit),
    Secondary(&'a search::Found),
}

impl Pick<'_> {
    /// Its path as walked, and relative to the workspace.
    fn file(&self) -> (&Path, &str) {
        match self {
            Pick::Primary(f) | Pick::Secondary(f) => (&f.path, &f.display),
            Pick::Ranked(h) => (&h.path, &h.display),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Pick::Primary(_) => "primary",
            Pick::Ranked(_) => "ranked",
            Pick::Secondary(_) => "secondary",
        }
    }
}

/// The excluded glob a named file matches, as written or as found (relative to the
/// workspace, else to the current directory), so that neither `./`, `..` nor a link
/// inside the workspace gets around it.
fn excluded_name<'g>(
    globs: &'g Globs,
    scope: &Scope,
    written: &str,
    real: &Path,
) -> Option<&'g str> {
    if globs.excluded.is_empty() {
        return None;
    }
    let found = scope.relative_name(real);
    let mut names = vec![written_form(written)];
    names.extend(found.as_deref());
    globs.excluded.first_match(&names)
}

/// What fresh context searches the workspace with: the text of the inputs the task's
/// `context_relevance` chose, when the compiler made a query of them; else the request's
/// own text (system prompt and messages).
fn fresh_query(req: &LlmRequest) -> String {
    if let Some(query) = &req.query {
        return query.clone();
    }
    let mut text = req.system_prompt.clone();
    for m in req.messages.iter() {
        text.push('\n');
        text.push_str(&m.content);
    }
    text
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
