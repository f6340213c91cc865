//! Stage 6: typed IR → bytecode bundle. Each instruction is emitted with the span of
//! the node it comes from, into a side table, not into the opcode.

mod lists;
mod node;
mod pool;
mod stream;

use crate::diag::Diagnostic;
use crate::ir::{self, Expr, ExprKind};
use crate::source::{FileId, LineCursor, SourceMap, Span};
use pool::{Pool, Use, Uses};
pub(crate) use stream::Writer;
use tv_vm::bundle::{Bundle, Const, Function, Loc, Param, ValueType};
use tv_vm::isa::{Op, Quote};

/// The bundle of `p`, or an error for each count that does not fit the operand that
/// encodes it (more than 255 arguments, 65,535 locals, ...): `tvc` never cuts one.
pub(crate) fn generate(p: &ir::Program, sources: &SourceMap) -> Result<Bundle, Vec<Diagnostic>> {
    // Functions are generated on the workers, each listing its own constants; the
    // lists are pooled here, in function order.
    let parts = crate::parallel::map_chunks(
        &p.functions,
        crate::parallel::MIN_ITEMS_PER_WORKER,
        |functions| {
            let mut scratch = Scratch::default();
            functions
                .iter()
                .map(|f| function(f, sources, &mut scratch))
                .collect::<Vec<_>>()
        },
    );
    // Each function's constants are renamed right after they are pooled, while its
    // code is still in the cache: a separate pass on the workers measured slower.
    let mut pool = Pool::default();
    let mut errors = numbering(p);
    let functions = parts
        .into_iter()
        .flatten()
        .zip(&p.functions)
        .map(|((mut f, uses, errs), source)| {
            let fitted = pool.fits();
            pool.take(uses, &mut f.code);
            if fitted && !pool.fits() {
                errors.push(too_many("constants in one program", source.span));
            }
            errors.extend(errs);
            f
        })
        .collect();
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(finish(p, sources, pool.items, functions))
}

/// How many things a `u32` operand numbers (a widening: `usize` is at least 32 bits
/// wherever `tvc` builds).
const NUMBERED: usize = (u32::MAX as usize).saturating_add(1);

/// Functions and tasks are numbered by `u32` operands; lowering keeps a number past
/// that at `u32::MAX` (see [`ir::id`]), so a program with more of either is an error.
fn numbering(p: &ir::Program) -> Vec<Diagnostic> {
    let numbered = NUMBERED;
    let mut errors = Vec::new();
    if let Some(f) = p.functions.get(numbered) {
        errors.push(too_many(
            "templates and branch functions in one program",
            f.span,
        ));
    }
    if let (true, Some(f)) = (p.tasks.len() > numbered, p.functions.first()) {
        errors.push(too_many("tasks in one program", f.span));
    }
    errors
}

fn too_many(what: &str, span: Span) -> Diagnostic {
    Diagnostic::error(
        span,
        format!(
            "more than {} {what}: the bytecode numbers at most that many",
            1u64 << 32
        ),
    )
    .with_help("split it into smaller programs")
}

/// Code and line tables are built here and copied out at their final size, so each
/// function costs one allocation per table instead of a series of regrowths.
#[derive(Default)]
struct Scratch {
    code: Vec<Op>,
    lines: Vec<Loc>,
}

/// One function, its instructions naming constants by their place in its own list.
fn function<'ir>(
    f: &'ir ir::Function,
    sources: &SourceMap,
    scratch: &mut Scratch,
) -> (Function, Uses<'ir>, Vec<Diagnostic>) {
    scratch.code.clear();
    scratch.lines.clear();
    let mut g = Gen {
        sources,
        consts: Uses::new(),
        code: std::mem::take(&mut scratch.code),
        lines: std::mem::take(&mut scratch.lines),
        span: f.span,
        cursor: (f.span.file, LineCursor::default()),
        errors: Vec::new(),
    };
    g.node(&f.body);
    if f.returns.is_some() {
        g.emit(Op::CheckReturn);
    }
    g.emit(Op::Return);
    // Jump targets and constant positions are below the code's length.
    g.operand::<u32>(g.code.len(), "instructions in one function");
    let function = Function {
        name: f.name.clone(),
        params: f
            .params
            .iter()
            .map(|(n, t)| Param {
                name: n.clone(),
                ty: t.into(),
                doc: f
                    .docs
                    .iter()
                    .find(|(d, _)| d == n)
                    .map_or(String::new(), |(_, doc)| doc.clone()),
            })
            .collect(),
        locals: g.locals(f.locals.len()),
        code: g.code.to_vec(),
        lines: g.lines.to_vec(),
        returns: ValueType::from(&f.yields),
        matchable: f.matchable.clone(),
        doc: f.summary.clone(),
    };
    (scratch.code, scratch.lines) = (g.code, g.lines);
    (function, g.consts, g.errors)
}

/// The bundle of the generated `functions`; `p` gives the tasks and entries.
fn finish(
    p: &ir::Program,
    sources: &SourceMap,
    constants: Vec<Const>,
    functions: Vec<Function>,
) -> Bundle {
    Bundle {
        compiler_version: compiler_version(),
        constants,
        functions,
        tasks: p.tasks.clone(),
        entries: p
            .entries
            .iter()
            .map(|(n, f)| tv_vm::bundle::Entry {
                name: n.clone(),
                function: *f,
            })
            .collect(),
        files: file_names(sources),
    }
}

/// The version of `tvc` a bundle records.
fn compiler_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The names of the files, as a bundle records them.
fn file_names(sources: &SourceMap) -> Vec<String> {
    sources.files().map(|(_, f)| f.name.clone()).collect()
}

struct Gen<'a, 'ir> {
    sources: &'a SourceMap,
    consts: Uses<'ir>,
    code: Vec<Op>,
    lines: Vec<Loc>,
    /// The span instructions are attributed to.
    span: Span,
    /// Where the last instruction was, in the file of its span.
    cursor: (FileId, LineCursor),
    /// Counts too large for their operands.
    errors: Vec<Diagnostic>,
}

/// A jump whose target is patched once known.
struct Hole(usize);

impl<'ir> Gen<'_, 'ir> {
    fn emit(&mut self, op: Op) -> usize {
        let loc = self.loc();
        self.code.push(op);
        self.lines.push(loc);
        self.code.len() - 1
    }

    /// Where the current span starts, counted on from the last instruction's position.
    fn loc(&mut self) -> Loc {
        let (file, start) = (self.span.file, self.span.start);
        // Consecutive instructions often come from one node.
        if let Some(&last) = self.lines.last() {
            if self.cursor.0 == file && self.cursor.1.offset() == Some(start as usize) {
                return last;
            }
        }
        if self.cursor.0 != file {
            self.cursor = (file, LineCursor::default());
        }
        let source = self.sources.get(file);
        let (line, col) = source.line_col_from(&mut self.cursor.1, start as usize);
        // Sources are at most 64 MiB, so no line or column comes near `u32::MAX`.
        Loc {
            file: file.0,
            line: ir::id(line),
            col: ir::id(col),
        }
    }

    /// `n` as an operand of type `T`. A count that does not fit is an error at the
    /// node being generated: an operand cut to fit would make the machine refuse the
    /// bundle, or worse, run something else than what was written.
    fn operand<T: TryFrom<usize> + Default>(&mut self, n: usize, what: &str) -> T {
        T::try_from(n).unwrap_or_else(|_| {
            let max = (1u64 << (8 * std::mem::size_of::<T>())) - 1;
            self.errors.push(
                Diagnostic::error(
                    self.span,
                    format!("{n} {what}: the bytecode allows at most {max}"),
                )
                .with_help("split it into smaller templates"),
            );
            T::default()
        })
    }

    /// A function's locals: the machine allocates them with its frame, so it takes at
    /// most [`MAX_LOCALS`](tv_vm::limits::MAX_LOCALS), fewer than the operand holds.
    fn locals(&mut self, n: usize) -> u16 {
        let max = tv_vm::limits::MAX_LOCALS;
        if n > usize::from(max) {
            self.errors.push(
                Diagnostic::error(
                    self.span,
                    format!("{n} locals (inputs and variables) in one function: a function may have at most {max}"),
                )
                .with_help("split it into smaller templates"),
            );
            return 0;
        }
        self.operand(n, "locals (inputs and variables) in one function")
    }

    /// The address of the next instruction. Past `u32::MAX` it stays there:
    /// [`function`] checks the length of the whole code, so such a function is an error.
    fn here(&self) -> u32 {
        ir::id(self.code.len())
    }

    fn jump(&mut self, make: fn(u32) -> Op) -> Hole {
        Hole(self.emit(make(u32::MAX)))
    }

    fn patch(&mut self, hole: Hole) {
        let target = self.here();
        if let Some(op) = self.code.get_mut(hole.0) {
            *op = op.with_target(target);
        }
    }

    fn constant(&mut self, c: Const) {
        let i = self.consts.add(Use::Owned(c));
        self.emit(Op::Const(i));
    }

    fn at<T>(&mut self, span: Span, f: impl FnOnce(&mut Self) -> T) -> T {
        let saved = std::mem::replace(&mut self.span, span);
        let out = f(self);
        self.span = saved;
        out
    }

    fn expr(&mut self, e: &'ir Expr) {
        self.at(e.span, |g| g.expr_kind(&e.kind));
    }

    fn expr_kind(&mut self, k: &'ir ExprKind) {
        match k {
            ExprKind::Null => self.constant(Const::Null),
            ExprKind::Bool(b) => self.constant(Const::Bool(*b)),
            ExprKind::Num(n) => self.constant(Const::Num(*n)),
            ExprKind::Str(s) => {
                let c = self.consts.add(Use::Str(s));
                self.emit(Op::Const(c));
            }
            ExprKind::Local(l) => {
                self.emit(Op::Load(*l));
            }
            ExprKind::Field(base, name) => {
                self.expr(base);
                let c = self.consts.add(Use::Str(name));
                self.emit(Op::Field(c));
            }
            ExprKind::Index(base, i) => {
                self.expr(base);
                let i = u32::try_from(*i).unwrap_or_else(|_| {
                    self.errors.push(Diagnostic::error(
                        self.span,
                        format!("index {i}: the bytecode allows at most {}", u32::MAX),
                    ));
                    0
                });
                self.emit(Op::Index(i));
            }
            ExprKind::Not(x) => {
                self.expr(x);
                self.emit(Op::Not);
            }
            ExprKind::Compare(op, a, b) => {
                self.expr(a);
                self.expr(b);
                self.emit(Op::Compare(*op));
            }
            ExprKind::And(a, b) => self.short_circuit(a, b, Op::JumpIfFalse),
            ExprKind::Or(a, b) => self.short_circuit(a, b, Op::JumpIfTrue),
            ExprKind::Concat(parts) => self.text(parts),
            ExprKind::Builtin(id, args) => {
                args.iter().for_each(|a| self.expr(a));
                let n = self.operand(args.len(), "arguments to one built-in call");
                self.emit(Op::Builtin(id.index(), n));
            }
            ExprKind::Call(f, args) => {
                args.iter().for_each(|a| self.expr(a));
                let n = self.operand(args.len(), "arguments to one template call");
                self.emit(Op::Call(*f, n));
                self.emit(Op::ReturnIfFailed);
                self.emit(Op::Value);
            }
            ExprKind::Task(n) => {
                self.node(n);
                self.emit(Op::ReturnIfFailed);
                self.emit(Op::Value);
            }
            ExprKind::Gathered(l, i) => {
                self.emit(Op::Load(*l));
                self.emit(Op::Index(*i));
                self.emit(Op::ReturnIfFailed);
                self.emit(Op::Value);
            }
            ExprKind::Accumulated(l, full) => {
                self.emit(Op::AccumulateLocal(*l, *full));
            }
        }
    }

    /// Text built in place: literal and variable parts are appended where they are,
    /// other parts are computed (and shell-quoted when asked) and then appended.
    fn text(&mut self, parts: &'ir [(Expr, Option<Quote>)]) {
        self.constant(Const::Str(String::new()));
        for (p, quote) in parts {
            self.at(p.span, |g| match (&p.kind, *quote) {
                (ExprKind::Str(s), None) => {
                    let c = g.consts.add(Use::Str(s));
                    g.emit(Op::TextConst(c));
                }
                (ExprKind::Local(l), None) => {
                    g.emit(Op::TextLocal(*l));
                }
                _ => {
                    g.expr_kind(&p.kind);
                    match *quote {
                        None => {}
                        // The opcode older machines know, for the common case.
                        Some(Quote::Bare) => {
                            g.emit(Op::ShellQuote);
                        }
                        Some(q) => {
                            g.emit(Op::ShellQuoteIn(q));
                        }
                    }
                    g.emit(Op::TextValue);
                }
            });
        }
    }

    /// `a && b` / `a || b` as a boolean, evaluating `b` only when needed.
    fn short_circuit(&mut self, a: &'ir Expr, b: &'ir Expr, skip: fn(u32) -> Op) {
        self.expr(a);
        self.emit(Op::Not);
        self.emit(Op::Not);
        self.emit(Op::Dup);
        let done = self.jump(skip);
        self.emit(Op::Pop);
        self.expr(b);
        self.emit(Op::Not);
        self.emit(Op::Not);
        self.patch(done);
    }

    /// Makes each call a branch, runs them, and keeps the array of their results in
    /// `results`.
    fn gather(&mut self, calls: &'ir [(u32, Vec<Expr>)], results: ir::Local) {
        for (f, args) in calls {
            args.iter().for_each(|a| self.expr(a));
            let n = self.operand(args.len(), "values captured by one branch");
            self.emit(Op::Branch(*f, n));
        }
        let n = self.operand(calls.len(), "branches run together");
        self.emit(Op::Gather(n));
        self.emit(Op::Store(results));
    }

    fn object(&mut self, fields: &'ir [(String, Expr)]) {
        for (_, e) in fields {
            self.expr(e);
        }
        let first = self.consts.add(Use::Keys(fields));
        let n = self.operand(fields.len(), "fields in one object");
        self.emit(Op::MakeObject(first, n));
    }
}
