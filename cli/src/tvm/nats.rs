//! `tvm batch --nats URL` (publish, `--collect`, `--status`) and `tvm worker`: a batch
//! spread over many machines through NATS JetStream (DESIGN §16). What is decided is
//! the runtime's (`tv_runtime::nats::front`); here are what is printed and the exit
//! codes.

use super::args::{needed, BatchArgs, ConnectArgs};
use super::options::{host, run_config, HostArgs};
use super::{entry_name, load_with_bytes, output, pick_entry};
use clap::Args;
use std::io::BufReader;
use std::process::ExitCode;
use std::time::Duration;
use tv_runtime::batch::front::{open_inputs, survey};
use tv_runtime::host::priced;
use tv_runtime::nats::front::{self, Publishing};
use tv_runtime::nats::{self, BatchRecord, NatsError, Server, WorkerOptions};

#[derive(Args)]
pub(crate) struct WorkerArgs {
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
    pub(crate) verbose: bool,
    /// Rows run at once (and calls in flight on this worker) come from --concurrency.
    #[command(flatten)]
    host: HostArgs,
    #[command(flatten)]
    connect: ConnectArgs,
}

/// What the server's failure says, as `tvm` prints it.
fn said(e: NatsError) -> String {
    e.to_string()
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

pub(crate) fn batch(args: BatchArgs) -> Result<ExitCode, String> {
    let to = args
        .nats
        .connect
        .to(args.nats.nats.as_deref().unwrap_or_default());
    let url = to.shown();
    runtime()?.block_on(async {
        let server = Server::connect(&to).await.map_err(said)?;
        if args.nats.status || args.nats.collect {
            let name = match &args.nats.name {
                Some(n) => n.clone(),
                None => front::only_batch(&server).await.map_err(said)?,
            };
            if args.nats.status {
                let s = nats::status(&server, &name).await.map_err(said)?;
                output::print(&format!("{}\n", s.line(&name)))?;
                return Ok(ExitCode::SUCCESS);
            }
            return collect(&server, &name, &args).await;
        }
        publish(&server, &url, args).await
    })
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
    priced(&host(&config, &args.host)?, &bundle).map_err(|e| e.to_string())?;
    let record = front::record(Publishing {
        bundle_sha256: &sha,
        entry: &entry_name(&bundle, entry),
        config: &config,
        survey: survey(&inputs_path)?,
        max_deliveries: args.nats.max_deliveries,
        name: args.nats.name.as_deref(),
    })
    .map_err(said)?;
    let rows = record.rows;
    let inputs = open_inputs(&inputs_path)?;
    let done = nats::publish(
        server,
        &bytes,
        &bundle,
        entry,
        &record,
        BufReader::new(inputs),
    )
    .await
    .map_err(said)?;
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
    let s = front::collect_to(server, name, out_path, args.nats.wait)
        .await
        .map_err(said)?;
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

pub(crate) fn worker(mut args: WorkerArgs) -> Result<ExitCode, String> {
    let config = run_config(&args.host, None)?;
    let concurrency = config.concurrency();
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
        let mut h = host(&front::batch_settings(&config, concurrency, record), &a)?;
        // A worker shows no progress line.
        h.progress = None;
        tv_cli::log::above(None);
        Ok(h)
    };
    let worked = runtime()?
        .block_on(async {
            let to = args.connect.to(&args.nats);
            let server = Server::connect(&to).await?;
            output::say(&format!(
                "tvm worker: taking rows from {} ({concurrency} at once)\n",
                to.shown()
            ));
            nats::work(&server, &options, make_host).await
        })
        .map_err(said)?;
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
