//! `<test>` elements against the program: each names an entry point, gives each of its
//! parameters one value of the parameter's type, and test names are unique, so that a
//! test that cannot run is a compile error at its line, not a failure of `tvm test`.

use super::{Signature, Tables};
use crate::ast::{did_you_mean, Program, TestCase, TestValue};
use crate::diag::{Diagnostic, Diagnostics};
use crate::source::Span;
use rustc_hash::FxHashMap as HashMap;

pub(super) fn check_tests(program: &Program, items: &Tables, diags: &mut Diagnostics) {
    let mut seen: HashMap<&str, Span> = HashMap::default();
    for test in program.modules.iter().flat_map(|m| &m.tests) {
        if let Some(first) = seen.get(test.name.node.as_str()) {
            diags.push(
                Diagnostic::error(
                    test.name.span,
                    format!("a test named `{}` is already defined", test.name.node),
                )
                .with_secondary(*first, "the first one")
                .with_help(
                    "test names are unique across the program: they name its line and its snapshot",
                ),
            );
        } else {
            seen.insert(&test.name.node, test.name.span);
        }
        match items.get(&test.entry.node) {
            Some(sig) => check_args(test, sig, diags),
            None => {
                let names: Vec<&str> = items.keys().map(String::as_str).collect();
                let mut d = Diagnostic::error(
                    test.entry.span,
                    format!(
                        "test `{}` runs `{}`, which is not a template or task of the program",
                        test.name.node, test.entry.node
                    ),
                );
                if let Some(s) = did_you_mean(&test.entry.node, &names) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                }
                diags.push(d);
            }
        }
    }
}

fn check_args(test: &TestCase, sig: &Signature, diags: &mut Diagnostics) {
    let mut given: HashMap<&str, Span> = HashMap::default();
    for arg in &test.args {
        let name = arg.name.node.as_str();
        if let Some(first) = given.insert(name, arg.name.span) {
            diags.push(
                Diagnostic::error(arg.name.span, format!("argument `{name}` is given twice"))
                    .with_secondary(first, "first given here"),
            );
            continue;
        }
        let Some(param) = sig.params.iter().find(|p| p.name == name) else {
            let names: Vec<&str> = sig.params.iter().map(|p| p.name.as_str()).collect();
            let mut d = Diagnostic::error(
                arg.name.span,
                format!(
                    "{} `{}` has no parameter `{name}`",
                    sig.kind.noun(),
                    sig.name
                ),
            );
            d = match did_you_mean(name, &names) {
                Some(s) => d.with_help(format!("did you mean `{s}`?")),
                None if names.is_empty() => d.with_help("it takes no arguments"),
                None => d.with_help(format!("its parameters: {}", names.join(", "))),
            };
            diags.push(d);
            continue;
        };
        // Text is checked against the parameter's type now; a file's text when the test
        // runs, since the file may change after the check.
        if let (TestValue::Text(raw), Some(ty)) = (&arg.value, &param.ty) {
            if let Err(e) = tv_vm::args::parse_arg(name, ty, raw) {
                diags.push(Diagnostic::error(arg.span, e));
            }
        }
    }
    for param in sig
        .params
        .iter()
        .filter(|p| !given.contains_key(p.name.as_str()))
    {
        diags.push(
            Diagnostic::error(
                test.name.span,
                format!(
                    "test `{}` gives no value for `{}`, a parameter of {} `{}`",
                    test.name.node,
                    param.name,
                    sig.kind.noun(),
                    sig.name
                ),
            )
            .with_secondary(param.span, "the parameter")
            .with_help(format!("add <arg name=\"{}\">...</arg>", param.name)),
        );
    }
}
