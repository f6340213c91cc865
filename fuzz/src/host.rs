//! The scripted host: LLM and script replies drawn from the fuzz input.

use arbitrary::Arbitrary;
use serde_json::{json, Map, Value};
use tv_vm::host::{Host, HostError, HostReply, HostRequest, LlmReply, ScriptReply};
use tv_vm::result::Reason;

/// A JSON value drawn from the fuzz input.
#[derive(Arbitrary, Debug, Clone)]
pub enum J {
    Null,
    Bool(bool),
    Int(i32),
    Float(f64),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    pub fn to_json(&self) -> Value {
        match self {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(*b),
            J::Int(i) => json!(i),
            J::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            J::Str(s) => Value::String(s.clone()),
            J::Arr(items) => Value::Array(items.iter().map(J::to_json).collect()),
            J::Obj(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

/// Words the generated templates and subtask requests share, so descriptions match.
pub(crate) const WORDS: &[&str] = &["fix", "the", "bug", "review", "code", "summarise", "notes"];
pub(crate) const KINDS: &[&str] = &["atomic", "sequential", "reduce", "map", "script"];
pub(crate) const TYPES: &[&str] = &[
    "any", "string", "number", "boolean", "null", "object", "array", "string[]", "[]", "bogus",
];

/// A host error with one of the reasons, chosen by the input.
fn failure(reason: u8, message: String) -> HostError {
    HostError::new(Reason::ALL[reason as usize % Reason::ALL.len()], message)
}

/// What the model answers.
#[derive(Arbitrary, Debug, Clone)]
pub enum Reply {
    /// The request's own prompt, as the echo provider does.
    Echo,
    Text(String),
    Json(J),
    /// A JSON document cut short.
    BrokenJson(J, u8),
    /// A request for a subtask, in the reply text or through the spawning tool.
    Subtask(Subtask),
    Failure(u8, String),
    /// A script reply to an LLM call: a host that got its wires crossed.
    Mismatched,
    /// A reply cut at the output limit.
    Truncated(String, Option<u8>),
}

#[derive(Arbitrary, Debug, Clone)]
pub struct Subtask {
    pub via_tool: bool,
    pub kind: u8,
    pub subtype: Option<u8>,
    pub description: Vec<u8>,
    pub inputs: Vec<(u8, J)>,
    pub hints: Vec<u8>,
    pub max_depth: Option<u8>,
    /// Drop a required field, so validation has something to refuse.
    pub drop: Option<u8>,
}

impl Subtask {
    fn request(&self) -> Value {
        let description: Vec<&str> = self
            .description
            .iter()
            .take(6)
            .map(|w| WORDS[*w as usize % WORDS.len()])
            .collect();
        let mut r = json!({
            "type": KINDS[self.kind as usize % KINDS.len()],
            "description": description.join(" "),
            "inputs": self.inputs.iter().take(4).map(|(k, v)| (format!("p{}", k % 4), v.to_json())).collect::<Map<_, _>>(),
        });
        if let Some(s) = self.subtype {
            r["subtype"] = json!(WORDS[s as usize % WORDS.len()]);
        }
        if !self.hints.is_empty() {
            r["template_hints"] = self
                .hints
                .iter()
                .take(3)
                .map(|h| json!(format!("f{}", h % 5)))
                .collect();
        }
        if let Some(m) = self.max_depth {
            r["max_depth"] = json!(m % 6);
        }
        if let (Some(d), Value::Object(o)) = (self.drop, &mut r) {
            o.remove(["type", "description", "inputs"][d as usize % 3]);
        }
        r
    }
}

/// What a script answers.
#[derive(Arbitrary, Debug, Clone)]
pub enum ScriptOutcome {
    /// Stdout is the command line itself.
    Echo,
    Ran {
        stdout: String,
        stderr: String,
        exit_code: i8,
    },
    Json(J, i8),
    Failure(u8, String),
    Mismatched,
}

/// A deterministic host: replies are taken in turn from its lists, which wrap around.
pub struct Scripted {
    pub replies: Vec<Reply>,
    pub scripts: Vec<ScriptOutcome>,
    pub tokens: u16,
    next_reply: usize,
    next_script: usize,
}

impl Scripted {
    pub fn new(replies: Vec<Reply>, scripts: Vec<ScriptOutcome>, tokens: u16) -> Scripted {
        Scripted {
            replies,
            scripts,
            tokens,
            next_reply: 0,
            next_script: 0,
        }
    }

    /// Plain text, JSON and broken JSON in turn; scripts echo their command.
    pub fn plain() -> Scripted {
        Scripted::new(
            vec![
                Reply::Echo,
                Reply::Json(J::Obj(vec![("answer".into(), J::Int(42))])),
                Reply::Text("not json {".into()),
            ],
            vec![ScriptOutcome::Echo],
            10,
        )
    }

    fn llm(&mut self, r: &tv_vm::host::LlmRequest) -> HostReply {
        let reply = self
            .replies
            .get(self.next_reply % self.replies.len().max(1));
        self.next_reply += 1;
        let ok = |content: String| {
            HostReply::Llm(Ok(LlmReply {
                content,
                input_tokens: u64::from(self.tokens),
                output_tokens: u64::from(self.tokens / 2),
                ..LlmReply::default()
            }))
        };
        match reply.cloned().unwrap_or(Reply::Echo) {
            Reply::Echo => HostReply::Llm(Ok(tv_vm::host::echo(r))),
            Reply::Text(t) => ok(t),
            Reply::Json(j) => ok(j.to_json().to_string()),
            Reply::BrokenJson(j, cut) => {
                let text = j.to_json().to_string();
                let mut at = (cut as usize).min(text.len().saturating_sub(1));
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                ok(text[..at].to_string())
            }
            Reply::Subtask(s) if s.via_tool => HostReply::Llm(Ok(LlmReply {
                subtask_request: Some(s.request()),
                context_files: vec!["a.txt".into()],
                warnings: vec!["capped".into()],
                ..LlmReply::default()
            })),
            Reply::Truncated(content, limit) => HostReply::Llm(Ok(LlmReply {
                content,
                truncated: true,
                max_tokens: limit.map(u64::from),
                ..LlmReply::default()
            })),
            Reply::Subtask(s) => {
                ok(json!({"status": "CONTINUATION", "subtask_request": s.request()}).to_string())
            }
            Reply::Failure(reason, message) => HostReply::Llm(Err(failure(reason, message))),
            Reply::Mismatched => HostReply::Script(Ok(ScriptReply::default())),
        }
    }

    fn script(&mut self, s: &tv_vm::host::ScriptRequest) -> HostReply {
        let outcome = self
            .scripts
            .get(self.next_script % self.scripts.len().max(1));
        self.next_script += 1;
        let ran = |stdout: String, stderr: String, exit_code: i8| {
            HostReply::Script(Ok(ScriptReply {
                stdout,
                stderr,
                exit_code: i32::from(exit_code),
                notes: Vec::new(),
            }))
        };
        match outcome.cloned().unwrap_or(ScriptOutcome::Echo) {
            ScriptOutcome::Echo => ran(s.command.clone(), String::new(), 0),
            ScriptOutcome::Ran {
                stdout,
                stderr,
                exit_code,
            } => ran(stdout, stderr, exit_code),
            ScriptOutcome::Json(j, code) => ran(j.to_json().to_string(), String::new(), code),
            ScriptOutcome::Failure(reason, message) => {
                HostReply::Script(Err(failure(reason, message)))
            }
            ScriptOutcome::Mismatched => HostReply::Llm(Ok(LlmReply::default())),
        }
    }
}

impl Host for Scripted {
    fn call(&mut self, request: &HostRequest) -> HostReply {
        match request {
            HostRequest::Llm(r) => self.llm(r),
            HostRequest::Script(s) => self.script(s),
        }
    }
}
