//! Tasks over lists. A reduce over listed inputs is unrolled; over a list known at run
//! time, a loop in the bytecode walks the items (`EachStart` .. `EachEnd`), so a map
//! over 100,000 items is as long as one over 3 (DESIGN §14).

use super::{Gen, Hole};
use crate::ir::{Each, Local, Reduce, ReduceOver};
use tv_stdlib::builtins;
use tv_vm::bundle::Const;
use tv_vm::isa::Op;

impl<'ir> Gen<'_, 'ir> {
    /// The bodies' values in item order, or the failure of the first that failed.
    pub(super) fn map(&mut self, e: &'ir Each) {
        self.expr(&e.list);
        self.emit(Op::Items);
        let not_a_list = self.jump(Op::JumpIfFailed);
        self.bodies(e, None);
        self.emit(Op::MapResult);
        self.patch(not_a_list);
    }

    /// Starts `e`'s body once per item of the array on the stack, at most
    /// `e.concurrency` at once, and leaves their results. The item goes into `e.item`
    /// (and `also`) before the body's arguments are read.
    fn bodies(&mut self, e: &'ir Each, also: Option<Local>) {
        self.emit(Op::EachStart(e.concurrency));
        let top = self.here();
        self.emit(Op::EachMore);
        let done = self.jump(Op::JumpIfFalse);
        self.emit(Op::EachNext);
        self.emit(Op::Store(e.index));
        if let Some(l) = also {
            self.emit(Op::Dup);
            self.emit(Op::Store(l));
        }
        self.emit(Op::Store(e.item));
        e.args.iter().for_each(|a| self.expr(a));
        let n = self.operand(e.args.len(), "values captured by one body");
        self.emit(Op::Spawn(e.function, n));
        self.emit(Op::Jump(top));
        self.patch(done);
        self.emit(Op::EachEnd);
    }

    /// The accumulator starts as the initial value, and its result as a COMPLETE one.
    fn reduce_start(&mut self, r: &'ir Reduce) {
        self.expr(&r.initial);
        self.emit(Op::Dup);
        self.emit(Op::Store(r.accumulator));
        self.emit(Op::Complete);
        self.emit(Op::Store(r.last));
        self.emit(Op::MakeArray(0));
        self.emit(Op::Store(r.processed));
        if let Some(h) = r.history {
            self.emit(Op::MakeArray(0));
            self.emit(Op::Store(h));
        }
    }

    /// `[reduction result] -> []`: its value becomes the accumulator, and the input
    /// counts as processed.
    fn reduce_fold(&mut self, r: &'ir Reduce) {
        self.emit(Op::KeepValue(r.accumulator));
        if let Some(h) = r.history {
            self.emit(Op::Dup);
            self.emit(Op::Append(h));
        }
        self.emit(Op::Store(r.last));
        self.emit(Op::Load(r.current_input));
        self.emit(Op::Append(r.processed));
    }

    /// Unrolled over the inputs, which the template lists: inner task, then reduction.
    pub(super) fn reduce(&mut self, r: &'ir Reduce) {
        self.reduce_start(r);
        if let Some((calls, results)) = &r.inner_branches {
            self.gather(calls, *results);
        }
        let total = r.items.len();
        let mut failures: Vec<(Hole, usize)> = Vec::new();
        for (i, item) in r.items.iter().enumerate() {
            self.expr(item);
            self.emit(Op::Dup);
            self.emit(Op::Store(r.current_input));
            self.emit(Op::Store(r.original_input));
            match &r.inner_branches {
                Some((_, results)) => {
                    self.emit(Op::Load(*results));
                    let i = self.operand(i, "inputs of one reduce");
                    self.emit(Op::Index(i));
                }
                None => self.node(&r.inner),
            }
            failures.push((self.jump(Op::JumpIfFailed), i));
            self.emit(Op::Value);
            self.emit(Op::Store(r.current_result));
            self.node(&r.reduction);
            failures.push((self.jump(Op::JumpIfFailed), i));
            self.reduce_fold(r);
        }
        self.emit(Op::Load(r.last));
        let mut ends = vec![self.jump(Op::Jump)];
        for (hole, i) in failures {
            self.patch(hole);
            self.emit(Op::Store(r.scratch));
            self.emit(Op::Load(r.processed));
            self.emit(Op::Load(r.accumulator));
            self.emit(Op::Load(r.scratch));
            self.constant(Const::Num(i as f64));
            self.constant(Const::Num(total as f64));
            self.emit(Op::FailReduce);
            ends.push(self.jump(Op::Jump));
        }
        ends.into_iter().for_each(|h| self.patch(h));
    }

    /// Over a list: the inner tasks run ahead as bodies, then a second pass over the
    /// items folds their results in order.
    pub(super) fn reduce_over(&mut self, r: &'ir Reduce, o: &'ir ReduceOver) {
        let index = o.inner.index;
        self.reduce_start(r);
        self.expr(&o.inner.list);
        self.emit(Op::Items);
        let not_a_list = self.jump(Op::JumpIfFailed);
        self.emit(Op::Dup);
        self.emit(Op::Store(o.items));
        self.bodies(&o.inner, Some(r.original_input));
        self.emit(Op::Store(o.inner_results));

        // One item at a time: no bodies, so the iteration never waits.
        self.emit(Op::Load(o.items));
        self.emit(Op::EachStart(1));
        let top = self.here();
        self.emit(Op::EachMore);
        let done = self.jump(Op::JumpIfFalse);
        self.emit(Op::EachNext);
        self.emit(Op::Store(index));
        self.emit(Op::Dup);
        self.emit(Op::Store(r.original_input));
        self.emit(Op::Store(r.current_input));
        self.emit(Op::Load(o.inner_results));
        self.emit(Op::Load(index));
        self.emit(Op::Builtin(builtins::GET.index(), 2));
        let inner_failed = self.jump(Op::JumpIfFailed);
        self.emit(Op::Value);
        self.emit(Op::Store(r.current_result));
        self.node(&r.reduction);
        let reduction_failed = self.jump(Op::JumpIfFailed);
        self.reduce_fold(r);
        self.emit(Op::Jump(top));
        self.patch(done);
        self.emit(Op::EachEnd);
        self.emit(Op::Pop);
        self.emit(Op::Load(r.last));
        let end = self.jump(Op::Jump);

        self.patch(inner_failed);
        self.patch(reduction_failed);
        self.emit(Op::Store(r.scratch));
        self.emit(Op::EachEnd);
        self.emit(Op::Pop);
        self.emit(Op::Load(r.processed));
        self.emit(Op::Load(r.accumulator));
        self.emit(Op::Load(r.scratch));
        self.emit(Op::Load(index));
        self.emit(Op::Load(o.items));
        self.emit(Op::Builtin(builtins::LEN.index(), 1));
        self.emit(Op::FailReduce);
        self.patch(end);
        self.patch(not_a_list);
    }
}
