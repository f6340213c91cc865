//! `tvc compile`'s bundle, made a window of items at a time: the bytes are those of
//! [`super::bundle_bytes`] of [`super::compile`]'s bundle, but the syntax trees, the
//! IR and the decoded bundle of a large library are never in memory whole.

use super::{outlined, Compilation};
use crate::ast::Item;
use crate::check::Symbols;
use crate::codegen::Writer;
use crate::diag::Diagnostics;
use crate::ir;
use crate::lower::Windows;
use crate::source::{FileId, SourceMap};
use crate::timings::Timings;

/// Items lowered, generated and encoded together by [`compile_to_bytes`]: enough to
/// keep every core busy, few enough that a window's IR is small beside the program.
pub const WINDOW: usize = 4096;

/// `tvc compile`: the bundle's bytes, the same as [`super::bundle_bytes`] of
/// [`super::compile`]'s bundle, made [`WINDOW`] items at a time: each window is lowered, its functions
/// generated and encoded, and its syntax trees and IR freed, so that the trees, the IR
/// and the bundle of a large library are never all in memory. The compilation's
/// syntax trees and symbols are used up.
pub fn compile_to_bytes(
    c: &mut Compilation,
    timings: &mut Timings,
) -> Result<Vec<u8>, Diagnostics> {
    compile_to_bytes_in(c, timings, WINDOW)
}

/// [`compile_to_bytes`] with windows of `window` items (tests try small ones).
pub fn compile_to_bytes_in(
    c: &mut Compilation,
    timings: &mut Timings,
    window: usize,
) -> Result<Vec<u8>, Diagnostics> {
    if c.diags.has_errors() {
        return Err(Diagnostics::new());
    }
    let sources = &c.sources;
    // Modules that hold their items' heads only: their items are built again.
    let outlined: Vec<(usize, FileId)> = c
        .program
        .modules
        .iter()
        .enumerate()
        .filter(|(_, m)| m.heads.is_some())
        .map(|(i, m)| (i, m.file))
        .collect();
    let (mut windows, names) = Windows::new(&mut c.program, &c.symbols, sources);
    let mut made = Made::default();
    // The user's items come first in function order, the standard templates last.
    for (module, file) in outlined {
        let mut add = |first: usize, items: Vec<Item>| {
            let items = windows.keep(module, (first..).zip(items).collect());
            made.window(items, &mut windows, sources, timings);
        };
        let again = outlined::items_again(file, sources.get(file), &c.resolved, window, &mut add);
        timings.add(outlined::BUILD_AGAIN, again);
    }
    loop {
        let items = windows.take(window.max(1));
        if items.is_empty() {
            break;
        }
        made.window(items, &mut windows, sources, timings);
    }
    // Nothing more is lowered: what lowering reads is freed before the bundle's bytes
    // are put together, while its pieces are still held.
    drop(windows);
    c.symbols = Symbols::default();
    made.finish(names, sources, timings)
}

/// What the windows made so far: their functions and tasks encoded, and the branch
/// functions, which come after every item's.
#[derive(Default)]
struct Made {
    writer: Writer,
    branches: Vec<ir::Function>,
}

impl Made {
    /// Lowers, generates and encodes the next window, freeing its trees and IR.
    fn window(
        &mut self,
        items: Vec<Item>,
        windows: &mut Windows,
        sources: &SourceMap,
        t: &mut Timings,
    ) {
        if items.is_empty() {
            return;
        }
        let mut lowered = t.time("lower to IR", || windows.lower(&items));
        drop(items);
        let writer = &mut self.writer;
        t.time("generate bytecode", || {
            writer.add(&lowered.functions, sources)
        });
        drop(std::mem::take(&mut lowered.functions));
        t.time("encode the bundle", || writer.encode());
        self.branches.append(&mut lowered.branches);
        t.time("encode the bundle", || writer.add_tasks(&lowered.tasks));
    }

    /// The bundle's bytes, its entry points being the first of its functions.
    fn finish(
        mut self,
        names: Vec<String>,
        sources: &SourceMap,
        t: &mut Timings,
    ) -> Result<Vec<u8>, Diagnostics> {
        let (writer, branches) = (&mut self.writer, &self.branches);
        t.time("generate bytecode", || writer.add(branches, sources));
        drop(self.branches);
        let entries: Vec<tv_vm::bundle::Entry> = names
            .into_iter()
            .enumerate()
            .map(|(i, name)| tv_vm::bundle::Entry {
                name,
                function: ir::id(i),
            })
            .collect();
        t.time("encode the bundle", || {
            self.writer.finish(&entries, sources)
        })
        .map_err(|errors| {
            let mut diags = Diagnostics::new();
            errors.into_iter().for_each(|d| diags.push(d));
            diags
        })
    }
}
