//! Context settings: operator defaults merged with what a task states (DESIGN §3).

use crate::ast::{AccumulationFormat, ContextManagement, FreshContext, InheritContext, TaskType};
use tv_vm::bundle::{ContextSettings, Inherit};

/// Defaults per operator (the seeds' last table): inherit, accumulate, full output, fresh.
fn defaults(kind: TaskType) -> (InheritContext, bool, bool, bool) {
    match kind {
        TaskType::Atomic => (InheritContext::Full, false, false, true),
        TaskType::Sequential => (InheritContext::Full, true, false, true),
        TaskType::Reduce => (InheritContext::None, true, false, true),
        TaskType::Script => (InheritContext::Full, false, false, false),
        TaskType::DirectorEvaluatorLoop => (InheritContext::None, true, false, true),
    }
}

/// The seeds' defaults for a spawned subtask: inherit a subset, accumulate nothing,
/// notes only, fresh context.
const SUBTASK: (InheritContext, bool, bool, bool) = (InheritContext::Subset, false, false, true);

/// Explicit settings win; the other dimension takes the compatible value. Where the
/// defaults themselves conflict (atomic and sequential inherit *and* refresh), the
/// inherited context wins and fresh context is off: no workspace is searched unless a
/// template asks for it.
pub fn merge(kind: TaskType, stated: Option<&ContextManagement>) -> ContextSettings {
    merge_over(defaults(kind), stated)
}

/// The settings of a template's atomic body when a subtask request runs it: the
/// subtask defaults under what the template states.
pub fn spawned(stated: Option<&ContextManagement>) -> ContextSettings {
    merge_over(SUBTASK, stated)
}

fn merge_over(
    defaults: (InheritContext, bool, bool, bool),
    stated: Option<&ContextManagement>,
) -> ContextSettings {
    let (mut inherit, mut accumulate, mut full, mut fresh) = defaults;
    let explicit_inherit = stated
        .and_then(|c| c.inherit_context.as_ref())
        .map(|s| s.node);
    let explicit_fresh = stated
        .and_then(|c| c.fresh_context.as_ref())
        .map(|s| s.node == FreshContext::Enabled);
    if let Some(c) = stated {
        if let Some(a) = &c.accumulate_data {
            accumulate = a.node;
        }
        if let Some(f) = &c.accumulation_format {
            full = f.node == AccumulationFormat::Full;
        }
    }
    if let Some(i) = explicit_inherit {
        inherit = i;
    }
    if let Some(f) = explicit_fresh {
        fresh = f;
    }
    if fresh && inherit != InheritContext::None {
        match (explicit_inherit.is_some(), explicit_fresh.is_some()) {
            (false, true) => inherit = InheritContext::None,
            _ => fresh = false,
        }
    }
    ContextSettings {
        inherit: match inherit {
            InheritContext::Full => Inherit::Full,
            InheritContext::None => Inherit::None,
            InheritContext::Subset => Inherit::Subset,
        },
        accumulate,
        full_output: full,
        fresh,
    }
}
