//! Reading again a file whose items were outlined, a window of items at a time: the
//! second reading of an outlined compilation, which the bundle made as it is checked
//! ([`super::outlined`]) and `tvc compile`'s windows ([`super::windowed`]) both need.

use crate::ast::{self, Item};
use crate::diag::Diagnostics;
use crate::source::{FileId, SourceFile};
use crate::xml;
use std::time::{Duration, Instant};

/// The stage that builds the items of outlined files again, for checking and lowering.
pub(super) const BUILD_AGAIN: &str = "read XML and build syntax trees again";

/// Reads `file` again and builds its items, handing them to `f` in order, `window`
/// at a time, with the place of the first in the file; their types are resolved
/// with `resolved`. The diagnostics of this reading are those of the first, and
/// are dropped. The time it took, without `f`'s.
pub(super) fn items_again(
    id: FileId,
    file: &SourceFile,
    resolved: &ast::Resolved,
    window: usize,
    f: &mut dyn FnMut(usize, Vec<Item>),
) -> Duration {
    let start = Instant::now();
    let mut in_f = Duration::ZERO;
    let mut next = 0;
    let mut hand = |items: Vec<Item>| {
        let (count, start) = (items.len(), Instant::now());
        f(next, items);
        next += count;
        in_f += start.elapsed();
    };
    let mut entries: Vec<xml::Element> = Vec::new();
    let build = |entries: &mut Vec<xml::Element>| {
        let built =
            crate::parallel::map_chunks(entries, crate::parallel::MIN_ITEMS_PER_WORKER, |chunk| {
                let mut items = ast::build_entries(chunk).items;
                items
                    .iter_mut()
                    .for_each(|i| ast::apply_resolved(resolved, i));
                items
            });
        entries.clear();
        built.into_iter().flatten().collect::<Vec<Item>>()
    };
    let mut dropped = Diagnostics::new();
    let doc = xml::parse_streaming(id, &file.text, &mut dropped, &mut |el| {
        entries.push(el);
        if entries.len() >= window {
            hand(build(&mut entries));
        }
    });
    if !entries.is_empty() {
        hand(build(&mut entries));
    }
    let mut root = ast::build_module(id, file, &doc, &mut dropped).items;
    if !root.is_empty() {
        root.iter_mut()
            .for_each(|i| ast::apply_resolved(resolved, i));
        hand(root);
    }
    start.elapsed().saturating_sub(in_f)
}
