//! `tvc check --emit schemas`: the JSON Schema of every declared type and of every
//! task whose JSON output is typed, as providers' structured-output modes are sent it
//! (DESIGN §13). Declared types come first, in file and document order; then tasks, in
//! the order their items are written, each named by its item and located.

use crate::ast::{ArgValue, Body, InputValue, Item, OutputKind, Program, Task, TaskType};
use crate::source::{SourceMap, Span};
use std::fmt::Write as _;
use tv_stdlib::types::{json_schema, strict_schema, strict_wrapped, Type};

pub fn dump(program: &Program, sources: &SourceMap) -> String {
    let std_files: Vec<_> = program
        .modules
        .iter()
        .filter(|m| m.std)
        .map(|m| m.file)
        .collect();
    let mut out = String::new();
    for (name, ty) in &program.types {
        entry(&mut out, &format!("type {}", name.node), ty);
    }
    for module in program
        .modules
        .iter()
        .filter(|m| !std_files.contains(&m.file))
    {
        for item in &module.items {
            let mut found = Vec::new();
            match item {
                Item::Template(t) => body(&t.body, false, &mut found),
                Item::Task(t) => task(&t.task, false, &mut found),
            }
            for (span, ty, how) in found {
                let title = format!("{} at {}: {how}", item.name().node, sources.location(span));
                entry(&mut out, &title, &ty);
            }
        }
    }
    out
}

/// One schema: its title, whether it has a strict form, and the schema.
fn entry(out: &mut String, title: &str, ty: &Type) {
    let (schema, note) = match (strict_schema(ty), strict_wrapped(ty)) {
        (Some(s), _) => (s, "strict"),
        (None, Some(w)) => (
            w,
            "strict, wrapped: strict mode takes an object at the top, so the value is asked for as its `value` and taken out of the reply",
        ),
        (None, None) => (
            json_schema(ty),
            "not strict: strict mode needs every value typed, not `any`, `object` or `array`",
        ),
    };
    let text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    let _ = writeln!(out, "{title} ({note})\n{text}\n");
}

/// The typed JSON outputs of a body: where, the type, and how it is stated.
type Found = Vec<(Span, Type, String)>;

fn body(b: &Body, evaluator: bool, found: &mut Found) {
    match b {
        Body::Task(t) => task(t, evaluator, found),
        Body::Call(c) => {
            for arg in &c.args {
                if let ArgValue::Body(b) = &arg.value {
                    body(b, false, found);
                }
            }
        }
        Body::Cond(c) => c.cases.iter().for_each(|c| body(&c.body, false, found)),
        Body::Missing(_) => {}
    }
}

fn task(t: &Task, evaluator: bool, found: &mut Found) {
    let json = t
        .output_format
        .as_ref()
        .filter(|f| f.kind.node == OutputKind::Json);
    match json.and_then(|f| f.schema.as_ref()) {
        Some(s) if s.node.is_known() => found.push((
            s.span,
            s.node.clone(),
            format!("output_format schema `{}`", s.node),
        )),
        // As lowering does: an atomic evaluator that states no type replies with an
        // EvaluationResult.
        None if evaluator
            && t.kind.node == TaskType::Atomic
            && t.reference.is_none()
            && (json.is_some() || t.output_format.is_none()) =>
        {
            found.push((
                t.span,
                Type::evaluation_result(),
                "evaluator, `EvaluationResult`".into(),
            ))
        }
        _ => {}
    }
    let script_inputs = t.script.iter().flat_map(|s| s.inputs.iter());
    for input in t.inputs.iter().chain(script_inputs) {
        if let InputValue::Body(b) = &input.value {
            body(b, false, found);
        }
    }
    for step in t.steps.iter().flat_map(|s| s.node.iter()) {
        body(step, false, found);
    }
    for (name, slot) in t.slots() {
        if let Some(b) = slot {
            body(b, name == "evaluator", found);
        }
    }
}
