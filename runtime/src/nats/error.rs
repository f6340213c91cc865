//! Why the NATS server could not be reached or did not do what was asked, as a value
//! callers branch on: the kind of failure (a key that exists, a revision that moved, a
//! server that refused us, a TLS handshake that failed, ...) beside the message `tvm`
//! prints, which names what was being done and the cause. The kind is read from the
//! client library's own error kinds and types, never from words.

use async_nats::jetstream::kv;
use std::error::Error;
use std::fmt::Display;

/// A request to the server, or what it holds, that failed.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct NatsError {
    kind: NatsKind,
    message: String,
    /// The client library's error (or the journal's, the file's), whose words the
    /// message already holds.
    #[source]
    source: Option<Box<dyn Error + Send + Sync>>,
}

/// What went wrong, for the code that decides what to do about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NatsKind {
    /// What this process was given to reach the server or run a batch does not hold
    /// together (the URL, the ways of signing in, the files, the host a batch asks for);
    /// nothing was asked of the server.
    Settings,
    /// No server answered at the URL, or the connection was lost.
    Connect,
    /// The server refused to let us in.
    Auth,
    /// The TLS connection failed: the server's certificate is not trusted, a handshake
    /// that went wrong, or certificate files that cannot be used.
    Tls,
    /// The server cannot make or open the streams and buckets: JetStream is off, or
    /// this user may not.
    NoJetStream,
    /// A key that is written only if absent is there already (a result stored, a batch
    /// of that name published).
    Exists,
    /// A key written with the revision it follows was written by another since.
    RevisionMoved,
    /// The server has no such batch or bundle (or no one batch, asked for the only).
    NotFound,
    /// The server did not answer in time.
    Timeout,
    /// What the server holds is larger than is read of it.
    Payload,
    /// What the server holds, or was to be given, is not what it should be: a journal
    /// that is not UTF-8, an object whose parts do not match it, JSON that cannot be
    /// written.
    Decode,
    /// A batch's record (or name) that cannot be read: damaged, another journal
    /// format's, another batch's.
    Record,
    /// A local file (the inputs, `--out`) could not be read or written.
    Local,
    /// Another request the server did not carry out.
    Request,
}

impl NatsError {
    pub fn new(kind: NatsKind, message: impl Into<String>) -> NatsError {
        NatsError {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// The same failure, caused by `source`.
    #[must_use]
    pub fn because(mut self, source: impl Into<Box<dyn Error + Send + Sync>>) -> NatsError {
        self.source = Some(source.into());
        self
    }

    /// The client library's `e`, of the kind it says, in its own words.
    pub(crate) fn from_server(e: impl Classified) -> NatsError {
        NatsError::new(e.nats_kind(), e.to_string()).because(e)
    }

    /// The same failure, its message after `what` was being done: `WHAT: MESSAGE`.
    #[must_use]
    pub fn context(mut self, what: impl Display) -> NatsError {
        self.message = format!("{what}: {}", self.message);
        self
    }

    pub fn kind(&self) -> NatsKind {
        self.kind
    }

    /// Whether this is the server's answer, which asking again would not change (a key
    /// that exists, a revision that moved), rather than a failure that may pass.
    pub fn settled(&self) -> bool {
        NatsError::settles(self.kind)
    }

    pub(super) fn settles(kind: NatsKind) -> bool {
        matches!(kind, NatsKind::Exists | NatsKind::RevisionMoved)
    }
}

/// A client library error whose kind says what went wrong.
pub(crate) trait Classified: Error + Send + Sync + 'static {
    fn nats_kind(&self) -> NatsKind;
}

impl Classified for kv::EntryError {
    fn nats_kind(&self) -> NatsKind {
        match self.kind() {
            kv::EntryErrorKind::TimedOut => NatsKind::Timeout,
            _ => NatsKind::Request,
        }
    }
}

impl Classified for kv::CreateError {
    fn nats_kind(&self) -> NatsKind {
        match self.kind() {
            kv::CreateErrorKind::AlreadyExists => NatsKind::Exists,
            _ => NatsKind::Request,
        }
    }
}

impl Classified for kv::UpdateError {
    fn nats_kind(&self) -> NatsKind {
        match self.kind() {
            kv::UpdateErrorKind::WrongLastRevision => NatsKind::RevisionMoved,
            kv::UpdateErrorKind::TimedOut => NatsKind::Timeout,
            _ => NatsKind::Request,
        }
    }
}

impl Classified for kv::PutError {
    fn nats_kind(&self) -> NatsKind {
        NatsKind::Request
    }
}

/// Whether the TLS handshake failed: rustls's error, which the client library hands on
/// inside an I/O error when the server's certificate is not trusted.
pub(super) fn tls_failed(e: &(dyn Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(err) = next {
        let inside_io = err
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
            .is_some_and(|inner| inner.is::<rustls::Error>());
        if inside_io || err.is::<rustls::Error>() {
            return true;
        }
        next = err.source();
    }
    false
}
