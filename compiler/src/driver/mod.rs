//! The driver: finds the files, runs the stages in order and decides, from the
//! diagnostics they return, whether the program is usable.

use crate::ast::{self, Program};
use crate::check::{self, Symbols};
use crate::diag::{Diagnostic, Diagnostics};
use crate::source::{FileId, SourceFile, SourceMap, Span};
use crate::timings::Timings;
use crate::xml;
use rustc_hash::FxHashSet as HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

mod again;
mod outlined;
mod windowed;
pub use outlined::{
    check_paths_outlined, check_paths_to_compile, outlines, Outlined, OUTLINE_TAGS,
};
pub use windowed::{compile_to_bytes, compile_to_bytes_in, WINDOW};

/// Programs with several files and at least this much text read their files on all
/// cores.
const PARALLEL_READ_BYTES: usize = 256 * 1024;

/// Files larger than this are refused before they are read into memory.
pub(crate) const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// How the driver works, set once per process by its caller (the `tvc` binary reads
/// them from its environment; the compiler reads no variable).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Threads for the parallel stages; unset, one per core (`TVC_THREADS`).
    pub threads: Option<usize>,
}

/// Sets `options` for the compilations of this process. Taken before the first
/// compilation only: its worker threads are kept for the next. Whether they were taken.
pub fn configure(options: Options) -> bool {
    match options.threads {
        Some(n) => crate::parallel::set_threads(n),
        None => true,
    }
}

/// Everything the front end produced for one program. The XML trees are not kept: each
/// is freed once its syntax tree is built ([`xml_docs`] reads them again).
#[derive(Debug)]
pub struct Compilation {
    pub sources: SourceMap,
    /// Files that could not be read as UTF-8 text, which have no XML tree.
    pub unusable: HashSet<FileId>,
    pub program: Program,
    pub symbols: Symbols,
    pub diags: Diagnostics,
    /// How long each stage took.
    pub timings: Timings,
    /// The types that name declared ones, resolved: items built again (the modules
    /// that hold their items' heads instead, see [`check_paths_outlined`]) are
    /// resolved with them.
    pub resolved: ast::Resolved,
    /// The bundle's bytes (or the errors of counts too large for the bytecode), when
    /// they were made as the program was checked: [`compile_to_bytes`] gives them.
    pub bundle: Option<Result<Vec<u8>, Diagnostics>>,
}

/// Expands directories into the `*.xml` files below them, sorted, so that a program
/// is the same whatever order the file system lists it in.
pub(crate) fn collect_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk(p, &mut Vec::new(), &mut found)?;
            found.sort();
            if found.is_empty() {
                return Err(format!("{}: no *.xml files in this directory", p.display()));
            }
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// The `*.xml` files below `dir`. Links are followed, as a user who links a folder in
/// means its templates; a link back to a directory being walked (`above`, by its real
/// path) would be followed forever, so it is refused. Files found that are not regular
/// files are kept here and refused by [`read`], naming them.
fn walk(dir: &Path, above: &mut Vec<PathBuf>, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("{}: {e}", dir.display());
    let real = std::fs::canonicalize(dir).map_err(fail)?;
    if let Some(first) = above.iter().find(|a| **a == real) {
        return Err(format!(
            "{}: this directory is {} again, through a symbolic link: a directory loop is not followed",
            dir.display(),
            first.display()
        ));
    }
    above.push(real);
    for entry in std::fs::read_dir(dir).map_err(fail)? {
        let path = entry.map_err(fail)?.path();
        if path.is_dir() {
            walk(&path, above, out)?;
        } else if path.extension().is_some_and(|e| e == "xml") {
            out.push(path);
        }
    }
    above.pop();
    Ok(())
}

/// Reads the files; an unreadable or non-UTF-8 file is a diagnostic, not a failure.
/// Each file's bundle name is set by [`bundle_names`].
pub fn load(paths: &[PathBuf]) -> (SourceMap, Diagnostics, HashSet<FileId>) {
    let mut sources = SourceMap::new();
    let mut diags = Diagnostics::new();
    let mut unusable = HashSet::default();
    for (path, name) in paths.iter().zip(bundle_names(paths)) {
        let (text, problem) = read(path);
        let id = sources.add(path.clone(), text);
        sources.set_name(id, name);
        if let Some((at, msg)) = problem {
            diags.push(Diagnostic::error(Span::new(id, at..at), msg));
            unusable.insert(id);
        }
    }
    (sources, diags, unusable)
}

/// The names a bundle records for `paths`: each file's path relative to the deepest
/// folder holding them all, with `/` between its parts (`review.xml` alone,
/// `lib/a.xml` and `main.xml` for `lib/a.xml` and `main.xml`). Folders are taken as the
/// system resolves them (links and `..` followed), so `t.xml`, `./t.xml`,
/// `dir/../t.xml`, an absolute path and a run from another working directory give the
/// same names, and the same sources the same bundle bytes. A journal, a cache key or
/// a batch's state names a bundle by those bytes. The file's own name is kept as
/// written: it names a root task.
pub fn bundle_names(paths: &[PathBuf]) -> Vec<String> {
    let folders: Vec<PathBuf> = paths.iter().map(|p| real_folder(p)).collect();
    let mut root: Option<&Path> = None;
    for folder in &folders {
        root = Some(match root {
            None => folder,
            Some(r) => common_ancestor(r, folder),
        });
    }
    let root = root.unwrap_or(Path::new(""));
    paths
        .iter()
        .zip(&folders)
        .map(|(path, folder)| {
            let within = folder.strip_prefix(root).unwrap_or(folder);
            let file = path.file_name().map(Path::new).unwrap_or(path);
            let parts: Vec<String> = within
                .join(file)
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            parts.join("/")
        })
        .collect()
}

/// The folder holding `path`, resolved by the system; when it cannot be (it went
/// away), made absolute and `.` and `..` taken out as written.
fn real_folder(path: &Path) -> PathBuf {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::canonicalize(folder).unwrap_or_else(|_| {
        let absolute = std::path::absolute(folder).unwrap_or_else(|_| folder.to_path_buf());
        let mut out = PathBuf::new();
        for c in absolute.components() {
            match c {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir => {
                    out.pop();
                }
                other => out.push(other),
            }
        }
        out
    })
}

/// The deepest folder both `a` and `b` are in (both absolute).
fn common_ancestor<'a>(a: &'a Path, b: &Path) -> &'a Path {
    let mut shared = a;
    while !b.starts_with(shared) {
        match shared.parent() {
            Some(up) => shared = up,
            None => break,
        }
    }
    shared
}

/// A file's text, checked before it is read: only a regular file of at most
/// [`MAX_FILE_BYTES`] is read. A device would be read forever (`/dev/zero`) and a FIFO
/// would wait for a writer; a file that grows while it is read is cut off at the limit.
fn read(path: &Path) -> (String, Option<(usize, String)>) {
    let refuse = |msg: String| (String::new(), Some((0, msg)));
    let too_large = || refuse(format!("file is larger than {} MiB", MAX_FILE_BYTES >> 20));
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return refuse(format!("cannot read the file: {e}")),
    };
    if !meta.is_file() {
        return refuse("not a regular file (a device, FIFO or socket), so it is not read".into());
    }
    if meta.len() > MAX_FILE_BYTES {
        return too_large();
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    let read = std::fs::File::open(path).and_then(|f| {
        use std::io::Read;
        f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)
    });
    match read {
        Err(e) => refuse(format!("cannot read the file: {e}")),
        Ok(n) if n as u64 > MAX_FILE_BYTES => too_large(),
        Ok(_) => from_bytes(bytes),
    }
}

/// The text of a file, or its readable part and where the first invalid byte is.
pub fn from_bytes(bytes: Vec<u8>) -> (String, Option<(usize, String)>) {
    match String::from_utf8(bytes) {
        Ok(text) => (text, None),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
            (
                text,
                Some((
                    at,
                    "the file is not valid UTF-8 (template files are UTF-8 text)".into(),
                )),
            )
        }
    }
}

/// Runs every front-end stage over loaded sources.
pub(crate) fn check_sources(
    mut sources: SourceMap,
    mut diags: Diagnostics,
    unusable: HashSet<FileId>,
) -> Compilation {
    for (path, text) in tv_stdlib::templates::TEMPLATES {
        sources.add_std(path, text);
    }
    let mut broken = unusable.clone();
    let mut later = Diagnostics::new();
    let mut program = Program::default();
    let mut timings = Timings::default();
    let files: Vec<(FileId, &SourceFile)> = sources.files().collect();
    let read = read_files(&files, &unusable, &mut timings);
    for (id, complete, module, xml_diags, tree_diags) in read.into_iter().flatten() {
        diags.extend(xml_diags);
        later.extend(tree_diags);
        if !complete {
            broken.insert(id);
        }
        program.modules.push(module);
    }
    // Types may name declarations of any file: they are resolved once all are built.
    let (symbols, resolved) = timings.time("check", || {
        let resolved = ast::resolve_types(&mut program, &mut later);
        (check::check_program(&program, &mut later), resolved)
    });
    add_shown(&mut diags, later, &broken);
    Compilation {
        sources,
        unusable,
        program,
        symbols,
        diags,
        timings,
        resolved,
        bundle: None,
    }
}

/// Adds the diagnostics found after reading (of the syntax trees and the checks) to
/// `diags`, but those of files in `broken`: a file the reader could not finish yields
/// a partial tree; what seems missing from it may only be unread, so only its syntax
/// error is shown.
fn add_shown(diags: &mut Diagnostics, later: Diagnostics, broken: &HashSet<FileId>) {
    for d in later.iter() {
        if !broken.contains(&d.span.file) {
            diags.push(d.clone());
        }
    }
}

/// What reading one file gave: whether its XML was read to the end, its module, and the
/// diagnostics of the XML and of the syntax tree.
type ReadFile = (FileId, bool, ast::Module, Diagnostics, Diagnostics);

/// Reads and builds every usable file (`None` for the others), in file order.
fn read_files(
    files: &[(FileId, &SourceFile)],
    unusable: &HashSet<FileId>,
    timings: &mut Timings,
) -> Vec<Option<ReadFile>> {
    let read = |chunk: &[(FileId, &SourceFile)], timings: &mut Timings| {
        chunk
            .iter()
            .map(|&(id, file)| {
                if unusable.contains(&id) {
                    return None;
                }
                let mut xml_diags = Diagnostics::new();
                let mut tree_diags = Diagnostics::new();
                let (complete, module) =
                    read_file(id, file, &mut xml_diags, &mut tree_diags, timings);
                Some((id, complete, module, xml_diags, tree_diags))
            })
            .collect::<Vec<_>>()
    };
    let bytes: usize = files.iter().map(|(_, f)| f.text.len()).sum();
    let largest = files.iter().map(|(_, f)| f.text.len()).max().unwrap_or(0);
    // Files are independent until the checker: with several sizeable ones, each core
    // reads and builds whole files. When one file holds most of the text, it streams
    // its entries to the cores instead (`read_file`).
    if files.len() > 1 && bytes >= PARALLEL_READ_BYTES && largest * 2 <= bytes {
        timings.time(READ_AND_BUILD, || {
            crate::parallel::map_chunks(files, 1, |chunk| read(chunk, &mut Timings::default()))
                .into_iter()
                .flatten()
                .collect()
        })
    } else if files.iter().any(|(_, f)| streams(f)) {
        // The small files beside a streamed one count in its stage.
        timings.time(READ_AND_BUILD, || read(files, &mut Timings::default()))
    } else {
        read(files, timings)
    }
}

/// The stage of files whose reading and building overlap.
const READ_AND_BUILD: &str = "read XML and build syntax trees";

/// Whether a file is large enough to stream its entries to the workers.
fn streams(file: &SourceFile) -> bool {
    crate::parallel::threads() > 1 && file.text.len() >= PARALLEL_READ_BYTES
}

/// The syntax tree of one file, and whether its XML was read to the end. A large file
/// streams its library's entries to the workers as they are read, so building overlaps
/// reading; each batch of entries is freed on its worker once built.
fn read_file(
    id: FileId,
    file: &SourceFile,
    xml_diags: &mut Diagnostics,
    tree_diags: &mut Diagnostics,
    timings: &mut Timings,
) -> (bool, ast::Module) {
    if !streams(file) {
        let doc = timings.time("read XML", || xml::parse(id, &file.text, xml_diags));
        let module = timings.time("build syntax trees", || {
            ast::build_module(id, file, &doc, tree_diags)
        });
        return (doc.complete, module);
    }
    timings.time(READ_AND_BUILD, || {
        let (doc, batches) = crate::parallel::stream(
            |emit| xml::parse_streaming(id, &file.text, xml_diags, &mut |el| emit(el)),
            |batch: Vec<xml::Element>| ast::build_entries(&batch),
        );
        let streamed = !batches.is_empty();
        let mut all = ast::Built::default();
        for built in batches {
            all.extend(built);
        }
        let entries = streamed.then_some(all);
        let module = ast::build_module_with(id, file, &doc, tree_diags, entries);
        (doc.complete, module)
    })
}

/// The XML tree of every file, read again (`tvc check --emit xml`): `None` for a file
/// that is not UTF-8 text. Their diagnostics were reported by the compilation.
pub fn xml_docs(c: &Compilation) -> Vec<Option<xml::XmlDoc<'_>>> {
    c.sources
        .files()
        .map(|(id, file)| {
            let usable = !file.std && !c.unusable.contains(&id);
            usable.then(|| xml::parse(id, &file.text, &mut Diagnostics::new()))
        })
        .collect()
}

/// `tvc check`: collects, loads and checks.
pub fn check_paths(paths: &[PathBuf]) -> Result<Compilation, String> {
    let start = Instant::now();
    let files = collect_paths(paths)?;
    let (sources, diags, unusable) = load(&files);
    let loaded = start.elapsed();
    let mut c = check_sources(sources, diags, unusable);
    let mut timings = Timings::default();
    timings.add("load files", loaded);
    c.timings
        .stages()
        .iter()
        .for_each(|&(s, d)| timings.add(s, d));
    c.timings = timings;
    Ok(c)
}

/// Checks one in-memory file given as raw bytes (fuzzing): any bytes at all.
pub fn check_bytes(path: &str, bytes: &[u8]) -> Compilation {
    let mut sources = SourceMap::new();
    let mut diags = Diagnostics::new();
    let mut unusable = HashSet::default();
    let (text, problem) = from_bytes(bytes.to_vec());
    let id = sources.add(path, text);
    if let Some((at, msg)) = problem {
        diags.push(Diagnostic::error(Span::new(id, at..at), msg));
        unusable.insert(id);
    }
    check_sources(sources, diags, unusable)
}

/// Checks in-memory sources (tests, fuzzing): `(path, text)` pairs.
pub fn check_texts<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> Compilation {
    let mut sources = SourceMap::new();
    for (path, text) in files {
        sources.add(path, text);
    }
    check_sources(sources, Diagnostics::new(), HashSet::default())
}

/// The bytes of `bundle` (as [`tv_vm::bundle::Bundle::to_bytes`] gives them), its
/// functions encoded on the workers.
pub fn bundle_bytes(bundle: &tv_vm::bundle::Bundle) -> Vec<u8> {
    use tv_vm::bundle::Bundle;
    bundle.to_bytes_with(|functions| {
        crate::parallel::map_chunks(
            functions,
            crate::parallel::MIN_ITEMS_PER_WORKER,
            Bundle::encode_functions,
        )
    })
}

/// The typed IR and the bundle of a program that checked without errors, if every
/// count in it fits the bytecode.
pub fn compile(c: &Compilation) -> Option<(crate::ir::Program, tv_vm::bundle::Bundle)> {
    compile_timed(c, &mut Timings::default()).ok()
}

/// [`compile`], adding the time of lowering and of code generation to `timings`.
pub fn compile_timed(
    c: &Compilation,
    timings: &mut Timings,
) -> Result<(crate::ir::Program, tv_vm::bundle::Bundle), Diagnostics> {
    if c.diags.has_errors() {
        return Err(Diagnostics::new());
    }
    let ir = timings.time("lower to IR", || {
        crate::lower::lower(&c.program, &c.symbols, &c.sources)
    });
    generate(ir, &c.sources, timings)
}

/// [`compile_timed`] for a compilation that is used for nothing else afterwards, as on
/// the command line: its syntax trees are freed once lowered, so that they and the
/// bytecode are never in memory together. For a 50 MB library the trees take about
/// 400 MB, the most of any stage's output.
pub fn compile_consuming(
    c: &mut Compilation,
    timings: &mut Timings,
) -> Result<(crate::ir::Program, tv_vm::bundle::Bundle), Diagnostics> {
    if c.diags.has_errors() {
        return Err(Diagnostics::new());
    }
    let ir = timings.time("lower to IR", || {
        let ir = crate::lower::lower(&c.program, &c.symbols, &c.sources);
        drop(std::mem::take(&mut c.program));
        ir
    });
    generate(ir, &c.sources, timings)
}

/// The bytecode of `ir`, or the errors of counts too large for their operands.
fn generate(
    ir: crate::ir::Program,
    sources: &SourceMap,
    timings: &mut Timings,
) -> Result<(crate::ir::Program, tv_vm::bundle::Bundle), Diagnostics> {
    let bundle = timings.time("generate bytecode", || {
        crate::codegen::generate(&ir, sources)
    });
    match bundle {
        Ok(bundle) => Ok((ir, bundle)),
        Err(errors) => {
            let mut diags = Diagnostics::new();
            errors.into_iter().for_each(|d| diags.push(d));
            Err(diags)
        }
    }
}
