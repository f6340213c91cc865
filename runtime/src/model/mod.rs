//! Model calls: what answers an LLM request, behind one trait ([`Model`]): each
//! provider's adapter, echo, a cassette, a test's replies; and the layers around them
//! (recording). Why a call failed is a [`CallError`].
//!
//! A layer around model calls is a `Model` that holds another, forwards what it does
//! not change, and maps the [`Completion`]; [`Models::layer`] puts it around every
//! answerer of a run (see ARCHITECTURE.md, "Add a layer around model calls").

mod echo;
mod error;
mod record;
mod replay;

pub use echo::Echo;
pub use error::{CallError, CallKind};
pub use record::Recorded;
pub use replay::Replay;

use crate::host::Choice;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tv_stdlib::models::Provider;
use tv_vm::host::{LlmReply, LlmRequest};

/// What answers LLM requests.
pub trait Model: Send + Sync {
    /// The model `request` asks, by the name its answerer is sent or keys it by: the
    /// task's, else the run's default; `None` when nothing names one (echo).
    fn asked(&self, request: &LlmRequest) -> Option<String>;

    /// The model a reply to `request` counts as (`byModel`) when nothing else says.
    fn reply_model(&self, request: &LlmRequest) -> String;

    /// The reply to `request`. A reply always names its model (`reply_model` when the
    /// answerer's reply names none).
    fn complete<'a>(&'a self, request: &'a LlmRequest) -> Completion<'a>;
}

type Later<'a> = Pin<Box<dyn Future<Output = Result<LlmReply, CallError>> + Send + 'a>>;

/// A reply on its way: there already (echo, a cassette: no allocation, no timer), or
/// later (a provider).
pub struct Completion<'a>(Inner<'a>);

// The ready reply is kept inline: boxing it would allocate on every echo and replayed
// call, which is what `Ready` is for; a completion lives only as long as one call.
#[allow(clippy::large_enum_variant)]
enum Inner<'a> {
    Ready(Option<Result<LlmReply, CallError>>),
    Later(Later<'a>),
}

impl<'a> Completion<'a> {
    pub fn ready(reply: Result<LlmReply, CallError>) -> Completion<'a> {
        Completion(Inner::Ready(Some(reply)))
    }

    pub fn later(
        reply: impl Future<Output = Result<LlmReply, CallError>> + Send + 'a,
    ) -> Completion<'a> {
        Completion(Inner::Later(Box::pin(reply)))
    }
}

impl Future for Completion<'_> {
    type Output = Result<LlmReply, CallError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.0 {
            Inner::Ready(reply) => match reply.take() {
                Some(reply) => Poll::Ready(reply),
                // Polled again after it gave its reply: a caller's bug, answered as one.
                None => Poll::Ready(Err(CallError::new(
                    CallKind::QueueClosed,
                    "the reply was taken already",
                ))),
            },
            Inner::Later(f) => f.as_mut().poll(cx),
        }
    }
}

/// The answerers of a run, one per [`Choice`]: echo always, the others when configured.
#[derive(Clone)]
pub struct Models {
    echo: Arc<dyn Model>,
    replay: Option<Arc<dyn Model>>,
    openai: Option<Arc<dyn Model>>,
    anthropic: Option<Arc<dyn Model>>,
}

impl Default for Models {
    fn default() -> Models {
        Models {
            echo: Arc::new(Echo::default()),
            replay: None,
            openai: None,
            anthropic: None,
        }
    }
}

impl Models {
    /// What answers for `choice`, when it is configured.
    pub fn get(&self, choice: Choice) -> Option<&dyn Model> {
        self.slot(choice).map(|m| m.as_ref())
    }

    /// Makes `model` the answerer for `choice`.
    pub fn set(&mut self, choice: Choice, model: Arc<dyn Model>) {
        let slot = match choice {
            Choice::Echo => {
                self.echo = model;
                return;
            }
            Choice::Replay => &mut self.replay,
            Choice::Remote(Provider::OpenAi) => &mut self.openai,
            Choice::Remote(Provider::Anthropic) => &mut self.anthropic,
        };
        *slot = Some(model);
    }

    /// Puts `wrap` around every answerer configured now.
    pub fn layer(&mut self, wrap: impl Fn(Arc<dyn Model>) -> Arc<dyn Model>) {
        self.echo = wrap(self.echo.clone());
        for slot in [&mut self.replay, &mut self.openai, &mut self.anthropic] {
            if let Some(m) = slot.take() {
                *slot = Some(wrap(m));
            }
        }
    }

    fn slot(&self, choice: Choice) -> Option<&Arc<dyn Model>> {
        match choice {
            Choice::Echo => Some(&self.echo),
            Choice::Replay => self.replay.as_ref(),
            Choice::Remote(Provider::OpenAi) => self.openai.as_ref(),
            Choice::Remote(Provider::Anthropic) => self.anthropic.as_ref(),
        }
    }
}
