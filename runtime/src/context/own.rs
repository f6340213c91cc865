//! Files `tvm` itself writes or reads about runs, which a workspace search never adds
//! to a model's context: they hold earlier prompts and replies (journals, traces,
//! cassettes, cache entries), or the replies and results a test expects (`<test>`
//! elements, snapshots), and a model that is shown them answers from them. They are
//! recognised by what they begin with, and the current run's own files (`--journal`,
//! `--trace`, `--record`, `--cassette`, `--cache`) also by their paths, since a file
//! just created may hold nothing yet.

use std::path::{Path, PathBuf};

/// What kind of tvm file `text` is, if it is one.
pub(super) fn kind(text: &str) -> Option<&'static str> {
    let start = text.trim_start_matches('\u{feff}').trim_start();
    let signatures = [
        ("{\"journal\":", "a journal"),
        ("{\"tvmReplyCache\":", "a reply cache entry"),
        ("{\"key\":\"", "a cassette"),
        ("{\"kind\":\"llm\",", "a trace"),
        ("{\"kind\":\"script\",", "a trace"),
        ("---\nsource:", "a snapshot"),
    ];
    if let Some((_, kind)) = signatures.iter().find(|(s, _)| start.starts_with(s)) {
        return Some(kind);
    }
    tests(text).then_some("a template file with tests")
}

/// Whether `text` is a template file holding `<test>` elements.
fn tests(text: &str) -> bool {
    let template = text.contains("<task") || text.contains("<template");
    template
        && text.match_indices("<test").any(|(at, m)| {
            let next = text[at + m.len()..].chars().next();
            next.is_some_and(|c| c == '>' || c == '/' || c.is_whitespace())
        })
}

/// The current run's own files and folders, as paths relative to the workspace `ws`
/// (resolved): those inside it.
pub(super) fn inside(ws: &Path, own: &[PathBuf]) -> Vec<String> {
    own.iter()
        .filter_map(|p| {
            let real = resolved(p)?;
            let rel = real.strip_prefix(ws).ok()?.to_str()?;
            (!rel.is_empty()).then(|| rel.to_owned())
        })
        .collect()
}

/// Whether the workspace path `display` is one of `own` or lies under one.
pub(super) fn listed(own: &[String], display: &str) -> bool {
    own.iter().any(|o| {
        display == o
            || display
                .strip_prefix(o.as_str())
                .is_some_and(|r| r.starts_with('/'))
    })
}

/// `path` resolved; for a file not made yet, its folder resolved and its name.
fn resolved(path: &Path) -> Option<PathBuf> {
    if let Ok(real) = path.canonicalize() {
        return Some(real);
    }
    let name = path.file_name()?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Some(parent.canonicalize().ok()?.join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tvm_files_are_known_by_their_beginnings() {
        let cases = [
            ("{\"journal\":3,\"bundle\":\"x\"}\n", Some("a journal")),
            ("{\"tvmReplyCache\":1,\"key\":\"ab\"", Some("a reply cache entry")),
            ("{\"key\":\"0a1b\",\"task\":\"t\",\"reply\":{}}\n", Some("a cassette")),
            ("{\"kind\":\"llm\",\"task\":\"t\"}\n", Some("a trace")),
            ("---\nsource: \"a.xml\"\n---\n{}", Some("a snapshot")),
            (
                "<templates><template name=\"t\"/>\n<test name=\"x\" entry=\"t\">\n</test></templates>",
                Some("a template file with tests"),
            ),
            ("<task><description>tests</description></task>", None),
            ("<testing/> is not a test <task>", None),
            ("fn main() {}\n", None),
            ("{\"name\": \"package\"}", None),
        ];
        for (text, want) in cases {
            assert_eq!(kind(text), want, "{text}");
        }
    }

    #[test]
    fn a_run_file_covers_itself_and_what_lies_under_it() {
        let own = vec!["cache".to_string(), "run.jsonl".to_string()];
        assert!(listed(&own, "cache/v1/ab/x.json"));
        assert!(listed(&own, "run.jsonl"));
        assert!(!listed(&own, "cache2/a"));
        assert!(!listed(&own, "run.jsonl.bak"));
    }
}
