//! The one reader of a run's environment: the variables `tvm` takes, each with where
//! it was found (DESIGN §18), the environment `tvm` started in or the `.env` in its
//! working directory. The place matters because an API key is sent only to a server
//! named in the same place as the key, or to its provider's own: a `.env` that came with
//! a checkout must not send the key of the user's shell to a server of its choosing. And
//! a `.env` may lower the settings that bound a run, never raise them.
//!
//! The process's variables are given to [`Environment::new`] as a snapshot (the front
//! end reads them; the runtime never reads the process environment), and the settings
//! among them become a layer of the run's [`RunConfig`]; keys and base URLs stay here.

pub use super::variables::*;
pub use super::vars::{Source, Var, Vars};
use super::{dotenv, CacheChoice, JsonMode, RunConfig};
use crate::host::Choice;
use crate::prices;
use std::path::{Path, PathBuf};

/// What a layer of the environment is for: a resume takes no bound from it (the run's
/// own are in its journal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    Run,
    Resume,
}

/// The variables of the run, read once at start: the environment's, the keys handed
/// over at start (which were the environment's), then the `.env`'s.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    vars: Vars,
}

impl Environment {
    /// Reads the variables of `snapshot` (the process environment's, as `(name,
    /// value)`; [`wanted`] says which it needs), the `keys` handed over at start, then
    /// the `.env` at `dotenv` (a missing file is no error). Gives the warnings to print.
    pub fn new(
        snapshot: Vec<(String, String)>,
        keys: Vec<(String, String)>,
        dotenv: &Path,
    ) -> Result<(Environment, Vec<String>), String> {
        let mut vars = Vars::default();
        let mut unread = Vec::new();
        for (name, value) in snapshot {
            if VARIABLES.iter().any(|v| v.name == name) {
                vars.insert(&name, value, Source::Environment);
            } else if name.starts_with("TVM_")
                && !GIVEN_TO_SCRIPTS.iter().any(|g| name.starts_with(g))
            {
                unread.push(name);
            }
        }
        for (name, value) in keys {
            vars.insert(&name, value, Source::Environment);
        }
        let mut warnings = dotenv::load(dotenv, &mut vars)?;
        unread.sort();
        unread.dedup();
        warnings.extend(unread.into_iter().map(|name| {
            format!(
                "`{name}` in the environment is not a setting of tvm, so it is not read (the settings: {}; the others are flags)",
                SETTINGS.join(", ")
            )
        }));
        Ok((Environment { vars }, warnings))
    }

    /// An environment of these variables only (tests, embedding).
    pub fn of(vars: Vars) -> Environment {
        Environment { vars }
    }

    /// The variables, with where each was found: keys and base URLs are read here.
    pub fn vars(&self) -> &Vars {
        &self.vars
    }

    /// The settings the environment gives, as a layer of a run's config; for a run,
    /// with the bounds the environment (not the `.env`) sets, which
    /// [`RunConfig::clamp`] lowers to the `.env`'s.
    pub fn layer(&self, purpose: Purpose) -> Result<RunConfig, String> {
        let mut layer = RunConfig::default();
        if let Some(p) = self.vars.value(TVM_PROVIDER) {
            layer.provider.choice = Some(Choice::parse(p).ok_or_else(|| unknown_provider(p))?);
        }
        layer.models.default = self.vars.value(TVM_MODEL).map(str::to_string);
        if let Some(m) = self.vars.get(TVM_JSON_MODE) {
            // The value is not quoted: a `.env`'s values are never printed.
            layer.json_mode = Some(JsonMode::parse(m.value.trim()).ok_or_else(|| {
                format!("TVM_JSON_MODE (in {}) must be native or prompt", m.source)
            })?);
        }
        layer.cost.cache = self
            .vars
            .value(TVM_CACHE)
            .map(|d| CacheChoice::Dir(PathBuf::from(d)));
        Ok(match purpose {
            Purpose::Run => layer.overlay(self.bounds_layer()?),
            Purpose::Resume => layer,
        })
    }

    /// The bounds the environment (not the `.env`) sets: `TVM_MAX_COST` and
    /// `TVM_CONCURRENCY`, as a layer.
    pub fn bounds_layer(&self) -> Result<RunConfig, String> {
        let mut layer = RunConfig::default();
        layer.cost.max_cost = self.environment_bound(TVM_MAX_COST, prices::parse_usd)?;
        layer.calls.concurrency =
            self.environment_bound(TVM_CONCURRENCY, |s| super::at_least_one(s.trim()))?;
        Ok(layer)
    }

    fn environment_bound<T>(
        &self,
        name: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Option<T>, String> {
        self.vars
            .from(name, Source::Environment)
            .map(|v| parse(&v.value).map_err(|e| format!("{name} in the environment: {e}")))
            .transpose()
    }

    /// The bounds the `.env` sets, which may only lower those in force.
    pub fn bounds(&self) -> Result<DotEnvBounds, String> {
        Ok(DotEnvBounds {
            max_cost: self.dotenv_bound(TVM_MAX_COST, "--max-cost", prices::parse_usd)?,
            concurrency: self.dotenv_bound(TVM_CONCURRENCY, "--concurrency", |s| {
                super::at_least_one(s.trim())
            })?,
        })
    }

    fn dotenv_bound<T>(
        &self,
        name: &str,
        flag: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Option<(T, Source)>, String> {
        let Some(var) = self.vars.from(name, Source::DotEnv { line: 0 }) else {
            return Ok(None);
        };
        // The value is not quoted: a `.env`'s values are never printed.
        let value = parse(&var.value)
            .map_err(|_| format!("{name} in {} is not a value {flag} takes", var.source))?;
        Ok(Some((value, var.source)))
    }
}

/// The `.env`'s `TVM_MAX_COST` and `TVM_CONCURRENCY`, each with its line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DotEnvBounds {
    pub max_cost: Option<(u64, Source)>,
    pub concurrency: Option<(usize, Source)>,
}

/// The error for a provider name no provider has.
pub fn unknown_provider(p: &str) -> String {
    format!("unknown provider `{p}` (known: openai, anthropic, replay, echo)")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README's table of settings has a row for every variable a `.env` may set,
    /// saying whether it may only lower it.
    #[test]
    fn every_variable_tvm_reads_has_a_row_in_the_readme_table() {
        let readme = include_str!("../../../README.md");
        for v in VARIABLES.iter().filter(|v| v.dotenv != DotEnv::Never) {
            let row = readme
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", v.name)))
                .unwrap_or_else(|| panic!("README.md has no row for `{}`", v.name));
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            assert!(cells[2].starts_with(v.sets), "{row}: not `{}`", v.sets);
            let lower_only = cells[4].starts_with("only to lower");
            assert_eq!(lower_only, v.dotenv == DotEnv::LowerOnly, "{row}");
        }
        let secret: Vec<&str> = VARIABLES
            .iter()
            .filter(|v| v.secret)
            .map(|v| v.name)
            .collect();
        assert_eq!(secret, SECRET_VARS);
        for name in SETTINGS.iter().chain(PROVIDER_VARS) {
            assert!(VARIABLES.iter().any(|v| v.name == *name), "{name}");
        }
    }

    fn environment(
        env: &[(&str, &str)],
        dotenv: &str,
    ) -> Result<(Environment, Vec<String>), String> {
        let dir = tv_test_support::temp::TempDir::new("environment");
        let path = dir.path().join(".env");
        std::fs::write(&path, dotenv).unwrap();
        let snapshot = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Environment::new(snapshot, Vec::new(), &path)
    }

    #[test]
    fn the_environment_layer_holds_the_settings_and_no_key_or_base_url() {
        let (env, warnings) = environment(
            &[
                ("OPENAI_API_KEY", "sk-env"),
                ("TVM_PROVIDER", "echo"),
                ("TVM_CONCURRENCY", "3"),
                ("TVM_MAX_COST", "0.5"),
                ("TVM_MODLE", "x"),
                ("TVM_INPUT_DIFF", "given to a script"),
            ],
            "TVM_MODEL=m\nTVM_JSON_MODE=prompt\nTVM_CACHE=/c\nOPENAI_BASE_URL=http://x\n",
        )
        .unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].starts_with("`TVM_MODLE` in the environment is not a setting"));
        let run = env.layer(Purpose::Run).unwrap();
        assert_eq!(run.provider.choice, Some(Choice::Echo));
        assert_eq!(run.models.default.as_deref(), Some("m"));
        assert_eq!(run.json_mode, Some(JsonMode::Prompt));
        assert_eq!(run.cost.cache, Some(CacheChoice::Dir("/c".into())));
        assert_eq!(run.calls.concurrency, Some(3));
        assert_eq!(run.cost.max_cost, Some(500_000_000_000));
        let text = serde_json::to_string(&run).unwrap();
        assert!(
            !text.contains("sk-env") && !text.contains("http://x"),
            "{text}"
        );
        let resume = env.layer(Purpose::Resume).unwrap();
        assert_eq!(
            (resume.calls.concurrency, resume.cost.max_cost),
            (None, None)
        );
        assert_eq!(env.vars().value("OPENAI_API_KEY"), Some("sk-env"));
    }

    #[test]
    fn a_bad_setting_is_named_with_its_place_and_never_its_value() {
        let (env, _) = environment(&[("TVM_PROVIDER", "nope")], "").unwrap();
        assert_eq!(
            env.layer(Purpose::Run).unwrap_err(),
            "unknown provider `nope` (known: openai, anthropic, replay, echo)"
        );
        let (env, _) = environment(&[], "\nTVM_JSON_MODE=secretish\n").unwrap();
        assert_eq!(
            env.layer(Purpose::Run).unwrap_err(),
            "TVM_JSON_MODE (in .env:2) must be native or prompt"
        );
        let (env, _) = environment(&[("TVM_CONCURRENCY", "0")], "TVM_MAX_COST=lots\n").unwrap();
        assert_eq!(
            env.layer(Purpose::Run).unwrap_err(),
            "TVM_CONCURRENCY in the environment: `0` is not a whole number of 1 or more"
        );
        assert_eq!(
            env.bounds().unwrap_err(),
            "TVM_MAX_COST in .env:1 is not a value --max-cost takes"
        );
    }
}
