//! A task's fields that hold text or a word: prompts, model, switches, counts.

use super::{attr, text};
use crate::language::words::{
    FreshContext, OnMaxIterations, Words, BOOLEAN, PROVIDER as PROVIDERS,
};
use crate::language::{values, Content, Element, ElementId as E, ValueKind};
use ValueKind::*;

pub const DESCRIPTION: Element = text(
    E::Description,
    "description",
    Template,
    "The human-facing summary of the task; its prompt when there are no instructions.",
);
pub const INSTRUCTIONS: Element = text(
    E::Instructions,
    "instructions",
    Template,
    "The prompt sent to the model, with {{ }} holes.",
);
pub const SYSTEM: Element = text(
    E::System,
    "system",
    Template,
    "The system prompt (the run's default when not given).",
);

/// The model and its sampling settings (DESIGN §12).
pub const MODEL: Element = Element {
    id: E::Model,
    name: "model",
    doc: "The model, `provider:model` or a known name; empty keeps the run's model. Attributes set sampling.",
    attrs: &[
        attr(
            "temperature",
            Number(&values::TEMPERATURE),
            "Sampling temperature, 0 to 2.",
        ),
        attr(
            "max_tokens",
            Count(&values::POSITIVE),
            "The most tokens the reply may have; a longer reply fails the task.",
        ),
        attr("top_p", Number(&values::TOP_P), "Nucleus sampling, 0 to 1."),
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

pub const PROVIDER: Element = text(
    E::Provider,
    "provider",
    Words(PROVIDERS),
    "The provider the task's model is asked through: openai or anthropic.",
);
pub const CRITERIA: Element = text(
    E::Criteria,
    "criteria",
    Template,
    "What a good result is, kept in the task's metadata.",
);
pub const OUTPUT_SLOT: Element = text(
    E::OutputSlot,
    "output_slot",
    Text,
    "The name the task's result is stored under for later steps.",
);
pub const INPUT_SOURCE: Element = text(
    E::InputSource,
    "input_source",
    Text,
    "The name of the earlier result the task reads.",
);
pub const MANUAL_XML: Element = text(
    E::ManualXml,
    "manual_xml",
    Words(BOOLEAN),
    "true: the task's XML is written by hand and kept as written.",
);
pub const DISABLE_REPARSING: Element = text(
    E::DisableReparsing,
    "disable_reparsing",
    Words(BOOLEAN),
    "true: the task's reply is not parsed again as a task.",
);
pub const MAX_ITERATIONS: Element = text(
    E::MaxIterations,
    "max_iterations",
    Count(&values::POSITIVE),
    "director_evaluator_loop: the most rounds (a positive whole number).",
);
pub const ON_MAX_ITERATIONS: Element = text(
    E::OnMaxIterations,
    "on_max_iterations",
    Words(OnMaxIterations::LIST),
    "director_evaluator_loop: accept the last result or fail when the rounds run out.",
);
pub const SUBTASKS: Element = text(
    E::Subtasks,
    "subtasks",
    Words(FreshContext::LIST),
    "enabled: the model is offered the spawn_subtask tool.",
);
pub const INITIAL_VALUE: Element = text(
    E::InitialValue,
    "initial_value",
    Template,
    "reduce: the accumulator's first value.",
);
