//! Resolving declared types once every file is built: the declarations in dependency
//! order (a cycle is an error naming the chain), then the types set aside while
//! building, written into the tree.

use super::{type_error, PendingType, TypeDecl, EVALUATION_RESULT};
use crate::ast::{Body, Item, Program, Task};
use crate::diag::{Diagnostic, Diagnostics};
use crate::source::{Span, Spanned};
use rustc_hash::FxHashMap as HashMap;
use tv_stdlib::types::{is_scalar_name, parse_with, Type};

/// The types set aside while building, resolved: by where each is written.
pub type Resolved = HashMap<Span, Type>;

/// Resolves every declaration and every type set aside while building, writes the
/// types into the tree and lists the declared types in `program.types`. Returns the
/// resolved types, for items built again later (`tvc compile` of a large program).
pub(crate) fn resolve(program: &mut Program, diags: &mut Diagnostics) -> Resolved {
    let decls: Vec<TypeDecl> = program
        .modules
        .iter_mut()
        .flat_map(|m| std::mem::take(&mut m.types.decls))
        .collect();
    let pending: Vec<PendingType> = program
        .modules
        .iter_mut()
        .flat_map(|m| std::mem::take(&mut m.types.pending))
        .collect();
    if decls.is_empty() && pending.is_empty() {
        return Resolved::default();
    }
    let declared = declare(&decls, diags);
    let resolved = |name: &str| -> Option<Type> {
        if name == EVALUATION_RESULT {
            return Some(Type::evaluation_result());
        }
        declared.get(name).map(|(_, t)| t.clone())
    };
    let mut known: Vec<&str> = declared.keys().map(String::as_str).collect();
    known.push(EVALUATION_RESULT);
    known.sort_unstable();
    let mut found = Resolved::default();
    for p in &pending {
        let ty = match parse_with(p.written.as_str(), &resolved) {
            Ok(t) => t,
            Err(e) => {
                diags.push(type_error(&p.written, &e, p.what, &known));
                Type::Any
            }
        };
        found.insert(p.written.span(), ty);
    }
    for module in &mut program.modules {
        for item in &mut module.items {
            apply(&found, item);
        }
    }
    program.types = decls
        .iter()
        .filter_map(|d| {
            let (span, ty) = declared.get(&d.name.node)?;
            (*span == d.name.span).then(|| (d.name.clone(), ty.clone()))
        })
        .collect();
    found
}

/// Writes the resolved types into an item.
pub(crate) fn apply(found: &Resolved, item: &mut Item) {
    if !found.is_empty() {
        item_types(item, &mut |t| {
            if let Some(ty) = found.get(&t.span) {
                t.node = ty.clone();
            }
        });
    }
}

/// Each declaration by name: where it is declared and its type (`any` when it could
/// not be resolved). Names that cannot be declared, and names declared twice, are
/// reported here.
fn declare(decls: &[TypeDecl], diags: &mut Diagnostics) -> HashMap<String, (Span, Type)> {
    let mut index: HashMap<&str, usize> = HashMap::default();
    let mut usable: Vec<usize> = Vec::new();
    for (i, d) in decls.iter().enumerate() {
        let name = d.name.node.as_str();
        if !crate::ast::is_identifier(name) {
            continue;
        }
        if is_scalar_name(name) {
            diags.push(
                Diagnostic::error(d.name.span, format!("`{name}` is a built-in type"))
                    .with_help("choose another name for the declared type"),
            );
            continue;
        }
        if name == EVALUATION_RESULT {
            diags.push(
                Diagnostic::error(d.name.span, format!("`{name}` is predeclared"))
                    .with_help("it is {success: boolean, feedback?: string}, what evaluators reply; choose another name"),
            );
            continue;
        }
        if let Some(&first) = index.get(name) {
            diags.push(
                Diagnostic::error(d.name.span, format!("type `{name}` is declared twice"))
                    .with_secondary(decls[first].name.span, "first declared here")
                    .with_help("type names are unique across all files of a program"),
            );
            continue;
        }
        index.insert(name, i);
        usable.push(i);
    }
    let order = dependency_order(decls, &usable, &index, diags);
    let mut out: HashMap<String, (Span, Type)> = HashMap::default();
    let mut known: Vec<&str> = index.keys().copied().collect();
    known.push(EVALUATION_RESULT);
    known.sort_unstable();
    for (i, in_cycle) in order {
        let d = &decls[i];
        let ty = if in_cycle || !d.valid {
            Type::Any
        } else {
            let lookup = |name: &str| -> Option<Type> {
                if name == EVALUATION_RESULT {
                    return Some(Type::evaluation_result());
                }
                // A declaration in a cycle, or one that is wrong, was reported: it
                // stands for `any` rather than adding an error at each use.
                index.get(name)?;
                Some(out.get(name).map_or(Type::Any, |(_, t)| t.clone()))
            };
            match parse_with(d.text.as_str(), &lookup) {
                Ok(t) => t.named(&d.name.node),
                Err(e) => {
                    diags.push(type_error(&d.text, &e, "declared type", &known));
                    Type::Any
                }
            }
        };
        out.insert(d.name.node.clone(), (d.name.span, ty));
    }
    out
}

/// The declarations in an order where each comes after those it uses, each with
/// whether it is part of a cycle (reported here, once per cycle). The walk keeps its
/// own stack: a chain of a hundred thousand declarations does not deepen the call stack.
fn dependency_order(
    decls: &[TypeDecl],
    usable: &[usize],
    index: &HashMap<&str, usize>,
    diags: &mut Diagnostics,
) -> Vec<(usize, bool)> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        Open,
        Done,
    }
    let mut state = vec![State::New; decls.len()];
    let mut in_cycle = vec![false; decls.len()];
    let mut order = Vec::with_capacity(usable.len());
    let uses = |i: usize| -> Vec<usize> {
        decls[i]
            .uses
            .iter()
            .filter_map(|n| index.get(n.as_str()).copied())
            .collect()
    };
    for &root in usable {
        if state[root] != State::New {
            continue;
        }
        state[root] = State::Open;
        let mut stack: Vec<(usize, Vec<usize>, usize)> = vec![(root, uses(root), 0)];
        while let Some((node, next, k)) = stack.last_mut() {
            let node = *node;
            let Some(&dep) = next.get(*k) else {
                stack.pop();
                state[node] = State::Done;
                order.push((node, in_cycle[node]));
                continue;
            };
            *k += 1;
            match state[dep] {
                State::New => {
                    state[dep] = State::Open;
                    stack.push((dep, uses(dep), 0));
                }
                State::Open => {
                    let from = stack.iter().position(|(n, _, _)| *n == dep).unwrap_or(0);
                    let chain: Vec<usize> = stack[from..].iter().map(|(n, _, _)| *n).collect();
                    if chain.iter().any(|&n| in_cycle[n]) {
                        continue;
                    }
                    chain.iter().for_each(|&n| in_cycle[n] = true);
                    diags.push(cycle_error(decls, &chain));
                }
                State::Done => {}
            }
        }
    }
    order
}

fn cycle_error(decls: &[TypeDecl], chain: &[usize]) -> Diagnostic {
    let first = &decls[chain[0]].name;
    let names: Vec<&str> = chain
        .iter()
        .chain(std::iter::once(&chain[0]))
        .map(|&i| decls[i].name.node.as_str())
        .collect();
    let message = if chain.len() == 1 {
        format!("type `{}` refers to itself", first.node)
    } else {
        format!(
            "type `{}` refers to itself through {}: {}",
            first.node,
            names[1..names.len() - 1]
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
            names.join(" → ")
        )
    };
    let mut d = Diagnostic::error(first.span, message);
    for &i in &chain[1..] {
        d = d.with_secondary(decls[i].name.span, "declared here");
    }
    d.with_help(
        "a type cannot hold itself: write the inner value as `object` or `any`, or break the chain",
    )
}

/// Calls `f` on every type written in an item: parameters, `returns`, output formats'
/// schemas and inputs' types, nested tasks included.
fn item_types(item: &mut Item, f: &mut dyn FnMut(&mut Spanned<Type>)) {
    match item {
        Item::Template(t) => {
            t.params
                .iter_mut()
                .filter_map(|p| p.ty.as_mut())
                .for_each(&mut *f);
            t.returns.iter_mut().for_each(&mut *f);
            body_types(&mut t.body, f);
        }
        Item::Task(t) => task_types(&mut t.task, f),
    }
}

fn body_types(body: &mut Body, f: &mut dyn FnMut(&mut Spanned<Type>)) {
    match body {
        Body::Task(t) => task_types(t, f),
        Body::Call(c) => {
            for arg in &mut c.args {
                if let crate::ast::ArgValue::Body(b) = &mut arg.value {
                    body_types(b, f);
                }
            }
        }
        Body::Cond(c) => c.cases.iter_mut().for_each(|c| body_types(&mut c.body, f)),
        Body::Missing(_) => {}
    }
}

fn task_types(task: &mut Task, f: &mut dyn FnMut(&mut Spanned<Type>)) {
    if let Some(s) = task
        .output_format
        .as_deref_mut()
        .and_then(|o| o.schema.as_mut())
    {
        f(s);
    }
    let script_inputs = task.script.iter_mut().flat_map(|s| s.inputs.iter_mut());
    for input in task.inputs.iter_mut().chain(script_inputs) {
        if let Some(t) = input.ty.as_mut() {
            f(t);
        }
        if let crate::ast::InputValue::Body(b) = &mut input.value {
            body_types(b, f);
        }
    }
    for b in task.steps.iter_mut().flat_map(|s| s.node.iter_mut()) {
        body_types(b, f);
    }
    for b in task.slots_mut().into_iter().flatten() {
        body_types(b, f);
    }
}
