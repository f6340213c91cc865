//! Renumbering a part of the program that was lowered on its own: its tasks and its
//! branch functions were numbered from zero, and move past those of the parts before
//! it. Item functions keep their numbers, which the whole program shares.

use crate::ir::visit::{walk_node, VisitMut};
use crate::ir::Node;

#[derive(Clone, Copy)]
pub(super) struct Shift {
    /// Item functions come first; a function number at or past this is a branch.
    pub items: u32,
    /// Tasks of the parts before this one.
    pub tasks: u32,
    /// Branch functions of the parts before this one.
    pub branches: u32,
}

impl Shift {
    /// Renumbers the tasks and branch functions `n` names, nested ones included.
    pub(super) fn node(&self, n: &mut Node) {
        walk_node(&mut { *self }, n);
    }
}

impl VisitMut for Shift {
    fn task(&mut self, t: &mut u32) {
        *t += self.tasks;
    }

    fn function(&mut self, f: &mut u32) {
        if *f >= self.items {
            *f += self.branches;
        }
    }
}
