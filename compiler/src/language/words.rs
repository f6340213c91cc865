//! The values the language takes: its word lists, each declared once with the Rust type
//! it reads into (the `words!` macro makes the type, or takes an existing one, its
//! [`WordList`] with per-word documentation, and reading a word into it); its ranges of
//! numbers, each citing the limit it comes from; and what each kind of value is called
//! in diagnostics and in the schema.

use super::{ValueKind, Word, WordList};
use tv_stdlib::models::{Provider, PROVIDERS};
use tv_vm::bundle::Inherit;
use tv_vm::limits::MAX_CONCURRENCY;

/// A type whose values are written as the words of a list.
pub trait Words: Sized + Copy + 'static {
    /// Every word, aliases included, in the order diagnostics list them.
    const LIST: &'static WordList;
    /// The value `word` names, if it is one of the list's.
    fn parse(word: &str) -> Option<Self>;
}

/// `words! { pub enum Name "XsdName" doc "..." { Variant = "word" "doc" | "alias", ... } }`
/// declares an enum and its list; `words! { impl Path "XsdName" { ... } }` gives an
/// existing enum its list. A word's documentation and aliases are optional.
macro_rules! words {
    (@opt) => { None };
    (@opt $text:literal) => { Some($text) };
    (@list $xsd:literal [$($ldoc:literal)?] $($word:literal [$($wdoc:literal)?] [$($alias:literal)*])*) => {
        &WordList {
            xsd_name: $xsd,
            doc: words!(@opt $($ldoc)?),
            words: &[$(
                Word { word: $word, doc: words!(@opt $($wdoc)?), alias_of: None },
                $(Word { word: $alias, doc: None, alias_of: Some($word) },)*
            )*],
        }
    };
    (@impl $ty:ty, $xsd:literal [$($ldoc:literal)?]
        $($variant:ident = $word:literal [$($wdoc:literal)?] [$($alias:literal)*])*) => {
        impl Words for $ty {
            const LIST: &'static WordList =
                words!(@list $xsd [$($ldoc)?] $($word [$($wdoc)?] [$($alias)*])*);
            fn parse(word: &str) -> Option<Self> {
                match word {
                    $($word $(| $alias)* => Some(<$ty>::$variant),)*
                    _ => None,
                }
            }
        }
    };
    ($(#[$meta:meta])* pub enum $name:ident $xsd:literal $(doc $ldoc:literal)? {
        $($(#[$vmeta:meta])* $variant:ident = $word:literal $($wdoc:literal)? $(| $alias:literal)*),* $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name { $($(#[$vmeta])* $variant),* }

        impl $name {
            /// The word that names it.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $word),* }
            }
        }

        words!(@impl $name, $xsd [$($ldoc)?] $($variant = $word [$($wdoc)?] [$($alias)*])*);
    };
    (impl $ty:ty, $xsd:literal {
        $($variant:ident = $word:literal $($wdoc:literal)?),* $(,)?
    }) => {
        words!(@impl $ty, $xsd [] $($variant = $word [$($wdoc)?] [])*);
    };
}

words! {
    /// What a task does (`type`).
    pub enum TaskType "TaskType" doc "What a task does; atomic when not given." {
        Atomic = "atomic" "One LLM call.",
        Sequential = "sequential" "The steps, one after another.",
        Reduce = "reduce" "The reduction task over each input (or each element of `over`), from an initial value.",
        Script = "script" "A command run as a confined process.",
        DirectorEvaluatorLoop = "director_evaluator_loop" "A director and an evaluator in turn until the termination condition holds.",
        /// One body per item of a list known at run time (DESIGN §14).
        Map = "map" "The one body once per element of `over`, in order.",
    }
}

words! {
    /// How a reply is read (`<output_format type>`).
    pub enum OutputKind "OutputKind" {
        Json = "json" "The reply is read as JSON (checked against `schema` when given).",
        Text = "text" "The reply is kept as text.",
    }
}

// `inherit_context`: the bundle's own type, so what a template states is what runs.
words! {
    impl Inherit, "InheritContext" { Full = "full", None = "none", Subset = "subset" }
}

/// `<inherit_context>`'s words.
pub const INHERIT_CONTEXT: &WordList = <Inherit as Words>::LIST;

words! {
    /// What is accumulated of each step (`<accumulation_format>`).
    pub enum AccumulationFormat "AccumulationFormat" {
        /// `full` or `full_output`.
        Full = "full" "Each step's whole output." | "full_output",
        /// `minimal` or `notes_only`.
        Minimal = "minimal" "Each step's notes only." | "notes_only",
    }
}

words! {
    /// `<fresh_context>` and `<subtasks>`.
    pub enum FreshContext "EnabledOrDisabled" {
        Enabled = "enabled",
        Disabled = "disabled",
    }
}

words! {
    /// What a director-evaluator loop does when its rounds run out.
    pub enum OnMaxIterations "OnMaxIterations" {
        Accept = "accept" "The last director result is the loop's result.",
        Fail = "fail" "The loop fails.",
    }
}

words! {
    /// Which child of `<file_paths>` names the files.
    pub enum FilePathsSource "FilePathsSource" {
        Literal = "literal" "The `path` children name the files.",
        Command = "command" "The `command` child prints the paths, one a line.",
        Description = "description" "The `description` child is searched for in the workspace.",
    }
}

words! {
    /// A result's status, as a test expects it.
    pub enum Status "Status" {
        Complete = "COMPLETE",
        Failed = "FAILED",
        Continuation = "CONTINUATION",
    }
}

words! {
    /// `<cond otherwise="...">`.
    pub enum Otherwise "Otherwise" {
        /// No case holding fails the task (`input_validation_failure`).
        Fail = "fail" "No case holding fails the task (input_validation_failure).",
        /// No case holding completes it empty, as a cond without `otherwise` does, but
        /// said on purpose: no warning about strings its cases leave out.
        Empty = "empty" "No case holding completes the task with empty content.",
    }
}

/// `true` or `false`, exactly.
pub const BOOLEAN: &WordList = &WordList {
    xsd_name: "Boolean",
    doc: Some("Exactly `true` or `false`."),
    words: &[
        Word {
            word: "true",
            doc: None,
            alias_of: None,
        },
        Word {
            word: "false",
            doc: None,
            alias_of: None,
        },
    ],
};

impl Words for bool {
    const LIST: &'static WordList = BOOLEAN;
    fn parse(word: &str) -> Option<bool> {
        word.parse().ok()
    }
}

/// The providers' names, from the model table of the standard library.
const PROVIDER_WORDS: [Word; PROVIDERS.len()] = {
    let mut out = [const {
        Word {
            word: "",
            doc: None,
            alias_of: None,
        }
    }; PROVIDERS.len()];
    let mut i = 0;
    while i < PROVIDERS.len() {
        out[i].word = PROVIDERS[i].0;
        i += 1;
    }
    out
};

/// `<provider>`'s words.
pub const PROVIDER: &WordList = &WordList {
    xsd_name: "Provider",
    doc: None,
    words: &PROVIDER_WORDS,
};

impl Words for Provider {
    const LIST: &'static WordList = PROVIDER;
    fn parse(word: &str) -> Option<Provider> {
        Provider::parse(word)
    }
}

/// A whole number from `min` to `max` (no upper bound when `None`).
#[derive(Debug, PartialEq)]
pub struct Count {
    pub min: u64,
    pub max: Option<u64>,
    /// The schema's name of the range and the lead of its documentation (": 1 to
    /// 1024." is added); `None` for a range the schema has a built-in type for.
    pub xsd: Option<(&'static str, &'static str)>,
}

/// A number from `min` to `max`.
#[derive(Debug, PartialEq)]
pub struct Number {
    pub min: f64,
    pub max: f64,
    /// The schema's name of the range.
    pub xsd_name: &'static str,
}

/// The most `<output_format retries>` may ask again: every attempt costs a model call.
pub const MAX_RETRIES: u64 = 10;

/// `max_tokens`, `<max_iterations>`, `<timeout>`.
pub const POSITIVE: Count = Count {
    min: 1,
    max: None,
    xsd: None,
};

/// `concurrency` of a map: each running body is a machine of its own, so a bundle may
/// not ask for more than the machine allows.
pub const CONCURRENCY: Count = Count {
    min: 1,
    max: Some(MAX_CONCURRENCY as u64),
    xsd: Some(("Concurrency", "How many bodies run at once")),
};

/// `<output_format retries>`.
pub const RETRIES: Count = Count {
    min: 0,
    max: Some(MAX_RETRIES),
    xsd: Some((
        "Retries",
        "How many times a reply that does not fit its type is asked again",
    )),
};

pub const TEMPERATURE: Number = Number {
    min: 0.0,
    max: 2.0,
    xsd_name: "Temperature",
};

pub const TOP_P: Number = Number {
    min: 0.0,
    max: 1.0,
    xsd_name: "TopP",
};

impl Count {
    pub fn contains(&self, n: u64) -> bool {
        n >= self.min && self.max.is_none_or(|max| n <= max)
    }

    /// "a positive whole number", "a whole number from 1 to 1024".
    pub fn describe(&self) -> String {
        match (self.min, self.max) {
            (min, Some(max)) => format!("a whole number from {min} to {max}"),
            (1, None) => "a positive whole number".into(),
            (min, None) => format!("a whole number of at least {min}"),
        }
    }
}

impl Number {
    pub fn contains(&self, n: f64) -> bool {
        (self.min..=self.max).contains(&n)
    }
}

impl ValueKind {
    /// What a value of this kind is, as diagnostics and hover help say it.
    pub fn describe(&self) -> String {
        match self {
            ValueKind::Template => "text with {{ }} holes".into(),
            ValueKind::Text => "text".into(),
            ValueKind::Expression => "an expression".into(),
            ValueKind::Type => "a type".into(),
            ValueKind::Params => "parameter names, each optionally typed".into(),
            ValueKind::ModelId => "a model identifier".into(),
            ValueKind::Identifier => {
                "a name: letters, digits and `_`, not starting with a digit".into()
            }
            ValueKind::NonBlank => "text that is not only white space".into(),
            ValueKind::NonEmpty => "text of at least one character, white space counting".into(),
            ValueKind::Integer => "a whole number".into(),
            ValueKind::Count(c) => c.describe(),
            ValueKind::Number(n) => format!("a number from {} to {}", n.min, n.max),
            ValueKind::Words(list) => {
                let words: Vec<String> = list.names().map(|w| format!("`{w}`")).collect();
                format!("one of {}", words.join(", "))
            }
        }
    }

    /// Its type's name in the schema: a built-in `xs:` type or one the schema defines.
    pub fn xsd_type(&self) -> &'static str {
        match self {
            ValueKind::Template
            | ValueKind::Text
            | ValueKind::Expression
            | ValueKind::Type
            | ValueKind::Params
            | ValueKind::ModelId => "xs:string",
            ValueKind::Identifier => "Identifier",
            ValueKind::NonBlank => "NonBlank",
            ValueKind::NonEmpty => "NonEmpty",
            ValueKind::Integer => "xs:long",
            ValueKind::Count(Count {
                xsd: Some((name, _)),
                ..
            }) => name,
            ValueKind::Count(Count { min: 0, .. }) => "xs:nonNegativeInteger",
            ValueKind::Count(_) => "xs:positiveInteger",
            ValueKind::Number(n) => n.xsd_name,
            ValueKind::Words(list) => list.xsd_name,
        }
    }
}
