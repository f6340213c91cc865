//! Branch functions take only the variables they read. A branch is lowered with every
//! variable in scope as a parameter (its body may name any of them), and the ones its
//! body never names are removed afterwards. Without this, a reduce over N inputs made
//! N branch calls of N + 2 arguments each: code quadratic in the number of inputs.

use crate::ir::visit::{walk_node, VisitMut};
use crate::ir::{Function, Local, Node};

/// Removes the parameters of `f` that its body never names, renumbering its locals;
/// returns the indices of the parameters kept, in order.
pub(super) fn unused_params(f: &mut Function) -> Vec<usize> {
    let count = f.params.len();
    let mut used = vec![false; count];
    node(&mut f.body, |l| {
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
    node(&mut f.body, |l| {
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

/// Calls its closure on every local a body names.
struct Locals<F>(F);

impl<F: FnMut(&mut Local)> VisitMut for Locals<F> {
    fn local(&mut self, l: &mut Local) {
        (self.0)(l);
    }
}

/// Calls `f` on every local `n` names, its own and those of the nodes and
/// expressions in it.
fn node(n: &mut Node, f: impl FnMut(&mut Local)) {
    walk_node(&mut Locals(f), n);
}
