//! Batches spread over many workers through NATS JetStream (DESIGN §16): an existing,
//! well-kept engine keeps the queue of rows, their journals, their results and the
//! bundle, so that any number of `tvm worker`s on any machines need only the server's
//! URL and their own provider settings.
//!
//! What the server holds, all of it created by whoever comes first:
//! - the stream `TVM_ROWS` (work-queue retention): one message per row on the subject
//!   `tvm.rows.BATCH`, with the message id `BATCH.ROW`, so that the server drops a row
//!   published twice; the durable pull consumer `tvm-workers` hands each row to one
//!   worker at a time and hands it out again when its worker stops sending heartbeats;
//! - the key-value bucket `tvm_batches`: each batch's record ([`BatchRecord`]);
//! - the object store `tvm_bundles`: the bundles, named by the SHA-256 of their bytes;
//! - the bucket `tvm_journals`: each row's journal while it runs (`BATCH.ROW.PART`);
//! - the bucket `tvm_results`: each row's result line, `r.BATCH.ROW`, stored only if
//!   absent, and `f.BATCH.ROW` beside it when the row failed, for `--status`;
//! - the buckets `tvm_shared` and `tvm_slots`: the batch's budget and its cap on calls
//!   in flight (`shared`).

mod admit;
mod collect;
mod connect;
mod error;
pub mod front;
mod lease;
mod log;
mod publish;
mod results;
mod shared;
mod worker;

pub use collect::{collect, status, Status};
pub use connect::Connect;
pub use error::{NatsError, NatsKind};
pub use publish::{publish, Published};
pub use worker::{work, WorkerOptions};

use crate::journal::Header;
use async_nats::jetstream::{self, kv, object_store, stream};
use error::Classified;
use serde::{Deserialize, Serialize};
use std::time::Duration;

pub(crate) const ROWS_STREAM: &str = "TVM_ROWS";
pub(crate) const CONSUMER: &str = "tvm-workers";
const BATCHES: &str = "tvm_batches";
const BUNDLES: &str = "tvm_bundles";
const JOURNALS: &str = "tvm_journals";
const RESULTS: &str = "tvm_results";
const SHARED: &str = "tvm_shared";
const SLOTS: &str = "tvm_slots";

/// How long the server remembers a row's message id: the same rows published again
/// within it add nothing. Later, a row whose result is stored is not published again,
/// and a row delivered again after its result was stored is acknowledged unrun.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// How long reading a bundle from the server may take.
const BUNDLE_READ: Duration = Duration::from_secs(120);

/// A place among the calls in flight that its worker stopped refreshing is free again
/// after this long.
pub(crate) const SLOT_LEASE: Duration = Duration::from_secs(30);

/// What a batch is: published once with its rows, read by every worker that takes
/// one of them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BatchRecord {
    pub batch: String,
    /// The rows published (lines of the inputs that are not blank), and a hash of them.
    pub rows: u64,
    pub rows_sha256: String,
    /// The bundle's entry point and the settings every row runs with: the part of the
    /// publisher's config that shapes results (`crate::config::RunConfig::result_shaping`: the
    /// limits, the models, sampling, JSON mode and reply cap) and `--max-cost` (the
    /// whole batch's). Its provider, keys, cassette, workspace, cache and retries are
    /// each worker's own.
    pub header: Header,
    /// At most this many LLM calls of the batch in flight, over all workers.
    pub calls: usize,
    /// A row handed out this many times without a result ends as a failed row.
    pub max_deliveries: u64,
}

impl BatchRecord {
    /// A record from its JSON: one published by a tvm of another journal format is
    /// refused as [`Header::read`] refuses its journal.
    fn read(mut value: serde_json::Value, name: &str) -> Result<BatchRecord, NatsError> {
        let header = value
            .get_mut("header")
            .map(serde_json::Value::take)
            .unwrap_or_default();
        let header = Header::read(header, &format!("batch {name} in the server"))
            .map_err(|e| NatsError::new(NatsKind::Record, e.to_string()).because(e))?;
        if let Some(fields) = value.as_object_mut() {
            fields.insert(
                "header".into(),
                serde_json::to_value(&header).unwrap_or_default(),
            );
        }
        serde_json::from_value(value).map_err(|e| damaged_record(name, e))
    }
}

/// One row as it waits in the queue.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RowMessage {
    pub batch: String,
    pub index: u64,
    pub id: serde_json::Value,
    /// The arguments by parameter name.
    pub args: serde_json::Map<String, serde_json::Value>,
}

/// The server, and what the batches keep in it.
pub struct Server {
    pub client: async_nats::Client,
    pub js: jetstream::Context,
    pub rows: stream::Stream,
    pub batches: kv::Store,
    pub bundles: object_store::ObjectStore,
    pub journals: kv::Store,
    pub results: kv::Store,
    pub shared: kv::Store,
    pub slots: kv::Store,
}

/// A batch name: what the keys and subjects are made of.
pub(crate) fn valid_batch_name(name: &str) -> Result<(), NatsError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(NatsError::new(
            NatsKind::Record,
            format!("`{name}` is not a batch name: use 1 to 64 letters, digits, `-` or `_`"),
        ))
    }
}

impl Server {
    /// Connects as `to` says and opens (or makes) the stream, consumer and buckets.
    pub async fn connect(to: &Connect) -> Result<Server, NatsError> {
        // Once connected, a server restarted under a running worker is reconnected to
        // (the client does so by itself); one that is not there at the start is an
        // error at once.
        let (options, url) = to.options().await?;
        let client = tokio::time::timeout(Duration::from_secs(10), options.connect(url.as_str()))
            .await
            .map_err(|_| {
                let message = format!("--nats {url}: no NATS server answered within 10 s");
                NatsError::new(NatsKind::Timeout, message)
            })?
            .map_err(|e| connect_failed(&url, to, e))?;
        let js = jetstream::new(client.clone());
        let rows = js
            .get_or_create_stream(stream::Config {
                name: ROWS_STREAM.into(),
                subjects: vec!["tvm.rows.*".into()],
                retention: stream::RetentionPolicy::WorkQueue,
                storage: stream::StorageType::File,
                duplicate_window: DUPLICATE_WINDOW,
                ..Default::default()
            })
            .await
            .map_err(|e| jetstream_failed(&url, e))?;
        let bucket = |name: &'static str, max_age: Duration| {
            let js = js.clone();
            async move { open_bucket(&js, name, max_age).await }
        };
        let bundles = match js.get_object_store(BUNDLES).await {
            Ok(s) => s,
            Err(_) => js
                .create_object_store(object_store::Config {
                    bucket: BUNDLES.into(),
                    storage: stream::StorageType::File,
                    ..Default::default()
                })
                .await
                .map_err(|e| jetstream_failed(&url, e))?,
        };
        Ok(Server {
            rows,
            batches: bucket(BATCHES, Duration::ZERO).await?,
            journals: bucket(JOURNALS, Duration::ZERO).await?,
            results: bucket(RESULTS, Duration::ZERO).await?,
            shared: bucket(SHARED, Duration::ZERO).await?,
            slots: bucket(SLOTS, SLOT_LEASE).await?,
            bundles,
            client,
            js,
        })
    }

    /// The record of batch `name`, if it was published.
    pub async fn batch(&self, name: &str) -> Result<Option<BatchRecord>, NatsError> {
        self.batch_record(name).await?.transpose()
    }

    /// The record of batch `name`, if it was published; an error inside when what the
    /// server holds is not a batch's record.
    pub(crate) async fn batch_record(
        &self,
        name: &str,
    ) -> Result<Option<Result<BatchRecord, NatsError>>, NatsError> {
        let got = patiently(|| self.batches.get(name)).await;
        let Some(bytes) = got.map_err(|e| e.context(format!("cannot read batch {name}")))? else {
            return Ok(None);
        };
        let record = serde_json::from_slice::<serde_json::Value>(&bytes)
            .map_err(|e| damaged_record(name, e))
            .and_then(|r| BatchRecord::read(r, name))
            .and_then(|r| {
                if r.batch == name {
                    Ok(r)
                } else {
                    Err(NatsError::new(
                        NatsKind::Record,
                        format!(
                        "the record of batch {name} in the server is damaged: it names batch `{}`",
                        r.batch
                    ),
                    ))
                }
            });
        Ok(Some(record))
    }

    /// The names of the batches the server holds, read from the bucket's subjects
    /// (listing the keys of an empty bucket waits for one to come).
    pub(crate) async fn batch_names(&self) -> Result<Vec<String>, NatsError> {
        use futures::TryStreamExt;
        let failed = |e: &dyn std::fmt::Display| {
            NatsError::new(NatsKind::Request, format!("cannot list the batches: {e}"))
        };
        let stream = self
            .js
            .get_stream(format!("KV_{BATCHES}"))
            .await
            .map_err(|e| failed(&e))?;
        let prefix = format!("$KV.{BATCHES}.");
        let subjects = stream
            .info_with_subjects(format!("{prefix}>"))
            .await
            .map_err(|e| failed(&e))?;
        let mut names: Vec<String> = subjects
            .map_ok(|(subject, _)| subject.trim_start_matches(&prefix).to_string())
            .try_collect()
            .await
            .map_err(|e| failed(&e))?;
        names.sort();
        Ok(names)
    }

    /// The bytes of the bundle object `name`; `Ok(None)` when there is none. An
    /// object whose parts do not match its description is an error of its own
    /// ([`NatsKind::Decode`]), as is one that does not come whole within [`BUNDLE_READ`]
    /// ([`NatsKind::Timeout`]); a request for the object that fails is the server's
    /// trouble ([`NatsKind::Request`]), not the object's.
    pub(crate) async fn bundle_bytes(&self, name: &str) -> Result<Option<Vec<u8>>, NatsError> {
        use async_nats::jetstream::object_store::GetErrorKind;
        use std::io::{Error, ErrorKind};
        let store = self.bundles.clone();
        let name = name.to_string();
        // In a task of its own: the client library's reader panics when the server
        // refuses to hand out an object's parts, and waits without end for parts that
        // an object's description names but the store lacks.
        let read = tokio::spawn(async move {
            let mut object = match store.get(&name).await {
                Ok(object) => object,
                Err(e) if e.kind() == GetErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(Error::other(e)),
            };
            let mut bytes = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut object, &mut bytes).await?;
            Ok(Some(bytes))
        });
        match tokio::time::timeout(BUNDLE_READ, read).await {
            Ok(Ok(read)) => read.map_err(|e| {
                let kind = match e.kind() {
                    ErrorKind::InvalidData => NatsKind::Decode,
                    ErrorKind::TimedOut => NatsKind::Timeout,
                    _ => NatsKind::Request,
                };
                NatsError::new(kind, e.to_string()).because(e)
            }),
            Ok(Err(e)) => Err(NatsError::new(
                NatsKind::Decode,
                format!("the object cannot be read ({e})"),
            )
            .because(e)),
            Err(_) => Err(NatsError::new(
                NatsKind::Timeout,
                format!(
                    "the object did not come whole within {} s",
                    BUNDLE_READ.as_secs()
                ),
            )),
        }
    }

    /// The largest message the server takes.
    pub fn max_payload(&self) -> usize {
        self.client.server_info().max_payload
    }
}

async fn open_bucket(
    js: &jetstream::Context,
    name: &str,
    max_age: Duration,
) -> Result<kv::Store, NatsError> {
    if let Ok(store) = js.get_key_value(name).await {
        return Ok(store);
    }
    // The bucket's stream is made here as the client library makes it, but without
    // first asking for the account's details, which servers before 2.10 give in a form
    // the library cannot read.
    let config = stream::Config {
        name: format!("KV_{name}"),
        subjects: vec![format!("$KV.{name}.>")],
        max_messages_per_subject: 1,
        max_age,
        storage: stream::StorageType::File,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        discard: stream::DiscardPolicy::New,
        num_replicas: 1,
        ..Default::default()
    };
    let made = js.get_or_create_stream(config).await;
    // Made meanwhile by another process, or now.
    js.get_key_value(name).await.map_err(|e| match made {
        Err(made) => NatsError::new(
            NatsKind::NoJetStream,
            format!("cannot make the bucket {name}: {made}"),
        )
        .because(made),
        Ok(_) => NatsError::new(
            NatsKind::Request,
            format!("cannot open the bucket {name}: {e}"),
        )
        .because(e),
    })
}

/// Why connecting failed, in words that say what to do.
fn connect_failed(url: &str, to: &Connect, e: async_nats::ConnectError) -> NatsError {
    use async_nats::ConnectErrorKind as Kind;
    use std::error::Error;
    let cause = e.source().map(|s| format!(": {s}")).unwrap_or_default();
    let (kind, message) = match e.kind() {
        Kind::AuthorizationViolation | Kind::Authentication => (NatsKind::Auth, format!(
            "--nats {url}: the server refused to let us in (authorization violation): check --nats-creds, --nats-token, or --nats-user and --nats-password"
        )),
        // A certificate the client does not trust comes as an I/O error, rustls's inside.
        _ if e.kind() == Kind::Tls || error::tls_failed(&e) => {
            let hint = if to.ca.is_none() {
                "; a server whose certificate a private CA signed needs --nats-ca FILE"
            } else {
                ""
            };
            (NatsKind::Tls, format!("--nats {url}: the TLS connection failed{cause}{hint}"))
        }
        kind => {
            let kind = match kind {
                Kind::TimedOut => NatsKind::Timeout,
                _ => NatsKind::Connect,
            };
            (kind, format!("--nats {url}: cannot connect to a NATS server there: {e}"))
        }
    };
    NatsError::new(kind, message).because(e)
}

fn jetstream_failed(url: &str, e: impl std::error::Error + Send + Sync + 'static) -> NatsError {
    let message = format!("--nats {url}: {e} (is JetStream on? start the server with `nats-server -js`; a user that may not make streams, as a worker in the README's layout, needs a batch published first)");
    NatsError::new(NatsKind::NoJetStream, message).because(e)
}

/// A batch's record in the server that is not one, for `e`.
fn damaged_record(name: &str, e: serde_json::Error) -> NatsError {
    let message = format!("the record of batch {name} in the server is damaged: {e}");
    NatsError::new(NatsKind::Record, message).because(e)
}

/// The key of row `index`'s result.
fn result_key(batch: &str, index: u64) -> String {
    format!("r.{batch}.{index}")
}

/// The key that marks row `index` as failed, for counting.
fn failed_key(batch: &str, index: u64) -> String {
    format!("f.{batch}.{index}")
}

/// How long a request to the server is tried again while the server is away (being
/// restarted, say) before the operation fails.
const OUTAGE: Duration = Duration::from_secs(60);

/// Runs `op` again while it fails for a reason that may pass (the server away, a
/// timeout), for up to [`OUTAGE`], waiting 50 ms, then twice as long each time up to 1 s;
/// a failure that is the server's answer ([`NatsError::settled`]: a key that exists, a
/// revision that moved) is returned at once.
pub(crate) async fn patiently<T, E, F, Fut>(op: F) -> Result<T, NatsError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
    E: Classified,
{
    use backon::Retryable;
    let start = std::time::Instant::now();
    let waits = crate::backoff::doubling(Duration::from_millis(50), Duration::from_secs(1));
    let settled = |e: &E| NatsError::settles(e.nats_kind());
    op.retry(waits)
        .when(|e| !settled(e) && start.elapsed() < OUTAGE)
        .await
        .map_err(NatsError::from_server)
}

#[cfg(test)]
mod tests;
