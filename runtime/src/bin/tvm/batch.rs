//! `tvm batch`: the entry point once per row of a JSON-lines file (DESIGN §16).

use super::options::{host, HostArgs, LimitArgs};
use super::{load, output, pick_entry, priced, provider_choice};
use clap::Args;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct BatchArgs {
    bundle: PathBuf,
    /// The entry point; may be left out when the bundle has only one.
    #[arg(long)]
    entry: Option<String>,
    /// The rows: one JSON object of arguments per line, or `{"id": ..., "args": {...}}`.
    #[arg(long, value_name = "FILE")]
    inputs: PathBuf,
    /// Where each row's result goes, one line `{"index", "id", "status", "result"}` per
    /// row, written as the row ends.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    #[command(flatten)]
    host: HostArgs,
    #[command(flatten)]
    limits: LimitArgs,
}

pub fn batch(mut args: BatchArgs) -> Result<ExitCode, String> {
    let (bundle, _) = load(&args.bundle)?;
    args.host.resolve_allow_read()?;
    let choice = provider_choice(args.host.provider.as_deref())?;
    let entry = pick_entry(&bundle, args.entry.as_deref())?;
    let inputs =
        File::open(&args.inputs).map_err(|e| format!("--inputs {}: {e}", args.inputs.display()))?;
    let out = File::create(&args.out).map_err(|e| format!("--out {}: {e}", args.out.display()))?;
    let host = host(choice, &args.host)?;
    priced(&host, &bundle)?;
    // Rows run as many at once as the provider takes calls; a map inside a row runs
    // its bodies within the same cap.
    let concurrency = args.host.calls().0;
    let mut limits = args.limits.limits();
    limits.concurrency = concurrency;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let mut out = BufWriter::new(out);
    let summary = runtime.block_on(tv_runtime::batch::run(
        &bundle,
        entry,
        BufReader::new(inputs),
        &mut out,
        &host,
        &limits,
        concurrency,
    ));
    if let Some(p) = &host.progress {
        p.finish();
    }
    if let Some(problem) = host.unconfigured() {
        return Err(problem);
    }
    let summary = summary?;
    output::say(&format!("tvm: batch: {}\n", summary.line()));
    Ok(if summary.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
