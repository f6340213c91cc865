//! What the run host does for `--max-cost` before anything runs (DESIGN §15): every
//! model the bundle's LLM calls may go to must have a price, since a budget cannot
//! hold a call whose cost is unknown.

use super::{Choice, RunHost};
use std::collections::BTreeSet;
use tv_stdlib::models::Provider;
use tv_vm::bundle::{Bundle, TaskMeta};
use tv_vm::host::LlmRequest;
use tv_vm::isa::Op;

impl RunHost {
    /// The `provider:model` of every LLM call the bundle may make that the price
    /// table has no price for, sorted. Calls answered by echo or a cassette cost
    /// nothing and need none.
    pub fn unpriced_models(&self, bundle: &Bundle) -> Vec<String> {
        let Some(ledger) = &self.ledger else {
            return Vec::new();
        };
        let mut missing = BTreeSet::new();
        for meta in llm_tasks(bundle) {
            let request = LlmRequest {
                query: None,
                requested_files: Vec::new(),
                task: meta.clone(),
                system_prompt: String::new(),
                messages: Vec::new().into(),
                context: Default::default(),
                model: meta.model.clone(),
                settings: meta.settings.clone(),
            };
            let sent = self.prepare(&request);
            let Some(Choice::Remote(provider)) = self.choose(&sent) else {
                continue;
            };
            let Some(model) = self.model_of(provider, &sent) else {
                continue;
            };
            if ledger.prices.get(provider, &model).is_none() {
                missing.insert(format!("{}:{model}", provider.as_str()));
            }
        }
        missing.into_iter().collect()
    }

    /// The model a request goes to on `provider`, as the adapter would name it.
    fn model_of(&self, provider: Provider, r: &LlmRequest) -> Option<String> {
        let settings = match provider {
            Provider::OpenAi => self.openai.as_ref().map(|a| a.settings()),
            Provider::Anthropic => self.anthropic.as_ref().map(|a| a.settings()),
        };
        settings.map(|s| s.model_for(r))
    }
}

/// The tasks whose instructions make LLM calls, each once.
pub fn llm_tasks(bundle: &Bundle) -> impl Iterator<Item = &std::sync::Arc<TaskMeta>> {
    let ids: BTreeSet<u32> = bundle
        .functions
        .iter()
        .flat_map(|f| &f.code)
        .filter_map(|op| match op {
            Op::Atomic(t) | Op::AtomicAccumulated(t, ..) | Op::AtomicFocused(t) => Some(*t),
            _ => None,
        })
        .collect();
    ids.into_iter().filter_map(|t| bundle.tasks.get(t as usize))
}
