//! Branch functions take only the variables they read. A branch is lowered with every
//! variable in scope as a parameter (its body may name any of them), and the ones its
//! body never names are removed afterwards. Without this, a reduce over N inputs made
//! N branch calls of N + 2 arguments each: code quadratic in the number of inputs.

use crate::ir::{Each, Expr, ExprKind, Function, Local, Node, NodeKind};

/// Removes the parameters of `f` that its body never names, renumbering its locals;
/// returns the indices of the parameters kept, in order.
pub(super) fn unused_params(f: &mut Function) -> Vec<usize> {
    let count = f.params.len();
    let mut used = vec![false; count];
    node(&mut f.body, &mut |l| {
        if let Some(u) = used.get_mut(usize::from(*l)) {
            *u = true;
        }
    });
    if used.iter().all(|&u| u) {
        return (0..count).collect();
    }
    // Kept parameters stay first, in order; every other local moves down past the
    // parameters removed before it.
    let mut renumber: Vec<Local> = Vec::with_capacity(f.locals.len());
    let mut next: Local = 0;
    for i in 0..f.locals.len() {
        renumber.push(next);
        if used.get(i).copied().unwrap_or(true) {
            next = next.wrapping_add(1);
        }
    }
    node(&mut f.body, &mut |l| {
        if let Some(&n) = renumber.get(usize::from(*l)) {
            *l = n;
        }
    });
    let kept: Vec<usize> = (0..count).filter(|&i| used[i]).collect();
    let mut i = 0;
    f.params.retain(|_| {
        i += 1;
        used[i - 1]
    });
    let mut i = 0;
    f.locals.retain(|_| {
        i += 1;
        used.get(i - 1).copied().unwrap_or(true)
    });
    kept
}

/// Calls `f` on every local `n` names, its own and those of the nodes and
/// expressions in it.
// The matches name every variant, so a new one must say which locals it holds.
fn node(n: &mut Node, f: &mut impl FnMut(&mut Local)) {
    match &mut n.kind {
        NodeKind::Atomic {
            system,
            prompt,
            context,
            query,
            ..
        } => [system, prompt, context]
            .into_iter()
            .chain(query)
            .for_each(|e| expr(e, f)),
        NodeKind::Finish { body, .. } => node(body, f),
        NodeKind::Script {
            command,
            inputs,
            options,
            ..
        } => {
            expr(command, f);
            inputs.iter_mut().for_each(|(_, e)| expr(e, f));
            options.iter_mut().for_each(|(_, e)| expr(e, f));
        }
        NodeKind::Sequence(s) => {
            [&mut s.output, &mut s.results, &mut s.scratch]
                .into_iter()
                .chain(s.slots.iter_mut().flatten())
                .for_each(&mut *f);
            s.steps.iter_mut().for_each(|n| node(n, f));
        }
        NodeKind::Reduce(r) => {
            r.items.iter_mut().for_each(|e| expr(e, f));
            expr(&mut r.initial, f);
            node(&mut r.inner, f);
            if let Some((calls, results)) = &mut r.inner_branches {
                calls
                    .iter_mut()
                    .flat_map(|(_, a)| a)
                    .for_each(|e| expr(e, f));
                f(results);
            }
            node(&mut r.reduction, f);
            [
                &mut r.current_input,
                &mut r.original_input,
                &mut r.current_result,
                &mut r.accumulator,
                &mut r.processed,
                &mut r.last,
                &mut r.scratch,
            ]
            .into_iter()
            .chain(&mut r.history)
            .for_each(&mut *f);
            if let Some(o) = &mut r.over {
                each(&mut o.inner, f);
                [&mut o.items, &mut o.inner_results]
                    .into_iter()
                    .for_each(&mut *f);
            }
        }
        NodeKind::Map(e) => each(e, f),
        NodeKind::Loop(l) => {
            node(&mut l.director, f);
            node(&mut l.evaluator, f);
            if let Some(s) = &mut l.script {
                node(s, f);
            }
            if let Some(t) = &mut l.termination {
                expr(t, f);
            }
            [
                &mut l.iteration,
                &mut l.director_result,
                &mut l.evaluation,
                &mut l.evaluation_feedback,
                &mut l.script_output,
                &mut l.last,
            ]
            .into_iter()
            .chain(&mut l.history)
            .for_each(&mut *f);
        }
        NodeKind::Cond { cases, otherwise } => {
            for (test, body) in cases {
                expr(test, f);
                node(body, f);
            }
            if let crate::ir::Otherwise::Fail { value, .. } = otherwise {
                expr(value, f);
            }
        }
        NodeKind::Call { args, .. } => args.iter_mut().for_each(|e| expr(e, f)),
        NodeKind::Gather {
            calls,
            results,
            body,
        } => {
            calls
                .iter_mut()
                .flat_map(|(_, a)| a)
                .for_each(|e| expr(e, f));
            f(results);
            node(body, f);
        }
        NodeKind::Let { bindings, body } => {
            for (local, value) in bindings {
                f(local);
                expr(value, f);
            }
            node(body, f);
        }
        NodeKind::Complete(e) => expr(e, f),
    }
}

fn each(e: &mut Each, f: &mut impl FnMut(&mut Local)) {
    expr(&mut e.list, f);
    e.args.iter_mut().for_each(|a| expr(a, f));
    f(&mut e.item);
    f(&mut e.index);
}

fn expr(e: &mut Expr, f: &mut impl FnMut(&mut Local)) {
    match &mut e.kind {
        ExprKind::Null | ExprKind::Bool(_) | ExprKind::Num(_) | ExprKind::Str(_) => {}
        ExprKind::Local(l) | ExprKind::Accumulated(l, _) | ExprKind::Gathered(l, _) => f(l),
        ExprKind::Field(x, _) | ExprKind::Index(x, _) | ExprKind::Not(x) => expr(x, f),
        ExprKind::Compare(_, a, b) | ExprKind::And(a, b) | ExprKind::Or(a, b) => {
            expr(a, f);
            expr(b, f);
        }
        ExprKind::Concat(parts) => parts.iter_mut().for_each(|(p, _)| expr(p, f)),
        ExprKind::Builtin(_, args) | ExprKind::Call(_, args) => {
            args.iter_mut().for_each(|a| expr(a, f))
        }
        ExprKind::Task(n) => node(n, f),
    }
}
