//! Renumbering a part of the program that was lowered on its own: its tasks and its
//! branch functions were numbered from zero, and move past those of the parts before
//! it. Item functions keep their numbers, which the whole program shares.

use crate::ir::{Each, Expr, ExprKind, Node, NodeKind};

pub(super) struct Shift {
    /// Item functions come first; a function number at or past this is a branch.
    pub items: u32,
    /// Tasks of the parts before this one.
    pub tasks: u32,
    /// Branch functions of the parts before this one.
    pub branches: u32,
}

impl Shift {
    fn function(&self, f: &mut u32) {
        if *f >= self.items {
            *f += self.branches;
        }
    }

    fn calls(&self, calls: &mut [(u32, Vec<Expr>)]) {
        for (f, args) in calls {
            self.function(f);
            self.exprs(args);
        }
    }

    fn each(&self, e: &mut Each) {
        self.function(&mut e.function);
        self.expr(&mut e.list);
        self.exprs(&mut e.args);
    }

    fn exprs(&self, es: &mut [Expr]) {
        es.iter_mut().for_each(|e| self.expr(e));
    }

    // The matches name every variant, so a new one must say what it holds.
    pub(super) fn node(&self, n: &mut Node) {
        match &mut n.kind {
            NodeKind::Atomic {
                task,
                system,
                prompt,
                context,
                query,
            } => {
                *task += self.tasks;
                [system, prompt, context]
                    .into_iter()
                    .chain(query)
                    .for_each(|e| self.expr(e));
            }
            NodeKind::Finish { task, body } => {
                *task += self.tasks;
                self.node(body);
            }
            NodeKind::Script {
                task,
                command,
                inputs,
                options,
            } => {
                *task += self.tasks;
                self.expr(command);
                inputs.iter_mut().for_each(|(_, e)| self.expr(e));
                options.iter_mut().for_each(|(_, e)| self.expr(e));
            }
            NodeKind::Sequence(s) => s.steps.iter_mut().for_each(|n| self.node(n)),
            NodeKind::Reduce(r) => {
                self.exprs(&mut r.items);
                self.expr(&mut r.initial);
                self.node(&mut r.inner);
                if let Some((calls, _)) = &mut r.inner_branches {
                    self.calls(calls);
                }
                self.node(&mut r.reduction);
                if let Some(o) = &mut r.over {
                    self.each(&mut o.inner);
                }
            }
            NodeKind::Map(each) => self.each(each),
            NodeKind::Loop(l) => {
                self.node(&mut l.director);
                self.node(&mut l.evaluator);
                if let Some(s) = &mut l.script {
                    self.node(s);
                }
                if let Some(t) = &mut l.termination {
                    self.expr(t);
                }
            }
            NodeKind::Cond { cases, otherwise } => {
                for (test, body) in cases {
                    self.expr(test);
                    self.node(body);
                }
                if let crate::ir::Otherwise::Fail { value, .. } = otherwise {
                    self.expr(value);
                }
            }
            NodeKind::Call { function, args } => {
                self.function(function);
                self.exprs(args);
            }
            NodeKind::Gather { calls, body, .. } => {
                self.calls(calls);
                self.node(body);
            }
            NodeKind::Let { bindings, body } => {
                bindings.iter_mut().for_each(|(_, value)| self.expr(value));
                self.node(body);
            }
            NodeKind::Complete(e) => self.expr(e),
        }
    }

    fn expr(&self, e: &mut Expr) {
        match &mut e.kind {
            ExprKind::Null
            | ExprKind::Bool(_)
            | ExprKind::Num(_)
            | ExprKind::Str(_)
            | ExprKind::Local(_)
            | ExprKind::Accumulated(..)
            | ExprKind::Gathered(..) => {}
            ExprKind::Field(base, _) | ExprKind::Index(base, _) | ExprKind::Not(base) => {
                self.expr(base)
            }
            ExprKind::Compare(_, a, b) | ExprKind::And(a, b) | ExprKind::Or(a, b) => {
                self.expr(a);
                self.expr(b);
            }
            ExprKind::Concat(parts) => parts.iter_mut().for_each(|(e, _)| self.expr(e)),
            ExprKind::Builtin(_, args) => self.exprs(args),
            ExprKind::Call(f, args) => {
                self.function(f);
                self.exprs(args);
            }
            ExprKind::Task(n) => self.node(n),
        }
    }
}
