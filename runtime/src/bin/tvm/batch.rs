//! `tvm batch`: the entry point once per row of a JSON-lines file (DESIGN §16).

use super::options::{host, HostArgs, LimitArgs};
use super::{entry_name, load, output, pick_entry, priced, provider_choice};
use clap::Args;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;
use std::process::ExitCode;
use tv_runtime::batch::{Batch, Lines, State, MAX_ROW_BYTES};
use tv_runtime::files;

#[derive(Args)]
pub struct BatchArgs {
    /// The bundle (not needed with --nats --collect or --status).
    pub(super) bundle: Option<PathBuf>,
    /// The entry point; may be left out when the bundle has only one.
    #[arg(long)]
    pub(super) entry: Option<String>,
    /// The rows: one JSON object of arguments per line, or `{"id": ..., "args": {...}}`.
    #[arg(long, value_name = "FILE")]
    pub(super) inputs: Option<PathBuf>,
    /// Where each row's result goes, one line `{"index", "id", "status", "result"}` per
    /// row, written as the row ends (with --nats: by --collect).
    #[arg(long, value_name = "FILE")]
    pub(super) out: Option<PathBuf>,
    /// Where the batch keeps what lets the same command, run again after a crash or
    /// Ctrl-C, skip the rows that finished and resume the others (default: OUT.state/).
    #[arg(long, value_name = "DIR", conflicts_with = "nats")]
    state: Option<PathBuf>,
    #[command(flatten)]
    pub(super) nats: super::nats::NatsArgs,
    #[command(flatten)]
    pub(super) host: HostArgs,
    #[command(flatten)]
    pub(super) limits: LimitArgs,
}

/// A path a mode of `tvm batch` needs.
pub(super) fn needed<'a>(given: &'a Option<PathBuf>, what: &str) -> Result<&'a PathBuf, String> {
    given
        .as_ref()
        .ok_or_else(|| format!("tvm batch needs {what}"))
}

/// The inputs of a batch: a regular file (`/dev/zero` has no end, a FIFO may never
/// give one), read line by line, each line within [`MAX_ROW_BYTES`].
pub(super) fn open_inputs(inputs: &std::path::Path) -> Result<File, String> {
    files::open(inputs).map_err(|e| format!("--inputs {} {e}", inputs.display()))
}

/// The rows of the inputs (lines that are not blank), for the progress line, and a hash
/// of them, so that a batch is resumed only over the rows it began with; read through
/// once, line by line, as the batch reads them.
pub(super) fn survey(inputs: &std::path::Path) -> Result<(u64, String), String> {
    use sha2::{Digest, Sha256};
    let file = open_inputs(inputs)?;
    let (mut rows, mut hash) = (0, Sha256::new());
    for line in Lines::new(BufReader::new(file), MAX_ROW_BYTES) {
        let (_, line) = line.map_err(|e| format!("--inputs {}: {e}", inputs.display()))?;
        let text = line.unwrap_or_else(|why| why);
        if !text.trim().is_empty() {
            rows += 1;
            hash.update(text.as_bytes());
            hash.update(b"\n");
        }
    }
    let hex = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok((rows, hex))
}

pub fn batch(mut args: BatchArgs) -> Result<ExitCode, String> {
    if args.nats.nats.is_some() {
        return super::nats::batch(args);
    }
    let bundle_path = needed(&args.bundle, "a bundle")?.clone();
    let inputs_path = needed(&args.inputs, "--inputs FILE")?.clone();
    let out_path = needed(&args.out, "--out FILE")?.clone();
    let (bundle, hash) = load(&bundle_path)?;
    args.host.resolve_allow_read()?;
    let choice = provider_choice(args.host.provider.as_deref())?;
    let entry = pick_entry(&bundle, args.entry.as_deref())?;
    let inputs = open_inputs(&inputs_path)?;
    // Opening the results empties them: the inputs would be gone before they were read.
    let same = |a: &std::path::Path, b: &std::path::Path| {
        std::fs::canonicalize(a)
            .ok()
            .is_some_and(|a| std::fs::canonicalize(b).ok() == Some(a))
    };
    if same(&inputs_path, &out_path) {
        return Err(format!(
            "--out {} is the inputs file: the results would overwrite the rows",
            out_path.display()
        ));
    }
    let mut host = host(choice, &args.host)?;
    priced(&host, &bundle)?;
    // Rows run as many at once as the provider takes calls; a map inside a row runs
    // its bodies within the same cap.
    let concurrency = args.host.calls().0;
    let mut limits = args.limits.limits();
    limits.concurrency = concurrency;
    let name = entry_name(&bundle, entry);
    let header = args
        .host
        .header(&bundle_path, hash, &name, choice, &limits)?;
    let dir = args.state.clone().unwrap_or_else(|| {
        let mut d = out_path.clone().into_os_string();
        d.push(".state");
        PathBuf::from(d)
    });
    host.context
        .own_files
        .extend([out_path.clone(), dir.clone()]);
    let (rows, rows_sha256) = survey(&inputs_path)?;
    let (state, out) = State::open(&dir, header, &rows_sha256, &out_path)?;
    if let Some(p) = &host.progress {
        let (completed, failed) = state.earlier();
        p.batch(rows, completed + failed, failed);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let mut out = BufWriter::new(out);
    let batch = Batch {
        bundle: &bundle,
        function: entry,
        host: &host,
        limits: &limits,
        concurrency,
        state: Some(&state),
        progress: host.progress.as_ref(),
    };
    let summary = runtime.block_on(tv_runtime::batch::run(
        &batch,
        BufReader::new(inputs),
        &mut out,
    ));
    if let Some(p) = &host.progress {
        p.finish();
    }
    if let Some(problem) = host.unconfigured() {
        return Err(problem);
    }
    let summary = summary?;
    state.finish();
    output::say(&format!("tvm: batch: {}\n", summary.line()));
    Ok(if summary.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
