//! The entries of the language table, by area: tasks and the places that hold one
//! (`tasks`), a task's fields and parts (`parts`), and here a library's entries besides
//! tasks and templates (named types and tests, DESIGN §17). Entries are built with the
//! small `const fn`s below, so that each reads as one line per attribute.

pub(super) mod parts;
pub(super) mod tasks;

use super::words::{Status, Words};
use super::{
    Attr, Children, Content, Element, ElementId, ElementId as E, Group, Occurs, ValueKind,
};
use ValueKind::*;

pub use tasks::{BODY, SLOT_ATTRS, TASK_CONTENT};

/// An optional attribute.
pub(super) const fn attr(name: &'static str, value: ValueKind, doc: &'static str) -> Attr {
    Attr {
        name,
        value,
        required: false,
        doc,
    }
}

/// An attribute that must be given.
pub(super) const fn required(name: &'static str, value: ValueKind, doc: &'static str) -> Attr {
    Attr {
        name,
        value,
        required: true,
        doc,
    }
}

/// An element of text only, without attributes.
pub(super) const fn text(
    id: ElementId,
    name: &'static str,
    kind: ValueKind,
    doc: &'static str,
) -> Element {
    Element {
        id,
        name,
        doc,
        attrs: &[],
        content: Content::Text(kind),
        xsd_type: None,
    }
}

/// Element-only content: these children, in any order and number.
pub(super) const fn any_of(ids: &'static [ElementId]) -> Content {
    Content::Elements {
        mixed: false,
        children: Children::AnyOf(ids),
    }
}

/// Element-only content: one element, `occurs` times.
pub(super) const fn repeated(id: ElementId, occurs: Occurs) -> Content {
    Content::Elements {
        mixed: false,
        children: Children::Repeated(id, occurs),
    }
}

/// A group's elements, `occurs` times; with text beside them when `mixed`.
pub(super) const fn group(group: &'static Group, occurs: Occurs, mixed: bool) -> Content {
    Content::Elements {
        mixed,
        children: Children::Group(group, occurs),
    }
}

pub(super) const TYPE_DECL: Element = Element {
    id: E::TypeDecl,
    name: "type",
    doc: "A named type, usable wherever a type is: {approved: boolean, findings: string[]}.",
    attrs: &[required("name", Identifier, "The type's name.")],
    content: Content::Text(Type),
    xsd_type: Some("TypeDeclaration"),
};

pub(super) const TEST: Element = Element {
    id: E::Test,
    name: "test",
    doc: "A test of an entry point, run offline by `tvm test`: arguments, replies, expectations.",
    attrs: &[
        required("name", Text, "What the test shows, as a sentence."),
        required(
            "entry",
            Identifier,
            "The entry point (template or named task) the test runs.",
        ),
    ],
    content: any_of(&[E::TestArg, E::Reply, E::Cassette, E::Expect]),
    xsd_type: Some("Test"),
};

pub(super) const TEST_ARG: Element = Element {
    id: E::TestArg,
    name: "arg",
    doc:
        "An argument of the entry point: its value as text, or file=\"...\" to read it from a file.",
    attrs: &[
        required("name", Identifier, "The parameter's name."),
        attr(
            "file",
            Text,
            "A file whose contents are the value, relative to the test's file.",
        ),
    ],
    content: Content::Text(Text),
    xsd_type: None,
};

pub(super) const REPLY: Element = Element {
    id: E::Reply,
    name: "reply",
    doc: "An offline reply of the model: the text, to requests that contain `match` when given.",
    attrs: &[attr(
        "match",
        Text,
        "A substring of the request this reply answers.",
    )],
    content: Content::Text(Text),
    xsd_type: None,
};

pub(super) const CASSETTE: Element = Element {
    id: E::Cassette,
    name: "cassette",
    doc: "A recorded cassette whose replies answer the test's model calls.",
    attrs: &[required(
        "path",
        Text,
        "The cassette file, relative to the test's file.",
    )],
    content: Content::Empty,
    xsd_type: None,
};

pub(super) const EXPECT: Element = Element {
    id: E::Expect,
    name: "expect",
    doc: "What the result must be: a value at `path` equal to or containing a text, or the status.",
    attrs: &[
        attr(
            "path",
            Text,
            "Where in the result to look, e.g. parsedContent.approved or content.",
        ),
        attr(
            "equals",
            Text,
            "The value there must be this (JSON, or text).",
        ),
        attr("contains", Text, "The text there must contain this."),
        attr(
            "status",
            Words(Status::LIST),
            "The result's status: COMPLETE, FAILED or CONTINUATION.",
        ),
    ],
    content: Content::Empty,
    xsd_type: None,
};
