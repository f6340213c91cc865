//! The host `tvm run` uses: LLM calls go to the provider a task names (by
//! `<provider>` or a `provider:` model prefix) or else the run's default; scripts run as
//! real processes.

use crate::config::env::{ANTHROPIC_BASE_URL, OPENAI_BASE_URL};
use crate::context::Assembler;
use crate::host::{AsyncHost, CallId};
use crate::ledger::Ledger;
use crate::model::{CallError, CallKind, Echo, Model, Models};
use crate::observe::{Progress, Trace};
use crate::providers::{anthropic, openai, Anthropic, OpenAi, Settings, Vars};
use crate::script::ScriptRunner;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::Mutex;
use tv_stdlib::models::{parse_model, Provider};
use tv_vm::bundle::{Inherit, ModelSettings};
use tv_vm::host::{HostError, HostReply, HostRequest, LlmReply, LlmRequest};
use tv_vm::result::Reason;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Answers with the prompt: a dry run.
    Echo,
    /// Answers from a cassette.
    Replay,
    Remote(Provider),
}

impl Choice {
    pub fn parse(s: &str) -> Option<Choice> {
        match s {
            "echo" => Some(Choice::Echo),
            "replay" => Some(Choice::Replay),
            other => Provider::parse(other).map(Choice::Remote),
        }
    }

    /// The name [`Choice::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Choice::Echo => "echo",
            Choice::Replay => "replay",
            Choice::Remote(p) => p.as_str(),
        }
    }
}

pub struct RunHost {
    /// The run's provider; `None` when none is configured, which only matters once a
    /// task makes an LLM call.
    default: Option<Choice>,
    /// Sampling settings for tasks that do not state their own (`--temperature`, ...).
    pub defaults: ModelSettings,
    /// Replaces every task's model (`--force-model`).
    pub force_model: Option<String>,
    /// What answers LLM calls, for each [`Choice`], with the layers around them
    /// (`--record`).
    pub models: Models,
    /// Set with `--trace`: one line per host call.
    pub trace: Option<Trace>,
    pub progress: Option<Progress>,
    /// Files and workspace excerpts for each LLM call.
    pub context: Assembler,
    /// Prices, `--max-cost` and `--cache`, shared with the adapters.
    pub ledger: Option<Arc<Ledger>>,
    scripts: ScriptRunner,
    /// Why an LLM call found no usable provider, the first time one did not.
    unconfigured: Mutex<Option<String>>,
    /// The warnings said on stderr so far: each is said once a run, however many calls
    /// (a map's bodies) meet it.
    said: Mutex<HashSet<String>>,
}

/// What `tvm` says when a run needs a provider and none is configured.
const NO_PROVIDER: &str = "no provider is configured: pass --provider openai|anthropic (with OPENAI_API_KEY or ANTHROPIC_API_KEY set, \
or OPENAI_BASE_URL pointing at a local server), or --provider echo for a dry run; TVM_PROVIDER sets the default";

impl RunHost {
    /// Builds the adapters the run may need from `vars` (see [`Vars`]); `tune` adjusts
    /// their settings (model, concurrency) after they were read. A provider without a key
    /// is not an error yet: a run that makes no LLM call needs none. A key that would go
    /// to a server named elsewhere than the key is an error now, before any call.
    /// `model` is the run's model for tasks that name none (`--model`, `TVM_MODEL`),
    /// which echo and replays ask by as the adapters do.
    pub fn new(
        default: Option<Choice>,
        vars: &Vars,
        tune: impl Fn(&mut Settings),
        scripts: ScriptRunner,
        ledger: Option<Arc<Ledger>>,
        model: Option<String>,
    ) -> Result<RunHost, String> {
        let tuned = |mut s: Settings| {
            tune(&mut s);
            s
        };
        let openai = Settings::openai_from(vars)?
            .map(|s| OpenAi::new(tuned(s)))
            .transpose()?
            .map(|a| a.with_ledger(ledger.clone()));
        let anthropic = Settings::anthropic_from(vars)?
            .map(|s| Anthropic::new(tuned(s)))
            .transpose()?
            .map(|a| a.with_ledger(ledger.clone()));
        let mut host = RunHost::with_adapters(Choice::Echo, openai, anthropic, scripts);
        let echo = Echo {
            default_model: model,
        };
        host.models.set(Choice::Echo, Arc::new(echo));
        host.default = default;
        host.ledger = ledger;
        Ok(host)
    }

    /// A host with adapters made by the caller (tests, embedding).
    pub fn with_adapters(
        default: Choice,
        openai: Option<OpenAi>,
        anthropic: Option<Anthropic>,
        scripts: ScriptRunner,
    ) -> RunHost {
        let mut models = Models::default();
        if let Some(a) = openai {
            models.set(Choice::Remote(Provider::OpenAi), Arc::new(a));
        }
        if let Some(a) = anthropic {
            models.set(Choice::Remote(Provider::Anthropic), Arc::new(a));
        }
        RunHost::with_models(default, models, scripts)
    }

    /// A host whose LLM calls `models` answer (tests, embedding).
    pub(crate) fn with_models(default: Choice, models: Models, scripts: ScriptRunner) -> RunHost {
        RunHost {
            default: Some(default),
            defaults: ModelSettings::default(),
            force_model: None,
            models,
            trace: None,
            progress: None,
            context: Assembler::default(),
            ledger: None,
            scripts,
            unconfigured: Mutex::new(None),
            said: Mutex::new(HashSet::new()),
        }
    }

    /// The provider when none is named: `TVM_PROVIDER` is read by the caller; else a
    /// provider whose key (or base URL) is set.
    pub fn default_from_keys(vars: &Vars) -> Option<Choice> {
        let set = |k: &str| vars.get(k).is_some();
        if set(openai::KEY_VAR) || set(OPENAI_BASE_URL) {
            Some(Choice::Remote(Provider::OpenAi))
        } else if set(anthropic::KEY_VAR) || set(ANTHROPIC_BASE_URL) {
            Some(Choice::Remote(Provider::Anthropic))
        } else {
            None
        }
    }

    /// Why the run could not reach a provider it needed: a usage error, not a failure
    /// of the workflow.
    pub fn unconfigured(&self) -> Option<String> {
        self.unconfigured.lock().ok().and_then(|u| u.clone())
    }

    pub(super) fn choose(&self, r: &LlmRequest) -> Option<Choice> {
        if matches!(self.default, Some(Choice::Echo | Choice::Replay)) {
            return self.default;
        }
        let named = r.task.provider.as_deref().and_then(Provider::parse);
        let prefixed = r
            .model
            .as_deref()
            .and_then(|m| parse_model(m).ok())
            .and_then(|m| m.provider);
        named.or(prefixed).map(Choice::Remote).or(self.default)
    }

    /// Whether the run spends under `--max-cost`.
    pub fn budgeted(&self) -> bool {
        self.ledger.as_ref().is_some_and(|l| l.budget.is_some())
    }

    /// The request as it is sent: `--force-model` and the run's default settings
    /// applied. A budget changes nothing in it: its worst case is bounded by the
    /// model's longest reply instead (see [`Ledger::worst`]).
    pub(super) fn prepare(&self, r: &LlmRequest) -> LlmRequest {
        let mut sent = r.clone();
        if let Some(m) = &self.force_model {
            sent.model = Some(m.clone());
        }
        sent.settings = r.settings.or(&self.defaults);
        sent
    }

    /// The model `r` (as prepared) asks, by the name its answerer is sent: the task's
    /// (or `--force-model`'s), else the run's (`--model`, `TVM_MODEL`), else the
    /// provider's default. `None` when nothing names one, or nothing answers.
    pub(crate) fn asked_model(&self, r: &LlmRequest) -> Option<String> {
        self.model_for(r)?.asked(r)
    }

    /// What answers `r`, when anything is configured to.
    fn model_for(&self, r: &LlmRequest) -> Option<&dyn Model> {
        self.models.get(self.choose(r)?)
    }

    /// The request as sent (settings, inherited subset, files) and its reply.
    async fn llm(&self, r: &LlmRequest) -> (LlmRequest, Result<LlmReply, HostError>) {
        let mut sent = self.prepare(r);
        if sent.task.context.inherit == Inherit::Subset && !sent.context.is_empty() {
            let prompt: String = sent
                .messages
                .iter()
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>()
                .join("\n");
            sent.context = relevant_subset(&sent.context.to_string(), &prompt).into();
        }
        let assembled = self.context.assemble(&sent).await;
        // A file the task named and the model will not see is said where the user
        // looks, not only in the result's notes.
        let hint = match sent.requested_files.is_empty() {
            true => " (--require-files fails the task instead)",
            false => "",
        };
        for w in &assembled.unread {
            let task = &sent.task.name;
            self.say_warning(&format!(
                "task `{task}`: {w}; the model is asked without it{hint}"
            ));
        }
        if let Some(message) = assembled.failure {
            // The files the task needs could not be retrieved: it fails, and the model
            // is not called without them.
            let reason = Reason::ContextRetrievalFailure;
            return (sent, Err(HostError::new(reason, message)));
        }
        if !assembled.text.is_empty() {
            sent.context = if sent.context.is_empty() {
                assembled.text.clone()
            } else {
                format!("{}\n{}", sent.context, assembled.text)
            }
            .into();
        }
        let reply = match self.ask(&sent).await {
            Ok(mut reply) => {
                reply.context_files = assembled.files;
                // A provider's warnings (a server that refused structured output, a
                // setting the model does not take) are about the whole run: said on
                // stderr too, as they come, each once.
                for w in &reply.warnings {
                    self.say_warning(w);
                }
                let said = std::mem::replace(&mut reply.warnings, assembled.warnings);
                reply.warnings.extend(said);
                // Every model names the model of its reply (see `Model::complete`).
                Ok(reply)
            }
            Err(e) => Err(e.into()),
        };
        (sent, reply)
    }

    /// `r` with the settings its model does not take left out, as its adapter sends it
    /// (a reasoning model's temperature): what the trace shows.
    fn as_sent(&self, mut r: LlmRequest) -> LlmRequest {
        if let (Some(Choice::Remote(p)), Some(model)) = (self.choose(&r), self.asked_model(&r)) {
            r.settings = crate::providers::sendable(p, &model, &r).0;
        }
        r
    }

    /// A warning about the run (a `tracing` event, which `tvm` prints as `tvm:
    /// warning: ...` above its progress line), once per run for each text.
    fn say_warning(&self, text: &str) {
        let new = self
            .said
            .lock()
            .map_or(true, |mut said| said.insert(text.to_string()));
        if new {
            tracing::warn!("{text}");
        }
    }

    /// The model a reply that names none came from: its answerer's name for it, else
    /// the model asked for, else the pseudo-provider's name.
    fn model_name(&self, r: &LlmRequest) -> String {
        match (self.model_for(r), &r.model) {
            (Some(m), _) => m.reply_model(r),
            (None, Some(m)) => m.clone(),
            (None, None) => self.default.map_or("none", Choice::name).to_string(),
        }
    }

    async fn ask(&self, r: &LlmRequest) -> Result<LlmReply, CallError> {
        let unavailable = |message: String| {
            if let Ok(mut u) = self.unconfigured.lock() {
                u.get_or_insert_with(|| message.clone());
            }
            CallError::new(CallKind::Unconfigured, message)
        };
        let missing = |name: &str, key: &str, url: &str| {
            format!(
                "task `{}` needs provider `{name}`, but neither {key} nor {url} is set",
                r.task.name
            )
        };
        let Some(choice) = self.choose(r) else {
            return Err(unavailable(NO_PROVIDER.to_string()));
        };
        match self.models.get(choice) {
            Some(m) => m.complete(r).await,
            None => Err(unavailable(match choice {
                Choice::Remote(Provider::OpenAi) => {
                    missing("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL")
                }
                Choice::Remote(Provider::Anthropic) => {
                    missing("anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
                }
                Choice::Replay => "replay needs a cassette: --cassette FILE".into(),
                Choice::Echo => NO_PROVIDER.to_string(),
            })),
        }
    }
}

/// `inherit_context=subset`: the lines of the inherited context that share a word of
/// four letters or more with what the task asks, in their order.
pub fn relevant_subset(context: &str, prompt: &str) -> String {
    let words = |s| -> std::collections::HashSet<_> {
        let long = tv_stdlib::text::Words {
            min_chars: 4,
            ..Default::default()
        };
        tv_stdlib::text::words(s, long).collect()
    };
    let wanted = words(prompt);
    context
        .lines()
        .filter(|line| !words(line).is_disjoint(&wanted))
        .map(|l| format!("{l}\n"))
        .collect()
}

impl AsyncHost for RunHost {
    fn model_of(&self, r: &LlmRequest) -> String {
        self.model_name(&self.prepare(r))
    }

    async fn call(&self, _: CallId<'_>, request: &HostRequest) -> HostReply {
        let start = std::time::Instant::now();
        if let Some(p) = &self.progress {
            p.started();
        }
        // The trace shows what was sent: settings, model and context as the provider saw them.
        let (sent, reply) = match request {
            HostRequest::Llm(r) => {
                let (sent, reply) = self.llm(r).await;
                (Some(HostRequest::Llm(sent)), HostReply::Llm(reply))
            }
            HostRequest::Script(s) => (None, HostReply::Script(self.scripts.run(s).await)),
        };
        if let Some(p) = &self.progress {
            p.finished(&reply);
        }
        if let Some(t) = &self.trace {
            let shown = match sent {
                Some(HostRequest::Llm(r)) => Some(HostRequest::Llm(self.as_sent(r))),
                other => other,
            };
            t.write(shown.as_ref().unwrap_or(request), &reply, start.elapsed());
        }
        reply
    }
}

#[cfg(test)]
mod tests {
    use super::relevant_subset;

    #[test]
    fn a_subset_of_the_inherited_context_keeps_the_lines_the_task_is_about() {
        let context =
            "Step 1: the login form validates emails\nStep 2: the billing page shows invoices\n";
        assert_eq!(
            relevant_subset(context, "Fix the login validation"),
            "Step 1: the login form validates emails\n"
        );
        assert_eq!(relevant_subset(context, "unrelated"), "");
    }
}
