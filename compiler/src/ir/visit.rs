//! The walk over a function body for passes that rewrite its numbers: locals, task ids
//! and function ids. `walk_node` and `walk_expr` hold the only matches over every
//! variant for such passes, and name every field, so a new variant or field must say
//! what it holds here, once, rather than in each pass.

use super::Sequence;
use super::{Each, Expr, ExprKind, Local, Loop, Node, NodeKind, Otherwise, Reduce, ReduceOver};

/// What a pass does with each number it meets; each method is called on every place
/// that holds such a number, in no promised order.
pub(crate) trait VisitMut {
    /// A local: read (`Local`, `Accumulated`, `Gathered`) or bound (`Let`, slots, the
    /// locals a composite task keeps its state in).
    fn local(&mut self, _: &mut Local) {}
    /// The task id of an atomic task, a composite task's finish or a script.
    fn task(&mut self, _: &mut u32) {}
    /// A function called: `Call`, gathered and branch calls, `Each.function`.
    fn function(&mut self, _: &mut u32) {}
}

pub(crate) fn walk_node<V: VisitMut + ?Sized>(v: &mut V, n: &mut Node) {
    match &mut n.kind {
        NodeKind::Atomic {
            task,
            system,
            prompt,
            context,
            query,
        } => {
            v.task(task);
            [system, prompt, context]
                .into_iter()
                .chain(query)
                .for_each(|e| walk_expr(v, e));
        }
        NodeKind::Finish { task, body } => {
            v.task(task);
            walk_node(v, body);
        }
        NodeKind::Script {
            task,
            command,
            inputs,
            options,
        } => {
            v.task(task);
            walk_expr(v, command);
            inputs
                .iter_mut()
                .chain(options)
                .for_each(|(_, e)| walk_expr(v, e));
        }
        NodeKind::Sequence(s) => sequence(v, s),
        NodeKind::Reduce(r) => reduce(v, r),
        NodeKind::Map(each) => walk_each(v, each),
        NodeKind::Loop(l) => walk_loop(v, l),
        NodeKind::Cond { cases, otherwise } => {
            for (test, body) in cases {
                walk_expr(v, test);
                walk_node(v, body);
            }
            match otherwise {
                Otherwise::Empty => {}
                Otherwise::Fail { path: _, value } => walk_expr(v, value),
            }
        }
        NodeKind::Call { function, args } => {
            v.function(function);
            exprs(v, args);
        }
        NodeKind::Gather {
            calls,
            results,
            body,
        } => {
            walk_calls(v, calls);
            v.local(results);
            walk_node(v, body);
        }
        NodeKind::Let { bindings, body } => {
            for (local, value) in bindings {
                v.local(local);
                walk_expr(v, value);
            }
            walk_node(v, body);
        }
        NodeKind::Complete(e) => walk_expr(v, e),
    }
}

pub(crate) fn walk_expr<V: VisitMut + ?Sized>(v: &mut V, e: &mut Expr) {
    match &mut e.kind {
        ExprKind::Null | ExprKind::Bool(_) | ExprKind::Num(_) | ExprKind::Str(_) => {}
        ExprKind::Local(l) | ExprKind::Accumulated(l, _) | ExprKind::Gathered(l, _) => v.local(l),
        ExprKind::Field(x, _) | ExprKind::Index(x, _) | ExprKind::Not(x) => walk_expr(v, x),
        ExprKind::Compare(_, a, b) | ExprKind::And(a, b) | ExprKind::Or(a, b) => {
            walk_expr(v, a);
            walk_expr(v, b);
        }
        ExprKind::Concat(parts) => parts.iter_mut().for_each(|(p, _)| walk_expr(v, p)),
        ExprKind::Builtin(_, args) => exprs(v, args),
        ExprKind::Call(f, args) => {
            v.function(f);
            exprs(v, args);
        }
        ExprKind::Task(n) => walk_node(v, n),
    }
}

fn exprs<V: VisitMut + ?Sized>(v: &mut V, es: &mut [Expr]) {
    es.iter_mut().for_each(|e| walk_expr(v, e));
}

fn walk_calls<V: VisitMut + ?Sized>(v: &mut V, calls: &mut [(u32, Vec<Expr>)]) {
    for (f, args) in calls {
        v.function(f);
        exprs(v, args);
    }
}

fn walk_each<V: VisitMut + ?Sized>(v: &mut V, e: &mut Each) {
    let Each {
        list,
        concurrency: _,
        item,
        index,
        function,
        args,
    } = e;
    walk_expr(v, list);
    v.local(item);
    v.local(index);
    v.function(function);
    exprs(v, args);
}

fn sequence<V: VisitMut + ?Sized>(v: &mut V, s: &mut Sequence) {
    let Sequence {
        steps,
        slots,
        output,
        results,
        scratch,
    } = s;
    steps.iter_mut().for_each(|n| walk_node(v, n));
    [output, results, scratch]
        .into_iter()
        .chain(slots.iter_mut().flatten())
        .for_each(|l| v.local(l));
}

fn reduce<V: VisitMut + ?Sized>(v: &mut V, r: &mut Reduce) {
    let Reduce {
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
    } = r;
    exprs(v, items);
    walk_expr(v, initial);
    walk_node(v, inner);
    if let Some((calls, results)) = inner_branches {
        walk_calls(v, calls);
        v.local(results);
    }
    walk_node(v, reduction);
    [
        current_input,
        original_input,
        current_result,
        accumulator,
        processed,
        last,
        scratch,
    ]
    .into_iter()
    .chain(history)
    .for_each(|l| v.local(l));
    if let Some(o) = over {
        let ReduceOver {
            inner,
            items,
            inner_results,
        } = &mut **o;
        walk_each(v, inner);
        v.local(items);
        v.local(inner_results);
    }
}

fn walk_loop<V: VisitMut + ?Sized>(v: &mut V, l: &mut Loop) {
    let Loop {
        director,
        evaluator,
        script,
        max_iterations: _,
        termination,
        accept_exhausted: _,
        iteration,
        director_result,
        evaluation,
        evaluation_feedback,
        script_output,
        last,
        history,
    } = l;
    walk_node(v, director);
    walk_node(v, evaluator);
    if let Some(s) = script {
        walk_node(v, s);
    }
    if let Some(t) = termination {
        walk_expr(v, t);
    }
    [
        iteration,
        director_result,
        evaluation,
        evaluation_feedback,
        script_output,
        last,
    ]
    .into_iter()
    .chain(history)
    .for_each(|l| v.local(l));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Span;
    use tv_stdlib::types::Type;

    /// Records every number it meets, and adds 10 to each.
    #[derive(Default)]
    struct Seen {
        locals: Vec<Local>,
        tasks: Vec<u32>,
        functions: Vec<u32>,
    }

    impl VisitMut for Seen {
        fn local(&mut self, l: &mut Local) {
            self.locals.push(*l);
            *l += 10;
        }
        fn task(&mut self, t: &mut u32) {
            self.tasks.push(*t);
            *t += 10;
        }
        fn function(&mut self, f: &mut u32) {
            self.functions.push(*f);
            *f += 10;
        }
    }

    fn expr(kind: ExprKind) -> Expr {
        Expr::new(kind, Type::Any, Span::default())
    }

    fn node(kind: NodeKind) -> Node {
        Node {
            kind,
            ty: Type::Any,
            span: Span::default(),
        }
    }

    #[test]
    fn the_walk_reaches_every_local_task_and_function_once_in_nested_nodes() {
        let call = expr(ExprKind::Call(7, vec![expr(ExprKind::Local(3))]));
        let atomic = node(NodeKind::Atomic {
            task: 1,
            system: expr(ExprKind::Accumulated(4, true)),
            prompt: call,
            context: expr(ExprKind::Null),
            query: Some(expr(ExprKind::Gathered(5, 0))),
        });
        let mut body = node(NodeKind::Let {
            bindings: vec![(2, expr(ExprKind::Task(Box::new(atomic))))],
            body: Box::new(node(NodeKind::Gather {
                calls: vec![(8, vec![expr(ExprKind::Local(6))])],
                results: 9,
                body: Box::new(node(NodeKind::Finish {
                    task: 0,
                    body: Box::new(node(NodeKind::Call {
                        function: 1,
                        args: vec![],
                    })),
                })),
            })),
        });
        let mut seen = Seen::default();
        walk_node(&mut seen, &mut body);
        seen.locals.sort_unstable();
        seen.tasks.sort_unstable();
        seen.functions.sort_unstable();
        assert_eq!(seen.locals, [2, 3, 4, 5, 6, 9]);
        assert_eq!(seen.tasks, [0, 1]);
        assert_eq!(seen.functions, [1, 7, 8]);
        // A second walk meets the numbers the first one wrote.
        let mut again = Seen::default();
        walk_node(&mut again, &mut body);
        again.tasks.sort_unstable();
        assert_eq!(again.tasks, [10, 11]);
    }
}
