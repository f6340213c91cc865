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

/// During inference: an item's type is worked out when first asked for.
struct Inference<'t, 'p> {
    items: &'t Tables<'p>,
    returns: HashMap<String, Type>,
    /// The items whose type is being worked out; asking again is recursion.
    visiting: Vec<String>,
}

impl ItemTypes for Inference<'_, '_> {
    fn item_type(&mut self, name: &str) -> Type {
        if let Some(t) = self.returns.get(name) {
            return t.clone();
        }
        if self.visiting.iter().any(|v| v == name) {
            return Type::Any;
        }
        let Some((_, item)) = self.items.get(name) else {
            return Type::Any;
        };
        let item: &Item = item;
        self.visiting.push(name.to_string());
        let ty = match item {
            Item::Template(t) => match &t.returns {
                Some(r) => r.node.clone(),
                None => body_type(&t.body, self),
            },
            Item::Task(t) => task_type(&t.task, self),
        };
        self.visiting.pop();
        self.returns.insert(name.to_string(), ty.clone());
        ty
    }
}

/// Return types of every item, declared or inferred; recursion yields `any`.
pub(super) fn returns(items: &Tables) -> HashMap<String, Type> {
    let mut inference = Inference {
        items,
        returns: HashMap::default(),
        visiting: Vec::new(),
    };
    inference.returns.reserve(items.len());
    for name in items.keys() {
        inference.item_type(name);
    }
    inference.returns
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
        TaskType::Map => Type::Array(Box::new(
            task.map_body
                .as_ref()
                .map_or(Type::Any, |b| body_type(b, items)),
        )),
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
            TaskType::Reduce => t.reduction_task.as_ref().and_then(output_schema_span),
            TaskType::Map => t.map_body.as_ref().and_then(output_schema_span),
            TaskType::DirectorEvaluatorLoop => t.director.as_ref().and_then(output_schema_span),
        },
        _ => None,
    }
}
