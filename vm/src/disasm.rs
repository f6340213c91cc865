//! The listing `tvm disasm` prints and the snapshots keep: every function with its
//! instructions, addresses, jump targets, constants shown inline, and a
//! `# file:line:col` line wherever the source position changes.

use crate::bundle::{Bundle, Const, FilePaths, Loc, Output};
use crate::isa::Op;
use std::fmt::Write as _;
use tv_stdlib::builtins::BUILTINS;

/// The listing of the whole bundle: its entries, its tasks, then every function.
pub fn disassemble(b: &Bundle) -> String {
    let mut out = String::new();
    for e in &b.entries {
        let name = b
            .functions
            .get(e.function as usize)
            .map_or("?", |f| f.name.as_str());
        let _ = writeln!(out, "entry {} -> fn{} {name}", e.name, e.function);
    }
    for (i, t) in b.tasks.iter().enumerate() {
        let _ = writeln!(out, "task{i} {} # {}", describe_task(t), b.location(t.loc));
    }
    for i in 0..b.functions.len() {
        function(b, i, &mut out);
    }
    out
}

/// The listing of one template or task of the source: its tasks (`NAME#N`) and its
/// functions (`NAME`, and `NAME~N` for the bodies it runs apart), as `disassemble`
/// shows them; empty when the bundle has no item of that name.
pub fn disassemble_item(b: &Bundle, name: &str) -> String {
    let part_of = |n: &str, sep: char| {
        n == name
            || n.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(sep))
    };
    let mut out = String::new();
    for (i, t) in b.tasks.iter().enumerate() {
        if part_of(&t.name, '#') {
            let _ = writeln!(out, "task{i} {} # {}", describe_task(t), b.location(t.loc));
        }
    }
    for (i, f) in b.functions.iter().enumerate() {
        if part_of(&f.name, '~') {
            function(b, i, &mut out);
        }
    }
    out
}

/// Function `i`: its head, then its instructions with their source positions.
fn function(b: &Bundle, i: usize, out: &mut String) {
    let Some(f) = b.functions.get(i) else { return };
    let params: Vec<String> = f
        .params
        .iter()
        .map(|p| format!("{}: {}", p.name, p.ty))
        .collect();
    let _ = writeln!(
        out,
        "\nfn{i} {}({}) -> {} locals={}",
        f.name,
        params.join(", "),
        f.returns,
        f.locals
    );
    let mut last: Option<Loc> = None;
    for (pc, op) in f.code.iter().enumerate() {
        let loc = f.lines.get(pc).copied().unwrap_or_default();
        if last != Some(loc) {
            let _ = writeln!(out, "       # {}", b.location(loc));
            last = Some(loc);
        }
        let _ = writeln!(out, "  {pc:04}  {}", show(b, *op));
    }
}

/// One line for a task's metadata: the settings that are not defaults. The IR listing
/// uses it too.
pub fn describe_task(t: &crate::bundle::TaskMeta) -> String {
    let mut s = t.name.clone();
    if let Some(m) = &t.model {
        let _ = write!(s, " model={m}");
    }
    if let Some(p) = &t.provider {
        let _ = write!(s, " provider={p}");
    }
    let _ = write!(s, "{}", t.settings);
    if t.subtasks {
        s.push_str(" subtasks");
    }
    match &t.output {
        Output::Text => {}
        Output::Json(None) => s.push_str(" output=json"),
        Output::Json(Some(ty)) => {
            let _ = write!(s, " output=json:{ty}");
        }
    }
    let _ = write!(s, " {}", t.context);
    if let Some(c) = &t.spawned {
        let _ = write!(s, " spawned=({c})");
    }
    match &t.file_paths {
        FilePaths::None => {}
        FilePaths::Literal(p) => {
            let _ = write!(s, " files={p:?}");
        }
        FilePaths::Command(c) => {
            let _ = write!(s, " files=command:{c:?}");
        }
        FilePaths::Description(d) => {
            let _ = write!(s, " files=description:{d:?}");
        }
    }
    let a = &t.assembly;
    for (name, globs) in [
        ("primary", &a.primary),
        ("secondary", &a.secondary),
        ("excluded", &a.excluded),
    ] {
        if !globs.is_empty() {
            let _ = write!(s, " {name}={globs:?}");
        }
    }
    if let Some(c) = &t.criteria {
        let _ = write!(s, " criteria={c:?}");
    }
    if let Some(t) = t.timeout {
        let _ = write!(s, " timeout={t}s");
    }
    s
}

fn constant(b: &Bundle, i: u32) -> String {
    match b.constants.get(i as usize) {
        Some(Const::Null) => "null".into(),
        Some(Const::Bool(v)) => v.to_string(),
        Some(Const::Num(n)) => n.to_string(),
        Some(Const::Str(s)) => format!("{s:?}"),
        None => "<missing>".into(),
    }
}

fn show(b: &Bundle, op: Op) -> String {
    match op {
        Op::Const(i) => format!("Const {i:<12} ; {}", constant(b, i)),
        Op::TextConst(i) => format!("TextConst {i:<8} ; {}", constant(b, i)),
        Op::Field(i) => format!("Field {i:<12} ; {}", constant(b, i)),
        Op::CheckOption(i) => format!("CheckOption {i:<6} ; {}", constant(b, i)),
        Op::NoCase(i) => format!("NoCase {i:<11} ; {}", constant(b, i)),
        Op::Builtin(id, n) => {
            let name = BUILTINS.get(id as usize).map_or("?", |b| b.name);
            format!("Builtin {id} {n:<8} ; {name}")
        }
        Op::Call(f, n) => {
            let name = b.functions.get(f as usize).map_or("?", |f| f.name.as_str());
            format!("Call fn{f} {n:<7} ; {name}")
        }
        Op::Branch(f, n) => {
            let name = b.functions.get(f as usize).map_or("?", |f| f.name.as_str());
            format!("Branch fn{f} {n:<5} ; {name}")
        }
        Op::Spawn(f, n) => {
            let name = b.functions.get(f as usize).map_or("?", |f| f.name.as_str());
            format!("Spawn fn{f} {n:<6} ; {name}")
        }
        Op::MakeObject(first, n) => {
            let keys: Vec<String> = (0..u32::from(n)).map(|k| constant(b, first + k)).collect();
            format!("MakeObject {first} {n:<4} ; {{{}}}", keys.join(", "))
        }
        Op::Compare(c) => format!("Compare {}", c.as_str()),
        Op::Atomic(t) | Op::Script(t) | Op::AtomicFocused(t) | Op::Finish(t) => {
            let name = b.tasks.get(t as usize).map_or("?", |t| t.name.as_str());
            let kind = match op {
                Op::Atomic(_) => "Atomic",
                Op::AtomicFocused(_) => "AtomicFocused",
                Op::Finish(_) => "Finish",
                _ => "Script",
            };
            format!("{kind} task{t:<8} ; {name}")
        }
        Op::AtomicAccumulated(t, i, full) => {
            let name = b.tasks.get(t as usize).map_or("?", |t| t.name.as_str());
            format!("AtomicAccumulated task{t} {i} {full:<5} ; {name}")
        }
        _ => match op.target() {
            Some(t) => format!(
                "{} -> {t:04}",
                format!("{op:?}").split('(').next().unwrap_or("")
            ),
            None => format!("{op:?}")
                .replace(['(', ')'], " ")
                .replace(", ", " ")
                .trim_end()
                .to_string(),
        },
    }
}
