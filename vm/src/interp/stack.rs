//! The machine's frames and operand stack: pushing and popping them, each access
//! checked, so a bundle that breaks the verifier's promises faults instead of panicking.

use super::{fault, Fault, Frame, Step, Vm};
use crate::accumulate::Accumulator;
use crate::bundle::Const;
use crate::result::set_note;
use crate::result::{Reason, Resource, TaskError, TaskResult};
use crate::shared::SharedText;
use serde_json::{json, Value};
use std::sync::Arc;
use tv_stdlib::values::weight;

impl Vm<'_> {
    pub(crate) fn push_frame(
        &mut self,
        function: usize,
        mut args: Vec<Value>,
    ) -> Result<(), Fault> {
        let depth = self.depth_offset + self.frames.len();
        if depth >= self.limits.call_depth {
            return Err(TaskError::exhausted(
                Resource::Depth,
                format!(
                    "template calls nested deeper than {}",
                    self.limits.call_depth
                ),
                depth as u64 + 1,
                self.limits.call_depth as u64,
            )
            .into());
        }
        let f = self
            .bundle
            .functions
            .get(function)
            .ok_or_else(|| fault("no such function"))?;
        let bytes = Vm::frame_bytes(f.locals as usize);
        // Charged before the slots exist; the new frame holds the charge.
        self.reserve(bytes)?;
        if let Some(caller) = self.frames.last_mut() {
            caller.charged -= bytes.min(caller.charged);
        }
        args.resize(f.locals as usize, Value::Null);
        // A frame runs inside the subtask its caller runs in.
        let scope = match self.frames.last() {
            Some(caller) => caller.scope.clone(),
            None => self.scope.clone(),
        };
        self.frames.push(Frame {
            function,
            pc: 0,
            base: self.stack.len(),
            locals: args,
            spawned: None,
            scope,
            accumulators: Vec::new(),
            branches: Vec::new(),
            iterations: Vec::new(),
            charged: bytes,
            entry: self.spent.total,
        });
        Ok(())
    }

    pub(super) fn ret(&mut self) -> Result<Option<Step>, Fault> {
        let mut r = self.pop()?;
        let frame = self
            .frames
            .pop()
            .ok_or_else(|| fault("return without a frame"))?;
        // A function's result used what its whole call used, early returns included.
        let used = self.spent.total.since(frame.entry);
        let shown = r.get("notes").and_then(|n| n.get("usage"));
        if !shown.is_some_and(|u| used.shown_in(u)) {
            set_note(&mut r, "usage", used.notes());
        }
        // Which template ran (seed 004): the result of a call names what was called.
        if let Some(Some(name)) = self.items.get(frame.function) {
            set_note(&mut r, "template", name.clone());
        }
        self.release_frame(&frame);
        self.stack.truncate(frame.base);
        if !self.frames.is_empty() {
            // The result outlives the frame that built it: the caller holds it now.
            self.reserve(weight(&r))?;
        }
        if let Some(spawn) = frame.spawned {
            return self.subtask_returned(*spawn, r);
        }
        if self.frames.is_empty() {
            let r = Box::new(ended_with(r));
            self.done = Some(r.clone());
            return Ok(Some(Step::Done(r)));
        }
        self.stack.push(r);
        Ok(None)
    }

    pub(super) fn frame(&self) -> Result<&Frame, Fault> {
        self.frames.last().ok_or_else(|| fault("no frame"))
    }

    /// The context of the next step from the step results in `locals[i]`, through the
    /// frame's accumulator for that local.
    pub(super) fn accumulated(&mut self, i: u16, full: bool) -> Result<SharedText, Fault> {
        let fr = self.frame_mut()?;
        let results = fr
            .locals
            .get(i as usize)
            .ok_or_else(|| fault("no such local"))?;
        let slot = match fr.accumulators.iter().position(|(l, _)| *l == i) {
            Some(slot) => slot,
            None => {
                fr.accumulators.push((i, Accumulator::default()));
                fr.accumulators.len() - 1
            }
        };
        let text = fr.accumulators[slot].1.update(results, full);
        self.charge(text.len() as u64)?;
        Ok(text)
    }

    pub(super) fn frame_mut(&mut self) -> Result<&mut Frame, Fault> {
        self.frames.last_mut().ok_or_else(|| fault("no frame"))
    }

    pub(super) fn local(&mut self, i: u16) -> Result<&mut Value, Fault> {
        self.frame_mut()?
            .locals
            .get_mut(i as usize)
            .ok_or_else(|| fault("no such local"))
    }

    pub(crate) fn frame_base(&self) -> Result<usize, Fault> {
        Ok(self.frame()?.base)
    }

    pub(crate) fn pop(&mut self) -> Result<Value, Fault> {
        let base = self.frame()?.base;
        if self.stack.len() <= base {
            return Err(fault("the operand stack is empty"));
        }
        self.stack
            .pop()
            .ok_or_else(|| fault("the operand stack is empty"))
    }

    /// The value on top of this frame's operand stack, left in place.
    pub(super) fn top(&self) -> Result<&Value, Fault> {
        let base = self.frame()?.base;
        self.stack
            .get(base..)
            .and_then(<[Value]>::last)
            .ok_or_else(|| fault("the operand stack is empty"))
    }

    pub(super) fn pop_n(&mut self, n: usize) -> Result<Vec<Value>, Fault> {
        let base = self.frame()?.base;
        if self.stack.len() < base + n {
            return Err(fault("the operand stack holds too few values"));
        }
        Ok(self.stack.split_off(self.stack.len() - n))
    }

    pub(super) fn peek(&self) -> Result<&Value, Fault> {
        self.stack
            .last()
            .ok_or_else(|| fault("the operand stack is empty"))
    }

    pub(super) fn string_const(&self, i: u32) -> Result<&str, Fault> {
        match self.bundle.constants.get(i as usize) {
            Some(Const::Str(s)) => Ok(s),
            _ => Err(fault("a string constant was expected")),
        }
    }

    pub(crate) fn task(&self, t: u32) -> Result<Arc<crate::bundle::TaskMeta>, Fault> {
        self.bundle
            .tasks
            .get(t as usize)
            .cloned()
            .ok_or_else(|| fault("no such task"))
    }

    /// `file:line:col` of the instruction running (empty when the bundle has none).
    pub(super) fn here(&self) -> String {
        let loc = self.frames.last().and_then(|fr| {
            let f = self.bundle.functions.get(fr.function)?;
            f.lines.get(fr.pc.saturating_sub(1)).copied()
        });
        loc.map(|l| self.bundle.location(l)).unwrap_or_default()
    }

    /// An error in the template's own logic, with the source position it happened at.
    pub(super) fn located(&self, message: String) -> Fault {
        let at = self.here();
        TaskError::failure(Reason::UnexpectedError, format!("{at}: {message}"))
            .with_details(json!({"location": at}))
            .into()
    }
}

/// The result a machine ends with, read from the value its first frame returned: a
/// bundle `tvc` wrote returns task results only, so anything else is a fault.
fn ended_with(r: Value) -> TaskResult {
    TaskResult::try_from(r).unwrap_or_else(|e| {
        let why = format!("the run ended with a value that is not a task result ({e})");
        TaskResult::failed(fault(&why))
    })
}
