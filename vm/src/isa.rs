//! The instruction set. One enum; each variant documents its stack effect as
//! `[inputs] -> [outputs]` (top of stack last).
//!
//! Bundles store opcodes by variant index. Between two format versions variants are
//! only appended, so that bundles already written keep their meaning; a bump of
//! [`crate::bundle::VERSION`] may renumber them. Format 4 did, grouping them by what
//! they work on, and dropped the opcodes the compiler no longer emitted.

use bincode::{Decode, Encode};

/// One instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Encode, Decode)]
pub enum Op {
    // The stack and the frame's locals.
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
    /// `[] -> []`: `locals[i] += 1`
    Increment(u16),
    /// `[v] -> []`, appends `v` to the array in `locals[i]`
    Append(u16),

    // Values.
    /// `[v] -> [v.name]`, the name is string constant `i`; null when absent
    Field(u32),
    /// `[v] -> [v[i]]`; null when absent
    Index(u32),
    /// `[v] -> [!truthy(v)]`
    Not,
    /// `[a b] -> [a op b]`
    Compare(CmpOp),
    /// `[v1 .. vn] -> [array]`
    MakeArray(u16),
    /// `[v1 .. vn] -> [object]`, keys are the `n` string constants from `first_key`
    MakeObject(u32, u16),
    /// `[a1 .. an] -> [result]`: built-in function `id` of the standard library
    Builtin(u16, u8),

    // Text, built in place.
    /// `[text] -> [text + constants[i]]`: appends a literal part
    TextConst(u32),
    /// `[text] -> [text + text(locals[i])]`: appends a variable part
    TextLocal(u16),
    /// `[text v] -> [text + text(v)]`: appends a computed part
    TextValue,
    /// `[v] -> [text]`: the text of `v` quoted for a POSIX shell as a bare word; what
    /// the compiler emits for a bare word ([`Op::ShellQuoteIn`] with [`Quote::Bare`]
    /// would do the same)
    ShellQuote,
    /// `[v] -> [text]`: the text of `v` quoted for where it stands in a shell command
    /// (see [`Quote`])
    ShellQuoteIn(Quote),

    // Control.
    /// `[] -> []`, continue at the target
    Jump(u32),
    /// `[v] -> []`, jump when `v` is falsy
    JumpIfFalse(u32),
    /// `[v] -> []`, jump when `v` is truthy
    JumpIfTrue(u32),
    /// `[r] -> [r]`, jump when task result `r` failed
    JumpIfFailed(u32),
    /// `[] -> []`: one more iteration of a loop; fails past the iteration limit
    LoopGuard,

    // Calls.
    /// `[a1 .. an] -> [task result]`: a new frame for function `f`
    Call(u32, u8),
    /// `[a1 .. an] -> []`: the call of function `f` with these arguments becomes a
    /// branch, held by the frame until the next [`Op::Gather`] runs it
    Branch(u32, u16),
    /// `[] -> [results]`: runs the frame's `n` branches concurrently, waits for all of
    /// them, and pushes their results in the order of their `Branch` instructions
    Gather(u16),
    /// `[task result] -> ` the caller's stack
    Return,
    /// `[r] -> [r]`; when task result `r` failed, the frame returns it at once
    ReturnIfFailed,

    // Host calls.
    /// `[system prompt context] -> [task result]`: an LLM host call for task `meta`
    Atomic(u32),
    /// `[system prompt] -> [task result]`: [`Op::Atomic`] for task `meta`, with the step
    /// results in `locals[i]` as its context (`true`: full output). The context is
    /// shared with the request, not built as a value.
    AtomicAccumulated(u32, u16, bool),
    /// `[system prompt context query] -> [task result]`: [`Op::Atomic`] whose
    /// fresh-context look-up searches with `query` (the inputs `context_relevance`
    /// keeps) instead of the whole request
    AtomicFocused(u32),
    /// `[command inputs] -> [task result]`: a script host call for task `meta`
    Script(u32),

    // Task results.
    /// `[task result] -> [value]`: `parsedContent` when present, else `content`
    Value,
    /// `[r] -> [r]`: `locals[i]` = the value of task result `r`, which stays on the
    /// stack; spares the copy of the whole result that `Dup, Value, Store` makes
    KeepValue(u16),
    /// `[] -> [text]`: the step results in `locals[i]` as context, read in place
    /// (`true`: full output)
    AccumulateLocal(u16, bool),
    /// `[v] -> [COMPLETE result whose content is the text of v]`
    Complete,
    /// `[r] -> [r]`: checks the value of result `r` against the running function's
    /// declared `returns` (a mismatch fails it with `output_format_failure`)
    CheckReturn,
    /// `[r] -> [r]`: the end of a composite task `meta`: its `criteria` is copied into
    /// result `r`, and a JSON `output_format` parses and checks the result's value (a
    /// mismatch fails it with `output_format_failure`)
    Finish(u32),
    /// `[partial_results failed] -> [FAILED result]` of step `step` of `total`
    FailSequence(u16, u16),
    /// `[processed accumulator failed index total] -> [FAILED result]` of a reduce
    FailReduce,
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

    // Lists known at run time (DESIGN §14): a frame iterates over an array with
    // `EachStart` .. `EachEnd`, its loop written in bytecode; a map starts one
    // concurrent body per item with `Spawn`.
    /// `[v] -> [v]`: `v` when it is an array, else a FAILED result
    /// (`input_validation_failure`) naming the type of `v`
    Items,
    /// `[items] -> []`: begins an iteration over the array `items`: the frame's
    /// innermost one until its [`Op::EachEnd`]. At most `n` of the bodies it starts
    /// run at once (0: [`crate::limits::Limits::concurrency`]).
    EachStart(u16),
    /// `[] -> [more]`: whether the innermost iteration has an item left to start and
    /// none of its bodies has failed. With as many of its bodies running as it allows,
    /// the machine first waits for one of them to end (`Step::Await`).
    EachMore,
    /// `[] -> [item index]`: the innermost iteration's next item, and its index
    EachNext,
    /// `[a1 .. an] -> []`: the call of function `f` with these arguments starts as a
    /// concurrent body of the innermost iteration (`Step::Spawn`), the body of the
    /// item [`Op::EachNext`] gave last
    Spawn(u32, u16),
    /// `[] -> [results]`: waits until none of the innermost iteration's bodies is
    /// running, ends the iteration, and pushes its bodies' results in item order
    /// (`null` for an item whose body never started)
    EachEnd,
    /// `[results] -> [result]`: a map's result from its bodies' results: COMPLETE, its
    /// value the bodies' values in order; or FAILED for the first item whose body
    /// failed, with `failedIndex`, `totalItems` and `partialResults`
    MapResult,

    // Script commands (DESIGN §18).
    /// `[v] -> [v]`: `v`, unless its text starts with `-`: then a FAILED result
    /// (`input_validation_failure`) naming the hole `constants[i]`, the value of a
    /// script command's hole that stands as a word of its own, which the command would
    /// read as an option
    CheckOption(u32),
    /// `[v] -> [FAILED result]`: no case of a `cond` that says `otherwise="fail"`
    /// held: a TASK_FAILURE (`input_validation_failure`) naming the cond's place (this
    /// instruction's source position) and `v`, the value its cases compare; string
    /// constant `i` is that value as the source writes it (`output.severity`), empty
    /// when the cases test no one value
    NoCase(u32),
}

/// Where a value stands in a script command, which decides how it is quoted so that
/// it stays one piece of text and never becomes shell code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Encode, Decode)]
pub enum Quote {
    /// A word of its own or part of one, outside quotes: `'...'` around the value.
    Bare,
    /// Inside the author's `"..."`: `\`, `"`, `$` and `` ` `` get a backslash.
    Double,
    /// Inside the author's `'...'`: each `'` of the value becomes `'\''`.
    Single,
}

impl Quote {
    /// Its name in listings.
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

/// The comparison [`Op::Compare`] makes, by the standard library's value rules:
/// numbers by value, strings by code point, other kinds only equal or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Encode, Decode)]
pub enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// The operator as templates write it.
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
            Const(_) | Load(_) | AccumulateLocal(..) | Gather(_) | EachMore | EachEnd => (0, 1),
            Store(_) | Pop | JumpIfFalse(_) | JumpIfTrue(_) | Append(_) | EachStart(_) => (1, 0),
            EachNext => (0, 2),
            Spawn(_, n) => (n as usize, 0),
            Dup => (1, 2),
            Field(_) | Index(_) | Not | Value | Complete | CheckReturn | ReturnIfFailed
            | ShellQuote | KeepValue(_) | TextConst(_) | TextLocal(_) | Evaluation
            | ShellQuoteIn(_) | Finish(_) | JumpIfFailed(_) | Items | MapResult
            | CheckOption(_) | NoCase(_) => (1, 1),
            Compare(_) | Script(_) | TextValue | FailSequence(..) => (2, 1),
            Jump(_) | LoopGuard | Increment(_) => (0, 0),
            MakeArray(n) | MakeObject(_, n) => (n as usize, 1),
            Builtin(_, n) | Call(_, n) => (n as usize, 1),
            Branch(_, n) => (n as usize, 0),
            Return => return None,
            Atomic(_) | EndLoop(_) => (3, 1),
            AtomicFocused(_) => (4, 1),
            AtomicAccumulated(..) => (2, 1),
            FailReduce => (5, 1),
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
            Const(i) | Field(i) | TextConst(i) | MakeObject(i, _) | CheckOption(i) | NoCase(i) => {
                Some(i)
            }
            Load(_)
            | Store(_)
            | Pop
            | Dup
            | Increment(_)
            | Append(_)
            | Index(_)
            | Not
            | CheckReturn
            | Compare(_)
            | MakeArray(_)
            | Builtin(..)
            | TextLocal(_)
            | TextValue
            | ShellQuote
            | ShellQuoteIn(_)
            | Jump(_)
            | JumpIfFalse(_)
            | JumpIfTrue(_)
            | JumpIfFailed(_)
            | LoopGuard
            | Call(..)
            | Branch(..)
            | Gather(_)
            | Return
            | ReturnIfFailed
            | Atomic(_)
            | AtomicAccumulated(..)
            | AtomicFocused(_)
            | Script(_)
            | Value
            | KeepValue(_)
            | AccumulateLocal(..)
            | Complete
            | Finish(_)
            | FailSequence(..)
            | FailReduce
            | Evaluation
            | EndLoop(_)
            | Items
            | EachStart(_)
            | EachMore
            | EachNext
            | Spawn(..)
            | EachEnd
            | MapResult => None,
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
