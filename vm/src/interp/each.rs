//! Iterating over a list known at run time (DESIGN §14): a frame's iterations, the
//! bodies they start concurrently, and the results the bodies end with.
//!
//! An iteration begins at `EachStart` and ends at `EachEnd`; a frame may open one
//! inside another (a reduction that runs a map), so each frame holds a stack of them
//! and the instructions act on the innermost. The loop itself is bytecode: `EachMore`
//! says whether to go on, `EachNext` hands out the next item, and `Spawn` starts a body
//! (the machine halts with [`Step::Spawn`] and its driver starts it). The machine
//! never waits for a body except where the bytecode asks it to: at `EachMore` when as
//! many bodies run as the iteration allows, and at `EachEnd` until none does; it
//! halts with [`Step::Await`] there and runs the same instruction again once the
//! driver has handed it a finished body through [`Vm::body_ended`].

use super::{fault, nested_within, Body, BodyTag, Fault, Step, Vm, Waiting};
use crate::limits::{nesting, weight, MAX_CONCURRENCY};
use crate::outcome::map_result;
use crate::result::{is_failed, set_note, Reason, TaskError, TaskResult};
use crate::usage::Spent;
use serde_json::{json, Value};
use tv_stdlib::bounds::text_bound;

/// One iteration over a list, open in a frame between `EachStart` and `EachEnd`.
#[derive(Debug)]
pub(crate) struct Iteration {
    /// The machine's number for it (`BodyTag::each`).
    id: u64,
    /// The items not yet handed out; those handed out are left `null`.
    items: Vec<Value>,
    /// The index of the next item `EachNext` hands out.
    next: usize,
    /// Items up to this index have had their body started (a second `Spawn` for the
    /// same item is a fault).
    spawned: usize,
    /// The most bodies running at once.
    concurrency: usize,
    running: usize,
    /// Each item's body's result, in value form, once it ended.
    results: Vec<Option<Value>>,
    /// A body ended FAILED: no further body starts.
    failed: bool,
    /// What the machine had spent when the iteration began.
    start: Spent,
}

/// What an iteration takes besides its items and results.
const ITERATION_BYTES: u64 = std::mem::size_of::<Iteration>() as u64;
/// What one result slot takes.
const SLOT_BYTES: u64 = std::mem::size_of::<Option<Value>>() as u64;

impl Vm<'_> {
    /// Runs one of the iteration instructions (the dispatch loop sends only those).
    pub(super) fn each_op(&mut self, op: crate::isa::Op) -> Result<Option<Step>, Fault> {
        use crate::isa::Op;
        match op {
            Op::Items => {
                let v = self.pop()?;
                self.stack.push(items(v));
            }
            Op::EachStart(n) => self.each_start(n)?,
            Op::EachMore => return self.each_more(),
            Op::EachNext => self.each_next()?,
            Op::Spawn(f, n) => return self.spawn(f, n).map(Some),
            Op::EachEnd => return self.each_end(),
            Op::MapResult => self.map_result()?,
            _ => return Err(fault("not an iteration instruction")),
        }
        Ok(None)
    }

    fn each_start(&mut self, n: u16) -> Result<(), Fault> {
        let Value::Array(items) = self.pop()? else {
            return Err(fault("an iteration over a value that is not an array"));
        };
        let asked = match n {
            0 => self.limits.concurrency,
            n => n.into(),
        };
        let concurrency = asked.clamp(1, MAX_CONCURRENCY.into());
        // The items were charged when they were built; the slots for their results
        // are new.
        self.reserve(ITERATION_BYTES + SLOT_BYTES * items.len() as u64)?;
        let id = self.eaches;
        self.eaches += 1;
        let iteration = Iteration {
            id,
            results: vec![None; items.len()],
            items,
            next: 0,
            spawned: 0,
            concurrency,
            running: 0,
            failed: false,
            start: self.spent.total,
        };
        self.frame_mut()?.iterations.push(iteration);
        Ok(())
    }

    /// Whether to start another body; with as many running as the iteration allows,
    /// first a wait for one of them to end.
    fn each_more(&mut self) -> Result<Option<Step>, Fault> {
        let it = self.innermost()?;
        let more = it.next < it.items.len() && !it.failed;
        if more && it.running >= it.concurrency {
            return self.wait_for_body();
        }
        self.stack.push(Value::Bool(more));
        Ok(None)
    }

    fn each_next(&mut self) -> Result<(), Fault> {
        let it = self.innermost_mut()?;
        let index = it.next;
        // Moved out, not copied: the item was charged when the list was built.
        let item = it
            .items
            .get_mut(index)
            .map(std::mem::take)
            .ok_or_else(|| fault("EachNext past the end of the list"))?;
        it.next += 1;
        self.stack.push(item);
        self.stack.push(json!(index));
        Ok(())
    }

    fn spawn(&mut self, function: u32, n: u16) -> Result<Step, Fault> {
        let args = self.pop_n(n.into())?;
        let it = self.innermost_mut()?;
        if it.spawned >= it.next {
            return Err(fault("a body started for no item, or twice for one"));
        }
        if it.running >= it.concurrency {
            return Err(fault("a body started past the iteration's concurrency"));
        }
        it.spawned = it.next;
        it.running += 1;
        let tag = BodyTag {
            each: it.id,
            index: (it.next - 1) as u64,
        };
        Ok(Step::Spawn(Box::new(Body {
            function,
            args,
            tag,
        })))
    }

    /// The end of the innermost iteration, once none of its bodies runs: its results
    /// in item order, `null` where no body ran.
    fn each_end(&mut self) -> Result<Option<Step>, Fault> {
        if self.innermost()?.running > 0 {
            return self.wait_for_body();
        }
        let it = self
            .frame_mut()?
            .iterations
            .pop()
            .ok_or_else(|| fault("EachEnd without an iteration"))?;
        // Every body has ended and added what it spent: the map's usage, which its
        // result (the next instruction) shows.
        self.ended_iteration = self.spent.total.since(it.start);
        let results = it.results.into_iter().map(Option::unwrap_or_default);
        let results = Value::Array(results.collect());
        // A body's result may nest as deep as any value: one level more here.
        nested_within(nesting(&results))?;
        self.stack.push(results);
        Ok(None)
    }

    fn map_result(&mut self) -> Result<(), Fault> {
        let Value::Array(results) = self.pop()? else {
            return Err(fault("a map's results are not an array"));
        };
        // The result copies the bodies' values and writes them as text: no more than
        // the results and their text.
        let bound = results
            .iter()
            .map(|r| weight(r) + text_bound(r))
            .sum::<u64>();
        self.reserve(bound)?;
        let mut r = map_result(results);
        set_note(&mut r, "usage", self.ended_iteration.notes());
        let built = weight(&r);
        self.charge(built)?;
        self.unreserve(bound.saturating_sub(built));
        // A failure holds the bodies' results several levels down.
        nested_within(nesting(&r))?;
        self.stack.push(r);
        Ok(())
    }

    /// Halts until a body ends; the instruction that asked runs again then.
    fn wait_for_body(&mut self) -> Result<Option<Step>, Fault> {
        let frame = self.frame_mut()?;
        frame.pc = frame.pc.saturating_sub(1);
        self.waiting = Some(Waiting::Body);
        Ok(Some(Step::Await))
    }

    fn innermost(&self) -> Result<&Iteration, Fault> {
        self.frame()?
            .iterations
            .last()
            .ok_or_else(|| fault("an iteration instruction outside an iteration"))
    }

    fn innermost_mut(&mut self) -> Result<&mut Iteration, Fault> {
        self.frame_mut()?
            .iterations
            .last_mut()
            .ok_or_else(|| fault("an iteration instruction outside an iteration"))
    }

    /// Takes the result of the body tagged `tag`, which this machine started with
    /// [`Step::Spawn`]: its iteration goes on at the next [`Vm::run`]. A body whose
    /// frame has returned since (dropping its iterations) is forgotten. The driver
    /// may hand over a body at any time the machine is not running, and must hand
    /// one over after [`Step::Await`].
    pub fn body_ended(&mut self, tag: BodyTag, result: TaskResult) {
        if matches!(self.waiting, Some(Waiting::Body)) {
            self.waiting = None;
        }
        if self.done.is_some() {
            return;
        }
        let Some((f, i)) = self.frames.iter().enumerate().find_map(|(f, frame)| {
            let i = frame.iterations.iter().position(|it| it.id == tag.each)?;
            Some((f, i))
        }) else {
            return;
        };
        let mut r = Value::from(result);
        // The result outlives the body's machine: this one holds it now. A refusal
        // stops the whole run at the next instruction; the item fails meanwhile.
        if let Err(refused) = self.reserve(weight(&r)) {
            r = TaskResult::failed(refused).into();
        }
        let it = self
            .frames
            .get_mut(f)
            .and_then(|fr| fr.iterations.get_mut(i));
        let Some(it) = it else {
            return;
        };
        let Some(slot) = usize::try_from(tag.index)
            .ok()
            .and_then(|i| it.results.get_mut(i))
        else {
            return;
        };
        it.failed |= is_failed(&r);
        it.running = it.running.saturating_sub(1);
        *slot = Some(r);
    }
}

/// [`crate::isa::Op::Items`]: an array as it is; anything else a failure naming what
/// it is.
fn items(v: Value) -> Value {
    let (kind, named) = match &v {
        Value::Array(_) => return v,
        Value::Null => ("null", "null"),
        Value::Bool(_) => ("boolean", "a boolean"),
        Value::Number(_) => ("number", "a number"),
        Value::String(_) => ("string", "a string"),
        Value::Object(_) => ("object", "an object"),
    };
    let error = TaskError::failure(
        Reason::InputValidationFailure,
        format!("the list to iterate over is {named}, not an array"),
    )
    .with_details(json!({ "type": kind }));
    TaskResult::failed(error).into()
}

#[cfg(test)]
#[path = "each_tests.rs"]
mod tests;
