//! The sequential and director-evaluator operators: steps in order, each seeing the
//! previous one's value and the named slots; a loop of director, script and evaluator.

use super::lists::missing;
use super::task::{accumulating, joined};
use super::{context, Frame, Lowerer};
use crate::ast::{self, Task, TaskType};
use crate::ir::{self, Expr, ExprKind, Node, NodeKind};
use tv_stdlib::types::Type;

/// Default iterations of a director-evaluator loop (DESIGN §6).
const DEFAULT_MAX_ITERATIONS: u64 = 5;

impl Lowerer<'_> {
    pub(super) fn sequence(&mut self, task: &Task, frame: &mut Frame) -> Node {
        let settings = context::merge(TaskType::Sequential, task.context.as_deref());
        let output = frame.local("output", Type::Any);
        let results = frame.local("(step results)", Type::Array(Box::new(Type::Any)));
        let scratch = frame.local("(failed step)", Type::Any);
        let outer_context = frame.context.clone();
        if settings.accumulate {
            let accumulated = Expr::new(
                ExprKind::Accumulated(results, settings.full_output),
                Type::String,
                task.span,
            );
            frame.context = Some(joined(outer_context.clone(), accumulated));
        }
        let mut steps = Vec::new();
        let mut slots = Vec::new();
        // `output_slot` names stay bound for the later steps of this sequence only.
        frame.scoped(|frame| {
            for (i, step) in task.steps.iter().flat_map(|s| &s.node).enumerate() {
                let step_task = match step {
                    ast::Body::Task(t) => Some(t.as_ref()),
                    _ => None,
                };
                let source = step_task
                    .and_then(|t| t.input_source.as_deref())
                    .and_then(|s| frame.lookup(&s.node));
                let node = frame.scoped(|frame| {
                    match source {
                        Some(slot) => frame.scope.push(("output".into(), slot)),
                        None if i > 0 => frame.scope.push(("output".into(), output)),
                        None => {}
                    }
                    self.body(step, frame, false)
                });
                let slot = step_task
                    .and_then(|t| t.output_slot.as_deref())
                    .map(|name| {
                        let l = frame.local(&name.node, node.ty.clone());
                        frame.scope.push((name.node.clone(), l));
                        l
                    });
                steps.push(node);
                slots.push(slot);
            }
        });
        frame.context = outer_context;
        let ty = steps.last().map_or(Type::Any, |s| s.ty.clone());
        Node {
            kind: NodeKind::Sequence(Box::new(ir::Sequence {
                steps,
                slots,
                output,
                results,
                scratch,
            })),
            ty,
            span: task.span,
        }
    }

    pub(super) fn director_loop(&mut self, task: &Task, frame: &mut Frame) -> Node {
        frame.scoped(|frame| {
            let names = [
                "current_iteration",
                "director_result",
                "evaluation",
                "evaluation_feedback",
                "script_output",
            ];
            let locals: Vec<ir::Local> = names
                .iter()
                .map(|&n| {
                    let ty = if n == "evaluation" {
                        Type::evaluation_result()
                    } else {
                        Type::Any
                    };
                    frame.bind(n, ty)
                })
                .collect();
            let last = frame.local("(last director result)", Type::Any);
            let settings = context::merge(TaskType::DirectorEvaluatorLoop, task.context.as_deref());
            // The director and evaluator see the earlier iterations' director results
            // as context when the loop accumulates them.
            let outer_context = frame.context.clone();
            let history = settings.accumulate.then(|| {
                let (full, outer) = (settings.full_output, outer_context.clone());
                accumulating(frame, "(director results)", full, outer, task.span)
            });
            let director = task
                .director
                .as_ref()
                .map_or(missing(task.span), |b| self.body(b, frame, false));
            let script = self.script_node(task, frame);
            let evaluator = task.evaluator.as_deref().map_or(missing(task.span), |b| {
                let outer = self.evaluator.replace(b.span());
                let node = self.body(b, frame, false);
                self.evaluator = outer;
                node
            });
            let termination = task.termination.as_deref().map(|e| self.expr(e, frame));
            frame.context = outer_context;
            Node {
                ty: director.ty.clone(),
                kind: NodeKind::Loop(Box::new(ir::Loop {
                    director,
                    evaluator,
                    script,
                    max_iterations: task
                        .max_iterations
                        .as_ref()
                        .map_or(DEFAULT_MAX_ITERATIONS, |m| m.node),
                    termination,
                    accept_exhausted: task.on_max_iterations.as_ref().is_some_and(|a| a.node),
                    iteration: locals[0],
                    director_result: locals[1],
                    evaluation: locals[2],
                    evaluation_feedback: locals[3],
                    script_output: locals[4],
                    last,
                    history,
                })),
                span: task.span,
            }
        })
    }
}
