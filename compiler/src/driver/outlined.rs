//! `tvc compile` of a large program without holding its syntax trees: the trees of a
//! library of one-line templates take ten times its text. Each user file is read
//! twice, a window of items at a time: first to build each item's outline (name,
//! signature, what its return type is made of, see `check::Outline`) and its
//! diagnostics, then to check the items' bodies against the outlines of all and, while
//! nothing is wrong, to lower them ([`super::windowed`]). Lowering numbers the
//! standard templates the program calls before its bodies say which those are: when
//! the plan, made from the text, was wrong, [`super::compile_to_bytes`] reads the
//! files a third time to lower them. Every reading builds the same items from the same
//! text; the diagnostics and the bundle are those of [`super::check_sources`] and
//! [`super::compile`].

use super::again::{items_again, BUILD_AGAIN};
use super::windowed::Lowering;
use super::{read_file, Compilation, READ_AND_BUILD};
use crate::ast::{self, Item, Program};
use crate::check::{Outline, Symbols};
use crate::diag::Diagnostics;
use crate::source::{FileId, SourceFile, SourceMap};
use crate::timings::Timings;
use crate::xml;
use rustc_hash::FxHashSet as HashSet;
use std::path::PathBuf;
use std::time::Instant;

/// Programs whose own files hold at least this many tags (`<`) are compiled by
/// `tvc compile` holding a window of syntax trees at a time. A program's trees take
/// about 150 bytes a tag beside its text, so these would take 150 MB and more: held
/// whole, a library of one-line templates peaks at 19 times its text (one of
/// templates of a screenful, with a sixth of the tags, at 9 times). Smaller ones are
/// read once and held whole, which is faster: the second reading adds under a tenth
/// to a compile's time.
pub const OUTLINE_TAGS: usize = 1 << 20;

/// Whether `tvc compile` holds outlines of a program whose files hold `tags` tags.
pub fn outlines(tags: usize) -> bool {
    tags >= OUTLINE_TAGS
}

/// The tags of `text`: what its syntax trees' size goes by.
fn tags(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'<').count()
}

/// How a program is checked from outlines.
#[derive(Clone, Copy, Debug)]
pub struct Outlined {
    /// How many items are built at a time when the files are read again.
    pub window: usize,
    /// Whether to make the bundle as the bodies are checked (`tvc compile -o`): when
    /// nothing was wrong, the compilation holds its bytes.
    pub bundle: bool,
}

/// `tvc compile`'s check: [`super::check_paths`], or, for a program of at least
/// [`OUTLINE_TAGS`] tags, [`check_paths_outlined`] with windows of [`super::WINDOW`]
/// items, making the bundle as it goes when `bundle`.
pub fn check_paths_to_compile(paths: &[PathBuf], bundle: bool) -> Result<Compilation, String> {
    let start = Instant::now();
    let files = super::collect_paths(paths)?;
    let (sources, diags, unusable) = super::load(&files);
    let tags: usize = sources.files().map(|(_, f)| tags(&f.text)).sum();
    let how = outlines(tags).then_some(Outlined {
        window: super::WINDOW,
        bundle,
    });
    Ok(loaded(start, sources, diags, unusable, how))
}

/// [`super::check_paths`] of a program whose user files are held as outlines, their
/// items built again a window at a time when they are checked and lowered.
pub fn check_paths_outlined(paths: &[PathBuf], how: Outlined) -> Result<Compilation, String> {
    let start = Instant::now();
    let files = super::collect_paths(paths)?;
    let (sources, diags, unusable) = super::load(&files);
    Ok(loaded(start, sources, diags, unusable, Some(how)))
}

/// Checks loaded sources, from outlines when `how` is given; the loading counts as a
/// stage of its own.
fn loaded(
    start: Instant,
    sources: SourceMap,
    diags: Diagnostics,
    unusable: HashSet<FileId>,
    how: Option<Outlined>,
) -> Compilation {
    let took = start.elapsed();
    let mut c = match how {
        Some(how) => check_sources_outlined(sources, diags, unusable, how),
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
/// The files are read a second time, a window of items at a time, to check the
/// bodies and, when asked and while nothing is wrong, to lower them.
pub(crate) fn check_sources_outlined(
    mut sources: SourceMap,
    mut diags: Diagnostics,
    unusable: HashSet<FileId>,
    how: Outlined,
) -> Compilation {
    for (path, text) in tv_stdlib::templates::TEMPLATES {
        sources.add_std(path, text);
    }
    let window = how.window.max(1);
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
    let mut symbols = Symbols::of_outlines(&program, &outlines, &mut later);
    // What the later stages read of the items built again.
    for (module, outlines) in program.modules.iter_mut().zip(outlines) {
        if !module.std {
            module.heads = Some(outlines.into_iter().map(|o| o.head).collect());
        }
    }
    // The standard templates first: what they call decides the lowering's plan.
    for module in program.modules.iter().filter(|m| m.std) {
        symbols.check_bodies(&module.items, &mut later);
    }
    timings.add("check", start.elapsed());
    let mut lowering = (how.bundle && !diags.has_errors() && !later.has_errors())
        .then(|| Bundling::new(&program, &symbols, &sources));
    let mut second = Second {
        symbols: &mut symbols,
        lowering: &mut lowering,
        later: &mut later,
        timings: &mut timings,
    };
    second.read(&program, &sources, &resolved, window);
    symbols.warn_cycles(&program, &mut later);
    let bundle = lowering.and_then(|l| l.finish(&mut program, &mut symbols, window, &mut timings));
    super::add_shown(&mut diags, later, &broken);
    Compilation {
        sources,
        unusable,
        program,
        symbols,
        diags,
        timings,
        resolved,
        bundle,
    }
}

/// A bundle being made as the bodies are checked, and the standard templates it was
/// planned with.
struct Bundling<'a> {
    lowering: Lowering<'a>,
    planned: HashSet<String>,
}

impl<'a> Bundling<'a> {
    /// The items are numbered before the bodies that say which standard templates they
    /// call are checked: the plan takes those whose name the user's files hold, and
    /// those these call. A name written only in a comment or a prompt makes the plan
    /// wrong, and the bundle is made again afterwards.
    fn new(program: &Program, symbols: &Symbols, sources: &'a SourceMap) -> Self {
        let user = program.modules.iter().filter(|m| !m.std);
        let texts: Vec<&[u8]> = user.map(|m| sources.get(m.file).text.as_bytes()).collect();
        let std = program.modules.iter().filter(|m| m.std);
        let named: Vec<&str> = std
            .flat_map(|m| m.names().map(|n| n.node.as_str()))
            .filter(|name| {
                let find = memchr::memmem::Finder::new(name.as_bytes());
                texts.iter().any(|text| find.find(text).is_some())
            })
            .collect();
        let mut planned = crate::lower::std_called(program, symbols, named.clone());
        planned.extend(named.into_iter().map(String::from));
        Bundling {
            lowering: Lowering::new(program, &planned, sources),
            planned,
        }
    }

    /// The bundle, unless the plan was wrong.
    fn finish(
        self,
        program: &mut Program,
        symbols: &mut Symbols,
        window: usize,
        t: &mut Timings,
    ) -> Option<Result<Vec<u8>, Diagnostics>> {
        if crate::lower::reachable_std(program, symbols) != self.planned {
            return None;
        }
        Some(self.lowering.finish(program, symbols, window, t))
    }
}

/// The second reading: each window of items built again is checked, then lowered
/// while nothing is wrong.
struct Second<'s, 'a> {
    symbols: &'s mut Symbols,
    lowering: &'s mut Option<Bundling<'a>>,
    later: &'s mut Diagnostics,
    timings: &'s mut Timings,
}

impl Second<'_, '_> {
    fn read(
        &mut self,
        program: &Program,
        sources: &SourceMap,
        resolved: &ast::Resolved,
        window: usize,
    ) {
        let user = program.modules.iter().enumerate().filter(|(_, m)| !m.std);
        for (module, m) in user {
            let file = sources.get(m.file);
            let mut add = |first: usize, items: Vec<Item>| self.window(module, first, items);
            let again = items_again(m.file, file, resolved, window, &mut add);
            self.timings.add(BUILD_AGAIN, again);
        }
    }

    fn window(&mut self, module: usize, first: usize, items: Vec<Item>) {
        let (symbols, later) = (&mut *self.symbols, &mut *self.later);
        self.timings
            .time("check", || symbols.check_bodies(&items, later));
        if later.has_errors() {
            *self.lowering = None;
        }
        if let Some(b) = self.lowering.as_mut() {
            b.lowering
                .again(module, first, items, self.symbols, self.timings);
        }
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
