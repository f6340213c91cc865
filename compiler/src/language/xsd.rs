//! The XML Schema (XSD 1.0) of the language, which `tvc schema` prints so that XML
//! editors complete and validate templates (DESIGN §17), made from the table: the
//! schema's definitions in the order [`LAYOUT`] gives, each written from its entry.
//!
//! The schema accepts everything the compiler accepts and rejects what is wrong in
//! structure; what XSD 1.0 cannot say (only a map holds a body directly, an element is
//! given at most once) is left to the compiler, as the header says.

use super::words::{
    AccumulationFormat, FilePathsSource, FreshContext, OnMaxIterations, Otherwise, OutputKind,
    Status, TaskType, Words, BOOLEAN, CONCURRENCY, INHERIT_CONTEXT, PROVIDER, RETRIES, TEMPERATURE,
    TOP_P,
};
use super::{
    element, Attr, Children, Content, Element, ElementId as E, Group, Occurs, ValueKind, Word,
    BODY, ROOTS, SLOT_ATTRS, TASK_CONTENT,
};
use std::fmt::Write;

/// One definition of the schema, or a comment between them.
#[derive(Debug)]
pub(super) enum Def {
    /// `<!-- ===== text ===== -->`, opening a part of the schema.
    Section(&'static str),
    /// A comment right above the next definition.
    Note(&'static str),
    /// A root element's declaration.
    Root(E),
    /// A value kind's simple type.
    Simple(ValueKind),
    /// The attributes a slot shares with a task.
    SlotAttributes,
    /// An element's named complex type.
    Type(E),
    Group(&'static Group),
}

const HEADER: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!--
  The XML Schema (XSD 1.0) of tv task templates, as `tvc schema` prints it.

  Editors use it to complete and validate templates; `tvc check` remains the judge. The
  schema accepts everything the compiler accepts and rejects what is wrong in structure:
  unknown elements and attributes, missing required attributes, words outside their set.
  What XSD 1.0 cannot say is left to the compiler: that only a `type="map"` task holds a
  body directly, that an element is given at most once, the meaning of `{{ }}` holes.

  Point an editor at it with `tvc schema > tv.xsd` and, on the root element,
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="tv.xsd".
-->
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="unqualified">
"#;

/// The schema's name of [`SLOT_ATTRS`].
const SLOT_ATTRIBUTES: &str = "SlotAttributes";

/// The schema's definitions, in the order it prints them.
pub(super) static LAYOUT: &[Def] = &[
    Def::Section("Roots: a file's root is a task, a template or a library."),
    Def::Root(E::Task),
    Def::Root(E::Template),
    Def::Root(E::Library),
    Def::Section("Words and numbers the compiler reads."),
    Def::Simple(ValueKind::Identifier),
    Def::Simple(ValueKind::Words(BOOLEAN)),
    Def::Simple(ValueKind::Words(TaskType::LIST)),
    Def::Simple(ValueKind::Count(&CONCURRENCY)),
    Def::Simple(ValueKind::Words(PROVIDER)),
    Def::Simple(ValueKind::Number(&TEMPERATURE)),
    Def::Simple(ValueKind::Number(&TOP_P)),
    Def::Simple(ValueKind::NonBlank),
    Def::Simple(ValueKind::NonEmpty),
    Def::Simple(ValueKind::Words(OutputKind::LIST)),
    Def::Simple(ValueKind::Count(&RETRIES)),
    Def::Simple(ValueKind::Words(INHERIT_CONTEXT)),
    Def::Simple(ValueKind::Words(AccumulationFormat::LIST)),
    Def::Simple(ValueKind::Words(FreshContext::LIST)),
    Def::Simple(ValueKind::Words(OnMaxIterations::LIST)),
    Def::Simple(ValueKind::Words(FilePathsSource::LIST)),
    Def::Simple(ValueKind::Words(Status::LIST)),
    Def::Section("Tasks and the places that hold one."),
    Def::SlotAttributes,
    Def::Type(E::Task),
    Def::Type(E::LibraryTask),
    Def::Note(
        "A slot holds one task, call or cond, or is itself written as a task (without a name).",
    ),
    Def::Type(E::Director),
    Def::Note(
        "Every child a task accepts, in any order. The compiler says which ones its type needs,
       which are given twice, and that only a map holds a task, call or cond directly.",
    ),
    Def::Group(&TASK_CONTENT),
    Def::Note(
        "One task, call or cond: a step, a template's body, a case's body, an input's value.",
    ),
    Def::Group(&BODY),
    Def::Type(E::Template),
    Def::Type(E::Steps),
    Def::Type(E::Call),
    Def::Type(E::CallArg),
    Def::Type(E::Cond),
    Def::Simple(ValueKind::Words(Otherwise::LIST)),
    Def::Type(E::Case),
    Def::Section("The parts of a task."),
    Def::Type(E::Model),
    Def::Type(E::OutputFormat),
    Def::Type(E::ContextManagement),
    Def::Type(E::FilePaths),
    Def::Type(E::Inputs),
    Def::Type(E::Input),
    Def::Type(E::ContextRelevance),
    Def::Type(E::ContextAssembly),
    Def::Type(E::ScriptExecution),
    Def::Type(E::TerminationCondition),
    Def::Section("Library entries besides tasks and templates."),
    Def::Type(E::TypeDecl),
    Def::Type(E::Test),
];

/// The schema, as `tvc schema` prints it.
pub fn xsd() -> String {
    let mut w = Writer(String::with_capacity(40_000));
    w.0.push_str(HEADER);
    let mut noted = false;
    for def in LAYOUT {
        if !noted {
            w.0.push('\n');
        }
        noted = matches!(def, Def::Note(_));
        w.def(def);
    }
    w.0.push_str("\n</xs:schema>\n");
    w.0
}

struct Writer(String);

impl Writer {
    fn line(&mut self, indent: usize, text: impl std::fmt::Display) {
        let _ = writeln!(self.0, "{:indent$}{text}", "");
    }

    fn doc(&mut self, indent: usize, doc: &str) {
        self.line(
            indent,
            format_args!("<xs:annotation>{}</xs:annotation>", documentation(doc)),
        );
    }

    fn def(&mut self, def: &Def) {
        match def {
            Def::Section(text) => self.line(2, format_args!("<!-- ===== {text} ===== -->")),
            Def::Note(text) => self.line(2, format_args!("<!-- {text} -->")),
            Def::Root(id) => self.element(*id, Occurs::ONE, 2, true),
            Def::Simple(kind) => self.simple(kind),
            Def::SlotAttributes => {
                self.line(
                    2,
                    format_args!("<xs:attributeGroup name=\"{SLOT_ATTRIBUTES}\">"),
                );
                SLOT_ATTRS.iter().for_each(|a| self.attr(a, 4));
                self.line(2, "</xs:attributeGroup>");
            }
            Def::Type(id) => {
                let el = element(*id);
                self.complex(el, el.xsd_type, 2);
            }
            Def::Group(group) => {
                self.line(2, format_args!("<xs:group name=\"{}\">", group.name));
                self.line(4, "<xs:choice>");
                for &id in group.elements {
                    self.element(id, Occurs::ONE, 6, false);
                }
                for nested in group.nested {
                    self.line(6, format_args!("<xs:group ref=\"{}\"/>", nested.name));
                }
                self.line(4, "</xs:choice>");
                self.line(2, "</xs:group>");
            }
        }
    }

    /// An element's declaration: a reference to a root, or its name, type and doc, with
    /// its type written inside when the schema does not name it.
    fn element(&mut self, id: E, occurs: Occurs, indent: usize, top: bool) {
        let el = element(id);
        let occurs = occurrences(occurs);
        if !top && ROOTS.contains(&id) {
            self.line(
                indent,
                format_args!("<xs:element ref=\"{}\"{occurs}/>", el.name),
            );
            return;
        }
        let ty = match (el.xsd_type, &el.content) {
            (Some(name), _) => Some(name),
            (None, Content::Text(kind)) if el.attrs.is_empty() => Some(kind.xsd_type()),
            _ => None,
        };
        let ty = ty.map(|t| format!(" type=\"{t}\"")).unwrap_or_default();
        self.line(
            indent,
            format_args!("<xs:element name=\"{}\"{ty}{occurs}>", el.name),
        );
        self.doc(indent + 2, el.doc);
        if ty.is_empty() {
            self.complex(el, None, indent + 2);
        }
        self.line(indent, "</xs:element>");
    }

    /// An element's complex type, named or written inside its declaration.
    fn complex(&mut self, el: &Element, name: Option<&str>, indent: usize) {
        let name = name.map(|n| format!(" name=\"{n}\"")).unwrap_or_default();
        let mixed = matches!(el.content, Content::Elements { mixed: true, .. });
        let mixed = if mixed { " mixed=\"true\"" } else { "" };
        self.line(indent, format_args!("<xs:complexType{name}{mixed}>"));
        let inner = indent + 2;
        match &el.content {
            Content::Empty => self.attrs(el.attrs, inner),
            Content::Text(kind) => {
                self.line(inner, "<xs:simpleContent>");
                let base = kind.xsd_type();
                self.line(inner + 2, format_args!("<xs:extension base=\"{base}\">"));
                self.attrs(el.attrs, inner + 4);
                self.line(inner + 2, "</xs:extension>");
                self.line(inner, "</xs:simpleContent>");
            }
            Content::Elements { children, .. } => {
                self.children(children, inner);
                self.attrs(el.attrs, inner);
            }
        }
        self.line(indent, "</xs:complexType>");
    }

    fn children(&mut self, children: &Children, indent: usize) {
        match children {
            Children::Group(group, occurs) => {
                let occurs = occurrences(*occurs);
                self.line(
                    indent,
                    format_args!("<xs:group ref=\"{}\"{occurs}/>", group.name),
                );
            }
            Children::AnyOf(ids) => {
                let any = occurrences(Occurs::ANY);
                self.line(indent, format_args!("<xs:choice{any}>"));
                for &id in *ids {
                    self.element(id, Occurs::ONE, indent + 2, false);
                }
                self.line(indent, "</xs:choice>");
            }
            Children::Repeated(id, occurs) => {
                self.line(indent, "<xs:sequence>");
                self.element(*id, *occurs, indent + 2, false);
                self.line(indent, "</xs:sequence>");
            }
        }
    }

    /// Attributes; those a slot shares with a task by reference to their group.
    fn attrs(&mut self, attrs: &[Attr], indent: usize) {
        let slot = attrs.len() > SLOT_ATTRS.len() && SLOT_ATTRS.iter().all(|a| attrs.contains(a))
            || attrs == SLOT_ATTRS;
        if slot {
            let r = format_args!("<xs:attributeGroup ref=\"{SLOT_ATTRIBUTES}\"/>");
            self.line(indent, r);
        }
        for a in attrs.iter().filter(|a| !slot || !SLOT_ATTRS.contains(a)) {
            self.attr(a, indent);
        }
    }

    fn attr(&mut self, a: &Attr, indent: usize) {
        let ty = a.value.xsd_type();
        let required = if a.required { " use=\"required\"" } else { "" };
        let head = format_args!("<xs:attribute name=\"{}\" type=\"{ty}\"{required}>", a.name);
        self.line(indent, head);
        self.doc(indent + 2, a.doc);
        self.line(indent, "</xs:attribute>");
    }

    /// A value kind's simple type: its documentation and restriction.
    fn simple(&mut self, kind: &ValueKind) {
        self.line(
            2,
            format_args!("<xs:simpleType name=\"{}\">", kind.xsd_type()),
        );
        if let Some(doc) = simple_doc(kind) {
            self.doc(4, &doc);
        }
        let (base, facets) = restriction(kind);
        self.line(4, format_args!("<xs:restriction base=\"{base}\">"));
        for facet in facets {
            self.line(6, facet);
        }
        self.line(4, "</xs:restriction>");
        self.line(2, "</xs:simpleType>");
    }
}

/// `minOccurs` and `maxOccurs`, when they are not 1.
fn occurrences(o: Occurs) -> String {
    let mut out = String::new();
    if o.min != 1 {
        let _ = write!(out, " minOccurs=\"{}\"", o.min);
    }
    match o.max {
        None => out.push_str(" maxOccurs=\"unbounded\""),
        Some(1) => {}
        Some(max) => {
            let _ = write!(out, " maxOccurs=\"{max}\"");
        }
    }
    out
}

fn documentation(doc: &str) -> String {
    let text = doc
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!("<xs:documentation>{text}</xs:documentation>")
}

/// The documentation of a simple type, for the kinds that have one.
fn simple_doc(kind: &ValueKind) -> Option<String> {
    match kind {
        ValueKind::Words(list) => list.doc.map(String::from),
        ValueKind::Count(c) => {
            let (_, lead) = c.xsd?;
            let max = c.max.map(|m| m.to_string()).unwrap_or_default();
            Some(format!("{lead}: {} to {max}.", c.min))
        }
        ValueKind::Number(_) => None,
        _ => {
            let what = kind.describe();
            let mut chars = what.chars();
            let first = chars.next()?.to_uppercase();
            Some(format!("{first}{}.", chars.as_str()))
        }
    }
}

/// The base type and facets of a simple type.
fn restriction(kind: &ValueKind) -> (&'static str, Vec<String>) {
    match kind {
        ValueKind::Identifier => (
            "xs:token",
            vec!["<xs:pattern value=\"[A-Za-z_][A-Za-z0-9_]*\"/>".into()],
        ),
        ValueKind::NonBlank => ("xs:token", vec!["<xs:minLength value=\"1\"/>".into()]),
        ValueKind::NonEmpty => ("xs:string", vec!["<xs:minLength value=\"1\"/>".into()]),
        ValueKind::Count(c) => {
            let base = if c.min == 0 {
                "xs:nonNegativeInteger"
            } else {
                "xs:positiveInteger"
            };
            let max = c.max.map(|m| format!("<xs:maxInclusive value=\"{m}\"/>"));
            (base, max.into_iter().collect())
        }
        ValueKind::Number(n) => (
            "xs:double",
            vec![
                format!("<xs:minInclusive value=\"{}\"/>", n.min),
                format!("<xs:maxInclusive value=\"{}\"/>", n.max),
            ],
        ),
        ValueKind::Words(list) => ("xs:token", list.words.iter().map(enumeration).collect()),
        _ => ("xs:string", Vec::new()),
    }
}

fn enumeration(w: &Word) -> String {
    let alias = w.alias_of.map(|a| format!("Another name of `{a}`."));
    match w.doc.map(String::from).or(alias) {
        Some(doc) => format!(
            "<xs:enumeration value=\"{}\"><xs:annotation>{}</xs:annotation></xs:enumeration>",
            w.word,
            documentation(&doc)
        ),
        None => format!("<xs:enumeration value=\"{}\"/>", w.word),
    }
}
