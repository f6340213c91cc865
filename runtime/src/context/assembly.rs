//! `context_assembly` (DESIGN §19): path globs, relative to the workspace, that order and
//! filter the files of a request's context. Files matching `primary_elements` come before
//! the ranked files of a workspace search, files matching `secondary_elements` after
//! them, and files matching `excluded_elements` never reach the context, whatever named
//! or found them.
//!
//! A glob only filters paths that were found otherwise (a `file_paths` entry or the
//! workspace walk); it never names a file itself, so no glob can reach outside the
//! workspace. The syntax is `.gitignore`'s, read with `globset`:
//! - `*` and `?` stay inside one path component, `**` spans any number of them;
//! - a glob without a `/` matches at any depth (`*.lock` is `**/*.lock`); one with a
//!   `/` is anchored at the workspace (a leading `/` or `./` only says so);
//! - a glob that matches a folder matches everything under it (`vendor`, `docs/`);
//! - a glob with a `..` component could only name a path outside the workspace: it
//!   matches nothing and says so in a warning, as does one that is not a valid glob.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use tv_vm::bundle::Assembly;

/// The compiled globs of one `context_assembly`.
pub(super) struct Globs {
    pub(super) primary: Kind,
    pub(super) secondary: Kind,
    pub(super) excluded: Kind,
}

impl Globs {
    /// Compiles the globs; the ones that cannot be used are warnings.
    pub(super) fn new(assembly: &Assembly, warnings: &mut Vec<String>) -> Globs {
        Globs {
            primary: Kind::new("primary_elements", &assembly.primary, warnings),
            secondary: Kind::new("secondary_elements", &assembly.secondary, warnings),
            excluded: Kind::new("excluded_elements", &assembly.excluded, warnings),
        }
    }

    /// Whether a workspace walk has to look for primary or secondary files.
    pub(super) fn orders(&self) -> bool {
        !self.primary.is_empty() || !self.secondary.is_empty()
    }
}

/// The globs of one attribute, as one set.
pub(super) struct Kind {
    name: &'static str,
    set: GlobSet,
    /// For each pattern of `set`, the index in `written` of the glob it was made from.
    owner: Vec<usize>,
    written: Vec<String>,
}

impl Kind {
    fn new(name: &'static str, globs: &[String], warnings: &mut Vec<String>) -> Kind {
        let mut builder = GlobSetBuilder::new();
        let (mut owner, mut written) = (Vec::new(), Vec::new());
        for glob in globs.iter().map(|g| g.trim()).filter(|g| !g.is_empty()) {
            let patterns = match patterns(glob) {
                Ok(p) => p,
                Err(why) => {
                    warnings.push(format!("context_assembly: {name} `{glob}` {why}; ignored"));
                    continue;
                }
            };
            for p in patterns {
                builder.add(p);
                owner.push(written.len());
            }
            written.push(glob.to_owned());
        }
        let set = builder.build().unwrap_or_else(|e| {
            // Each glob compiled on its own; a set of them fails only on size limits.
            warnings.push(format!("context_assembly: {name} cannot be used: {e}"));
            owner.clear();
            written.clear();
            GlobSet::empty()
        });
        Kind {
            name,
            set,
            owner,
            written,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.written.is_empty()
    }

    /// Whether any glob matches one of `paths` (forward slashes, relative).
    pub(super) fn matches(&self, paths: &[&str]) -> bool {
        self.first_match(paths).is_some()
    }

    /// The first glob, as written, that matches one of `paths`.
    pub(super) fn first_match(&self, paths: &[&str]) -> Option<&str> {
        if self.is_empty() {
            return None;
        }
        paths.iter().find_map(|p| {
            let hit = self.set.matches(p).into_iter().min()?;
            Some(self.written[self.owner[hit]].as_str())
        })
    }

    /// The attribute's name, for warnings.
    pub(super) fn name(&self) -> &'static str {
        self.name
    }
}

/// The patterns one written glob stands for: itself, anchored or at any depth, and
/// everything under what it matches.
fn patterns(glob: &str) -> Result<Vec<globset::Glob>, String> {
    let mut body = glob;
    let mut anchored = false;
    loop {
        if let Some(rest) = body.strip_prefix("./") {
            body = rest;
        } else if let Some(rest) = body.strip_prefix('/') {
            body = rest;
        } else {
            break;
        }
        anchored = true;
    }
    let body = body.trim_end_matches('/');
    if body.split('/').any(|c| c == "..") {
        return Err("leads outside the workspace, which no file found there can match".into());
    }
    let body = match body {
        "" | "." => "**".to_owned(),
        b if !anchored && !b.contains('/') => format!("**/{b}"),
        b => b.to_owned(),
    };
    let under = format!("{body}/**");
    [body.as_str(), under.as_str()]
        .into_iter()
        .map(|p| {
            GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("is not a valid glob: {}", e.kind()))
        })
        .collect()
}

/// A path as `file_paths` wrote it, in the form globs match: forward slashes, without
/// a leading `./`.
pub(super) fn written_form(path: &str) -> &str {
    let mut p = path;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.trim_start_matches('/');
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(globs: &[&str]) -> (Kind, Vec<String>) {
        let mut warnings = Vec::new();
        let globs: Vec<String> = globs.iter().map(|g| g.to_string()).collect();
        (
            Kind::new("excluded_elements", &globs, &mut warnings),
            warnings,
        )
    }

    fn matching(globs: &[&str], paths: &[&str]) -> Vec<bool> {
        let (k, warnings) = kind(globs);
        assert!(warnings.is_empty(), "{warnings:?}");
        paths.iter().map(|p| k.matches(&[p])).collect()
    }

    #[test]
    fn a_star_stays_in_its_folder_and_two_stars_cross_folders() {
        let paths = ["src/a.rs", "src/x/a.rs", "lib/src/a.rs"];
        assert_eq!(matching(&["src/*.rs"], &paths), [true, false, false]);
        assert_eq!(matching(&["src/**/*.rs"], &paths), [true, true, false]);
        assert_eq!(matching(&["**/src/*.rs"], &paths), [true, false, true]);
    }

    #[test]
    fn a_glob_without_a_slash_matches_at_any_depth_and_one_with_a_slash_is_anchored() {
        let paths = ["notes.md", "docs/notes.md", "/abs/notes.md"];
        assert_eq!(matching(&["*.md"], &paths), [true, true, true]);
        assert_eq!(matching(&["/notes.md"], &paths), [true, false, false]);
        assert_eq!(matching(&["./notes.md"], &paths), [true, false, false]);
        assert_eq!(matching(&["docs/*.md"], &paths), [false, true, false]);
    }

    #[test]
    fn a_glob_that_matches_a_folder_matches_everything_under_it() {
        let paths = ["docs/a.md", "docs/x/b.md", "src/docs/c.md", "docsite/d.md"];
        assert_eq!(matching(&["docs"], &paths), [true, true, true, false]);
        assert_eq!(matching(&["docs/"], &paths), [true, true, true, false]);
        assert_eq!(matching(&["/docs/"], &paths), [true, true, false, false]);
        assert_eq!(matching(&["doc*"], &paths), [true, true, true, true]);
    }

    #[test]
    fn the_first_matching_glob_is_named_and_unusable_globs_are_warnings() {
        let (k, warnings) = kind(&["", "../up/*", "src/[a", "*.key", "secrets"]);
        assert_eq!(
            warnings,
            [
                "context_assembly: excluded_elements `../up/*` leads outside the workspace, \
                 which no file found there can match; ignored",
                "context_assembly: excluded_elements `src/[a` is not a valid glob: \
                 unclosed character class; missing ']'; ignored",
            ]
        );
        assert_eq!(k.first_match(&["secrets/a.key"]), Some("*.key"));
        assert_eq!(k.first_match(&["x", "secrets/a.txt"]), Some("secrets"));
        assert_eq!(k.first_match(&["up/a"]), None);
    }

    #[test]
    fn a_written_path_loses_its_leading_dots() {
        assert_eq!(written_form("././/a/b"), "a/b");
        assert_eq!(written_form("../a"), "../a");
    }
}
