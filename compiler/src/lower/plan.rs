//! What is lowered, in what order and under which numbers: the user's items, then the
//! standard templates they call.

use super::{Numbers, Part, Shift};
use crate::ast::{self, Item};
use crate::check::Symbols;
use crate::ir;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// What is lowered, in function order: user items (the entry points), then the
/// standard templates they reach.
pub(super) struct Plan<'p> {
    /// The items, of the modules that hold theirs.
    pub(super) items: Vec<&'p Item>,
    /// Where each item is: its module and its place in the module.
    pub(super) places: Vec<(usize, usize)>,
    pub(super) numbers: Numbers,
    pub(super) user_items: usize,
}

impl<'p> Plan<'p> {
    /// The plan of `program` with the standard templates `needed`.
    pub(super) fn new(program: &'p ast::Program, needed: &HashSet<String>) -> Self {
        let mut plan = Plan {
            items: Vec::new(),
            places: Vec::new(),
            numbers: Numbers {
                ids: HashMap::default(),
                takes_context: HashSet::default(),
                total: 0,
            },
            user_items: 0,
        };
        let modules = program.modules.iter().enumerate();
        let user = modules.clone().filter(|(_, m)| !m.std);
        for (mi, m) in user.chain(modules.filter(|(_, m)| m.std)) {
            // A module that does not hold its items has their heads.
            let heads: Box<dyn Iterator<Item = (&ast::Ident, bool, Option<&Item>)>> = match &m.heads
            {
                Some(heads) => Box::new(heads.iter().map(|h| (&h.name, h.inherits_context, None))),
                None => Box::new(
                    m.items
                        .iter()
                        .map(|i| (i.name(), i.inherits_context(), Some(i))),
                ),
            };
            for (ii, (name, inherits, item)) in heads
                .enumerate()
                .filter(|(_, (name, ..))| !m.std || needed.contains(&name.node))
            {
                let name = name.node.clone();
                if inherits {
                    plan.numbers.takes_context.insert(name.clone());
                }
                if let std::collections::hash_map::Entry::Vacant(slot) =
                    plan.numbers.ids.entry(name)
                {
                    slot.insert(ir::id(plan.places.len()));
                    plan.items.extend(item);
                    plan.places.push((mi, ii));
                    plan.user_items += usize::from(!m.std);
                }
            }
        }
        plan.numbers.total = ir::id(plan.places.len());
        plan
    }

    /// The parts end to end: every part's items, then every part's branch functions.
    pub(super) fn assemble(self, mut parts: Vec<Part>) -> ir::Program {
        let items = ir::id(self.items.len());
        let (mut tasks_before, mut branches_before) = (0, 0);
        let mut shifted: Vec<(Shift, &mut Part)> = Vec::with_capacity(parts.len());
        for part in &mut parts {
            let shift = Shift {
                items,
                tasks: tasks_before,
                branches: branches_before,
            };
            tasks_before = ir::id(part.tasks.len()).saturating_add(tasks_before);
            branches_before = ir::id(part.branches.len()).saturating_add(branches_before);
            shifted.push((shift, part));
        }
        crate::parallel::each_mut(&mut shifted, |(shift, part)| {
            if shift.tasks > 0 || shift.branches > 0 {
                for f in part.functions.iter_mut().chain(&mut part.branches) {
                    shift.node(&mut f.body);
                }
            }
        });
        let mut functions = Vec::with_capacity(self.items.len());
        let (mut branches, mut tasks) = (Vec::new(), Vec::new());
        for mut part in parts {
            functions.append(&mut part.functions);
            branches.append(&mut part.branches);
            tasks.append(&mut part.tasks);
        }
        functions.append(&mut branches);
        let entries = functions[..self.user_items]
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.clone(), ir::id(i)))
            .collect();
        ir::Program {
            functions,
            tasks,
            entries,
        }
    }
}

/// Standard templates called, directly or through each other, by the user's items.
pub(crate) fn reachable_std(program: &ast::Program, symbols: &Symbols) -> HashSet<String> {
    let user = program.modules.iter().filter(|m| !m.std);
    let user = user.flat_map(|m| m.names().map(|n| n.node.as_str()));
    std_called(program, symbols, user.collect())
}

/// Standard templates called, directly or through each other, by the items named in
/// `work`.
pub(crate) fn std_called<'a>(
    program: &'a ast::Program,
    symbols: &'a Symbols,
    mut work: Vec<&'a str>,
) -> HashSet<String> {
    let std = program.modules.iter().filter(|m| m.std);
    let std_names: HashSet<&str> = std
        .flat_map(|m| m.names().map(|n| n.node.as_str()))
        .collect();
    let mut seen = HashSet::default();
    while let Some(name) = work.pop() {
        for (callee, _) in symbols.calls.get(name).into_iter().flatten() {
            if std_names.contains(callee.as_str()) && seen.insert(callee.clone()) {
                work.push(callee);
            }
        }
    }
    seen
}
