//! Why a journal could not be made, read or written, as a value callers branch on: the
//! kind of failure (another run holds the journal, a line that is not a record, a
//! format this tvm does not read, a disk that would not take a write, ...) beside the
//! message `tvm` prints, which names the journal and, where there is one, the cause.
//! Nothing branches on the message's words.

use std::error::Error;
use tv_vm::host::HostError;
use tv_vm::result::Reason;

/// A journal that could not be used.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct JournalError {
    kind: JournalKind,
    message: String,
    /// What failed underneath (the file system's error, the remote log's), whose words
    /// the message already holds.
    #[source]
    source: Option<Box<dyn Error + Send + Sync>>,
}

/// What went wrong, for the code that decides what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JournalKind {
    /// The file could not be opened, created or locked (but not for another run's lock).
    Open,
    /// Another process holds the journal's lock: a run is using it.
    Locked,
    /// A new run's journal file holds a run already.
    Exists,
    /// The file could not be read.
    Read,
    /// A line is not a record (line 1: not a header); `None` when the text is not UTF-8.
    Damaged { line: Option<usize> },
    /// The file holds no whole line: the run stopped before its header was written.
    Empty,
    /// The header names journal format `found`, not the one this tvm reads.
    Format { found: u64 },
    /// A record could not be written.
    Write,
    /// Records written could not be put on the disk.
    Sync,
    /// The run asks call `call` differently from the run the journal recorded.
    Mismatch { call: String },
    /// The log kept elsewhere refused a record, or could not be reached.
    Remote,
}

impl JournalError {
    pub fn new(kind: JournalKind, message: impl Into<String>) -> JournalError {
        JournalError {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// The same failure, caused by `source`.
    #[must_use]
    pub fn because(mut self, source: impl Into<Box<dyn Error + Send + Sync>>) -> JournalError {
        self.source = Some(source.into());
        self
    }

    /// The log kept elsewhere that refused a record, or could not be reached, for `e`,
    /// in its words.
    pub fn remote(e: impl Error + Send + Sync + 'static) -> JournalError {
        JournalError::new(JournalKind::Remote, e.to_string()).because(e)
    }

    pub fn kind(&self) -> &JournalKind {
        &self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// The reason a task fails with when its journal fails under it: the run's record of
    /// what happened can no longer be kept or trusted, so the run stops.
    pub fn reason(&self) -> Reason {
        Reason::ExecutionHalted
    }
}

impl From<JournalError> for HostError {
    fn from(e: JournalError) -> HostError {
        HostError::new(e.reason(), e.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_error_reads_as_its_message_and_halts_the_task_it_fails() {
        let io = std::io::Error::other("No space left on device");
        let e =
            JournalError::new(JournalKind::Sync, "cannot write the journal j.jsonl: x").because(io);
        assert_eq!(e.to_string(), "cannot write the journal j.jsonl: x");
        assert_eq!(
            e.source().map(ToString::to_string).as_deref(),
            Some("No space left on device")
        );
        let host = HostError::from(e);
        assert_eq!(host.reason, Reason::ExecutionHalted);
        assert_eq!(host.message, "cannot write the journal j.jsonl: x");
    }
}
