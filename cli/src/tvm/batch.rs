//! `tvm batch`: the entry point once per row of a JSON-lines file (DESIGN §16). The
//! batch's product logic is the runtime's (`tv_runtime::batch::front`); here are what
//! is printed and the exit codes.

use super::args::{needed, BatchArgs};
use super::options::{host, run_config};
use super::{entry_name, load, output, pick_entry};
use std::process::ExitCode;
use tv_runtime::batch::front::{self, LocalBatch, Rows};
use tv_runtime::batch::Summary;
use tv_runtime::host::priced;
use tv_runtime::journal::Header;

pub(crate) fn batch(args: BatchArgs) -> Result<ExitCode, String> {
    let config = run_config(&args.host, Some(&args.limits))?;
    let bundle_path = needed(&args.bundle, "a bundle")?.clone();
    let inputs_path = needed(&args.inputs, "--inputs FILE")?.clone();
    let out_path = needed(&args.out, "--out FILE")?.clone();
    let (bundle, hash) = load(&bundle_path)?;
    let entry = pick_entry(&bundle, args.entry.as_deref())?;
    let inputs = front::open_inputs(&inputs_path)?;
    front::distinct(&inputs_path, &out_path)?;
    let mut host = host(&config, &args.host)?;
    priced(&host, &bundle).map_err(|e| e.to_string())?;
    // Rows run as many at once as the provider takes calls; a map inside a row runs
    // its bodies within the same cap.
    let concurrency = config.concurrency();
    let limits = config.machine_limits();
    let header = Header::new(&bundle_path, hash, &entry_name(&bundle, entry), &config);
    let start = front::start(args.retry_failed, args.rerun);
    let local = LocalBatch::new(inputs_path, out_path.clone(), args.state.clone(), start);
    host.context.own_files.extend(local.own_files());
    let opened = local.open(header)?;
    if let Some(kept) = opened.state.previous() {
        output::say(&format!(
            "tvm: batch: --rerun: the earlier results are kept as {}\n",
            kept.display()
        ));
    }
    let rows = opened.survey.rows;
    if let Some((completed, failed)) = opened.all_done() {
        output::say(&format!(
            "tvm: batch: all {rows} rows are done ({completed} completed, {failed} failed) in \
             {}; nothing was run (--retry-failed runs the failed rows again, --rerun every \
             row)\n",
            out_path.display()
        ));
        return Ok(exit_code(failed));
    }
    if let Some(p) = &host.progress {
        let (completed, failed) = opened.state.earlier();
        p.batch(rows, completed + failed, failed);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let each = Rows {
        bundle: &bundle,
        entry,
        host: &host,
        limits: &limits,
        concurrency,
        progress: host.progress.as_ref(),
    };
    // Ctrl-C stops the batch where it is, saying what is done; if the handler cannot
    // be set, Ctrl-C ends the process as it would anyway.
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let summary = runtime.block_on(opened.run(each, inputs, interrupt));
    if let Some(p) = &host.progress {
        p.finish();
    }
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
