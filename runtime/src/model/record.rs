//! Recording (`--record`): a layer that writes every reply down as it comes, so that
//! `--provider replay` can answer the same requests later.

use super::{CallError, CallKind, Completion, Model};
use crate::cassette::Recorder;
use std::sync::Arc;
use tv_vm::host::LlmRequest;

/// `inner`, with each of its replies written to `recorder` before it is given back. A
/// reply that cannot be written halts the run: a recording with holes would fail its
/// replay later, far from the cause.
pub struct Recorded {
    pub inner: Arc<dyn Model>,
    pub recorder: Arc<Recorder>,
}

impl Model for Recorded {
    fn asked(&self, r: &LlmRequest) -> Option<String> {
        self.inner.asked(r)
    }

    fn reply_model(&self, r: &LlmRequest) -> String {
        self.inner.reply_model(r)
    }

    fn complete<'a>(&'a self, r: &'a LlmRequest) -> Completion<'a> {
        Completion::later(async move {
            let reply = self.inner.complete(r).await?;
            let asked = self.inner.asked(r);
            self.recorder
                .record(r, asked.as_deref(), &reply)
                .map_err(|message| CallError::new(CallKind::Recording, message))?;
            Ok(reply)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::{Cassette, RecordMode};
    use crate::host::Choice;
    use crate::model::{Echo, Models, Replay};
    use futures::executor::block_on;
    use tv_vm::bundle::TaskMeta;
    use tv_vm::host::Message;

    fn request(prompt: &str) -> LlmRequest {
        LlmRequest {
            query: None,
            requested_files: Vec::new(),
            task: TaskMeta::named("review").into(),
            system_prompt: "You are terse.".into(),
            messages: vec![Message::user(prompt.into())].into(),
            context: Default::default(),
            model: None,
            settings: Default::default(),
        }
    }

    #[test]
    fn a_dry_run_recorded_through_the_layer_replays_to_the_same_replies() {
        let path = std::env::temp_dir().join(format!("record-layer-{}.jsonl", std::process::id()));
        let recorder = Arc::new(Recorder::create(&path, RecordMode::Overwrite).unwrap());
        let mut models = Models::default();
        models.set(
            Choice::Echo,
            Arc::new(Echo {
                default_model: Some("gpt-4o".into()),
            }),
        );
        models.layer(|inner| {
            let recorder = recorder.clone();
            Arc::new(Recorded { inner, recorder })
        });
        let echo = models.get(Choice::Echo).expect("echo is always there");
        assert_eq!(
            echo.asked(&request("a")).as_deref(),
            Some("gpt-4o"),
            "forwarded"
        );
        let first = block_on(echo.complete(&request("Review a"))).expect("echoed");
        let second = block_on(echo.complete(&request("Review b"))).expect("echoed");
        assert_eq!(first.model, "echo");
        drop(models);
        let replay = Replay::cassette(Cassette::load(&path).unwrap(), Some("gpt-4o".into()));
        for (prompt, recorded) in [("Review a", first), ("Review b", second)] {
            let again = block_on(replay.complete(&request(prompt))).expect("recorded");
            assert_eq!(again.content, recorded.content, "{prompt}");
            assert_eq!((again.cost, again.cached), (Some(0), true));
        }
        let missed = block_on(replay.complete(&request("Review c"))).unwrap_err();
        assert_eq!(missed.kind(), CallKind::Unanswered, "{missed}");
        let _ = std::fs::remove_file(&path);
    }
}
