//! Checked syntax tree → typed IR. Runs only on programs the checker accepted, so it
//! may rely on names resolving; where one does not, it falls back to `null` rather
//! than panic.

mod composite;
mod context;
mod docs;
mod expr;
mod lists;
mod plan;
mod prune;
mod shift;
mod task;
mod windows;

use crate::ast::{self, Item};
use crate::check::Symbols;
use crate::ir::{self, Local};
use crate::source::{SourceMap, Span};
use plan::Plan;
pub(crate) use plan::{reachable_std, std_called};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use shift::Shift;
use std::sync::Arc;
use tv_stdlib::types::Type;
use tv_vm::bundle::{Loc, MatchInfo, TaskMeta, CONTEXT_PARAM};
pub(crate) use windows::Windows;

/// The IR of a program that holds its items (a program checked from outlines is
/// lowered a window at a time, by `crate::driver::compile_to_bytes`).
pub(crate) fn lower(program: &ast::Program, symbols: &Symbols, sources: &SourceMap) -> ir::Program {
    assert!(
        program.modules.iter().all(|m| m.heads.is_none()),
        "a program checked from outlines is lowered by compile_to_bytes"
    );
    let plan = Plan::new(program, &reachable_std(program, symbols));
    // Chunks of items are lowered on the workers, each numbering its tasks and branch
    // functions from zero; `assemble` then moves each part's numbers past the ones
    // before it.
    let parts = crate::parallel::map_chunks(
        &plan.items,
        crate::parallel::MIN_ITEMS_PER_WORKER,
        |items| plan.numbers.part(items.iter().copied(), symbols, sources),
    );
    plan.assemble(parts)
}

/// What lowering any item needs to know of the whole program.
pub(crate) struct Numbers {
    /// Function index of every item name.
    ids: HashMap<String, u32>,
    /// Items whose task states `inherit_context` full or subset: they take their
    /// caller's context as a last parameter.
    takes_context: HashSet<String>,
    /// How many item functions there are; branch functions come after them.
    total: u32,
}

impl Numbers {
    /// The functions and tasks of `items`, numbered as if they were alone.
    fn part<'i>(
        &self,
        items: impl Iterator<Item = &'i Item>,
        symbols: &Symbols,
        sources: &SourceMap,
    ) -> Part {
        let mut l = Lowerer {
            symbols,
            sources,
            ids: &self.ids,
            takes_context: &self.takes_context,
            tasks: Vec::new(),
            branches: Vec::new(),
            items: self.total,
            evaluator: None,
        };
        let functions = items.map(|item| l.item(item)).collect();
        Part {
            functions,
            branches: l.branches,
            tasks: l.tasks,
        }
    }
}

/// The functions and tasks of a chunk of items, numbered as if it were alone.
struct Part {
    functions: Vec<ir::Function>,
    branches: Vec<ir::Function>,
    tasks: Vec<Arc<TaskMeta>>,
}

struct Lowerer<'a> {
    symbols: &'a Symbols,
    sources: &'a SourceMap,
    /// Function index of every item name.
    ids: &'a HashMap<String, u32>,
    takes_context: &'a HashSet<String>,
    tasks: Vec<Arc<TaskMeta>>,
    /// Functions made from nested tasks that run as concurrent branches.
    branches: Vec<ir::Function>,
    items: u32,
    /// The evaluator task of the loop being lowered: its reply is an EvaluationResult.
    evaluator: Option<Span>,
}

/// The locals and scopes of the function being lowered.
struct Frame {
    name: String,
    locals: Vec<(String, Type)>,
    scope: Vec<(String, Local)>,
    /// Context passed to atomic tasks: accumulated step results, when enabled.
    context: Option<ir::Expr>,
    /// The span of the item's own atomic body task, which subtask requests may run.
    spawnable: Option<Span>,
    /// What the composite tasks around hand down to atomic ones.
    defaults: context::Defaults,
    tasks_made: u32,
    /// Branch functions made from this one, which number their names.
    branches_made: u32,
}

impl Frame {
    fn local(&mut self, name: &str, ty: Type) -> Local {
        self.locals.push((name.to_string(), ty));
        ir::local(self.locals.len() - 1)
    }

    fn bind(&mut self, name: &str, ty: Type) -> Local {
        let l = self.local(name, ty);
        self.scope.push((name.to_string(), l));
        l
    }

    fn lookup(&self, name: &str) -> Option<Local> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, l)| *l)
    }

    /// Runs `f` with the scope as it is now, then forgets what `f` bound.
    fn scoped<T>(&mut self, f: impl FnOnce(&mut Frame) -> T) -> T {
        let mark = self.scope.len();
        let out = f(self);
        self.scope.truncate(mark);
        out
    }
}

impl Lowerer<'_> {
    fn loc(&self, span: Span) -> Loc {
        let file = self.sources.get(span.file);
        let (line, col) = file.line_col(span.start as usize);
        Loc {
            file: span.file.0,
            line: ir::id(line),
            col: ir::id(col),
        }
    }

    fn item(&mut self, item: &Item) -> ir::Function {
        let name = item.name().node.clone();
        let mut frame = Frame {
            name: name.clone(),
            locals: Vec::new(),
            scope: Vec::new(),
            context: None,
            spawnable: None,
            defaults: context::Defaults::default(),
            tasks_made: 0,
            branches_made: 0,
        };
        frame.spawnable = match item {
            Item::Template(t) => match &t.body {
                ast::Body::Task(task) if matchable(task).is_some() => Some(task.span),
                _ => None,
            },
            Item::Task(t) => matchable(&t.task).map(|_| t.task.span),
        };
        let (params, returns, body, span, matchable) = match item {
            Item::Template(t) => {
                let params: Vec<(String, Type)> = t
                    .params
                    .iter()
                    .map(|p| {
                        (
                            p.name.node.clone(),
                            p.ty.as_ref().map_or(Type::Any, |t| t.node.clone()),
                        )
                    })
                    .collect();
                for (n, ty) in &params {
                    frame.bind(n, ty.clone());
                }
                let params = self.context_param(&name, params, &mut frame);
                let body = self.body(&t.body, &mut frame, true);
                let returns = t.returns.as_ref().map(|r| r.node.clone());
                let m = match &t.body {
                    ast::Body::Task(task) => matchable(task),
                    _ => None,
                };
                (params, returns, body, t.span, m)
            }
            Item::Task(t) => {
                let sig = self.symbols.items.get(&name);
                let params: Vec<(String, Type)> = sig
                    .map(|s| {
                        s.params
                            .iter()
                            .map(|p| (p.name.clone(), p.ty.clone().unwrap_or(Type::Any)))
                            .collect()
                    })
                    .unwrap_or_default();
                for (n, ty) in &params {
                    frame.bind(n, ty.clone());
                }
                let params = self.context_param(&name, params, &mut frame);
                let body = self.task(&t.task, &mut frame, true);
                let m = matchable(&t.task);
                (params, None, body, t.task.span, m)
            }
        };
        // The checker's table holds the declared type where there is one.
        let yields = self
            .symbols
            .returns
            .get(&name)
            .cloned()
            .unwrap_or(Type::Any);
        ir::Function {
            docs: docs::param_docs(item),
            summary: docs::summary(item),
            name,
            params,
            locals: frame.locals,
            returns,
            yields,
            body,
            span,
            matchable,
        }
    }

    fn body(&mut self, body: &ast::Body, frame: &mut Frame, decl: bool) -> ir::Node {
        match body {
            ast::Body::Task(t) => self.task(t, frame, decl),
            ast::Body::Call(c) => self.call_element(c, frame),
            ast::Body::Cond(c) => self.cond(c, frame),
            ast::Body::Missing(span) => ir::Node {
                kind: ir::NodeKind::Complete(ir::Expr::str("", *span)),
                ty: Type::String,
                span: *span,
            },
        }
    }

    /// Makes a nested body its own function, taking every variable in scope (and the
    /// context, when there is one), so it can run as a concurrent branch. Returns the
    /// function and what it takes: each captured local (`None` for the context) with
    /// the expression that passes it.
    fn branch(&mut self, body: &ast::Body, frame: &mut Frame) -> (u32, Vec<Captured>) {
        let mut captured: Vec<(String, Local)> = Vec::new();
        for (name, local) in frame.scope.iter().rev() {
            if !captured.iter().any(|(n, _)| n == name) {
                captured.push((name.clone(), *local));
            }
        }
        captured.reverse();
        let slot = self.branches.len();
        let id = self.items.saturating_add(ir::id(slot));
        frame.branches_made += 1;
        let mut inner = Frame {
            name: format!("{}~{}", frame.name, frame.branches_made),
            locals: Vec::new(),
            scope: Vec::new(),
            context: None,
            spawnable: None,
            defaults: frame.defaults.clone(),
            tasks_made: 0,
            branches_made: 0,
        };
        let mut params: Vec<(String, Type)> = captured
            .iter()
            .map(|(n, l)| {
                (
                    n.clone(),
                    frame
                        .locals
                        .get(*l as usize)
                        .map_or(Type::Any, |(_, t)| t.clone()),
                )
            })
            .collect();
        for (n, t) in &params {
            inner.bind(n, t.clone());
        }
        if frame.context.is_some() {
            let l = inner.local(CONTEXT_PARAM, Type::String);
            params.push((CONTEXT_PARAM.into(), Type::String));
            inner.context = Some(ir::Expr::new(
                ir::ExprKind::Local(l),
                Type::String,
                body.span(),
            ));
        }
        // Reserve the id before lowering: the body may make branches of its own.
        self.branches.push(placeholder(id, body.span()));
        let node = self.body(body, &mut inner, false);
        let mut function = ir::Function {
            name: inner.name,
            params,
            locals: inner.locals,
            returns: None,
            yields: Type::Any,
            body: node,
            span: body.span(),
            matchable: None,
            docs: Vec::new(),
            summary: String::new(),
        };
        let kept = prune::unused_params(&mut function);
        self.branches[slot] = function;
        let captured = kept
            .into_iter()
            .map(|i| match captured.get(i) {
                Some((_, l)) => {
                    let ty = frame
                        .locals
                        .get(*l as usize)
                        .map_or(Type::Any, |(_, t)| t.clone());
                    (
                        Some(*l),
                        ir::Expr::new(ir::ExprKind::Local(*l), ty, body.span()),
                    )
                }
                None => (
                    None,
                    frame
                        .context
                        .clone()
                        .unwrap_or_else(|| ir::Expr::str("", body.span())),
                ),
            })
            .collect();
        (id, captured)
    }

    /// The value type of branch function `id`, once it is lowered.
    fn branch_type(&self, id: u32) -> Type {
        id.checked_sub(self.items)
            .and_then(|slot| self.branches.get(slot as usize))
            .map_or(Type::Any, |f| f.body.ty.clone())
    }

    /// A context-taking item's parameters, with its context parameter last; the item's
    /// tasks then see that parameter as their context.
    fn context_param(
        &self,
        name: &str,
        mut params: Vec<(String, Type)>,
        frame: &mut Frame,
    ) -> Vec<(String, Type)> {
        if self.takes_context.contains(name) {
            let l = frame.local(CONTEXT_PARAM, Type::String);
            params.push((CONTEXT_PARAM.into(), Type::String));
            frame.context = Some(ir::Expr::new(
                ir::ExprKind::Local(l),
                Type::String,
                Span::default(),
            ));
        }
        params
    }

    /// The arguments of a call to item `name`, with the caller's context added when the
    /// item takes it.
    fn with_context(
        &self,
        name: &str,
        mut args: Vec<ir::Expr>,
        frame: &Frame,
        span: Span,
    ) -> Vec<ir::Expr> {
        if self.takes_context.contains(name) {
            args.push(
                frame
                    .context
                    .clone()
                    .unwrap_or_else(|| ir::Expr::str("", span)),
            );
        }
        args
    }

    fn cond(&mut self, c: &ast::Cond, frame: &mut Frame) -> ir::Node {
        let cases: Vec<(ir::Expr, ir::Node)> = c
            .cases
            .iter()
            .map(|case| {
                (
                    self.expr(&case.test, frame),
                    self.body(&case.body, frame, false),
                )
            })
            .collect();
        let ty = cases
            .iter()
            .map(|(_, n)| n.ty.clone())
            .reduce(|a, b| a.join(&b))
            .unwrap_or(Type::Any);
        let otherwise = match c.otherwise.as_ref().map(|o| o.node) {
            Some(ast::Otherwise::Fail) => {
                let compared = crate::check::cond::compared_strings(c).map(|(v, _)| v);
                let path = compared
                    .and_then(crate::check::nulls::path_text)
                    .unwrap_or_default();
                let value = match compared {
                    Some(v) => self.expr(v, frame),
                    None => ir::Expr::new(ir::ExprKind::Null, Type::Null, c.span),
                };
                ir::Otherwise::Fail { path, value }
            }
            _ => ir::Otherwise::Empty,
        };
        ir::Node {
            kind: ir::NodeKind::Cond { cases, otherwise },
            ty,
            span: c.span,
        }
    }
}

/// A captured local of a branch (`None`: the context), and the expression passing it.
type Captured = (Option<Local>, ir::Expr);

/// Atomic templates are what subtask requests can select, by their description and
/// criteria.
fn matchable(t: &ast::Task) -> Option<MatchInfo> {
    if t.kind.node != ast::TaskType::Atomic {
        return None;
    }
    let description = t
        .description
        .as_ref()
        .or(t.instructions.as_ref())
        .map(template_source)
        .unwrap_or_default();
    // Matching scores a template on its description plus its criteria (DESIGN §19).
    let description = match t.criteria.as_deref().map(template_source) {
        Some(c) => format!("{description}\n{c}"),
        None => description,
    };
    Some(MatchInfo {
        task_type: tv_vm::bundle::TaskType::Atomic,
        subtype: t.subtype.as_deref().map(|s| s.node.clone()),
        description,
    })
}

/// A text template's literal parts, holes written back as `{{...}}`.
fn template_source(t: &ast::TextTemplate) -> String {
    t.parts
        .iter()
        .map(|p| match p {
            ast::TextPart::Lit(s, _) => s.clone(),
            ast::TextPart::Expr(e) => format!("{{{{{e}}}}}"),
        })
        .collect()
}

fn placeholder(id: u32, span: Span) -> ir::Function {
    ir::Function {
        name: format!("branch{id}"),
        params: Vec::new(),
        locals: Vec::new(),
        returns: None,
        yields: Type::Any,
        body: ir::Node {
            kind: ir::NodeKind::Complete(ir::Expr::str("", span)),
            ty: Type::String,
            span,
        },
        span,
        matchable: None,
        docs: Vec::new(),
        summary: String::new(),
    }
}
