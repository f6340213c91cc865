//! Every limit the machine enforces, in one place, with its default.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The limits of one run: a task that would pass one fails with RESOURCE_EXHAUSTION.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    /// Nested template calls (frames). Default 64.
    pub call_depth: usize,
    /// Nested subtasks spawned by models (DESIGN §6). Default 5.
    pub subtask_depth: usize,
    /// Iterations of all director-evaluator loops together. Default 100.
    pub loop_iterations: u64,
    /// Assistant turns (LLM replies) over the whole run. Default 200.
    pub turns: u64,
    /// Tokens reported by providers over the whole run. Default 1,000,000.
    pub tokens: u64,
    /// Wall-clock time of the whole run. Default 30 minutes.
    pub wall_time: Duration,
    /// Instructions executed by the run, its concurrent branches included: a bound
    /// on pure computation. Copying or building a value also counts one instruction
    /// per [`BYTES_PER_INSTRUCTION`] bytes, so this bounds the memory a run can fill
    /// too. Default 10,000,000.
    pub instructions: u64,
    /// Bytes the run's values may take, its concurrent branches included (DESIGN §18).
    /// Every value is charged before it is built (a built-in's result at its largest
    /// possible size), and what a frame built is released when it returns. Default
    /// 512 MiB.
    #[serde(default = "default_memory")]
    pub memory: u64,
    /// Bodies of one map (or inner tasks of one reduce `over` a list) running at once
    /// when the task does not say (`concurrency="N"`). Default 16, the provider cap;
    /// `tvm run --concurrency` sets both.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
}

fn default_memory() -> u64 {
    512 << 20
}

fn default_concurrency() -> usize {
    16
}

/// The most bodies a map may run at once (`concurrency="N"`): each running body is a
/// machine of its own, so a bundle from elsewhere cannot ask for unbounded many.
pub const MAX_CONCURRENCY: u16 = 1024;

/// Locals a function may have: a frame's slots are allocated when it is pushed, so the
/// verifier refuses more (a crafted bundle could ask for 65,535 per frame).
pub const MAX_LOCALS: u16 = 4096;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            call_depth: 64,
            subtask_depth: 5,
            loop_iterations: 100,
            turns: 200,
            tokens: 1_000_000,
            wall_time: Duration::from_secs(30 * 60),
            instructions: 10_000_000,
            memory: default_memory(),
            concurrency: default_concurrency(),
        }
    }
}

/// What copying or building this many bytes of a value costs, in instructions.
pub const BYTES_PER_INSTRUCTION: u64 = 64;

pub(crate) use tv_stdlib::values::weight;

/// How deeply a value the machine builds may nest arrays and objects: deeper values
/// could overflow the stack where they are copied, written out or dropped.
pub const MAX_NESTING: usize = 512;

/// How deeply `v` nests arrays and objects (0 for a scalar), counted no further than
/// one level past [`MAX_NESTING`]. It runs after every instruction that wraps a value,
/// so it allocates nothing; the cut-off bounds its recursion.
pub(crate) fn nesting(v: &serde_json::Value) -> usize {
    fn below(v: &serde_json::Value, depth: usize) -> usize {
        use serde_json::Value;
        if depth > MAX_NESTING {
            return depth;
        }
        match v {
            Value::Array(items) => items.iter().map(|i| below(i, depth + 1)).max(),
            Value::Object(fields) => fields.values().map(|f| below(f, depth + 1)).max(),
            _ => None,
        }
        .unwrap_or(depth)
    }
    below(v, 0)
}

pub use crate::usage::{Spending, Spent};

/// What a run has used of its shared limits. Concurrent branches of one run share
/// one budget, so no branch can spend what another already has.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    iterations: AtomicU64,
    instructions: AtomicU64,
    turns: AtomicU64,
    tokens: AtomicU64,
    /// Bytes charged to the memory budget and not yet released.
    memory: AtomicU64,
    /// What a refused charge would have made the run hold (0: none refused). Once the
    /// budget refused anything, the whole run stops, branches included, rather than
    /// going on without what it could not build.
    refused: AtomicU64,
}

impl Budget {
    pub(crate) fn instructions(&self) -> u64 {
        self.instructions.load(Ordering::SeqCst)
    }

    pub(crate) fn add_instructions(&self, n: u64) {
        self.instructions.fetch_add(n, Ordering::SeqCst);
    }

    pub(crate) fn iterations(&self) -> u64 {
        self.iterations.load(Ordering::SeqCst)
    }

    pub(crate) fn turns(&self) -> u64 {
        self.turns.load(Ordering::SeqCst)
    }

    pub(crate) fn tokens(&self) -> u64 {
        self.tokens.load(Ordering::SeqCst)
    }

    /// Counts one more loop iteration and returns the new total.
    pub(crate) fn iterate(&self) -> u64 {
        self.iterations.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Charges `bytes` to the memory budget, unless that would pass `limit`: then
    /// nothing is charged and the bytes that would have been held are returned.
    pub(crate) fn reserve(&self, bytes: u64, limit: u64) -> Result<(), u64> {
        let held = self
            .memory
            .fetch_add(bytes, Ordering::SeqCst)
            .saturating_add(bytes);
        if held > limit {
            self.memory.fetch_sub(bytes, Ordering::SeqCst);
            self.refused.fetch_max(held, Ordering::SeqCst);
            return Err(held);
        }
        Ok(())
    }

    /// What the refused charge would have held, once the budget refused one.
    pub(crate) fn refused(&self) -> Option<u64> {
        Some(self.refused.load(Ordering::Relaxed)).filter(|&h| h > 0)
    }

    /// Gives back bytes charged earlier.
    pub(crate) fn release(&self, bytes: u64) {
        let _ = self
            .memory
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |m| {
                Some(m.saturating_sub(bytes))
            });
    }

    /// Counts answered calls (assistant turns) and their tokens: one reply's, or what a
    /// body the journal gave back had spent.
    pub(crate) fn spend(&self, s: Spent) {
        self.turns.fetch_add(s.calls, Ordering::SeqCst);
        self.tokens
            .fetch_add(s.input_tokens + s.output_tokens, Ordering::SeqCst);
    }
}
