//! Tasks over lists: a reduce over its listed inputs or `over` a list, and a map
//! (DESIGN §6, §14). `over` must be an array; the body sees the item and its index.

use super::scope::Scope;
use super::Checker;
use crate::ast::{Expr, Task, DEFAULT_ITEM};
use crate::diag::Diagnostic;
use tv_stdlib::types::Type;

impl Checker<'_, '_> {
    pub(super) fn check_reduce(&mut self, task: &Task, scope: &Scope) {
        if let Some(t) = &task.initial_value {
            self.check_text(t, scope);
        }
        let item = match &task.over {
            Some(over) => self.check_over(over, scope),
            None => {
                if task.inputs.is_empty() {
                    self.diags.push(
                        Diagnostic::error(
                            task.kind.span,
                            "a reduce task needs `<inputs>` or `over` to reduce over",
                        )
                        .with_help("each <input> of a reduce task is one value, in order; over=\"list\" reduces the items of an array"),
                    );
                }
                Type::Any
            }
        };
        if let (Some(c), None) = (&task.concurrency, &task.over) {
            self.diags.push(
                Diagnostic::error(c.span, "`concurrency` applies to a reduce `over` a list")
                    .with_help("the inner tasks of listed inputs all run at once; remove `concurrency`, or reduce over=\"list\""),
            );
        }
        let missing = |what: &str| {
            Diagnostic::error(task.kind.span, format!("a reduce task needs `<{what}>`"))
                .with_help("reduce runs inner_task on each input, then reduction_task to fold its result into the accumulator")
        };
        let bind_item = |s: &mut Scope| {
            s.bind("current_input", item.clone());
            s.bind("original_input", item.clone());
        };
        match &task.inner_task {
            Some(b) => {
                let mut s = scope.clone();
                bind_item(&mut s);
                s.in_inner_task = true;
                self.check_body(b, &s, false);
            }
            None => self.diags.push(missing("inner_task")),
        }
        match &task.reduction_task {
            Some(b) => {
                let mut s = scope.clone();
                bind_item(&mut s);
                s.bind_context(&["accumulator", "current_result"]);
                self.check_body(b, &s, false);
            }
            None => self.diags.push(missing("reduction_task")),
        }
    }

    pub(super) fn check_map(&mut self, task: &Task, scope: &Scope) {
        let item = match &task.over {
            Some(over) => self.check_over(over, scope),
            None => {
                self.diags.push(
                    Diagnostic::error(
                        task.kind.span,
                        "a map task needs `over`: the list whose items its body runs on",
                    )
                    .with_help("write over=\"files\" with a variable that holds an array"),
                );
                Type::Any
            }
        };
        let name = task
            .item_name
            .as_ref()
            .map_or(DEFAULT_ITEM, |n| n.node.as_str());
        if let Some(n) = task.item_name.as_deref().filter(|n| n.node == "index") {
            self.diags.push(
                Diagnostic::error(n.span, "the item cannot be named `index`")
                    .with_help("`index` is the item's position in the body; choose another name"),
            );
        }
        if let Some(a) = task
            .context
            .as_ref()
            .and_then(|c| c.accumulate_data.as_ref())
            .filter(|a| a.node)
        {
            self.diags.push(
                Diagnostic::error(a.span, "a map's bodies cannot accumulate each other's results")
                    .with_help("the bodies run at the same time; to fold results in order, use a reduce over=\"list\""),
            );
        }
        match &task.map_body {
            Some(b) => {
                let mut s = scope.clone();
                s.bind(name, item);
                s.bind("index", Type::Number);
                self.check_body(b, &s, false);
            }
            None => self.diags.push(
                Diagnostic::error(
                    task.kind.span,
                    "a map task needs a body: one `<task>`, `<call>` or `<cond>` inside it",
                )
                .with_help(format!(
                    "add the task to run for each item, naming it {{{{{name}}}}}"
                )),
            ),
        }
    }

    /// `over`: the type of its items, or an error when it is not an array. A value
    /// of unknown type is checked when the task runs.
    fn check_over(&mut self, over: &Expr, scope: &Scope) -> Type {
        match self.check_expr(over, scope) {
            Type::Array(item) => *item,
            Type::Any => Type::Any,
            other => {
                self.diags.push(
                    Diagnostic::error(
                        over.span,
                        format!("`over` must be a list (`T[]`), but `{over}` is a `{other}`"),
                    )
                    .with_label("not an array")
                    .with_help("iterate over an array: a parameter typed `T[]`, a JSON reply typed `T[]`, or split(text, \",\")"),
                );
                Type::Any
            }
        }
    }
}
