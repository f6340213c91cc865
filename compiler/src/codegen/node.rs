//! Task nodes: each leaves one task result on the stack.

use super::{Gen, Hole, Use};
use crate::ir::{Expr, ExprKind, Loop, Node, NodeKind, Otherwise, Sequence};
use tv_stdlib::builtins;
use tv_vm::bundle::Const;
use tv_vm::isa::{CmpOp, Op, LOOP_ACCEPTED, LOOP_EXHAUSTED, LOOP_SUCCEEDED};

impl<'ir> Gen<'_, 'ir> {
    pub(super) fn node(&mut self, n: &'ir Node) {
        self.at(n.span, |g| g.node_kind(&n.kind));
    }

    fn node_kind(&mut self, k: &'ir NodeKind) {
        match k {
            NodeKind::Atomic {
                task,
                system,
                prompt,
                context,
                query,
            } => {
                self.expr(system);
                self.expr(prompt);
                // Accumulated context is shared with the request instead of being
                // built as a value for every step.
                match (&context.kind, query) {
                    (ExprKind::Accumulated(l, full), None) => {
                        self.emit(Op::AtomicAccumulated(*task, *l, *full));
                    }
                    (_, None) => {
                        self.expr(context);
                        self.emit(Op::Atomic(*task));
                    }
                    (_, Some(q)) => {
                        self.expr(context);
                        self.expr(q);
                        self.emit(Op::AtomicFocused(*task));
                    }
                }
            }
            NodeKind::Finish { task, body } => {
                self.node(body);
                self.emit(Op::Finish(*task));
            }
            NodeKind::Script {
                task,
                command,
                inputs,
                options,
            } => self.script(*task, command, inputs, options),
            NodeKind::Call { function, args } => {
                args.iter().for_each(|a| self.expr(a));
                let n = self.operand(args.len(), "arguments to one template call");
                self.emit(Op::Call(*function, n));
            }
            NodeKind::Let { bindings, body } => {
                for (local, value) in bindings {
                    self.expr(value);
                    self.emit(Op::Store(*local));
                }
                self.node(body);
            }
            NodeKind::Gather {
                calls,
                results,
                body,
            } => {
                self.gather(calls, *results);
                self.node(body);
            }
            NodeKind::Complete(e) => {
                self.expr(e);
                self.emit(Op::Complete);
            }
            NodeKind::Cond { cases, otherwise } => {
                let mut ends = Vec::new();
                for (test, body) in cases {
                    self.expr(test);
                    let next = self.jump(Op::JumpIfFalse);
                    self.node(body);
                    ends.push(self.jump(Op::Jump));
                    self.patch(next);
                }
                match otherwise {
                    // No case held: an empty COMPLETE.
                    Otherwise::Empty => {
                        self.constant(Const::Str(String::new()));
                        self.emit(Op::Complete);
                    }
                    // Or a failure at the cond's place, naming the value compared.
                    Otherwise::Fail { path, value } => {
                        self.expr(value);
                        let i = self.consts.add(Use::Str(path));
                        self.emit(Op::NoCase(i));
                    }
                }
                ends.into_iter().for_each(|h| self.patch(h));
            }
            NodeKind::Sequence(s) => self.sequence(s),
            NodeKind::Reduce(r) => match &r.over {
                Some(o) => self.reduce_over(r, o),
                None => self.reduce(r),
            },
            NodeKind::Map(e) => self.map(e),
            NodeKind::Loop(l) => self.director_loop(l),
        }
    }

    /// A script run. First each value that stands as a word of its own, which a
    /// leading `-` would make an option, is checked: such a value fails the task (with
    /// its criteria) and the script never starts.
    fn script(
        &mut self,
        task: u32,
        command: &'ir Expr,
        inputs: &'ir [(String, Expr)],
        options: &'ir [(String, Expr)],
    ) {
        let mut refused = Vec::with_capacity(options.len());
        for (hole, value) in options {
            self.expr(value);
            let c = self.consts.add(Use::Str(hole));
            self.at(value.span, |g| g.emit(Op::CheckOption(c)));
            refused.push(self.jump(Op::JumpIfFailed));
            self.emit(Op::Pop);
        }
        self.expr(command);
        self.object(inputs);
        self.emit(Op::Script(task));
        if refused.is_empty() {
            return;
        }
        let end = self.jump(Op::Jump);
        refused.into_iter().for_each(|h| self.patch(h));
        self.emit(Op::Finish(task));
        self.patch(end);
    }

    /// Steps in order; a failing step ends the sequence with its details.
    fn sequence(&mut self, s: &'ir Sequence) {
        self.emit(Op::MakeArray(0));
        self.emit(Op::Store(s.results));
        let total = self.operand(s.steps.len(), "steps in one sequence");
        let mut failures: Vec<(Hole, u16)> = Vec::new();
        for (i, step) in s.steps.iter().enumerate() {
            self.node(step);
            // Every index is below `total`, which fits (or is already an error).
            let step = u16::try_from(i).unwrap_or(u16::MAX);
            failures.push((self.jump(Op::JumpIfFailed), step));
            if let Some(slot) = s.slots.get(i).copied().flatten() {
                self.emit(Op::KeepValue(slot));
            }
            if i + 1 < s.steps.len() {
                self.emit(Op::KeepValue(s.output));
            } else {
                // The last result is also the sequence's own.
                self.emit(Op::Dup);
            }
            self.emit(Op::Append(s.results));
        }
        if s.steps.is_empty() {
            self.constant(Const::Str(String::new()));
            self.emit(Op::Complete);
        }
        let mut ends = vec![self.jump(Op::Jump)];
        for (hole, step) in failures {
            self.patch(hole);
            self.emit(Op::Store(s.scratch));
            self.emit(Op::Load(s.results));
            self.emit(Op::Load(s.scratch));
            self.emit(Op::FailSequence(step, total));
            ends.push(self.jump(Op::Jump));
        }
        ends.into_iter().for_each(|h| self.patch(h));
    }

    /// director → optional script → evaluator, until the condition or the evaluator's
    /// `success` holds, at most `max_iterations` times.
    fn director_loop(&mut self, l: &'ir Loop) {
        if let Some(h) = l.history {
            self.emit(Op::MakeArray(0));
            self.emit(Op::Store(h));
        }
        self.constant(Const::Num(0.0));
        self.emit(Op::Store(l.iteration));
        self.constant(Const::Str(String::new()));
        self.emit(Op::Complete);
        self.emit(Op::Store(l.last));
        let top = self.here();
        self.emit(Op::Load(l.iteration));
        self.constant(Const::Num(l.max_iterations as f64));
        self.emit(Op::Compare(CmpOp::Ge));
        let out = self.jump(Op::JumpIfTrue);
        self.emit(Op::LoopGuard);
        self.emit(Op::Increment(l.iteration));
        self.node(&l.director);
        self.emit(Op::ReturnIfFailed);
        self.emit(Op::KeepValue(l.director_result));
        if let Some(h) = l.history {
            self.emit(Op::Dup);
            self.emit(Op::Append(h));
        }
        self.emit(Op::Store(l.last));
        if let Some(script) = &l.script {
            self.node(script);
            let notes = self.consts.add(Use::Str("notes"));
            let output = self.consts.add(Use::Str("scriptOutput"));
            self.emit(Op::Field(notes));
            self.emit(Op::Field(output));
            self.emit(Op::Store(l.script_output));
        }
        self.node(&l.evaluator);
        self.emit(Op::Evaluation);
        self.emit(Op::ReturnIfFailed);
        self.emit(Op::Value);
        if l.script.is_some() {
            // The evaluation in the loop's notes carries the script's output, exit
            // code included, as the evaluator saw it.
            let key = self.consts.add(Use::Str("scriptOutput"));
            self.emit(Op::Load(l.script_output));
            self.emit(Op::MakeObject(key, 1));
            self.emit(Op::Builtin(builtins::MERGE.index(), 2));
        }
        self.emit(Op::Dup);
        self.emit(Op::Store(l.evaluation));
        let feedback = self.consts.add(Use::Str("feedback"));
        self.emit(Op::Field(feedback));
        self.emit(Op::Store(l.evaluation_feedback));
        match &l.termination {
            Some(cond) => self.expr(cond),
            None => {
                self.emit(Op::Load(l.evaluation));
                let success = self.consts.add(Use::Str("success"));
                self.emit(Op::Field(success));
            }
        }
        let done = self.jump(Op::JumpIfTrue);
        self.emit(Op::Jump(top));
        self.patch(out);
        let exhausted = if l.accept_exhausted {
            LOOP_ACCEPTED
        } else {
            LOOP_EXHAUSTED
        };
        self.end_loop(l, exhausted);
        let end = self.jump(Op::Jump);
        self.patch(done);
        self.end_loop(l, LOOP_SUCCEEDED);
        self.patch(end);
    }

    fn end_loop(&mut self, l: &'ir Loop, mode: u8) {
        self.emit(Op::Load(l.last));
        self.emit(Op::Load(l.evaluation));
        self.emit(Op::Load(l.iteration));
        self.emit(Op::EndLoop(mode));
    }
}
