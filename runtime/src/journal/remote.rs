//! A journal kept outside this machine: a row of a batch spread over workers keeps its
//! journal in the server that hands out the rows, so the worker that takes the row
//! over after another stopped resumes it without repeating its finished calls.

use super::writer::Output;
use super::JournalError;
use futures::future::BoxFuture;
use std::path::Path;
use std::sync::Arc;

/// Where a journal kept elsewhere puts its lines. An append is durable when it
/// returns; one refused because another process wrote the log meanwhile (it took the
/// run over) is an error, and the run stops rather than write beside it.
pub trait RemoteLog: Send + Sync {
    fn append(&self, line: String) -> BoxFuture<'_, Result<(), JournalError>>;
    /// What to call the log in messages.
    fn name(&self) -> String;
}

/// Where a journal's lines go.
pub(super) enum Sink {
    File(Output),
    Remote(Arc<dyn RemoteLog>),
}

impl Sink {
    pub(super) fn name(&self) -> String {
        match self {
            Sink::File(out) => out.path().display().to_string(),
            Sink::Remote(log) => log.name(),
        }
    }

    pub(super) fn path(&self) -> &Path {
        match self {
            Sink::File(out) => out.path(),
            Sink::Remote(_) => Path::new(""),
        }
    }

    pub(super) fn on_disk(&self) -> bool {
        match self {
            Sink::File(out) => out.on_disk(),
            Sink::Remote(_) => false,
        }
    }

    /// Appends one line; with `sync`, it and every line before it are durable when
    /// this returns (a remote log's always are).
    pub(super) async fn append(&self, line: String, sync: bool) -> Result<(), JournalError> {
        match self {
            Sink::File(out) => out.append(line, sync).await,
            Sink::Remote(log) => log.append(line).await,
        }
    }

    pub(super) async fn sync(&self) -> Result<(), JournalError> {
        match self {
            Sink::File(out) => out.sync().await,
            Sink::Remote(_) => Ok(()),
        }
    }
}
