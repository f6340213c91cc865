//! A run's variables, each with where it was found (DESIGN §18): the environment
//! `tvm` started in, or the `.env` in its working directory. The place matters because
//! an API key is sent only to a server named in the same place as the key, or to its
//! provider's own: a `.env` that came with a checkout must not send the key of the
//! user's shell to a server of its choosing.

use std::fmt;

/// Where a variable's value was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The environment `tvm` was started in. Keys keep this source after they leave the
    /// environment block at start (`tvm` hands them to itself on a pipe).
    Environment,
    /// `.env` in the working directory, at this line.
    DotEnv { line: usize },
}

impl Source {
    /// Whether two values were set in the same place: both in the environment, or both
    /// in the `.env` (there is only one).
    pub(crate) fn same_place(self, other: Source) -> bool {
        matches!(
            (self, other),
            (Source::Environment, Source::Environment)
                | (Source::DotEnv { .. }, Source::DotEnv { .. })
        )
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Environment => f.write_str("the environment"),
            Source::DotEnv { line } => write!(f, ".env:{line}"),
        }
    }
}

/// One variable's value and where it was found. Its `Debug` text shows the source, never
/// the value, which may be a key.
#[derive(Clone, PartialEq, Eq)]
pub struct Var {
    pub value: String,
    pub source: Source,
}

impl fmt::Debug for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Var")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// The variables a run reads, from every place they were found: a name may have a value
/// in the environment and another in the `.env`, and [`Vars::get`] gives the one in force.
#[derive(Clone, Debug, Default)]
pub struct Vars {
    vars: Vec<(String, Var)>,
}

impl Vars {
    /// The variables among `names` that `var` gives, all from `source`.
    pub fn read(var: impl Fn(&str) -> Option<String>, names: &[&str], source: Source) -> Vars {
        let mut vars = Vars::default();
        for name in names {
            if let Some(value) = var(name) {
                vars.insert(name, value, source);
            }
        }
        vars
    }

    /// Sets `name` as found in `source`, replacing what the same place set before (a
    /// later line of a `.env` wins, as it would in a shell). An empty value, as an
    /// exported but empty variable (`OPENAI_API_KEY=`), counts as unset.
    pub fn insert(&mut self, name: &str, value: String, source: Source) {
        self.vars
            .retain(|(n, v)| !(n == name && v.source.same_place(source)));
        if !value.trim().is_empty() {
            self.vars.push((name.to_string(), Var { value, source }));
        }
    }

    /// The value in force: the environment's, else the `.env`'s.
    pub fn get(&self, name: &str) -> Option<&Var> {
        self.from(name, Source::Environment)
            .or_else(|| self.from(name, Source::DotEnv { line: 0 }))
    }

    /// The value in force, trimmed.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.get(name).map(|v| v.value.trim())
    }

    /// The value the place of `source` gave (any line of the `.env`).
    pub fn from(&self, name: &str, source: Source) -> Option<&Var> {
        self.vars
            .iter()
            .find(|(n, v)| n == name && v.source.same_place(source))
            .map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_wins_a_later_line_replaces_an_earlier_and_empty_is_unset() {
        let mut vars = Vars::default();
        vars.insert("TVM_MODEL", "a".into(), Source::DotEnv { line: 1 });
        assert_eq!(vars.value("TVM_MODEL"), Some("a"));
        vars.insert("TVM_MODEL", "b".into(), Source::DotEnv { line: 4 });
        vars.insert("TVM_MODEL", "c".into(), Source::Environment);
        assert_eq!(vars.value("TVM_MODEL"), Some("c"));
        let dotenv = vars.from("TVM_MODEL", Source::DotEnv { line: 0 });
        assert_eq!(
            dotenv.map(|v| (v.value.as_str(), v.source.to_string())),
            Some(("b", ".env:4".into()))
        );
        vars.insert("OPENAI_API_KEY", "  ".into(), Source::Environment);
        assert!(vars.get("OPENAI_API_KEY").is_none());
    }

    #[test]
    fn a_value_is_never_in_the_debug_text() {
        let mut vars = Vars::default();
        vars.insert(
            "OPENAI_API_KEY",
            "sk-debug-0123".into(),
            Source::Environment,
        );
        let shown = format!("{vars:?} {vars:#?}");
        assert!(
            !shown.contains("sk-debug") && shown.contains("Environment"),
            "{shown}"
        );
    }
}
