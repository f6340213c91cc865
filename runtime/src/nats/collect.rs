//! `tvm batch --nats URL --collect` and `--status`: what the server holds of a batch.

use super::{result_key, NatsError, NatsKind, Server, CONSUMER, ROWS_STREAM};
use futures::stream::{self, StreamExt, TryStreamExt};
use std::io::Write;

/// Result reads in flight while collecting: one at a time would take a round trip
/// per row.
const READS_IN_FLIGHT: usize = 64;

/// How far a batch has come.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Status {
    pub rows: u64,
    /// Rows with a result, and of those the failed.
    pub finished: u64,
    pub failed: u64,
    /// Rows of this batch still in the queue (waiting, or being run).
    pub queued: u64,
    /// Rows of every batch handed to a worker and not yet acknowledged.
    pub running_all: u64,
}

impl Status {
    pub fn line(&self, batch: &str) -> String {
        format!(
            "batch {batch}: {} rows, {} finished ({} completed, {} failed), {} not finished ({} in the queue); {} rows of all batches are with workers now",
            self.rows,
            self.finished,
            self.finished - self.failed.min(self.finished),
            self.failed,
            self.rows.saturating_sub(self.finished),
            self.queued,
            self.running_all
        )
    }
}

/// How many keys of the results bucket match `filter` (`r.BATCH.*`).
async fn count(server: &Server, filter: &str) -> Result<u64, NatsError> {
    let stream = server
        .js
        .get_stream("KV_tvm_results")
        .await
        .map_err(|e| unread("the results", e))?;
    let subjects = stream
        .info_with_subjects(format!("$KV.tvm_results.{filter}"))
        .await
        .map_err(|e| unread("the results", e))?;
    let n = subjects
        .try_fold(0u64, |n, _| async move { Ok(n + 1) })
        .await
        .map_err(|e| unread("the results", e))?;
    Ok(n)
}

/// A request to read `what` that the server did not carry out, for `e`.
fn unread(what: &str, e: impl std::error::Error + Send + Sync + 'static) -> NatsError {
    NatsError::new(NatsKind::Request, format!("cannot read {what}: {e}")).because(e)
}

/// The record of batch `batch`, which the server must hold.
async fn published(server: &Server, batch: &str) -> Result<super::BatchRecord, NatsError> {
    server.batch(batch).await?.ok_or_else(|| {
        NatsError::new(
            NatsKind::NotFound,
            format!("the server has no batch {batch}"),
        )
    })
}

pub async fn status(server: &Server, batch: &str) -> Result<Status, NatsError> {
    let record = published(server, batch).await?;
    let finished = count(server, &format!("r.{batch}.*")).await?;
    let failed = count(server, &format!("f.{batch}.*")).await?;
    let rows = server
        .js
        .get_stream(ROWS_STREAM)
        .await
        .map_err(|e| unread("the queue", e))?;
    let queued = rows
        .info_with_subjects(format!("tvm.rows.{batch}"))
        .await
        .map_err(|e| unread("the queue", e))?
        .try_fold(0u64, |n, (_, c)| async move { Ok(n + c as u64) })
        .await
        .map_err(|e| unread("the queue", e))?;
    let running_all = match rows.consumer_info(CONSUMER).await {
        Ok(info) => info.num_ack_pending as u64,
        Err(_) => 0,
    };
    Ok(Status {
        rows: record.rows,
        finished,
        failed,
        queued,
        running_all,
    })
}

/// Writes the result line of every finished row of `batch` to `out`, in the order of
/// the rows; the status says how many were not finished.
pub async fn collect(
    server: &Server,
    batch: &str,
    out: &mut impl Write,
) -> Result<Status, NatsError> {
    let record = published(server, batch).await?;
    let mut status = Status {
        rows: record.rows,
        ..Status::default()
    };
    let mut lines = stream::iter(0..record.rows)
        .map(|i| async move { server.results.get(result_key(batch, i)).await })
        .buffered(READS_IN_FLIGHT);
    while let Some(line) = lines.next().await {
        let read = line.map_err(|e| NatsError::from_server(e).context("cannot read the results"));
        let Some(bytes) = read? else {
            continue;
        };
        status.finished += 1;
        let failed = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .is_some_and(|v| v.get("status").and_then(|s| s.as_str()) != Some("COMPLETE"));
        if failed {
            status.failed += 1;
        }
        out.write_all(&bytes)
            .and_then(|()| out.write_all(b"\n"))
            .map_err(unwritten)?;
    }
    out.flush().map_err(unwritten)?;
    Ok(status)
}

/// A result that could not be written where it was collected to.
fn unwritten(e: std::io::Error) -> NatsError {
    NatsError::new(NatsKind::Local, format!("cannot write a result: {e}")).because(e)
}
