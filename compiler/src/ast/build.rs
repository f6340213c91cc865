//! XML element tree → syntax tree: roots, templates, bodies, calls and conditions.
//! Task fields are read in `fields.rs`.

use super::schema;
use super::*;
use crate::diag::{Diagnostic, Diagnostics};
use crate::language::{self, ElementId as E, BODY, ROOTS};
use crate::parser;
use crate::source::SourceFile;
use crate::xml::{Element, Text, XmlDoc};

/// Builds the items of one file. Problems are reported; what could be read is kept.
pub(crate) fn build_module(
    file: FileId,
    source: &SourceFile,
    doc: &XmlDoc,
    diags: &mut Diagnostics,
) -> Module {
    build_module_with(file, source, doc, diags, None)
}

/// [`build_module`] of a document whose `<library>` entries were already built (by
/// [`build_entries`], in document order, while the file was read).
pub(crate) fn build_module_with(
    file: FileId,
    source: &SourceFile,
    doc: &XmlDoc,
    diags: &mut Diagnostics,
    entries: Option<Built>,
) -> Module {
    let mut b = Builder {
        diags,
        types: Declared::default(),
        tests: Vec::new(),
    };
    let mut items = Vec::new();
    match &doc.root {
        None => {
            if doc.complete {
                b.diags.push(no_root(file, source));
            }
        }
        Some(root) => match ROOTS
            .iter()
            .find(|&&id| language::element(id).name == root.name)
        {
            Some(E::Task) => {
                let name = match root.attr("name") {
                    Some(a) => (b.ident_attr(&a.value, "task name"), true),
                    None => (Spanned::new(source.stem(), root.head()), false),
                };
                let task = b.task(root, E::Task, true);
                items.push(Item::Task(Box::new(NamedTask {
                    name: name.0,
                    explicit_name: name.1,
                    task,
                })));
            }
            Some(E::Template) => items.extend(b.template(root).map(Item::Template)),
            Some(E::Library) => b.library(root, &mut items, entries),
            _ => b.diags.push(
                Diagnostic::error(
                    root.head(),
                    format!("`<{}>` cannot be the root element", root.name),
                )
                .with_help("a template file's root is `<task>`, `<template>` or `<library>`"),
            ),
        },
    }
    // The syntax trees of a large library are most of what `tvc` holds: no room for
    // items never made (a `Vec` grows by doubling).
    items.shrink_to_fit();
    Module {
        file,
        std: source.std,
        items,
        heads: None,
        types: b.types,
        tests: b.tests,
    }
}

/// A file without a root element. "Empty" only when it is: a file of comments, an XML
/// declaration or loose text has something in it, just no element.
fn no_root(file: FileId, source: &SourceFile) -> Diagnostic {
    let blank = source.text.trim_start_matches('\u{feff}').trim().is_empty();
    let message = if blank {
        "no root element: the file is empty"
    } else {
        "the file holds no element: expected a root `<task>`, `<template>` or `<library>`"
    };
    let help = if blank {
        "a template file holds one `<task>`, `<template>` or `<library>` element"
    } else {
        "comments, the XML declaration and text outside elements do not count; add the root element"
    };
    Diagnostic::error(Span::new(file, 0..0), message).with_help(help)
}

/// What some entries of a `<library>` built: items, type declarations (and types
/// naming them), tests, and what was wrong with them.
#[derive(Debug, Default)]
pub struct Built {
    pub items: Vec<Item>,
    pub types: Declared,
    pub tests: Vec<TestCase>,
    pub diags: Diagnostics,
}

impl Built {
    /// Appends what later entries built, keeping document order.
    pub fn extend(&mut self, later: Built) {
        self.items.extend(later.items);
        self.types.extend(later.types);
        self.tests.extend(later.tests);
        self.diags.extend(later.diags);
    }
}

/// The items of some entries of a `<library>`, and what was wrong with them.
pub(crate) fn build_entries<'s, E: std::borrow::Borrow<Element<'s>>>(entries: &[E]) -> Built {
    let mut diags = Diagnostics::new();
    let mut b = Builder {
        diags: &mut diags,
        types: Declared::default(),
        tests: Vec::new(),
    };
    let mut items = Vec::new();
    for entry in entries {
        b.library_entry(entry.borrow(), &mut items);
    }
    let (types, tests) = (b.types, b.tests);
    Built {
        items,
        types,
        tests,
        diags,
    }
}

pub(super) struct Builder<'d> {
    pub(super) diags: &'d mut Diagnostics,
    /// The `<type>` declarations met, and the types that name declared types.
    pub(super) types: Declared,
    /// The `<test>` elements met.
    pub(super) tests: Vec<TestCase>,
}

impl Builder<'_> {
    fn library(&mut self, el: &Element, items: &mut Vec<Item>, entries: Option<Built>) {
        schema::check_attrs(el, E::Library, self.diags);
        schema::no_text(el, self.diags);
        if let Some(built) = entries {
            self.take(built, items);
            return;
        }
        let children: Vec<&Element> = el.elements().collect();
        // Entries are independent of one another: chunks are built on all cores, each
        // with its own diagnostics, and joined in document order.
        let built = crate::parallel::map_chunks(
            &children,
            crate::parallel::MIN_ITEMS_PER_WORKER,
            build_entries,
        );
        for built in built {
            self.take(built, items);
        }
    }

    fn take(&mut self, built: Built, items: &mut Vec<Item>) {
        items.extend(built.items);
        self.types.extend(built.types);
        self.tests.extend(built.tests);
        self.diags.extend(built.diags);
    }

    fn library_entry(&mut self, child: &Element, items: &mut Vec<Item>) {
        let library = language::element(E::Library);
        match library.child(&child.name) {
            Some(E::Template) => items.extend(self.template(child).map(Item::Template)),
            Some(E::LibraryTask) => {
                let task = self.task(child, E::LibraryTask, true);
                match child.attr("name") {
                    Some(a) => items.push(Item::Task(Box::new(NamedTask {
                        name: self.ident_attr(&a.value, "task name"),
                        explicit_name: true,
                        task,
                    }))),
                    None => self.diags.push(
                        Diagnostic::error(child.head(), "a `<task>` in a `<library>` needs a `name`")
                            .with_help("add name=\"...\": the name is how callers and `tvm run --entry` find it"),
                    ),
                }
            }
            Some(E::TypeDecl) => self.type_decl(child),
            Some(E::Test) => {
                let test = self.test_case(child);
                self.tests.extend(test);
            }
            _ => schema::unknown_element(child, library.name, library.children(), self.diags),
        }
    }

    fn template(&mut self, el: &Element) -> Option<Template> {
        schema::check_attrs(el, E::Template, self.diags);
        schema::no_text(el, self.diags);
        let name = match el.attr("name") {
            Some(a) => self.ident_attr(&a.value, "template name"),
            None => {
                self.diags.push(
                    Diagnostic::error(el.head(), "a `<template>` needs a `name`")
                        .with_help("add name=\"...\" so that `<call template>` can find it"),
                );
                Spanned::new(String::new(), el.head())
            }
        };
        let params = el.attr("params").map(|a| self.params(&a.value));
        let returns = el
            .attr("returns")
            .and_then(|a| self.type_attr(&a.value, "return type"));
        let body = self.single_body(el);
        // With `params`, a declared input the body adds would have no value: the
        // parameters are declared in one place or the other.
        // (A `ref` body's inputs are its callee's arguments, checked with the call.)
        if let (Some(params), Body::Task(t)) = (&params, &body) {
            let declared = t.inputs.iter().filter(|_| t.reference.is_none());
            let declared = declared.filter(|i| crate::ast::is_parameter(i));
            for input in declared.filter(|i| !params.iter().any(|p| p.name.node == i.name.node)) {
                self.diags.push(
                    Diagnostic::error(
                        input.name.span,
                        format!(
                            "input `{}` is not among the `params` of template `{}`, so no caller can give it a value",
                            input.name.node, name.node
                        ),
                    )
                    .with_help(format!(
                        "add `{}` to params=\"...\", or leave params out and let <inputs> declare the parameters",
                        input.name.node
                    )),
                );
            }
        }
        // With `params`, a parameter's type is written there, once.
        if let (Some(_), Body::Task(t)) = (&params, &body) {
            for ty in t.inputs.iter().filter_map(|i| i.ty.as_ref()) {
                self.diags.push(
                    Diagnostic::error(
                        ty.span,
                        format!(
                            "template `{}` declares its parameters in `params`, so their types are written there",
                            name.node
                        ),
                    )
                    .with_help("write the type in params=\"name:Type\" and remove `type` from the input"),
                );
            }
        }
        // Without `params`, the body's `<inputs>` declare the parameters (seed 004).
        let params = params.unwrap_or_else(|| match &body {
            Body::Task(t) => t
                .inputs
                .iter()
                .filter(|i| crate::ast::is_parameter(i))
                .map(|i| Param {
                    name: i.name.clone(),
                    ty: i.ty.clone(),
                })
                .collect(),
            _ => Vec::new(),
        });
        Some(Template {
            name,
            params,
            returns,
            body,
            span: el.span,
        })
    }

    /// `params="a, b:number, r:{x: string, y?: number}"`: split at the commas outside
    /// records, parentheses and quotes.
    fn params(&mut self, text: &Text) -> Vec<Param> {
        let mut out: Vec<Param> = Vec::new();
        if text.value.trim().is_empty() {
            return out;
        }
        for range in super::split_top_level(&text.value) {
            let piece = &text.value[range.clone()];
            let lead = piece.len() - piece.trim_start().len();
            let trimmed = piece.trim();
            let at = range.start + lead;
            let piece_span = text.span_of(at..at + trimmed.len());
            if trimmed.is_empty() {
                self.diags.push(
                    Diagnostic::error(piece_span, "empty parameter name in `params`")
                        .with_help("separate parameter names with single commas"),
                );
                continue;
            }
            let (name, ty_at) = match trimmed.split_once(':') {
                Some((n, _)) => (n.trim_end(), Some(at + n.len() + 1)),
                None => (trimmed, None),
            };
            let name_span = text.span_of(at..at + name.len());
            if !is_identifier(name) {
                self.diags.push(
                    Diagnostic::error(
                        name_span,
                        format!("parameter name `{name}` is not an identifier"),
                    )
                    .with_help(
                        "a parameter name is letters, digits and `_`, not starting with a digit",
                    ),
                );
                continue;
            }
            let ty = ty_at.and_then(|t_at| {
                self.written_type(text, t_at..at + trimmed.len(), "parameter type")
            });
            if let Some(prev) = out.iter().find(|p| p.name.node == name) {
                self.diags.push(
                    Diagnostic::error(name_span, format!("parameter `{name}` is declared twice"))
                        .with_secondary(prev.name.span, "first declared here"),
                );
                continue;
            }
            out.push(Param {
                name: Spanned::new(name.to_string(), name_span),
                ty,
            });
        }
        out.shrink_to_fit();
        out
    }

    pub(super) fn ident_attr(&mut self, text: &Text, what: &str) -> Ident {
        let name = text.trimmed();
        let span = text.trimmed_span();
        if !is_identifier(name) {
            self.diags.push(
                Diagnostic::error(span, format!("{what} `{name}` is not an identifier"))
                    .with_help("names are letters, digits and `_`, not starting with a digit"),
            );
        }
        Spanned::new(name.to_string(), span)
    }

    /// The one task, call or cond inside `el` (a template body, a case).
    pub(super) fn single_body(&mut self, el: &Element) -> Body {
        let mut bodies = el.elements().filter(|c| BODY.get(&c.name).is_some());
        let first = bodies.next();
        for extra in bodies {
            self.diags.push(
                Diagnostic::error(
                    extra.head(),
                    format!("`<{}>` holds exactly one task, call or cond", el.name),
                )
                .with_help("wrap several tasks in a `<task type=\"sequential\">` with `<steps>`"),
            );
        }
        for other in el.elements().filter(|c| BODY.get(&c.name).is_none()) {
            schema::unknown_element(other, &el.name, BODY.elements, self.diags);
        }
        schema::no_text(el, self.diags);
        match first {
            Some(b) => self.body(b, &el.name),
            None => {
                self.diags.push(Diagnostic::error(
                    el.head(),
                    format!("`<{}>` needs a `<task>`, `<call>` or `<cond>`", el.name),
                ));
                Body::Missing(el.head())
            }
        }
    }

    /// A `<task>`, `<call>` or `<cond>` element.
    pub(super) fn body(&mut self, el: &Element, parent: &str) -> Body {
        match BODY.get(&el.name) {
            Some(E::Task) => Body::Task(Box::new(self.task(el, E::Task, false))),
            Some(E::Call) => Body::Call(self.call(el)),
            Some(E::Cond) => Body::Cond(self.cond(el)),
            _ => {
                schema::unknown_element(el, parent, BODY.elements, self.diags);
                Body::Missing(el.head())
            }
        }
    }

    /// A slot like `<director>` (`id` in the table): one body element inside, or the
    /// fields of an atomic task written directly in the slot.
    pub(super) fn slot(&mut self, el: &Element, id: E) -> Body {
        let children: Vec<&Element> = el.elements().collect();
        if children.len() == 1
            && BODY.get(&children[0].name).is_some()
            && el.attrs.iter().all(|a| schema::is_ignored_attr(&a.name))
        {
            schema::no_text(el, self.diags);
            return self.body(children[0], &el.name);
        }
        Body::Task(Box::new(self.task(el, id, false)))
    }

    fn call(&mut self, el: &Element) -> Call {
        schema::check_attrs(el, E::Call, self.diags);
        schema::no_text(el, self.diags);
        let template = match el.attr("template") {
            Some(a) => self.ident_attr(&a.value, "template name"),
            None => {
                self.diags.push(Diagnostic::error(
                    el.head(),
                    "`<call>` needs a `template` attribute",
                ));
                Spanned::new(String::new(), el.head())
            }
        };
        let mut args = Vec::new();
        let call = language::element(E::Call);
        for child in el.elements() {
            match call.child(&child.name) {
                Some(E::CallArg) => args.push(self.arg(child)),
                _ => schema::unknown_element(child, call.name, call.children(), self.diags),
            }
        }
        args.shrink_to_fit();
        Call {
            template,
            args,
            span: el.span,
        }
    }

    fn arg(&mut self, el: &Element) -> CallArg {
        schema::check_attrs(el, E::CallArg, self.diags);
        let name = el
            .attr("name")
            .map(|a| self.ident_attr(&a.value, "argument name"));
        let children: Vec<&Element> = el.elements().collect();
        let value = if let Some(first) = children.first() {
            schema::no_text(el, self.diags);
            for extra in &children[1..] {
                self.diags.error(extra.head(), "an `<arg>` holds one value");
            }
            ArgValue::Body(self.body(first, "arg"))
        } else {
            let text = el.text();
            let word = text.trimmed();
            if is_identifier(word) && !matches!(word, "true" | "false" | "null") {
                ArgValue::Word(Spanned::new(word.to_string(), text.trimmed_span()))
            } else {
                ArgValue::Text(parser::parse_template(&text, self.diags))
            }
        };
        CallArg {
            name,
            value,
            span: el.span,
        }
    }

    fn cond(&mut self, el: &Element) -> Cond {
        schema::check_attrs(el, E::Cond, self.diags);
        let otherwise = el.attr("otherwise").and_then(|a| {
            let (v, span) = (a.value.trimmed(), a.value.trimmed_span());
            self.word::<Otherwise>(v, span, "`otherwise`")
        });
        schema::no_text(el, self.diags);
        let mut cases = Vec::new();
        let cond = language::element(E::Cond);
        for child in el.elements() {
            if cond.child(&child.name) != Some(E::Case) {
                schema::unknown_element(child, cond.name, cond.children(), self.diags);
                continue;
            }
            schema::check_attrs(child, E::Case, self.diags);
            let test = match child.attr("test") {
                Some(a) => parser::parse_test(&a.value, self.diags),
                None => {
                    self.diags.push(
                        Diagnostic::error(child.head(), "`<case>` needs a `test` attribute")
                            .with_help("write test=\"true\" for a case that always holds"),
                    );
                    Expr {
                        kind: ExprKind::Error,
                        span: child.head(),
                    }
                }
            };
            let body = self.single_body(child);
            cases.push(Case {
                test,
                body,
                span: child.span,
            });
        }
        if cases.is_empty() {
            self.diags
                .error(el.head(), "`<cond>` needs at least one `<case>`");
        }
        Cond {
            cases,
            otherwise,
            head: el.head(),
            span: el.span,
        }
    }

    /// A `<task>` element (or a slot written as one), `id` in the table.
    pub(super) fn task(&mut self, el: &Element, id: E, may_be_named: bool) -> Task {
        schema::check_attrs(el, id, self.diags);
        if !may_be_named {
            if let Some(a) = el.attr("name") {
                self.diags.warning(
                    a.name_span,
                    "only a root task or a task in a `<library>` is named; this name is ignored",
                );
            }
        }
        let mut task = Task::new(el.span);
        if let Some(a) = el.attr("type") {
            task.explicit_type = true;
            let span = a.value.trimmed_span();
            let v = a.value.trimmed();
            match self.word::<TaskType>(v, span, "task type") {
                Some(kind) => task.kind = kind,
                None => task.type_invalid = true,
            }
        } else {
            task.kind = Spanned::new(TaskType::Atomic, el.head());
        }
        task.subtype = el.attr("subtype").map(|a| {
            Box::new(Spanned::new(
                a.value.trimmed().to_string(),
                a.value.trimmed_span(),
            ))
        });
        task.reference = el
            .attr("ref")
            .map(|a| self.ident_attr(&a.value, "referenced template name"));
        self.list_attrs(el, id, &mut task);
        schema::no_text(el, self.diags);
        let entry = language::element(id);
        let mut seen: Vec<&Element> = Vec::new();
        for child in el.elements() {
            let body = entry.nested().iter().any(|g| g.get(&child.name).is_some());
            if task.kind.node == TaskType::Map && body {
                self.map_body(el, child, &mut task);
                continue;
            }
            let Some(field) = entry.child(&child.name) else {
                schema::unknown_element(child, &el.name, entry.children(), self.diags);
                continue;
            };
            if let Some(prev) = seen.iter().find(|p| p.name == child.name) {
                self.diags.push(
                    Diagnostic::error(child.head(), format!("`<{}>` is given twice", child.name))
                        .with_secondary(prev.head(), "first given here"),
                );
                continue;
            }
            seen.push(child);
            self.task_field(&mut task, child, field, &el.name);
        }
        task
    }

    pub(super) fn bad_enum(&mut self, span: Span, what: &str, found: &str, allowed: &[&str]) {
        let mut d = Diagnostic::error(span, format!("`{found}` is not a valid {what}"))
            .with_label(format!("expected {}", schema::list(allowed, "`", "`")));
        if let Some(c) = schema::did_you_mean(found, allowed) {
            d = d.with_help(format!("did you mean `{c}`?"));
        }
        self.diags.push(d);
    }
}

pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    /// The messages of the errors `text` gets as a whole program.
    fn errors(text: &str) -> Vec<String> {
        let c = crate::driver::check_texts([("t.xml", text)]);
        c.diags.iter().map(|d| d.message.clone()).collect()
    }

    #[test]
    fn only_an_empty_or_blank_file_is_called_empty() {
        let empty = vec!["no root element: the file is empty".to_string()];
        assert_eq!(errors(""), empty);
        assert_eq!(errors(" \n\t\r\n"), empty);
        assert_eq!(errors("\u{feff}\n"), empty);
        let no_element =
            "the file holds no element: expected a root `<task>`, `<template>` or `<library>`";
        assert_eq!(errors("<!-- a comment -->\n"), [no_element]);
        assert_eq!(errors("<?xml version=\"1.0\"?>\n"), [no_element]);
    }
}
