//! Record and replay: every LLM reply of a run can be written to a cassette (JSON
//! lines), keyed by a hash of the normalized request, and a later run can be answered
//! from it with no network at all. A request the cassette lacks fails loudly.
//!
//! The key holds the model that was asked (its name as the provider is sent it), so a
//! cassette never answers for another model. A task that names no model asks the run's
//! (`--model`, `TVM_MODEL`, else the provider's default); such entries are marked, and a
//! replay that names no model either (no `--model`, `TVM_MODEL` or `<model>`) is answered
//! with them, as the run that recorded them was.

use crate::digest::sha256_hex;
use crate::files;
use crate::model::{CallError, CallKind};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use tv_vm::bundle::Output;
use tv_vm::host::{LlmReply, LlmRequest};

/// The cassette format: 2 since keys hold the model asked. Entries without a version
/// were keyed with `model: null` for every task that named no model.
const VERSION: u32 = 2;

/// What identifies a request: what the model is asked and which model is asked
/// (`asked`, the name the provider is sent; `None` when a replay names none), not who
/// is asked: the provider stays out, so a cassette replays under any provider that
/// serves the model. Settings and the subtask tool are in only when a request has them,
/// so cassettes recorded before they existed keep their keys.
pub fn normalized(r: &LlmRequest, asked: Option<&str>) -> Value {
    let mut v = json!({
        "model": asked,
        "system": r.system_prompt,
        "context": r.context,
        "messages": r.messages.iter().map(|m| json!({"role": m.role, "content": m.content})).collect::<Vec<_>>(),
        "output": output(&r.task.output),
    });
    if !r.settings.is_empty() {
        v["settings"] = json!(r.settings);
    }
    if r.task.subtasks {
        v["subtasks"] = json!(true);
    }
    v
}

/// What a request asks for as its output: `"text"`, `"json"`, or the JSON Schema of
/// its declared type: what the provider is told, in a form that does not change when
/// the machine's own types are renamed.
fn output(o: &Output) -> Value {
    match o {
        Output::Text => json!("text"),
        Output::Json(None) => json!("json"),
        Output::Json(Some(ty)) => json!({"json": tv_stdlib::types::json_schema(ty.as_type())}),
    }
}

pub fn key(r: &LlmRequest, asked: Option<&str>) -> String {
    digest(&normalized(r, asked))
}

fn digest(normalized: &Value) -> String {
    sha256_hex(normalized.to_string().as_bytes())
}

/// `normalized` as a replay that names no model asks it.
fn unnamed(normalized: &Value) -> Value {
    let mut v = normalized.clone();
    v["model"] = Value::Null;
    v
}

/// One line of a cassette.
#[derive(Serialize, Deserialize)]
struct Entry {
    /// [`VERSION`]; absent (1) in cassettes recorded before keys held the model.
    #[serde(default = "first_version")]
    version: u32,
    key: String,
    /// For people reading the cassette; replay uses only the key.
    task: String,
    prompt: String,
    reply: RecordedReply,
    /// The normalized request, so that a miss can say where a new request differs
    /// (absent in cassettes recorded before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    request: Option<Value>,
    /// The task named no model: the run's was asked, and a replay that names none is
    /// answered with this entry.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    default_model: bool,
}

fn first_version() -> u32 {
    1
}

#[derive(Serialize, Deserialize)]
struct RecordedReply {
    content: String,
    input_tokens: u64,
    output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    subtask_request: Option<Value>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    model: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
}

/// Appends each reply to a cassette file as it arrives.
pub struct Recorder {
    file: Mutex<std::fs::File>,
}

/// What recording does with a cassette file that exists already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordMode {
    /// Refuse it: a cassette is a record of replies paid for, not to be lost to a typo.
    New,
    /// Keep its entries and add this run's after them.
    Append,
    /// Replace it.
    Overwrite,
}

impl Recorder {
    pub fn create(path: &Path, mode: RecordMode) -> Result<Recorder, String> {
        let mut options = std::fs::OpenOptions::new();
        match mode {
            RecordMode::New => options.write(true).create_new(true),
            RecordMode::Append => options.read(true).append(true).create(true),
            RecordMode::Overwrite => options.write(true).create(true).truncate(true),
        };
        // A cassette is read back: a FIFO or a device would lose the replies (or, with
        // no reader, hold the run up), so only a regular file is written.
        let file = files::open_with(path, &mut options).map_err(|e| match e {
            files::FileError::Io(e) if e.kind() == std::io::ErrorKind::AlreadyExists => format!(
                "--record {}: the file exists; pass --record-mode append to add this run's \
                 replies to it, or --record-mode overwrite to replace it",
                path.display()
            ),
            files::FileError::NotRegular(what) => format!(
                "--record {} is {what}, not a regular file: a cassette is read back",
                path.display()
            ),
            e => format!("cannot create {}: {e}", path.display()),
        })?;
        if mode == RecordMode::Append {
            end_line(&file).map_err(|e| format!("cannot append to {}: {e}", path.display()))?;
        }
        Ok(Recorder {
            file: Mutex::new(file),
        })
    }

    /// Writes down `reply` to `r`, which asked the model `asked` (`None`: no model was
    /// named, as in a dry run).
    pub fn record(
        &self,
        r: &LlmRequest,
        asked: Option<&str>,
        reply: &LlmReply,
    ) -> Result<(), String> {
        let request = normalized(r, asked);
        let entry = Entry {
            version: VERSION,
            key: digest(&request),
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
                model: reply.model.clone(),
                truncated: reply.truncated,
                max_tokens: reply.max_tokens,
            },
            request: Some(request),
            default_model: r.model.is_none(),
        };
        let line = serde_json::to_string(&entry).map_err(|e| e.to_string())?;
        let mut f = self
            .file
            .lock()
            .map_err(|_| "the cassette writer failed earlier".to_string())?;
        // One write: a run killed in between leaves no entry without its line end.
        f.write_all(format!("{line}\n").as_bytes())
            .and_then(|()| f.flush())
            .map_err(|e| format!("cannot write the cassette: {e}"))
    }
}

/// Ends the last line of a cassette opened for appending when a run killed while
/// writing it left it without its line end, so that the next entry starts a line.
fn end_line(mut file: &std::fs::File) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    if file.metadata()?.len() == 0 {
        return Ok(());
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8];
    file.read_exact(&mut last)?;
    if last[0] != b'\n' {
        file.write_all(b"\n")?;
    }
    Ok(())
}

/// The most memory a cassette's entries may take once read, by
/// [`tv_stdlib::values::json_weight_bound`]: twice the most its file may have.
pub(crate) const MAX_MEMORY: u64 = 2 * files::CASSETTE.max;

/// Replies by request key; the same request asked twice gets its replies in order.
pub struct Cassette {
    /// Every recorded reply, and whether it was used.
    replies: Mutex<Vec<Option<LlmReply>>>,
    /// The replies of each key, in order.
    by_key: HashMap<String, VecDeque<usize>>,
    /// The replies a replay that names no model gets, by the key with `model: null`.
    by_unnamed: HashMap<String, VecDeque<usize>>,
    /// Every recorded request (task name, normalized request when kept, prompt), in
    /// order, to explain a miss.
    recorded: Vec<(String, Option<Value>, String)>,
    /// `--max-reply-bytes`: a recorded reply larger than this fails its call, as the
    /// provider's reply would have.
    max_reply_bytes: usize,
    /// Entries recorded before keys held the model.
    old_entries: usize,
}

impl Cassette {
    /// The cassette at `path`: a regular file within `files::CASSETTE`.
    pub fn load(path: &Path) -> Result<Cassette, String> {
        let text =
            files::read_text(path, files::CASSETTE).map_err(|e| format!("the cassette {e}"))?;
        Cassette::parse(&text, &path.display().to_string())
    }

    /// The cassette `text` holds; errors name it `shown` with the line. Its entries are
    /// measured before each is parsed: a cassette may come with the templates it tests,
    /// and JSON of small values takes many times its length once read
    /// (`MAX_MEMORY`).
    pub fn parse(text: &str, shown: &str) -> Result<Cassette, String> {
        let mut weight = 0u64;
        for (i, line) in text.lines().enumerate() {
            weight = weight.saturating_add(tv_stdlib::values::json_weight_bound(line.as_bytes()));
            if weight > MAX_MEMORY {
                return Err(format!(
                    "{shown}:{}: the cassette's entries would take more than {} once read (JSON \
                     of small values takes many times its length), so it is not read",
                    i + 1,
                    files::size(MAX_MEMORY)
                ));
            }
        }
        let mut replies = Vec::new();
        let mut by_key: HashMap<String, VecDeque<usize>> = HashMap::new();
        let mut by_unnamed: HashMap<String, VecDeque<usize>> = HashMap::new();
        let mut recorded = Vec::new();
        let mut old_entries = 0;
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let e: Entry = serde_json::from_str(line)
                .map_err(|err| format!("{shown}:{}: not a cassette entry: {err}", i + 1))?;
            let n = replies.len();
            if e.version < VERSION {
                old_entries += 1;
                // Keyed with `model: null` when its task named no model: what a replay
                // naming none asks, as it always did. Any other old key matches nothing.
                let unnamed_key = e.request.as_ref().is_none_or(|r| r["model"].is_null());
                if unnamed_key {
                    by_unnamed.entry(e.key.clone()).or_default().push_back(n);
                }
            } else {
                by_key.entry(e.key.clone()).or_default().push_back(n);
                if let Some(request) = e.request.as_ref().filter(|_| e.default_model) {
                    let k = digest(&unnamed(request));
                    by_unnamed.entry(k).or_default().push_back(n);
                }
            }
            recorded.push((e.task, e.request, e.prompt));
            replies.push(Some(LlmReply {
                content: e.reply.content,
                input_tokens: e.reply.input_tokens,
                output_tokens: e.reply.output_tokens,
                subtask_request: e.reply.subtask_request,
                model: e.reply.model,
                truncated: e.reply.truncated,
                max_tokens: e.reply.max_tokens,
                ..LlmReply::default()
            }));
        }
        Ok(Cassette {
            replies: Mutex::new(replies),
            by_key,
            by_unnamed,
            recorded,
            old_entries,
            max_reply_bytes: crate::providers::DEFAULT_MAX_REPLY_BYTES,
        })
    }

    /// The cassette with replies capped at `cap` bytes (`--max-reply-bytes`).
    pub fn with_max_reply_bytes(mut self, cap: usize) -> Cassette {
        self.max_reply_bytes = cap;
        self
    }

    /// The reply to `r` asked of the model `asked` (`None`: the replay names no model,
    /// and the replies recorded for tasks that named none answer).
    pub fn answer(&self, r: &LlmRequest, asked: Option<&str>) -> Result<LlmReply, CallError> {
        let k = key(r, asked);
        let index = match asked {
            Some(_) => &self.by_key,
            None => &self.by_unnamed,
        };
        let found = self.replies.lock().ok().and_then(|mut replies| {
            let order = index.get(&k)?;
            order.iter().find_map(|&i| replies[i].take())
        });
        if let Some(reply) = &found {
            if reply.content.len() > self.max_reply_bytes {
                return Err(CallError::new(
                    CallKind::TooLarge,
                    format!(
                        "replay: {}",
                        crate::providers::too_large(self.max_reply_bytes)
                    ),
                ));
            }
        }
        found.ok_or_else(|| {
            let prompt: String = r.messages.last().map_or("", |m| m.content.as_str()).chars().take(80).collect();
            let model = match asked {
                Some(m) => format!("model `{m}`"),
                None => "no model named".to_string(),
            };
            CallError::new(
                CallKind::Unanswered,
                format!(
                    "the cassette has no reply for request {k} (task `{}`, {model}, prompt {prompt:?}){}{}",
                    r.task.name,
                    self.nearest_difference(r, asked),
                    self.predates(asked).unwrap_or_else(|| "; record it with --record".to_string()),
                ),
            )
        })
    }

    /// Why a request that names a model may miss a cassette recorded before keys held
    /// the model: its entries answer only a replay that names none.
    fn predates(&self, asked: Option<&str>) -> Option<String> {
        match asked {
            Some(m) if self.old_entries > 0 => Some(format!(
                ";\n  {} of its entries were recorded before cassette keys held the model asked, \
                 so they answer only a replay that names no model; record the cassette again \
                 with --record (and --model {m} to keep this model) so that its keys name the model",
                self.old_entries
            )),
            _ => None,
        }
    }

    /// Where `r` differs from the recorded request nearest to it: the one of the same
    /// task, else any, with the fewest differing fields.
    fn nearest_difference(&self, r: &LlmRequest, model: Option<&str>) -> String {
        let asked = normalized(r, model);
        let prompt = r.messages.last().map_or("", |m| m.content.as_str());
        let candidates = self
            .recorded
            .iter()
            .filter(|(task, ..)| *task == r.task.name)
            .chain(
                self.recorded
                    .iter()
                    .filter(|(task, ..)| *task != r.task.name),
            );
        let best = candidates
            .map(|(task, request, recorded_prompt)| {
                let diffs = match request {
                    Some(req) => differences(req, &asked),
                    None => differences(
                        &json!({"prompt": recorded_prompt}),
                        &json!({"prompt": prompt}),
                    ),
                };
                (task, request, diffs)
            })
            .min_by_key(|(task, _, d)| (**task != r.task.name, d.len()));
        match best {
            // The same request of another model: what to change is the model.
            Some((task, Some(req), diffs))
                if diffs.len() == 1 && diffs[0].starts_with("`model`") =>
            {
                format!(
                ";\n  the cassette holds this request of task `{task}` {}, and this run asks {} \
                 (--model, TVM_MODEL or the task's <model> choose it)",
                shown(&req["model"]),
                match asked["model"].as_str() {
                    Some(m) => format!("for model `{m}`"),
                    None => "naming no model".to_string(),
                },
            )
            }
            Some((task, _, diffs)) if !diffs.is_empty() => format!(
                ";\n  nearest recorded request (task `{task}`) differs in {}",
                diffs.join("; ")
            ),
            _ => String::new(),
        }
    }
}

/// The fields in which two normalized requests differ, each with where and how.
fn differences(recorded: &Value, asked: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let (a, b) = (
        recorded.as_object().unwrap_or(&empty),
        asked.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let (x, y) = (
                a.get(k).unwrap_or(&Value::Null),
                b.get(k).unwrap_or(&Value::Null),
            );
            (x != y).then(|| format!("`{k}`: {}", first_difference(&text(x), &text(y))))
        })
        .collect()
}

/// A model of a normalized request, for a message.
fn shown(model: &Value) -> String {
    match model.as_str() {
        Some(m) => format!("for model `{m}`"),
        None => "with no model in its key".to_string(),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Where two texts part: the character position and a short excerpt of each.
fn first_difference(recorded: &str, asked: &str) -> String {
    let at = recorded
        .chars()
        .zip(asked.chars())
        .take_while(|(x, y)| x == y)
        .count();
    let excerpt = |s: &str| -> String { s.chars().skip(at.saturating_sub(10)).take(40).collect() };
    format!(
        "from character {at}, recorded {:?}, asked {:?}",
        excerpt(recorded),
        excerpt(asked)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tv_vm::bundle::TaskMeta;
    use tv_vm::host::Message;

    fn request(task: &str, prompt: &str, temperature: Option<f64>) -> LlmRequest {
        LlmRequest {
            query: None,
            requested_files: Vec::new(),
            task: TaskMeta::named(task).into(),
            system_prompt: "You are terse.".into(),
            messages: vec![Message::user(prompt.into())].into(),
            context: Default::default(),
            model: None,
            settings: tv_vm::bundle::ModelSettings {
                temperature,
                ..Default::default()
            },
        }
    }

    #[test]
    fn a_miss_says_where_the_request_differs_from_the_nearest_recorded_one() {
        let path = std::env::temp_dir().join(format!("cassette-miss-{}.jsonl", std::process::id()));
        let recorder = Recorder::create(&path, RecordMode::Overwrite).unwrap();
        let reply = LlmReply {
            content: "ok".into(),
            ..LlmReply::default()
        };
        for (task, prompt) in [
            ("review#1", "Review the change to deploy.py"),
            ("other#1", "Unrelated"),
        ] {
            recorder
                .record(&request(task, prompt, None), Some("gpt-4o-mini"), &reply)
                .unwrap();
        }
        let cassette = Cassette::load(&path).unwrap();
        let asked = request("review#1", "Review the change to setup.py", Some(0.5));
        let message = cassette
            .answer(&asked, Some("gpt-4o-mini"))
            .unwrap_err()
            .message()
            .to_string();
        assert!(
            message.contains("nearest recorded request (task `review#1`)"),
            "{message}"
        );
        assert!(message.contains("`messages`: from character"), "{message}");
        assert!(message.contains("deploy.py"), "{message}");
        assert!(message.contains("`settings`"), "{message}");
        assert!(!message.contains("`system`"), "{message}");
        // The same request is answered, and only as often as it was recorded.
        let same = request("review#1", "Review the change to deploy.py", None);
        assert_eq!(
            cassette.answer(&same, Some("gpt-4o-mini")).unwrap().content,
            "ok"
        );
        assert!(cassette.answer(&same, Some("gpt-4o-mini")).is_err());
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_cassette_answers_only_the_model_it_recorded_and_a_replay_naming_none() {
        let path =
            std::env::temp_dir().join(format!("cassette-model-{}.jsonl", std::process::id()));
        let recorder = Recorder::create(&path, RecordMode::Overwrite).unwrap();
        let reply = LlmReply {
            content: "from gpt-4o-mini".into(),
            ..LlmReply::default()
        };
        let asked = request("review#1", "Review it", None);
        for _ in 0..2 {
            recorder
                .record(&asked, Some("gpt-4o-mini"), &reply)
                .unwrap();
        }
        let cassette = Cassette::load(&path).unwrap();
        let other = cassette
            .answer(&asked, Some("gpt-4o"))
            .unwrap_err()
            .to_string();
        assert!(
            other.contains("for model `gpt-4o-mini`, and this run asks for model `gpt-4o`"),
            "{other}"
        );
        assert_eq!(
            cassette
                .answer(&asked, Some("gpt-4o-mini"))
                .unwrap()
                .content,
            "from gpt-4o-mini"
        );
        assert_eq!(
            cassette.answer(&asked, None).unwrap().content,
            "from gpt-4o-mini"
        );
        assert!(
            cassette.answer(&asked, None).is_err(),
            "each reply answers once"
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_cassette_from_before_the_model_was_keyed_answers_a_replay_naming_none_and_says_so_otherwise(
    ) {
        let path = std::env::temp_dir().join(format!("cassette-old-{}.jsonl", std::process::id()));
        let asked = request("review#1", "Review it", None);
        let request = normalized(&asked, None);
        let line = json!({"key": digest(&request), "task": "review#1", "prompt": "Review it",
            "reply": {"content": "recorded", "input_tokens": 1, "output_tokens": 1}, "request": request});
        std::fs::write(&path, format!("{line}\n{line}\n")).unwrap();
        let cassette = Cassette::load(&path).unwrap();
        assert_eq!(cassette.answer(&asked, None).unwrap().content, "recorded");
        let named = cassette
            .answer(&asked, Some("gpt-4o"))
            .unwrap_err()
            .to_string();
        assert!(named.contains("2 of its entries"), "{named}");
        assert!(
            named.contains("recorded before cassette keys held the model asked")
                && named.contains("--model gpt-4o"),
            "{named}"
        );
        let _ = std::fs::remove_file(&path);
    }
}
