//! The instructions that build task results, read them or pass them on: a value made
//! a COMPLETE result, a result's value kept, the accumulated context of earlier
//! results, the failures of sequences and reductions, the checks of declared types
//! and output formats, and the evaluator's reply and the end of a loop. The results
//! themselves come from [`crate::outcome`]; here they are taken from and put on the
//! operand stack, charged to the budgets first.

use super::{fault, Fault, Vm};
use crate::isa::Op;
use crate::limits::weight;
use crate::outcome::{
    check_return, end_loop, evaluation, fail_reduce, fail_sequence, finish, no_case,
};
use crate::result::{value_of, TaskResult};
use serde_json::Value;
use tv_stdlib::bounds::text_bound;
use tv_stdlib::builtins::PARSE_JSON;
use tv_stdlib::values::to_text;

impl Vm<'_> {
    /// Runs one of the result instructions (the dispatch loop sends only those).
    pub(super) fn result_op(&mut self, op: Op) -> Result<(), Fault> {
        match op {
            Op::KeepValue(i) => {
                let top = self.top()?;
                let w = weight(
                    top.get("parsedContent")
                        .or(top.get("content"))
                        .unwrap_or_default(),
                );
                self.charge(w)?;
                self.reserve(w)?;
                let v = value_of(self.top()?);
                *self.local(i)? = v;
            }
            Op::Complete => {
                let v = self.pop()?;
                self.reserve(text_bound(&v))?;
                let text = to_text(&v);
                self.charge(text.len() as u64)?;
                let mut r = TaskResult::complete(text);
                if !v.is_string() {
                    r.parsed_content = Some(v);
                }
                self.stack.push(r.into());
            }
            Op::AccumulateLocal(i, full) => {
                let text = self.accumulated(i, full)?.to_string();
                self.stack.push(Value::String(text));
            }
            Op::FailSequence(step, total) => {
                let failed = self.pop()?;
                let partial = self.pop()?;
                self.stack.push(fail_sequence(failed, partial, step, total));
            }
            Op::FailReduce => {
                let total = self.pop()?;
                let index = self.pop()?;
                let failed = self.pop()?;
                let accumulator = self.pop()?;
                let processed = self.pop()?;
                self.stack
                    .push(fail_reduce(failed, index, total, processed, accumulator));
            }
            Op::CheckReturn => {
                let function = self.frame()?.function;
                let bundle = self.bundle;
                let returns = bundle
                    .functions
                    .get(function)
                    .map(|f| f.returns.as_type())
                    .ok_or_else(|| fault("a frame of a function the bundle does not have"))?;
                let r = self.pop()?;
                self.stack.push(check_return(r, returns));
            }
            Op::Finish(t) => {
                let r = self.pop()?;
                let meta = self.task(t)?;
                let r = finish(r, &meta)
                    .map_err(|e| fault(&format!("a task's body produced no task result ({e})")))?;
                let r = Value::from(r);
                self.charge(weight(&r))?;
                self.stack.push(r);
            }
            Op::Evaluation => {
                let r = self.pop()?;
                let content = r.get("content").cloned().unwrap_or_default();
                // The evaluation is the reply parsed as JSON: as large as `parse_json`'s.
                self.reserve(PARSE_JSON.builtin().result_bound(&[content]))?;
                let r = evaluation(r);
                self.charge(weight(&r))?;
                self.stack.push(r);
            }
            Op::EndLoop(mode) => {
                let iterations = self.pop()?;
                let evaluation = self.pop()?;
                let result = self.pop()?;
                self.stack
                    .push(end_loop(result, evaluation, iterations, mode));
            }
            Op::NoCase(i) => {
                let value = self.pop()?;
                let path = self.string_const(i)?.to_string();
                // The failure keeps a copy of the value in its details.
                let w = weight(&value);
                self.charge(w)?;
                self.reserve(w)?;
                let at = self.here();
                self.stack.push(no_case(&at, &path, value));
            }
            _ => return Err(fault("not a result instruction")),
        }
        Ok(())
    }
}
