//! Written types: `<type name="Review">` declarations and every type a template writes
//! (`params`, `returns`, `schema`, `<input type>`).
//!
//! A file is built on its own (often on a worker of its own), but a type may name a
//! declaration of any file, written before or after it. So building checks a type's
//! syntax and sets aside every type that names a declared type; once every file is
//! built, [`resolve`] resolves the declarations in dependency order (a cycle is an
//! error naming the chain) and then the types set aside, and writes them into the tree.

use super::build::Builder;
use super::schema::{self, did_you_mean_preferring};
use super::{Body, Ident, Item, Program, Task};
use crate::diag::{Diagnostic, Diagnostics};
use crate::source::{Span, Spanned};
use crate::xml::{Element, Text};
use rustc_hash::FxHashMap as HashMap;
use std::borrow::Cow;
use std::cell::RefCell;
use std::ops::Range;
use std::sync::Arc;
use tv_stdlib::types::{is_scalar_name, parse_with, Type, TypeError, SCALAR_NAMES, TYPE_NAMES};

/// The predeclared record every evaluator's reply is read as (DESIGN §13).
pub const EVALUATION_RESULT: &str = "EvaluationResult";

/// `<type name="Review">{approved: boolean}</type>`, as written.
#[derive(Clone, Debug)]
pub struct TypeDecl {
    pub name: Ident,
    pub text: WrittenText,
    /// The names it uses that are not scalars, in order: what it depends on.
    pub uses: Vec<String>,
    /// False when its syntax is wrong (reported): it resolves to `any`, quietly.
    pub valid: bool,
}

/// A type's text kept past its XML tree: the decoded attribute or element text, the
/// way back to source offsets, and the bytes of it that are the type.
#[derive(Clone, Debug)]
pub struct WrittenText {
    pub text: Text<'static>,
    pub range: Range<usize>,
}

impl WrittenText {
    fn new(text: &Text, range: Range<usize>) -> WrittenText {
        let text = Text {
            value: Cow::Owned(text.value.to_string()),
            map: text.map.clone(),
            span: text.span,
        };
        WrittenText { text, range }
    }

    fn as_str(&self) -> &str {
        &self.text.value[self.range.clone()]
    }

    fn span(&self) -> Span {
        self.text.span_of(self.range.clone())
    }
}

/// A type that names declared types, set aside until every file is built; the tree
/// holds `any` at `span` until then.
#[derive(Clone, Debug)]
pub struct PendingType {
    pub written: WrittenText,
    pub what: &'static str,
}

/// The declarations of one file and its types that name declared types.
#[derive(Clone, Debug, Default)]
pub struct Declared {
    pub decls: Vec<TypeDecl>,
    pub pending: Vec<PendingType>,
}

impl Declared {
    pub fn extend(&mut self, other: Declared) {
        self.decls.extend(other.decls);
        self.pending.extend(other.pending);
    }
}

/// Reads a type's syntax, standing an empty literal union in for every name that is
/// not a scalar (it fits wherever a declared type could stand), and lists those names.
fn scan(s: &str) -> Result<(Type, Vec<String>), TypeError> {
    let names = RefCell::new(Vec::new());
    let t = parse_with(s, &|name| {
        names.borrow_mut().push(name.to_string());
        Some(Type::Literals(Arc::new(Vec::new())))
    })?;
    Ok((t, names.into_inner()))
}

impl Builder<'_> {
    /// The type written in `text[range]` (`what` names it in messages: "schema type").
    pub(super) fn written_type(
        &mut self,
        text: &Text,
        range: Range<usize>,
        what: &'static str,
    ) -> Option<Spanned<Type>> {
        let raw = &text.value[range.clone()];
        let at = range.start + (raw.len() - raw.trim_start().len());
        let written = WrittenText::new(text, at..at + raw.trim().len());
        let span = written.span();
        match scan(written.as_str()) {
            Err(e) => {
                self.diags.push(type_error(&written, &e, what, &[]));
                None
            }
            Ok((t, names)) if names.is_empty() => Some(Spanned::new(t, span)),
            Ok(_) => {
                self.types.pending.push(PendingType { written, what });
                Some(Spanned::new(Type::Any, span))
            }
        }
    }

    /// A type attribute's whole value.
    pub(super) fn type_attr(&mut self, text: &Text, what: &'static str) -> Option<Spanned<Type>> {
        self.written_type(text, 0..text.value.len(), what)
    }

    /// `<type name="Review">{approved: boolean}</type>` in a `<library>`.
    pub(super) fn type_decl(&mut self, el: &Element) {
        schema::check_attrs(el, &["name"], self.diags);
        schema::no_elements(el, self.diags);
        let Some(name) = el.attr("name") else {
            self.diags.push(
                Diagnostic::error(el.head(), "a `<type>` needs a `name`")
                    .with_help("write <type name=\"Review\">{approved: boolean}</type>"),
            );
            return;
        };
        let name = self.ident_attr(&name.value, "type name");
        let text = el.text();
        let written = WrittenText::new(&text, 0..text.value.len());
        let trimmed = text.value.trim();
        let lead = text.value.len() - text.value.trim_start().len();
        let written = WrittenText {
            range: lead..lead + trimmed.len(),
            ..written
        };
        if trimmed.is_empty() {
            self.diags.push(
                Diagnostic::error(el.head(), format!("type `{}` is empty", name.node)).with_help(
                    "write the type inside the element, like {approved: boolean, notes?: string}",
                ),
            );
            return;
        }
        let (uses, valid) = match scan(written.as_str()) {
            Ok((_, uses)) => (uses, true),
            Err(e) => {
                self.diags
                    .push(type_error(&written, &e, "declared type", &[]));
                (Vec::new(), false)
            }
        };
        self.types.decls.push(TypeDecl {
            name,
            text: written,
            uses,
            valid,
        });
    }
}

/// The diagnostic of a type that is not one; `known` are the declared names, for a
/// suggestion.
fn type_error(written: &WrittenText, e: &TypeError, what: &str, known: &[&str]) -> Diagnostic {
    let s = written.as_str();
    let start = written.range.start;
    let span = written
        .text
        .span_of(start + e.span.start..start + e.span.end);
    if let Some(name) = &e.unknown {
        let message = if name == s {
            format!("unknown {what} `{name}`")
        } else {
            format!("unknown type `{name}` in this {what}")
        };
        let help = match did_you_mean_preferring(name, known, &SCALAR_NAMES) {
            Some(c) => format!("did you mean `{c}`? Types are {TYPE_NAMES}"),
            None => format!(
                "types are {TYPE_NAMES}; a `<library>` declares one with <type name=\"{name}\">{{field: string}}</type>"
            ),
        };
        return Diagnostic::error(span, message).with_help(help);
    }
    let arrays = tv_stdlib::types::array_nesting(s);
    if arrays > tv_stdlib::types::MAX_NESTING {
        return Diagnostic::error(
            written.span(),
            format!(
                "the {what} nests arrays {arrays} deep; at most {} levels are allowed",
                tv_stdlib::types::MAX_NESTING
            ),
        )
        .with_help("write the deeper levels as `array` or `any`");
    }
    let d = Diagnostic::error(span, format!("invalid {what}: {}", e.message));
    if e.message.contains("nests more than") {
        d.with_help("write the deeper levels as `array`, `object` or `any`")
    } else {
        d.with_help(format!("types are {TYPE_NAMES}"))
    }
}

/// Resolves every declaration and every type set aside while building, writes the
/// types into the tree and lists the declared types in `program.types`.
pub fn resolve(program: &mut Program, diags: &mut Diagnostics) {
    let decls: Vec<TypeDecl> = program
        .modules
        .iter_mut()
        .flat_map(|m| std::mem::take(&mut m.types.decls))
        .collect();
    let pending: Vec<PendingType> = program
        .modules
        .iter_mut()
        .flat_map(|m| std::mem::take(&mut m.types.pending))
        .collect();
    if decls.is_empty() && pending.is_empty() {
        return;
    }
    let declared = declare(&decls, diags);
    let resolved = |name: &str| -> Option<Type> {
        if name == EVALUATION_RESULT {
            return Some(Type::evaluation_result());
        }
        declared.get(name).map(|(_, t)| t.clone())
    };
    let mut known: Vec<&str> = declared.keys().map(String::as_str).collect();
    known.push(EVALUATION_RESULT);
    known.sort_unstable();
    let mut found: HashMap<Span, Type> = HashMap::default();
    for p in &pending {
        let ty = match parse_with(p.written.as_str(), &resolved) {
            Ok(t) => t,
            Err(e) => {
                diags.push(type_error(&p.written, &e, p.what, &known));
                Type::Any
            }
        };
        found.insert(p.written.span(), ty);
    }
    if !found.is_empty() {
        for module in &mut program.modules {
            for item in &mut module.items {
                item_types(item, &mut |t| {
                    if let Some(ty) = found.get(&t.span) {
                        t.node = ty.clone();
                    }
                });
            }
        }
    }
    program.types = decls
        .iter()
        .filter_map(|d| {
            let (span, ty) = declared.get(&d.name.node)?;
            (*span == d.name.span).then(|| (d.name.clone(), ty.clone()))
        })
        .collect();
}

/// Each declaration by name: where it is declared and its type (`any` when it could
/// not be resolved). Names that cannot be declared, and names declared twice, are
/// reported here.
fn declare(decls: &[TypeDecl], diags: &mut Diagnostics) -> HashMap<String, (Span, Type)> {
    let mut index: HashMap<&str, usize> = HashMap::default();
    let mut usable: Vec<usize> = Vec::new();
    for (i, d) in decls.iter().enumerate() {
        let name = d.name.node.as_str();
        if !super::is_identifier(name) {
            continue;
        }
        if is_scalar_name(name) {
            diags.push(
                Diagnostic::error(d.name.span, format!("`{name}` is a built-in type"))
                    .with_help("choose another name for the declared type"),
            );
            continue;
        }
        if name == EVALUATION_RESULT {
            diags.push(
                Diagnostic::error(d.name.span, format!("`{name}` is predeclared"))
                    .with_help("it is {success: boolean, feedback?: string}, what evaluators reply; choose another name"),
            );
            continue;
        }
        if let Some(&first) = index.get(name) {
            diags.push(
                Diagnostic::error(d.name.span, format!("type `{name}` is declared twice"))
                    .with_secondary(decls[first].name.span, "first declared here")
                    .with_help("type names are unique across all files of a program"),
            );
            continue;
        }
        index.insert(name, i);
        usable.push(i);
    }
    let order = dependency_order(decls, &usable, &index, diags);
    let mut out: HashMap<String, (Span, Type)> = HashMap::default();
    let mut known: Vec<&str> = index.keys().copied().collect();
    known.push(EVALUATION_RESULT);
    known.sort_unstable();
    for (i, in_cycle) in order {
        let d = &decls[i];
        let ty = if in_cycle || !d.valid {
            Type::Any
        } else {
            let lookup = |name: &str| -> Option<Type> {
                if name == EVALUATION_RESULT {
                    return Some(Type::evaluation_result());
                }
                // A declaration in a cycle, or one that is wrong, was reported: it
                // stands for `any` rather than adding an error at each use.
                index.get(name)?;
                Some(out.get(name).map_or(Type::Any, |(_, t)| t.clone()))
            };
            match parse_with(d.text.as_str(), &lookup) {
                Ok(t) => t.named(&d.name.node),
                Err(e) => {
                    diags.push(type_error(&d.text, &e, "declared type", &known));
                    Type::Any
                }
            }
        };
        out.insert(d.name.node.clone(), (d.name.span, ty));
    }
    out
}

/// The declarations in an order where each comes after those it uses, each with
/// whether it is part of a cycle (reported here, once per cycle). The walk keeps its
/// own stack: a chain of a hundred thousand declarations does not deepen the call stack.
fn dependency_order(
    decls: &[TypeDecl],
    usable: &[usize],
    index: &HashMap<&str, usize>,
    diags: &mut Diagnostics,
) -> Vec<(usize, bool)> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        Open,
        Done,
    }
    let mut state = vec![State::New; decls.len()];
    let mut in_cycle = vec![false; decls.len()];
    let mut order = Vec::with_capacity(usable.len());
    let uses = |i: usize| -> Vec<usize> {
        decls[i]
            .uses
            .iter()
            .filter_map(|n| index.get(n.as_str()).copied())
            .collect()
    };
    for &root in usable {
        if state[root] != State::New {
            continue;
        }
        state[root] = State::Open;
        let mut stack: Vec<(usize, Vec<usize>, usize)> = vec![(root, uses(root), 0)];
        while let Some((node, next, k)) = stack.last_mut() {
            let node = *node;
            let Some(&dep) = next.get(*k) else {
                stack.pop();
                state[node] = State::Done;
                order.push((node, in_cycle[node]));
                continue;
            };
            *k += 1;
            match state[dep] {
                State::New => {
                    state[dep] = State::Open;
                    stack.push((dep, uses(dep), 0));
                }
                State::Open => {
                    let from = stack.iter().position(|(n, _, _)| *n == dep).unwrap_or(0);
                    let chain: Vec<usize> = stack[from..].iter().map(|(n, _, _)| *n).collect();
                    if chain.iter().any(|&n| in_cycle[n]) {
                        continue;
                    }
                    chain.iter().for_each(|&n| in_cycle[n] = true);
                    diags.push(cycle_error(decls, &chain));
                }
                State::Done => {}
            }
        }
    }
    order
}

fn cycle_error(decls: &[TypeDecl], chain: &[usize]) -> Diagnostic {
    let first = &decls[chain[0]].name;
    let names: Vec<&str> = chain
        .iter()
        .chain(std::iter::once(&chain[0]))
        .map(|&i| decls[i].name.node.as_str())
        .collect();
    let message = if chain.len() == 1 {
        format!("type `{}` refers to itself", first.node)
    } else {
        format!(
            "type `{}` refers to itself through {}: {}",
            first.node,
            names[1..names.len() - 1]
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
            names.join(" → ")
        )
    };
    let mut d = Diagnostic::error(first.span, message);
    for &i in &chain[1..] {
        d = d.with_secondary(decls[i].name.span, "declared here");
    }
    d.with_help(
        "a type cannot hold itself: write the inner value as `object` or `any`, or break the chain",
    )
}

/// Calls `f` on every type written in an item: parameters, `returns`, output formats'
/// schemas and inputs' types, nested tasks included.
fn item_types(item: &mut Item, f: &mut dyn FnMut(&mut Spanned<Type>)) {
    match item {
        Item::Template(t) => {
            t.params
                .iter_mut()
                .filter_map(|p| p.ty.as_mut())
                .for_each(&mut *f);
            t.returns.iter_mut().for_each(&mut *f);
            body_types(&mut t.body, f);
        }
        Item::Task(t) => task_types(&mut t.task, f),
    }
}

fn body_types(body: &mut Body, f: &mut dyn FnMut(&mut Spanned<Type>)) {
    match body {
        Body::Task(t) => task_types(t, f),
        Body::Call(c) => {
            for arg in &mut c.args {
                if let super::ArgValue::Body(b) = &mut arg.value {
                    body_types(b, f);
                }
            }
        }
        Body::Cond(c) => c.cases.iter_mut().for_each(|c| body_types(&mut c.body, f)),
        Body::Missing(_) => {}
    }
}

fn task_types(task: &mut Task, f: &mut dyn FnMut(&mut Spanned<Type>)) {
    if let Some(s) = task.output_format.as_mut().and_then(|o| o.schema.as_mut()) {
        f(s);
    }
    let script_inputs = task.script.iter_mut().flat_map(|s| s.inputs.iter_mut());
    for input in task.inputs.iter_mut().chain(script_inputs) {
        if let Some(t) = input.ty.as_mut() {
            f(t);
        }
        if let super::InputValue::Body(b) = &mut input.value {
            body_types(b, f);
        }
    }
    let steps = task.steps.iter_mut().flat_map(|s| s.node.iter_mut());
    let slots = [
        &mut task.director,
        &mut task.evaluator,
        &mut task.inner_task,
        &mut task.reduction_task,
    ];
    for b in steps.chain(slots.into_iter().flatten()) {
        body_types(b, f);
    }
}

/// The byte ranges of `s` between its top-level commas: those outside braces,
/// brackets, parentheses and quotes (`r:{a: string, b: number}, n:number` is two).
pub fn split_top_level(s: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let (mut depth, mut start, mut quote) = (0usize, 0, None::<char>);
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '{' | '[' | '(') => depth += 1,
            (None, '}' | ']' | ')') => depth = depth.saturating_sub(1),
            (None, ',') if depth == 0 => {
                out.push(start..i);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(start..s.len());
    out
}

#[cfg(test)]
mod tests {
    use super::split_top_level;

    #[test]
    fn params_split_only_at_commas_outside_records_and_quotes() {
        let s = "r:{a: string, b: number}, n:number, s:\"a,b\"|'c', x";
        let parts: Vec<&str> = split_top_level(s).into_iter().map(|r| &s[r]).collect();
        assert_eq!(
            parts,
            [
                "r:{a: string, b: number}",
                " n:number",
                " s:\"a,b\"|'c'",
                " x"
            ]
        );
    }
}
