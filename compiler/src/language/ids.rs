//! Every element of the table by its [`ElementId`]: one line per meaning, pairing the
//! id with its entry, so that neither can be added without the other.

use super::table::{fields, library, parts, tasks};
use super::Element;

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
    TypeDecl => library::TYPE_DECL,
    Test => library::TEST,
    Description => fields::DESCRIPTION,
    Instructions => fields::INSTRUCTIONS,
    System => fields::SYSTEM,
    Model => fields::MODEL,
    Provider => fields::PROVIDER,
    Criteria => fields::CRITERIA,
    OutputSlot => fields::OUTPUT_SLOT,
    InputSource => fields::INPUT_SOURCE,
    OutputFormat => parts::OUTPUT_FORMAT,
    ContextManagement => parts::CONTEXT_MANAGEMENT,
    FilePaths => parts::FILE_PATHS,
    Steps => tasks::STEPS,
    /// A task's `<inputs>`.
    Inputs => parts::INPUTS,
    ContextRelevance => parts::CONTEXT_RELEVANCE,
    ContextAssembly => parts::CONTEXT_ASSEMBLY,
    ManualXml => fields::MANUAL_XML,
    DisableReparsing => fields::DISABLE_REPARSING,
    MaxIterations => fields::MAX_ITERATIONS,
    OnMaxIterations => fields::ON_MAX_ITERATIONS,
    Subtasks => fields::SUBTASKS,
    Director => tasks::DIRECTOR,
    Evaluator => tasks::EVALUATOR,
    ScriptExecution => parts::SCRIPT_EXECUTION,
    TerminationCondition => parts::TERMINATION_CONDITION,
    InitialValue => fields::INITIAL_VALUE,
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
    TestArg => library::TEST_ARG,
    Reply => library::REPLY,
    Cassette => library::CASSETTE,
    Expect => library::EXPECT,
}

/// The entry of `id`.
pub fn element(id: ElementId) -> &'static Element {
    &ELEMENTS[id as usize]
}
