//! Bodies and tasks: what each operator requires, what it forbids, and the scope each
//! nested part sees.

use super::scope::Scope;
use super::Checker;
use crate::ast::{
    Body, ContextManagement, FilePaths, FreshContext, InheritContext, Input, InputValue, Task,
    TaskType, TextPart, TextTemplate,
};
use crate::diag::Diagnostic;
use crate::source::Span;
use tv_stdlib::types::Type;

impl Checker<'_, '_> {
    pub(super) fn check_body(&mut self, body: &Body, scope: &Scope, decl: bool) {
        match body {
            Body::Task(t) => self.check_task(t, scope, decl),
            Body::Call(c) => self.check_call_element(c, scope),
            Body::Cond(c) => self.check_cond(c, scope),
            Body::Missing(_) => {}
        }
    }

    /// `decl`: this task is an item's own task, so its `<inputs>` declare what callers pass.
    pub(super) fn check_task(&mut self, task: &Task, outer: &Scope, decl: bool) {
        let is_step = self.step.take() == Some(task.span);
        if !is_step {
            self.check_slots_unused(task);
        }
        let mut scope = outer.clone();
        let listed = task.reduces_inputs();
        self.bind_inputs(&task.inputs, outer, &mut scope, decl && !listed);
        if let Some(r) = &task.reference {
            self.check_ref(r, task, outer, decl && !listed);
        }
        for t in [
            task.description.as_ref(),
            task.instructions.as_ref(),
            task.system.as_ref(),
            task.criteria.as_deref(),
        ]
        .into_iter()
        .flatten()
        {
            self.check_text(t, &scope);
        }
        for t in [&task.description, &task.instructions, &task.system]
            .into_iter()
            .flatten()
        {
            self.warn_null_holes(t, &scope);
        }
        self.check_files(task);
        if let Some(cm) = &task.context {
            self.check_context(cm);
            self.check_unstated_search(task, cm);
        }
        self.check_provider(task);
        self.check_model_settings(task);
        self.check_compile_only(task);
        if task.type_invalid {
            return;
        }
        self.check_fields_fit(task);
        match task.kind.node {
            TaskType::Atomic => self.check_atomic(task),
            TaskType::Sequential => self.check_steps(task, &scope),
            TaskType::Reduce => self.check_reduce(task, &scope),
            TaskType::Script => {
                self.check_script_fields(task);
                self.check_script(task, &scope, true);
            }
            TaskType::DirectorEvaluatorLoop => self.check_loop(task, &scope),
            TaskType::Map => self.check_map(task, &scope),
        }
    }

    pub(super) fn bind_inputs(
        &mut self,
        inputs: &[Input],
        outer: &Scope,
        scope: &mut Scope,
        decl: bool,
    ) {
        // A named or root task's plain inputs are its parameters, bound before any input
        // is computed: a computed or `from` input may read them. (A template's
        // parameters are its `params`, already in `outer`.)
        let with_params;
        let outer = if decl && matches!(outer.owner, super::scope::Owner::Task(_)) {
            with_params = declared_params(inputs, outer);
            &with_params
        } else {
            outer
        };
        for input in inputs {
            let name = &input.name.node;
            if let Some(ty) = &input.ty {
                if !(decl && crate::ast::is_parameter(input)) {
                    self.diags.push(
                        Diagnostic::error(
                            ty.span,
                            format!("input `{name}` is given its value here, so it has no `type` to declare"),
                        )
                        .with_help("`type` declares a parameter's type: on an input of a root task, a named task or a template without `params`"),
                    );
                }
            }
            if let Some(from) = &input.from {
                let ty = self.check_var(&from.node, from.span, outer);
                scope.bind(name, ty);
                continue;
            }
            match &input.value {
                InputValue::Body(b) => {
                    self.check_body(b, outer, false);
                    let ty = self.infer_body(b);
                    scope.bind(name, ty);
                }
                // In a declaration the text documents the input.
                InputValue::Text(_) | InputValue::Empty if decl => {
                    let ty = outer.lookup(name).map_or(Type::Any, |b| b.ty.clone());
                    scope.bind(name, ty)
                }
                InputValue::Text(t) => {
                    self.check_text(t, outer);
                    scope.bind(name, Type::String);
                }
                InputValue::Empty => {
                    // An empty input of a nested task passes on the caller's variable of that name.
                    let ty = match outer.lookup(name) {
                        Some(b) => b.ty.clone(),
                        None => {
                            self.diags.push(
                                Diagnostic::error(
                                    input.name.span,
                                    format!("input `{name}` has no value and no variable `{name}` is in scope"),
                                )
                                .with_help(format!(
                                    "bind it with from=\"variable\", write its value inside <input name=\"{name}\">…</input>, or compute it with a nested task"
                                )),
                            );
                            Type::Any
                        }
                    };
                    scope.bind(name, ty);
                }
            }
        }
    }

    fn check_files(&mut self, task: &Task) {
        if let Some(fp) = &task.file_paths {
            match &fp.node {
                FilePaths::Literal(paths) => paths
                    .iter()
                    .for_each(|p| self.fixed_text(p, "path", "file_paths")),
                FilePaths::Command(t) => self.fixed_text(t, "command", "file_paths"),
                FilePaths::Description(t) => self.fixed_text(t, "description", "file_paths"),
            }
        }
        if let Some(ca) = &task.context_assembly {
            let globs = [
                (&ca.primary, "primary_elements"),
                (&ca.secondary, "secondary_elements"),
                (&ca.excluded, "excluded_elements"),
            ];
            for (t, element) in globs {
                if let Some(t) = t {
                    self.fixed_text(t, element, "context_assembly");
                }
            }
        }
        for rel in &task.context_relevance {
            if !task.inputs.iter().any(|i| i.name.node == rel.name.node) {
                self.diags.push(
                    Diagnostic::error(
                        rel.name.span,
                        format!(
                            "context relevance names `{}`, which is not an input of this task",
                            rel.name.node
                        ),
                    )
                    .with_help("context_relevance refers to the names in this task's <inputs>"),
                );
            }
        }
    }

    /// A `<provider>` that contradicts the provider the model names (a prefix, or one
    /// inferred from the name) is an error: the request would go to the wrong endpoint.
    fn check_provider(&mut self, task: &Task) {
        let (Some(model), Some(provider)) = (&task.model, &task.provider) else {
            return;
        };
        let implied = tv_stdlib::models::parse_model(&model.node)
            .ok()
            .and_then(|m| m.provider);
        let named = tv_stdlib::models::Provider::parse(&provider.node);
        if let (Some(implied), Some(named)) = (implied, named) {
            if implied != named {
                self.diags.push(
                    Diagnostic::error(
                        provider.span,
                        format!(
                            "`<provider>{}` contradicts the model `{}`, which is served by {}",
                            provider.node,
                            model.node,
                            implied.as_str()
                        ),
                    )
                    .with_secondary(model.span, "the model is named here")
                    .with_help(format!(
                        "remove `<provider>`, or name a model of {} (a `provider:model` prefix states it)",
                        provider.node
                    )),
                );
            }
        }
    }

    /// `output_slot` and `input_source` name step results of a sequence; elsewhere they
    /// would be ignored, which the author should hear about.
    fn check_slots_unused(&mut self, task: &Task) {
        for (field, element) in [
            (&task.output_slot, "output_slot"),
            (&task.input_source, "input_source"),
        ] {
            if let Some(f) = field {
                self.diags.push(
                    Diagnostic::warning(
                        f.span,
                        format!("`<{element}>` has no effect here: it names step results of a sequential task"),
                    )
                    .with_help("use it on a step inside `<steps>`, or remove it"),
                );
            }
        }
    }

    /// `manual_xml` and `disable_reparsing` steer the reparsing of an interpreted
    /// template; a compiled one is never reparsed, so they do nothing here.
    fn check_compile_only(&mut self, task: &Task) {
        for (field, element) in [
            (&task.manual_xml, "manual_xml"),
            (&task.disable_reparsing, "disable_reparsing"),
        ] {
            if let Some(f) = field.as_ref().filter(|f| f.node) {
                self.diags.push(
                    Diagnostic::warning(
                        f.span,
                        format!(
                            "`<{element}>` has no effect: a compiled template is never reparsed"
                        ),
                    )
                    .with_help(format!(
                        "remove `<{element}>`; the bundle runs the template as compiled"
                    )),
                );
            }
        }
    }

    /// DESIGN §3: two explicit settings that conflict are an error.
    fn check_context(&mut self, cm: &ContextManagement) {
        let (Some(inherit), Some(fresh)) = (&cm.inherit_context, &cm.fresh_context) else {
            return;
        };
        if fresh.node == FreshContext::Enabled && inherit.node != InheritContext::None {
            let stated = inherit.node.as_str();
            self.diags.push(
                Diagnostic::error(
                    fresh.span,
                    format!("fresh_context=enabled cannot be combined with inherit_context={stated}"),
                )
                .with_label("fresh context is generated here")
                .with_secondary(inherit.span, "while the parent's context is inherited here")
                .with_help("fresh_context=enabled requires inherit_context=none; set one of them the other way, or leave one out to take the compatible default"),
            );
        }
    }

    /// An atomic task that states `inherit_context=none` and nothing about fresh context
    /// gets the operator's default, fresh context on (DESIGN §3: the defaults conflicted
    /// only while the context was inherited): with `--workspace`, its prompt searches the
    /// workspace. A setting that turns on a search no one asked for is pointed out.
    fn check_unstated_search(&mut self, task: &Task, cm: &ContextManagement) {
        let Some(inherit) = &cm.inherit_context else {
            return;
        };
        let atomic = task.kind.node == TaskType::Atomic;
        // A task's own file_paths take precedence: then nothing is searched unless stated.
        if !atomic || inherit.node != InheritContext::None || cm.fresh_context.is_some() {
            return;
        }
        if task.file_paths.is_some() {
            return;
        }
        self.diags.push(
            Diagnostic::warning(
                inherit.span,
                "inherit_context=none turns fresh context on for this task (the atomic default)",
            )
            .with_label("with --workspace DIR, the workspace is searched for files matching this prompt")
            .with_help("state <fresh_context>enabled</fresh_context> if the search is meant, or <fresh_context>disabled</fresh_context> to send no workspace file"),
        );
    }

    /// Fields that only some task types use.
    fn check_fields_fit(&mut self, task: &Task) {
        let kind = task.kind.node;
        let mut misplaced = |span: Option<Span>, field: &str, owner: &str, wanted: &[TaskType]| {
            let Some(span) = span else { return };
            if wanted.contains(&kind) {
                return;
            }
            // `over`, `as` and `concurrency` are attributes; the rest are elements.
            let shown = if matches!(field, "over" | "as" | "concurrency") {
                format!("`{field}`")
            } else {
                format!("`<{field}>`")
            };
            self.diags.push(
                Diagnostic::error(
                    span,
                    format!(
                        "{shown} belongs to {owner}, but this task is {}",
                        kind.as_str()
                    ),
                )
                .with_help(format!(
                    "set type=\"{}\" on the task, or remove {shown}",
                    wanted[0].as_str()
                )),
            );
        };
        use TaskType::*;
        misplaced(
            task.steps.as_ref().map(|s| s.span),
            "steps",
            "a sequential task",
            &[Sequential],
        );
        misplaced(
            task.inner_task.as_deref().map(Body::span),
            "inner_task",
            "a reduce task",
            &[Reduce],
        );
        misplaced(
            task.reduction_task.as_deref().map(Body::span),
            "reduction_task",
            "a reduce task",
            &[Reduce],
        );
        misplaced(
            task.initial_value.as_deref().map(|t| t.span),
            "initial_value",
            "a reduce task",
            &[Reduce],
        );
        misplaced(
            task.director.as_deref().map(Body::span),
            "director",
            "a director_evaluator_loop",
            &[DirectorEvaluatorLoop],
        );
        misplaced(
            task.evaluator.as_deref().map(Body::span),
            "evaluator",
            "a director_evaluator_loop",
            &[DirectorEvaluatorLoop],
        );
        misplaced(
            task.max_iterations.as_ref().map(|m| m.span),
            "max_iterations",
            "a director_evaluator_loop",
            &[DirectorEvaluatorLoop],
        );
        misplaced(
            task.termination.as_deref().map(|t| t.span),
            "termination_condition",
            "a director_evaluator_loop",
            &[DirectorEvaluatorLoop],
        );
        misplaced(
            task.script.as_deref().map(|s| s.span),
            "script_execution",
            "a script task or a director_evaluator_loop",
            &[Script, DirectorEvaluatorLoop],
        );
        misplaced(
            task.on_max_iterations.as_ref().map(|m| m.span),
            "on_max_iterations",
            "a director_evaluator_loop",
            &[DirectorEvaluatorLoop],
        );
        misplaced(
            task.over.as_deref().map(|o| o.span),
            "over",
            "a map or reduce task",
            &[Map, Reduce],
        );
        misplaced(
            task.item_name.as_deref().map(|n| n.span),
            "as",
            "a map task",
            &[Map],
        );
        misplaced(
            task.concurrency.as_ref().map(|c| c.span),
            "concurrency",
            "a map or reduce task",
            &[Map, Reduce],
        );
        misplaced(
            task.subtasks.as_ref().map(|m| m.span),
            "subtasks",
            "an atomic task",
            &[Atomic],
        );
    }

    fn check_atomic(&mut self, task: &Task) {
        if task.reference.is_none() && task.instructions.is_none() && task.description.is_none() {
            self.diags.push(
                Diagnostic::error(
                    task.kind.span,
                    "an atomic task needs a prompt: `<instructions>` or `<description>`",
                )
                .with_help("add <instructions>what the model should do</instructions>"),
            );
        }
        if task.instructions.is_none() && task.description.is_none() {
            return;
        }
        for input in crate::ast::unreferenced_inputs(task) {
            self.diags.push(
                Diagnostic::warning(
                    input.name.span,
                    format!(
                        "input `{}` is not named in any prompt of this task: it is sent after the instructions as a section `{}:`",
                        input.name.node, input.name.node
                    ),
                )
                .with_help(format!(
                    "write {{{{{}}}}} where the model should read it",
                    input.name.node
                )),
            );
        }
    }
}

impl Checker<'_, '_> {
    /// Refuses every `{{...}}` in `text`, the `<element>` of a `<file_paths>`. The
    /// bundle holds file paths as plain strings that the machine uses as they are, so a
    /// hole would reach the file system or the shell as the characters `{{module}}`.
    fn fixed_text(&mut self, text: &TextTemplate, element: &str, parent: &str) {
        for part in &text.parts {
            if let TextPart::Expr(e) = part {
                self.diags.push(
                    Diagnostic::error(
                        e.span,
                        format!("`{{{{...}}}}` cannot be used in a `<{element}>` of `<{parent}>`"),
                    )
                    .with_label("file paths are used as written, never filled in")
                    .with_help(
                        "write the path literally; a file chosen at run time can be read by a script step and passed on as an input",
                    ),
                );
            }
        }
    }
}

/// `outer` with the parameters a declaration's plain inputs declare.
fn declared_params(inputs: &[Input], outer: &Scope) -> Scope {
    let mut scope = outer.clone();
    for input in inputs.iter().filter(|i| crate::ast::is_parameter(i)) {
        let ty = input.ty.as_ref().map_or(Type::Any, |t| t.node.clone());
        scope.bind(&input.name.node, ty);
    }
    scope
}
