//! The instruction set. One enum; each variant documents its stack effect as
//! `[inputs] -> [outputs]` (top of stack last).
//!
//! Bundles store opcodes by variant index, so variants are only ever appended: a new
//! opcode goes at the end, and a changed meaning bumps [`crate::bundle::VERSION`].

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// `[] -> [constants[i]]`
    Const(u32),
    /// `[] -> [locals[i]]`
    Load(u16),
    /// `[v] -> []`, into `locals[i]`
    Store(u16),
    /// `[v] -> []`
    Pop,
    /// `[v] -> [v v]`
    Dup,
    /// `[v] -> [v.name]`, the name is string constant `i`; null when absent
    Field(u32),
    /// `[v] -> [v[i]]`; null when absent
    Index(u32),
    /// `[v] -> [!truthy(v)]`
    Not,
    /// `[a b] -> [a op b]`
    Compare(CmpOp),
    /// `[] -> []`, continue at the target
    Jump(u32),
    /// `[v] -> []`, jump when `v` is falsy
    JumpIfFalse(u32),
    /// `[v] -> []`, jump when `v` is truthy
    JumpIfTrue(u32),
    /// `[v1 .. vn] -> [text]`: strings as they are, other values as JSON
    Concat(u16),
    /// `[a1 .. an] -> [result]`: built-in function `id` of the standard library
    Builtin(u16, u8),
    /// `[a1 .. an] -> [task result]`: a new frame for function `f`
    Call(u32, u8),
    /// `[task result] -> ` the caller's stack
    Return,
    /// `[task result] -> [value]`: `parsedContent` when present, else `content`
    Value,
    /// `[system prompt context] -> [task result]`: an LLM host call for task `meta`
    Atomic(u32),
    /// `[command inputs] -> [task result]`: a script host call for task `meta`
    Script(u32),
    /// `[v1 .. vn] -> [array]`
    MakeArray(u16),
    /// `[v1 .. vn] -> [object]`, keys are the `n` string constants from `first_key`
    MakeObject(u32, u16),
    /// `[v] -> [COMPLETE result whose content is the text of v]`
    Complete,
    /// `[r] -> [r]`, jump when task result `r` failed
    JumpIfFailed(u32),
    /// `[partial_results failed] -> [FAILED result]` of step `step` of `total`
    FailSequence(u16, u16),
    /// `[v] -> []`, appends `v` to the array in `locals[i]`
    Append(u16),
    /// `[array index] -> [array[index]]`
    IndexDyn,
    /// `[] -> []`: one more iteration of a loop; fails past the iteration limit
    LoopGuard,
    /// `[results] -> [text]`: earlier step results as context (`true`: full output).
    /// The compiler now emits [`Op::AccumulateLocal`]; this stays for bundles that use it.
    Accumulate(bool),
    /// `[processed accumulator failed index total] -> [FAILED result]` of a reduce
    FailReduce,
    /// `[r] -> [r]`: checks the value of result `r` against return type constant `i`
    CheckReturn(u32),
    /// `[r] -> [r]`; when task result `r` failed, the frame returns it at once
    ReturnIfFailed,
    /// `[v] -> [text]`: the text of `v` quoted for a POSIX shell
    ShellQuote,
    /// `[] -> []`: `locals[i] += 1`
    Increment(u16),
    /// `[c1 .. cn] -> [results]`: runs the calls `ci = [function, args...]` as
    /// concurrent branches and waits for all of them
    Gather(u16),
    /// `[] -> [text]`: the step results in `locals[i]` as context, read in place
    /// (`true`: full output)
    AccumulateLocal(u16, bool),
    /// `[r] -> [r]`: `locals[i]` = the value of task result `r`, which stays on the
    /// stack; spares the copy of the whole result that `Dup, Value, Store` makes
    KeepValue(u16),
    /// `[text] -> [text + constants[i]]`: appends a literal part, in place
    TextConst(u32),
    /// `[text] -> [text + text(locals[i])]`: appends a variable part, in place
    TextLocal(u16),
    /// `[text v] -> [text + text(v)]`: appends a computed part
    TextValue,
    /// `[system prompt] -> [task result]`: [`Op::Atomic`] for task `meta`, with the step
    /// results in `locals[i]` as its context (`true`: full output). The context is
    /// shared with the request, not built as a value.
    AtomicAccumulated(u32, u16, bool),
    /// `[r] -> [r]`: the evaluator's result read as an EvaluationResult: its value
    /// becomes `{success: boolean, feedback?: string, ...}` parsed from the reply, or the
    /// result fails with `output_format_failure` when the reply is not one
    Evaluation,
    /// `[result evaluation iterations] -> [result]`: the end of a director-evaluator
    /// loop, with `notes.iterations` and `notes.evaluation`. `mode`: [`LOOP_SUCCEEDED`],
    /// [`LOOP_EXHAUSTED`] (a `max_iterations_reached` failure carrying the last
    /// director result and evaluation) or [`LOOP_ACCEPTED`] (complete, with
    /// `notes.iterationsExhausted`)
    EndLoop(u8),
    /// `[v] -> [text]`: the text of `v` quoted for where it stands in a shell command
    /// (see [`Quote`]). [`Op::ShellQuote`] is this with [`Quote::Bare`], which the
    /// compiler still emits for bare words, so such bundles stay readable by older
    /// machines.
    ShellQuoteIn(Quote),
    /// `[system prompt context query] -> [task result]`: [`Op::Atomic`] whose
    /// fresh-context look-up searches with `query` (the inputs `context_relevance`
    /// keeps) instead of the whole request
    AtomicFocused(u32),
    /// `[r] -> [r]`: the end of a composite task `meta`: its `criteria` is copied into
    /// result `r`, and a JSON `output_format` parses and checks the result's value (a
    /// mismatch fails it with `output_format_failure`)
    Finish(u32),
}

/// Where a value stands in a script command, which decides how it is quoted so that
/// it stays one piece of text and never becomes shell code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Quote {
    /// A word of its own or part of one, outside quotes: `'...'` around the value.
    Bare,
    /// Inside the author's `"..."`: `\`, `"`, `$` and `` ` `` get a backslash.
    Double,
    /// Inside the author's `'...'`: each `'` of the value becomes `'\''`.
    Single,
}

impl Quote {
    pub fn as_str(self) -> &'static str {
        match self {
            Quote::Bare => "bare",
            Quote::Double => "double",
            Quote::Single => "single",
        }
    }
}

/// [`Op::EndLoop`]: the loop stopped because its evaluator or condition said so.
pub const LOOP_SUCCEEDED: u8 = 0;
/// [`Op::EndLoop`]: the loop ran out of iterations, and that fails it.
pub const LOOP_EXHAUSTED: u8 = 1;
/// [`Op::EndLoop`]: the loop ran out of iterations, and the task accepts its last result.
pub const LOOP_ACCEPTED: u8 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

impl Op {
    /// Values popped and pushed; `None` for `Return`, which ends the frame.
    pub fn stack_effect(self) -> Option<(usize, usize)> {
        use Op::*;
        Some(match self {
            Const(_) | Load(_) | AccumulateLocal(..) => (0, 1),
            Store(_) | Pop | JumpIfFalse(_) | JumpIfTrue(_) | Append(_) => (1, 0),
            Dup => (1, 2),
            Field(_) | Index(_) | Not | Value | Complete | CheckReturn(_) | ReturnIfFailed
            | ShellQuote | KeepValue(_) | TextConst(_) | TextLocal(_) | Evaluation
            | ShellQuoteIn(_) | Finish(_) => (1, 1),
            Compare(_) | IndexDyn | Script(_) | TextValue => (2, 1),
            Jump(_) | LoopGuard | Increment(_) => (0, 0),
            Concat(n) | MakeArray(n) | MakeObject(_, n) | Gather(n) => (n as usize, 1),
            Builtin(_, n) | Call(_, n) => (n as usize, 1),
            Return => return None,
            Atomic(_) => (3, 1),
            AtomicFocused(_) => (4, 1),
            AtomicAccumulated(..) => (2, 1),
            JumpIfFailed(_) => (1, 1),
            FailSequence(..) => (2, 1),
            Accumulate(_) => (1, 1),
            FailReduce => (5, 1),
            EndLoop(_) => (3, 1),
        })
    }

    /// The jump target, for the verifier and the disassembler.
    pub fn target(self) -> Option<u32> {
        match self {
            Op::Jump(t) | Op::JumpIfFalse(t) | Op::JumpIfTrue(t) | Op::JumpIfFailed(t) => Some(t),
            _ => None,
        }
    }

    /// The constant this instruction names (for `MakeObject`, its first key), to be
    /// renumbered when constants are pooled. Every opcode is listed, so a new one must
    /// say whether it names a constant.
    pub fn constant_mut(&mut self) -> Option<&mut u32> {
        use Op::*;
        match self {
            Const(i) | Field(i) | CheckReturn(i) | TextConst(i) | MakeObject(i, _) => Some(i),
            Load(_)
            | Store(_)
            | Pop
            | Dup
            | Index(_)
            | Not
            | Compare(_)
            | Jump(_)
            | JumpIfFalse(_)
            | JumpIfTrue(_)
            | Concat(_)
            | Builtin(..)
            | Call(..)
            | Return
            | Value
            | Atomic(_)
            | Script(_)
            | MakeArray(_)
            | Complete
            | JumpIfFailed(_)
            | FailSequence(..)
            | Append(_)
            | IndexDyn
            | LoopGuard
            | Accumulate(_)
            | FailReduce
            | ReturnIfFailed
            | ShellQuote
            | Increment(_)
            | Gather(_)
            | AccumulateLocal(..)
            | KeepValue(_)
            | TextLocal(_)
            | TextValue
            | AtomicAccumulated(..)
            | Evaluation
            | EndLoop(_)
            | ShellQuoteIn(_)
            | AtomicFocused(_)
            | Finish(_) => None,
        }
    }

    /// The same jump to `target` (code generation patches forward jumps); any other
    /// instruction as it is.
    pub fn with_target(self, target: u32) -> Op {
        match self {
            Op::Jump(_) => Op::Jump(target),
            Op::JumpIfFalse(_) => Op::JumpIfFalse(target),
            Op::JumpIfTrue(_) => Op::JumpIfTrue(target),
            Op::JumpIfFailed(_) => Op::JumpIfFailed(target),
            op => op,
        }
    }
}
