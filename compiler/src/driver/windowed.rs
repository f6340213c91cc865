//! `tvc compile`'s bundle, made a window of items at a time: the bytes are those of
//! [`super::bundle_bytes`] of [`super::compile`]'s bundle, but the syntax trees, the
//! IR and the decoded bundle of a large library are never in memory whole.

use super::again::{items_again, BUILD_AGAIN};
use super::Compilation;
use crate::ast::{Item, Program};
use crate::check::Symbols;
use crate::codegen::Writer;
use crate::diag::Diagnostics;
use crate::ir;
use crate::lower::Windows;
use crate::source::{FileId, SourceMap};
use crate::timings::Timings;
use rustc_hash::FxHashSet as HashSet;

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

/// [`compile_to_bytes`] with windows of `window` items (tests try small ones). A
/// compilation whose bundle was made as it was checked gives that bundle.
pub fn compile_to_bytes_in(
    c: &mut Compilation,
    timings: &mut Timings,
    window: usize,
) -> Result<Vec<u8>, Diagnostics> {
    if c.diags.has_errors() {
        return Err(Diagnostics::new());
    }
    if let Some(made) = c.bundle.take() {
        return made;
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
    let needed = crate::lower::reachable_std(&c.program, &c.symbols);
    let mut lowering = Lowering::new(&c.program, &needed, sources);
    // The heads are read by the plan only.
    for (module, _) in &outlined {
        c.program.modules[*module].heads = Some(Vec::new());
    }
    // The user's items come first in function order, the standard templates last.
    for (module, file) in outlined {
        let mut add = |first: usize, items: Vec<Item>| {
            lowering.again(module, first, items, &c.symbols, timings);
        };
        let again = items_again(file, sources.get(file), &c.resolved, window, &mut add);
        timings.add(BUILD_AGAIN, again);
    }
    lowering.finish(&mut c.program, &mut c.symbols, window, timings)
}

/// A program being lowered a window at a time: its numbering, what the windows made
/// so far, and the names of the entry points.
pub(super) struct Lowering<'a> {
    windows: Windows<'a>,
    made: Made,
    names: Vec<String>,
    sources: &'a SourceMap,
}

impl<'a> Lowering<'a> {
    /// The lowering of `program`, with the standard templates `needed`.
    pub(super) fn new(program: &Program, needed: &HashSet<String>, sources: &'a SourceMap) -> Self {
        let (windows, names) = Windows::new(program, needed, sources);
        Lowering {
            windows,
            made: Made::default(),
            names,
            sources,
        }
    }

    /// Lowers the items of module `module` built again from the file, from place
    /// `first` on: those that come next in function order.
    pub(super) fn again(
        &mut self,
        module: usize,
        first: usize,
        items: Vec<Item>,
        symbols: &Symbols,
        t: &mut Timings,
    ) {
        let items = self.windows.keep(module, (first..).zip(items).collect());
        self.made
            .window(items, &mut self.windows, symbols, self.sources, t);
    }

    /// Lowers the items left, which `program` holds (the standard templates, or
    /// every item of a program held whole), and puts the bundle together. `symbols`
    /// and the items' heads are used up.
    pub(super) fn finish(
        mut self,
        program: &mut Program,
        symbols: &mut Symbols,
        window: usize,
        t: &mut Timings,
    ) -> Result<Vec<u8>, Diagnostics> {
        loop {
            let items = self.windows.take(program, window.max(1));
            if items.is_empty() {
                break;
            }
            self.made
                .window(items, &mut self.windows, symbols, self.sources, t);
        }
        // Nothing more is lowered: what lowering reads is freed before the bundle's
        // bytes are put together, while its pieces are still held.
        drop(self.windows);
        *symbols = Symbols::default();
        for heads in program.modules.iter_mut().filter_map(|m| m.heads.as_mut()) {
            *heads = Vec::new();
        }
        self.made.finish(self.names, self.sources, t)
    }
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
        symbols: &Symbols,
        sources: &SourceMap,
        t: &mut Timings,
    ) {
        if items.is_empty() {
            return;
        }
        let mut lowered = t.time("lower to IR", || windows.lower(&items, symbols));
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
