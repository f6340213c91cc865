//! The checks of the sequential, script and director-evaluator operators: what each
//! step sees, how a script's command quotes its values, and what a loop binds.

use super::scope::Scope;
use super::shell::Why;
use super::Checker;
use crate::ast::{Body, ExprKind, Input, Task, TextPart, TextTemplate};
use crate::diag::Diagnostic;
use crate::source::Span;
use tv_stdlib::types::Type;

/// How scripts receive their inputs in the environment (`runtime/src/script.rs`).
const INPUT_PREFIX: &str = "TVM_INPUT_";

const LOOP_VARS: &[&str] = &[
    "director_result",
    "evaluation_feedback",
    "current_iteration",
    "evaluation",
    "script_output",
];

impl Checker<'_, '_> {
    pub(super) fn check_steps(&mut self, task: &Task, scope: &Scope) {
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

    /// Fields that would do nothing on a script task (DESIGN §19: no element is
    /// accepted and ignored): a script runs its command, so no model, prompt or
    /// context reaches it, and its output is read once.
    pub(super) fn check_script_fields(&mut self, task: &Task) {
        let model = "a script runs its command, and no model is called";
        let context = "a script receives its inputs, never a context or files";
        let assembly = task.context_assembly.as_ref().and_then(|a| {
            [&a.primary, &a.secondary, &a.excluded]
                .into_iter()
                .flatten()
                .map(|t| t.span)
                .next()
        });
        let retries = task.output_format.as_ref().and_then(|f| f.retries.as_ref());
        let fields = [
            (
                task.model_settings()
                    .span
                    .or(task.model.as_ref().map(|m| m.span)),
                "<model>",
                model,
            ),
            (task.provider.as_ref().map(|p| p.span), "<provider>", model),
            (task.system.as_ref().map(|t| t.span), "<system>", model),
            (
                task.instructions.as_ref().map(|t| t.span),
                "<instructions>",
                model,
            ),
            (
                task.file_paths.as_ref().map(|f| f.span),
                "<file_paths>",
                context,
            ),
            (
                task.context.as_ref().map(|c| c.span),
                "<context_management>",
                context,
            ),
            (
                task.context_relevance.first().map(|r| r.name.span),
                "<context_relevance>",
                context,
            ),
            (assembly, "<context_assembly>", context),
            (
                retries.map(|r| r.span),
                "`retries`",
                "a script's output is read once, never asked for again",
            ),
        ];
        for (span, element, why) in fields {
            let Some(span) = span else { continue };
            let help = if why == context {
                format!("remove {element}; pass what the script needs as an `<input>` of `<script_execution>`, or read the files in its command")
            } else if why == model {
                format!("remove {element}; a `<description>` may say what the script is for")
            } else {
                format!("remove {element}")
            };
            self.diags.push(
                Diagnostic::error(
                    span,
                    format!("{element} has no effect on a script task: {why}"),
                )
                .with_help(help),
            );
        }
    }

    pub(super) fn check_script(&mut self, task: &Task, scope: &Scope, required: bool) {
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
                self.check_input_variables(c, task, &script.inputs, scope);
            }
            None => self
                .diags
                .error(script.span, "`<script_execution>` needs a `<command>`"),
        }
    }

    /// A `$TVM_INPUT_NAME` in the command that names no input the script receives is
    /// empty when it runs: a warning, with how to pass the variable on.
    fn check_input_variables(
        &mut self,
        c: &TextTemplate,
        task: &Task,
        inputs: &[Input],
        scope: &Scope,
    ) {
        let mut given: Vec<String> = inputs
            .iter()
            .chain(&task.inputs)
            .map(|i| i.name.node.to_uppercase())
            .collect();
        if scope.lookup("output").is_some() {
            given.push("OUTPUT".into());
        }
        for part in &c.parts {
            let TextPart::Lit(text, span) = part else {
                continue;
            };
            for (at, _) in text.match_indices(INPUT_PREFIX) {
                let rest = &text[at + INPUT_PREFIX.len()..];
                let len = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                let name = &rest[..len];
                let known = |n: &str| given.iter().any(|g| g == n);
                if name.is_empty() || known(name) || name.strip_suffix("_FILE").is_some_and(known) {
                    continue;
                }
                // The variable's own place when the text is the source as written.
                let exact = (span.end - span.start) as usize == text.len();
                let place = if exact {
                    let start = span.start + at as u32;
                    Span {
                        start,
                        end: start + (INPUT_PREFIX.len() + len) as u32,
                        ..*span
                    }
                } else {
                    *span
                };
                let lower = name.to_lowercase();
                let listed = if given.is_empty() {
                    "none".to_string()
                } else {
                    given.join(", ").to_lowercase()
                };
                self.diags.push(
                    Diagnostic::warning(
                        place,
                        format!("`{INPUT_PREFIX}{name}` is not set: this script receives no input `{lower}`"),
                    )
                    .with_help(format!(
                        "add <input name=\"{lower}\"/> to <script_execution> to pass on the variable `{lower}` (the script receives: {listed})"
                    )),
                );
            }
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

    pub(super) fn check_loop(&mut self, task: &Task, scope: &Scope) {
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
