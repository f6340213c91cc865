//! `tvm batch`: the entry point once per row of a JSON-lines file (DESIGN §16).

use super::options::{concurrency, header, host, limits, run_config, HostArgs, LimitArgs};
use super::{entry_name, load, output, pick_entry, priced};
use clap::Args;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tv_runtime::batch::{Batch, Lines, Start, State, Summary, MAX_ROW_BYTES};
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
    /// Run again the rows whose lines in --out say they failed (their lines are
    /// replaced); the calls they had finished are answered from their journals.
    #[arg(long, conflicts_with_all = ["nats", "rerun"])]
    retry_failed: bool,
    /// Run every row again, though --out holds their results; the earlier results are
    /// kept as OUT.previous.
    #[arg(long, conflicts_with = "nats")]
    rerun: bool,
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
    let file = open_inputs(inputs)?;
    let (mut rows, mut hash) = (0, tv_runtime::digest::Sha256Hex::new());
    for line in Lines::new(BufReader::new(file), MAX_ROW_BYTES) {
        let (_, line) = line.map_err(|e| format!("--inputs {}: {e}", inputs.display()))?;
        let text = line.unwrap_or_else(|why| why);
        if !text.trim().is_empty() {
            rows += 1;
            hash.update(text.as_bytes());
            hash.update(b"\n");
        }
    }
    Ok((rows, hash.hex()))
}

/// Refuses `--out` naming the inputs, by any path (a link, a hard link: the same file
/// by device and inode), before either is touched: opening the results would empty them.
fn distinct(inputs: &Path, out: &Path) -> Result<(), String> {
    let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    match id(out) {
        Some(o) if id(inputs) == Some(o) => Err(format!(
            "--out {} is the inputs file {} (the same file by another name): the results \
             would overwrite the rows",
            out.display(),
            inputs.display()
        )),
        _ => Ok(()),
    }
}

pub fn batch(args: BatchArgs) -> Result<ExitCode, String> {
    if args.nats.nats.is_some() {
        return super::nats::batch(args);
    }
    let config = run_config(&args.host, Some(&args.limits))?;
    let bundle_path = needed(&args.bundle, "a bundle")?.clone();
    let inputs_path = needed(&args.inputs, "--inputs FILE")?.clone();
    let out_path = needed(&args.out, "--out FILE")?.clone();
    let (bundle, hash) = load(&bundle_path)?;
    let entry = pick_entry(&bundle, args.entry.as_deref())?;
    let inputs = open_inputs(&inputs_path)?;
    distinct(&inputs_path, &out_path)?;
    let mut host = host(&config, &args.host)?;
    priced(&host, &bundle)?;
    // Rows run as many at once as the provider takes calls; a map inside a row runs
    // its bodies within the same cap.
    let concurrency = concurrency(&config);
    let limits = limits(&config);
    let name = entry_name(&bundle, entry);
    let header = header(&bundle_path, hash, &name, &config);
    let dir = args.state.clone().unwrap_or_else(|| {
        let mut d = out_path.clone().into_os_string();
        d.push(".state");
        PathBuf::from(d)
    });
    tv_runtime::batch::apart_from_state(&dir, &[("--inputs", &inputs_path)])?;
    host.context
        .own_files
        .extend([out_path.clone(), dir.clone()]);
    let (rows, rows_sha256) = survey(&inputs_path)?;
    let start = match (args.retry_failed, args.rerun) {
        (true, _) => Start::RetryFailed,
        (_, true) => Start::Rerun,
        _ => Start::Continue,
    };
    let (state, out) = State::open(&dir, header, &rows_sha256, &out_path, start)?;
    if let Some(kept) = state.previous() {
        output::say(&format!(
            "tvm: batch: --rerun: the earlier results are kept as {}\n",
            kept.display()
        ));
    }
    let (completed, failed) = state.earlier();
    if completed + failed >= rows {
        output::say(&format!(
            "tvm: batch: all {rows} rows are done ({completed} completed, {failed} failed) in \
             {}; nothing was run (--retry-failed runs the failed rows again, --rerun every \
             row)\n",
            out_path.display()
        ));
        return Ok(exit_code(failed));
    }
    if let Some(p) = &host.progress {
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
    // Ctrl-C stops the batch where it is, saying what is done; if the handler cannot
    // be set, Ctrl-C ends the process as it would anyway.
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let summary = runtime.block_on(tv_runtime::batch::run_until(
        &batch,
        BufReader::new(inputs),
        &mut out,
        interrupt,
    ));
    if let Some(p) = &host.progress {
        p.finish();
    }
    drop(out);
    state.close();
    if let Some(problem) = host.unconfigured() {
        return Err(problem);
    }
    let summary = summary?;
    // Stopped as the last row ended: the batch is over.
    if summary.interrupted && summary.rows < rows {
        say_interrupted(&summary, rows);
        return Ok(ExitCode::from(130));
    }
    output::say(&format!("tvm: batch: {}\n", summary.line()));
    Ok(exit_code(summary.failed))
}

/// 0 when every row completed, 1 when some failed.
fn exit_code(failed: u64) -> ExitCode {
    match failed {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}

/// What a batch stopped by Ctrl-C did, and how to go on.
fn say_interrupted(summary: &Summary, rows: u64) {
    let left = rows.saturating_sub(summary.rows);
    output::say(&format!(
        "tvm: batch: interrupted: {} of {rows} rows are done ({} completed, {} failed); \
         run the same command again to resume the other {left}, without paying again for \
         the calls they finished\n",
        summary.rows, summary.completed, summary.failed
    ));
}
