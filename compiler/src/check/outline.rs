//! What the whole-program checks read of an item: its name, the parameters its callers
//! see, what its return type is made of, and whether it takes its caller's context.
//! Registration and inference read only this, so that `tvc compile` of a large
//! program can check and lower the items themselves a window at a time
//! (`crate::driver::check_paths_to_compile`), keeping no more than this of the others.

use super::infer::Sketch;
use super::{ItemKind, SigParam, Signature};
use crate::ast::{is_parameter, Head, Item, Param, Resolved};

#[derive(Clone, Debug)]
pub struct Outline {
    pub head: Head,
    pub kind: ItemKind,
    /// The parameters callers pass, as written.
    pub params: Vec<Param>,
    pub sketch: Sketch,
}

impl Outline {
    pub fn of(item: &Item) -> Outline {
        let (kind, params) = match item {
            Item::Template(t) => (ItemKind::Template, t.params.clone()),
            Item::Task(t) => (
                ItemKind::Task,
                t.task
                    .inputs
                    .iter()
                    // A reduce's listed inputs are the values it reduces, not parameters.
                    .filter(|i| is_parameter(i) && !t.task.reduces_inputs())
                    .map(|i| Param {
                        name: i.name.clone(),
                        ty: i.ty.clone(),
                    })
                    .collect(),
            ),
        };
        Outline {
            head: Head::of(item),
            kind,
            params,
            sketch: Sketch::of_item(item),
        }
    }

    /// Writes the resolved types into it, as [`crate::ast::apply_resolved`] does into
    /// the item it was made from.
    pub fn resolve(&mut self, found: &Resolved) {
        if found.is_empty() {
            return;
        }
        for t in self.params.iter_mut().filter_map(|p| p.ty.as_mut()) {
            if let Some(ty) = found.get(&t.span) {
                t.node = ty.clone();
            }
        }
        self.sketch.types_mut(&mut |t, span| {
            if let Some(ty) = found.get(&span) {
                *t = ty.clone();
            }
        });
    }

    /// The item's interface as its callers see it.
    pub(super) fn signature(&self) -> Signature {
        let name = &self.head.name;
        Signature {
            name: name.node.clone(),
            params: self
                .params
                .iter()
                .map(|p| SigParam {
                    name: p.name.node.clone(),
                    ty: p.ty.as_ref().map(|t| t.node.clone()),
                    span: p.name.span,
                })
                .collect(),
            def_span: name.span,
            kind: self.kind,
        }
    }
}
