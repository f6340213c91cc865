//! The memory budget (DESIGN §18): every value is charged before it is built, to the
//! frame that builds it; a frame's charge is released when it returns, and its result
//! is charged to the caller. Concurrent branches share the run's budget, so a crafted
//! bundle cannot multiply its memory by gathering branches.

use super::{Fault, Frame, Vm};
use crate::result::{Resource, TaskError};
use serde_json::Value;
use tv_stdlib::builtins::Builtin;
use tv_stdlib::values::weight;

/// What a frame takes besides its locals.
const FRAME_BYTES: u64 = std::mem::size_of::<Frame>() as u64;
/// What one local slot takes.
const SLOT_BYTES: u64 = std::mem::size_of::<Value>() as u64;

impl Vm<'_> {
    /// Charges `bytes` to the current frame, or fails with RESOURCE_EXHAUSTION `memory`
    /// before anything that large is built.
    pub(crate) fn reserve(&mut self, bytes: u64) -> Result<(), Fault> {
        let limit = self.limits.memory;
        self.budget
            .reserve(bytes, limit)
            .map_err(|held| self.out_of_memory(held))?;
        if let Some(f) = self.frames.last_mut() {
            f.charged += bytes;
        }
        Ok(())
    }

    /// The run's end when its values would take more than the budget.
    pub(crate) fn out_of_memory(&self, held: u64) -> Fault {
        let limit = self.limits.memory;
        TaskError::exhausted(
            Resource::Memory,
            format!("the run's values would take more than {limit} bytes (--max-memory)"),
            held,
            limit,
        )
        .into()
    }

    /// Gives back part of what the current frame was charged: a built-in's result
    /// came out smaller than its bound.
    pub(crate) fn unreserve(&mut self, bytes: u64) {
        if let Some(f) = self.frames.last_mut() {
            let bytes = bytes.min(f.charged);
            f.charged -= bytes;
            self.budget.release(bytes);
        }
    }

    /// What pushing a frame for a function with `locals` slots costs.
    pub(crate) fn frame_bytes(locals: usize) -> u64 {
        FRAME_BYTES + SLOT_BYTES * locals as u64
    }

    /// Releases a frame's charge: it is gone, with everything it built.
    pub(crate) fn release_frame(&self, frame: &Frame) {
        self.budget.release(frame.charged);
    }

    /// Releases every frame's charge when the machine ends.
    pub(crate) fn release_all(&mut self) {
        let total: u64 = self.frames.iter().map(|f| f.charged).sum();
        self.budget.release(total);
        self.frames.iter_mut().for_each(|f| f.charged = 0);
    }

    /// Calls a built-in, charging its largest possible result first and keeping the
    /// charge at what it really built.
    pub(crate) fn builtin_call(
        &mut self,
        b: &'static Builtin,
        args: &[Value],
    ) -> Result<Value, Fault> {
        let bound = b.result_bound(args);
        self.reserve(bound)?;
        let v = b.call(args).map_err(|e| self.located(e.to_string()));
        let built = v.as_ref().map_or(0, weight);
        self.unreserve(bound.saturating_sub(built));
        v
    }
}
