//! `tvm info`: what a bundle offers, for a user about to run one they did not write:
//! its entry points with their parameters (types and docs) and return types, the
//! declared types those name written out, and the models its tasks name.

use crate::{output, source};
use clap::Args;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use tv_stdlib::types::{Expanded, Type};
use tv_vm::bundle::{Bundle, Function, CONTEXT_PARAM};

#[derive(Args)]
pub struct InfoArgs {
    /// A bundle, or templates to compile first: a *.xml file or a directory of them.
    bundle: PathBuf,
    /// Print the same as one JSON object.
    #[arg(long)]
    json: bool,
}

/// What a task asks for when it names no model.
const RUN_DEFAULT: &str = "(the run's default model)";

pub fn info(args: &InfoArgs) -> Result<ExitCode, String> {
    let loaded = source::load(&args.bundle)?;
    let text = if args.json {
        let v = describe(&loaded.bundle, &loaded.hash);
        format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default())
    } else {
        listing(
            &loaded.bundle,
            &args.bundle.display().to_string(),
            &loaded.hash,
        )
    };
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The entry points' functions, in the bundle's order.
fn entries(bundle: &Bundle) -> impl Iterator<Item = (&str, &Function)> {
    bundle.entries.iter().filter_map(|e| {
        bundle
            .functions
            .get(e.function as usize)
            .map(|f| (e.name.as_str(), f))
    })
}

/// Parameters as a caller passes them: the context a template inherits is passed by
/// its callers, never by a run.
fn params(f: &Function) -> impl Iterator<Item = &tv_vm::bundle::Param> {
    f.params.iter().filter(|p| p.name != CONTEXT_PARAM)
}

/// The declared types (`<type name="Review">`) the entry points' parameters and return
/// types name, each written out, by name; a record's fields are followed, so a type
/// that only a field names is there too.
fn types(bundle: &Bundle) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut todo: Vec<&Type> = entries(bundle)
        .flat_map(|(_, f)| {
            params(f)
                .map(|p| p.ty.as_type())
                .chain([f.returns.as_type()])
        })
        .collect();
    while let Some(t) = todo.pop() {
        match t {
            Type::Array(inner) => todo.push(inner),
            Type::Record(r) => {
                if let Some(name) = &r.name {
                    if out.contains_key(name) {
                        continue;
                    }
                    out.insert(name.clone(), Expanded(r).to_string());
                }
                todo.extend(r.fields.iter().map(|f| &f.ty));
            }
            _ => {}
        }
    }
    out
}

/// Each model the LLM tasks name (by `provider:model` when a provider is named apart),
/// and how many tasks name it. A task is an LLM task when an instruction calls a model
/// for it; script tasks name no model.
fn models(bundle: &Bundle) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for t in tv_runtime::host::llm_tasks(bundle) {
        let name = match (&t.model, &t.provider) {
            (Some(m), Some(p)) if !m.contains(':') => format!("{p}:{m}"),
            (Some(m), _) => m.clone(),
            (None, Some(p)) => format!("{p}: {RUN_DEFAULT}"),
            (None, None) => RUN_DEFAULT.to_string(),
        };
        *out.entry(name).or_insert(0) += 1;
    }
    out
}

fn listing(bundle: &Bundle, path: &str, hash: &str) -> String {
    let mut out = format!(
        "{path}: compiled by tvc {}, sha256 {}\n",
        bundle.compiler_version,
        crate::short(hash)
    );
    for (name, f) in entries(bundle) {
        let sig: Vec<String> = params(f).map(|p| format!("{}: {}", p.name, p.ty)).collect();
        out.push_str(&format!("\n{name}({}) -> {}\n", sig.join(", "), f.returns));
        if !f.doc.is_empty() {
            out.push_str(&format!("    {}\n", f.doc));
        }
        let width = params(f).map(|p| p.name.len()).max().unwrap_or(0);
        let types: Vec<String> = params(f).map(|p| p.ty.to_string()).collect();
        let type_width = types.iter().map(String::len).max().unwrap_or(0);
        for (p, ty) in params(f).zip(&types) {
            let line = format!("    --arg {:width$}  {ty:type_width$}  {}", p.name, p.doc);
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    let types = types(bundle);
    if !types.is_empty() {
        out.push_str("\ntypes:\n");
        for (name, written) in types {
            out.push_str(&format!("    {name} = {written}\n"));
        }
    }
    out.push_str("\nmodels:\n");
    for (model, n) in models(bundle) {
        let tasks = if n == 1 { "task" } else { "tasks" };
        out.push_str(&format!("    {model} ({n} {tasks})\n"));
    }
    out
}

fn describe(bundle: &Bundle, hash: &str) -> Value {
    let entries: Vec<Value> = entries(bundle)
        .map(|(name, f)| {
            let params: Vec<Value> = params(f)
                .map(|p| json!({"name": p.name, "type": p.ty.to_string(), "doc": p.doc}))
                .collect();
            json!({
                "name": name,
                "params": params,
                "returns": f.returns.to_string(),
                "description": f.doc,
            })
        })
        .collect();
    json!({
        "compilerVersion": bundle.compiler_version,
        "sha256": hash,
        "entries": entries,
        "types": types(bundle),
        "models": models(bundle),
    })
}
