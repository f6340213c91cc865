//! The type of the value a body produces, from its structure alone.

use super::{Checker, Sketches, Tables};
use crate::ast::{Body, Item, OutputKind, Task, TaskType};
use crate::source::Span;
use rustc_hash::FxHashMap as HashMap;
use tv_stdlib::types::Type;

/// Where a body's type looks up the return type of an item it calls.
trait ItemTypes {
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

/// What an item's return type is made of, the rest of its body left out: inference
/// reads only this, so that it needs no item's syntax tree (`tvc compile` of a large
/// program holds a window of them at a time).
#[derive(Clone, Debug)]
pub enum Sketch {
    /// A type the item writes (`returns`, an output format's schema, a text
    /// output), with where it is written: a type naming a declared one is
    /// replaced there once the declarations are resolved.
    Written(Type, Option<Span>),
    /// The return type of the item of this name.
    Item(String),
    /// The cases of a cond: their types joined, in order (`any` for none).
    Join(Vec<Sketch>),
    /// A map's: a list of its body's type.
    List(Box<Sketch>),
}

impl Sketch {
    /// An item's: its declared `returns`, else what its body produces.
    pub fn of_item(item: &Item) -> Sketch {
        match item {
            Item::Template(t) => match &t.returns {
                Some(r) => Sketch::Written(r.node.clone(), Some(r.span)),
                None => Sketch::of_body(&t.body),
            },
            Item::Task(t) => Sketch::of_task(&t.task),
        }
    }

    fn of_body(body: &Body) -> Sketch {
        match body {
            Body::Task(t) => Sketch::of_task(t),
            Body::Call(c) => Sketch::Item(c.template.node.clone()),
            Body::Cond(c) => {
                Sketch::Join(c.cases.iter().map(|c| Sketch::of_body(&c.body)).collect())
            }
            Body::Missing(_) => Sketch::any(),
        }
    }

    fn of_task(task: &Task) -> Sketch {
        if let Some(r) = &task.reference {
            return Sketch::Item(r.node.clone());
        }
        let slot = |b: Option<&Body>| b.map_or(Sketch::any(), Sketch::of_body);
        match task.kind.node {
            // A script's stdout, read as its `output_format` says.
            TaskType::Atomic | TaskType::Script => match &task.output_format {
                Some(f) if f.kind.node == OutputKind::Json => match &f.schema {
                    Some(s) => Sketch::Written(s.node.clone(), Some(s.span)),
                    None => Sketch::any(),
                },
                _ => Sketch::Written(Type::String, None),
            },
            TaskType::Sequential => slot(task.steps.as_ref().and_then(|s| s.node.last())),
            TaskType::Reduce => slot(task.reduction_task.as_deref()),
            // A loop returns its last director result.
            TaskType::DirectorEvaluatorLoop => slot(task.director.as_deref()),
            TaskType::Map => Sketch::List(Box::new(slot(task.map_body.as_deref()))),
        }
    }

    fn any() -> Sketch {
        Sketch::Written(Type::Any, None)
    }

    /// Calls `f` on every written type, with where it is written.
    pub fn types_mut(&mut self, f: &mut dyn FnMut(&mut Type, Span)) {
        match self {
            Sketch::Written(t, Some(span)) => f(t, *span),
            Sketch::Written(_, None) | Sketch::Item(_) => {}
            Sketch::Join(cases) => cases.iter_mut().for_each(|c| c.types_mut(f)),
            Sketch::List(body) => body.types_mut(f),
        }
    }

    /// The type, with the types of the items it reads from `items`, in order.
    fn of(&self, items: &mut impl ItemTypes) -> Type {
        match self {
            Sketch::Written(t, _) => t.clone(),
            Sketch::Item(name) => items.item_type(name),
            Sketch::Join(cases) => {
                let mut types = cases.iter().map(|c| c.of(items));
                let first = types.next().unwrap_or(Type::Any);
                types.fold(first, |acc, t| acc.join(&t))
            }
            Sketch::List(body) => {
                let item = body.of(items);
                // Maps of maps through calls nest a type once per call: past what a
                // type may nest, the items are `any`, as a bundle stores no deeper type.
                let item = if item.depth() >= tv_stdlib::types::MAX_NESTING {
                    Type::Any
                } else {
                    item
                };
                Type::Array(Box::new(item))
            }
        }
    }
}

/// Return types of every item, declared or inferred; recursion yields `any`.
///
/// An item's type may be the type of an item it calls, which may be the type of the
/// next: a depth-first walk of the call graph, in which an item met again while its
/// type is being worked out is `any`. The walk keeps its own stack, so a chain of
/// tens of thousands of templates, each calling the next, cannot overflow the
/// thread's.
pub(super) fn returns(items: &Tables, sketches: &Sketches) -> HashMap<String, Type> {
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
            let (Some((key, _)), Some(sketch)) = (items.get_key_value(name), sketches.get(name))
            else {
                continue;
            };
            if expanded {
                let ty = sketch.of(&mut Known(&returns));
                visiting.remove(name);
                returns.insert(key.clone(), ty);
                continue;
            }
            if returns.contains_key(name) || !visiting.insert(key) {
                continue;
            }
            work.push((key, true));
            needs.clear();
            sketch.of(&mut Needs(&mut needs));
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

impl Checker<'_, '_> {
    pub(super) fn infer_body(&self, body: &Body) -> Type {
        let mut returns = self.returns;
        Sketch::of_body(body).of(&mut returns)
    }
}

/// What an atomic or script task's `output_format` says its value is.
pub(crate) fn output_type(task: &Task) -> Type {
    match &task.output_format {
        Some(f) if f.kind.node == OutputKind::Json => {
            f.schema.as_ref().map_or(Type::Any, |s| s.node.clone())
        }
        _ => Type::String,
    }
}

/// Where the body's result type is written, to point at it in a mismatch.
pub(super) fn output_schema_span(body: &Body) -> Option<Span> {
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
