//! Lowering a window of items at a time, for `tvc compile`
//! ([`crate::driver::compile_to_bytes`]): the items are moved out of the syntax tree in
//! function order, and each window's are freed once lowered, so that the trees and
//! the IR of a large library are never in memory whole at once. The windows number
//! their tasks and branch functions on from the windows before them, so the IR is
//! the IR [`super::lower`] makes, a window at a time.

use super::{Numbers, Part, Plan, Shift};
use crate::ast::{self, Item};
use crate::check::Symbols;
use crate::ir;
use crate::source::SourceMap;
use rustc_hash::FxHashSet as HashSet;
use std::sync::Arc;
use tv_vm::bundle::TaskMeta;

/// The items still to lower, and the numbering so far.
pub(crate) struct Windows<'a> {
    numbers: Numbers,
    sources: &'a SourceMap,
    tasks_before: u32,
    branches_before: u32,
    /// Where each item still to lower is, in function order: module, place.
    places: std::vec::IntoIter<(usize, usize)>,
    /// Each module's items, taken out of the program at its first window, and the
    /// place of the next one.
    modules: Vec<Option<(usize, std::vec::IntoIter<Item>)>>,
}

/// A window lowered: its items' functions, the branch functions they made, their tasks.
#[derive(Default)]
pub(crate) struct Lowered {
    pub functions: Vec<ir::Function>,
    pub branches: Vec<ir::Function>,
    pub tasks: Vec<Arc<TaskMeta>>,
}

impl<'a> Windows<'a> {
    /// The numbering of `program`'s items, with the standard templates `needed`
    /// (those of [`super::reachable_std`]; the others are dropped as they are
    /// passed); also the names of the entry points, in order.
    pub(crate) fn new(
        program: &ast::Program,
        needed: &HashSet<String>,
        sources: &'a SourceMap,
    ) -> (Self, Vec<String>) {
        let plan = Plan::new(program, needed);
        let (places, numbers, users) = (plan.places, plan.numbers, plan.user_items);
        let entries = places[..users]
            .iter()
            .filter_map(|&(m, i)| Some(program.modules[m].name_at(i)?.node.clone()))
            .collect();
        let windows = Windows {
            numbers,
            sources,
            tasks_before: 0,
            branches_before: 0,
            places: places.into_iter(),
            modules: program.modules.iter().map(|_| None).collect(),
        };
        (windows, entries)
    }

    /// The next `n` items in function order that `program` holds (fewer at the end,
    /// none when all are taken).
    pub(crate) fn take(&mut self, program: &mut ast::Program, n: usize) -> Vec<Item> {
        let mut out = Vec::with_capacity(n.min(self.places.len()));
        for (m, i) in self.places.by_ref().take(n) {
            let (Some(slot), Some(module)) = (self.modules.get_mut(m), program.modules.get_mut(m))
            else {
                continue;
            };
            let (next, items) =
                slot.get_or_insert_with(|| (0, std::mem::take(&mut module.items).into_iter()));
            // Places in a module only grow: skip (and free) the items between.
            let skipped = i.saturating_sub(*next);
            *next = i + 1;
            if let Some(item) = items.nth(skipped) {
                out.push(item);
            }
        }
        out
    }

    /// Of the items of module `module` that it does not hold, built again and given
    /// with their places in it, those next in function order (the others are
    /// dropped, as [`Windows::take`] skips them).
    pub(crate) fn keep(&mut self, module: usize, items: Vec<(usize, Item)>) -> Vec<Item> {
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items {
            if self.places.as_slice().first() == Some(&(module, i)) {
                self.places.next();
                out.push(item);
            }
        }
        out
    }

    /// The IR of `items`, the next window, numbered after the windows before it.
    pub(crate) fn lower(&mut self, items: &[Item], symbols: &Symbols) -> Lowered {
        let (numbers, sources) = (&self.numbers, self.sources);
        let mut parts: Vec<(Shift, Part)> =
            crate::parallel::map_chunks(items, crate::parallel::MIN_ITEMS_PER_WORKER, |chunk| {
                numbers.part(chunk.iter(), symbols, sources)
            })
            .into_iter()
            .map(|part| {
                let shift = Shift {
                    items: self.numbers.total,
                    tasks: self.tasks_before,
                    branches: self.branches_before,
                };
                self.tasks_before = ir::id(part.tasks.len()).saturating_add(self.tasks_before);
                self.branches_before =
                    ir::id(part.branches.len()).saturating_add(self.branches_before);
                (shift, part)
            })
            .collect();
        crate::parallel::each_mut(&mut parts, |(shift, part)| {
            if shift.tasks > 0 || shift.branches > 0 {
                for f in part.functions.iter_mut().chain(&mut part.branches) {
                    shift.node(&mut f.body);
                }
            }
        });
        let mut out = Lowered::default();
        for (_, mut part) in parts {
            out.functions.append(&mut part.functions);
            out.branches.append(&mut part.branches);
            out.tasks.append(&mut part.tasks);
        }
        out
    }
}
