//! What `tvm batch --nats` and `tvm worker` decide before and around the server's
//! work: how to sign in (flags over the environment's `NATS_*`), which batch a command
//! that names none means, the record a published batch is known by and its name, the
//! results written to a file, and the settings a worker runs a batch's rows with.

use super::{collect, status, BatchRecord, Connect, NatsError, NatsKind, Server, Status};
use crate::batch::front::Survey;
use crate::config::env::{self, Source};
use crate::config::{Environment, RunConfig};
use crate::journal::{Header, FORMAT};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often `--collect --wait` asks how far the batch has come.
const WAIT_POLL: Duration = Duration::from_millis(250);

impl Connect {
    /// This connection (as the flags give it), with what it leaves unset taken from the
    /// environment `tvm` started in, as the `nats` tool reads it: `NATS_CREDS`,
    /// `NATS_TOKEN`, `NATS_USER`, `NATS_PASSWORD`, `NATS_CA`, `NATS_CERT`, `NATS_KEY`.
    /// Never from a `.env`: a checkout must not choose whom the user signs in to, or as.
    /// An empty variable is none.
    #[must_use]
    pub fn or_environment(self, environment: &Environment) -> Connect {
        let var = |name: &str| {
            let v = environment.vars().from(name, Source::Environment)?;
            Some(v.value.clone()).filter(|v| !v.is_empty())
        };
        let path = |name: &str| var(name).map(PathBuf::from);
        Connect {
            creds: self.creds.or_else(|| path(env::NATS_CREDS)),
            token: self.token.or_else(|| var(env::NATS_TOKEN)),
            user: self.user.or_else(|| var(env::NATS_USER)),
            password: self.password.or_else(|| var(env::NATS_PASSWORD)),
            ca: self.ca.or_else(|| path(env::NATS_CA)),
            cert: self.cert.or_else(|| path(env::NATS_CERT)),
            key: self.key.or_else(|| path(env::NATS_KEY)),
            url: self.url,
        }
    }
}

/// The one batch the server holds, when it holds one.
pub async fn only_batch(server: &Server) -> Result<String, NatsError> {
    let names = server.batch_names().await?;
    let none = |message: String| NatsError::new(NatsKind::NotFound, message);
    match names.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(none("the server holds no batch".into())),
        many => Err(none(format!(
            "the server holds several batches ({}): choose one with --batch NAME",
            many.join(", ")
        ))),
    }
}

/// What a published batch is made of.
pub struct Publishing<'a> {
    /// The SHA-256 of the bundle's bytes: the bundle's name in the server.
    pub bundle_sha256: &'a str,
    /// The entry point's function name.
    pub entry: &'a str,
    /// The publisher's settings (its stack, settled).
    pub config: &'a RunConfig,
    pub survey: Survey,
    /// `--max-deliveries` (default 3).
    pub max_deliveries: Option<u64>,
    /// `--batch NAME`; unset, the name is made from the record.
    pub name: Option<&'a str>,
}

/// The record of a batch to publish. Its settings are the part of the publisher's
/// that shapes results (`RunConfig::result_shaping`) and its budget; what each worker
/// decides for itself is not the batch's. Unnamed, the batch is named by the first 12
/// hex digits of the SHA-256 of the record's JSON (its name empty), so the same batch
/// published again has the same name.
pub fn record(p: Publishing<'_>) -> Result<BatchRecord, NatsError> {
    let mut config = p.config.result_shaping();
    config.cost.max_cost = p.config.cost.max_cost;
    let header = Header {
        journal: FORMAT,
        bundle: PathBuf::from(format!("nats:tvm_bundles/{}", p.bundle_sha256)),
        bundle_sha256: p.bundle_sha256.to_string(),
        entry: p.entry.to_string(),
        args: serde_json::Map::new(),
        config,
    };
    let mut record = BatchRecord {
        batch: String::new(),
        rows: p.survey.rows,
        rows_sha256: p.survey.sha256,
        header,
        calls: p.config.concurrency(),
        max_deliveries: p.max_deliveries.unwrap_or(3),
    };
    record.batch = match p.name {
        Some(n) => {
            super::valid_batch_name(n)?;
            n.to_string()
        }
        None => {
            let text = serde_json::to_string(&record)
                .map_err(|e| NatsError::new(NatsKind::Decode, e.to_string()).because(e))?;
            crate::digest::sha256_hex(text.as_bytes())[..12].to_string()
        }
    };
    Ok(record)
}

/// Writes the results the server holds of batch `name` to `out`, in the order of the
/// rows, once every row has one if `wait`. Written beside `out` (`OUT.partial`) and
/// renamed over it: a reader never sees half. Gives how far the batch had come.
pub async fn collect_to(
    server: &Server,
    name: &str,
    out: &Path,
    wait: bool,
) -> Result<Status, NatsError> {
    if wait {
        loop {
            let s = status(server, name).await?;
            if s.finished >= s.rows {
                break;
            }
            tokio::time::sleep(WAIT_POLL).await;
        }
    }
    let mut partial = out.as_os_str().to_os_string();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let file = File::create(&partial).map_err(|e| unwritten(&partial, e))?;
    let mut writer = BufWriter::new(file);
    let s = collect(server, name, &mut writer).await?;
    writer
        .into_inner()
        .map_err(std::io::IntoInnerError::into_error)
        .and_then(|f| f.sync_all())
        .map_err(|e| unwritten(&partial, e))?;
    std::fs::rename(&partial, out).map_err(|e| unwritten(out, e))?;
    Ok(s)
}

/// `--out` at `path` could not be written.
fn unwritten(path: &Path, e: std::io::Error) -> NatsError {
    let message = format!("--out {}: {e}", path.display());
    NatsError::new(NatsKind::Local, message).because(e)
}

/// The worker's settings with the batch's over them: the model, sampling and output
/// settings shape every row's result, so they are the batch's
/// (`RunConfig::result_shaping`); the provider, keys, cassette, workspace, prices,
/// cache and retries are the worker's. The budget is the batch's, kept in the server,
/// and the calls in flight the fewer of the worker's `concurrency` and the batch's.
pub fn batch_settings(worker: &RunConfig, concurrency: usize, record: &BatchRecord) -> RunConfig {
    let mut c = worker
        .clone()
        .overlay(record.header.config.result_shaping());
    c.cost.max_cost = None;
    c.calls.concurrency = Some(concurrency.min(record.calls.max(1)).max(1));
    c
}

#[cfg(test)]
mod tests;
