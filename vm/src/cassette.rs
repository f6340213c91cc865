//! Record and replay: every LLM reply of a run can be written to a cassette (JSON
//! lines), keyed by a hash of the normalized request, and a later run can be answered
//! from it with no network at all. A request the cassette lacks fails loudly.

use crate::host::{HostError, LlmReply, LlmRequest};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

/// What identifies a request: what the model is asked, not who is asked. The provider
/// and its default model stay out, so a cassette replays under any provider setting.
pub fn normalized(r: &LlmRequest) -> Value {
    json!({
        "model": r.task.model,
        "system": r.system_prompt,
        "context": r.context,
        "messages": r.messages.iter().map(|m| json!({"role": m.role, "content": m.content})).collect::<Vec<_>>(),
        "output": format!("{:?}", r.task.output),
    })
}

pub fn key(r: &LlmRequest) -> String {
    let digest = Sha256::digest(normalized(r).to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// One line of a cassette.
#[derive(Serialize, Deserialize)]
struct Entry {
    key: String,
    /// For people reading the cassette; replay uses only the key.
    task: String,
    prompt: String,
    reply: RecordedReply,
}

#[derive(Serialize, Deserialize)]
struct RecordedReply {
    content: String,
    input_tokens: u64,
    output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    subtask_request: Option<Value>,
}

/// Appends each reply to a cassette file as it arrives.
pub struct Recorder {
    file: Mutex<std::fs::File>,
}

impl Recorder {
    pub fn create(path: &Path) -> Result<Recorder, String> {
        let file = std::fs::File::create(path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(Recorder {
            file: Mutex::new(file),
        })
    }

    pub fn record(&self, r: &LlmRequest, reply: &LlmReply) -> Result<(), String> {
        let entry = Entry {
            key: key(r),
            task: r.task.name.clone(),
            prompt: r
                .messages
                .last()
                .map(|m| m.content.clone())
                .unwrap_or_default(),
            reply: RecordedReply {
                content: reply.content.clone(),
                input_tokens: reply.input_tokens,
                output_tokens: reply.output_tokens,
                subtask_request: reply.subtask_request.clone(),
            },
        };
        let line = serde_json::to_string(&entry).map_err(|e| e.to_string())?;
        let mut f = self
            .file
            .lock()
            .map_err(|_| "the cassette writer failed earlier".to_string())?;
        writeln!(f, "{line}")
            .and_then(|()| f.flush())
            .map_err(|e| format!("cannot write the cassette: {e}"))
    }
}

/// Replies by request key; the same request asked twice gets its replies in order.
pub struct Cassette {
    replies: Mutex<HashMap<String, VecDeque<LlmReply>>>,
}

impl Cassette {
    pub fn load(path: &Path) -> Result<Cassette, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read cassette {}: {e}", path.display()))?;
        let mut replies: HashMap<String, VecDeque<LlmReply>> = HashMap::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let e: Entry = serde_json::from_str(line).map_err(|err| {
                format!("{}:{}: not a cassette entry: {err}", path.display(), i + 1)
            })?;
            replies.entry(e.key).or_default().push_back(LlmReply {
                content: e.reply.content,
                input_tokens: e.reply.input_tokens,
                output_tokens: e.reply.output_tokens,
                subtask_request: e.reply.subtask_request,
                ..LlmReply::default()
            });
        }
        Ok(Cassette {
            replies: Mutex::new(replies),
        })
    }

    pub fn answer(&self, r: &LlmRequest) -> Result<LlmReply, HostError> {
        let k = key(r);
        let found = self
            .replies
            .lock()
            .ok()
            .and_then(|mut m| m.get_mut(&k).and_then(VecDeque::pop_front));
        found.ok_or_else(|| {
            let prompt: String = r.messages.last().map_or("", |m| m.content.as_str()).chars().take(80).collect();
            HostError {
                reason: "execution_halted".into(),
                message: format!(
                    "the cassette has no reply for request {k} (task `{}`, prompt {prompt:?}); record it with --record",
                    r.task.name
                ),
            }
        })
    }
}
