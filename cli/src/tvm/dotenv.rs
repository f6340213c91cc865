//! `.env` in the working directory: API keys and `TVM_*` settings, for users who keep
//! them beside their templates rather than in their shell (DESIGN §17), and the
//! variables of the run, each with where it was found ([`Vars`]).
//!
//! Only the names `tvm` reads are taken (provider keys and base URLs, and the `TVM_*`
//! settings), and none is put in the environment, so that a `.env` shared with other
//! tools changes nothing the scripts a run starts see; another `TVM_*` name is most
//! likely a misspelt setting, and is named in a warning. A variable set in the
//! environment wins. A `.env` may come with a checkout, so it is trusted less than the
//! shell: a key of the shell is never sent to a server it names (see
//! `providers::vars`), and the settings that bound a run (`TVM_MAX_COST`,
//! `TVM_CONCURRENCY`) it may lower, never raise (`HostArgs::settle_bounds`). Values
//! are never printed: an error names the line, not what is on it. Values are taken as
//! written: no `$VAR` is expanded, so a key holding a `$` stays whole.

use std::path::Path;
use std::sync::OnceLock;
use tv_runtime::files::{self, FileError};
use tv_runtime::providers::vars::{self, Source, Vars};

/// The `TVM_*` settings `tvm` reads from its environment (and a `.env`), each in the
/// README's table of settings.
pub const SETTINGS: &[&str] = &[
    "TVM_CACHE",
    "TVM_CONCURRENCY",
    "TVM_JSON_MODE",
    "TVM_MAX_COST",
    "TVM_MODEL",
    "TVM_PROVIDER",
];

/// `TVM_*` names `tvm` gives the scripts it runs (inputs, the marker of a script's
/// processes): a `tvm` started by a script finds them, and they are not settings.
const GIVEN_TO_SCRIPTS: &[&str] = &["TVM_INPUT_", "TVM_SCRIPT_RUN"];

static VARS: OnceLock<Vars> = OnceLock::new();

/// The run's variables, as [`start`] found them (none before).
pub fn vars() -> &'static Vars {
    VARS.get_or_init(Vars::default)
}

/// Reads the variables of the run: the environment's, the keys handed over at start
/// (which were the environment's), then the `.env` at `path`. Gives the warnings to
/// print; a missing file is no error.
pub fn start(path: &Path, keys: Vec<(String, String)>) -> Result<Vec<String>, String> {
    let names: Vec<&str> = vars::PROVIDER_VARS
        .iter()
        .chain(SETTINGS)
        .copied()
        .collect();
    let mut found = Vars::from_env(&names);
    for (name, value) in keys {
        found.insert(&name, value, Source::Environment);
    }
    let mut warnings = load(path, &mut found)?;
    warnings.extend(unread_environment());
    let _ = VARS.set(found);
    Ok(warnings)
}

/// Adds the variables of `path` to `found`, and gives the warnings to print.
pub fn load(path: &Path, found: &mut Vars) -> Result<Vec<String>, String> {
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

/// Warnings for `TVM_*` names in the environment that no setting has: a misspelt or
/// imagined setting (`TVM_MAX_MEMORY`; bounds without a variable are flags) would
/// otherwise be ignored without a word.
fn unread_environment() -> Vec<String> {
    let mut names: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with("TVM_") && !SETTINGS.contains(&k.as_str()))
        .filter(|k| !GIVEN_TO_SCRIPTS.iter().any(|g| k.starts_with(g)))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            format!(
                "`{name}` in the environment is not a setting of tvm, so it is not read (the settings: {}; the others are flags)",
                SETTINGS.join(", ")
            )
        })
        .collect()
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
    vars::PROVIDER_VARS.contains(&name) || SETTINGS.contains(&name)
}

/// `NAME=VALUE` lines, each with its line number: `export ` before the name, blank
/// lines and `#` comments are allowed; a value may be quoted (`'...'` as is, `"..."`
/// with `\n`, `\"` and `\\`), and an unquoted one ends at ` #`. An error is `LINE:
/// what is wrong`.
pub fn parse(text: &str) -> Result<Vec<(usize, String, String)>, String> {
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

    /// Every `"TVM_...` name in the sources of `tvm` and of what it sets up providers
    /// and scripts with is a setting, a name given to scripts, or the descriptor of the
    /// keys handed over at start (a name `tvm` sets for itself).
    #[test]
    fn every_tvm_name_the_sources_read_is_a_setting_or_given_to_scripts() {
        let sources = [
            include_str!("main.rs"),
            include_str!("options.rs"),
            include_str!("batch.rs"),
            include_str!("nats.rs"),
            include_str!("keys.rs"),
            include_str!("testing.rs"),
            include_str!("../../../runtime/src/providers/mod.rs"),
            include_str!("../../../runtime/src/providers/vars.rs"),
            include_str!("../../../runtime/src/host/run.rs"),
            include_str!("../../../runtime/src/script.rs"),
        ];
        let mut seen = Vec::new();
        for source in sources {
            for (at, _) in source.match_indices("\"TVM_") {
                let name: String = source[at + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                    .collect();
                let known = SETTINGS.contains(&name.as_str())
                    || GIVEN_TO_SCRIPTS.contains(&name.as_str())
                    || name == "TVM_KEYS_FD";
                assert!(known, "{name} is not in SETTINGS");
                seen.push(name);
            }
        }
        for name in ["TVM_PROVIDER", "TVM_MODEL", "TVM_MAX_COST", "TVM_KEYS_FD"] {
            assert!(seen.iter().any(|s| s == name), "{name} was not found");
        }
    }

    /// The README's table of settings has a row for every variable `tvm` reads.
    #[test]
    fn every_variable_tvm_reads_has_a_row_in_the_readme_table() {
        let readme = include_str!("../../../README.md");
        for name in vars::PROVIDER_VARS.iter().chain(SETTINGS) {
            assert!(
                readme.contains(&format!("\n| `{name}` |")),
                "README.md has no row `| `{name}` |` in its table of settings"
            );
        }
    }

    #[test]
    fn only_provider_variables_and_tvm_settings_are_taken() {
        assert!(taken("OPENAI_API_KEY") && taken("TVM_PROVIDER") && taken("TVM_CACHE"));
        assert!(!taken("PATH") && !taken("LD_PRELOAD") && !taken("DATABASE_URL"));
        assert!(!taken("TVM_INPUT_DIFF") && !taken("TVM_SCRIPT_RUN") && !taken("TVM_MODLE"));
    }
}
