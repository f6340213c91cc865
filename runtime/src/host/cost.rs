//! What the run host does for `--max-cost` before anything runs (DESIGN §15): every
//! model the bundle's LLM calls may go to must have a price, and every call a bound on
//! its reply (its max_tokens, else the model's longest reply in the capability table),
//! since a budget cannot hold a call whose cost is unknown.

use super::{Choice, RunHost};
use std::collections::BTreeSet;
use tv_stdlib::models::{capability, Provider};
use tv_vm::bundle::{Bundle, TaskMeta};
use tv_vm::host::LlmRequest;
use tv_vm::isa::Op;

/// The models a budget cannot hold, as `provider:model`, sorted.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Unbudgeted {
    /// Models the price table has no price for.
    pub unpriced: Vec<String>,
    /// Priced models whose calls send no max_tokens and whose longest reply the
    /// capability table does not know.
    pub unbounded: Vec<String>,
}

/// Why a run under `--max-cost` is refused before anything runs (DESIGN §15): the
/// models of [`Unbudgeted`], as a usage error naming them and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    /// Models the price table has no price for (the first is the example given).
    #[error(
        "--max-cost needs the price of every model the run may call, and the price table has none for {}; \
         add them with --prices FILE (JSON: {{\"models\": {{\"{}\": {{\"input\": USD_PER_MILLION, \"output\": USD_PER_MILLION}}}}}})",
        listed(.0), .0.first().map_or("", String::as_str)
    )]
    Unpriced(Vec<String>),
    /// Priced models whose calls have no bound on their reply.
    #[error(
        "--max-cost needs a bound on every call's reply, and calls to {} send no max_tokens while the \
         capability table (stdlib/models.json) does not know their longest reply; set max_tokens on \
         their tasks' <model> or --max-output-tokens",
        listed(.0)
    )]
    Unbounded(Vec<String>),
}

/// Models as `` `a`, `b` ``.
fn listed(models: &[String]) -> String {
    models
        .iter()
        .map(|m| format!("`{m}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Unbudgeted {
    /// The refusal these models make, if any: the unpriced first.
    pub fn refusal(self) -> Result<(), BudgetError> {
        if !self.unpriced.is_empty() {
            return Err(BudgetError::Unpriced(self.unpriced));
        }
        if !self.unbounded.is_empty() {
            return Err(BudgetError::Unbounded(self.unbounded));
        }
        Ok(())
    }
}

/// Under `--max-cost`, every model the run may call has a price, and every call a
/// bound on its reply: a usage error before anything runs otherwise. Without a budget
/// nothing is checked.
pub fn priced(host: &RunHost, bundle: &Bundle) -> Result<(), BudgetError> {
    match host.budgeted() {
        true => host.unbudgeted(bundle).refusal(),
        false => Ok(()),
    }
}

impl RunHost {
    /// What of the bundle's LLM calls a budget cannot hold. Calls answered by echo or a
    /// cassette cost nothing and need neither a price nor a bound.
    pub(crate) fn unbudgeted(&self, bundle: &Bundle) -> Unbudgeted {
        let Some(ledger) = &self.ledger else {
            return Unbudgeted::default();
        };
        let (mut unpriced, mut unbounded) = (BTreeSet::new(), BTreeSet::new());
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
            let name = format!("{}:{model}", provider.as_str());
            match ledger.prices.get(provider, &model) {
                None => {
                    unpriced.insert(name);
                }
                // Anthropic always sends one (its API requires it); OpenAI only when set.
                Some(price)
                    if provider == Provider::OpenAi
                        && sent.settings.max_tokens.is_none()
                        && price.output > 0.0
                        && capability(provider, &model).is_none() =>
                {
                    unbounded.insert(name);
                }
                Some(_) => {}
            }
        }
        Unbudgeted {
            unpriced: unpriced.into_iter().collect(),
            unbounded: unbounded.into_iter().collect(),
        }
    }

    /// The model a request goes to on `provider`, as the adapter would name it.
    fn model_of(&self, provider: Provider, r: &LlmRequest) -> Option<String> {
        self.models.get(Choice::Remote(provider))?.asked(r)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The refusals read as `tvm` has always printed them (the cli's tests match them).
    #[test]
    fn a_refusal_names_the_models_and_what_to_do() {
        let unpriced = Unbudgeted {
            unpriced: vec!["openai:a".into(), "openai:b".into()],
            unbounded: vec!["openai:c".into()],
        };
        assert_eq!(
            unpriced.refusal().unwrap_err().to_string(),
            "--max-cost needs the price of every model the run may call, and the price table has \
             none for `openai:a`, `openai:b`; add them with --prices FILE (JSON: {\"models\": \
             {\"openai:a\": {\"input\": USD_PER_MILLION, \"output\": USD_PER_MILLION}}})"
        );
        let unbounded = Unbudgeted {
            unbounded: vec!["openai:c".into()],
            ..Unbudgeted::default()
        };
        assert_eq!(
            unbounded.refusal().unwrap_err().to_string(),
            "--max-cost needs a bound on every call's reply, and calls to `openai:c` send no \
             max_tokens while the capability table (stdlib/models.json) does not know their \
             longest reply; set max_tokens on their tasks' <model> or --max-output-tokens"
        );
        assert_eq!(Unbudgeted::default().refusal(), Ok(()));
    }
}
