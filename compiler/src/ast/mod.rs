//! Stage 3: the syntax tree of a program, built from the XML trees.
//!
//! Every node carries the [`Span`] it was read from. The tree keeps what the user wrote
//! (an absent field stays `None`); defaults are applied by the checker and the IR.

mod build;
mod dump;
mod expr;
mod fields;
mod head;
mod lists;
mod parts;
pub(crate) mod schema;
mod testcase;
mod types;

pub use build::Built;
pub(crate) use build::{build_entries, build_module, build_module_with, is_identifier};
pub use dump::dump_program;
pub use expr::{Arg, BinOp, CmpOp, Expr, ExprKind, Literal, Segment, TextPart, TextTemplate};
pub use head::Head;
pub(crate) use schema::{did_you_mean, did_you_mean_preferring};
pub use testcase::{Check, Expect, Reply, TestArg, TestCase, TestValue};
pub(crate) use types::{apply_resolved, resolve as resolve_types, split_top_level};
pub use types::{Declared, Resolved, TypeDecl};

/// The enumerations of the tree are the language table's word lists.
pub use crate::language::{AccumulationFormat, FreshContext, Otherwise, OutputKind, TaskType};
use crate::source::{FileId, Span, Spanned};
use tv_stdlib::types::Type;

pub type Ident = Spanned<String>;

#[derive(Clone, Debug, Default)]
pub struct Program {
    pub modules: Vec<Module>,
    /// The declared types (`<type name>`), in file and document order, once resolved.
    pub types: Vec<(Ident, Type)>,
}

/// The definitions of one file.
#[derive(Clone, Debug)]
pub struct Module {
    pub file: FileId,
    /// A standard template file.
    pub std: bool,
    pub items: Vec<Item>,
    /// When its items are not held (`tvc compile` of a large program builds them
    /// again from the file a window at a time, `crate::driver`): what the later
    /// stages read of each item, in order.
    pub heads: Option<Vec<Head>>,
    /// Its `<type>` declarations and the types that name one, until they are resolved.
    pub types: Declared,
    /// Its `<test>` elements, which `tvm test` runs; they are not part of the bundle.
    pub tests: Vec<TestCase>,
}

#[derive(Clone, Debug)]
pub enum Item {
    /// `<template name params returns>`.
    Template(Template),
    /// A named `<task>` in a library, or a root `<task>` named after its file.
    Task(Box<NamedTask>),
}

impl Item {
    pub fn name(&self) -> &Ident {
        match self {
            Item::Template(t) => &t.name,
            Item::Task(t) => &t.name,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Template {
    pub name: Ident,
    pub params: Vec<Param>,
    pub returns: Option<Spanned<Type>>,
    pub body: Body,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Param {
    pub name: Ident,
    pub ty: Option<Spanned<Type>>,
}

#[derive(Clone, Debug)]
pub struct NamedTask {
    pub name: Ident,
    /// False when the name was taken from the file stem.
    pub explicit_name: bool,
    pub task: Task,
}

/// What may stand wherever a task may.
#[derive(Clone, Debug)]
pub enum Body {
    Task(Box<Task>),
    Call(Call),
    Cond(Cond),
    /// Nothing usable was written here; an error has been reported.
    Missing(Span),
}

impl Body {
    pub fn span(&self) -> Span {
        match self {
            Body::Task(t) => t.span,
            Body::Call(c) => c.span,
            Body::Cond(c) => c.span,
            Body::Missing(s) => *s,
        }
    }
}

/// `inherit_context`: the bundle's own type, so what a template states is what runs.
pub use tv_vm::bundle::Inherit as InheritContext;

#[derive(Clone, Debug, Default)]
pub struct ContextManagement {
    pub inherit_context: Option<Spanned<InheritContext>>,
    pub accumulate_data: Option<Spanned<bool>>,
    pub accumulation_format: Option<Spanned<AccumulationFormat>>,
    pub fresh_context: Option<Spanned<FreshContext>>,
    pub span: Span,
}

/// The sampling attributes of `<model>`, as written (ranges already checked).
#[derive(Clone, Debug, Default)]
pub struct ModelSettings {
    pub temperature: Option<Spanned<f64>>,
    pub max_tokens: Option<Spanned<u64>>,
    pub top_p: Option<Spanned<f64>>,
    pub seed: Option<Spanned<i64>>,
    /// `stop`: one to four sequences, as written.
    pub stop: Option<Spanned<Vec<String>>>,
    /// The `<model>` element, when there is one.
    pub span: Option<Span>,
}

#[derive(Clone, Debug)]
pub struct OutputFormat {
    pub kind: Spanned<OutputKind>,
    pub schema: Option<Spanned<Type>>,
    /// `retries="N"`: how many times a reply that does not fit is asked again.
    pub retries: Option<Spanned<u32>>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum FilePaths {
    Literal(Vec<TextTemplate>),
    Command(TextTemplate),
    Description(TextTemplate),
}

#[derive(Clone, Debug)]
pub struct ContextAssembly {
    pub primary: Option<TextTemplate>,
    pub secondary: Option<TextTemplate>,
    pub excluded: Option<TextTemplate>,
}

#[derive(Clone, Debug)]
pub struct ContextRelevance {
    pub name: Ident,
    pub include: Spanned<bool>,
}

#[derive(Clone, Debug)]
pub struct Input {
    pub name: Ident,
    /// `type="T"` on a declared input: the parameter's type.
    pub ty: Option<Spanned<Type>>,
    pub from: Option<Ident>,
    pub value: InputValue,
    pub span: Span,
}

/// In a declaration, an input the caller passes: not bound `from` a variable and not
/// computed by a nested task.
pub(crate) fn is_parameter(i: &Input) -> bool {
    i.from.is_none() && !matches!(i.value, InputValue::Body(_))
}

/// The inputs of an atomic task that none of its prompt texts (`instructions`,
/// `description`, `system`) names: they reach the model as labelled sections after the
/// instructions (DESIGN §12), and the checker says so. A `ref` task's inputs are its
/// callee's arguments, not prompt inputs.
pub(crate) fn unreferenced_inputs(task: &Task) -> Vec<&Input> {
    if task.kind.node != TaskType::Atomic || task.reference.is_some() {
        return Vec::new();
    }
    let mut named = Vec::new();
    for text in [&task.instructions, &task.description, &task.system]
        .into_iter()
        .flatten()
    {
        text.exprs().for_each(|e| e.variables(&mut named));
    }
    // An input that another input reads (`from`, or a nested task's text) is used.
    for input in &task.inputs {
        input_variables(input, &mut named);
    }
    let named: rustc_hash::FxHashSet<&str> = named.into_iter().collect();
    task.inputs
        .iter()
        .filter(|i| !named.contains(i.name.node.as_str()))
        .collect()
}

/// The variables an input reads: its `from`, or what its value's texts name, nested
/// tasks, calls and conditions included.
fn input_variables<'a>(input: &'a Input, out: &mut Vec<&'a str>) {
    if let Some(from) = &input.from {
        out.push(&from.node);
    }
    match &input.value {
        InputValue::Text(t) => t.exprs().for_each(|e| e.variables(out)),
        InputValue::Body(b) => body_variables(b, out),
        InputValue::Empty => {}
    }
}

fn body_variables<'a>(body: &'a Body, out: &mut Vec<&'a str>) {
    match body {
        Body::Task(t) => {
            let texts = [&t.instructions, &t.description, &t.system];
            for text in texts.into_iter().flatten() {
                text.exprs().for_each(|e| e.variables(out));
            }
            t.inputs.iter().for_each(|i| input_variables(i, out));
        }
        Body::Call(c) => {
            for arg in &c.args {
                match &arg.value {
                    ArgValue::Word(w) => out.push(&w.node),
                    ArgValue::Text(t) => t.exprs().for_each(|e| e.variables(out)),
                    ArgValue::Body(b) => body_variables(b, out),
                }
            }
        }
        Body::Cond(c) => {
            for case in &c.cases {
                case.test.variables(out);
                body_variables(&case.body, out);
            }
        }
        Body::Missing(_) => {}
    }
}

#[derive(Clone, Debug)]
pub enum InputValue {
    Empty,
    /// Documentation in a declaration; a literal value in `reduce`.
    Text(TextTemplate),
    Body(Body),
}

#[derive(Clone, Debug)]
pub struct ScriptExecution {
    pub command: Option<TextTemplate>,
    pub timeout: Option<Spanned<u64>>,
    pub inputs: Vec<Input>,
    pub span: Span,
}

/// One `<task>` with every field the seeds define.
#[derive(Clone, Debug)]
pub struct Task {
    pub span: Span,
    pub kind: Spanned<TaskType>,
    /// False when `type` was not written (atomic by default).
    pub explicit_type: bool,
    /// `type` names no operator (reported); the type-specific checks stay quiet.
    pub type_invalid: bool,
    pub subtype: Option<Box<Ident>>,
    pub reference: Option<Ident>,
    pub description: Option<TextTemplate>,
    pub instructions: Option<TextTemplate>,
    pub system: Option<TextTemplate>,
    pub model: Option<Spanned<String>>,
    /// The sampling attributes of `<model>` (DESIGN §12), when it has any: most
    /// tasks have none, and a task's fields are boxed where rare, so that a library of
    /// many small templates stays small in memory.
    pub model_settings: Option<Box<ModelSettings>>,
    pub provider: Option<Box<Spanned<String>>>,
    pub criteria: Option<Box<TextTemplate>>,
    pub output_slot: Option<Box<Spanned<String>>>,
    pub input_source: Option<Box<Spanned<String>>>,
    pub output_format: Option<Box<OutputFormat>>,
    pub context: Option<Box<ContextManagement>>,
    pub file_paths: Option<Box<Spanned<FilePaths>>>,
    pub steps: Option<Spanned<Vec<Body>>>,
    pub inputs: Vec<Input>,
    pub context_relevance: Vec<ContextRelevance>,
    pub context_assembly: Option<Box<ContextAssembly>>,
    pub manual_xml: Option<Spanned<bool>>,
    pub disable_reparsing: Option<Spanned<bool>>,
    pub max_iterations: Option<Spanned<u64>>,
    /// `<on_max_iterations>`: `true` for `accept`, `false` for `fail` (the default).
    pub on_max_iterations: Option<Spanned<bool>>,
    /// `<subtasks>`: `true` for `enabled`; the spawning tool is offered only then.
    pub subtasks: Option<Spanned<bool>>,
    pub director: Option<Box<Body>>,
    pub evaluator: Option<Box<Body>>,
    pub script: Option<Box<ScriptExecution>>,
    pub termination: Option<Box<Expr>>,
    pub initial_value: Option<Box<TextTemplate>>,
    pub inner_task: Option<Box<Body>>,
    pub reduction_task: Option<Box<Body>>,
    /// `over="EXPR"` of a map or reduce: the list it iterates over.
    pub over: Option<Box<Expr>>,
    /// `as="NAME"` of a map: the name of the item in its body (default `item`).
    pub item_name: Option<Box<Ident>>,
    /// `concurrency="N"` of a map or a reduce `over` a list: bodies running at once.
    pub concurrency: Option<Spanned<u16>>,
    /// The one `<task>`, `<call>` or `<cond>` inside a map: its body.
    pub map_body: Option<Box<Body>>,
}

/// The name a map's item has in its body when `as` does not give one.
pub(crate) const DEFAULT_ITEM: &str = "item";

impl Task {
    /// A reduce over the values its `<inputs>` list: those inputs are what it
    /// reduces, not parameters. (A reduce `over` a list has inputs like any task.)
    pub fn reduces_inputs(&self) -> bool {
        self.kind.node == TaskType::Reduce && self.over.is_none()
    }

    /// The slots that hold one body each, by the name a listing gives them (`body` for
    /// a map's). Walkers over a task's children go through this list, so none of them
    /// can leave a slot out.
    pub fn slots(&self) -> [(&'static str, Option<&Body>); 5] {
        [
            ("director", self.director.as_deref()),
            ("evaluator", self.evaluator.as_deref()),
            ("inner_task", self.inner_task.as_deref()),
            ("reduction_task", self.reduction_task.as_deref()),
            ("body", self.map_body.as_deref()),
        ]
    }

    /// [`Task::slots`], to change their bodies.
    pub fn slots_mut(&mut self) -> [Option<&mut Body>; 5] {
        [
            self.director.as_deref_mut(),
            self.evaluator.as_deref_mut(),
            self.inner_task.as_deref_mut(),
            self.reduction_task.as_deref_mut(),
            self.map_body.as_deref_mut(),
        ]
    }

    /// The sampling attributes of its `<model>` (none set when it has no `<model>`).
    pub fn model_settings(&self) -> &ModelSettings {
        static NONE: ModelSettings = ModelSettings {
            temperature: None,
            max_tokens: None,
            top_p: None,
            seed: None,
            stop: None,
            span: None,
        };
        self.model_settings.as_deref().unwrap_or(&NONE)
    }

    pub fn new(span: Span) -> Self {
        Task {
            span,
            kind: Spanned::new(TaskType::Atomic, span),
            explicit_type: false,
            type_invalid: false,
            subtype: None,
            reference: None,
            description: None,
            instructions: None,
            system: None,
            model: None,
            model_settings: None,
            provider: None,
            criteria: None,
            output_slot: None,
            input_source: None,
            output_format: None,
            context: None,
            file_paths: None,
            steps: None,
            inputs: Vec::new(),
            context_relevance: Vec::new(),
            context_assembly: None,
            manual_xml: None,
            disable_reparsing: None,
            max_iterations: None,
            on_max_iterations: None,
            subtasks: None,
            director: None,
            evaluator: None,
            script: None,
            termination: None,
            initial_value: None,
            inner_task: None,
            reduction_task: None,
            over: None,
            item_name: None,
            concurrency: None,
            map_body: None,
        }
    }
}

/// `<call template="f">` with its `<arg>`s.
#[derive(Clone, Debug)]
pub struct Call {
    pub template: Ident,
    pub args: Vec<CallArg>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct CallArg {
    pub name: Option<Ident>,
    pub value: ArgValue,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum ArgValue {
    /// A bare identifier: a variable when one of that name is in scope, else a literal.
    Word(Ident),
    Text(TextTemplate),
    Body(Body),
}

#[derive(Clone, Debug)]
pub struct Cond {
    pub cases: Vec<Case>,
    /// `otherwise`, as written: what happens when no case holds.
    pub otherwise: Option<Spanned<Otherwise>>,
    /// The element's name, where diagnostics about the whole cond point.
    pub head: Span,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Case {
    pub test: Expr,
    pub body: Body,
    pub span: Span,
}
