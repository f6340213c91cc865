//! `tvm info`: what a bundle offers, for a user about to run one they did not write:
//! its entry points with their parameters (types and docs) and return types, the
//! declared types those name written out, and the models its tasks name.
//!
//! Every template and named task can be run (DESIGN §2), but most libraries have a few
//! items meant to be run and more that those call. The items no other item calls are
//! listed first, as the entry points; those another item calls follow, apart, with
//! their callers, as "also callable".

use crate::{output, source};
use clap::Args;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;
use tv_stdlib::types::{Expanded, Type};
use tv_vm::bundle::{Bundle, Function, CONTEXT_PARAM};

#[derive(Args)]
pub(crate) struct InfoArgs {
    /// A bundle, or templates to compile first: a *.xml file or a directory of them.
    bundle: PathBuf,
    /// Print the same as one JSON object.
    #[arg(long)]
    json: bool,
}

/// What a task asks for when it names no model.
const RUN_DEFAULT: &str = "(the run's default model)";

pub(crate) fn info(args: &InfoArgs) -> Result<ExitCode, String> {
    let loaded = source::load(&args.bundle)?;
    let hash = loaded.hash();
    let text = if args.json {
        let v = describe(&loaded.bundle, &hash);
        format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default())
    } else {
        listing(&loaded.bundle, &args.bundle.display().to_string(), &hash)
    };
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// An item of the bundle (a template or named task) and the items that call it.
struct Item<'b> {
    name: &'b str,
    f: &'b Function,
    called_by: BTreeSet<&'b str>,
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

/// Every item with its callers, in the bundle's order (see [`Bundle::entry_callers`]).
fn items(bundle: &Bundle) -> Vec<Item<'_>> {
    bundle
        .entry_callers()
        .into_iter()
        .filter_map(|(e, called_by)| {
            let f = bundle.functions.get(e.function as usize)?;
            Some(Item {
                name: &e.name,
                f,
                called_by,
            })
        })
        .collect()
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

/// A model the LLM tasks name: its provider when one is named, and the model (`None`:
/// the run's default).
type Named = (Option<String>, Option<String>);

/// Each model the LLM tasks name, and how many tasks name it. A task is an LLM task
/// when an instruction calls a model for it; script tasks name no model.
fn models(bundle: &Bundle) -> BTreeMap<Named, usize> {
    let mut out = BTreeMap::new();
    for t in tv_runtime::host::llm_tasks(bundle) {
        let named = match t.model.as_deref().map(|m| m.split_once(':')) {
            Some(Some((p, m))) => (Some(p.to_string()), Some(m.to_string())),
            Some(None) => (t.provider.clone(), t.model.clone()),
            None => (t.provider.clone(), None),
        };
        *out.entry(named).or_insert(0) += 1;
    }
    out
}

/// How the listing writes a model: `provider:model`, the run's default otherwise.
fn model_text((provider, model): &Named) -> String {
    match (provider, model) {
        (Some(p), Some(m)) => format!("{p}:{m}"),
        (None, Some(m)) => m.clone(),
        (Some(p), None) => format!("{p}: {RUN_DEFAULT}"),
        (None, None) => RUN_DEFAULT.to_string(),
    }
}

/// An item's signature line, its description and its parameters, indented by `pad`.
fn item_block(item: &Item, pad: &str) -> String {
    let f = item.f;
    let sig: Vec<String> = params(f).map(|p| format!("{}: {}", p.name, p.ty)).collect();
    let mut out = format!("{pad}{}({}) -> {}\n", item.name, sig.join(", "), f.returns);
    if !f.doc.is_empty() {
        out.push_str(&format!("{pad}    {}\n", f.doc));
    }
    let width = params(f).map(|p| p.name.len()).max().unwrap_or(0);
    let types: Vec<String> = params(f).map(|p| p.ty.to_string()).collect();
    let type_width = types.iter().map(String::len).max().unwrap_or(0);
    for (p, ty) in params(f).zip(&types) {
        let line = format!(
            "{pad}    --arg {:width$}  {ty:type_width$}  {}",
            p.name, p.doc
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn listing(bundle: &Bundle, path: &str, hash: &str) -> String {
    let mut out = format!(
        "{path}: compiled by tvc {}, sha256 {}\n",
        bundle.compiler_version,
        crate::short(hash)
    );
    let (called, roots): (Vec<Item>, Vec<Item>) = items(bundle)
        .into_iter()
        .partition(|i| !i.called_by.is_empty());
    for item in &roots {
        out.push('\n');
        out.push_str(&item_block(item, ""));
    }
    if !called.is_empty() {
        out.push_str("\nalso callable (called by the items above; run one with --entry NAME):\n");
        for item in &called {
            out.push_str(&item_block(item, "    "));
            let by: Vec<&str> = item.called_by.iter().copied().collect();
            out.push_str(&format!("        called by {}\n", by.join(", ")));
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
        out.push_str(&format!("    {} ({n} {tasks})\n", model_text(&model)));
    }
    out
}

fn describe(bundle: &Bundle, hash: &str) -> Value {
    let item = |i: &Item| {
        let params: Vec<Value> = params(i.f)
            .map(|p| json!({"name": p.name, "type": p.ty.to_string(), "doc": p.doc}))
            .collect();
        json!({
            "name": i.name,
            "params": params,
            "returns": i.f.returns.to_string(),
            "description": i.f.doc,
            "calledBy": i.called_by,
        })
    };
    let all = items(bundle);
    let roots: Vec<Value> = all
        .iter()
        .filter(|i| i.called_by.is_empty())
        .map(item)
        .collect();
    let called: Vec<Value> = all
        .iter()
        .filter(|i| !i.called_by.is_empty())
        .map(item)
        .collect();
    // A model is a record, not a display string: the run's default is `null`.
    let models: Vec<Value> = models(bundle)
        .into_iter()
        .map(|((provider, model), tasks)| {
            json!({"provider": provider, "model": model, "tasks": tasks})
        })
        .collect();
    json!({
        "compilerVersion": bundle.compiler_version,
        "sha256": hash,
        "entries": roots,
        "alsoCallable": called,
        "types": types(bundle),
        "models": models,
    })
}
