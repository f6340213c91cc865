//! Roots, tasks and the places that hold one: slots, steps, bodies, calls, conds.

use super::{attr, group, repeated, required};
use crate::language::words::{Otherwise, TaskType, Words};
use crate::language::{words, Attr, Content, Element, ElementId as E, Group, Occurs, ValueKind};
use ValueKind::*;

const TYPE: Attr = attr(
    "type",
    Words(TaskType::LIST),
    "What the task does: atomic (default), sequential, reduce, script, director_evaluator_loop, map.",
);
const SUBTYPE: Attr = attr(
    "subtype",
    Text,
    "A free label of the task's kind, kept in its metadata.",
);
const REF: Attr = attr(
    "ref",
    Identifier,
    "Run the template of this name, its parameters taken from `inputs`.",
);
const OVER: Attr = attr(
    "over",
    Expression,
    "map and reduce: the expression of the array to go over, e.g. over=\"tickets\".",
);
const AS: Attr = attr(
    "as",
    Identifier,
    "map and reduce: the name of the current element (default `item`).",
);
const CONCURRENCY: Attr = attr(
    "concurrency",
    Count(&words::CONCURRENCY),
    "map: how many bodies run at once (default: the provider's cap).",
);

/// The attributes of a slot written as a task (`<director type="map" ...>`): a task's
/// but its name. The schema calls them `SlotAttributes`.
pub const SLOT_ATTRS: &[Attr] = &[TYPE, SUBTYPE, REF, OVER, AS, CONCURRENCY];

/// Every child a task accepts, in any order; the compiler says which ones its type
/// needs, which are given twice, and that only a map holds a body directly.
pub static TASK_CONTENT: Group = Group {
    name: "TaskContent",
    elements: &[
        E::Description,
        E::Instructions,
        E::System,
        E::Model,
        E::Provider,
        E::Criteria,
        E::OutputSlot,
        E::InputSource,
        E::OutputFormat,
        E::ContextManagement,
        E::FilePaths,
        E::Steps,
        E::Inputs,
        E::ContextRelevance,
        E::ContextAssembly,
        E::ManualXml,
        E::DisableReparsing,
        E::MaxIterations,
        E::OnMaxIterations,
        E::Subtasks,
        E::Director,
        E::Evaluator,
        E::ScriptExecution,
        E::TerminationCondition,
        E::InitialValue,
        E::InnerTask,
        E::ReductionTask,
    ],
    nested: &[&BODY],
};

/// One task, call or cond: a step, a template's body, a case's body, an input's value.
pub static BODY: Group = Group {
    name: "Body",
    elements: &[E::Task, E::Call, E::Cond],
    nested: &[],
};

const TASK_FIELDS: Content = group(&TASK_CONTENT, Occurs::ANY, false);

pub(crate) const TASK: Element = Element {
    id: E::Task,
    name: "task",
    doc: "A task: an LLM call, a script, or a composition of tasks (type, default atomic).",
    attrs: &[
        TYPE,
        SUBTYPE,
        REF,
        attr(
            "name",
            Identifier,
            "The entry point's name (a root task is named after its file when not given).",
        ),
        OVER,
        AS,
        CONCURRENCY,
    ],
    content: TASK_FIELDS,
    xsd_type: Some("Task"),
};

pub(crate) const LIBRARY_TASK: Element = Element {
    id: E::LibraryTask,
    name: "task",
    doc: "A named task: an entry point (`tvm run --entry NAME`) that callers may `ref`.",
    attrs: &[
        TYPE,
        SUBTYPE,
        REF,
        required(
            "name",
            Identifier,
            "The entry point's name: how callers and `tvm run --entry` find it.",
        ),
        OVER,
        AS,
        CONCURRENCY,
    ],
    content: TASK_FIELDS,
    xsd_type: Some("NamedTask"),
};

/// A slot holds one task, call or cond, or is itself written as a task (without a name).
const fn slot(id: E, name: &'static str, doc: &'static str) -> Element {
    Element {
        id,
        name,
        doc,
        attrs: SLOT_ATTRS,
        content: TASK_FIELDS,
        xsd_type: Some("Slot"),
    }
}

pub(crate) const DIRECTOR: Element = slot(
    E::Director,
    "director",
    "director_evaluator_loop: the task that produces a result each round.",
);
pub(crate) const EVALUATOR: Element = slot(
    E::Evaluator,
    "evaluator",
    "director_evaluator_loop: the task that judges each result.",
);
pub(crate) const INNER_TASK: Element = slot(
    E::InnerTask,
    "inner_task",
    "reduce: the task run on each input.",
);
pub(crate) const REDUCTION_TASK: Element = slot(
    E::ReductionTask,
    "reduction_task",
    "reduce: the task that folds each result into the accumulator.",
);

pub(crate) const TEMPLATE: Element = Element {
    id: E::Template,
    name: "template",
    doc: "A function template: a named body that `call` and `task ref` run with arguments.",
    attrs: &[
        required(
            "name",
            Identifier,
            "The template's name, unique in the program.",
        ),
        attr(
            "params",
            Params,
            "The parameters, comma-separated, each optionally typed: params=\"diff, limit:number\".",
        ),
        attr("returns", Type, "The type of the template's result."),
    ],
    content: group(&BODY, Occurs::ONE, false),
    xsd_type: Some("Template"),
};

pub(crate) const LIBRARY: Element = Element {
    id: E::Library,
    name: "library",
    doc: "A file of templates, named tasks, named types and tests, in any order.",
    attrs: &[],
    content: super::any_of(&[E::Template, E::LibraryTask, E::TypeDecl, E::Test]),
    xsd_type: None,
};

pub(crate) const STEPS: Element = Element {
    id: E::Steps,
    name: "steps",
    doc: "sequential: the tasks, calls and conds run in order.",
    attrs: &[],
    content: group(&BODY, Occurs::ANY, false),
    xsd_type: Some("Steps"),
};

pub(crate) const CALL: Element = Element {
    id: E::Call,
    name: "call",
    doc: "Run a template with arguments.",
    attrs: &[required(
        "template",
        Identifier,
        "The name of the template to run.",
    )],
    content: repeated(E::CallArg, Occurs::ANY),
    xsd_type: Some("Call"),
};

pub(crate) const CALL_ARG: Element = Element {
    id: E::CallArg,
    name: "arg",
    doc: "An argument, by position or by name: text with {{ }} holes, a variable's name, or one task, call or cond.",
    attrs: &[attr(
        "name",
        Identifier,
        "The parameter this argument gives (by position when not given).",
    )],
    content: group(&BODY, Occurs::OPTIONAL, true),
    xsd_type: Some("CallArgument"),
};

pub(crate) const COND: Element = Element {
    id: E::Cond,
    name: "cond",
    doc: "Run the body of the first case whose test holds.",
    attrs: &[attr(
        "otherwise",
        Words(Otherwise::LIST),
        "When no case holds: fail (the task fails with input_validation_failure, naming the value) or empty (it completes empty, said on purpose); without it, it completes empty, and a cond that misses strings of a union gets a warning.",
    )],
    content: repeated(E::Case, Occurs::SOME),
    xsd_type: Some("Cond"),
};

pub(crate) const CASE: Element = Element {
    id: E::Case,
    name: "case",
    doc: "A test and the task, call or cond run when it holds.",
    attrs: &[required(
        "test",
        Expression,
        "The expression that chooses this case, e.g. test=\"output.approved\"; \"true\" always holds.",
    )],
    content: group(&BODY, Occurs::ONE, false),
    xsd_type: Some("Case"),
};
