//! `tvm batch --nats URL` (publish, `--collect`, `--status`) and `tvm worker`: a batch
//! spread over many machines through NATS JetStream (DESIGN §16).

use super::batch::{needed, survey, BatchArgs};
use super::options::{concurrency, header, host, run_config, HostArgs};
use super::{entry_name, load_with_bytes, output, pick_entry, priced};
use clap::Args;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tv_runtime::config::env as vars;
use tv_runtime::config::RunConfig;
use tv_runtime::nats::{self, BatchRecord, Connect, Server, WorkerOptions};

#[derive(Args)]
pub struct NatsArgs {
    /// Spread the batch over `tvm worker`s through this NATS server (with JetStream on):
    /// the rows are published, the workers run them, --collect writes the results.
    #[arg(long, value_name = "URL")]
    pub nats: Option<String>,
    /// The batch's name in the server (default: made from the bundle, the entry point,
    /// the rows and the settings, so the same batch published again has the same name).
    #[arg(long = "batch", value_name = "NAME", requires = "nats")]
    pub name: Option<String>,
    /// Write the results the server holds to --out, in the order of the rows.
    #[arg(long, requires = "nats", conflicts_with = "status")]
    pub collect: bool,
    /// Say how far the batch has come.
    #[arg(long, requires = "nats")]
    pub status: bool,
    /// With --collect: wait until every row has its result.
    #[arg(long, requires = "collect")]
    pub wait: bool,
    /// A row handed to workers this many times without a result (each stopped or fell
    /// silent while running it) ends as a failed row (default 3).
    #[arg(long, value_name = "N", requires = "nats", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_deliveries: Option<u64>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// How to sign in to the NATS server and check who it is: `tvm batch --nats` and
/// `tvm worker` take the same flags, and the environment variables the `nats` tool reads.
#[derive(Args, Clone)]
pub struct ConnectArgs {
    /// A NATS credentials file (a user JWT and its seed, as `nsc` writes them).
    #[arg(long, value_name = "FILE", env = "NATS_CREDS")]
    nats_creds: Option<PathBuf>,
    /// The token the server asks for (better in $NATS_TOKEN: a flag shows in `ps`).
    // Not `env = ...`: the variable leaves the environment at start (`keys`), and comes
    // back from the variables of the run (`secret`).
    #[arg(long, value_name = "TOKEN")]
    nats_token: Option<String>,
    /// The user to sign in as (or `nats://USER:PASSWORD@HOST` in the URL).
    #[arg(long, value_name = "USER", env = "NATS_USER")]
    nats_user: Option<String>,
    /// The user's password (better in $NATS_PASSWORD: a flag shows in `ps`).
    #[arg(long, value_name = "PASSWORD")]
    nats_password: Option<String>,
    /// The CA certificate (PEM) that signed the server's, for TLS with a private CA;
    /// with it (or a tls:// URL) the connection must be TLS.
    #[arg(long, value_name = "FILE", env = "NATS_CA")]
    nats_ca: Option<PathBuf>,
    /// A client certificate (PEM), for a server that verifies its clients; with --nats-key.
    #[arg(long, value_name = "FILE", env = "NATS_CERT")]
    nats_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", env = "NATS_KEY")]
    nats_key: Option<PathBuf>,
}

impl ConnectArgs {
    fn to(&self, url: &str) -> Connect {
        Connect {
            url: url.to_string(),
            creds: self.nats_creds.clone(),
            token: secret(&self.nats_token, vars::NATS_TOKEN),
            user: self.nats_user.clone(),
            password: secret(&self.nats_password, vars::NATS_PASSWORD),
            ca: self.nats_ca.clone(),
            cert: self.nats_cert.clone(),
            key: self.nats_key.clone(),
        }
    }
}

/// The flag's value, else the variable's from the environment `tvm` started in (handed
/// over at start with the API keys, so that no script finds it in its environment).
fn secret(flag: &Option<String>, name: &str) -> Option<String> {
    flag.clone().or_else(|| {
        let var = tv_cli::env::vars().from(name, vars::Source::Environment)?;
        Some(var.value.clone())
    })
}

#[derive(Args)]
pub struct WorkerArgs {
    /// The NATS server (with JetStream on) the batches were published to.
    #[arg(long, value_name = "URL")]
    nats: String,
    /// How long a row whose worker fell silent waits before another worker takes it
    /// over; a running row's worker says it is at work every third of this.
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(3..))]
    lease: u64,
    /// Stop after this many seconds with no row to run (default: run until stopped).
    #[arg(long, value_name = "SECS")]
    idle_exit: Option<u64>,
    /// Say on stderr how each row ended.
    #[arg(long)]
    verbose: bool,
    /// Rows run at once (and calls in flight on this worker) come from --concurrency.
    #[command(flatten)]
    host: HostArgs,
    #[command(flatten)]
    connect: ConnectArgs,
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

pub fn batch(args: BatchArgs) -> Result<ExitCode, String> {
    let to = args
        .nats
        .connect
        .to(args.nats.nats.as_deref().unwrap_or_default());
    let url = to.shown();
    runtime()?.block_on(async {
        let server = Server::connect(&to).await?;
        if args.nats.status || args.nats.collect {
            let name = match &args.nats.name {
                Some(n) => n.clone(),
                None => only_batch(&server).await?,
            };
            if args.nats.status {
                let s = nats::status(&server, &name).await?;
                output::print(&format!("{}\n", s.line(&name)))?;
                return Ok(ExitCode::SUCCESS);
            }
            return collect(&server, &name, &args).await;
        }
        publish(&server, &url, args).await
    })
}

/// The one batch the server holds, when it holds one.
async fn only_batch(server: &Server) -> Result<String, String> {
    let names = server.batch_names().await?;
    match names.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err("the server holds no batch".into()),
        many => Err(format!(
            "the server holds several batches ({}): choose one with --batch NAME",
            many.join(", ")
        )),
    }
}

async fn publish(server: &Server, url: &str, args: BatchArgs) -> Result<ExitCode, String> {
    let config = run_config(&args.host, Some(&args.limits))?;
    let bundle_path = needed(&args.bundle, "a bundle")?.clone();
    let inputs_path = needed(&args.inputs, "--inputs FILE")?.clone();
    if args.out.is_some() {
        return Err(
            "--out is written by --collect: publish the rows first, then collect their results"
                .into(),
        );
    }
    let (bundle, sha, bytes) = load_with_bytes(&bundle_path)?;
    let entry = pick_entry(&bundle, args.entry.as_deref())?;
    // Checked here with this machine's prices: a batch that cannot be kept within its
    // budget is refused before any worker spends on it.
    priced(&host(&config, &args.host)?, &bundle)?;
    let calls = concurrency(&config);
    let name = entry_name(&bundle, entry);
    let mut header = header(&bundle_path, sha.clone(), &name, &config);
    header.bundle = PathBuf::from(format!("nats:tvm_bundles/{sha}"));
    // What a worker's own settings decide is not the batch's; its budget is.
    header.config = config.result_shaping();
    header.config.cost.max_cost = config.cost.max_cost;
    let (rows, rows_sha256) = survey(&inputs_path)?;
    let mut record = BatchRecord {
        batch: String::new(),
        rows,
        rows_sha256,
        header,
        calls,
        max_deliveries: args.nats.max_deliveries.unwrap_or(3),
    };
    record.batch = match &args.nats.name {
        Some(n) => {
            nats::valid_batch_name(n)?;
            n.clone()
        }
        None => {
            let text = serde_json::to_string(&record).map_err(|e| e.to_string())?;
            tv_runtime::digest::sha256_hex(text.as_bytes())[..12].to_string()
        }
    };
    let inputs = super::batch::open_inputs(&inputs_path)?;
    let done = nats::publish(
        server,
        &bytes,
        &bundle,
        entry,
        &record,
        BufReader::new(inputs),
    )
    .await?;
    let batch = &record.batch;
    output::say(&format!(
        "tvm: batch {batch}: {rows} rows: {} queued, {} there already, {} failed as they are not rows\n\
         tvm: run them with `tvm worker --nats {url}` on any machines; follow with \
         `tvm batch --nats {url} --batch {batch} --status`; write the results with \
         `tvm batch --nats {url} --batch {batch} --collect --out FILE`\n",
        done.queued, done.already, done.failed
    ));
    output::print(&format!("{batch}\n"))?;
    Ok(ExitCode::SUCCESS)
}

async fn collect(server: &Server, name: &str, args: &BatchArgs) -> Result<ExitCode, String> {
    let out_path = needed(&args.out, "--out FILE")?;
    if args.nats.wait {
        loop {
            let s = nats::status(server, name).await?;
            if s.finished >= s.rows {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    // Written beside the results file and renamed over it: a reader never sees half.
    let mut partial = out_path.clone().into_os_string();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let file = File::create(&partial).map_err(|e| format!("--out {}: {e}", partial.display()))?;
    let mut out = BufWriter::new(file);
    let s = nats::collect(server, name, &mut out).await?;
    out.into_inner()
        .map_err(|e| e.to_string())
        .and_then(|f| f.sync_all().map_err(|e| e.to_string()))
        .map_err(|e| format!("--out {}: {e}", partial.display()))?;
    std::fs::rename(&partial, out_path)
        .map_err(|e| format!("--out {}: {e}", out_path.display()))?;
    let missing = s.rows.saturating_sub(s.finished);
    let mut line = format!(
        "tvm: batch {name}: {} rows: {} completed, {} failed",
        s.rows,
        s.finished - s.failed.min(s.finished),
        s.failed
    );
    if missing > 0 {
        line.push_str(&format!(
            ", {missing} not finished yet (collect again later, or with --wait)"
        ));
    }
    output::say(&format!("{line}\n"));
    Ok(if s.failed > 0 || missing > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn worker(mut args: WorkerArgs) -> Result<ExitCode, String> {
    let config = run_config(&args.host, None)?;
    let concurrency = concurrency(&config);
    // Settings are checked now, not when the first row comes.
    host(&config, &args.host)?;
    // That made the cassette; each batch's host adds to it.
    if args.host.record.is_some() {
        args.host.record_mode = Some(super::options::Recording::Append);
    }
    let options = WorkerOptions {
        concurrency,
        lease: Duration::from_secs(args.lease),
        idle_exit: args.idle_exit.map(Duration::from_secs),
        verbose: args.verbose,
        provider: config.provider.choice,
    };
    let make_host = |record: &BatchRecord, shared| {
        let mut a = args.host.clone();
        a.shared = Some(shared);
        let mut h = host(&batch_settings(&config, concurrency, record), &a)?;
        h.progress = None;
        Ok(h)
    };
    let worked = runtime()?.block_on(async {
        let to = args.connect.to(&args.nats);
        let server = Server::connect(&to).await?;
        output::say(&format!(
            "tvm worker: taking rows from {} ({concurrency} at once)\n",
            to.shown()
        ));
        nats::work(&server, &options, make_host).await
    })?;
    let mut line = format!(
        "tvm worker: no row for a while; stopping. {} rows completed, {} failed, {} given up to other workers",
        worked.completed, worked.failed, worked.lost
    );
    if worked.dropped > 0 {
        line.push_str(&format!(
            ", {} messages dropped as they named no row of a published batch",
            worked.dropped
        ));
    }
    output::say(&format!("{line}\n"));
    Ok(ExitCode::SUCCESS)
}

/// The worker's settings with the batch's over them: the model, sampling and output
/// settings shape every row's result, so they are the batch's
/// ([`RunConfig::result_shaping`]); the provider, keys, cassette, workspace, prices,
/// cache and retries are the worker's. The budget is the batch's, kept in the server,
/// and the calls in flight the fewer of the worker's and the batch's.
fn batch_settings(worker: &RunConfig, concurrency: usize, record: &BatchRecord) -> RunConfig {
    let mut c = worker
        .clone()
        .overlay(record.header.config.result_shaping());
    c.cost.max_cost = None;
    c.calls.concurrency = Some(concurrency.min(record.calls.max(1)).max(1));
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use tv_runtime::config::{CacheChoice, Calls, Cost, Models, ProviderPart};
    use tv_runtime::host::Choice;
    use tv_runtime::journal::{Header, FORMAT};

    #[test]
    fn a_workers_rows_take_the_batchs_result_settings_and_the_workers_own_provider_and_cache() {
        let worker = RunConfig {
            provider: ProviderPart {
                choice: Some(Choice::Echo),
                cassette: None,
            },
            models: Models {
                default: Some("worker-model".into()),
                force: Some("openai:worker".into()),
            },
            calls: Calls {
                concurrency: Some(8),
                retries: Some(9),
                ..Calls::default()
            },
            cost: Cost {
                max_cost: Some(5),
                cache: Some(CacheChoice::Dir("/worker/cache".into())),
                ..Cost::default()
            },
            ..RunConfig::defaults()
        };
        let mut published = RunConfig::defaults();
        published.models.default = Some("batch-model".into());
        published.calls.retries = Some(0);
        published.cost.max_cost = Some(1);
        let record = BatchRecord {
            batch: "b".into(),
            rows: 1,
            rows_sha256: String::new(),
            header: Header {
                journal: FORMAT,
                bundle: PathBuf::new(),
                bundle_sha256: String::new(),
                entry: "main".into(),
                args: serde_json::Map::new(),
                config: published,
            },
            calls: 3,
            max_deliveries: 3,
        };
        let c = batch_settings(&worker, 8, &record);
        assert_eq!(c.models.default.as_deref(), Some("batch-model"));
        // The batch named no forced model: the worker's stays.
        assert_eq!(c.models.force.as_deref(), Some("openai:worker"));
        assert_eq!(c.provider.choice, Some(Choice::Echo));
        assert_eq!(c.calls.retries, Some(9), "retries are the worker's");
        assert_eq!(c.calls.concurrency, Some(3), "the fewer calls in flight");
        assert_eq!(c.cost.max_cost, None, "the budget is kept in the server");
        assert_eq!(c.cost.cache, worker.cost.cache);
        assert_eq!(
            batch_settings(&worker, 2, &record).calls.concurrency,
            Some(2)
        );
    }
}
