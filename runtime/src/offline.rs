//! Offline answers for `tvm test`: replies written in a test (`<reply match>`), then
//! cassettes. Nothing here sends a request anywhere; a request nothing answers fails
//! its task with a message naming it, so a test never reaches a provider.

use crate::cassette::Cassette;
use crate::model::{CallError, CallKind};
use std::sync::Mutex;
use tv_vm::host::{LlmReply, LlmRequest};

/// A reply written in a test: its text answers a request whose text holds `matches`
/// (every request when `None`).
#[derive(Clone, Debug)]
pub struct ReplyRule {
    pub matches: Option<String>,
    pub text: String,
}

/// The answers of one test run.
pub(crate) struct Offline {
    rules: Vec<ReplyRule>,
    /// How many times each rule has answered.
    used: Mutex<Vec<u32>>,
    cassettes: Vec<Cassette>,
}

/// The model name offline replies carry, so results show where they came from.
pub(crate) const OFFLINE_MODEL: &str = "offline";

impl Offline {
    pub(crate) fn new(rules: Vec<ReplyRule>, cassettes: Vec<Cassette>) -> Offline {
        let used = Mutex::new(vec![0; rules.len()]);
        Offline {
            rules,
            used,
            cassettes,
        }
    }

    /// The reply to `r`, by the one rule the README states ("Tests of workflows"):
    /// 1. the first reply, in the order written, whose `match` is part of the request
    ///    chooses that match; the replies with that same match answer in turn, and the
    ///    last of them repeats (a loop's evaluator says "no", then "yes");
    /// 2. else the first of the test's cassettes that holds the request;
    /// 3. else the replies without `match`, in turn, the last repeating;
    /// 4. else nothing: the task fails naming its prompt.
    ///
    /// A catch-all reply answers after the cassettes, so that a cassette written beside
    /// one still answers what it recorded.
    pub(crate) fn answer(
        &self,
        r: &LlmRequest,
        asked: Option<&str>,
    ) -> Result<LlmReply, CallError> {
        let matched = self
            .rules
            .iter()
            .find_map(|rule| rule.matches.as_deref().filter(|m| holds(r, m)));
        if let Some(m) = matched {
            return Ok(self.in_turn(|rule| rule.matches.as_deref() == Some(m)));
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
                Err(e) => misses.push(e.to_string()),
            }
        }
        if self.rules.iter().any(|rule| rule.matches.is_none()) {
            return Ok(self.in_turn(|rule| rule.matches.is_none()));
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
        Err(CallError::new(CallKind::Unanswered, message))
    }

    /// The reply of the rules `chosen` picks (at least one): the first not used yet,
    /// else the last of them again.
    fn in_turn(&self, chosen: impl Fn(&ReplyRule) -> bool) -> LlmReply {
        let group: Vec<usize> = (0..self.rules.len())
            .filter(|&i| chosen(&self.rules[i]))
            .collect();
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let pick = (group.iter().copied())
            .find(|&i| used[i] == 0)
            .or(group.last().copied())
            .unwrap_or_default();
        if let Some(n) = used.get_mut(pick) {
            *n = n.saturating_add(1);
        }
        LlmReply {
            content: self
                .rules
                .get(pick)
                .map_or(String::new(), |r| r.text.clone()),
            model: OFFLINE_MODEL.to_string(),
            cost: Some(0),
            ..LlmReply::default()
        }
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
        assert_eq!(e.reason(), tv_vm::result::Reason::ExecutionHalted);
        assert!(e.message().contains("\"Translate this\""), "{e}");
    }
}
