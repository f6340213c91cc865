//! The entries of the language table, by area, and what several entries share: the
//! attributes of a task and of a slot, the groups of a task's fields and of a body.
//! Entries are built with the small `const fn`s below, so that each reads as one line
//! per attribute.

pub(super) mod fields;
pub(super) mod library;
pub(super) mod parts;
pub(super) mod tasks;

use super::{Attr, Children, Content, Element, ElementId, Group, Occurs, ValueKind};

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
