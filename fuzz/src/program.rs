//! Programs for the `vm` target: functions of instruction choices, mapped onto real
//! instructions either as they are or repaired so that nearly all of them verify.

use crate::host::{ScriptOutcome, Scripted, TYPES, WORDS};
use crate::{Reply, J};
use arbitrary::Arbitrary;
use serde_json::Value;
use std::sync::Arc;
use tv_vm::bundle::{
    Bundle, Const, ContextSettings, Entry, FilePaths, Function, Inherit, Loc, MatchInfo, Output,
    Param, TaskMeta, TaskType, ValueType,
};
use tv_vm::isa::{CmpOp, Op, Quote};

/// A program for the `vm` target: functions of op choices, tasks, replies, arguments.
#[derive(Arbitrary, Debug)]
pub struct Program {
    /// Use operands as given; otherwise they are mapped into range and the stack is
    /// kept balanced so that nearly every program verifies.
    pub raw: bool,
    pub functions: Vec<FunctionSpec>,
    pub strings: Vec<String>,
    pub numbers: Vec<f64>,
    pub tasks: Vec<TaskSpec>,
    pub replies: Vec<Reply>,
    pub scripts: Vec<ScriptOutcome>,
    pub tokens: u16,
    pub args: Vec<J>,
}

#[derive(Arbitrary, Debug)]
pub struct FunctionSpec {
    pub params: u8,
    pub extra_locals: u8,
    pub code: Vec<OpSpec>,
    pub returns: u8,
    pub matchable: Option<(u8, Option<u8>, Vec<u8>)>,
    pub entry: bool,
}

#[derive(Arbitrary, Debug)]
pub struct TaskSpec {
    pub output: u8,
    pub inherit: u8,
    pub accumulate: bool,
    pub full_output: bool,
    pub fresh: bool,
    pub criteria: Option<String>,
    pub timeout: Option<u8>,
    pub files: u8,
}

/// An instruction with its operands as choices.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum OpSpec {
    Const(u8),
    Load(u8),
    Store(u8),
    Pop,
    Dup,
    Field(u8),
    Index(u8),
    Not,
    Compare(u8),
    Jump(u8),
    JumpIfFalse(u8),
    JumpIfTrue(u8),
    JumpIfFailed(u8),
    ShellQuote,
    Builtin(u8, u8),
    Call(u8, u8),
    Return,
    ReturnIfFailed,
    Value,
    KeepValue(u8),
    TextConst(u8),
    TextLocal(u8),
    TextValue,
    Complete,
    MakeArray(u8),
    MakeObject(u8, u8),
    Append(u8),
    Increment(u8),
    LoopGuard,
    AccumulateLocal(u8, bool),
    FailSequence(u8, u8),
    FailReduce,
    CheckReturn,
    Atomic(u8),
    AtomicAccumulated(u8, u8, bool),
    Script(u8),
    Evaluation,
    EndLoop(u8),
    /// `ShellQuoteIn`, the context chosen by the operand (any value picks one).
    ShellQuoteIn(u8),
    /// `Gather` of well-formed branches (raw: of however many the frame holds).
    Gather(u8, u8),
    /// A branch (repaired: one branch, gathered at once).
    Branch(u8, u8),
    CheckOption(u8),
}

const MAX_FUNCTIONS: usize = 4;
const MAX_CODE: usize = 48;

/// The constant pool: fixed values, the input's numbers, then strings.
struct Pool {
    constants: Vec<Const>,
    /// Where the strings start; they run to the end.
    strings: usize,
}

impl Pool {
    fn new(p: &Program) -> Pool {
        let mut constants = vec![Const::Null, Const::Bool(true), Const::Bool(false)];
        constants.extend(p.numbers.iter().take(4).map(|n| Const::Num(*n)));
        let strings = constants.len();
        constants.extend(
            ["content", "status", "parsedContent", "notes"]
                .iter()
                .chain(TYPES)
                .map(|s| Const::Str(s.to_string())),
        );
        constants.extend(p.strings.iter().take(6).map(|s| Const::Str(s.clone())));
        Pool { constants, strings }
    }

    fn any(&self, i: u8) -> u32 {
        (i as usize % self.constants.len()) as u32
    }

    fn string(&self, i: u8) -> u32 {
        (self.strings + i as usize % (self.constants.len() - self.strings)) as u32
    }
}

impl Program {
    /// The bundle this program stands for; it may or may not verify.
    pub fn bundle(&self) -> Bundle {
        let specs: Vec<&FunctionSpec> = self.functions.iter().take(MAX_FUNCTIONS).collect();
        let params: Vec<usize> = specs.iter().map(|f| f.params as usize % 3).collect();
        let pool = Pool::new(self);
        let tasks: Vec<Arc<TaskMeta>> = self
            .tasks
            .iter()
            .take(3)
            .map(|t| Arc::new(task(t)))
            .collect();
        let tasks = if tasks.is_empty() {
            vec![Arc::new(TaskMeta::named("t"))]
        } else {
            tasks
        };
        let shape = Shape {
            pool: &pool,
            params: &params,
            tasks: tasks.len(),
        };
        let functions = specs
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let locals = params[i] + 1 + f.extra_locals as usize % 3;
                let code = if self.raw {
                    f.code.iter().take(MAX_CODE).map(|s| raw(*s)).collect()
                } else {
                    shape.balanced(&f.code[..f.code.len().min(MAX_CODE)], locals)
                };
                function(i, f, params[i], locals, code)
            })
            .collect::<Vec<_>>();
        let entries = specs
            .iter()
            .enumerate()
            .filter(|(i, f)| *i == 0 || f.entry)
            .map(|(i, _)| Entry {
                name: format!("f{i}"),
                function: i as u32,
            })
            .collect();
        Bundle {
            compiler_version: "fuzz".into(),
            constants: pool.constants,
            functions,
            tasks,
            entries,
            files: vec!["fuzz.xml".into()],
        }
    }

    pub fn host(&self) -> Scripted {
        Scripted::new(
            self.replies.iter().take(16).cloned().collect(),
            self.scripts.iter().take(8).cloned().collect(),
            self.tokens,
        )
    }

    pub fn args(&self) -> Vec<Value> {
        self.args.iter().take(3).map(J::to_json).collect()
    }
}

fn function(i: usize, f: &FunctionSpec, params: usize, locals: usize, code: Vec<Op>) -> Function {
    Function {
        name: format!("f{i}"),
        doc: String::new(),
        params: (0..params)
            .map(|p| Param {
                name: format!("p{p}"),
                ty: value_type(f.returns as usize + p),
                doc: String::new(),
            })
            .collect(),
        locals: locals as u16,
        lines: vec![Loc::default(); code.len()],
        code,
        returns: value_type(f.returns.into()),
        matchable: f.matchable.as_ref().map(|(kind, sub, words)| MatchInfo {
            task_type: TASK_TYPES[*kind as usize % TASK_TYPES.len()],
            subtype: sub.map(|s| WORDS[s as usize % WORDS.len()].into()),
            description: words
                .iter()
                .take(6)
                .map(|w| WORDS[*w as usize % WORDS.len()])
                .collect::<Vec<_>>()
                .join(" "),
        }),
    }
}

fn task(t: &TaskSpec) -> TaskMeta {
    let mut meta = TaskMeta::named("t");
    meta.output = match t.output % 4 {
        0 => Output::Text,
        1 => Output::Json(None),
        n => Output::Json(Some(value_type(t.output as usize * 7 + n as usize))),
    };
    meta.context = ContextSettings {
        inherit: [Inherit::None, Inherit::Full, Inherit::Subset][t.inherit as usize % 3],
        accumulate: t.accumulate,
        full_output: t.full_output,
        fresh: t.fresh,
    };
    meta.criteria = t.criteria.clone();
    meta.timeout = t.timeout.map(u64::from);
    meta.file_paths = match t.files % 4 {
        0 => FilePaths::None,
        1 => FilePaths::Literal(vec!["a.txt".into()]),
        2 => FilePaths::Command("ls".into()),
        _ => FilePaths::Description("the code".into()),
    };
    meta
}

/// Task types templates may have; matching finds only atomic ones.
const TASK_TYPES: [TaskType; 5] = [
    TaskType::Atomic,
    TaskType::Sequential,
    TaskType::Reduce,
    TaskType::Script,
    TaskType::DirectorEvaluatorLoop,
];

/// One of the written types, `any` for the one that is not a type.
fn value_type(choice: usize) -> ValueType {
    ValueType::parse(TYPES[choice % TYPES.len()]).unwrap_or(ValueType::ANY)
}

fn quote(q: u8) -> Quote {
    match q % 3 {
        0 => Quote::Bare,
        1 => Quote::Double,
        _ => Quote::Single,
    }
}

fn cmp(i: u8) -> CmpOp {
    [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ][i as usize % 6]
}

/// The instruction with its operands exactly as chosen.
fn raw(s: OpSpec) -> Op {
    match s {
        OpSpec::Const(i) => Op::Const(i.into()),
        OpSpec::Load(i) => Op::Load(i.into()),
        OpSpec::Store(i) => Op::Store(i.into()),
        OpSpec::Pop => Op::Pop,
        OpSpec::Dup => Op::Dup,
        OpSpec::Field(i) => Op::Field(i.into()),
        OpSpec::Index(i) => Op::Index(i.into()),
        OpSpec::Not => Op::Not,
        OpSpec::Compare(c) => Op::Compare(cmp(c)),
        OpSpec::Jump(t) => Op::Jump(t.into()),
        OpSpec::JumpIfFalse(t) => Op::JumpIfFalse(t.into()),
        OpSpec::JumpIfTrue(t) => Op::JumpIfTrue(t.into()),
        OpSpec::JumpIfFailed(t) => Op::JumpIfFailed(t.into()),
        OpSpec::ShellQuote => Op::ShellQuote,
        OpSpec::Builtin(id, n) => Op::Builtin(id.into(), n),
        OpSpec::Call(f, n) => Op::Call(f.into(), n),
        OpSpec::Return => Op::Return,
        OpSpec::ReturnIfFailed => Op::ReturnIfFailed,
        OpSpec::Value => Op::Value,
        OpSpec::KeepValue(i) => Op::KeepValue(i.into()),
        OpSpec::TextConst(i) => Op::TextConst(i.into()),
        OpSpec::TextLocal(i) => Op::TextLocal(i.into()),
        OpSpec::TextValue => Op::TextValue,
        OpSpec::Complete => Op::Complete,
        OpSpec::MakeArray(n) => Op::MakeArray(n.into()),
        OpSpec::MakeObject(first, n) => Op::MakeObject(first.into(), n.into()),
        OpSpec::Append(i) => Op::Append(i.into()),
        OpSpec::Increment(i) => Op::Increment(i.into()),
        OpSpec::LoopGuard => Op::LoopGuard,
        OpSpec::AccumulateLocal(i, full) => Op::AccumulateLocal(i.into(), full),
        OpSpec::FailSequence(s, t) => Op::FailSequence(s.into(), t.into()),
        OpSpec::FailReduce => Op::FailReduce,
        OpSpec::CheckReturn => Op::CheckReturn,
        OpSpec::Atomic(t) => Op::Atomic(t.into()),
        OpSpec::AtomicAccumulated(t, i, full) => Op::AtomicAccumulated(t.into(), i.into(), full),
        OpSpec::Script(t) => Op::Script(t.into()),
        OpSpec::Evaluation => Op::Evaluation,
        OpSpec::EndLoop(mode) => Op::EndLoop(mode),
        OpSpec::ShellQuoteIn(q) => Op::ShellQuoteIn(quote(q)),
        OpSpec::Gather(n, _) => Op::Gather(n.into()),
        OpSpec::Branch(f, n) => Op::Branch(f.into(), n.into()),
        OpSpec::CheckOption(i) => Op::CheckOption(i.into()),
    }
}

/// What operands may refer to.
struct Shape<'a> {
    pool: &'a Pool,
    params: &'a [usize],
    tasks: usize,
}

impl Shape<'_> {
    /// Straight-line code whose stack never runs short, ending in `Return`, with every
    /// jump aimed at an instruction where the stack is as deep as after the jump.
    fn balanced(&self, specs: &[OpSpec], locals: usize) -> Vec<Op> {
        let mut c = Code::default();
        let mut jumps: Vec<(usize, u8)> = Vec::new();
        for s in specs {
            let gather = match *s {
                OpSpec::Gather(n, seed) => Some((1 + n as usize % 3, seed)),
                OpSpec::Branch(seed, _) => Some((1, seed)),
                _ => None,
            };
            if let Some((n, seed)) = gather {
                for k in 0..n {
                    let f = (seed as usize + k) % self.params.len();
                    for a in 0..self.params[f] {
                        c.emit(Op::Const(self.pool.any(seed.wrapping_add(a as u8))));
                    }
                    c.emit(Op::Branch(f as u32, self.params[f] as u16));
                }
                c.emit(Op::Gather(n as u16));
                continue;
            }
            let op = self.fit(*s, locals);
            let pc = c.emit(op);
            if let Some(t) = op.target() {
                jumps.push((pc, t as u8));
            }
        }
        if c.d == 0 {
            c.emit(Op::Const(0));
        }
        c.emit(Op::Return);
        let Code { mut ops, depth, .. } = c;
        for (pc, choice) in jumps {
            let (pops, pushes) = ops[pc].stack_effect().unwrap_or((0, 0));
            // No branch is held at a jump, so none may be where it lands.
            let after = (depth[pc].0 - pops + pushes, 0);
            let fits: Vec<usize> = (0..ops.len()).filter(|&t| depth[t] == after).collect();
            // `pc + 1` always fits, as control falls through to it.
            let t = fits[choice as usize % fits.len()] as u32;
            ops[pc] = ops[pc].with_target(t);
        }
        ops
    }

    /// The instruction with its operands mapped into range.
    fn fit(&self, s: OpSpec, locals: usize) -> Op {
        let local = |i: u8| (i as usize % locals) as u16;
        let pool = self.pool;
        match s {
            OpSpec::Const(i) => Op::Const(pool.any(i)),
            OpSpec::Load(i) => Op::Load(local(i)),
            OpSpec::Store(i) => Op::Store(local(i)),
            OpSpec::Append(i) => Op::Append(local(i)),
            OpSpec::Increment(i) => Op::Increment(local(i)),
            OpSpec::KeepValue(i) => Op::KeepValue(local(i)),
            OpSpec::TextLocal(i) => Op::TextLocal(local(i)),
            OpSpec::TextConst(i) => Op::TextConst(pool.any(i)),
            OpSpec::AccumulateLocal(i, full) => Op::AccumulateLocal(local(i), full),
            OpSpec::Field(i) => Op::Field(pool.string(i)),
            OpSpec::CheckOption(i) => Op::CheckOption(pool.string(i)),
            OpSpec::CheckReturn => Op::CheckReturn,
            OpSpec::MakeArray(n) => Op::MakeArray((n % 5).into()),
            OpSpec::MakeObject(first, n) => {
                let first = pool.string(first);
                let room = pool.constants.len() - first as usize;
                Op::MakeObject(first, (n as usize % (room.min(4) + 1)) as u16)
            }
            OpSpec::Builtin(id, n) => {
                let id = id as usize % tv_stdlib::builtins::BUILTINS.len();
                let b = &tv_stdlib::builtins::BUILTINS[id];
                let spread = b.max_arity() - b.min_arity() + 1;
                Op::Builtin(id as u16, (b.min_arity() + n as usize % spread) as u8)
            }
            OpSpec::Call(f, _) => {
                let f = f as usize % self.params.len();
                Op::Call(f as u32, self.params[f] as u8)
            }
            OpSpec::Atomic(t) => Op::Atomic((t as usize % self.tasks) as u32),
            OpSpec::AtomicAccumulated(t, i, full) => {
                Op::AtomicAccumulated((t as usize % self.tasks) as u32, local(i), full)
            }
            OpSpec::Script(t) => Op::Script((t as usize % self.tasks) as u32),
            OpSpec::FailSequence(s, t) => Op::FailSequence(s.into(), t.into()),
            OpSpec::EndLoop(mode) => Op::EndLoop(mode % 3),
            other => raw(other),
        }
    }
}

/// Straight-line code, and the stack depth and the branches held before each
/// instruction.
#[derive(Default)]
struct Code {
    ops: Vec<Op>,
    depth: Vec<(usize, usize)>,
    d: usize,
    held: usize,
}

impl Code {
    /// Appends `op`, after as many constants as it needs to find on the stack, and
    /// returns where it went.
    fn emit(&mut self, op: Op) -> usize {
        // `Return` takes one value; what follows it is reached only by jumps.
        let (pops, pushes) = op.stack_effect().unwrap_or((1, 0));
        while self.d < pops {
            self.ops.push(Op::Const(1 + self.ops.len() as u32 % 2));
            self.depth.push((self.d, self.held));
            self.d += 1;
        }
        self.ops.push(op);
        self.depth.push((self.d, self.held));
        self.d = self.d - pops + pushes;
        self.held = match op {
            Op::Branch(..) => self.held + 1,
            Op::Gather(_) => 0,
            _ => self.held,
        };
        self.ops.len() - 1
    }
}
