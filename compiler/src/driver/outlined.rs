//! `tvc compile` of a large program without holding its syntax trees: the trees of a
//! library of one-line templates take ten times its text. Each user file is read three
//! times, a window of items at a time: first to build each item's outline (name,
//! signature, what its return type is made of, see `check::Outline`) and its
//! diagnostics, then to check the items' bodies against the outlines of all, then,
//! when nothing was wrong, to lower them ([`super::compile_to_bytes`]). Every reading
//! builds the same items from the same text; the diagnostics and the bundle are those
//! of [`super::check_sources`] and [`super::compile`].

use super::{read_file, Compilation, READ_AND_BUILD};
use crate::ast::{self, Item, Program};
use crate::check::{self, Outline};
use crate::diag::Diagnostics;
use crate::source::{FileId, SourceFile, SourceMap};
use crate::timings::Timings;
use crate::xml;
use rustc_hash::FxHashSet as HashSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Programs whose own files hold at least this many tags (`<`) are compiled by
/// `tvc compile` holding a window of syntax trees at a time. A program's trees take
/// about 150 bytes a tag beside its text, so these would take 150 MB and more: held
/// whole, a library of one-line templates peaks at 19 times its text, one of
/// templates of a screenful at 11 times. Smaller ones are read once and held whole,
/// which is faster: each further reading costs about a sixth of a compile.
pub const OUTLINE_TAGS: usize = 1 << 20;

/// Whether `tvc compile` holds outlines of a program whose files hold `tags` tags.
pub fn outlines(tags: usize) -> bool {
    tags >= OUTLINE_TAGS
}

/// The tags of `text`: what its syntax trees' size goes by.
fn tags(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'<').count()
}

/// The stage that builds the items of outlined files again, for checking and lowering.
pub(super) const BUILD_AGAIN: &str = "read XML and build syntax trees again";

/// `tvc compile`'s check: [`super::check_paths`], or, for a program of at least
/// [`OUTLINE_TAGS`] tags, [`check_paths_outlined`] with windows of [`super::WINDOW`]
/// items.
pub fn check_paths_to_compile(paths: &[PathBuf]) -> Result<Compilation, String> {
    let start = Instant::now();
    let files = super::collect_paths(paths)?;
    let (sources, diags, unusable) = super::load(&files);
    let tags: usize = sources.files().map(|(_, f)| tags(&f.text)).sum();
    let window = outlines(tags).then_some(super::WINDOW);
    Ok(loaded(start, sources, diags, unusable, window))
}

/// [`super::check_paths`] of a program whose user files are held as outlines, their
/// items built again `window` at a time when they are checked and lowered.
pub fn check_paths_outlined(paths: &[PathBuf], window: usize) -> Result<Compilation, String> {
    let start = Instant::now();
    let files = super::collect_paths(paths)?;
    let (sources, diags, unusable) = super::load(&files);
    Ok(loaded(start, sources, diags, unusable, Some(window)))
}

/// Checks loaded sources, outlined when `window` is given; the loading counts as a
/// stage of its own.
fn loaded(
    start: Instant,
    sources: SourceMap,
    diags: Diagnostics,
    unusable: HashSet<FileId>,
    window: Option<usize>,
) -> Compilation {
    let took = start.elapsed();
    let mut c = match window {
        Some(window) => check_sources_outlined(sources, diags, unusable, window),
        None => super::check_sources(sources, diags, unusable),
    };
    let mut timings = Timings::default();
    timings.add("load files", took);
    c.timings
        .stages()
        .iter()
        .for_each(|&(s, d)| timings.add(s, d));
    c.timings = timings;
    c
}

/// [`super::check_sources`], holding each user file's items as outlines: the
/// compilation's modules of user files have their items' heads instead of their items.
pub fn check_sources_outlined(
    mut sources: SourceMap,
    mut diags: Diagnostics,
    unusable: HashSet<FileId>,
    window: usize,
) -> Compilation {
    for (path, text) in tv_stdlib::templates::TEMPLATES {
        sources.add_std(path, text);
    }
    let window = window.max(1);
    let mut timings = Timings::default();
    let start = Instant::now();
    let first = first_reading(&sources, &unusable, window, &mut diags);
    timings.add(READ_AND_BUILD, start.elapsed());
    let FirstReading {
        mut program,
        outlines,
        mut later,
        broken,
    } = first;
    let start = Instant::now();
    // Types may name declarations of any file: they are resolved once all are read.
    let resolved = ast::resolve_types(&mut program, &mut later);
    let outlines = resolve_outlines(&program, outlines, &resolved);
    let mut again = Duration::ZERO;
    let symbols = {
        let (program, sources) = (&program, &sources);
        let mut bodies = |check: &mut dyn FnMut(&[Item])| {
            for module in &program.modules {
                if module.std {
                    check(&module.items);
                    continue;
                }
                let file = sources.get(module.file);
                let mut add = |_: usize, items: Vec<Item>| check(&items);
                again += items_again(module.file, file, &resolved, window, &mut add);
            }
        };
        check::check_outlined(program, &outlines, &mut bodies, &mut later)
    };
    timings.add("check", start.elapsed().saturating_sub(again));
    timings.add(BUILD_AGAIN, again);
    // What lowering reads of the items it will build again.
    for (module, outlines) in program.modules.iter_mut().zip(outlines) {
        if !module.std {
            module.heads = Some(outlines.into_iter().map(|o| o.head).collect());
        }
    }
    super::add_shown(&mut diags, later, &broken);
    Compilation {
        sources,
        unusable,
        program,
        symbols,
        diags,
        timings,
        resolved,
    }
}

/// What the first reading of every file gave: the modules (the standard templates'
/// with their items, the user files' without), each module's outlines when it does
/// not hold its items, the diagnostics of the syntax trees, and the files whose XML
/// could not be read to the end.
struct FirstReading {
    program: Program,
    outlines: Vec<Option<Vec<Outline>>>,
    later: Diagnostics,
    broken: HashSet<FileId>,
}

/// Reads every usable file, building the standard templates and outlining the user's
/// items; the XML's diagnostics go to `diags`.
fn first_reading(
    sources: &SourceMap,
    unusable: &HashSet<FileId>,
    window: usize,
    diags: &mut Diagnostics,
) -> FirstReading {
    let mut read = FirstReading {
        program: Program::default(),
        outlines: Vec::new(),
        later: Diagnostics::new(),
        broken: unusable.clone(),
    };
    for (id, file) in sources.files().filter(|(id, _)| !unusable.contains(id)) {
        let (mut xml_diags, mut tree_diags) = (Diagnostics::new(), Diagnostics::new());
        let (complete, module, outlines) = if file.std {
            let mut none = Timings::default();
            let (complete, module) =
                read_file(id, file, &mut xml_diags, &mut tree_diags, &mut none);
            (complete, module, None)
        } else {
            let (complete, module, outlines) =
                outline_file(id, file, window, &mut xml_diags, &mut tree_diags);
            (complete, module, Some(outlines))
        };
        diags.extend(xml_diags);
        read.later.extend(tree_diags);
        if !complete {
            read.broken.insert(id);
        }
        read.program.modules.push(module);
        read.outlines.push(outlines);
    }
    read
}

/// Every module's outlines, their types resolved: those read, and those of the items
/// held.
fn resolve_outlines(
    program: &Program,
    outlined: Vec<Option<Vec<Outline>>>,
    resolved: &ast::Resolved,
) -> Vec<Vec<Outline>> {
    program
        .modules
        .iter()
        .zip(outlined)
        .map(|(module, held)| match held {
            Some(mut outlines) => {
                outlines.iter_mut().for_each(|o| o.resolve(resolved));
                outlines
            }
            None => module.items.iter().map(Outline::of).collect(),
        })
        .collect()
}

/// The first reading of a user file: its module without its items, their outlines
/// in order, and whether its XML was read to the end. The entries of a `<library>`
/// are built a window at a time, each window's trees freed once outlined.
fn outline_file(
    id: FileId,
    file: &SourceFile,
    window: usize,
    xml_diags: &mut Diagnostics,
    tree_diags: &mut Diagnostics,
) -> (bool, ast::Module, Vec<Outline>) {
    let mut all = ast::Built::default();
    let mut outlines = Vec::new();
    let mut entries: Vec<xml::Element> = Vec::new();
    let mut outline = |entries: &mut Vec<xml::Element>| {
        let built =
            crate::parallel::map_chunks(entries, crate::parallel::MIN_ITEMS_PER_WORKER, |chunk| {
                let mut built = ast::build_entries(chunk);
                let items = std::mem::take(&mut built.items);
                (built, items.iter().map(Outline::of).collect::<Vec<_>>())
            });
        entries.clear();
        for (b, o) in built {
            all.extend(b);
            outlines.extend(o);
        }
    };
    let doc = xml::parse_streaming(id, &file.text, xml_diags, &mut |el| {
        entries.push(el);
        if entries.len() >= window {
            outline(&mut entries);
        }
    });
    outline(&mut entries);
    // A file whose root is a `<task>` or a `<template>` has its one item there.
    let mut module = ast::build_module_with(id, file, &doc, tree_diags, Some(all));
    outlines.extend(module.items.iter().map(Outline::of));
    module.items = Vec::new();
    outlines.shrink_to_fit();
    (doc.complete, module, outlines)
}

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
