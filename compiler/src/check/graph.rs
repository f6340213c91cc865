//! The call graph: recursion is allowed, but a cycle gets a warning, since only the
//! machine's call-depth limit will stop one that never ends.

use crate::ast::Program;
use crate::diag::{Diagnostic, Diagnostics};
use crate::source::Span;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

pub(super) fn warn_cycles(program: &Program, calls: &super::Calls, diags: &mut Diagnostics) {
    let mut reported: HashSet<String> = HashSet::default();
    // Items in source order, so the warnings come out the same every run.
    let order = program.modules.iter().flat_map(|m| m.names());
    let order = order.map(|name| name.node.as_str());
    let cyclic = on_cycles(calls);
    for start in order {
        if reported.contains(start) || !cyclic.contains(start) {
            continue;
        }
        let Some((path, span)) = find_cycle(start, calls, &cyclic) else {
            continue;
        };
        reported.extend(path.iter().cloned());
        let shown = path.join(" → ");
        let msg = if path.len() == 2 {
            format!("`{start}` calls itself")
        } else {
            format!("`{start}` calls itself through {shown}")
        };
        diags.push(
            Diagnostic::warning(span, msg)
                .with_label("this call closes the cycle")
                .with_help("recursion is allowed; the machine's call-depth limit stops it if it never ends"),
        );
    }
}

/// A path `start → … → start` and the span of the call that returns to `start`.
fn find_cycle(
    start: &str,
    calls: &super::Calls,
    cyclic: &HashSet<&str>,
) -> Option<(Vec<String>, Span)> {
    let mut stack: Vec<(String, usize)> = vec![(start.to_string(), 0)];
    let mut seen: HashSet<String> = HashSet::default();
    while let Some((node, idx)) = stack.last().cloned() {
        let edges = calls.get(&node).map(Vec::as_slice).unwrap_or(&[]);
        let Some((next, span)) = edges.get(idx) else {
            stack.pop();
            continue;
        };
        if let Some(top) = stack.last_mut() {
            top.1 += 1;
        }
        if next == start {
            let mut path: Vec<String> = stack.iter().map(|(n, _)| n.clone()).collect();
            path.push(start.to_string());
            return Some((path, *span));
        }
        // Only a node on a cycle can lead back to `start`.
        if cyclic.contains(next.as_str()) && seen.insert(next.clone()) {
            stack.push((next.clone(), 0));
        }
    }
    None
}

/// The names that lie on some cycle: members of a strongly connected component with
/// more than one node, or with an edge to itself. Tarjan's algorithm, iterative, so a
/// long call chain cannot overflow the stack; linear in the size of the graph, so an
/// acyclic library of any size costs one pass.
fn on_cycles(calls: &super::Calls) -> HashSet<&str> {
    let names: Vec<&str> = calls.keys().map(String::as_str).collect();
    let id: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let edges: Vec<Vec<usize>> = names
        .iter()
        .map(|n| {
            calls[*n]
                .iter()
                .filter_map(|(m, _)| id.get(m.as_str()).copied())
                .collect()
        })
        .collect();
    let mut index = vec![usize::MAX; names.len()];
    let mut low = vec![0; names.len()];
    let mut on_stack = vec![false; names.len()];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut cyclic = HashSet::default();
    for root in 0..names.len() {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut edge)) = work.last_mut() {
            if *edge == 0 && index[v] == usize::MAX {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = edges[v].get(*edge) {
                *edge += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 || edges[v].contains(&v) {
                    cyclic.extend(component.into_iter().map(|w| names[w]));
                }
            }
        }
    }
    cyclic
}
