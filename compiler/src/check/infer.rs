//! The type of the value a body produces, from its structure alone.

use super::{Checker, Tables};
use crate::ast::{Body, Item, OutputKind, Task, TaskType};
use crate::source::Span;
use rustc_hash::FxHashMap as HashMap;
use tv_stdlib::types::Type;

/// Where a body's type looks up the return type of an item it calls.
pub(super) trait ItemTypes {
    fn item_type(&mut self, name: &str) -> Type;
}

/// After inference: every item's return type is known.
impl ItemTypes for &HashMap<String, Type> {
    fn item_type(&mut self, name: &str) -> Type {
        self.get(name).cloned().unwrap_or(Type::Any)
    }
}

/// During inference: the types worked out so far. An item not yet in the table (one
/// on the path being worked out: recursion) is `any`.
struct Known<'r>(&'r HashMap<String, Type>);

impl ItemTypes for Known<'_> {
    fn item_type(&mut self, name: &str) -> Type {
        self.0.get(name).cloned().unwrap_or(Type::Any)
    }
}

/// Records the items whose type a body's type reads, in the order it reads them.
struct Needs<'n>(&'n mut Vec<String>);

impl ItemTypes for Needs<'_> {
    fn item_type(&mut self, name: &str) -> Type {
        self.0.push(name.to_string());
        Type::Any
    }
}

/// An item's type from the types of the items its body reads.
fn item_type(item: &Item, items: &mut impl ItemTypes) -> Type {
    match item {
        Item::Template(t) => match &t.returns {
            Some(r) => r.node.clone(),
            None => body_type(&t.body, items),
        },
        Item::Task(t) => task_type(&t.task, items),
    }
}

/// Return types of every item, declared or inferred; recursion yields `any`.
///
/// An item's type may be the type of an item it calls, which may be the type of the
/// next: a depth-first walk of the call graph, in which an item met again while its
/// type is being worked out is `any`. The walk keeps its own stack, so a chain of
/// tens of thousands of templates, each calling the next, cannot overflow the
/// thread's.
pub(super) fn returns(items: &Tables) -> HashMap<String, Type> {
    let mut returns: HashMap<String, Type> = HashMap::default();
    returns.reserve(items.len());
    // The items being worked out (the path), and the work: (name, whether what it
    // reads has been pushed already).
    let mut visiting: rustc_hash::FxHashSet<&str> = Default::default();
    let mut work: Vec<(&str, bool)> = Vec::new();
    let mut needs = Vec::new();
    for root in items.keys() {
        work.push((root, false));
        while let Some((name, expanded)) = work.pop() {
            let Some((key, (_, item))) = items.get_key_value(name) else {
                continue;
            };
            let item: &Item = item;
            if expanded {
                let ty = item_type(item, &mut Known(&returns));
                visiting.remove(name);
                returns.insert(key.clone(), ty);
                continue;
            }
            if returns.contains_key(name) || !visiting.insert(key) {
                continue;
            }
            work.push((key, true));
            needs.clear();
            if !matches!(item, Item::Template(t) if t.returns.is_some()) {
                item_type(item, &mut Needs(&mut needs));
            }
            // Reversed, so that the first item read is worked out first.
            for need in needs.iter().rev() {
                if let Some((k, _)) = items.get_key_value(need.as_str()) {
                    work.push((k, false));
                }
            }
        }
    }
    returns
}

impl Checker<'_, '_, '_> {
    pub(super) fn infer_body(&self, body: &Body) -> Type {
        let mut returns = self.returns;
        body_type(body, &mut returns)
    }
}

fn body_type(body: &Body, items: &mut impl ItemTypes) -> Type {
    match body {
        Body::Task(t) => task_type(t, items),
        Body::Call(c) => items.item_type(&c.template.node),
        Body::Cond(c) => {
            let mut types = c.cases.iter().map(|case| body_type(&case.body, items));
            let first = types.next().unwrap_or(Type::Any);
            types.fold(first, |acc, t| acc.join(&t))
        }
        Body::Missing(_) => Type::Any,
    }
}

fn task_type(task: &Task, items: &mut impl ItemTypes) -> Type {
    if let Some(r) = &task.reference {
        return items.item_type(&r.node);
    }
    match task.kind.node {
        TaskType::Atomic => output_type(task),
        TaskType::Sequential => match task.steps.as_ref().and_then(|s| s.node.last()) {
            Some(last) => body_type(last, items),
            None => Type::Any,
        },
        TaskType::Reduce => match &task.reduction_task {
            Some(b) => body_type(b, items),
            None => Type::Any,
        },
        // A script's stdout, read as its `output_format` says.
        TaskType::Script => output_type(task),
        // A loop returns its last director result.
        TaskType::DirectorEvaluatorLoop => match &task.director {
            Some(b) => body_type(b, items),
            None => Type::Any,
        },
        TaskType::Map => {
            let item = task
                .map_body
                .as_ref()
                .map_or(Type::Any, |b| body_type(b, items));
            // Maps of maps through calls nest a type once per call: past what a type
            // may nest, the items are `any`, as a bundle stores no deeper type.
            let item = if item.depth() >= tv_stdlib::types::MAX_NESTING {
                Type::Any
            } else {
                item
            };
            Type::Array(Box::new(item))
        }
    }
}

/// What an atomic or script task's `output_format` says its value is.
pub fn output_type(task: &Task) -> Type {
    match &task.output_format {
        Some(f) if f.kind.node == OutputKind::Json => {
            f.schema.as_ref().map_or(Type::Any, |s| s.node.clone())
        }
        _ => Type::String,
    }
}

/// Where the body's result type is written, to point at it in a mismatch.
pub fn output_schema_span(body: &Body) -> Option<Span> {
    match body {
        Body::Task(t) => match t.kind.node {
            TaskType::Atomic | TaskType::Script => t
                .output_format
                .as_ref()
                .map(|f| f.schema.as_ref().map_or(f.span, |s| s.span)),
            TaskType::Sequential => t
                .steps
                .as_ref()
                .and_then(|s| s.node.last())
                .and_then(output_schema_span),
            TaskType::Reduce => t.reduction_task.as_deref().and_then(output_schema_span),
            TaskType::Map => t.map_body.as_deref().and_then(output_schema_span),
            TaskType::DirectorEvaluatorLoop => t.director.as_deref().and_then(output_schema_span),
        },
        _ => None,
    }
}
