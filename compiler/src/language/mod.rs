//! The template language in one table (DESIGN §32): every element's name, attributes,
//! value kinds, word lists, allowed children and documentation.
//!
//! The parser's readers (`crate::ast`) take element and attribute names, ranges and word
//! lists from it; `tvc schema` prints the XML Schema made from it ([`xsd`]); the reference
//! pages, hover help and completion of editors read it through this module:
//!
//! ```
//! use tv_compiler::language::{self, ElementId, ValueKind};
//! let model = language::element(ElementId::Model);
//! let temperature = model.attr("temperature").unwrap();
//! assert_eq!(temperature.value.describe(), "a number from 0 to 2");
//! for child in language::element(ElementId::Task).child_names() {
//!     assert!(language::is_element(child));
//! }
//! let kind = language::element(ElementId::InheritContext).text();
//! let Some(ValueKind::Words(list)) = kind else { panic!() };
//! assert_eq!(list.names().collect::<Vec<_>>(), ["full", "none", "subset"]);
//! let ty = language::element(ElementId::Task).attr("type").unwrap();
//! let Some(ValueKind::Words(types)) = Some(ty.value) else { panic!() };
//! assert_eq!(types.words[0].doc, Some("One LLM call."));
//! assert_eq!(language::named("input").count(), 2);
//! ```
//!
//! One name may have several meanings, each an entry of its own: `<input>` of `<inputs>`
//! and of `<context_relevance>`, `<description>` of a task and of `<file_paths>`, `<task>`
//! in a body and in a `<library>` (where it needs a name).

mod table;
mod words;
mod xsd;

#[cfg(test)]
mod tests;

use table::{parts, tasks};
pub use table::{BODY, SLOT_ATTRS, TASK_CONTENT};
pub use words::{
    AccumulationFormat, FilePathsSource, FreshContext, OnMaxIterations, Otherwise, OutputKind,
    Status, TaskType, Words, BOOLEAN, INHERIT_CONTEXT, PROVIDER,
};
pub use words::{Count, Number, CONCURRENCY, MAX_RETRIES, POSITIVE, RETRIES, TEMPERATURE, TOP_P};
pub use xsd::xsd;

// Every element by its `ElementId`: one line per meaning, pairing the id with its
// entry, so that neither can be added without the other.
macro_rules! elements {
    ($($(#[$meta:meta])* $id:ident => $entry:path,)*) => {
        /// One meaning of an element name, the key of its [`Element`] entry.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ElementId { $($(#[$meta])* $id),* }

        /// Every element, in the order of [`ElementId`].
        pub static ELEMENTS: &[Element] = &[$($entry),*];
    };
}

elements! {
    /// A root `<task>`, or one in a body (a step, a template's body, ...).
    Task => tasks::TASK,
    Template => tasks::TEMPLATE,
    Library => tasks::LIBRARY,
    /// A `<task>` of a `<library>`: named.
    LibraryTask => tasks::LIBRARY_TASK,
    TypeDecl => table::TYPE_DECL,
    Test => table::TEST,
    Description => parts::DESCRIPTION,
    Instructions => parts::INSTRUCTIONS,
    System => parts::SYSTEM,
    Model => parts::MODEL,
    Provider => parts::PROVIDER,
    Criteria => parts::CRITERIA,
    OutputSlot => parts::OUTPUT_SLOT,
    InputSource => parts::INPUT_SOURCE,
    OutputFormat => parts::OUTPUT_FORMAT,
    ContextManagement => parts::CONTEXT_MANAGEMENT,
    FilePaths => parts::FILE_PATHS,
    Steps => tasks::STEPS,
    /// A task's `<inputs>`.
    Inputs => parts::INPUTS,
    ContextRelevance => parts::CONTEXT_RELEVANCE,
    ContextAssembly => parts::CONTEXT_ASSEMBLY,
    ManualXml => parts::MANUAL_XML,
    DisableReparsing => parts::DISABLE_REPARSING,
    MaxIterations => parts::MAX_ITERATIONS,
    OnMaxIterations => parts::ON_MAX_ITERATIONS,
    Subtasks => parts::SUBTASKS,
    Director => tasks::DIRECTOR,
    Evaluator => tasks::EVALUATOR,
    ScriptExecution => parts::SCRIPT_EXECUTION,
    TerminationCondition => parts::TERMINATION_CONDITION,
    InitialValue => parts::INITIAL_VALUE,
    InnerTask => tasks::INNER_TASK,
    ReductionTask => tasks::REDUCTION_TASK,
    Call => tasks::CALL,
    Cond => tasks::COND,
    /// An `<arg>` of a `<call>`.
    CallArg => tasks::CALL_ARG,
    Case => tasks::CASE,
    InheritContext => parts::INHERIT_CONTEXT,
    AccumulateData => parts::ACCUMULATE_DATA,
    AccumulationFormat => parts::ACCUMULATION_FORMAT,
    FreshContext => parts::FRESH_CONTEXT,
    Path => parts::PATH,
    /// The `<command>` of `<file_paths>`.
    FilePathsCommand => parts::FILE_PATHS_COMMAND,
    /// The `<description>` of `<file_paths>`.
    FilePathsDescription => parts::FILE_PATHS_DESCRIPTION,
    /// An `<input>` of `<inputs>`.
    Input => parts::INPUT,
    /// An `<input>` of `<context_relevance>`.
    RelevanceInput => parts::RELEVANCE_INPUT,
    PrimaryElements => parts::PRIMARY_ELEMENTS,
    SecondaryElements => parts::SECONDARY_ELEMENTS,
    ExcludedElements => parts::EXCLUDED_ELEMENTS,
    /// The `<command>` of `<script_execution>`.
    Command => parts::COMMAND,
    Timeout => parts::TIMEOUT,
    /// The `<inputs>` of `<script_execution>`.
    ScriptInputs => parts::SCRIPT_INPUTS,
    Condition => parts::CONDITION,
    /// An `<arg>` of a `<test>`.
    TestArg => table::TEST_ARG,
    Reply => table::REPLY,
    Cassette => table::CASSETTE,
    Expect => table::EXPECT,
}

/// The entry of `id`.
pub fn element(id: ElementId) -> &'static Element {
    &ELEMENTS[id as usize]
}

/// One meaning of an element name: where it may stand is given by the entries that list
/// it among their children ([`Element::children`]); the roots are [`ROOTS`].
#[derive(Debug, PartialEq)]
pub struct Element {
    pub id: ElementId,
    pub name: &'static str,
    /// One sentence for hover help and the reference.
    pub doc: &'static str,
    /// In the order diagnostics list them ("`<input>` accepts: name, from, type").
    pub attrs: &'static [Attr],
    pub content: Content,
    /// The name of its type in the XML Schema when the schema names one (several
    /// elements may share it: `Slot`, `Inputs`); `None` for a text element's simple type
    /// or a type written inside the element's declaration.
    pub xsd_type: Option<&'static str>,
}

/// What an element holds between its tags.
#[derive(Debug, PartialEq)]
pub enum Content {
    /// Nothing: its attributes say everything (`<output_format type="json"/>`).
    Empty,
    /// Text only, of this kind (`<max_iterations>3</max_iterations>`).
    Text(ValueKind),
    /// Child elements; with text between them when `mixed`.
    Elements { mixed: bool, children: Children },
}

/// Which child elements, how many and in what order.
#[derive(Debug, PartialEq)]
pub enum Children {
    /// A group's elements, together `occurs` times.
    Group(&'static Group, Occurs),
    /// These elements in any order and number (the compiler says which may repeat).
    AnyOf(&'static [ElementId]),
    /// One element, `occurs` times.
    Repeated(ElementId, Occurs),
}

/// A named choice of elements several places share: a task's fields, a body.
#[derive(Debug, PartialEq)]
pub struct Group {
    /// The schema's name for it.
    pub name: &'static str,
    pub elements: &'static [ElementId],
    /// Groups whose elements are also accepted here, under conditions the compiler
    /// checks (only a map task holds a body directly).
    pub nested: &'static [&'static Group],
}

impl Group {
    /// Its own elements' names, in order (not the nested groups').
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.elements.iter().map(|&id| element(id).name)
    }

    /// Its own element of this name.
    pub fn get(&self, name: &str) -> Option<ElementId> {
        self.elements
            .iter()
            .copied()
            .find(|&id| element(id).name == name)
    }
}

/// How many times: `min` to `max` (`None`: any number).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Occurs {
    pub min: u8,
    pub max: Option<u8>,
}

impl Occurs {
    pub const ONE: Occurs = Occurs {
        min: 1,
        max: Some(1),
    };
    pub const OPTIONAL: Occurs = Occurs {
        min: 0,
        max: Some(1),
    };
    pub const ANY: Occurs = Occurs { min: 0, max: None };
    pub const SOME: Occurs = Occurs { min: 1, max: None };
}

#[derive(Debug, PartialEq)]
pub struct Attr {
    pub name: &'static str,
    pub value: ValueKind,
    pub required: bool,
    pub doc: &'static str,
}

/// What a value (an attribute's, or a text element's text) must be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueKind {
    /// Text with `{{ }}` holes.
    Template,
    /// Text taken as written.
    Text,
    /// An expression (`output.approved`).
    Expression,
    /// A type (`{approved: boolean}`, `Review[]`).
    Type,
    /// Parameters, each optionally typed (`diff, limit:number`).
    Params,
    /// A model identifier (`openai:gpt-4o-mini`).
    ModelId,
    /// A name: letters, digits and `_`, not starting with a digit.
    Identifier,
    /// Text that is not only white space.
    NonBlank,
    /// Text of at least one character, white space counting.
    NonEmpty,
    /// A whole number (64 bits).
    Integer,
    /// A whole number in a range.
    Count(&'static Count),
    /// A number in a range.
    Number(&'static Number),
    /// One word of a list.
    Words(&'static WordList),
}

/// A closed list of words, declared once with the Rust type it reads into
/// ([`words::Words`]).
#[derive(Debug, PartialEq)]
pub struct WordList {
    /// The schema's name for it.
    pub xsd_name: &'static str,
    pub doc: Option<&'static str>,
    pub words: &'static [Word],
}

impl WordList {
    /// Every word, aliases included, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.words.iter().map(|w| w.word)
    }

    pub fn contains(&self, word: &str) -> bool {
        self.words.iter().any(|w| w.word == word)
    }
}

#[derive(Debug, PartialEq)]
pub struct Word {
    pub word: &'static str,
    pub doc: Option<&'static str>,
    /// Another name of this word (`full_output` of `full`).
    pub alias_of: Option<&'static str>,
}

impl Element {
    pub fn attr(&self, name: &str) -> Option<&'static Attr> {
        let attrs: &'static [Attr] = self.attrs;
        attrs.iter().find(|a| a.name == name)
    }

    pub fn attr_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.attrs.iter().map(|a| a.name)
    }

    /// The kind of its text, when it holds text only.
    pub fn text(&self) -> Option<ValueKind> {
        match self.content {
            Content::Text(kind) => Some(kind),
            _ => None,
        }
    }

    /// The children diagnostics name and [`Element::child`] finds, in order: a group's
    /// own elements, not its nested groups'.
    pub fn children(&'static self) -> &'static [ElementId] {
        match &self.content {
            Content::Elements { children, .. } => match children {
                Children::Group(g, _) => g.elements,
                Children::AnyOf(ids) => ids,
                Children::Repeated(id, _) => std::slice::from_ref(id),
            },
            _ => &[],
        }
    }

    /// The groups nested in its group: elements it accepts under conditions.
    pub fn nested(&'static self) -> &'static [&'static Group] {
        match &self.content {
            Content::Elements {
                children: Children::Group(g, _),
                ..
            } => g.nested,
            _ => &[],
        }
    }

    pub fn child_names(&'static self) -> impl Iterator<Item = &'static str> {
        self.children().iter().map(|&id| element(id).name)
    }

    /// Its child of this name.
    pub fn child(&'static self, name: &str) -> Option<ElementId> {
        self.children()
            .iter()
            .copied()
            .find(|&id| element(id).name == name)
    }
}

/// The elements a file's root may be.
pub const ROOTS: &[ElementId] = &[ElementId::Task, ElementId::Template, ElementId::Library];

/// Every meaning of an element name (`input`: of `<inputs>` and of
/// `<context_relevance>`); where one stands, [`Element::child`] of its parent tells.
pub fn named(name: &str) -> impl Iterator<Item = &'static Element> + '_ {
    ELEMENTS.iter().filter(move |e| e.name == name)
}

/// Whether `name` is an element of the language anywhere: a tag of another name inside
/// text may be text that a `<` made a tag of.
pub fn is_element(name: &str) -> bool {
    named(name).next().is_some()
}
