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
pub(crate) mod nulls;
mod operators;
mod outline;
mod records;
mod scope;
pub(crate) mod shell;
#[cfg(test)]
mod shell_tests;
mod task;
mod testcases;

pub(crate) use infer::{output_type as infer_output_type, Sketch};
pub(crate) use outline::Outline;

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
pub(crate) type Calls = HashMap<String, Vec<(String, Span)>>;

/// Every item by name, with its signature; made by registration, then read by every
/// body's check, and kept as [`Symbols::items`].
type Tables = HashMap<String, Signature>;

/// What each item's return type is made of, by name: what inference reads.
type Sketches<'o> = HashMap<&'o str, &'o Sketch>;

/// Checks one body at a time against the tables, which every worker borrows.
pub(crate) struct Checker<'t, 'd> {
    diags: &'d mut Diagnostics,
    items: &'t Tables,
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

pub(crate) fn check_program(program: &Program, diags: &mut Diagnostics) -> Symbols {
    let outlines: Vec<Vec<Outline>> = program
        .modules
        .iter()
        .map(|m| m.items.iter().map(Outline::of).collect())
        .collect();
    let mut symbols = Symbols::of_outlines(program, &outlines, diags);
    drop(outlines);
    for module in &program.modules {
        symbols.check_bodies(&module.items, diags);
    }
    symbols.warn_cycles(program, diags);
    symbols
}

/// [`check_program`] in steps, for a program that does not hold its items
/// (`crate::driver::check_paths_outlined`): the tables from the items' outlines, then
/// the bodies as they are built again, a window at a time, then the call graph.
impl Symbols {
    /// The tables every body's check reads, from each module's items' outlines, in
    /// order: every item's signature and return type. The tests' calls are checked
    /// against them; no body is checked yet.
    pub fn of_outlines(
        program: &Program,
        outlines: &[Vec<Outline>],
        diags: &mut Diagnostics,
    ) -> Symbols {
        let std_files: HashSet<_> = program
            .modules
            .iter()
            .filter(|m| m.std)
            .map(|m| m.file)
            .collect();
        let (items, sketches) = register(program, outlines, &std_files, diags);
        testcases::check_tests(program, &items, diags);
        let returns = infer::returns(&items, &sketches);
        Symbols {
            items,
            returns,
            ..Symbols::default()
        }
    }

    /// Checks the bodies of `items`, in chunks on all cores, adding their calls and the
    /// words that name variables: by now the names and return types are known, so a
    /// body's check reads only its own item and those tables.
    pub fn check_bodies(&mut self, items: &[Item], diags: &mut Diagnostics) {
        let (tables, returns) = (&self.items, &self.returns);
        let checked =
            crate::parallel::map_chunks(items, crate::parallel::MIN_ITEMS_PER_WORKER, |chunk| {
                let mut diags = Diagnostics::new();
                let mut worker = Checker {
                    diags: &mut diags,
                    items: tables,
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
        for (found, calls, word_vars) in checked {
            diags.extend(found);
            self.calls.extend(calls);
            self.word_vars.extend(word_vars);
        }
    }

    /// Warns of the cycles of the call graph, once every body is checked.
    pub fn warn_cycles(&self, program: &Program, diags: &mut Diagnostics) {
        graph::warn_cycles(program, &self.calls, diags);
    }
}

/// The table of every item, the standard templates' first, and their sketches; names
/// given twice, or taken from a built-in or a standard template, are reported.
fn register<'o>(
    program: &Program,
    outlines: &'o [Vec<Outline>],
    std_files: &HashSet<crate::source::FileId>,
    diags: &mut Diagnostics,
) -> (Tables, Sketches<'o>) {
    let mut items = Tables::default();
    let mut sketches = Sketches::default();
    let count = outlines.iter().map(Vec::len).sum();
    items.reserve(count);
    sketches.reserve(count);
    // Standard templates first, so a user template of the same name is the clash.
    let modules = program.modules.iter().zip(outlines);
    let std = modules.clone().filter(|(m, _)| m.std);
    for (_, module) in std.chain(modules.filter(|(m, _)| !m.std)) {
        for outline in module {
            let name = &outline.head.name;
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
            if let Some(prev) = items.get(&name.node) {
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
            items.insert(name.node.clone(), outline.signature());
            sketches.insert(&name.node, &outline.sketch);
        }
    }
    (items, sketches)
}

impl Checker<'_, '_> {
    fn check_item(&mut self, item: &Item) {
        let name = &item.name().node;
        // A duplicate was reported at registration; checking it too would repeat errors.
        if self
            .items
            .get(name)
            .is_some_and(|s| s.def_span != item.name().span)
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

    fn check_template(&mut self, t: &Template) {
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
