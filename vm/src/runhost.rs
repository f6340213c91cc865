//! The host `tvm run` uses: LLM calls go to the provider a task names (by
//! `<provider>` or a `provider:` model prefix) or else the run's default; scripts run as
//! real processes.

use crate::cassette::{Cassette, Recorder};
use crate::context::Assembler;
use crate::driver::AsyncHost;
use crate::host::{HostError, HostReply, HostRequest, LlmReply, LlmRequest};
use crate::observe::{Progress, Trace};
use crate::providers::{Anthropic, OpenAi, Settings};
use crate::script::ScriptRunner;
use tv_stdlib::models::{parse_model, Provider};

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
    default: Choice,
    /// Set with `--provider replay`.
    pub cassette: Option<Cassette>,
    /// Set with `--record`: every reply is written down.
    pub recorder: Option<Recorder>,
    /// Set with `--trace`: one line per host call.
    pub trace: Option<Trace>,
    pub progress: Option<Progress>,
    /// Files and workspace excerpts for each LLM call.
    pub context: Assembler,
    openai: Option<OpenAi>,
    anthropic: Option<Anthropic>,
    scripts: ScriptRunner,
}

impl RunHost {
    /// Builds the adapters the run may need; `tune` adjusts their settings (model,
    /// concurrency) after they were read from the environment.
    pub fn new(
        default: Choice,
        tune: impl Fn(&mut Settings),
        scripts: ScriptRunner,
    ) -> Result<RunHost, String> {
        let openai = usable(
            Settings::openai_from_env(),
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            &tune,
        )
        .map(OpenAi::new)
        .transpose()?;
        let anthropic = usable(
            Settings::anthropic_from_env(),
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            &tune,
        )
        .map(Anthropic::new)
        .transpose()?;
        let missing = match default {
            Choice::Remote(Provider::OpenAi) if openai.is_none() => {
                Some(("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL"))
            }
            Choice::Remote(Provider::Anthropic) if anthropic.is_none() => {
                Some(("anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"))
            }
            _ => None,
        };
        if let Some((name, key, url)) = missing {
            return Err(format!(
                "provider `{name}` needs {key} (or {url} pointing at a server that needs no key)"
            ));
        }
        Ok(RunHost::with_adapters(default, openai, anthropic, scripts))
    }

    /// A host with adapters made by the caller (tests, embedding).
    pub fn with_adapters(
        default: Choice,
        openai: Option<OpenAi>,
        anthropic: Option<Anthropic>,
        scripts: ScriptRunner,
    ) -> RunHost {
        RunHost {
            default,
            cassette: None,
            recorder: None,
            trace: None,
            progress: None,
            context: Assembler::default(),
            openai,
            anthropic,
            scripts,
        }
    }

    /// The provider when none is named: `TVM_PROVIDER` is read by the caller; else a
    /// provider whose key is present.
    pub fn default_from_keys() -> Option<Choice> {
        if env_set("OPENAI_API_KEY") || env_set("OPENAI_BASE_URL") {
            Some(Choice::Remote(Provider::OpenAi))
        } else if env_set("ANTHROPIC_API_KEY") || env_set("ANTHROPIC_BASE_URL") {
            Some(Choice::Remote(Provider::Anthropic))
        } else {
            None
        }
    }

    fn choose(&self, r: &LlmRequest) -> Choice {
        if matches!(self.default, Choice::Echo | Choice::Replay) {
            return self.default;
        }
        let named = r.task.provider.as_deref().and_then(Provider::parse);
        let prefixed = r
            .task
            .model
            .as_deref()
            .and_then(|m| parse_model(m).ok())
            .and_then(|m| m.provider);
        named.or(prefixed).map_or(self.default, Choice::Remote)
    }

    async fn llm(&self, r: &LlmRequest) -> Result<LlmReply, HostError> {
        let subset;
        let r = if r.task.context.inherit == "subset" && !r.context.is_empty() {
            let mut copy = r.clone();
            let prompt: String = r
                .messages
                .iter()
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>()
                .join("\n");
            copy.context = relevant_subset(&r.context.to_string(), &prompt).into();
            subset = copy;
            &subset
        } else {
            r
        };
        let assembled = self.context.assemble(r).await;
        let with_files;
        let r = if assembled.text.is_empty() {
            r
        } else {
            let mut copy = r.clone();
            copy.context = if r.context.is_empty() {
                assembled.text.clone()
            } else {
                format!("{}\n{}", r.context, assembled.text)
            }
            .into();
            with_files = copy;
            &with_files
        };
        let mut reply = self.ask(r).await?;
        reply.context_files = assembled.files;
        reply.warnings = assembled.warnings;
        if let Some(rec) = &self.recorder {
            rec.record(r, &reply).map_err(|message| HostError {
                reason: "execution_halted".into(),
                message,
            })?;
        }
        Ok(reply)
    }

    async fn ask(&self, r: &LlmRequest) -> Result<LlmReply, HostError> {
        let unavailable = |name: &str, key: &str| HostError {
            reason: "execution_halted".into(),
            message: format!(
                "task `{}` asks for provider `{name}`, but {key} is not set",
                r.task.name
            ),
        };
        match self.choose(r) {
            Choice::Echo => Ok(crate::host::echo(r)),
            Choice::Replay => match &self.cassette {
                Some(c) => c.answer(r),
                None => Err(HostError {
                    reason: "execution_halted".into(),
                    message: "replay needs a cassette: --cassette FILE".into(),
                }),
            },
            Choice::Remote(Provider::OpenAi) => match &self.openai {
                Some(p) => p.complete(r).await,
                None => Err(unavailable("openai", "OPENAI_API_KEY")),
            },
            Choice::Remote(Provider::Anthropic) => match &self.anthropic {
                Some(p) => p.complete(r).await,
                None => Err(unavailable("anthropic", "ANTHROPIC_API_KEY")),
            },
        }
    }
}

/// `inherit_context=subset`: the lines of the inherited context that share a word of
/// four letters or more with what the task asks, in their order.
pub fn relevant_subset(context: &str, prompt: &str) -> String {
    let words = |s: &str| -> std::collections::HashSet<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 4)
            .map(str::to_lowercase)
            .collect()
    };
    let wanted = words(prompt);
    context
        .lines()
        .filter(|line| !words(line).is_disjoint(&wanted))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Whether an environment variable is set to something.
fn env_set(k: &str) -> bool {
    std::env::var(k).is_ok_and(|v| !v.is_empty())
}

/// Settings are usable when a key is present or a base URL was chosen (a local server).
fn usable(
    mut s: Settings,
    key: &str,
    url: &str,
    tune: &impl Fn(&mut Settings),
) -> Option<Settings> {
    if !env_set(key) && !env_set(url) {
        return None;
    }
    tune(&mut s);
    Some(s)
}

impl AsyncHost for RunHost {
    async fn call(&self, request: &HostRequest) -> HostReply {
        let start = std::time::Instant::now();
        if let Some(p) = &self.progress {
            p.started();
        }
        let reply = match request {
            HostRequest::Llm(r) => HostReply::Llm(self.llm(r).await),
            HostRequest::Script(s) => HostReply::Script(self.scripts.run(s).await),
        };
        if let Some(p) = &self.progress {
            p.finished(&reply);
        }
        if let Some(t) = &self.trace {
            t.write(request, &reply, start.elapsed());
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
