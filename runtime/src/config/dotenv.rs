//! `.env` in the working directory: API keys and `TVM_*` settings, for users who keep
//! them beside their templates rather than in their shell (DESIGN §17), read into the
//! variables of the run, each with where it was found ([`Vars`]).
//!
//! Only the names `tvm` reads are taken (provider keys and base URLs, and the `TVM_*`
//! settings), and none is put in the environment, so that a `.env` shared with other
//! tools changes nothing the scripts a run starts see; another `TVM_*` name is most
//! likely a misspelt setting, and is named in a warning. A variable set in the
//! environment wins. A `.env` may come with a checkout, so it is trusted less than the
//! shell: a key of the shell is never sent to a server it names (see
//! `config::env`), and the settings that bound a run (`TVM_MAX_COST`,
//! `TVM_CONCURRENCY`) it may lower, never raise (`RunConfig::clamp`). Values
//! are never printed: an error names the line, not what is on it. Values are taken as
//! written: no `$VAR` is expanded, so a key holding a `$` stays whole.

use super::variables::{DotEnv, SETTINGS, VARIABLES};
use super::vars::{Source, Vars};
use crate::files::{self, FileError};
use std::path::Path;

/// Adds the variables of `path` to `found`, and gives the warnings to print.
pub(super) fn load(path: &Path, found: &mut Vars) -> Result<Vec<String>, String> {
    // A folder named `.env` is most often a Python virtual environment, not settings.
    if path.is_dir() {
        return Ok(vec![format!(
            "{} is a folder (a virtual environment?), not a file of settings, so it is not read",
            path.display()
        )]);
    }
    let text = match read(path) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(Vec::new()),
        Err(e) => return Err(format!("{} {e}", path.display())),
    };
    let mut warnings = Vec::new();
    for (line, name, value) in parse(&text).map_err(|e| format!("{}:{e}", path.display()))? {
        if taken(&name) {
            found.insert(&name, value, Source::DotEnv { line });
        } else if name.starts_with("TVM_") {
            warnings.push(format!(
                "{}:{line}: `{name}` is not a setting of tvm, so it is not taken (the settings: {})",
                path.display(),
                SETTINGS.join(", ")
            ));
        }
    }
    Ok(warnings)
}

fn read(path: &Path) -> Result<Option<String>, String> {
    let file = match files::open(path) {
        Ok(file) => file,
        Err(FileError::Missing) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    // What any user may write may hold anyone's settings, as ssh reasons for its files.
    let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions());
    if mode & 0o002 != 0 {
        return Err(format!(
            "may be written by every user (mode {:o}), so it is not read; make it yours \
             alone (chmod o-w)",
            mode & 0o7777
        ));
    }
    let bytes = files::read_open(&file, files::DOTENV).map_err(|e| e.to_string())?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| "is not UTF-8 text".to_string())
}

/// Whether `tvm` takes this variable from a `.env`.
fn taken(name: &str) -> bool {
    VARIABLES
        .iter()
        .any(|v| v.name == name && v.dotenv != DotEnv::Never)
}

/// `NAME=VALUE` lines, each with its line number: `export ` before the name, blank
/// lines and `#` comments are allowed; a value may be quoted (`'...'` as is, `"..."`
/// with `\n`, `\"` and `\\`), and an unquoted one ends at ` #`. An error is `LINE:
/// what is wrong`.
pub(super) fn parse(text: &str) -> Result<Vec<(usize, String, String)>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let bad = |what: &str| format!("{}: {what}", i + 1);
        let (name, raw) = line.split_once('=').ok_or_else(|| bad("not NAME=VALUE"))?;
        let name = name.trim();
        let word = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !word {
            return Err(bad("the name is not letters, digits and `_`"));
        }
        let value = unquote(raw.trim()).ok_or_else(|| bad("a quote is not closed"))?;
        out.push((i + 1, name.to_string(), value));
    }
    Ok(out)
}

fn unquote(raw: &str) -> Option<String> {
    if let Some(rest) = raw.strip_prefix('\'') {
        return rest.find('\'').map(|end| rest[..end].to_string());
    }
    if let Some(rest) = raw.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return Some(out),
                '\\' => match chars.next()? {
                    'n' => out.push('\n'),
                    other => out.push(other),
                },
                c => out.push(c),
            }
        }
        return None;
    }
    let end = raw.find(" #").unwrap_or(raw.len());
    Some(raw[..end].trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_with_quotes_comments_and_export() {
        let text = "# keys\nexport OPENAI_API_KEY=sk-1 # the test key\n\nTVM_MODEL='gpt-4o-mini'\nTVM_X=\"a \\\"b\\\"\\nc\"\n";
        let lines = parse(text).unwrap();
        let pairs: Vec<(usize, &str, &str)> = lines
            .iter()
            .map(|(l, n, v)| (*l, n.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                (2, "OPENAI_API_KEY", "sk-1"),
                (4, "TVM_MODEL", "gpt-4o-mini"),
                (5, "TVM_X", "a \"b\"\nc"),
            ]
        );
        assert_eq!(parse("K=pa$word\n").unwrap()[0].2, "pa$word");
    }

    #[test]
    fn a_bad_line_is_named_by_its_number_without_its_text() {
        let e = parse("TVM_A=1\nsk-secret-value\n").unwrap_err();
        assert_eq!(e, "2: not NAME=VALUE");
        assert_eq!(parse("X=\"open").unwrap_err(), "1: a quote is not closed");
    }

    #[test]
    fn only_provider_variables_and_tvm_settings_are_taken() {
        assert!(taken("OPENAI_API_KEY") && taken("TVM_PROVIDER") && taken("TVM_CACHE"));
        assert!(!taken("PATH") && !taken("LD_PRELOAD") && !taken("DATABASE_URL"));
        assert!(!taken("NATS_TOKEN") && !taken("NATS_PASSWORD"));
        assert!(!taken("TVM_INPUT_DIFF") && !taken("TVM_SCRIPT_RUN") && !taken("TVM_MODLE"));
    }
}
