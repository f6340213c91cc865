//! The checks of the sequential, script and director-evaluator operators: what each
//! step sees, how a script's command quotes its values, and what a loop binds.

use super::scope::Scope;
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
            let source = step_task.and_then(|t| t.input_source.as_deref());
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
            if let Some(slot) = step_task.and_then(|t| t.output_slot.as_deref()) {
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
        let help = match input {
            Some(i) => format!(
                "use \"$TVM_INPUT_{}\" (scripts receive every input in the environment)",
                i.name.node.to_uppercase()
            ),
            None => "pass the value as an `<input>` of `<script_execution>` and use \
                     \"$TVM_INPUT_NAME\" (scripts receive every input in the environment)"
                .to_string(),
        };
        self.diags.push(
            Diagnostic::error(
                hole.span,
                format!(
                    "this `{{{{...}}}}` stands {} in the script command, where the \
                     compiler cannot quote its value safely",
                    refusal.reason
                ),
            )
            .with_label("cannot be quoted here")
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
        // What is still null where each part runs: the director's first turn comes
        // before any result, evaluation or script run; the evaluator's, before any
        // evaluation. An evaluation need not give feedback.
        let (first, feedback) = (
            "on the first iteration, before the evaluator has judged",
            "on the first iteration, and whenever the evaluator gives no feedback",
        );
        let no_script = "in a loop without a script";
        let mut director = s.clone();
        director.may_be_null(
            "director_result",
            "on the first iteration, before the director has replied",
        );
        director.may_be_null("evaluation", first);
        director.may_be_null("evaluation_feedback", feedback);
        director.may_be_null(
            "script_output",
            match task.script {
                Some(_) => "on the first iteration, before the loop's script has run",
                None => no_script,
            },
        );
        let mut evaluator = s.clone();
        evaluator.may_be_null("evaluation", first);
        evaluator.may_be_null("evaluation_feedback", feedback);
        if task.script.is_none() {
            evaluator.may_be_null("script_output", no_script);
        }
        for (slot, name, s) in [
            (&task.director, "director", &director),
            (&task.evaluator, "evaluator", &evaluator),
        ] {
            match slot {
                Some(b) => self.check_body(b, s, false),
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
