//! Stage 4: names, scopes, calls, types and structure of a whole program.
//!
//! The checker reads the syntax tree of every file at once (template names are global)
//! and reports every problem it finds; it never stops at the first one.

mod call;
pub(crate) mod cond;
mod expr;
mod graph;
mod infer;
mod lists;
mod model;
mod nulls;
mod operators;
mod records;
mod scope;
pub mod shell;
#[cfg(test)]
mod shell_tests;
mod task;
mod testcases;

pub use infer::output_type as infer_output_type;

use crate::ast::{Item, Program, Template};
use crate::diag::{Diagnostic, Diagnostics};
use crate::source::Span;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use scope::{Owner, Scope};
use tv_stdlib::builtins;
use tv_stdlib::types::Type;

/// A callable item's interface as callers see it.
#[derive(Clone, Debug)]
pub struct Signature {
    pub name: String,
    pub params: Vec<SigParam>,
    pub def_span: Span,
    pub kind: ItemKind,
}

#[derive(Clone, Debug)]
pub struct SigParam {
    pub name: String,
    pub ty: Option<Type>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    Template,
    Task,
}

impl ItemKind {
    pub fn noun(self) -> &'static str {
        match self {
            ItemKind::Template => "template",
            ItemKind::Task => "task",
        }
    }
}

/// What the checker learned, for the later stages.
#[derive(Debug, Default)]
pub struct Symbols {
    pub items: HashMap<String, Signature>,
    pub returns: HashMap<String, Type>,
    /// Bare `<arg>` words that name a variable in scope (by the word's span); every
    /// other bare word is a string literal.
    pub word_vars: HashSet<Span>,
    /// Which items each item calls (templates, tasks; not built-ins), and where.
    pub calls: Calls,
}

/// Which items each item calls, and where: the call graph.
pub type Calls = HashMap<String, Vec<(String, Span)>>;

/// Every item by name, with its signature; made by registration, then read by every
/// body's check.
type Tables<'p> = HashMap<String, (Signature, &'p Item)>;

/// Checks one body at a time against the tables, which every worker borrows.
pub struct Checker<'p, 't, 'd> {
    diags: &'d mut Diagnostics,
    items: &'t Tables<'p>,
    returns: &'t HashMap<String, Type>,
    /// Calls made by each item: the call graph, for the cycle warning.
    calls: Calls,
    /// The calls of the item being checked, in the order they are met.
    item_calls: Vec<(String, Span)>,
    word_vars: HashSet<Span>,
    /// The task being checked as a step of a sequence, where `output_slot` and
    /// `input_source` mean something.
    step: Option<Span>,
}

pub fn check_program(program: &Program, diags: &mut Diagnostics) -> Symbols {
    let std_files: HashSet<_> = program
        .modules
        .iter()
        .filter(|m| m.std)
        .map(|m| m.file)
        .collect();
    let items = register(program, &std_files, diags);
    testcases::check_tests(program, &items, diags);
    let returns = infer::returns(&items);
    let (calls, word_vars) = check_bodies(program, &items, &returns, diags);
    // Cycles are looked for while the signature table is made.
    let big = items.len() >= 2 * crate::parallel::MIN_ITEMS_PER_WORKER;
    let (_, items) = crate::parallel::join(
        big,
        || graph::warn_cycles(program, &calls, diags),
        || items.into_iter().map(|(k, (s, _))| (k, s)).collect(),
    );
    Symbols {
        items,
        returns,
        word_vars,
        calls,
    }
}

/// Every item's body, checked in chunks on all cores: by now the names and return
/// types are known, so a body's check reads only its own item and those tables. The
/// call graph and the words that name variables.
fn check_bodies(
    program: &Program,
    items: &Tables,
    returns: &HashMap<String, Type>,
    diags: &mut Diagnostics,
) -> (Calls, HashSet<Span>) {
    let all: Vec<&Item> = program.modules.iter().flat_map(|m| &m.items).collect();
    let checked =
        crate::parallel::map_chunks(&all, crate::parallel::MIN_ITEMS_PER_WORKER, |chunk| {
            let mut diags = Diagnostics::new();
            let mut worker = Checker {
                diags: &mut diags,
                items,
                returns,
                calls: HashMap::default(),
                item_calls: Vec::new(),
                word_vars: HashSet::default(),
                step: None,
            };
            for item in chunk {
                worker.check_item(item);
            }
            let (calls, word_vars) = (worker.calls, worker.word_vars);
            (diags, calls, word_vars)
        });
    let (mut calls, mut word_vars) = (HashMap::default(), HashSet::default());
    for (found, c, w) in checked {
        diags.extend(found);
        calls.extend(c);
        word_vars.extend(w);
    }
    (calls, word_vars)
}

/// The table of every item, the standard templates' first; names given twice, or
/// taken from a built-in or a standard template, are reported.
fn register<'p>(
    program: &'p Program,
    std_files: &HashSet<crate::source::FileId>,
    diags: &mut Diagnostics,
) -> Tables<'p> {
    let mut items = Tables::default();
    items.reserve(program.modules.iter().map(|m| m.items.len()).sum());
    // Standard templates first, so a user template of the same name is the clash.
    let modules = program.modules.iter().filter(|m| m.std);
    let modules = modules.chain(program.modules.iter().filter(|m| !m.std));
    for module in modules {
        for item in &module.items {
            let name = item.name();
            if name.node.is_empty() {
                continue;
            }
            if builtins::lookup(&name.node).is_some() {
                diags.push(
                    Diagnostic::error(
                        name.span,
                        format!("`{}` is the name of a built-in function", name.node),
                    )
                    .with_help("choose another name: user templates do not shadow built-ins"),
                );
                continue;
            }
            if let Some((prev, _)) = items.get(&name.node) {
                if std_files.contains(&prev.def_span.file) {
                    diags.push(
                            Diagnostic::error(name.span, format!("`{}` is the name of a standard template", name.node))
                                .with_help("choose another name: user templates do not shadow the standard library"),
                        );
                    continue;
                }
                diags.push(
                    Diagnostic::error(name.span, format!("`{}` is defined twice", name.node))
                        .with_secondary(prev.def_span, "first defined here")
                        .with_help(
                            "template and task names are unique across all files of a program",
                        ),
                );
                continue;
            }
            let sig = signature(item);
            items.insert(name.node.clone(), (sig, item));
        }
    }
    items
}

impl<'p> Checker<'p, '_, '_> {
    fn check_item(&mut self, item: &'p Item) {
        let name = &item.name().node;
        // A duplicate was reported at registration; checking it too would repeat errors.
        if self
            .items
            .get(name)
            .is_some_and(|(s, _)| s.def_span != item.name().span)
        {
            return;
        }
        match item {
            Item::Template(t) => self.check_template(t),
            Item::Task(t) => {
                let scope = Scope::new(Owner::Task(t.name.node.clone()));
                self.check_task(&t.task, &scope, true);
            }
        }
        let calls = std::mem::take(&mut self.item_calls);
        if !calls.is_empty() {
            self.calls.insert(name.clone(), calls);
        }
    }

    fn check_template(&mut self, t: &'p Template) {
        let mut scope = Scope::new(Owner::Template(t.name.node.clone()));
        for p in &t.params {
            let ty = p.ty.as_ref().map_or(Type::Any, |t| t.node.clone());
            scope.bind(&p.name.node, ty);
        }
        self.check_body(&t.body, &scope, true);
        let Some(ret) = &t.returns else { return };
        let produced = self.infer_body(&t.body);
        if !produced.fits(&ret.node) {
            let mut d = Diagnostic::error(
                ret.span,
                format!(
                    "template `{}` declares `returns=\"{}\"` but its body produces `{produced}`",
                    t.name.node, ret.node
                ),
            );
            if produced == Type::String {
                d = d.with_help(format!(
                    "the body's output is text; add <output_format type=\"json\" schema=\"{}\"/> to its task",
                    ret.node
                ));
            }
            // A declared record is shown by name; say what it holds.
            if let Type::Record(r) = &ret.node {
                if r.name.is_some() {
                    d = d.with_help(format!(
                        "`{}` is {}",
                        ret.node,
                        tv_stdlib::types::Expanded(r)
                    ));
                }
            }
            if let Some(span) = infer::output_schema_span(&t.body) {
                d = d.with_secondary(span, "the body's output is declared here");
            }
            self.diags.push(d);
        }
    }
}

fn signature(item: &Item) -> Signature {
    match item {
        Item::Template(t) => Signature {
            name: t.name.node.clone(),
            params: t
                .params
                .iter()
                .map(|p| SigParam {
                    name: p.name.node.clone(),
                    ty: p.ty.as_ref().map(|t| t.node.clone()),
                    span: p.name.span,
                })
                .collect(),
            def_span: t.name.span,
            kind: ItemKind::Template,
        },
        Item::Task(t) => Signature {
            name: t.name.node.clone(),
            params: t
                .task
                .inputs
                .iter()
                // A reduce's listed inputs are the values it reduces, not parameters.
                .filter(|i| crate::ast::is_parameter(i) && !t.task.reduces_inputs())
                .map(|i| SigParam {
                    name: i.name.node.clone(),
                    ty: i.ty.as_ref().map(|t| t.node.clone()),
                    span: i.name.span,
                })
                .collect(),
            def_span: t.name.span,
            kind: ItemKind::Task,
        },
    }
}
