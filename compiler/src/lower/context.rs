//! Context settings: operator defaults merged with what a task states (DESIGN §3).

use crate::ast::{
    self, AccumulationFormat, ContextManagement, FilePaths, FreshContext, InheritContext, Task,
    TaskType, TextTemplate,
};
use crate::source::Spanned;
use tv_stdlib::models::{self, Provider};
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

/// What a composite task hands down to the atomic tasks inside it (DESIGN §19): its
/// `model`, `provider`, `system`, `file_paths` and sampling settings are defaults that
/// an inner setting overrides; a stated `fresh_context`, and a stated `inherit_context`
/// of `subset`, apply to atomic children that state none.
#[derive(Clone, Debug, Default)]
pub struct Defaults {
    pub model: Option<Spanned<String>>,
    pub provider: Option<Spanned<String>>,
    pub system: Option<TextTemplate>,
    pub file_paths: Option<Spanned<FilePaths>>,
    pub settings: ast::ModelSettings,
    pub fresh: Option<bool>,
    pub subset: bool,
}

impl Defaults {
    /// These defaults with a composite task's own settings over them.
    pub fn under(&self, task: &Task) -> Defaults {
        let own = &task.model_settings;
        let base = &self.settings;
        let stated = task.context.as_ref();
        Defaults {
            model: task.model.clone().or_else(|| self.model.clone()),
            provider: task.provider.clone().or_else(|| self.provider.clone()),
            system: task.system.clone().or_else(|| self.system.clone()),
            file_paths: task.file_paths.clone().or_else(|| self.file_paths.clone()),
            settings: ast::ModelSettings {
                temperature: own.temperature.clone().or_else(|| base.temperature.clone()),
                max_tokens: own.max_tokens.clone().or_else(|| base.max_tokens.clone()),
                top_p: own.top_p.clone().or_else(|| base.top_p.clone()),
                seed: own.seed.clone().or_else(|| base.seed.clone()),
                stop: own.stop.clone().or_else(|| base.stop.clone()),
                span: own.span.or(base.span),
            },
            fresh: stated
                .and_then(|c| c.fresh_context.as_ref())
                .map(|f| f.node == FreshContext::Enabled)
                .or(self.fresh),
            subset: match stated.and_then(|c| c.inherit_context.as_ref()) {
                Some(i) => i.node == InheritContext::Subset,
                None => self.subset,
            },
        }
    }

    /// An atomic task's model and provider, its own or inherited. An inherited one that
    /// contradicts the task's own (a `claude-*` model under `<provider>openai`) gives way
    /// to it: the inner setting wins (a task's own pair is checked by the checker).
    pub fn model_and_provider(&self, task: &Task) -> (Option<String>, Option<String>) {
        let provider_of = |m: &str| models::parse_model(m).ok().and_then(|m| m.provider);
        let named = |p: &str| Provider::parse(p);
        let own_model = task.model.as_ref().map(|m| m.node.clone());
        let own_provider = task.provider.as_ref().map(|p| p.node.clone());
        let model = own_model.clone().or_else(|| {
            let inherited = self.model.as_ref()?.node.clone();
            let clash = own_provider
                .as_deref()
                .and_then(named)
                .is_some_and(|p| provider_of(&inherited).is_some_and(|q| q != p));
            (!clash).then_some(inherited)
        });
        let provider = own_provider.or_else(|| {
            let inherited = self.provider.as_ref()?.node.clone();
            let clash = own_model
                .as_deref()
                .and_then(provider_of)
                .is_some_and(|q| named(&inherited).is_some_and(|p| p != q));
            (!clash).then_some(inherited)
        });
        (model, provider)
    }

    /// An atomic task's context settings: its own merged ones, with a composite's
    /// stated fresh context and subset inheritance where the task states none, and
    /// associative matching off when the task names its files and no one stated
    /// `fresh_context` enabled (explicit paths take precedence).
    pub fn atomic_context(&self, task: &Task, has_files: bool) -> ContextSettings {
        let mut c = merge(task.kind.node, task.context.as_ref());
        let stated = task.context.as_ref();
        let own_fresh = stated
            .and_then(|c| c.fresh_context.as_ref())
            .map(|f| f.node == FreshContext::Enabled);
        let own_inherit = stated.and_then(|c| c.inherit_context.as_ref());
        if own_fresh.is_none() {
            if let Some(f) = self.fresh {
                c.fresh = f;
            }
        }
        if own_inherit.is_none() && self.subset && c.inherit == Inherit::Full {
            c.inherit = Inherit::Subset;
        }
        if has_files && own_fresh.or(self.fresh) != Some(true) {
            c.fresh = false;
        }
        c
    }
}
