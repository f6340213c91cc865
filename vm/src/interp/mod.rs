//! The interpreter: explicit call frames, a synchronous dispatch loop that halts on
//! host calls, and the limits checked before any further host call is made.

mod calls;
mod each;
mod memory;
mod reask;
mod results;
mod session;
mod stack;
pub mod subtask;
mod text;

pub(crate) use reask::Attempts;
pub(crate) use session::{RunsAs, Session, Spawn, SubtaskScope};

use crate::accumulate::Accumulator;
use crate::bundle::{Bundle, Const, Verified};
use crate::host::HostRequest;
use crate::isa::{CmpOp, Op, Quote};
use crate::limits::{
    nesting, weight, Budget, Limits, Spending, Spent, BYTES_PER_INSTRUCTION, MAX_NESTING,
};
use crate::result::{is_failed, value_of, Reason, Resource, TaskError, TaskResult};
use crate::shell::shell_quote_in;
use serde_json::{json, Map, Value};
use std::cmp::Ordering;
use std::sync::Arc;
use tv_stdlib::bounds::text_bound;
use tv_stdlib::builtins::BUILTINS;
use tv_stdlib::values::{self as f, into_text, to_text, truthy};

/// Why [`Vm::run`] stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Waiting for this host call; resume with its reply.
    Host(Box<HostRequest>),
    /// Waiting for these calls (function, arguments) to run as concurrent branches;
    /// resume with their results in order.
    Gather(Vec<(u32, Vec<Value>)>),
    /// Start this body running concurrently, then run the machine on at once (no
    /// reply): [`Op::Spawn`].
    Spawn(Box<Body>),
    /// Waiting for one of the bodies this machine started to end: resume with
    /// [`Vm::body_ended`] and the result of any one of them.
    Await,
    /// The entry function returned this TaskResult. Boxed: a step leaves every
    /// instruction, and a result is several times the size of the other variants.
    Done(Box<TaskResult>),
}

/// A body of an iteration over a run-time list (a map's body, a reduce's inner task):
/// a call of `function` with `args`, run as a concurrent branch of the machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    /// The function to call, by index.
    pub function: u32,
    /// Its arguments, one per parameter.
    pub args: Vec<Value>,
    /// Which body of which iteration it is.
    pub tag: BodyTag,
}

/// Which body this is: item `index` of the machine's iteration `each` (its iterations
/// numbered from 0 in the order they began). The same run asks the same bodies under
/// the same tags, so the journal names a body by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BodyTag {
    /// The machine's iteration, numbered from 0 in the order they began.
    pub each: u64,
    /// The item of that iteration, from 0.
    pub index: u64,
}

#[derive(Debug)]
pub(crate) struct Frame {
    pub(crate) function: usize,
    pc: usize,
    base: usize,
    pub(crate) locals: Vec<Value>,
    /// Set on the frame of a subtask: the session waiting for its result.
    pub(crate) spawned: Option<Box<Spawn>>,
    /// Set on the frames running inside a spawned subtask: its frame, the frames it
    /// calls, and the branches they start.
    pub(crate) scope: Option<Arc<SubtaskScope>>,
    /// The accumulated context of each sequence running in this frame, by the local
    /// that holds its results.
    accumulators: Vec<(u16, Accumulator)>,
    /// Calls made into branches (function, arguments) for the next `Gather`.
    branches: Vec<(u32, Vec<Value>)>,
    /// The iterations open in this frame, the innermost last.
    iterations: Vec<each::Iteration>,
    /// Bytes charged to the memory budget for what this frame built.
    pub(crate) charged: u64,
    /// What the machine had spent when the frame was pushed.
    entry: Spent,
}

/// The host call in flight.
#[derive(Debug)]
pub(crate) enum Waiting {
    Llm(Box<Session>),
    /// A script task's run (the task, for its criteria).
    Script(u32),
    Gather,
    /// One of the bodies this machine started, to end ([`Step::Await`]).
    Body,
}

/// What is used of the limits so far.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Usage {
    /// Instructions the run executed, its concurrent branches included, as of this
    /// machine's last stop (copying or building values counts by their size).
    pub instructions: u64,
    /// Loop iterations the run began, its branches included.
    pub iterations: u64,
    /// LLM calls the run had answered (assistant turns), its branches included.
    pub turns: u64,
    /// Tokens, input and output, the run's replies reported, its branches included.
    pub tokens: u64,
    /// The run's LLM calls, tokens and cost, by model.
    pub spending: Spending,
}

impl Usage {
    /// The run's `notes.usage` (DESIGN §15): its LLM calls, tokens and cost, in total
    /// and by model.
    pub fn notes(&self) -> Value {
        self.spending.notes()
    }
}

/// The interpreter: runs one function of a verified bundle, halting at each host call
/// (see [`Step`]) until it returns.
pub struct Vm<'b> {
    pub(crate) bundle: &'b Bundle,
    pub(crate) limits: Limits,
    pub(crate) frames: Vec<Frame>,
    pub(crate) stack: Vec<Value>,
    pub(crate) budget: Arc<Budget>,
    pub(crate) instructions: u64,
    /// Frames and subtasks of the machines this one is a branch of.
    pub(crate) depth_offset: usize,
    pub(crate) subtask_offset: usize,
    /// The subtask a branch runs inside, if any: its first frame's scope.
    pub(crate) scope: Option<Arc<SubtaskScope>>,
    pub(crate) waiting: Option<Waiting>,
    /// A host call made while taking a reply (a re-ask), for the next [`Vm::run`].
    pub(crate) again: Option<Box<HostRequest>>,
    pub(crate) done: Option<Box<TaskResult>>,
    /// What this machine spent, with the branches and bodies it ran (see [`Spending`]).
    pub(crate) spent: Spending,
    /// The iterations this machine has begun: the next one's `BodyTag::each`.
    pub(crate) eaches: u64,
    /// What the iteration that ended last spent, for the map result made next.
    pub(crate) ended_iteration: Spent,
    /// By function: the name of the template or named task it is, as its results'
    /// `notes.template` gives it; `None` for the bodies a function runs apart.
    pub(crate) items: Arc<Vec<Option<Value>>>,
}

/// A run-time fault: the run (or the step that met it) fails with this error. Boxed,
/// since every fallible step of the dispatch loop returns one.
pub(crate) type Fault = Box<TaskError>;

impl<'b> Vm<'b> {
    /// A machine about to run `function` of a verified bundle with `args` (one per
    /// parameter). Only a verified bundle: the dispatch loop's checks are cheap because
    /// the verifier proved its indices and stack effects.
    pub fn new(program: &'b Verified, function: u32, args: Vec<Value>, limits: Limits) -> Self {
        let bundle: &'b Bundle = program;
        let mut vm = Vm {
            bundle,
            limits,
            frames: Vec::new(),
            stack: Vec::new(),
            budget: Arc::new(Budget::default()),
            instructions: 0,
            depth_offset: 0,
            subtask_offset: 0,
            scope: None,
            waiting: None,
            again: None,
            done: None,
            eaches: 0,
            spent: Spending::default(),
            ended_iteration: Spent::default(),
            items: Arc::new(item_names(bundle)),
        };
        if let Err(fault) = vm.push_frame(function as usize, args) {
            vm.done = Some(Box::new(TaskResult::failed(fault)));
        }
        vm
    }

    /// What the run has used of its limits so far.
    pub fn usage(&self) -> Usage {
        Usage {
            instructions: self.instructions,
            iterations: self.budget.iterations(),
            turns: self.budget.turns(),
            tokens: self.budget.tokens(),
            // Every branch and body added what it spent to the machine that waited
            // for it, so the first machine's spending is the run's.
            spending: self.spent.clone(),
        }
    }

    /// What this machine spent, with the branches and bodies whose spending was added.
    pub fn spent(&self) -> &Spending {
        &self.spent
    }

    /// What this machine spent, taken out of it (a body that has ended hands it on).
    pub fn take_spent(&mut self) -> Spending {
        std::mem::take(&mut self.spent)
    }

    /// Adds what a branch or body of this machine spent; `again`: it was not spent in
    /// this run (a body the journal gave back whole), so the run's budget counts it too.
    pub fn add_spent(&mut self, s: &Spending, again: bool) {
        self.spent.add(s);
        if again {
            self.budget.spend(s.total);
        }
    }

    /// Counts the LLM call in flight, which the run abandons (its wall-clock limit or an
    /// interruption stopped it): sent and billed, its tokens and cost never known.
    pub fn abandon(&mut self, model: &str) {
        self.spent.record(model, crate::usage::Spent::abandoned());
    }

    /// Runs until the next host call or the end.
    pub fn run(&mut self) -> Step {
        if let Some(r) = &self.done {
            return Step::Done(r.clone());
        }
        if let Some(request) = self.again.take() {
            return Step::Host(request);
        }
        if let Some(waiting) = &self.waiting {
            let message = match waiting {
                Waiting::Body => "the machine was run again before a body it waits for ended",
                _ => "the machine was run again before its host call was answered",
            };
            return self.finish(TaskResult::failed(fault(message)));
        }
        // The branches of a run share its instruction budget: this machine goes on
        // from what all of them have spent so far.
        let start = self.budget.instructions();
        self.instructions = start;
        let step = loop {
            match self.step() {
                Ok(None) => {}
                Ok(Some(step)) => break step,
                Err(fault) => break self.finish(TaskResult::failed(fault)),
            }
        };
        self.budget.add_instructions(self.instructions - start);
        step
    }

    fn finish(&mut self, r: TaskResult) -> Step {
        self.release_all();
        self.frames.clear();
        self.stack.clear();
        let r = Box::new(r);
        self.done = Some(r.clone());
        Step::Done(r)
    }

    fn step(&mut self) -> Result<Option<Step>, Fault> {
        self.charge(BYTES_PER_INSTRUCTION)?;
        let frame = self
            .frames
            .last_mut()
            .ok_or_else(|| fault("no frame to run"))?;
        let function = self
            .bundle
            .functions
            .get(frame.function)
            .ok_or_else(|| fault("no such function"))?;
        let op = *function
            .code
            .get(frame.pc)
            .ok_or_else(|| fault("control ran past the end of a function"))?;
        frame.pc += 1;
        let next = self.exec(op)?;
        self.check_nesting(op)?;
        Ok(next)
    }

    /// Instructions that wrap values in a new array or object make sure the result
    /// does not nest deeper than [`MAX_NESTING`].
    fn check_nesting(&self, op: Op) -> Result<(), Fault> {
        let depth = match op {
            Op::MakeArray(_)
            | Op::MakeObject(..)
            | Op::Complete
            | Op::FailSequence(..)
            | Op::FailReduce
            | Op::CheckReturn
            | Op::Evaluation
            | Op::EndLoop(_)
            | Op::NoCase(_) => self.stack.last().map_or(0, nesting),
            Op::Append(i) => {
                let items = self
                    .frame()?
                    .locals
                    .get(i as usize)
                    .and_then(Value::as_array);
                1 + items.and_then(|a| a.last()).map_or(0, nesting)
            }
            _ => return Ok(()),
        };
        nested_within(depth)
    }

    /// Counts the work of copying or building `bytes` of values against the
    /// instruction limit: one instruction per [`BYTES_PER_INSTRUCTION`] bytes.
    pub(crate) fn charge(&mut self, bytes: u64) -> Result<(), Fault> {
        self.instructions += bytes / BYTES_PER_INSTRUCTION;
        if let Some(held) = self.budget.refused() {
            return Err(self.out_of_memory(held));
        }
        if self.instructions > self.limits.instructions {
            return Err(TaskError::exhausted(
                Resource::Instructions,
                format!(
                    "the run executed more than {} instructions",
                    self.limits.instructions
                ),
                self.instructions,
                self.limits.instructions,
            )
            .into());
        }
        Ok(())
    }

    fn exec(&mut self, op: Op) -> Result<Option<Step>, Fault> {
        match op {
            Op::Const(i) => {
                let c = self
                    .bundle
                    .constants
                    .get(i as usize)
                    .ok_or_else(|| fault("no such constant"))?;
                self.stack.push(const_value(c));
            }
            Op::Load(i) => {
                let w = weight(
                    self.frame()?
                        .locals
                        .get(i as usize)
                        .ok_or_else(|| fault("no such local"))?,
                );
                self.charge(w)?;
                self.reserve(w)?;
                let v = self.frame()?.locals.get(i as usize).cloned();
                self.stack.push(v.unwrap_or_default());
            }
            Op::Store(i) => {
                let v = self.pop()?;
                *self.local(i)? = v;
            }
            Op::Pop => {
                self.pop()?;
            }
            Op::Dup => {
                let w = weight(self.peek()?);
                self.charge(w)?;
                self.reserve(w)?;
                let v = self.peek()?.clone();
                self.stack.push(v);
            }
            Op::Field(i) => {
                let name = self.string_const(i)?.to_string();
                let v = self.pop()?;
                self.stack
                    .push(v.get(&name).cloned().unwrap_or(Value::Null));
            }
            Op::Index(i) => {
                let v = self.pop()?;
                self.stack
                    .push(v.get(i as usize).cloned().unwrap_or(Value::Null));
            }
            Op::Not => {
                let v = self.pop()?;
                self.stack.push(Value::Bool(!truthy(&v)));
            }
            Op::Compare(c) => {
                let b = self.pop()?;
                let a = self.pop()?;
                self.stack.push(Value::Bool(compare(c, &a, &b)));
            }
            Op::Jump(t) => self.frame_mut()?.pc = t as usize,
            Op::JumpIfFalse(t) => {
                if !truthy(&self.pop()?) {
                    self.frame_mut()?.pc = t as usize;
                }
            }
            Op::JumpIfTrue(t) => {
                if truthy(&self.pop()?) {
                    self.frame_mut()?.pc = t as usize;
                }
            }
            Op::JumpIfFailed(t) => {
                if is_failed(self.peek()?) {
                    self.frame_mut()?.pc = t as usize;
                }
            }
            Op::ShellQuote | Op::ShellQuoteIn(_) => {
                let quote = match op {
                    Op::ShellQuoteIn(q) => q,
                    _ => Quote::Bare,
                };
                let v = self.pop()?;
                // Each `'` becomes four bytes (a `\` two), and two quotes go around.
                self.reserve(4 * text_bound(&v) + 2)?;
                let text = shell_quote_in(&to_text(&v), quote);
                self.charge(text.len() as u64)?;
                self.stack.push(Value::String(text));
            }
            Op::Builtin(id, n) => {
                let args = self.pop_n(n as usize)?;
                // The verifier has checked the index; a bundle it did not see still
                // cannot make the machine panic.
                let b = BUILTINS
                    .get(id as usize)
                    .ok_or_else(|| fault("no such built-in"))?;
                let v = self.builtin_call(b, &args)?;
                self.charge(weight(&v))?;
                self.stack.push(v);
            }
            Op::Call(callee, n) => {
                let args = self.pop_n(n as usize)?;
                self.push_frame(callee as usize, args)?;
            }
            Op::Return => return self.ret(),
            Op::ReturnIfFailed => {
                if is_failed(self.peek()?) {
                    return self.ret();
                }
            }
            Op::Value => {
                let r = self.pop()?;
                self.stack.push(value_of(&r));
            }
            Op::TextConst(_) | Op::TextLocal(_) | Op::TextValue => self.text(op)?,
            Op::Complete
            | Op::KeepValue(_)
            | Op::AccumulateLocal(..)
            | Op::FailSequence(..)
            | Op::FailReduce
            | Op::CheckReturn
            | Op::Finish(_)
            | Op::Evaluation
            | Op::EndLoop(_)
            | Op::NoCase(_) => self.result_op(op)?,
            Op::MakeArray(n) => {
                let items = self.pop_n(n as usize)?;
                self.stack.push(Value::Array(items));
            }
            Op::MakeObject(first, n) => {
                let values = self.pop_n(n as usize)?;
                let mut obj = Map::new();
                for (k, v) in values.into_iter().enumerate() {
                    obj.insert(self.string_const(first + k as u32)?.to_string(), v);
                }
                self.stack.push(Value::Object(obj));
            }
            Op::Append(i) => {
                let v = self.pop()?;
                match self.local(i)? {
                    Value::Array(items) => items.push(v),
                    other => *other = Value::Array(vec![v]),
                }
            }
            Op::Increment(i) => {
                let l = self.local(i)?;
                *l = json!(l.as_u64().unwrap_or(0) + 1);
            }
            Op::LoopGuard => {
                let used = self.budget.iterate();
                if used > self.limits.loop_iterations {
                    return Err(TaskError::exhausted(
                        Resource::Iterations,
                        format!(
                            "loops ran more than {} iterations",
                            self.limits.loop_iterations
                        ),
                        used,
                        self.limits.loop_iterations,
                    )
                    .into());
                }
            }
            Op::Branch(callee, n) => {
                let args = self.pop_n(n as usize)?;
                self.frame_mut()?.branches.push((callee, args));
            }
            Op::Gather(n) => {
                let calls = std::mem::take(&mut self.frame_mut()?.branches);
                if calls.len() != n as usize {
                    return Err(fault("a gather does not match the branches made for it"));
                }
                self.waiting = Some(Waiting::Gather);
                return Ok(Some(Step::Gather(calls)));
            }
            Op::Atomic(t) => {
                let context = into_text(self.pop()?).into();
                return self.atomic(t, context, None).map(Some);
            }
            Op::AtomicFocused(t) => {
                let query = into_text(self.pop()?);
                let context = into_text(self.pop()?).into();
                return self.atomic(t, context, Some(query)).map(Some);
            }
            Op::AtomicAccumulated(t, i, full) => {
                let context = self.accumulated(i, full)?;
                return self.atomic(t, context, None).map(Some);
            }
            Op::Script(t) => return self.script(t).map(Some),
            Op::CheckOption(i) => {
                let hole = self.string_const(i)?.to_string();
                let v = self.pop()?;
                let r = crate::outcome::check_option(v, &hole);
                self.charge(weight(&r))?;
                self.stack.push(r);
            }
            Op::Items
            | Op::EachStart(_)
            | Op::EachMore
            | Op::EachNext
            | Op::Spawn(..)
            | Op::EachEnd
            | Op::MapResult => return self.each_op(op),
        }
        Ok(None)
    }
}

/// The name of each function that is a template or named task (an entry point), by
/// function index.
fn item_names(bundle: &Bundle) -> Vec<Option<Value>> {
    let mut names = vec![None; bundle.functions.len()];
    for e in &bundle.entries {
        if let Some(slot) = names.get_mut(e.function as usize) {
            *slot = Some(Value::String(e.name.clone()));
        }
    }
    names
}

/// A value nesting `depth` levels may be kept: no deeper than [`MAX_NESTING`].
pub(crate) fn nested_within(depth: usize) -> Result<(), Fault> {
    if depth > MAX_NESTING {
        return Err(TaskError::exhausted(
            Resource::Depth,
            format!("a value nests arrays and objects deeper than {MAX_NESTING} levels"),
            depth as u64,
            MAX_NESTING as u64,
        )
        .into());
    }
    Ok(())
}

/// A fault of the machine itself: a verified bundle never causes one.
pub(crate) fn fault(message: &str) -> Fault {
    let message = format!("internal VM error: {message}");
    TaskError::failure(Reason::UnexpectedError, message).into()
}

/// What the `Compare` instruction computes, by the value rules of the standard library.
fn compare(op: CmpOp, a: &Value, b: &Value) -> bool {
    match op {
        CmpOp::Eq => f::equal(a, b),
        CmpOp::Ne => !f::equal(a, b),
        CmpOp::Lt => f::compare(a, b) == Some(Ordering::Less),
        CmpOp::Le => matches!(f::compare(a, b), Some(Ordering::Less | Ordering::Equal)),
        CmpOp::Gt => f::compare(a, b) == Some(Ordering::Greater),
        CmpOp::Ge => matches!(f::compare(a, b), Some(Ordering::Greater | Ordering::Equal)),
    }
}

pub(crate) fn const_value(c: &Const) -> Value {
    match c {
        Const::Null => Value::Null,
        Const::Bool(b) => Value::Bool(*b),
        // Whole numbers stay integers, so `12` is spliced as `12`, not `12.0`.
        Const::Num(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => Value::from(*n as i64),
        Const::Num(n) => serde_json::Number::from_f64(*n).map_or(Value::Null, Value::Number),
        Const::Str(s) => Value::String(s.clone()),
    }
}
