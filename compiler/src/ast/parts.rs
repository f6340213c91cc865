//! The nested parts of a `<task>`: steps, inputs, context relevance and assembly,
//! script execution and a loop's termination condition.

use super::build::Builder;
use super::schema;
use super::*;
use crate::diag::Diagnostic;
use crate::language::{self, ElementId as E};
use crate::parser;
use crate::xml::Element;

impl Builder<'_> {
    pub(super) fn steps(&mut self, el: &Element) -> Spanned<Vec<Body>> {
        schema::check_attrs(el, E::Steps, self.diags);
        schema::no_text(el, self.diags);
        let steps = el.elements().map(|c| self.body(c, &el.name)).collect();
        Spanned::new(steps, el.span)
    }

    /// `<inputs>` of a task or of a script (`id`).
    pub(super) fn inputs(&mut self, el: &Element, id: E) -> Vec<Input> {
        schema::check_attrs(el, id, self.diags);
        schema::no_text(el, self.diags);
        let entry = language::element(id);
        let mut out: Vec<Input> = Vec::new();
        // Where each name was first declared: a task may have thousands of inputs.
        let mut seen: rustc_hash::FxHashMap<String, Span> = Default::default();
        for child in el.elements() {
            if entry.child(&child.name) != Some(E::Input) {
                schema::unknown_element(child, &el.name, entry.children(), self.diags);
                continue;
            }
            let Some(input) = self.input(child) else {
                continue;
            };
            if let Some(prev) = seen.get(&input.name.node) {
                self.diags.push(
                    Diagnostic::error(
                        input.name.span,
                        format!("input `{}` is declared twice", input.name.node),
                    )
                    .with_secondary(*prev, "first declared here")
                    .with_help("input names must be unique within a task"),
                );
                continue;
            }
            seen.insert(input.name.node.clone(), input.name.span);
            out.push(input);
        }
        out.shrink_to_fit();
        out
    }

    pub(super) fn input(&mut self, el: &Element) -> Option<Input> {
        schema::check_attrs(el, E::Input, self.diags);
        let Some(name) = el.attr("name") else {
            self.diags.push(Diagnostic::error(
                el.head(),
                "`<input>` needs a `name` attribute",
            ));
            return None;
        };
        let name = self.ident_attr(&name.value, "input name");
        let from = el
            .attr("from")
            .map(|a| self.ident_attr(&a.value, "variable name"));
        let ty = el
            .attr("type")
            .and_then(|a| self.type_attr(&a.value, "input type"));
        let children: Vec<&Element> = el.elements().collect();
        let value = if let Some(first) = children.first() {
            schema::no_text(el, self.diags);
            for extra in &children[1..] {
                self.diags
                    .error(extra.head(), "an `<input>` holds one task, call or cond");
            }
            InputValue::Body(self.body(first, &el.name))
        } else if el.text().value.trim().is_empty() {
            InputValue::Empty
        } else {
            InputValue::Text(parser::parse_template(&el.text(), self.diags))
        };
        if let (Some(f), InputValue::Body(_)) = (&from, &value) {
            self.diags.push(
                Diagnostic::error(
                    f.span,
                    format!("input `{}` has both `from` and a computed value", name.node),
                )
                .with_help(
                    "bind it to a variable with `from`, or compute it with a nested task, not both",
                ),
            );
        }
        Some(Input {
            name,
            ty,
            from,
            value,
            span: el.span,
        })
    }

    pub(super) fn context_relevance(&mut self, el: &Element) -> Vec<ContextRelevance> {
        schema::check_attrs(el, E::ContextRelevance, self.diags);
        schema::no_text(el, self.diags);
        let entry = language::element(E::ContextRelevance);
        let mut out = Vec::new();
        for child in el.elements() {
            if entry.child(&child.name) != Some(E::RelevanceInput) {
                schema::unknown_element(child, &el.name, entry.children(), self.diags);
                continue;
            }
            schema::check_attrs(child, E::RelevanceInput, self.diags);
            let (Some(name), Some(include)) = (child.attr("name"), child.attr("include")) else {
                self.diags.error(
                    child.head(),
                    "a context relevance `<input>` needs `name` and `include`",
                );
                continue;
            };
            let name = self.ident_attr(&name.value, "input name");
            let w = Spanned::new(
                include.value.trimmed().to_string(),
                include.value.trimmed_span(),
            );
            if let Some(include) = self.parse_bool(&w, "include") {
                out.push(ContextRelevance { name, include });
            }
        }
        out
    }

    pub(super) fn context_assembly(&mut self, el: &Element) -> ContextAssembly {
        schema::check_attrs(el, E::ContextAssembly, self.diags);
        schema::no_text(el, self.diags);
        let entry = language::element(E::ContextAssembly);
        let mut ca = ContextAssembly {
            primary: None,
            secondary: None,
            excluded: None,
        };
        for child in el.elements() {
            let (slot, id) = match entry.child(&child.name) {
                Some(id @ E::PrimaryElements) => (&mut ca.primary, id),
                Some(id @ E::SecondaryElements) => (&mut ca.secondary, id),
                Some(id @ E::ExcludedElements) => (&mut ca.excluded, id),
                _ => {
                    schema::unknown_element(child, &el.name, entry.children(), self.diags);
                    continue;
                }
            };
            *slot = Some(self.text_field(child, id));
        }
        ca
    }

    pub(super) fn script(&mut self, el: &Element) -> ScriptExecution {
        schema::check_attrs(el, E::ScriptExecution, self.diags);
        schema::no_text(el, self.diags);
        let entry = language::element(E::ScriptExecution);
        let mut s = ScriptExecution {
            command: None,
            timeout: None,
            inputs: Vec::new(),
            span: el.span,
        };
        for child in el.elements() {
            match entry.child(&child.name) {
                Some(id @ E::Command) => s.command = Some(self.text_field(child, id)),
                Some(id @ E::Timeout) => s.timeout = self.count_field(child, id),
                Some(id @ E::ScriptInputs) => s.inputs = self.inputs(child, id),
                _ => schema::unknown_element(child, &el.name, entry.children(), self.diags),
            }
        }
        s
    }

    pub(super) fn termination(&mut self, el: &Element) -> Expr {
        schema::check_attrs(el, E::TerminationCondition, self.diags);
        let entry = language::element(E::TerminationCondition);
        let conditions: Vec<&Element> = el.elements().collect();
        let condition = |c: &Element| entry.child(&c.name) == Some(E::Condition);
        match conditions.as_slice() {
            [] if !el.text().value.trim().is_empty() => parser::parse_test(&el.text(), self.diags),
            [c] if condition(c) => {
                schema::no_text(el, self.diags);
                schema::check_attrs(c, E::Condition, self.diags);
                schema::no_elements(c, self.diags);
                parser::parse_test(&c.text(), self.diags)
            }
            _ => {
                for c in conditions.iter().filter(|c| !condition(c)) {
                    schema::unknown_element(c, &el.name, entry.children(), self.diags);
                }
                if conditions.len() != 1 {
                    self.diags.error(
                        el.head(),
                        "`<termination_condition>` holds one `<condition>`",
                    );
                }
                Expr {
                    kind: ExprKind::Error,
                    span: el.head(),
                }
            }
        }
    }
}
