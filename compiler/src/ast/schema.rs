//! Which elements and attributes each element accepts, and the helpers that report the
//! rest ("unknown element `<instrutions>`; did you mean `<instructions>`?").

use crate::diag::{Diagnostic, Diagnostics};
use crate::xml::{Element, Node};

/// Children a `<task>` (and a slot written as a task: `<director>`, `<inner_task>`, ...) accepts.
pub const TASK_CHILDREN: &[&str] = &[
    "description",
    "instructions",
    "system",
    "model",
    "provider",
    "criteria",
    "output_slot",
    "input_source",
    "output_format",
    "context_management",
    "file_paths",
    "steps",
    "inputs",
    "context_relevance",
    "context_assembly",
    "manual_xml",
    "disable_reparsing",
    "max_iterations",
    "on_max_iterations",
    "subtasks",
    "director",
    "evaluator",
    "script_execution",
    "termination_condition",
    "initial_value",
    "inner_task",
    "reduction_task",
];

pub const TASK_ATTRS: &[&str] = &[
    "type",
    "subtype",
    "ref",
    "name",
    "over",
    "as",
    "concurrency",
];

/// A slot written as a task (`<director type="map" ...>`) takes the attributes of a
/// task but its name.
pub const SLOT_ATTRS: &[&str] = &["type", "subtype", "ref", "over", "as", "concurrency"];

pub const BODY_ELEMENTS: &[&str] = &["task", "call", "cond"];

// The other elements' lists, named here so that the XSD `tvc schema` prints can be
// compared with them (`crate::xsd`'s tests).

pub const LIBRARY_CHILDREN: &[&str] = &["template", "task", "type", "test"];
/// A library's `<test>` and what it holds (`ast/testcase`).
pub const TEST_ATTRS: &[&str] = &["name", "entry"];
pub const TEST_CHILDREN: &[&str] = &["arg", "reply", "cassette", "expect"];
pub const TEST_ARG_ATTRS: &[&str] = &["name", "file"];
pub const REPLY_ATTRS: &[&str] = &["match"];
pub const CASSETTE_ATTRS: &[&str] = &["path"];
pub const EXPECT_ATTRS: &[&str] = &["path", "equals", "contains", "status"];
pub const TEMPLATE_ATTRS: &[&str] = &["name", "params", "returns"];
pub const CALL_ATTRS: &[&str] = &["template"];
pub const ARG_ATTRS: &[&str] = &["name"];
pub const CASE_ATTRS: &[&str] = &["test"];
/// `<cond otherwise="fail|empty">`: what happens when no case holds.
pub const COND_ATTRS: &[&str] = &["otherwise"];
pub const TYPE_ATTRS: &[&str] = &["name"];
/// The sampling attributes `<model>` takes (DESIGN §12).
pub const MODEL_ATTRS: &[&str] = &["temperature", "max_tokens", "top_p", "seed", "stop"];
pub const OUTPUT_FORMAT_ATTRS: &[&str] = &["type", "schema", "retries"];
pub const CONTEXT_MANAGEMENT_CHILDREN: &[&str] = &[
    "inherit_context",
    "accumulate_data",
    "accumulation_format",
    "fresh_context",
];
pub const FILE_PATHS_ATTRS: &[&str] = &["source"];
pub const FILE_PATHS_CHILDREN: &[&str] = &["path", "command", "description"];
/// An `<input>` of `<inputs>`.
pub const INPUT_ATTRS: &[&str] = &["name", "from", "type"];
/// An `<input>` of `<context_relevance>`.
pub const RELEVANCE_ATTRS: &[&str] = &["name", "include"];
pub const CONTEXT_ASSEMBLY_CHILDREN: &[&str] = &[
    "primary_elements",
    "secondary_elements",
    "excluded_elements",
];
pub const SCRIPT_CHILDREN: &[&str] = &["command", "timeout", "inputs"];

/// Whether `name` is an element of the template language (anywhere), so that a tag of
/// another name inside text may be text that a `<` made a tag of.
pub fn is_element(name: &str) -> bool {
    const OTHERS: &[&str] = &["library", "input", "case", "arg", "condition", "timeout"];
    [
        TASK_CHILDREN,
        BODY_ELEMENTS,
        LIBRARY_CHILDREN,
        TEST_CHILDREN,
        CONTEXT_MANAGEMENT_CHILDREN,
        FILE_PATHS_CHILDREN,
        CONTEXT_ASSEMBLY_CHILDREN,
        SCRIPT_CHILDREN,
        OTHERS,
    ]
    .iter()
    .any(|list| list.contains(&name))
}

/// Attributes every element accepts and ignores: namespace declarations and the XML
/// Schema instance attributes (`xsi:noNamespaceSchemaLocation="tv.xsd"`) with which an
/// editor finds the schema of `tvc schema`.
pub fn is_ignored_attr(name: &str) -> bool {
    name == "xmlns" || name.starts_with("xmlns:") || name.starts_with("xsi:")
}

/// The closest candidate, when it is close enough to be a likely typo.
pub fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    closest(word, candidates).map(|(_, c)| c)
}

/// [`did_you_mean`] over two lists, where a candidate of `preferred` wins unless one of
/// `others` is strictly closer: a name the user defined is a likelier meaning of a
/// misspelling than a built-in spelled alike.
pub fn did_you_mean_preferring<'a>(
    word: &str,
    preferred: &[&'a str],
    others: &[&'a str],
) -> Option<&'a str> {
    match (closest(word, preferred), closest(word, others)) {
        (Some((p, _)), Some((o, other))) if o < p => Some(other),
        (Some((_, best)), _) | (None, Some((_, best))) => Some(best),
        (None, None) => None,
    }
}

/// The closest candidate within typo distance, and its distance (ties: the first in
/// alphabetical order, so suggestions do not depend on the list's order).
fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<(usize, &'a str)> {
    candidates
        .iter()
        .map(|c| (strsim::levenshtein(word, c), *c))
        .filter(|(d, c)| *d <= (c.len().max(word.len()) / 3).max(1))
        .min()
}

fn suggestion(word: &str, candidates: &[&str]) -> Option<String> {
    did_you_mean(word, candidates).map(|c| format!("did you mean `{c}`?"))
}

pub fn unknown_element(el: &Element, parent: &str, allowed: &[&str], diags: &mut Diagnostics) {
    let mut d = Diagnostic::error(
        el.head(),
        format!("unknown element `<{}>` in `<{parent}>`", el.name),
    );
    d = match suggestion(&el.name, allowed) {
        Some(s) => d.with_help(s),
        None => d.with_help(format!("`<{parent}>` accepts: {}", list(allowed, "<", ">"))),
    };
    diags.push(d);
}

/// Reports every attribute of `el` that is not in `allowed`.
pub fn check_attrs(el: &Element, allowed: &[&str], diags: &mut Diagnostics) {
    for a in &el.attrs {
        if allowed.contains(&a.name.as_ref()) || is_ignored_attr(&a.name) {
            continue;
        }
        let mut d = Diagnostic::error(
            a.name_span,
            format!("unknown attribute `{}` on `<{}>`", a.name, el.name),
        );
        d = match suggestion(&a.name, allowed) {
            Some(s) => d.with_help(s),
            None if allowed.is_empty() => {
                d.with_help(format!("`<{}>` takes no attributes", el.name))
            }
            None => d.with_help(format!(
                "`<{}>` accepts: {}",
                el.name,
                list(allowed, "", "")
            )),
        };
        diags.push(d);
    }
}

/// Reports non-blank text directly inside an element that holds only elements.
pub fn no_text(el: &Element, diags: &mut Diagnostics) {
    for n in &el.children {
        if let Node::Text(t) = n {
            if !t.value.trim().is_empty() {
                diags.error(
                    t.trimmed_span(),
                    format!(
                        "unexpected text in `<{}>`, which holds elements only",
                        el.name
                    ),
                );
            }
        }
    }
}

/// Reports child elements of an element that holds only text.
pub fn no_elements(el: &Element, diags: &mut Diagnostics) {
    for child in el.elements() {
        diags.error(
            child.head(),
            format!(
                "`<{}>` holds text, not elements like `<{}>`",
                el.name, child.name
            ),
        );
    }
}

pub fn list(items: &[&str], open: &str, close: &str) -> String {
    items
        .iter()
        .map(|i| format!("{open}{i}{close}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_get_a_suggestion_and_strangers_do_not() {
        assert_eq!(
            did_you_mean("instrutions", TASK_CHILDREN),
            Some("instructions")
        );
        assert_eq!(did_you_mean("sytem", TASK_CHILDREN), Some("system"));
        assert_eq!(did_you_mean("banana", TASK_CHILDREN), None);
    }

    #[test]
    fn a_preferred_name_wins_a_tie_and_loses_only_to_a_closer_one() {
        let builtins = ["join", "lower", "trim"];
        // `joinn` is one edit from `join` and from `joins`; alphabetically `join` is first.
        assert_eq!(
            did_you_mean_preferring("joinn", &["joins"], &builtins),
            Some("joins")
        );
        assert_eq!(
            did_you_mean_preferring("lowr", &["lowers"], &builtins),
            Some("lower")
        );
        assert_eq!(did_you_mean_preferring("trm", &[], &builtins), Some("trim"));
        assert_eq!(
            did_you_mean_preferring("sumarise", &["summarise"], &builtins),
            Some("summarise")
        );
        assert_eq!(did_you_mean_preferring("banana", &["x"], &builtins), None);
    }
}
