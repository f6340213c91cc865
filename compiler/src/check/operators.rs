//! The checks of the sequential, script and director-evaluator operators: what each
//! step sees, how a script's command quotes its values, and what a loop binds.

use super::scope::Scope;
use super::shell::Why;
use super::Checker;
use crate::ast::{Body, ExprKind, Input, Task, TextTemplate};
use crate::diag::Diagnostic;
use tv_stdlib::types::Type;

const LOOP_VARS: &[&str] = &[
    "director_result",
    "evaluation_feedback",
    "current_iteration",
    "evaluation",
    "script_output",
];

impl<'p> Checker<'p, '_, '_> {
    pub(super) fn check_steps(&mut self, task: &'p Task, scope: &Scope) {
        let steps = match &task.steps {
            Some(s) if !s.node.is_empty() => s,
            Some(s) => {
                self.diags
                    .error(s.span, "`<steps>` of a sequential task is empty");
                return;
            }
            None => {
                self.diags.push(
                    Diagnostic::error(task.kind.span, "a sequential task needs `<steps>`")
                        .with_help("add <steps> with one <task>, <call> or <cond> per step"),
                );
                return;
            }
        };
        let mut previous: Option<Type> = None;
        // `output_slot` names and their types, for the later steps.
        let mut slots: Vec<(String, Type)> = Vec::new();
        for step in &steps.node {
            let mut step_scope = scope.clone();
            for (name, ty) in &slots {
                step_scope.bind(name, ty.clone());
            }
            let step_task = match step {
                Body::Task(t) => Some(t.as_ref()),
                _ => None,
            };
            let source = step_task.and_then(|t| t.input_source.as_ref());
            match source {
                Some(src) => {
                    match slots.iter().find(|(n, _)| *n == src.node) {
                        Some((_, ty)) => step_scope.bind("output", ty.clone()),
                        None => {
                            let names: Vec<&str> = slots.iter().map(|(n, _)| n.as_str()).collect();
                            let help = match crate::ast::did_you_mean(&src.node, &names) {
                                Some(c) => format!("did you mean `{c}`?"),
                                None => {
                                    "name the `output_slot` of an earlier step of this sequence"
                                        .into()
                                }
                            };
                            self.diags.push(
                            Diagnostic::error(
                                src.span,
                                format!("input_source `{}` is not the output_slot of an earlier step", src.node),
                            )
                            .with_help(help),
                        );
                        }
                    }
                }
                None => {
                    if let Some(ty) = previous.take() {
                        step_scope.bind("output", ty);
                    }
                }
            }
            self.step = step_task.map(|t| t.span);
            self.check_body(step, &step_scope, false);
            self.step = None;
            let ty = self.infer_body(step);
            if let Some(slot) = step_task.and_then(|t| t.output_slot.as_ref()) {
                slots.retain(|(n, _)| *n != slot.node);
                slots.push((slot.node.clone(), ty.clone()));
            }
            previous = Some(ty);
        }
    }

    pub(super) fn check_script(&mut self, task: &'p Task, scope: &Scope, required: bool) {
        let Some(script) = &task.script else {
            if required {
                self.diags.push(
                    Diagnostic::error(
                        task.kind.span,
                        "a script task needs `<script_execution>` with a `<command>`",
                    )
                    .with_help(
                        "add <script_execution><command>./check.sh</command></script_execution>",
                    ),
                );
            }
            return;
        };
        let mut s = scope.clone();
        self.bind_inputs(&script.inputs, scope, &mut s, false);
        match &script.command {
            Some(c) if c.as_literal().is_some_and(|l| l.trim().is_empty()) => {
                self.diags.error(c.span, "the script command is empty");
            }
            Some(c) => {
                self.check_text(c, &s);
                self.check_command_quoting(c, task, &script.inputs);
            }
            None => self
                .diags
                .error(script.span, "`<script_execution>` needs a `<command>`"),
        }
    }

    /// Every hole of a command must stand where its value can be quoted (DESIGN §18);
    /// elsewhere the value belongs in the environment.
    fn check_command_quoting(&mut self, c: &TextTemplate, task: &Task, inputs: &[Input]) {
        let Err(refusal) = super::shell::template_contexts(c) else {
            return;
        };
        let Some(hole) = c.exprs().nth(refusal.hole) else {
            return;
        };
        let input = match &hole.kind {
            ExprKind::Var(name) => task
                .inputs
                .iter()
                .chain(inputs)
                .find(|i| i.name.node == *name),
            _ => None,
        };
        let (var, pass) = match input {
            Some(i) => (
                format!("\"$TVM_INPUT_{}\"", i.name.node.to_uppercase()),
                String::new(),
            ),
            // A variable the script does not receive: an empty `<input>` passes it on.
            None => match &hole.kind {
                ExprKind::Var(name) => (
                    format!("\"$TVM_INPUT_{}\"", name.to_uppercase()),
                    format!("pass it with <input name=\"{name}\"/> in <script_execution> and "),
                ),
                _ => (
                    "\"$TVM_INPUT_NAME\"".to_string(),
                    "pass the value as an `<input>` of `<script_execution>` and ".to_string(),
                ),
            },
        };
        let (message, label, help) = match refusal.why {
            Why::Quoting => (
                format!(
                    "this `{{{{...}}}}` stands {} in the script command, where the \
                     compiler cannot quote its value safely",
                    refusal.reason
                ),
                "cannot be quoted here",
                format!("{pass}use {var} (scripts receive every input in the environment)"),
            ),
            Why::Code => (
                format!(
                    "this `{{{{...}}}}` stands {}: quoting keeps a value one word, but not \
                     from being run as code",
                    refusal.reason
                ),
                "read as code here",
                format!(
                    "{pass}refer to {var} inside the code, in single quotes so that this \
                     shell leaves it alone and the program that runs the code reads it \
                     from its environment as data (`sh -c 'grep -e \"$TVM_INPUT_X\" f'`)"
                ),
            ),
            Why::Name => (
                format!("this `{{{{...}}}}` stands {}", refusal.reason),
                "chosen by the value here",
                format!(
                    "write the program in the command; to let a value choose among programs, \
                     {pass}list them: `case {var} in lint) ruff check;; fmt) ruff format;; esac`"
                ),
            ),
            Why::Option => (
                format!("this `{{{{...}}}}` stands {}", refusal.reason),
                "chosen by the value here",
                format!(
                    "write the option in the command and pass the value as its argument \
                     (`-n {{{{value}}}}`, `--name={{{{value}}}}`), or {pass}use {var} there"
                ),
            ),
        };
        self.diags.push(
            Diagnostic::error(hole.span, message)
                .with_label(label)
                .with_help(help),
        );
    }

    pub(super) fn check_loop(&mut self, task: &'p Task, scope: &Scope) {
        let mut s = scope.clone();
        s.bind_context(LOOP_VARS);
        // The machine reads every evaluation as an EvaluationResult (DESIGN §13).
        s.bind("evaluation", Type::evaluation_result());
        if let Some(e) = &task.evaluator {
            self.check_evaluator(e);
        }
        for (slot, name) in [(&task.director, "director"), (&task.evaluator, "evaluator")] {
            match slot {
                Some(b) => self.check_body(b, &s, false),
                None => self.diags.push(
                    Diagnostic::error(
                        task.kind.span,
                        format!("a director_evaluator_loop needs `<{name}>`"),
                    )
                    .with_help("the director proposes, the evaluator judges; both are tasks"),
                ),
            }
        }
        self.check_script(task, &s, false);
        if let Some(t) = &task.termination {
            self.check_test(t, &s);
        }
    }
}
