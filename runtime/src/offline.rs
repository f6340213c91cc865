//! Offline answers for `tvm test`: replies written in a test (`<reply match>`), then
//! cassettes. Nothing here sends a request anywhere; a request nothing answers fails
//! its task with a message naming it, so a test never reaches a provider.

use crate::cassette::Cassette;
use std::sync::Mutex;
use tv_vm::host::{HostError, LlmReply, LlmRequest};
use tv_vm::result::Reason;

/// A reply written in a test: its text answers a request whose text holds `matches`
/// (every request when `None`).
#[derive(Clone, Debug)]
pub struct ReplyRule {
    pub matches: Option<String>,
    pub text: String,
}

/// The answers of one test run.
pub struct Offline {
    rules: Vec<ReplyRule>,
    /// How many times each rule has answered.
    used: Mutex<Vec<u32>>,
    cassettes: Vec<Cassette>,
}

/// The model name offline replies carry, so results show where they came from.
pub const OFFLINE_MODEL: &str = "offline";

impl Offline {
    pub fn new(rules: Vec<ReplyRule>, cassettes: Vec<Cassette>) -> Offline {
        let used = Mutex::new(vec![0; rules.len()]);
        Offline {
            rules,
            used,
            cassettes,
        }
    }

    /// The reply to `r`: among the rules whose text it holds, the first not used yet, in
    /// the order they were written, else the last of them again (a loop asking the same
    /// question can be given a sequence of answers); else the first cassette holding a
    /// reply for it.
    pub fn answer(&self, r: &LlmRequest, asked: Option<&str>) -> Result<LlmReply, HostError> {
        if let Some(text) = self.by_rules(r) {
            return Ok(LlmReply {
                content: text,
                model: OFFLINE_MODEL.to_string(),
                cost: Some(0),
                ..LlmReply::default()
            });
        }
        let mut misses = Vec::new();
        for c in &self.cassettes {
            match c.answer(r, asked) {
                Ok(reply) => {
                    return Ok(LlmReply {
                        cost: Some(0),
                        cached: true,
                        ..reply
                    })
                }
                Err(e) => misses.push(e.message),
            }
        }
        let prompt: String = r
            .messages
            .last()
            .map_or("", |m| m.content.as_str())
            .chars()
            .take(120)
            .collect();
        let mut message = format!(
            "no offline reply for task `{}` (prompt {prompt:?}): add a <reply match=\"...\"> whose text is part of the request",
            r.task.name
        );
        for miss in misses {
            message.push_str("; ");
            message.push_str(&miss);
        }
        Err(HostError::new(Reason::ExecutionHalted, message))
    }

    /// Rules with a `match` come first: a catch-all answers only what none of them does.
    fn by_rules(&self, r: &LlmRequest) -> Option<String> {
        let specific: Vec<usize> = (0..self.rules.len())
            .filter(|&i| {
                self.rules[i]
                    .matches
                    .as_deref()
                    .is_some_and(|m| holds(r, m))
            })
            .collect();
        let matching = if specific.is_empty() {
            (0..self.rules.len())
                .filter(|&i| self.rules[i].matches.is_none())
                .collect()
        } else {
            specific
        };
        let last = *matching.last()?;
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let pick = matching
            .iter()
            .copied()
            .find(|&i| used[i] == 0)
            .unwrap_or(last);
        used[pick] = used[pick].saturating_add(1);
        Some(self.rules[pick].text.clone())
    }
}

/// Whether any text the model would be sent (system text, context, messages) holds `m`.
fn holds(r: &LlmRequest, m: &str) -> bool {
    r.system_prompt.contains(m)
        || r.context.to_string().contains(m)
        || r.messages.iter().any(|msg| msg.content.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tv_vm::bundle::TaskMeta;
    use tv_vm::host::Message;

    fn request(prompt: &str) -> LlmRequest {
        LlmRequest {
            query: None,
            requested_files: Vec::new(),
            task: TaskMeta::named("t").into(),
            system_prompt: String::new(),
            messages: vec![Message::user(prompt.into())].into(),
            context: Default::default(),
            model: None,
            settings: Default::default(),
        }
    }

    fn rule(matches: Option<&str>, text: &str) -> ReplyRule {
        ReplyRule {
            matches: matches.map(str::to_string),
            text: text.to_string(),
        }
    }

    #[test]
    fn replies_with_the_same_match_answer_in_turn_and_the_last_one_repeats() {
        let offline = Offline::new(
            vec![
                rule(Some("Evaluate"), "no"),
                rule(Some("Evaluate"), "yes"),
                rule(None, "anything"),
            ],
            Vec::new(),
        );
        let answers: Vec<String> = ["Evaluate a", "Evaluate b", "Evaluate c", "Draft"]
            .iter()
            .map(|p| offline.answer(&request(p), None).expect("answered").content)
            .collect();
        assert_eq!(answers, ["no", "yes", "yes", "anything"]);
    }

    #[test]
    fn a_request_nothing_answers_fails_naming_its_prompt() {
        let offline = Offline::new(vec![rule(Some("Summarise"), "ok")], Vec::new());
        let e = offline
            .answer(&request("Translate this"), None)
            .unwrap_err();
        assert_eq!(e.reason, Reason::ExecutionHalted);
        assert!(e.message.contains("\"Translate this\""), "{}", e.message);
    }
}
