//! `tvc check --emit xml`: the element trees with `line:col` of every node.

use super::{Element, Node, XmlDoc};
use crate::source::{FileId, Span};
use std::fmt::Write as _;

/// The element trees as an indented listing with `line:col` of every node
/// (`tvc check --emit xml`).
pub fn dump_docs(docs: &[Option<XmlDoc>], sources: &crate::source::SourceMap) -> String {
    let mut out = String::new();
    for (i, doc) in docs.iter().enumerate() {
        let file = sources.get(FileId(i as u32));
        if file.std {
            continue;
        }
        let _ = writeln!(out, "== {}", file.path.display());
        if let Some(root) = doc.as_ref().and_then(|d| d.root.as_ref()) {
            dump_element(root, file, 0, &mut out);
        }
    }
    out
}

fn dump_element(el: &Element, file: &crate::source::SourceFile, depth: usize, out: &mut String) {
    let pos = |s: Span| {
        let (l, c) = file.line_col(s.start as usize);
        format!("{l}:{c}")
    };
    let pad = "  ".repeat(depth);
    let _ = writeln!(out, "{pad}<{}> {}", el.name, pos(el.name_span));
    for a in &el.attrs {
        let _ = writeln!(
            out,
            "{pad}  @{}={:?} {}",
            a.name,
            a.value.value,
            pos(a.value.span)
        );
    }
    for n in &el.children {
        match n {
            Node::Element(e) => dump_element(e, file, depth + 1, out),
            Node::Text(t) if t.value.trim().is_empty() => {}
            Node::Text(t) => {
                let _ = writeln!(out, "{pad}  {:?} {}", t.value.trim(), pos(t.trimmed_span()));
            }
        }
    }
}
