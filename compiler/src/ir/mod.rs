//! Stage 5: the typed IR. Every node carries its type and span; call arguments are
//! already bound to parameter positions, bare `<arg>` words are resolved, context
//! settings are merged with their defaults, and each operator is explicit.

use crate::source::Span;
use std::sync::Arc;
use tv_stdlib::builtins::BuiltinId;
use tv_stdlib::types::Type;
use tv_vm::bundle::TaskMeta;
use tv_vm::isa::{CmpOp, Quote};

#[derive(Clone, Debug, Default)]
pub struct Program {
    pub functions: Vec<Function>,
    /// What host calls need about each atomic or script task, shared with the bundle.
    pub tasks: Vec<Arc<TaskMeta>>,
    pub entries: Vec<(String, u32)>,
}

#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub params: Vec<(String, Type)>,
    /// Every local, the parameters first.
    pub locals: Vec<(String, Type)>,
    /// Declared return type, checked at run time.
    pub returns: Option<Type>,
    /// What the function returns when it completes: the declared type, else the one the
    /// checker inferred (`any` for bodies run apart). The bundle keeps it for `tvm info`.
    pub yields: Type,
    pub body: Node,
    pub span: Span,
    pub matchable: Option<tv_vm::bundle::MatchInfo>,
    /// What the source says of each parameter (`<input name>` text), by name; only the
    /// documented ones (`tvm info` shows them).
    pub docs: Vec<(String, String)>,
    /// The item's `<description>`, when it has one.
    pub summary: String,
}

pub type Local = u16;

/// A count or position as an id of the IR (a function, task or constant, numbered by
/// `u32`). Lowering reports nothing, so a number an id cannot hold is kept at the id's
/// largest value rather than cut to a smaller one, and code generation refuses every
/// program where that can happen (more functions, tasks or constants than a `u32`
/// numbers) with an error at its place: no id is ever silently wrong in a bundle.
pub fn id(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A local's number, kept at [`Local::MAX`] past it as [`id`] does: code generation
/// refuses a function with more locals than a frame may have, far fewer than that.
pub fn local(n: usize) -> Local {
    Local::try_from(n).unwrap_or(Local::MAX)
}

/// Calls run as concurrent branches, and the local that receives their results.
pub type Branches = (Vec<(u32, Vec<Expr>)>, Local);

/// Something that produces a task result.
#[derive(Clone, Debug)]
pub struct Node {
    pub kind: NodeKind,
    /// The type of the result's value.
    pub ty: Type,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum NodeKind {
    /// One LLM session.
    Atomic {
        task: u32,
        system: Expr,
        prompt: Expr,
        context: Expr,
        /// The fresh-context query `context_relevance` chose: the kept inputs' values.
        query: Option<Expr>,
    },
    /// A composite task's result, finished by its metadata: criteria copied, the
    /// output format checked.
    Finish {
        task: u32,
        body: Box<Node>,
    },
    /// A script run; the command's interpolations are shell-quoted. `options`: the
    /// holes (their expression, and their value: a local) that stand as a word of
    /// their own with no `--` before them, checked for a leading `-` first.
    Script {
        task: u32,
        command: Expr,
        inputs: Vec<(String, Expr)>,
        options: Vec<(String, Expr)>,
    },
    Sequence(Box<Sequence>),
    Reduce(Box<Reduce>),
    /// A body per item of a list known at run time, the values in order.
    Map(Box<Each>),
    Loop(Box<Loop>),
    Cond {
        cases: Vec<(Expr, Node)>,
        /// What the cond gives when no case holds.
        otherwise: Otherwise,
    },
    Call {
        function: u32,
        args: Vec<Expr>,
    },
    /// Runs the calls as concurrent branches, keeps their results (an array) in
    /// `results`, then runs the body.
    Gather {
        calls: Vec<(u32, Vec<Expr>)>,
        results: Local,
        body: Box<Node>,
    },
    /// Binds a task's inputs in order, then runs the body. One node for all of them,
    /// not one per input: a task may have thousands, and walks of the tree recurse.
    Let {
        bindings: Vec<(Local, Expr)>,
        body: Box<Node>,
    },
    /// A result made from a value (an empty `cond`).
    Complete(Expr),
}

/// What a `cond` gives when none of its cases holds.
#[derive(Clone, Debug)]
pub enum Otherwise {
    /// An empty COMPLETE result.
    Empty,
    /// A failure naming the cond's place and `value`, the value its cases compare
    /// (`path` as written; empty, with a `null` value, when they test no one value).
    Fail { path: String, value: Expr },
}

#[derive(Clone, Debug)]
pub struct Sequence {
    pub steps: Vec<Node>,
    /// For each step, the local its `output_slot` binds, if it names one.
    pub slots: Vec<Option<Local>>,
    /// The previous step's value (`output`).
    pub output: Local,
    /// Results so far, for accumulation and failure details.
    pub results: Local,
    pub scratch: Local,
}

#[derive(Clone, Debug)]
pub struct Reduce {
    pub items: Vec<Expr>,
    pub initial: Expr,
    pub inner: Node,
    /// When set, every inner task runs first, concurrently: (calls, results local).
    pub inner_branches: Option<Branches>,
    pub reduction: Node,
    pub current_input: Local,
    pub original_input: Local,
    pub current_result: Local,
    pub accumulator: Local,
    pub processed: Local,
    pub last: Local,
    pub scratch: Local,
    /// The reductions' results so far, when the reduce accumulates them as context.
    pub history: Option<Local>,
    /// A reduce `over` a list: `items` is empty, `inner` unused and
    /// `inner_branches` `None`; the inner tasks run as the bodies of this iteration.
    pub over: Option<Box<ReduceOver>>,
}

/// A reduce over a list known at run time: the inner tasks run ahead as concurrent
/// bodies (their `item` is `current_input`), then the reductions in order.
#[derive(Clone, Debug)]
pub struct ReduceOver {
    pub inner: Each,
    /// The list, kept for the reductions.
    pub items: Local,
    /// The inner tasks' results, in item order.
    pub inner_results: Local,
}

/// An iteration over a list known at run time whose items each start a body: a call
/// of a branch function, running at the same time as the others (DESIGN §14).
#[derive(Clone, Debug)]
pub struct Each {
    /// `over`.
    pub list: Expr,
    /// Bodies running at once; 0 for the run's default.
    pub concurrency: u16,
    /// The locals that hold the item and its index while the body's arguments are read.
    pub item: Local,
    pub index: Local,
    pub function: u32,
    pub args: Vec<Expr>,
}

#[derive(Clone, Debug)]
pub struct Loop {
    pub director: Node,
    pub evaluator: Node,
    pub script: Option<Node>,
    pub max_iterations: u64,
    pub termination: Option<Expr>,
    /// `<on_max_iterations>accept</on_max_iterations>`: running out of iterations
    /// completes with the last result instead of failing.
    pub accept_exhausted: bool,
    pub iteration: Local,
    pub director_result: Local,
    pub evaluation: Local,
    pub evaluation_feedback: Local,
    pub script_output: Local,
    pub last: Local,
    /// The director's results so far, when the loop accumulates them as context.
    pub history: Option<Local>,
}

#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Type,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Local(Local),
    Field(Box<Expr>, String),
    /// The index as written; code generation checks that it fits its operand.
    Index(Box<Expr>, u64),
    Not(Box<Expr>),
    Compare(CmpOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    /// Text from parts; `true` parts are shell-quoted.
    /// Text parts; a part with a quoting context is shell-quoted for it.
    Concat(Vec<(Expr, Option<Quote>)>),
    /// A built-in call, its id found by name once when lowering.
    Builtin(BuiltinId, Vec<Expr>),
    /// The value of a template call.
    Call(u32, Vec<Expr>),
    /// The value of a nested task.
    Task(Box<Node>),
    /// Earlier step results as context (`true`: full output).
    Accumulated(Local, bool),
    /// The value of gathered result `i` in the array in a local; a failure fails the task.
    Gathered(Local, u32),
}

impl Expr {
    pub fn new(kind: ExprKind, ty: Type, span: Span) -> Self {
        Expr { kind, ty, span }
    }

    pub fn str(s: impl Into<String>, span: Span) -> Self {
        Expr::new(ExprKind::Str(s.into()), Type::String, span)
    }
}
mod dump;
pub(crate) mod visit;
pub use dump::dump;
