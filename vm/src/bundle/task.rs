//! What the bundle keeps of each atomic, script and composite task: its model and
//! sampling settings, output format, context settings, files and criteria. Requests
//! carry them to the host; the machine reads the output format and criteria into
//! results, and merges a subtask request's context settings over them.

use super::{Loc, ValueType};
use bincode::{Decode, Encode};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a host call needs to know about the task that makes it.
#[derive(Clone, Debug, PartialEq, Serialize, Encode, Decode)]
pub struct TaskMeta {
    /// The item it is in and its place there (`review#2`), for messages and records.
    pub name: String,
    /// The model identifier its `<model>` states or inherits; `None` for the run's.
    pub model: Option<String>,
    /// The provider it states or inherits (`openai`); `None` to go by the model's prefix
    /// or the run's default.
    pub provider: Option<String>,
    /// How its reply is read: text, or JSON of a type.
    pub output: Output,
    /// How many more times a reply that does not read as its output format is asked
    /// for, with feedback (DESIGN §13): `<output_format retries="N">`, default 1.
    pub retries: u32,
    /// What it receives of the context around it.
    pub context: ContextSettings,
    /// The files its context holds (`file_paths`).
    pub file_paths: FilePaths,
    /// The success criteria it states, which its results carry.
    pub criteria: Option<String>,
    /// Script timeout in seconds.
    pub timeout: Option<u64>,
    /// Where the task is in the source.
    pub loc: Loc,
    /// Sampling settings the task states on its `<model>`; the run's defaults fill the rest.
    pub settings: ModelSettings,
    /// Whether the model is offered the `spawn_subtask` tool (`<subtasks>enabled</subtasks>`).
    pub subtasks: bool,
    /// The context settings when the template this task is the body of runs as a
    /// spawned subtask: the seeds' subtask defaults under what the task states. A
    /// request's own `context_management` is merged over these at run time.
    pub spawned: Option<ContextSettings>,
    /// `context_assembly`: path globs that order and filter the files of the context.
    pub assembly: Assembly,
}

/// `context_assembly` (DESIGN §19): comma-separated path globs, split. Primary files
/// come first, secondary ones after the ranked rest, excluded ones never.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Encode, Decode)]
pub struct Assembly {
    /// The globs of the files that come first.
    pub primary: Vec<String>,
    /// The globs of the files that come after the ranked rest.
    pub secondary: Vec<String>,
    /// The globs of the files left out.
    pub excluded: Vec<String>,
}

impl Assembly {
    /// Whether it names no glob.
    pub fn is_empty(&self) -> bool {
        self.primary.is_empty() && self.secondary.is_empty() && self.excluded.is_empty()
    }
}

/// Sampling settings of one LLM call (DESIGN §12). A field left `None` is not sent, so
/// the provider's own default applies (Anthropic's required `max_tokens` excepted).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Encode, Decode)]
pub struct ModelSettings {
    /// 0 to 2.
    pub temperature: Option<f64>,
    /// The most tokens the reply may have; a reply cut there fails its task.
    pub max_tokens: Option<u64>,
    /// 0 to 1.
    pub top_p: Option<f64>,
    /// The seed of sampling, for providers that take one.
    pub seed: Option<i64>,
    /// The sequences (one to [`MAX_STOP_SEQUENCES`]) that end the reply where the
    /// model writes one. Written as a string when there is one, as before there could
    /// be several, so that cassettes and journals recorded then still match.
    #[serde(default, with = "stop_text")]
    pub stop: Option<Vec<String>>,
}

/// The most stop sequences a task may give: OpenAI takes at most 4 (DESIGN §20).
pub const MAX_STOP_SEQUENCES: usize = 4;

/// `stop` in JSON: `null`, one sequence as a string, several as an array.
mod stop_text {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(
        stop: &Option<Vec<String>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match stop.as_deref() {
            Some([one]) => one.serialize(s),
            other => other.serialize(s),
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        One(String),
        Several(Vec<String>),
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<String>>, D::Error> {
        Ok(Option::<Written>::deserialize(d)?.map(|w| match w {
            Written::One(s) => vec![s],
            Written::Several(v) => v,
        }))
    }
}

impl ModelSettings {
    /// These settings, with every field left unset taken from `defaults`.
    pub fn or(&self, defaults: &ModelSettings) -> ModelSettings {
        ModelSettings {
            temperature: self.temperature.or(defaults.temperature),
            max_tokens: self.max_tokens.or(defaults.max_tokens),
            top_p: self.top_p.or(defaults.top_p),
            seed: self.seed.or(defaults.seed),
            stop: self.stop.clone().or_else(|| defaults.stop.clone()),
        }
    }

    /// Whether no setting is set.
    pub fn is_empty(&self) -> bool {
        *self == ModelSettings::default()
    }
}

/// ` temperature=0.2 max_tokens=800 ...`, the fields that are set, for listings.
impl fmt::Display for ModelSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(t) = self.temperature {
            write!(f, " temperature={t}")?;
        }
        if let Some(n) = self.max_tokens {
            write!(f, " max_tokens={n}")?;
        }
        if let Some(p) = self.top_p {
            write!(f, " top_p={p}")?;
        }
        if let Some(s) = self.seed {
            write!(f, " seed={s}")?;
        }
        match self.stop.as_deref() {
            Some([one]) => write!(f, " stop={one:?}")?,
            Some(several) => write!(f, " stop={several:?}")?,
            None => {}
        }
        Ok(())
    }
}

impl TaskMeta {
    /// A task with text output, no files, no timeout and no inherited context.
    pub fn named(name: &str) -> TaskMeta {
        TaskMeta {
            name: name.into(),
            model: None,
            provider: None,
            output: Output::Text,
            retries: 1,
            context: ContextSettings {
                inherit: Inherit::None,
                accumulate: false,
                full_output: false,
                fresh: false,
            },
            file_paths: FilePaths::None,
            criteria: None,
            timeout: None,
            loc: Loc::default(),
            settings: ModelSettings::default(),
            subtasks: false,
            spawned: None,
            assembly: Assembly::default(),
        }
    }
}

/// How a task's reply is read (`<output_format>`).
#[derive(Clone, Debug, PartialEq, Serialize, Encode, Decode)]
pub enum Output {
    /// As text, whatever it holds.
    Text,
    /// JSON, optionally of a declared type (`object`, `string[]`, ...).
    Json(Option<ValueType>),
}

/// Context settings after defaults and explicit settings are merged (DESIGN §3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Encode, Decode)]
pub struct ContextSettings {
    /// What it receives of the context around it (`inherit_context`).
    pub inherit: Inherit,
    /// Whether earlier steps' results reach later steps (`accumulate_data`).
    pub accumulate: bool,
    /// Whether accumulated results are given whole rather than summarised
    /// (`accumulation_format` `full`).
    pub full_output: bool,
    /// Whether files of the workspace that match the request join the context
    /// (`fresh_context`).
    pub fresh: bool,
}

/// What a template or a subtask request states about its context; `None` where it
/// states nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatedContext {
    /// `inherit_context`.
    pub inherit: Option<Inherit>,
    /// `accumulate_data`.
    pub accumulate: Option<bool>,
    /// `accumulation_format`: whether `full`.
    pub full_output: Option<bool>,
    /// `fresh_context`.
    pub fresh: Option<bool>,
}

impl ContextSettings {
    /// These settings (defaults) with `stated` merged over them (DESIGN §3): a stated
    /// setting wins, and where fresh context and an inherited one would meet, the
    /// other dimension takes the compatible value: fresh context stated alone means
    /// nothing inherited; otherwise (inherit stated, or defaults that conflict among
    /// themselves) the inherited context wins and fresh context is off. The compiler
    /// merges a template's statement over the operator defaults with it; the machine
    /// merges a subtask request's over a template's subtask settings.
    pub fn merged(&self, stated: &StatedContext) -> ContextSettings {
        let mut s = ContextSettings {
            inherit: stated.inherit.unwrap_or(self.inherit),
            accumulate: stated.accumulate.unwrap_or(self.accumulate),
            full_output: stated.full_output.unwrap_or(self.full_output),
            fresh: stated.fresh.unwrap_or(self.fresh),
        };
        if s.fresh && s.inherit != Inherit::None {
            match (stated.inherit, stated.fresh) {
                (None, Some(true)) => s.inherit = Inherit::None,
                _ => s.fresh = false,
            }
        }
        s
    }
}

/// `inherit=full accumulate=false:minimal fresh=false`, for listings.
impl fmt::Display for ContextSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let format = if self.full_output { "full" } else { "minimal" };
        write!(
            f,
            "inherit={} accumulate={}:{format} fresh={}",
            self.inherit, self.accumulate, self.fresh
        )
    }
}

/// What a task receives of the context around it (`inherit_context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Encode, Decode)]
#[serde(rename_all = "lowercase")]
pub enum Inherit {
    /// All of it.
    Full,
    /// Nothing.
    None,
    /// The lines of the inherited context that share a word with the request.
    Subset,
}

impl Inherit {
    /// The word templates write it with.
    pub fn as_str(self) -> &'static str {
        match self {
            Inherit::Full => "full",
            Inherit::None => "none",
            Inherit::Subset => "subset",
        }
    }

    /// The setting a word names; `None` for a word that names none.
    pub fn parse(s: &str) -> Option<Inherit> {
        match s {
            "full" => Some(Inherit::Full),
            "none" => Some(Inherit::None),
            "subset" => Some(Inherit::Subset),
            _ => None,
        }
    }
}

impl fmt::Display for Inherit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The files a task's context holds (`file_paths`): the host reads them.
#[derive(Clone, Debug, PartialEq, Serialize, Encode, Decode)]
pub enum FilePaths {
    /// No file.
    None,
    /// These paths (`<path>`).
    Literal(Vec<String>),
    /// The paths this shell command prints, one a line (`<command>`).
    Command(String),
    /// The workspace's files that best match this text (`<description>`).
    Description(String),
}

#[cfg(test)]
mod tests {
    use super::ModelSettings;
    use serde_json::json;

    #[test]
    fn one_stop_sequence_is_written_as_a_string_as_before_and_several_as_an_array() {
        let one = ModelSettings {
            stop: Some(vec!["###".into()]),
            ..ModelSettings::default()
        };
        let several = ModelSettings {
            stop: Some(vec!["\n".into(), "Observation:".into()]),
            ..ModelSettings::default()
        };
        assert_eq!(serde_json::to_value(&one).unwrap()["stop"], json!("###"));
        assert_eq!(
            serde_json::to_value(&several).unwrap()["stop"],
            json!(["\n", "Observation:"])
        );
        for s in [one, several, ModelSettings::default()] {
            let back: ModelSettings =
                serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
            assert_eq!(back, s);
        }
        // Settings written before `stop` existed, or without it, read as none.
        let old: ModelSettings = serde_json::from_value(json!({"temperature": 0.5})).unwrap();
        assert_eq!(old.stop, None);
    }
}
