//! `tvm worker --nats URL`: pulls rows of any batch from the queue and runs them.
//!
//! A row is pulled only when the worker has room for it (at most `--concurrency` at
//! once), so the rows spread over the workers as fast as each one runs them. While a
//! row runs, its worker tells the server every third of the lease that it is still at
//! work; a worker that stops (killed, cut off) has its rows handed to another worker
//! once the lease has passed since its last word, and that worker resumes each from its
//! journal in the server. A row is acknowledged only after its result is stored, which
//! is done only if no result is there (create-if-absent): a row handed out twice has
//! one result.

use super::admit::{admit, Admitted, Batches, Running};
use super::lease::{Lease, TAKEN};
use super::log::KvLog;
use super::results::store_result;
use super::{
    patiently, result_key, BatchRecord, NatsError, NatsKind, RowMessage, Server, CONSUMER,
};
use crate::host::AsyncHost;
use crate::journal::{Journal, RemoteLog};
use crate::ledger::Shared;
use crate::run::Run;
use async_nats::jetstream::consumer::pull;
use async_nats::jetstream::consumer::{AckPolicy, PullConsumer};
use async_nats::jetstream::{AckKind, Message};
use futures::stream::{FuturesUnordered, SelectAll, StreamExt};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tv_vm::args;
use tv_vm::result::{Reason, Status, TaskError, TaskResult};

/// How long one request for rows waits for them before it is asked again.
const PULL_WAIT: Duration = Duration::from_secs(1);

pub struct WorkerOptions {
    /// Rows run at once.
    pub concurrency: usize,
    /// How long a row whose worker fell silent waits before another worker takes it.
    pub lease: Duration,
    /// Stop after this long with no row to run (`None`: run until stopped).
    pub idle_exit: Option<Duration>,
    /// Say on stderr how each row ended.
    pub verbose: bool,
    /// The provider that answers this worker's LLM calls, as the rows' journals name it.
    pub provider: Option<crate::host::Choice>,
}

/// What a worker did, for its last line.
#[derive(Debug, Default)]
pub struct Worked {
    pub completed: u64,
    pub failed: u64,
    /// Rows given up because another worker took them over.
    pub lost: u64,
    /// Rows delivered again whose result was already stored.
    pub already: u64,
    /// Messages that named no row of a published batch.
    pub dropped: u64,
}

enum Ended {
    Completed,
    Failed,
    Lost,
    Already,
}

/// Runs rows until stopped (or idle for `idle_exit`). `make_host` builds the host of
/// each batch a row of which comes (once per batch), given the batch's record and
/// what its calls share with the other workers.
pub async fn work<H, F>(
    server: &Server,
    options: &WorkerOptions,
    make_host: F,
) -> Result<Worked, NatsError>
where
    H: AsyncHost,
    F: Fn(&BatchRecord, Arc<dyn Shared>) -> Result<H, String>,
{
    let consumer = consumer(server, options.lease).await?;
    let concurrency = options.concurrency.max(1);
    let mut batches: Batches<H> = HashMap::new();
    let mut running = FuturesUnordered::new();
    let mut pulls = SelectAll::new();
    let mut asked: HashMap<u64, usize> = HashMap::new();
    let mut pull_id = 0u64;
    let mut worked = Worked::default();
    let mut last_busy = Instant::now();
    loop {
        let waiting: usize = asked.values().sum();
        let free = concurrency.saturating_sub(running.len() + waiting);
        if free > 0 {
            let request = consumer
                .batch()
                .max_messages(free)
                .expires(PULL_WAIT)
                .messages()
                .await;
            match request {
                Ok(rows) => {
                    let id = pull_id;
                    pull_id += 1;
                    asked.insert(id, free);
                    let end = futures::stream::once(async move { (id, None) });
                    pulls.push(rows.map(move |m| (id, Some(m))).chain(end).boxed());
                }
                // The server is away (restarting): ask again in a while.
                Err(_) => tokio::time::sleep(PULL_WAIT / 4).await,
            }
        }
        tokio::select! {
            Some((id, item)) = pulls.next(), if !pulls.is_empty() => match item {
                Some(Ok(message)) => {
                    if let Some(n) = asked.get_mut(&id) {
                        *n = n.saturating_sub(1);
                    }
                    last_busy = Instant::now();
                    match admit(server, &mut batches, &message, options.provider, &make_host).await {
                        Admitted::Run(run, row_message) => {
                            running.push(row(server, run, row_message, message, options));
                        }
                        Admitted::Failed => worked.failed += 1,
                        Admitted::Dropped(why) => {
                            worked.dropped += 1;
                            tracing::warn!("dropped a message: {why}");
                        }
                        Admitted::Stop(e) => {
                            // Left for another worker, or for this one once the server
                            // answers again.
                            let _ = message.ack_with(AckKind::Nak(Some(options.lease))).await;
                            return Err(e);
                        }
                    }
                }
                Some(Err(_)) | None => {
                    asked.remove(&id);
                }
            },
            Some(ended) = running.next(), if !running.is_empty() => {
                last_busy = Instant::now();
                match ended {
                    Ended::Completed => worked.completed += 1,
                    Ended::Failed => worked.failed += 1,
                    Ended::Lost => worked.lost += 1,
                    Ended::Already => worked.already += 1,
                }
            }
            () = tokio::time::sleep(PULL_WAIT), if pulls.is_empty() && running.is_empty() => {}
            // A pull that ended as it was polled: the next turn asks again.
            else => {}
        }
        let idle = options
            .idle_exit
            .is_some_and(|d| running.is_empty() && last_busy.elapsed() >= d);
        if idle {
            return Ok(worked);
        }
    }
}

/// The workers' consumer, made by the first worker; a worker with another `--lease`
/// sets it for all.
async fn consumer(server: &Server, lease: Duration) -> Result<PullConsumer, NatsError> {
    let config = pull::Config {
        durable_name: Some(CONSUMER.into()),
        ack_policy: AckPolicy::Explicit,
        ack_wait: lease,
        // Rows are redelivered without end; a row delivered too often is failed by the
        // worker that gets it, with a result, rather than dropped by the server.
        max_deliver: -1,
        max_ack_pending: -1,
        ..Default::default()
    };
    let failed = |e: &dyn std::fmt::Display| {
        NatsError::new(
            NatsKind::Request,
            format!("cannot open the queue of rows: {e}"),
        )
    };
    match server.rows.get_consumer::<pull::Config>(CONSUMER).await {
        Ok(mut c) => {
            let same = c.info().await.is_ok_and(|i| i.config.ack_wait == lease);
            if same {
                return Ok(c);
            }
            server
                .rows
                .create_consumer(config)
                .await
                .map_err(|e| failed(&e))
        }
        Err(_) => server
            .rows
            .get_or_create_consumer(CONSUMER, config)
            .await
            .map_err(|e| failed(&e)),
    }
}

/// Runs one row: unless its result is stored already, or it was handed out too often.
async fn row<H: AsyncHost>(
    server: &Server,
    run: Arc<Running<H>>,
    row: RowMessage,
    message: Message,
    options: &WorkerOptions,
) -> Ended {
    let batch = &run.record.batch;
    let key = result_key(batch, row.index);
    if let Ok(Some(_)) = patiently(|| server.results.get(key.clone())).await {
        let _ = message.double_ack().await;
        return Ended::Already;
    }
    let (seq, delivered) = message
        .info()
        .map_or((0, 1), |i| (i.stream_sequence, i.delivered.max(1) as u64));
    let row_key = format!("{batch}.{}", row.index);
    let lease = match Lease::take(server.journals.clone(), &row_key, seq, delivered).await {
        Ok(Some(lease)) => Arc::new(lease),
        // A later delivery of this message has the row.
        Ok(None) => return Ended::Lost,
        Err(e) => {
            tracing::error!("batch {batch} row {}: {e}", row.index);
            return Ended::Lost;
        }
    };
    let (result, log) = if delivered > run.record.max_deliveries {
        let tries = delivered - 1;
        let e = TaskError::failure(
            Reason::ExecutionHalted,
            format!(
                "no worker finished the row in {tries} attempt{}: each stopped or fell silent while running it (--max-deliveries {})",
                if tries == 1 { "" } else { "s" },
                run.record.max_deliveries
            ),
        );
        (TaskResult::failed(e), None)
    } else {
        let heartbeat = tokio::spawn(heartbeats(message.clone(), options.lease));
        let ran = run_row(server, &run, &row, lease.clone()).await;
        heartbeat.abort();
        match ran {
            // Another worker has the row now; its result is that worker's to store.
            Ok((_, log)) if log.lost() => return Ended::Lost,
            Ok((result, log)) => (result, Some(log)),
            Err(e) => (TaskResult::failed(e), None),
        }
    };
    finish(server, &run, &row, &message, result, (log, lease), options).await
}

/// Runs the row with its journal in the server; the row's failure when its journal
/// cannot be read, which stops it.
async fn run_row<H: AsyncHost>(
    server: &Server,
    run: &Running<H>,
    row: &RowMessage,
    lease: Arc<Lease>,
) -> Result<(TaskResult, Arc<KvLog>), TaskError> {
    let halted =
        |e: &dyn std::fmt::Display| TaskError::failure(Reason::ExecutionHalted, e.to_string());
    let mut header = run.record.header.clone();
    header.args = row.args.clone();
    let header_line = serde_json::to_string(&header).map_err(|e| halted(&e))?;
    let key = format!("{}.{}", run.record.batch, row.index);
    let (lines, log) = KvLog::open(server.journals.clone(), key, header_line, lease)
        .await
        .map_err(|e| halted(&e))?;
    let log = Arc::new(log);
    let journal = Journal::remote(&header, &lines, log.clone() as Arc<dyn RemoteLog>)
        .map_err(|e| TaskError::failure(e.reason(), e.to_string()))?;
    let f = run
        .bundle
        .functions
        .get(run.function as usize)
        .ok_or_else(|| halted(&"the entry point has no function"))?;
    let values = match args::bind(f, row.args.clone()) {
        Ok(v) => v,
        Err(e) => {
            let e = TaskError::failure(Reason::InputValidationFailure, e.to_string());
            return Ok((TaskResult::failed(e), log));
        }
    };
    let limits = run.record.header.config.limits.limits(run.record.calls);
    let journal = Some(&journal);
    let ran = Run {
        journal,
        ..Run::new(&run.bundle, run.function, values, limits)
    }
    .on(&run.host)
    .await;
    Ok((ran.result, log))
}

/// Stores the row's result (unless one is there) while this worker holds the row's
/// lease, then acknowledges the row and removes its journal and lease.
async fn finish<H>(
    server: &Server,
    run: &Running<H>,
    row: &RowMessage,
    message: &Message,
    result: TaskResult,
    (log, lease): (Option<Arc<KvLog>>, Arc<Lease>),
    options: &WorkerOptions,
) -> Ended {
    let completed = result.status == Status::Complete;
    let batch = &run.record.batch;
    match lease.hold().await {
        Ok(true) => {}
        held => {
            let why = held
                .err()
                .map_or_else(|| TAKEN.to_string(), |e| e.to_string());
            tracing::error!(
                "batch {batch} row {}: {why}; its result is not stored",
                row.index
            );
            return Ended::Lost;
        }
    }
    if let Err(e) = store_result(server, batch, row.index, &row.id, &result).await {
        // Not stored, so not acknowledged: the row comes again.
        tracing::error!("batch {batch} row {}: {e}", row.index);
        return Ended::Lost;
    }
    let _ = message.double_ack().await;
    if let Some(log) = log {
        log.remove().await;
    }
    lease.remove().await;
    if options.verbose {
        let status = if completed { "COMPLETE" } else { "FAILED" };
        tracing::info!("batch {batch} row {}: {status}", row.index);
    }
    if completed {
        Ended::Completed
    } else {
        Ended::Failed
    }
}

/// Tells the server every third of the lease that the row is still being worked on.
async fn heartbeats(message: Message, lease: Duration) {
    loop {
        tokio::time::sleep(lease / 3).await;
        if message.ack_with(AckKind::Progress).await.is_err() {
            // The server is away; try again at the next beat.
            continue;
        }
    }
}
