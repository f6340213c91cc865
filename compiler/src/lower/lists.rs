//! Tasks over lists: a reduce over its listed inputs (unrolled) or `over` a list, and
//! a map. Over a list, the items are known only at run time, so the body is a branch
//! function started once per item by a loop in the bytecode (DESIGN §14).

use super::task::accumulating;
use super::{context, Frame, Lowerer};
use crate::ast::{self, Task, TaskType, DEFAULT_ITEM};
use crate::ir::{self, Each, Expr, ExprKind, Node, NodeKind};
use crate::source::Span;
use tv_stdlib::types::Type;

impl Lowerer<'_> {
    pub(super) fn map(&mut self, task: &Task, frame: &mut Frame) -> Node {
        let name = task
            .item_name
            .as_ref()
            .map_or(DEFAULT_ITEM, |n| n.node.as_str());
        let list = self.list(task, frame);
        let item_ty = match &list.ty {
            Type::Array(item) => (**item).clone(),
            _ => Type::Any,
        };
        let item = frame.local(name, item_ty);
        let index = frame.local("index", Type::Number);
        let each = match &task.map_body {
            Some(body) => self.each(list, task, body, frame, &[(name, item)], index),
            None => return missing(task.span),
        };
        let ty = Type::Array(Box::new(self.branch_type(each.function)));
        Node {
            kind: NodeKind::Map(Box::new(each)),
            ty,
            span: task.span,
        }
    }

    /// `over`, lowered; `null` (refused at run time) where the checker reported it missing.
    fn list(&mut self, task: &Task, frame: &mut Frame) -> Expr {
        match &task.over {
            Some(e) => self.expr(e, frame),
            None => Expr::new(ExprKind::Null, Type::Null, task.span),
        }
    }

    /// The iteration that starts `body` once per item of `list`, with the names in
    /// `item` bound to the local the item is put in.
    fn each(
        &mut self,
        list: Expr,
        task: &Task,
        body: &ast::Body,
        frame: &mut Frame,
        item: &[(&str, ir::Local)],
        index: ir::Local,
    ) -> Each {
        let (function, captured) = frame.scoped(|frame| {
            for (name, local) in item {
                frame.scope.push((name.to_string(), *local));
            }
            frame.scope.push(("index".into(), index));
            self.branch(body, frame)
        });
        Each {
            list,
            concurrency: task.concurrency.as_ref().map_or(0, |c| c.node),
            item: item.first().map_or(index, |(_, l)| *l),
            index,
            function,
            args: captured.into_iter().map(|(_, e)| e).collect(),
        }
    }

    pub(super) fn reduce(&mut self, task: &Task, frame: &mut Frame) -> Node {
        let listed = task.over.is_none();
        let items: Vec<Expr> = if listed {
            task.inputs
                .iter()
                .map(|i| self.input_value(i, frame))
                .collect()
        } else {
            Vec::new()
        };
        let initial = task
            .initial_value
            .as_ref()
            .map_or(Expr::str("", task.span), |t| self.text(t, frame));
        let local = |frame: &mut Frame, name: &str| frame.local(name, Type::Any);
        // Over a list typed `T[]`, the inputs are `T`s.
        let list = task.over.as_deref().map(|_| self.list(task, frame));
        let item_ty = match list.as_ref().map(|l| &l.ty) {
            Some(Type::Array(item)) => (**item).clone(),
            _ => Type::Any,
        };
        let current_input = frame.local("current_input", item_ty.clone());
        let original_input = frame.local("original_input", item_ty);
        let current_result = local(frame, "current_result");
        let accumulator = local(frame, "accumulator");
        let processed = local(frame, "(processed inputs)");
        let last = local(frame, "(last reduction)");
        let scratch = local(frame, "(failed input)");
        let settings = context::merge(TaskType::Reduce, task.context.as_deref());
        // Inner tasks see the context from around the reduce; reductions also see the
        // earlier reductions' results when the reduce accumulates them.
        let outer_context = frame.context.clone();
        let item = [
            ("current_input", current_input),
            ("original_input", original_input),
        ];

        // Over a list, the inner tasks are the bodies of an iteration.
        let over = match (list, &task.inner_task) {
            (Some(list), Some(b)) => {
                let index = frame.local("(index)", Type::Number);
                let inner = self.each(list, task, b, frame, &item, index);
                Some(Box::new(ir::ReduceOver {
                    inner,
                    items: frame.local("(items)", Type::Array(Box::new(Type::Any))),
                    inner_results: frame.local("(inner results)", Type::Array(Box::new(Type::Any))),
                }))
            }
            _ => None,
        };
        // Listed inner tasks cannot see the accumulator, so they all run first,
        // concurrently.
        let inner_branches = match &task.inner_task {
            Some(b) if listed && items.len() >= 2 => {
                let (id, captured) = frame.scoped(|frame| {
                    frame.scope.extend(item.map(|(n, l)| (n.to_string(), l)));
                    self.branch(b, frame)
                });
                let calls = items
                    .iter()
                    .map(|input| {
                        let args = captured
                            .iter()
                            .map(|(l, e)| match *l {
                                Some(l) if l == current_input || l == original_input => {
                                    input.clone()
                                }
                                _ => e.clone(),
                            })
                            .collect();
                        (id, args)
                    })
                    .collect();
                Some((calls, local(frame, "(inner results)")))
            }
            _ => None,
        };
        // With branches or bodies the inner task lives in its function only.
        let inner = if inner_branches.is_some() || over.is_some() {
            missing(task.span)
        } else {
            frame.scoped(|frame| {
                frame.scope.extend(item.map(|(n, l)| (n.to_string(), l)));
                task.inner_task
                    .as_ref()
                    .map_or(missing(task.span), |b| self.body(b, frame, false))
            })
        };
        let history = settings.accumulate.then(|| {
            let (full, outer) = (settings.full_output, outer_context.clone());
            accumulating(frame, "(reductions)", full, outer, task.span)
        });
        let reduction = frame.scoped(|frame| {
            for (n, l) in item.into_iter().chain([
                ("accumulator", accumulator),
                ("current_result", current_result),
            ]) {
                frame.scope.push((n.into(), l));
            }
            task.reduction_task
                .as_ref()
                .map_or(missing(task.span), |b| self.body(b, frame, false))
        });
        frame.context = outer_context;
        Node {
            ty: reduction.ty.clone(),
            kind: NodeKind::Reduce(Box::new(ir::Reduce {
                items,
                initial,
                inner,
                inner_branches,
                reduction,
                current_input,
                original_input,
                current_result,
                accumulator,
                processed,
                last,
                scratch,
                history,
                over,
            })),
            span: task.span,
        }
    }
}

/// What stands for a part the checker reported missing.
pub(super) fn missing(span: Span) -> Node {
    Node {
        kind: NodeKind::Complete(Expr::str("", span)),
        ty: Type::String,
        span,
    }
}
