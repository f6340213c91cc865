//! The helpers that report what the language table (`crate::language`) does not give
//! an element: "unknown element `<instrutions>`; did you mean `<instructions>`?".

use crate::diag::{Diagnostic, Diagnostics};
use crate::language::{self, ElementId};
use crate::xml::{Element, Node};

/// Attributes every element accepts and ignores: namespace declarations and the XML
/// Schema instance attributes (`xsi:noNamespaceSchemaLocation="tv.xsd"`) with which an
/// editor finds the schema of `tvc schema`.
pub(crate) fn is_ignored_attr(name: &str) -> bool {
    name == "xmlns" || name.starts_with("xmlns:") || name.starts_with("xsi:")
}

/// The closest candidate, when it is close enough to be a likely typo.
pub(crate) fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    closest(word, candidates).map(|(_, c)| c)
}

/// [`did_you_mean`] over two lists, where a candidate of `preferred` wins unless one of
/// `others` is strictly closer: a name the user defined is a likelier meaning of a
/// misspelling than a built-in spelled alike.
pub(crate) fn did_you_mean_preferring<'a>(
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

/// Reports `el`, which is not among the children `allowed` in `<parent>` (in the
/// table's order, which the help lists).
pub(crate) fn unknown_element(
    el: &Element,
    parent: &str,
    allowed: &[ElementId],
    diags: &mut Diagnostics,
) {
    let allowed: Vec<&str> = allowed
        .iter()
        .map(|&id| language::element(id).name)
        .collect();
    let mut d = Diagnostic::error(
        el.head(),
        format!("unknown element `<{}>` in `<{parent}>`", el.name),
    );
    d = match suggestion(&el.name, &allowed) {
        Some(s) => d.with_help(s),
        None => d.with_help(format!(
            "`<{parent}>` accepts: {}",
            list(&allowed, "<", ">")
        )),
    };
    diags.push(d);
}

/// Reports `el`, a child the table gives `<parent>` that no reader reads there: to the
/// user, as good as unknown (the table's tests keep this from happening).
pub(crate) fn unread_element(el: &Element, parent: &str, diags: &mut Diagnostics) {
    let message = format!("unknown element `<{}>` in `<{parent}>`", el.name);
    diags.error(el.head(), message);
}

/// Reports every attribute of `el` that the table's `entry` does not give it.
pub(crate) fn check_attrs(el: &Element, entry: ElementId, diags: &mut Diagnostics) {
    let entry = language::element(entry);
    for a in &el.attrs {
        if entry.attr(&a.name).is_some() || is_ignored_attr(&a.name) {
            continue;
        }
        let allowed: Vec<&str> = entry.attr_names().collect();
        let allowed = allowed.as_slice();
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
pub(crate) fn no_text(el: &Element, diags: &mut Diagnostics) {
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
pub(crate) fn no_elements(el: &Element, diags: &mut Diagnostics) {
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

pub(crate) fn list(items: &[&str], open: &str, close: &str) -> String {
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
        let fields: Vec<&str> = language::TASK_CONTENT.names().collect();
        assert_eq!(did_you_mean("instrutions", &fields), Some("instructions"));
        assert_eq!(did_you_mean("sytem", &fields), Some("system"));
        assert_eq!(did_you_mean("banana", &fields), None);
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
