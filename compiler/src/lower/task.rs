//! Tasks: inputs become `Let`s, each operator its own IR node.

use super::{context, template_source, Frame, Lowerer};
use crate::ast::{self, FilePaths, InputValue, OutputKind, Task, TaskType};
use crate::check::infer_output_type;
use crate::ir::{self, Expr, ExprKind, Node, NodeKind};
use std::sync::Arc;
use tv_stdlib::types::Type;
use tv_vm::bundle::{self, Inherit, Output, TaskMeta};

/// How many times a reply that fails its output format is asked again (DESIGN §13).
const DEFAULT_RETRIES: u32 = 1;

use ir::Branches as Gathered;

fn model_settings(m: &ast::ModelSettings) -> bundle::ModelSettings {
    bundle::ModelSettings {
        temperature: m.temperature.as_ref().map(|t| t.node),
        max_tokens: m.max_tokens.as_ref().map(|t| t.node),
        top_p: m.top_p.as_ref().map(|t| t.node),
        seed: m.seed.as_ref().map(|t| t.node),
        stop: m.stop.as_ref().map(|t| t.node.clone()),
    }
}

impl Lowerer<'_> {
    pub(super) fn task(&mut self, task: &Task, frame: &mut Frame, decl: bool) -> Node {
        frame.scoped(|frame| {
            let (gather, lets) = self.inputs(task, frame, decl);
            // A task that inherits nothing sees no context from around it.
            let inherited = frame.context.clone();
            if context::merge(task.kind.node, task.context.as_deref()).inherit == Inherit::None {
                frame.context = None;
            }
            let defaults = is_composite(task).then(|| {
                let under = frame.defaults.under(task);
                std::mem::replace(&mut frame.defaults, under)
            });
            let node = self.operator(task, frame);
            if let Some(d) = defaults {
                frame.defaults = d;
            }
            frame.context = inherited;
            let node = self.finished(task, node, frame);
            let node = if lets.is_empty() {
                node
            } else {
                Node {
                    ty: node.ty.clone(),
                    span: node.span,
                    kind: NodeKind::Let {
                        bindings: lets,
                        body: Box::new(node),
                    },
                }
            };
            match gather {
                Some((calls, results)) => Node {
                    ty: node.ty.clone(),
                    span: node.span,
                    kind: NodeKind::Gather {
                        calls,
                        results,
                        body: Box::new(node),
                    },
                },
                None => node,
            }
        })
    }

    /// A composite task with `criteria` or an `output_format` ends with them applied to
    /// its result (DESIGN §19).
    fn finished(&mut self, task: &Task, node: Node, frame: &mut Frame) -> Node {
        if !is_composite(task) || (task.criteria.is_none() && task.output_format.is_none()) {
            return node;
        }
        let meta = self.meta(task, frame);
        let ty = match &task.output_format {
            Some(f) if f.kind.node == OutputKind::Json => {
                f.schema.as_ref().map_or(Type::Any, |s| s.node.clone())
            }
            _ => node.ty.clone(),
        };
        Node {
            ty,
            span: node.span,
            kind: NodeKind::Finish {
                task: meta,
                body: Box::new(node),
            },
        }
    }

    /// Binds a task's inputs. In a declaration they are the function's parameters,
    /// already bound, except those bound `from` another variable. Two or more computed
    /// inputs are independent of each other, so they run as concurrent branches,
    /// gathered before the task runs.
    fn inputs(
        &mut self,
        task: &Task,
        frame: &mut Frame,
        decl: bool,
    ) -> (Option<Gathered>, Vec<(ir::Local, Expr)>) {
        let decl = decl && !task.reduces_inputs();
        let bound: Vec<&ast::Input> = task
            .inputs
            .iter()
            .filter(|i| !decl || !ast::is_parameter(i))
            .collect();
        let computed: Vec<&ast::Body> = bound
            .iter()
            .filter(|i| i.from.is_none())
            .filter_map(|i| match &i.value {
                InputValue::Body(b) => Some(b),
                _ => None,
            })
            .collect();
        let mut gather = None;
        if computed.len() >= 2 && !task.reduces_inputs() {
            let calls: Vec<(u32, Vec<Expr>)> = computed
                .iter()
                .map(|b| {
                    let (id, captured) = self.branch(b, frame);
                    (id, captured.into_iter().map(|(_, e)| e).collect())
                })
                .collect();
            let results = frame.local("(computed inputs)", Type::Array(Box::new(Type::Any)));
            gather = Some((calls, results));
        }
        let mut lets = Vec::new();
        let mut k = 0;
        for input in bound {
            let value = match (&gather, &input.value, &input.from) {
                (Some((_, results)), InputValue::Body(b), None) => {
                    k += 1;
                    Expr::new(
                        ExprKind::Gathered(*results, k - 1),
                        self.body_type(b),
                        input.span,
                    )
                }
                _ => self.input_value(input, frame),
            };
            let local = frame.bind(&input.name.node, value.ty.clone());
            lets.push((local, value));
        }
        (gather, lets)
    }

    /// The value type of a body, without lowering it again.
    fn body_type(&self, b: &ast::Body) -> Type {
        match b {
            ast::Body::Task(t) if t.kind.node == TaskType::Atomic && t.reference.is_none() => {
                infer_output_type(t)
            }
            ast::Body::Call(c) => self
                .symbols
                .returns
                .get(&c.template.node)
                .cloned()
                .unwrap_or(Type::Any),
            _ => Type::Any,
        }
    }

    pub(super) fn input_value(&mut self, input: &ast::Input, frame: &mut Frame) -> Expr {
        if let Some(from) = &input.from {
            return self.var(&from.node, from.span, frame);
        }
        match &input.value {
            InputValue::Body(b) => {
                let node = self.body(b, frame, false);
                let ty = node.ty.clone();
                Expr::new(ExprKind::Task(Box::new(node)), ty, input.span)
            }
            InputValue::Text(t) => self.text(t, frame),
            InputValue::Empty => self.var(&input.name.node, input.name.span, frame),
        }
    }

    fn operator(&mut self, task: &Task, frame: &mut Frame) -> Node {
        if let Some(r) = &task.reference {
            return self.reference(r, task, frame);
        }
        match task.kind.node {
            TaskType::Atomic => self.atomic(task, frame),
            TaskType::Sequential => self.sequence(task, frame),
            TaskType::Reduce => self.reduce(task, frame),
            TaskType::Map => self.map(task, frame),
            TaskType::Script => self.script(task, frame),
            TaskType::DirectorEvaluatorLoop => self.director_loop(task, frame),
        }
    }

    fn atomic(&mut self, task: &Task, frame: &mut Frame) -> Node {
        let meta = self.meta(task, frame);
        let prompt = task.instructions.as_ref().or(task.description.as_ref());
        let inherited = frame.defaults.system.clone();
        let system = match task.system.as_ref().or(inherited.as_ref()) {
            Some(t) => self.text(t, frame),
            None => Expr::str("", task.span),
        };
        let mut prompt = prompt.map_or(Expr::str("", task.span), |t| self.text(t, frame));
        let unnamed = ast::unreferenced_inputs(task);
        if !unnamed.is_empty() {
            prompt = self.with_sections(prompt, &unnamed, frame);
        }
        let context = frame
            .context
            .clone()
            .unwrap_or_else(|| Expr::str("", task.span));
        let query = self.relevance_query(task, frame);
        Node {
            kind: NodeKind::Atomic {
                task: meta,
                system,
                prompt,
                context,
                query,
            },
            ty: infer_output_type(task),
            span: task.span,
        }
    }

    /// With `context_relevance`, the fresh-context query is the values of the task's
    /// inputs that it does not leave out (`include="false"`), one per line.
    fn relevance_query(&mut self, task: &Task, frame: &mut Frame) -> Option<Expr> {
        if task.context_relevance.is_empty() {
            return None;
        }
        let left_out = |name: &str| {
            task.context_relevance
                .iter()
                .any(|r| r.name.node == name && !r.include.node)
        };
        let mut parts = Vec::new();
        for input in task.inputs.iter().filter(|i| !left_out(&i.name.node)) {
            if !parts.is_empty() {
                parts.push((Expr::str("\n", input.span), None));
            }
            parts.push((self.var(&input.name.node, input.span, frame), None));
        }
        Some(Expr::new(ExprKind::Concat(parts), Type::String, task.span))
    }

    /// The prompt followed by a `name:` section for each input it does not name.
    fn with_sections(&mut self, prompt: Expr, inputs: &[&ast::Input], frame: &mut Frame) -> Expr {
        let span = prompt.span;
        let mut parts = vec![(prompt, None)];
        for input in inputs {
            let label = format!("\n\n{}:\n", input.name.node);
            parts.push((Expr::str(label, input.span), None));
            parts.push((self.var(&input.name.node, input.span, frame), None));
        }
        Expr::new(ExprKind::Concat(parts), Type::String, span)
    }

    pub(super) fn script_node(&mut self, task: &Task, frame: &mut Frame) -> Option<Node> {
        let script = task.script.as_deref()?;
        let meta = self.meta(task, frame);
        let is_script = task.kind.node == TaskType::Script;
        if !is_script {
            // A loop's script: the loop's output format is the loop's, not the script's.
            if let Some(m) = self.tasks.get_mut(meta as usize) {
                std::sync::Arc::make_mut(m).output = bundle::Output::Text;
            }
        }
        let mut inputs: Vec<(String, Expr)> = script
            .inputs
            .iter()
            .map(|i| (i.name.node.clone(), self.input_value(i, frame)))
            .collect();
        // The task's own inputs reach the script too, unless `<script_execution>`
        // repeats them (DESIGN §12).
        for i in &task.inputs {
            if !inputs.iter().any(|(n, _)| *n == i.name.node) {
                let value = self.var(&i.name.node, i.name.span, frame);
                inputs.push((i.name.node.clone(), value));
            }
        }
        // A step after another (or inside one) receives the previous step's value,
        // as `TVM_INPUT_OUTPUT` and on stdin, unless an input of its own is so named.
        if let Some(output) = frame.lookup("output") {
            if !inputs.iter().any(|(n, _)| n == "output") {
                let ty = frame
                    .locals
                    .get(output as usize)
                    .map_or(Type::Any, |(_, t)| t.clone());
                inputs.push((
                    "output".into(),
                    Expr::new(ExprKind::Local(output), ty, script.span),
                ));
            }
        }
        let command = match &script.command {
            Some(c) => self.command(c, frame),
            None => super::expr::Command {
                text: Expr::str("", script.span),
                options: Vec::new(),
                lets: Vec::new(),
            },
        };
        let node = Node {
            kind: NodeKind::Script {
                task: meta,
                command: command.text,
                inputs,
                options: command.options,
            },
            ty: if is_script {
                infer_output_type(task)
            } else {
                Type::String
            },
            span: script.span,
        };
        if command.lets.is_empty() {
            return Some(node);
        }
        Some(Node {
            ty: node.ty.clone(),
            span: node.span,
            kind: NodeKind::Let {
                bindings: command.lets,
                body: Box::new(node),
            },
        })
    }

    fn script(&mut self, task: &Task, frame: &mut Frame) -> Node {
        self.script_node(task, frame).unwrap_or(Node {
            kind: NodeKind::Complete(Expr::str("", task.span)),
            ty: Type::String,
            span: task.span,
        })
    }

    /// `<task ref="name">`: a call whose arguments are this task's inputs, by name.
    fn reference(&mut self, r: &ast::Ident, task: &Task, frame: &mut Frame) -> Node {
        let params: Vec<String> = self
            .symbols
            .items
            .get(&r.node)
            .map(|s| s.params.iter().map(|p| p.name.clone()).collect())
            .unwrap_or_default();
        let args = params
            .iter()
            .map(|p| {
                match frame
                    .lookup(p)
                    .filter(|_| task.inputs.iter().any(|i| &i.name.node == p))
                {
                    Some(l) => Expr::new(ExprKind::Local(l), Type::Any, r.span),
                    None => Expr::new(ExprKind::Null, Type::Null, r.span),
                }
            })
            .collect();
        let function = self.ids.get(&r.node).copied().unwrap_or(0);
        let args = self.with_context(&r.node, args, frame, r.span);
        Node {
            kind: NodeKind::Call { function, args },
            ty: self
                .symbols
                .returns
                .get(&r.node)
                .cloned()
                .unwrap_or(Type::Any),
            span: task.span,
        }
    }

    /// Registers the host-call metadata of a task.
    fn meta(&mut self, task: &Task, frame: &mut Frame) -> u32 {
        frame.tasks_made += 1;
        // An evaluator that states no type replies with an EvaluationResult: the
        // machine asks for one (and re-asks), and providers are sent its schema.
        let evaluator = self.evaluator == Some(task.span)
            && task.kind.node == TaskType::Atomic
            && task.reference.is_none();
        let output = match &task.output_format {
            Some(f) if f.kind.node == OutputKind::Json => match &f.schema {
                Some(s) => Output::Json(Some((&s.node).into())),
                None if evaluator => Output::Json(Some((&Type::evaluation_result()).into())),
                None => Output::Json(None),
            },
            None if evaluator => Output::Json(Some((&Type::evaluation_result()).into())),
            _ => Output::Text,
        };
        let retries = task
            .output_format
            .as_ref()
            .and_then(|f| f.retries.as_ref())
            .map_or(DEFAULT_RETRIES, |r| r.node);
        let file_paths = lowered_paths(task.file_paths.as_deref().map(|f| &f.node));
        let (model, provider) = frame.defaults.model_and_provider(task);
        let atomic = task.kind.node == TaskType::Atomic;
        let file_paths = match (&file_paths, &frame.defaults.file_paths) {
            (bundle::FilePaths::None, Some(inherited)) if atomic => {
                lowered_paths(Some(&inherited.node))
            }
            _ => file_paths,
        };
        let context = if atomic {
            let has_files = file_paths != bundle::FilePaths::None;
            frame.defaults.atomic_context(task, has_files)
        } else {
            context::merge(task.kind.node, task.context.as_deref())
        };
        let settings = if atomic {
            model_settings(task.model_settings()).or(&model_settings(&frame.defaults.settings))
        } else {
            model_settings(task.model_settings())
        };
        self.tasks.push(Arc::new(TaskMeta {
            name: format!("{}#{}", frame.name, frame.tasks_made),
            model,
            provider,
            output,
            retries,
            context,
            file_paths,
            criteria: task.criteria.as_deref().map(template_source),
            timeout: task
                .script
                .as_ref()
                .and_then(|s| s.timeout.as_ref())
                .map(|t| t.node),
            loc: self.loc(task.span),
            settings,
            subtasks: task.subtasks.as_ref().is_some_and(|s| s.node),
            spawned: (frame.spawnable == Some(task.span))
                .then(|| context::spawned(task.context.as_deref())),
            assembly: assembly(task.context_assembly.as_deref()),
        }));
        ir::id(self.tasks.len() - 1)
    }
}

/// Sequential, reduce, map and loop tasks: what hands defaults down and may be
/// finished.
fn is_composite(task: &Task) -> bool {
    task.reference.is_none()
        && matches!(
            task.kind.node,
            TaskType::Sequential
                | TaskType::Reduce
                | TaskType::Map
                | TaskType::DirectorEvaluatorLoop
        )
}

/// A local for the results a composite task accumulates, and its context from now on:
/// the context from around it, then those results.
pub(super) fn accumulating(
    frame: &mut Frame,
    name: &str,
    full_output: bool,
    outer: Option<Expr>,
    span: crate::source::Span,
) -> ir::Local {
    let h = frame.local(name, Type::Array(Box::new(Type::Any)));
    let accumulated = Expr::new(ExprKind::Accumulated(h, full_output), Type::String, span);
    frame.context = Some(joined(outer, accumulated));
    h
}

/// The context from around a composite task, then its accumulated results.
pub(super) fn joined(outer: Option<Expr>, accumulated: Expr) -> Expr {
    match outer {
        None => accumulated,
        Some(outer) => {
            let span = accumulated.span;
            let parts = vec![
                (outer, None),
                (Expr::str("\n", span), None),
                (accumulated, None),
            ];
            Expr::new(ExprKind::Concat(parts), Type::String, span)
        }
    }
}

fn lowered_paths(paths: Option<&FilePaths>) -> bundle::FilePaths {
    match paths {
        None => bundle::FilePaths::None,
        Some(FilePaths::Literal(ps)) => {
            bundle::FilePaths::Literal(ps.iter().map(template_source).collect())
        }
        Some(FilePaths::Command(c)) => bundle::FilePaths::Command(template_source(c)),
        Some(FilePaths::Description(d)) => bundle::FilePaths::Description(template_source(d)),
    }
}

/// `context_assembly`'s comma-separated globs, split and trimmed.
fn assembly(a: Option<&ast::ContextAssembly>) -> bundle::Assembly {
    let globs = |t: &Option<ast::TextTemplate>| -> Vec<String> {
        t.as_ref()
            .map(|t| {
                template_source(t)
                    .split(',')
                    .map(str::trim)
                    .filter(|g| !g.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    a.map_or_else(bundle::Assembly::default, |a| bundle::Assembly {
        primary: globs(&a.primary),
        secondary: globs(&a.secondary),
        excluded: globs(&a.excluded),
    })
}
