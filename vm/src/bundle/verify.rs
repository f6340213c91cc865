//! The verifier: proves, before anything runs, that every index an instruction uses
//! is in range, every call and branch passes its function as many arguments as it
//! takes, every jump lands on an instruction, and the stack depth at every instruction
//! is the same on all paths, never negative, and at least one at `Return`; so is the
//! number of branches a frame holds, which each `Gather` takes exactly. Stored types
//! nest no deeper than a written type may. The interpreter still checks its indices,
//! but a verified bundle never trips them. Iterations (`EachStart` .. `EachEnd`) are
//! not followed here: their instructions act on whichever is innermost when they
//! run, and the interpreter faults when there is none or a body is started out of
//! turn, so a bundle that misuses them fails its run instead of breaking the machine.

use super::{Bundle, Const, Function, Output, ValueType, MAX_STOP_SEQUENCES};
use crate::isa::Op;
use tv_stdlib::builtins::BUILTINS;

/// The deepest operand stack a frame may need.
pub(crate) const MAX_STACK: usize = 4096;

/// What verifying one function needs of the rest of its bundle: a whole [`Bundle`], or
/// what [`super::lean`] keeps of one while it reads a bundle function by function.
pub(super) trait Around {
    fn constant(&self, i: u32) -> Option<&Const>;
    fn tasks(&self) -> usize;
    fn files(&self) -> usize;
    /// Function `f`'s name and number of parameters.
    fn callee(&self, f: u32) -> Option<(&str, usize)>;
}

impl Around for Bundle {
    fn constant(&self, i: u32) -> Option<&Const> {
        self.constants.get(i as usize)
    }
    fn tasks(&self) -> usize {
        self.tasks.len()
    }
    fn files(&self) -> usize {
        self.files.len()
    }
    fn callee(&self, f: u32) -> Option<(&str, usize)> {
        let g = self.functions.get(f as usize)?;
        Some((&g.name, g.params.len()))
    }
}

/// Verifies a whole bundle; the error says what is wrong and in which function.
pub fn verify(b: &Bundle) -> Result<(), String> {
    for (i, f) in b.functions.iter().enumerate() {
        verify_function(b, f).map_err(|e| in_function(i, f, e))?;
    }
    verify_rest(b.functions.len(), &b.entries, &b.tasks, b.files.len())
}

/// An error of function `i`, as the verifier words it.
pub(super) fn in_function(i: usize, f: &Function, e: String) -> String {
    format!("function {i} (`{}`): {e}", f.name)
}

/// The checks of what is not a function: entries and tasks.
pub(super) fn verify_rest(
    functions: usize,
    entries: &[super::Entry],
    tasks: &[std::sync::Arc<super::TaskMeta>],
    files: usize,
) -> Result<(), String> {
    verify_entries(functions, entries)?;
    tasks.iter().try_for_each(|t| verify_task(t, files))
}

/// Each entry names a function.
pub(super) fn verify_entries(functions: usize, entries: &[super::Entry]) -> Result<(), String> {
    for e in entries {
        if e.function as usize >= functions {
            return Err(format!(
                "entry `{}` names function {}, which does not exist",
                e.name, e.function
            ));
        }
    }
    Ok(())
}

/// A task's settings, output type and place.
pub(super) fn verify_task(t: &super::TaskMeta, files: usize) -> Result<(), String> {
    if let Some(stop) = &t.settings.stop {
        if stop.is_empty() || stop.len() > MAX_STOP_SEQUENCES || stop.iter().any(String::is_empty) {
            return Err(format!(
                "task `{}`: stop sequences must be 1 to {MAX_STOP_SEQUENCES}, none empty",
                t.name
            ));
        }
    }
    if let Output::Json(Some(ty)) = &t.output {
        valid(ty).map_err(|e| format!("task `{}`: its output format {e}", t.name))?;
    }
    if t.loc.file as usize >= files {
        return Err(format!(
            "task `{}` points into file {}, which does not exist",
            t.name, t.loc.file
        ));
    }
    Ok(())
}

pub(super) fn verify_function(b: &impl Around, f: &Function) -> Result<(), String> {
    if f.code.is_empty() {
        return Err("no code".into());
    }
    if f.locals > crate::limits::MAX_LOCALS {
        return Err(format!(
            "{} locals, more than the {} a frame may have",
            f.locals,
            crate::limits::MAX_LOCALS
        ));
    }
    if f.lines.len() != f.code.len() {
        return Err("the source map does not cover every instruction".into());
    }
    if (f.locals as usize) < f.params.len() {
        return Err("fewer locals than parameters".into());
    }
    for p in &f.params {
        valid(&p.ty).map_err(|e| format!("parameter `{}`: {e}", p.name))?;
    }
    valid(&f.returns).map_err(|e| format!("its return type {e}"))?;
    for (pc, (op, loc)) in f.code.iter().zip(&f.lines).enumerate() {
        check_operands(b, f, *op).map_err(|e| format!("pc {pc}: {e}"))?;
        if loc.file as usize >= b.files() {
            return Err(format!("pc {pc}: source file {} does not exist", loc.file));
        }
    }
    check_stack(f)
}

fn check_operands(b: &impl Around, f: &Function, op: Op) -> Result<(), String> {
    let constant = |i: u32| {
        b.constant(i)
            .ok_or_else(|| format!("constant {i} does not exist"))
    };
    let string = |i: u32| match constant(i)? {
        Const::Str(_) => Ok(()),
        _ => Err(format!("constant {i} is not a string")),
    };
    let local = |i: u16| {
        if i < f.locals {
            Ok(())
        } else {
            Err(format!("local {i} does not exist"))
        }
    };
    let task = |t: u32| {
        if (t as usize) < b.tasks() {
            Ok(())
        } else {
            Err(format!("task {t} does not exist"))
        }
    };
    match op {
        Op::Const(i) | Op::TextConst(i) => constant(i).map(|_| ()),
        Op::Load(i)
        | Op::Store(i)
        | Op::Append(i)
        | Op::Increment(i)
        | Op::AccumulateLocal(i, _)
        | Op::KeepValue(i)
        | Op::TextLocal(i) => local(i),
        Op::Field(i) | Op::CheckOption(i) | Op::NoCase(i) => string(i),
        Op::MakeObject(first, n) => {
            (0..u32::from(n)).try_for_each(|k| string(first.saturating_add(k)))
        }
        Op::Builtin(id, argc) => {
            let builtin = BUILTINS
                .get(id as usize)
                .ok_or_else(|| format!("built-in {id} does not exist"))?;
            let argc = argc as usize;
            if argc < builtin.min_arity() || argc > builtin.max_arity() {
                return Err(format!("`{}` called with {argc} arguments", builtin.name));
            }
            Ok(())
        }
        Op::Call(callee, argc) => call(b, callee, argc.into()),
        Op::Branch(callee, argc) | Op::Spawn(callee, argc) => call(b, callee, argc.into()),
        Op::EachStart(n) if n > crate::limits::MAX_CONCURRENCY => Err(format!(
            "EachStart of {n} bodies at once, more than {}",
            crate::limits::MAX_CONCURRENCY
        )),
        Op::Atomic(t) | Op::Script(t) | Op::AtomicFocused(t) | Op::Finish(t) => task(t),
        Op::AtomicAccumulated(t, i, _) => task(t).and_then(|_| local(i)),
        Op::EndLoop(mode) if mode > crate::isa::LOOP_ACCEPTED => {
            Err(format!("EndLoop mode {mode} does not exist"))
        }
        _ => match op.target() {
            Some(t) if t as usize >= f.code.len() => Err(format!("jump to {t}, past the end")),
            _ => Ok(()),
        },
    }
}

/// A call of function `callee` with `argc` arguments, or a branch that makes one.
fn call(b: &impl Around, callee: u32, argc: usize) -> Result<(), String> {
    let (name, params) = b
        .callee(callee)
        .ok_or_else(|| format!("function {callee} does not exist"))?;
    if params != argc {
        return Err(format!(
            "`{name}` called with {argc} arguments, takes {params}"
        ));
    }
    Ok(())
}

fn valid(t: &ValueType) -> Result<(), String> {
    if t.is_valid() {
        Ok(())
    } else {
        Err("nests deeper or holds more types than a written type may".to_string())
    }
}

/// Abstract interpretation of the stack depth, and of the branches the frame holds,
/// over the control-flow graph.
fn check_stack(f: &Function) -> Result<(), String> {
    let mut state: Vec<Option<(usize, usize)>> = vec![None; f.code.len()];
    let mut work = vec![(0usize, 0usize, 0usize)];
    while let Some((pc, d, held)) = work.pop() {
        let Some(op) = f.code.get(pc).copied() else {
            return Err(format!("control runs past the end at pc {pc}"));
        };
        match state[pc] {
            Some(seen) if seen == (d, held) => continue,
            Some((seen, _)) if seen != d => {
                return Err(format!(
                    "pc {pc}: stack depth {d} here but {seen} on another path"
                ))
            }
            Some((_, seen)) => {
                return Err(format!(
                    "pc {pc}: {held} branches held here but {seen} on another path"
                ))
            }
            None => state[pc] = Some((d, held)),
        }
        // A `Gather` runs exactly the branches made since the last one; a frame that
        // returns drops any it holds.
        let held = match op {
            Op::Branch(..) if held >= usize::from(u16::MAX) => {
                return Err(format!("pc {pc}: more branches than a `Gather` runs"))
            }
            Op::Branch(..) => held + 1,
            Op::Gather(n) if usize::from(n) != held => {
                return Err(format!(
                    "pc {pc}: `Gather` of {n} branches where {held} are held"
                ))
            }
            Op::Gather(_) => 0,
            _ => held,
        };
        // `Return` takes the top value and drops the rest of the frame's stack.
        let Some((pops, pushes)) = op.stack_effect() else {
            if d < 1 {
                return Err(format!("pc {pc}: `Return` with an empty stack"));
            }
            continue;
        };
        if d < pops {
            return Err(format!(
                "pc {pc}: {op:?} needs {pops} values, the stack holds {d}"
            ));
        }
        let after = d - pops + pushes;
        if after > MAX_STACK {
            return Err(format!("pc {pc}: the stack grows past {MAX_STACK}"));
        }
        if let Some(t) = op.target() {
            work.push((t as usize, after, held));
        }
        if !matches!(op, Op::Jump(_)) {
            work.push((pc + 1, after, held));
        }
    }
    Ok(())
}
