//! Lexical scopes: which names an expression may use, and how to explain a name that
//! is not among them.

use tv_stdlib::types::Type;

#[derive(Clone, Debug)]
pub(super) struct Binding {
    pub name: String,
    pub ty: Type,
    /// When the variable may be `null` where it is visible: why (a loop's variables
    /// before they are produced).
    pub null: Option<&'static str>,
}

/// What encloses the expression, for the "how to declare it" part of a message.
#[derive(Clone, Debug)]
pub(super) enum Owner {
    Template(String),
    Task(String),
}

#[derive(Clone, Debug)]
pub(super) struct Scope {
    bindings: Vec<Binding>,
    pub owner: Owner,
    /// True inside a reduce's `inner_task`, where the accumulator is not yet known.
    pub in_inner_task: bool,
    /// Paths (`finding.fix`, `findings.0`) a `cond` has shown not to be null where
    /// this scope is seen: its case tested them, or an earlier case took their null.
    pub present: Vec<String>,
}

/// The operator variables and where each one is defined.
pub(super) const CONTEXT_VARS: &[(&str, &str)] = &[
    (
        "output",
        "a step of a sequential task after the first one (the previous step's value)",
    ),
    ("director_result", "a director_evaluator_loop"),
    ("evaluation_feedback", "a director_evaluator_loop"),
    ("current_iteration", "a director_evaluator_loop"),
    ("evaluation", "a director_evaluator_loop"),
    ("script_output", "a director_evaluator_loop"),
    (
        "current_input",
        "the inner_task and reduction_task of a reduce task",
    ),
    (
        "original_input",
        "the inner_task and reduction_task of a reduce task",
    ),
    ("accumulator", "the reduction_task of a reduce task"),
    (
        "item",
        "the body of a map task (under the name its `as` gives)",
    ),
    ("index", "the body of a map task"),
    ("current_result", "the reduction_task of a reduce task"),
];

impl Scope {
    pub(super) fn new(owner: Owner) -> Self {
        Scope {
            bindings: Vec::new(),
            owner,
            in_inner_task: false,
            present: Vec::new(),
        }
    }

    pub(super) fn bind(&mut self, name: &str, ty: Type) {
        self.bindings.push(Binding {
            name: name.to_string(),
            ty,
            null: None,
        });
    }

    /// Marks the innermost binding of `name`, if there is one, as `null` for `why`
    /// where this scope is seen.
    pub(super) fn may_be_null(&mut self, name: &str, why: &'static str) {
        if let Some(b) = self.bindings.iter_mut().rev().find(|b| b.name == name) {
            b.null = Some(why);
        }
    }

    pub(super) fn bind_context(&mut self, names: &[&str]) {
        for n in names {
            self.bind(n, Type::Any);
        }
    }

    /// The innermost binding of a name.
    pub(super) fn lookup(&self, name: &str) -> Option<&Binding> {
        self.bindings.iter().rev().find(|b| b.name == name)
    }

    pub(super) fn names(&self) -> Vec<&str> {
        self.bindings.iter().map(|b| b.name.as_str()).collect()
    }

    /// The help line for an undeclared variable.
    pub(super) fn declare_help(&self, name: &str) -> String {
        if self.in_inner_task && matches!(name, "accumulator" | "current_result") {
            return format!(
                "`{name}` exists only in the reduction_task: inner tasks run ahead of the reduction and cannot see it"
            );
        }
        if let Some((_, where_)) = CONTEXT_VARS.iter().find(|(n, _)| *n == name) {
            return format!("`{name}` is defined only in {where_}");
        }
        match &self.owner {
            Owner::Template(t) => {
                format!("add `{name}` to the params of template `{t}`, e.g. params=\"...,{name}\"")
            }
            Owner::Task(t) => format!(
                "declare it as an input of task `{t}`: <inputs><input name=\"{name}\">what it is</input></inputs>"
            ),
        }
    }
}
