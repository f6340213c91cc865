//! Context settings: operator defaults merged with what a task states (DESIGN §3).

use crate::ast::{
    self, AccumulationFormat, ContextManagement, FilePaths, FreshContext, InheritContext, Task,
    TaskType, TextTemplate,
};
use crate::source::Spanned;
use tv_stdlib::models::{self, Provider};
use tv_vm::bundle::{ContextSettings, Inherit, StatedContext};

/// Defaults per operator (the seeds' last table).
fn defaults(kind: TaskType) -> ContextSettings {
    let (inherit, accumulate, fresh) = match kind {
        TaskType::Atomic => (Inherit::Full, false, true),
        TaskType::Sequential => (Inherit::Full, true, true),
        TaskType::Reduce => (Inherit::None, true, true),
        TaskType::Script => (Inherit::Full, false, false),
        TaskType::DirectorEvaluatorLoop => (Inherit::None, true, true),
        // Bodies run at once, so none sees another's result: nothing accumulates.
        TaskType::Map => (Inherit::Full, false, true),
    };
    ContextSettings {
        inherit,
        accumulate,
        full_output: false,
        fresh,
    }
}

/// The seeds' defaults for a spawned subtask: inherit a subset, accumulate nothing,
/// notes only, fresh context.
const SUBTASK: ContextSettings = ContextSettings {
    inherit: Inherit::Subset,
    accumulate: false,
    full_output: false,
    fresh: true,
};

/// The operator defaults with what the task states merged over them. Where the
/// defaults themselves conflict (atomic and sequential inherit *and* refresh), the
/// inherited context wins and fresh context is off: no workspace is searched unless a
/// template asks for it.
pub(super) fn merge(kind: TaskType, stated: Option<&ContextManagement>) -> ContextSettings {
    defaults(kind).merged(&statement(stated))
}

/// The settings of a template's atomic body when a subtask request runs it: the
/// subtask defaults under what the template states.
pub(super) fn spawned(stated: Option<&ContextManagement>) -> ContextSettings {
    SUBTASK.merged(&statement(stated))
}

/// What a `<context_management>` states, without its spans.
fn statement(stated: Option<&ContextManagement>) -> StatedContext {
    let Some(c) = stated else {
        return StatedContext::default();
    };
    StatedContext {
        inherit: c.inherit_context.as_ref().map(|i| i.node),
        accumulate: c.accumulate_data.as_ref().map(|a| a.node),
        full_output: c
            .accumulation_format
            .as_ref()
            .map(|f| f.node == AccumulationFormat::Full),
        fresh: c
            .fresh_context
            .as_ref()
            .map(|f| f.node == FreshContext::Enabled),
    }
}

/// What a composite task hands down to the atomic tasks inside it (DESIGN §19): its
/// `model`, `provider`, `system`, `file_paths` and sampling settings are defaults that
/// an inner setting overrides; a stated `fresh_context`, and a stated `inherit_context`
/// of `subset`, apply to atomic children that state none. Where no one states
/// `fresh_context`, the innermost composite's own setting applies (its operator default
/// after the conflict rule: on for reduce and director-evaluator loops, off for
/// sequences and maps), so that the seeds' defaults have their effect.
#[derive(Clone, Debug, Default)]
pub(super) struct Defaults {
    pub model: Option<Spanned<String>>,
    pub provider: Option<Box<Spanned<String>>>,
    pub system: Option<TextTemplate>,
    pub file_paths: Option<Box<Spanned<FilePaths>>>,
    pub settings: ast::ModelSettings,
    pub fresh: Option<bool>,
    /// The innermost composite's fresh context, stated or by its operator default.
    pub operator_fresh: Option<bool>,
    pub subset: bool,
}

impl Defaults {
    /// These defaults with a composite task's own settings over them.
    pub(super) fn under(&self, task: &Task) -> Defaults {
        let own = task.model_settings();
        let base = &self.settings;
        let stated = task.context.as_deref();
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
            operator_fresh: Some(merge(task.kind.node, stated).fresh),
            subset: match stated.and_then(|c| c.inherit_context.as_ref()) {
                Some(i) => i.node == InheritContext::Subset,
                None => self.subset,
            },
        }
    }

    /// An atomic task's model and provider, its own or inherited. An inherited one that
    /// contradicts the task's own (a `claude-*` model under `<provider>openai`) gives way
    /// to it: the inner setting wins (a task's own pair is checked by the checker).
    pub(super) fn model_and_provider(&self, task: &Task) -> (Option<String>, Option<String>) {
        let provider_of = |m: &str| models::parse_model(m).ok().and_then(|m| m.provider);
        let named = |p: &str| Provider::parse(p);
        let own_model = task.model.as_ref().map(|m| m.node.clone());
        let own_provider = task.provider.as_deref().map(|p| p.node.clone());
        let model = own_model.clone().or_else(|| {
            let inherited = self.model.as_ref()?.node.clone();
            let clash = own_provider
                .as_deref()
                .and_then(named)
                .is_some_and(|p| provider_of(&inherited).is_some_and(|q| q != p));
            (!clash).then_some(inherited)
        });
        let provider = own_provider.or_else(|| {
            let inherited = self.provider.as_deref()?.node.clone();
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
    pub(super) fn atomic_context(&self, task: &Task, has_files: bool) -> ContextSettings {
        let mut c = merge(task.kind.node, task.context.as_deref());
        let stated = task.context.as_deref();
        let own_fresh = stated
            .and_then(|c| c.fresh_context.as_ref())
            .map(|f| f.node == FreshContext::Enabled);
        let own_inherit = stated.and_then(|c| c.inherit_context.as_ref());
        if own_fresh.is_none() {
            if let Some(f) = self.fresh.or(self.operator_fresh) {
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
