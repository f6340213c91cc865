//! What the source says of an item's parameters: the text of a declaring `<input>`
//! (DESIGN §3: text inside a declaration's input is its documentation).

use crate::ast::{self, InputValue, Item};

/// The `<description>` of an item's task, its whitespace folded.
pub(super) fn summary(item: &Item) -> String {
    let task = match item {
        Item::Task(t) => &t.task,
        Item::Template(t) => match &t.body {
            ast::Body::Task(task) => task,
            _ => return String::new(),
        },
    };
    task.description
        .as_ref()
        .map(|d| fold(&super::template_source(d)))
        .unwrap_or_default()
}

fn fold(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The documented parameters of `item`, by name, in declaration order.
pub(super) fn param_docs(item: &Item) -> Vec<(String, String)> {
    let task = match item {
        Item::Task(t) => &t.task,
        Item::Template(t) => match &t.body {
            ast::Body::Task(task) => task,
            _ => return Vec::new(),
        },
    };
    // A reduce's inputs are the values it folds, and a `ref` task's are its callee's
    // arguments: neither documents a parameter.
    if task.reduces_inputs() || task.reference.is_some() {
        return Vec::new();
    }
    task.inputs
        .iter()
        .filter(|i| ast::is_parameter(i))
        .filter_map(|i| match &i.value {
            InputValue::Text(t) => {
                let doc = fold(&super::template_source(t));
                (!doc.is_empty()).then(|| (i.name.node.clone(), doc))
            }
            _ => None,
        })
        .collect()
}
