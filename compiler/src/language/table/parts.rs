//! A task's fields: prompts, model, switches and counts, then its nested parts: output
//! format, context management and assembly, file paths, inputs, context relevance,
//! script execution and a loop's termination condition.

use super::{any_of, attr, group, repeated, required, text};
use crate::language::words::{
    AccumulationFormat, FilePathsSource, FreshContext, OnMaxIterations, OutputKind, Words, BOOLEAN,
    INHERIT_CONTEXT as INHERIT_WORDS, PROVIDER as PROVIDERS,
};
use crate::language::{words, Content, Element, ElementId as E, Occurs, ValueKind};
use ValueKind::*;

pub(crate) const DESCRIPTION: Element = text(
    E::Description,
    "description",
    Template,
    "The human-facing summary of the task; its prompt when there are no instructions.",
);
pub(crate) const INSTRUCTIONS: Element = text(
    E::Instructions,
    "instructions",
    Template,
    "The prompt sent to the model, with {{ }} holes.",
);
pub(crate) const SYSTEM: Element = text(
    E::System,
    "system",
    Template,
    "The system prompt (the run's default when not given).",
);

/// The model and its sampling settings (DESIGN §12).
pub(crate) const MODEL: Element = Element {
    id: E::Model,
    name: "model",
    doc: "The model, `provider:model` or a known name; empty keeps the run's model. Attributes set sampling.",
    attrs: &[
        attr(
            "temperature",
            Number(&words::TEMPERATURE),
            "Sampling temperature, 0 to 2.",
        ),
        attr(
            "max_tokens",
            Count(&words::POSITIVE),
            "The most tokens the reply may have; a longer reply fails the task.",
        ),
        attr("top_p", Number(&words::TOP_P), "Nucleus sampling, 0 to 1."),
        attr("seed", Integer, "The sampling seed, a whole number."),
        attr(
            "stop",
            NonEmpty,
            "The text at which the reply ends, exactly as written, white space included (stop=\"&#10;\" stops at a newline); several are a JSON array of up to 4: stop='[\"\\n\", \"Observation:\"]'.",
        ),
    ],
    content: Content::Text(ModelId),
    xsd_type: Some("Model"),
};

pub(crate) const PROVIDER: Element = text(
    E::Provider,
    "provider",
    Words(PROVIDERS),
    "The provider the task's model is asked through: openai or anthropic.",
);
pub(crate) const CRITERIA: Element = text(
    E::Criteria,
    "criteria",
    Template,
    "What a good result is, kept in the task's metadata.",
);
pub(crate) const OUTPUT_SLOT: Element = text(
    E::OutputSlot,
    "output_slot",
    Text,
    "The name the task's result is stored under for later steps.",
);
pub(crate) const INPUT_SOURCE: Element = text(
    E::InputSource,
    "input_source",
    Text,
    "The name of the earlier result the task reads.",
);
pub(crate) const MANUAL_XML: Element = text(
    E::ManualXml,
    "manual_xml",
    Words(BOOLEAN),
    "true: the task's XML is written by hand and kept as written.",
);
pub(crate) const DISABLE_REPARSING: Element = text(
    E::DisableReparsing,
    "disable_reparsing",
    Words(BOOLEAN),
    "true: the task's reply is not parsed again as a task.",
);
pub(crate) const MAX_ITERATIONS: Element = text(
    E::MaxIterations,
    "max_iterations",
    Count(&words::POSITIVE),
    "director_evaluator_loop: the most rounds (a positive whole number).",
);
pub(crate) const ON_MAX_ITERATIONS: Element = text(
    E::OnMaxIterations,
    "on_max_iterations",
    Words(OnMaxIterations::LIST),
    "director_evaluator_loop: accept the last result or fail when the rounds run out.",
);
pub(crate) const SUBTASKS: Element = text(
    E::Subtasks,
    "subtasks",
    Words(FreshContext::LIST),
    "enabled: the model is offered the spawn_subtask tool.",
);
pub(crate) const INITIAL_VALUE: Element = text(
    E::InitialValue,
    "initial_value",
    Template,
    "reduce: the accumulator's first value.",
);

pub(crate) const OUTPUT_FORMAT: Element = Element {
    id: E::OutputFormat,
    name: "output_format",
    doc: "How the reply is read: type json or text, a schema type, retries.",
    attrs: &[
        required("type", Words(OutputKind::LIST), "json or text."),
        attr(
            "schema",
            Type,
            "json: the reply's type, e.g. schema=\"{approved: boolean}\" or a declared type's name.",
        ),
        attr(
            "retries",
            Count(&words::RETRIES),
            "json: how many times a reply that does not fit is asked again (default 1).",
        ),
    ],
    content: Content::Empty,
    xsd_type: Some("OutputFormat"),
};

pub(crate) const CONTEXT_MANAGEMENT: Element = Element {
    id: E::ContextManagement,
    name: "context_management",
    doc: "What context the task inherits, accumulates and searches for.",
    attrs: &[],
    content: any_of(&[
        E::InheritContext,
        E::AccumulateData,
        E::AccumulationFormat,
        E::FreshContext,
    ]),
    xsd_type: Some("ContextManagement"),
};
pub(crate) const INHERIT_CONTEXT: Element = text(
    E::InheritContext,
    "inherit_context",
    Words(INHERIT_WORDS),
    "What the task sees of its parent's context: full, none or subset.",
);
pub(crate) const ACCUMULATE_DATA: Element = text(
    E::AccumulateData,
    "accumulate_data",
    Words(BOOLEAN),
    "true: each step sees what the earlier steps produced.",
);
pub(crate) const ACCUMULATION_FORMAT: Element = text(
    E::AccumulationFormat,
    "accumulation_format",
    Words(AccumulationFormat::LIST),
    "What is accumulated of each step: full (full_output) or minimal (notes_only).",
);
pub(crate) const FRESH_CONTEXT: Element = text(
    E::FreshContext,
    "fresh_context",
    Words(FreshContext::LIST),
    "enabled: relevant context is searched for anew.",
);

pub(crate) const FILE_PATHS: Element = Element {
    id: E::FilePaths,
    name: "file_paths",
    doc: "Files whose contents are given to the task: paths, a command, or a description.",
    attrs: &[attr(
        "source",
        Words(FilePathsSource::LIST),
        "Which child names the files: literal, command or description.",
    )],
    content: any_of(&[E::Path, E::FilePathsCommand, E::FilePathsDescription]),
    xsd_type: Some("FilePaths"),
};
pub(crate) const PATH: Element = text(
    E::Path,
    "path",
    Template,
    "A file's path, relative to the workspace.",
);
pub(crate) const FILE_PATHS_COMMAND: Element = text(
    E::FilePathsCommand,
    "command",
    Template,
    "A command that prints the paths, one a line.",
);
pub(crate) const FILE_PATHS_DESCRIPTION: Element = text(
    E::FilePathsDescription,
    "description",
    Template,
    "What files to look for in the workspace.",
);

/// `<inputs>` of a task and of a script: one type, two meanings.
const fn inputs(id: E, doc: &'static str) -> Element {
    Element {
        id,
        name: "inputs",
        doc,
        attrs: &[],
        content: repeated(E::Input, Occurs::ANY),
        xsd_type: Some("Inputs"),
    }
}

pub(crate) const INPUTS: Element = inputs(
    E::Inputs,
    "The task's inputs: declared, bound to a variable, or computed by a nested task.",
);
pub(crate) const INPUT: Element = Element {
    id: E::Input,
    name: "input",
    doc: "An input: its documentation or literal value as text, from=\"variable\", or one nested task, call or cond.",
    attrs: &[
        required("name", Identifier, "The input's name, unique in the task."),
        attr(
            "from",
            Identifier,
            "The caller's variable whose value the input takes.",
        ),
        attr(
            "type",
            Type,
            "The input's type, e.g. type=\"number\" or type=\"Review[]\".",
        ),
    ],
    content: group(&super::BODY, Occurs::OPTIONAL, true),
    xsd_type: Some("Input"),
};

pub(crate) const CONTEXT_RELEVANCE: Element = Element {
    id: E::ContextRelevance,
    name: "context_relevance",
    doc: "Which inputs count when context is searched for.",
    attrs: &[],
    content: repeated(E::RelevanceInput, Occurs::ANY),
    xsd_type: Some("ContextRelevance"),
};
pub(crate) const RELEVANCE_INPUT: Element = Element {
    id: E::RelevanceInput,
    name: "input",
    doc: "Whether one input counts when context is searched for.",
    attrs: &[
        required("name", Identifier, "The input's name."),
        required("include", Words(BOOLEAN), "true or false."),
    ],
    content: Content::Empty,
    xsd_type: None,
};

pub(crate) const CONTEXT_ASSEMBLY: Element = Element {
    id: E::ContextAssembly,
    name: "context_assembly",
    doc: "What context to put first, second, and leave out.",
    attrs: &[],
    content: any_of(&[
        E::PrimaryElements,
        E::SecondaryElements,
        E::ExcludedElements,
    ]),
    xsd_type: Some("ContextAssembly"),
};
pub(crate) const PRIMARY_ELEMENTS: Element = text(
    E::PrimaryElements,
    "primary_elements",
    Template,
    "What context to put first.",
);
pub(crate) const SECONDARY_ELEMENTS: Element = text(
    E::SecondaryElements,
    "secondary_elements",
    Template,
    "What context to add when there is room.",
);
pub(crate) const EXCLUDED_ELEMENTS: Element = text(
    E::ExcludedElements,
    "excluded_elements",
    Template,
    "What context to leave out.",
);

pub(crate) const SCRIPT_EXECUTION: Element = Element {
    id: E::ScriptExecution,
    name: "script_execution",
    doc: "script: the command to run, its timeout and inputs.",
    attrs: &[],
    content: any_of(&[E::Command, E::Timeout, E::ScriptInputs]),
    xsd_type: Some("ScriptExecution"),
};
pub(crate) const COMMAND: Element = text(
    E::Command,
    "command",
    Template,
    "The command line; a {{ }} hole is quoted for its place in it.",
);
pub(crate) const TIMEOUT: Element = text(
    E::Timeout,
    "timeout",
    Count(&words::POSITIVE),
    "The most seconds the command may run.",
);
pub(crate) const SCRIPT_INPUTS: Element = inputs(
    E::ScriptInputs,
    "The inputs given to the command (environment and stdin).",
);

pub(crate) const TERMINATION_CONDITION: Element = Element {
    id: E::TerminationCondition,
    name: "termination_condition",
    doc: "director_evaluator_loop: the expression that ends the loop.",
    attrs: &[],
    content: Content::Elements {
        mixed: true,
        children: crate::language::Children::Repeated(E::Condition, Occurs::OPTIONAL),
    },
    xsd_type: Some("TerminationCondition"),
};
pub(crate) const CONDITION: Element = text(
    E::Condition,
    "condition",
    Expression,
    "The expression that ends the loop, e.g. evaluation.success.",
);
