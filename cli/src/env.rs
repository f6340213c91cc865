//! The one reader of `tvm`'s process environment (the keys' hand-over at start aside,
//! see `tvm/keys.rs`): the variables `tvm` takes are read once, at start, into the
//! runtime's [`Environment`], which says where each was found and turns the settings
//! among them into a layer of the run's config. `NO_COLOR` is read here too.

use std::ffi::OsString;
use std::path::Path;
use std::sync::OnceLock;
use tv_runtime::config::env::{self, Vars};
use tv_runtime::config::Environment;

static ENVIRONMENT: OnceLock<Environment> = OnceLock::new();

/// The process environment's variables that `tvm` reads (see [`env::wanted`]); a
/// variable whose name or value is not Unicode is none of them.
fn snapshot() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| env::wanted(k))
        .collect()
}

/// Reads the variables of the run: the environment's, the keys handed over at start
/// (which were the environment's), then the `.env` at `dotenv`. Gives the warnings to
/// print; a missing file is no error.
pub fn start(dotenv: &Path, keys: Vec<(String, String)>) -> Result<Vec<String>, String> {
    let (found, warnings) = Environment::new(snapshot(), keys, dotenv)?;
    let _ = ENVIRONMENT.set(found);
    Ok(warnings)
}

/// The run's environment, as [`start`] read it (empty before).
pub fn environment() -> &'static Environment {
    ENVIRONMENT.get_or_init(Environment::default)
}

/// The run's variables, with where each was found.
pub fn vars() -> &'static Vars {
    environment().vars()
}

/// `NO_COLOR` (https://no-color.org).
pub(crate) fn no_color() -> Option<OsString> {
    std::env::var_os("NO_COLOR")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `"TVM_...` name in the sources of `tvm` and of what it sets up providers
    /// and scripts with is a setting, a name given to scripts, or the descriptor of the
    /// keys handed over at start (a name `tvm` sets for itself).
    #[test]
    fn every_tvm_name_the_sources_read_is_a_setting_or_given_to_scripts() {
        let sources = [
            include_str!("tvm/main.rs"),
            include_str!("tvm/options.rs"),
            include_str!("tvm/batch.rs"),
            include_str!("tvm/nats.rs"),
            include_str!("tvm/keys.rs"),
            include_str!("tvm/testing.rs"),
            include_str!("../../runtime/src/providers/mod.rs"),
            include_str!("../../runtime/src/config/mod.rs"),
            include_str!("../../runtime/src/config/env.rs"),
            include_str!("../../runtime/src/config/variables.rs"),
            include_str!("../../runtime/src/host/run.rs"),
            include_str!("../../runtime/src/script.rs"),
        ];
        let mut seen = Vec::new();
        // What a file's tests name (a misspelt setting, say) is not read.
        for source in sources.map(|s| s.split("#[cfg(test)]").next().unwrap_or(s)) {
            for (at, _) in source.match_indices("\"TVM_") {
                let name: String = source[at + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                    .collect();
                let known = env::SETTINGS.contains(&name.as_str())
                    || env::GIVEN_TO_SCRIPTS.contains(&name.as_str())
                    || name == "TVM_KEYS_FD"
                    || name == "TVM_"; // the prefix of every setting, as checked
                assert!(known, "{name} is not in SETTINGS");
                seen.push(name);
            }
        }
        for name in ["TVM_PROVIDER", "TVM_MODEL", "TVM_MAX_COST", "TVM_KEYS_FD"] {
            assert!(seen.iter().any(|s| s == name), "{name} was not found");
        }
    }

    #[test]
    fn the_snapshot_holds_only_the_variables_tvm_reads() {
        assert!(env::wanted("OPENAI_API_KEY") && env::wanted("TVM_MODLE"));
        assert!(env::wanted("NATS_TOKEN") && !env::wanted("PATH") && !env::wanted("HOME"));
        assert!(snapshot().iter().all(|(k, _)| env::wanted(k)));
    }
}
