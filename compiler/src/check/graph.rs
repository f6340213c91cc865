//! The call graph: recursion is allowed, but a cycle gets a warning, since only the
//! machine's call-depth limit will stop one that never ends.

use crate::ast::Program;
use crate::diag::{Diagnostic, Diagnostics};
use crate::source::Span;
use std::collections::{HashMap, HashSet};

pub fn warn_cycles(
    program: &Program,
    calls: &HashMap<String, Vec<(String, Span)>>,
    diags: &mut Diagnostics,
) {
    let mut reported: HashSet<String> = HashSet::new();
    // Items in source order, so the warnings come out the same every run.
    let order: Vec<&str> = program
        .modules
        .iter()
        .flat_map(|m| m.items.iter().map(|i| i.name().node.as_str()))
        .collect();
    for start in order {
        if reported.contains(start) {
            continue;
        }
        let Some((path, span)) = find_cycle(start, calls) else {
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
    calls: &HashMap<String, Vec<(String, Span)>>,
) -> Option<(Vec<String>, Span)> {
    let mut stack: Vec<(String, usize)> = vec![(start.to_string(), 0)];
    let mut seen: HashSet<String> = HashSet::new();
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
        if seen.insert(next.clone()) {
            stack.push((next.clone(), 0));
        }
    }
    None
}
