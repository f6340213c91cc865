//! The table against itself, the schema and the compiler's readers: every element and
//! attribute the table gives is read where it gives it, with the ranges and words it
//! gives, so neither can change without the other.

use super::xsd::{Def, LAYOUT};
use super::*;
use crate::diag::Severity;
use std::collections::{BTreeMap, BTreeSet};

/// Where each element stands: the elements from a root down to it (the first way found).
fn paths() -> BTreeMap<ElementId, Vec<ElementId>> {
    let mut out: BTreeMap<ElementId, Vec<ElementId>> = BTreeMap::new();
    let mut queue: Vec<Vec<ElementId>> = ROOTS.iter().map(|&r| vec![r]).collect();
    while !queue.is_empty() {
        let path = queue.remove(0);
        let last = *path.last().expect("a path");
        if out.contains_key(&last) {
            continue;
        }
        out.insert(last, path.clone());
        for child in every_child(last) {
            queue.push([path.clone(), vec![child]].concat());
        }
    }
    out
}

/// Its children and those of its nested groups.
fn every_child(id: ElementId) -> Vec<ElementId> {
    let el = element(id);
    let nested = el.nested().iter().flat_map(|g| g.elements.iter().copied());
    el.children().iter().copied().chain(nested).collect()
}

/// A value of the kind that the compiler takes.
fn sample(kind: ValueKind) -> String {
    match kind {
        ValueKind::Words(list) => list.words[0].word.into(),
        ValueKind::Count(c) => c.min.max(1).to_string(),
        ValueKind::Number(n) => n.min.to_string(),
        ValueKind::Integer => "7".into(),
        ValueKind::Type => "string".into(),
        ValueKind::Expression => "true".into(),
        _ => "x".into(),
    }
}

/// A document with `path` nested from its root, `inner` inside the last element, and
/// `attrs` on it (the required attributes the others need are filled in). A task holds a body directly only as a map: it is one on the way to one.
fn document(path: &[ElementId], attrs: &str, inner: &str) -> String {
    let mut open = String::new();
    let mut close = String::new();
    for (i, &id) in path.iter().enumerate() {
        let el = element(id);
        let mut head = String::new();
        let given = |a: &Attr| i + 1 == path.len() && attrs.contains(&format!(" {}=", a.name));
        for a in el.attrs.iter().filter(|a| a.required && !given(a)) {
            head.push_str(&format!(" {}=\"{}\"", a.name, sample(a.value)));
        }
        let next = path.get(i + 1).copied();
        if next.is_some_and(|n| !el.children().contains(&n)) && !el.nested().is_empty() {
            head.push_str(" type=\"map\"");
        }
        if i + 1 == path.len() {
            head.push_str(attrs);
        }
        open.push_str(&format!("<{}{head}>", el.name));
        close = format!("</{}>{close}", el.name);
    }
    format!("{open}{inner}{close}")
}

/// The errors and warnings `text` gets, with the bytes they point at.
fn diagnostics(text: &str) -> Vec<(String, std::ops::Range<usize>, Severity)> {
    let c = crate::driver::check_texts([("t.xml", text)]);
    c.diags
        .iter()
        .map(|d| (d.message.clone(), d.span.range(), d.severity))
        .collect()
}

fn unknown(text: &str) -> Vec<String> {
    diagnostics(text)
        .into_iter()
        .map(|(m, _, _)| m)
        .filter(|m| m.starts_with("unknown element") || m.starts_with("unknown attribute"))
        .collect()
}

#[test]
fn every_id_names_its_own_entry() {
    for (i, el) in ELEMENTS.iter().enumerate() {
        assert_eq!(el.id as usize, i, "{:?} is at {i}", el.id);
        assert_eq!(element(el.id).name, el.name);
    }
}

#[test]
fn every_element_stands_somewhere_and_is_documented() {
    let paths = paths();
    for el in ELEMENTS {
        assert!(paths.contains_key(&el.id), "{:?} is nobody's child", el.id);
        assert!(el.doc.ends_with('.'), "{:?} has no documentation", el.id);
        for a in el.attrs {
            assert!(
                a.doc.ends_with('.'),
                "{:?} {} is undocumented",
                el.id,
                a.name
            );
        }
    }
}

#[test]
fn every_child_the_table_gives_an_element_is_read_there() {
    let paths = paths();
    let mut wrong = Vec::new();
    for el in ELEMENTS {
        for child in every_child(el.id) {
            let text = document(&[&paths[&el.id][..], &[child]].concat(), "", "");
            let found = unknown(&text);
            if !found.is_empty() {
                wrong.push(format!("{text}\n  {found:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_attribute_the_table_gives_an_element_is_read_there() {
    let paths = paths();
    let mut wrong = Vec::new();
    for el in ELEMENTS {
        let attrs: String = el
            .attrs
            .iter()
            .filter(|a| !a.required)
            .map(|a| format!(" {}=\"{}\"", a.name, sample(a.value)))
            .collect();
        let text = document(&paths[&el.id], &attrs, "");
        let found = unknown(&text);
        if !found.is_empty() {
            wrong.push(format!("{text}\n  {found:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every value the table allows at `path` (text, or the attribute `attr`) gets no error
/// there, and one it refuses gets one, for the word lists and ranges the readers check.
fn values_at(path: &[ElementId], attr: Option<&Attr>, kind: ValueKind, wrong: &mut Vec<String>) {
    let (good, bad): (Vec<String>, Vec<String>) = match kind {
        ValueKind::Words(list) => (
            list.names().map(String::from).collect(),
            vec!["bogus".into()],
        ),
        ValueKind::Count(c) => {
            let mut good = vec![c.min.to_string()];
            let mut bad = vec!["x".to_string(), "1.5".into()];
            good.extend(c.max.map(|m| m.to_string()));
            bad.extend(c.max.map(|m| (m + 1).to_string()));
            bad.extend(c.min.checked_sub(1).map(|m| m.to_string()));
            (good, bad)
        }
        ValueKind::Number(n) => (
            vec![n.min.to_string(), n.max.to_string()],
            vec![
                (n.max + 0.5).to_string(),
                (n.min - 0.5).to_string(),
                "x".into(),
            ],
        ),
        ValueKind::Integer => (vec!["-3".into()], vec!["x".into(), "1.5".into()]),
        _ => return,
    };
    for (value, refused) in good
        .iter()
        .map(|v| (v, false))
        .chain(bad.iter().map(|v| (v, true)))
    {
        let text = match attr {
            Some(a) => document(path, &format!(" {}=\"{value}\"", a.name), ""),
            None => document(path, "", value),
        };
        let at = match attr {
            Some(a) => {
                text.find(&format!(" {}=\"{value}\"", a.name))
                    .expect("written")
                    + a.name.len()
                    + 3
            }
            None => text.rfind(&format!(">{value}<")).expect("written") + 1,
        };
        let errors: Vec<String> = diagnostics(&text)
            .into_iter()
            .filter(|(_, span, severity)| *severity == Severity::Error && span.start == at)
            .map(|(m, _, _)| m)
            // The value's own error names it; others there are about the task it makes.
            .filter(|m| m.contains(&format!("`{value}`")))
            .collect();
        if errors.is_empty() == refused {
            wrong.push(format!("{text}: `{value}` gets {errors:?}"));
        }
    }
}

#[test]
fn the_readers_take_the_words_and_ranges_the_table_gives() {
    let paths = paths();
    let mut wrong = Vec::new();
    for el in ELEMENTS {
        let path = &paths[&el.id];
        if let Some(kind) = el.text() {
            values_at(path, None, kind, &mut wrong);
        }
        for a in el.attrs {
            values_at(path, Some(a), a.value, &mut wrong);
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn elements_that_share_a_schema_type_are_alike() {
    let mut by_type: BTreeMap<&str, &Element> = BTreeMap::new();
    for el in ELEMENTS {
        let Some(ty) = el.xsd_type else { continue };
        if let Some(first) = by_type.insert(ty, el) {
            assert_eq!(
                (first.attrs, &first.content),
                (el.attrs, &el.content),
                "{ty}"
            );
        }
    }
}

/// The named types, groups and simple types the table refers to.
fn referred() -> BTreeSet<&'static str> {
    let mut out = BTreeSet::new();
    for el in ELEMENTS {
        out.extend(el.xsd_type);
        out.extend(el.text().map(|k| k.xsd_type()));
        out.extend(el.attrs.iter().map(|a| a.value.xsd_type()));
        if let Content::Elements {
            children: Children::Group(g, _),
            ..
        } = &el.content
        {
            out.insert(g.name);
            out.extend(g.nested.iter().map(|n| n.name));
        }
    }
    out.retain(|name| !name.starts_with("xs:"));
    out
}

#[test]
fn the_schema_defines_each_type_the_table_refers_to_once() {
    let mut defined = Vec::new();
    for def in LAYOUT {
        match def {
            Def::Simple(kind) => defined.push(kind.xsd_type()),
            Def::Type(id) => defined.push(element(*id).xsd_type.expect("a named type")),
            Def::Group(g) => defined.push(g.name),
            _ => {}
        }
    }
    let unique: BTreeSet<&str> = defined.iter().copied().collect();
    assert_eq!(unique.len(), defined.len(), "defined twice: {defined:?}");
    let referred = referred();
    // `NonBlank` is defined for editors and templates that name it; no entry does yet.
    let missing: Vec<_> = referred.difference(&unique).collect();
    let unused: Vec<_> = unique.difference(&referred).collect();
    assert!(missing.is_empty(), "not in the schema: {missing:?}");
    assert_eq!(unused, [&"NonBlank"]);
}

#[test]
fn the_tables_limits_and_providers_are_the_machines_and_the_models() {
    assert_eq!(
        CONCURRENCY.max,
        Some(u64::from(tv_vm::limits::MAX_CONCURRENCY))
    );
    let providers: Vec<&str> = tv_stdlib::models::PROVIDERS
        .iter()
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(PROVIDER.names().collect::<Vec<_>>(), providers);
    let stop = element(ElementId::Model).attr("stop").expect("stop");
    let most = tv_vm::bundle::MAX_STOP_SEQUENCES;
    assert!(stop.doc.contains(&format!("up to {most}:")), "{}", stop.doc);
}
