//! `tvm batch --nats URL --collect` and `--status`: what the server holds of a batch.

use super::{result_key, Server, CONSUMER, ROWS_STREAM};
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
async fn count(server: &Server, filter: &str) -> Result<u64, String> {
    let stream = server
        .js
        .get_stream("KV_tvm_results")
        .await
        .map_err(|e| format!("cannot read the results: {e}"))?;
    let subjects = stream
        .info_with_subjects(format!("$KV.tvm_results.{filter}"))
        .await
        .map_err(|e| format!("cannot read the results: {e}"))?;
    let n = subjects
        .try_fold(0u64, |n, _| async move { Ok(n + 1) })
        .await
        .map_err(|e| format!("cannot read the results: {e}"))?;
    Ok(n)
}

pub async fn status(server: &Server, batch: &str) -> Result<Status, String> {
    let record = server
        .batch(batch)
        .await?
        .ok_or_else(|| format!("the server has no batch {batch}"))?;
    let finished = count(server, &format!("r.{batch}.*")).await?;
    let failed = count(server, &format!("f.{batch}.*")).await?;
    let rows = server
        .js
        .get_stream(ROWS_STREAM)
        .await
        .map_err(|e| format!("cannot read the queue: {e}"))?;
    let queued = rows
        .info_with_subjects(format!("tvm.rows.{batch}"))
        .await
        .map_err(|e| format!("cannot read the queue: {e}"))?
        .try_fold(0u64, |n, (_, c)| async move { Ok(n + c as u64) })
        .await
        .map_err(|e| format!("cannot read the queue: {e}"))?;
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
pub async fn collect(server: &Server, batch: &str, out: &mut impl Write) -> Result<Status, String> {
    let record = server
        .batch(batch)
        .await?
        .ok_or_else(|| format!("the server has no batch {batch}"))?;
    let mut status = Status {
        rows: record.rows,
        ..Status::default()
    };
    let mut lines = stream::iter(0..record.rows)
        .map(|i| async move { server.results.get(result_key(batch, i)).await })
        .buffered(READS_IN_FLIGHT);
    while let Some(line) = lines.next().await {
        let Some(bytes) = line.map_err(|e| format!("cannot read the results: {e}"))? else {
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
            .map_err(|e| format!("cannot write a result: {e}"))?;
    }
    out.flush()
        .map_err(|e| format!("cannot write a result: {e}"))?;
    Ok(status)
}
