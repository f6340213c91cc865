//! The `vm` fuzz target in small: random instruction sequences, repaired so that
//! nearly all of them verify, run to their end with a scripted host whose replies are
//! random too, under small limits. Nothing may panic.

use proptest::prelude::*;
use serde_json::json;
use std::sync::Arc;
use tv_stdlib::builtins::BUILTINS;
use tv_tests::{run_with, scripted};
use tv_vm::bundle::{
    Bundle, Const, Entry, Function, Loc, Output, Param, TaskMeta, ValueType, Verified,
};
use tv_vm::isa::{CmpOp, Op, Quote};
use tv_vm::limits::Limits;

/// Function `i` takes `i` parameters and has `LOCALS` locals.
const FUNCTIONS: usize = 3;
const LOCALS: u16 = 4;
/// The first string constant.
const FIRST_STRING: u32 = 7;

fn constants() -> Vec<Const> {
    let mut c = vec![Const::Null, Const::Bool(true), Const::Bool(false)];
    c.extend((0..FUNCTIONS).map(|f| Const::Num(f as f64)));
    c.push(Const::Num(2.5));
    for s in ["content", "status", "object", "string[]", "x", "it's"] {
        c.push(Const::Str(s.into()));
    }
    c
}

/// An instruction, a `Gather` of `.0` well-formed branches, the first calling
/// function `.1`, or a well-formed map over two strings, at most `.0` bodies at once,
/// each calling function `.1`.
#[derive(Clone, Copy, Debug)]
enum Piece {
    Op(Op),
    Gather(u8, u8),
    Map(u16, u8),
}

fn cmp_op() -> impl Strategy<Value = CmpOp> {
    prop_oneof![
        Just(CmpOp::Eq),
        Just(CmpOp::Ne),
        Just(CmpOp::Lt),
        Just(CmpOp::Ge)
    ]
}

fn piece() -> BoxedStrategy<Piece> {
    let n = constants().len() as u32;
    let strings = FIRST_STRING..n;
    let ops = prop_oneof![
        (0..n).prop_map(Op::Const),
        (0..LOCALS).prop_map(Op::Load),
        (0..LOCALS).prop_map(Op::Store),
        (0..LOCALS).prop_map(Op::Append),
        (0..LOCALS).prop_map(Op::Increment),
        (0..LOCALS).prop_map(Op::KeepValue),
        (0..LOCALS).prop_map(Op::TextLocal),
        (0..n).prop_map(Op::TextConst),
        (0..LOCALS, any::<bool>()).prop_map(|(i, f)| Op::AccumulateLocal(i, f)),
        strings.clone().prop_map(Op::Field),
        strings.clone().prop_map(Op::CheckOption),
        strings.clone().prop_map(Op::NoCase),
        Just(Op::CheckReturn),
        (strings, 0u16..3).prop_map(|(s, k)| Op::MakeObject(s, k)),
        (0u32..4).prop_map(Op::Index),
        cmp_op().prop_map(Op::Compare),
        (0u16..4).prop_map(Op::MakeArray),
        (0u32..64).prop_map(Op::Jump),
        (0u32..64).prop_map(Op::JumpIfFalse),
        (0u32..64).prop_map(Op::JumpIfTrue),
        (0u32..64).prop_map(Op::JumpIfFailed),
        (0..BUILTINS.len() as u16, any::<u8>()).prop_map(|(id, n)| {
            let b = &BUILTINS[id as usize];
            let spread = b.max_arity() - b.min_arity() + 1;
            Op::Builtin(id, (b.min_arity() + n as usize % spread) as u8)
        }),
        (0..FUNCTIONS as u32).prop_map(|f| Op::Call(f, f as u8)),
        (0..FUNCTIONS as u32).prop_map(|f| Op::Spawn(f, f as u16)),
        (0u16..3).prop_map(Op::EachStart),
        (0u32..2).prop_map(Op::Atomic),
        (0u32..2, 0..LOCALS, any::<bool>()).prop_map(|(t, i, f)| Op::AtomicAccumulated(t, i, f)),
        (0u32..2).prop_map(Op::Script),
        (0u16..3, 0u16..3).prop_map(|(s, t)| Op::FailSequence(s, t)),
        (0u8..3).prop_map(Op::EndLoop),
        prop::sample::select(vec![Quote::Bare, Quote::Double, Quote::Single])
            .prop_map(Op::ShellQuoteIn),
        prop::sample::select(vec![
            Op::Evaluation,
            Op::Pop,
            Op::Dup,
            Op::Not,
            Op::Return,
            Op::ReturnIfFailed,
            Op::Value,
            Op::Complete,
            Op::ShellQuote,
            Op::LoopGuard,
            Op::FailReduce,
            Op::TextValue,
            Op::Items,
            Op::EachMore,
            Op::EachNext,
            Op::EachEnd,
            Op::MapResult,
        ]),
    ];
    prop_oneof![
        10 => ops.prop_map(Piece::Op),
        1 => (1u8..4, 0..FUNCTIONS as u8).prop_map(|(n, f)| Piece::Gather(n, f)),
        1 => (0u16..3, 0..FUNCTIONS as u8).prop_map(|(n, f)| Piece::Map(n, f)),
    ]
    .boxed()
}

/// Straight-line code, and the stack depth and the branches held before each
/// instruction.
#[derive(Default)]
struct Code {
    ops: Vec<Op>,
    depth: Vec<(usize, usize)>,
    d: usize,
    held: usize,
    /// Jumps of a map's loop, which keep their targets.
    fixed: Vec<usize>,
}

impl Code {
    /// Appends `op` after as many constants as it needs to find on the stack.
    fn emit(&mut self, op: Op) {
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
    }
}

impl Code {
    /// A map as the compiler writes it (the items and their indices dropped), its
    /// jumps aimed where they belong.
    fn map(&mut self, n: u16, f: u8) {
        let f = u32::from(f) % FUNCTIONS as u32;
        self.items();
        let start = self.ops.len() as u32;
        let (top, done) = (start + 2, start + 9 + f);
        self.fix(Op::JumpIfFailed(done + 2));
        self.emit(Op::EachStart(n));
        self.emit(Op::EachMore);
        self.fix(Op::JumpIfFalse(done));
        self.emit(Op::EachNext);
        self.emit(Op::Pop);
        self.emit(Op::Pop);
        (0..f).for_each(|a| self.emit(Op::Const(FIRST_STRING + a)));
        self.emit(Op::Spawn(f, f as u16));
        self.fix(Op::Jump(top));
        assert_eq!(self.ops.len() as u32, done);
        self.emit(Op::EachEnd);
        self.emit(Op::MapResult);
    }

    /// Two strings in an array, through `Items`.
    fn items(&mut self) {
        self.emit(Op::Const(FIRST_STRING));
        self.emit(Op::Const(FIRST_STRING + 1));
        self.emit(Op::MakeArray(2));
        self.emit(Op::Items);
    }

    fn fix(&mut self, jump: Op) {
        self.fixed.push(self.ops.len());
        self.emit(jump);
    }
}

/// Code whose stack never runs short, ending in `Return`, with every jump aimed at
/// an instruction where the stack is as deep as after the jump (and no branch is
/// held, as at every jump).
fn balanced(pieces: &[Piece]) -> Vec<Op> {
    let mut c = Code::default();
    for p in pieces {
        match *p {
            Piece::Op(op) => c.emit(op),
            Piece::Gather(n, f) => {
                for k in 0..n {
                    let f = (f + k) as u32 % FUNCTIONS as u32;
                    (0..f).for_each(|a| c.emit(Op::Const(FIRST_STRING + a)));
                    c.emit(Op::Branch(f, f as u16));
                }
                c.emit(Op::Gather(n.into()));
            }
            Piece::Map(n, f) => c.map(n, f),
        }
    }
    if c.d == 0 {
        c.emit(Op::Const(0));
    }
    c.emit(Op::Return);
    let Code {
        mut ops,
        depth,
        fixed,
        ..
    } = c;
    for pc in 0..ops.len() {
        let Some(choice) = ops[pc].target().filter(|_| !fixed.contains(&pc)) else {
            continue;
        };
        let (pops, pushes) = ops[pc].stack_effect().unwrap_or((0, 0));
        let after = (depth[pc].0 - pops + pushes, depth[pc].1);
        // Control falls through to `pc + 1`, so there is always one that fits.
        let fits: Vec<usize> = (0..ops.len()).filter(|&t| depth[t] == after).collect();
        let t = fits[choice as usize % fits.len()] as u32;
        ops[pc] = ops[pc].with_target(t);
    }
    ops
}

fn bundle(functions: Vec<Vec<Piece>>) -> Bundle {
    let functions = functions
        .iter()
        .enumerate()
        .map(|(i, pieces)| {
            let code = balanced(pieces);
            Function {
                name: format!("f{i}"),
                params: (0..i)
                    .map(|p| Param {
                        name: format!("p{p}"),
                        ty: ValueType::ANY,
                        doc: String::new(),
                    })
                    .collect(),
                locals: LOCALS,
                lines: vec![Loc::default(); code.len()],
                code,
                returns: ValueType::parse(["any", "object", "string"][i % 3]).expect("a type"),
                matchable: None,
                doc: String::new(),
            }
        })
        .collect();
    let mut json = TaskMeta::named("json");
    json.output = Output::Json(ValueType::parse("object"));
    Bundle {
        compiler_version: "proptest".into(),
        constants: constants(),
        functions,
        tasks: vec![Arc::new(TaskMeta::named("text")), Arc::new(json)],
        entries: (0..FUNCTIONS)
            .map(|i| Entry {
                name: format!("f{i}"),
                function: i as u32,
            })
            .collect(),
        files: vec!["proptest.xml".into()],
    }
}

/// What the model says: text, JSON, JSON cut short, or a request for a subtask.
fn reply() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,24}",
        (any::<i32>(), "[a-z]{0,8}").prop_map(|(n, s)| json!({"n": n, "s": s}).to_string()),
        (0usize..12).prop_map(|cut| r#"{"answer": [1, 2, {"x": "#.chars().take(cut).collect()),
        "[a-z ]{0,16}".prop_map(|d| {
            json!({"status": "CONTINUATION", "subtask_request":
                {"type": "atomic", "description": d, "inputs": {"p0": d}, "template_hints": ["f1"]}})
            .to_string()
        }),
    ]
}

fn small_limits() -> Limits {
    Limits {
        call_depth: 6,
        subtask_depth: 2,
        loop_iterations: 10,
        turns: 16,
        instructions: 2_000,
        memory: 16 << 20,
        ..Limits::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_programs_that_verify_run_to_their_end_without_panicking(
        functions in prop::collection::vec(prop::collection::vec(piece(), 0..40), FUNCTIONS),
        replies in prop::collection::vec(reply(), 1..6),
        arg in prop_oneof![Just(json!(null)), Just(json!("text")), Just(json!({"content": [1, 2]}))],
    ) {
        let b = bundle(functions);
        prop_assume!(tv_vm::bundle::verify::verify(&b).is_ok());
        let back = Bundle::from_bytes(&b.to_bytes()).expect("a verified bundle loads back");
        let mut turn = 0;
        let mut host = scripted(|_| {
            turn += 1;
            replies[turn % replies.len()].clone()
        });
        for i in 0..FUNCTIONS {
            let args = json!({"p0": arg, "p1": arg});
            run_with(&back, &format!("f{i}"), args, small_limits(), &mut host);
        }
    }
}

#[test]
fn a_map_piece_verifies_and_runs_a_body_per_item() {
    let body = vec![Piece::Op(Op::Load(0)), Piece::Op(Op::Complete)];
    let b = bundle(vec![vec![Piece::Map(1, 1)], body, vec![]]);
    let b = Verified::new(b).expect("verifies");
    let mut host = scripted(|_| String::new());
    let r = run_with(&b, "f0", json!({}), small_limits(), &mut host);
    // `f0` returns the map's result: one value per item, each body's argument.
    assert_eq!(r["parsedContent"], json!(["content", "content"]), "{r}");
}
