//! The type of the value a body produces, from its structure alone.

use super::Checker;
use crate::ast::{Body, Item, OutputKind, Task, TaskType};
use crate::source::Span;
use std::sync::Arc;
use tv_stdlib::types::Type;

impl Checker<'_, '_> {
    /// Return types of every item, declared or inferred; recursion yields `any`.
    pub(super) fn infer_returns(&mut self) {
        let names: Vec<String> = self.items.keys().cloned().collect();
        Arc::make_mut(&mut self.returns).reserve(names.len());
        for name in names {
            let mut visiting = Vec::new();
            self.item_type(&name, &mut visiting);
        }
    }

    fn item_type(&mut self, name: &str, visiting: &mut Vec<String>) -> Type {
        if let Some(t) = self.returns.get(name) {
            return t.clone();
        }
        if visiting.iter().any(|v| v == name) {
            return Type::Any;
        }
        let Some((_, item)) = self.items.get(name) else {
            return Type::Any;
        };
        let item: &Item = item;
        visiting.push(name.to_string());
        let ty = match item {
            Item::Template(t) => match &t.returns {
                Some(r) => r.node.clone(),
                None => self.body_type(&t.body, visiting),
            },
            Item::Task(t) => self.task_type(&t.task, visiting),
        };
        visiting.pop();
        Arc::make_mut(&mut self.returns).insert(name.to_string(), ty.clone());
        ty
    }

    pub(super) fn infer_body(&mut self, body: &Body) -> Type {
        self.body_type(body, &mut Vec::new())
    }

    fn body_type(&mut self, body: &Body, visiting: &mut Vec<String>) -> Type {
        match body {
            Body::Task(t) => self.task_type(t, visiting),
            Body::Call(c) => self.item_type(&c.template.node, visiting),
            Body::Cond(c) => {
                let mut types = c
                    .cases
                    .iter()
                    .map(|case| self.body_type(&case.body, visiting));
                let first = types.next().unwrap_or(Type::Any);
                types.fold(first, |acc, t| acc.join(&t))
            }
            Body::Missing(_) => Type::Any,
        }
    }

    fn task_type(&mut self, task: &Task, visiting: &mut Vec<String>) -> Type {
        if let Some(r) = &task.reference {
            return self.item_type(&r.node, visiting);
        }
        match task.kind.node {
            TaskType::Atomic => output_type(task),
            TaskType::Sequential => match task.steps.as_ref().and_then(|s| s.node.last()) {
                Some(last) => self.body_type(last, visiting),
                None => Type::Any,
            },
            TaskType::Reduce => match &task.reduction_task {
                Some(b) => self.body_type(b, visiting),
                None => Type::Any,
            },
            TaskType::Script => Type::String,
            TaskType::DirectorEvaluatorLoop => Type::Any,
        }
    }
}

/// What an atomic task's `output_format` says its value is.
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
            TaskType::Atomic => t
                .output_format
                .as_ref()
                .map(|f| f.schema.as_ref().map_or(f.span, |s| s.span)),
            TaskType::Sequential => t
                .steps
                .as_ref()
                .and_then(|s| s.node.last())
                .and_then(output_schema_span),
            TaskType::Reduce => t.reduction_task.as_ref().and_then(output_schema_span),
            _ => None,
        },
        _ => None,
    }
}
