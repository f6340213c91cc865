//! What a task over a list known at run time is written with (DESIGN §14): `over`,
//! `as` and `concurrency` on a map or reduce, and the one body inside a map.

use super::build::Builder;
use super::*;
use crate::diag::Diagnostic;
use crate::language::{self, Count, ElementId, ValueKind};
use crate::parser;
use crate::xml::Element;

impl Builder<'_> {
    /// `over`, `as` and `concurrency`, on any task (`id` in the table): the checker says
    /// where they belong.
    pub(super) fn list_attrs(&mut self, el: &Element, id: ElementId, task: &mut Task) {
        if let Some(a) = el.attr("over") {
            task.over = Some(Box::new(parser::parse_test(&a.value, self.diags)));
        }
        if let Some(a) = el.attr("as") {
            task.item_name = Some(Box::new(self.ident_attr(&a.value, "item name")));
        }
        let spec = language::element(id).attr("concurrency");
        if let (Some(a), Some(spec)) = (el.attr("concurrency"), spec) {
            if let ValueKind::Count(range) = spec.value {
                let w = Spanned::new(a.value.trimmed().to_string(), a.value.trimmed_span());
                task.concurrency = self.concurrency(&w, range);
            }
        }
    }

    /// A whole number in the table's range, 1 to `tv_vm::limits::MAX_CONCURRENCY`: each
    /// running body is a machine of its own, so the bundle may not ask for more.
    fn concurrency(&mut self, w: &Spanned<String>, range: &Count) -> Option<Spanned<u16>> {
        match w.node.parse::<u64>() {
            Ok(n) if range.contains(n) => u16::try_from(n).ok().map(|n| Spanned::new(n, w.span)),
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        w.span,
                        format!("`concurrency` must be {}, not `{}`", range.describe(), w.node),
                    )
                    .with_help("leave it out to run as many bodies at once as the run's provider cap (`tvm run --concurrency`)"),
                );
                None
            }
        }
    }

    /// A `<task>`, `<call>` or `<cond>` directly inside a map: its body, of which
    /// there is one.
    pub(super) fn map_body(&mut self, map: &Element, child: &Element, task: &mut Task) {
        let body = self.body(child, &map.name);
        match &task.map_body {
            None => task.map_body = Some(Box::new(body)),
            Some(first) => self.diags.push(
                Diagnostic::error(child.head(), "a map task holds exactly one body")
                    .with_secondary(first.span(), "its body")
                    .with_help("run several tasks per item with one `<task type=\"sequential\">` as the body"),
            ),
        }
    }
}
