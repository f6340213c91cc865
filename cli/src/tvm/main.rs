//! `tvm`: loads, verifies and runs task-template bundles.

// Output goes through functions that handle a closed or full stream; the print macros
// panic on one.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

use clap::{Args, Parser, Subcommand};
use options::{host, HostArgs, LimitArgs};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
mod args;
mod batch;
mod info;
mod interrupt;
mod keys;
mod nats;
mod options;
mod snapshots;
mod source;
mod testing;

use tv_cli::{env, output};
use tv_runtime::files;
use tv_runtime::host::{priced, RunHost};
use tv_runtime::journal::{Header, Journal};
use tv_runtime::resume::Resume;
use tv_runtime::Run;
use tv_vm::bundle::{Bundle, Verified};
use tv_vm::limits::Limits;
use tv_vm::result::TaskResult;

/// mimalloc, as in every binary of the workspace (see the workspace manifest).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "tvm", version, about = "Run compiled task-template bundles")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an entry point of a bundle, or of templates compiled in memory (a *.xml file
    /// or a directory), and print its TaskResult.
    Run(Box<RunArgs>),
    /// Finish a run from its journal: calls the journal holds are answered from it,
    /// only the others are made.
    Resume(Box<ResumeArgs>),
    /// Run an entry point once per row of a JSON-lines file, rows side by side, each
    /// row's result written as a line as it ends.
    Batch(Box<args::BatchArgs>),
    /// Run rows of the batches published to a NATS server (`tvm batch --nats`), until
    /// stopped; any number of workers, on any machines.
    Worker(Box<nats::WorkerArgs>),
    /// Print the bundle's listing.
    Disasm { bundle: PathBuf },
    /// List a bundle's entry points: parameters with their types and docs, return
    /// types, and the models its tasks name.
    Info(info::InfoArgs),
    /// Run the `<test>`s of templates offline and print one line per test.
    Test(testing::TestArgs),
}

#[derive(Args)]
struct RunArgs {
    /// A bundle, or templates to compile first: a *.xml file or a directory of them.
    bundle: PathBuf,
    /// The entry point; may be left out when the bundle has only one.
    #[arg(long)]
    entry: Option<String>,
    /// An argument, NAME=VALUE (NAME=@FILE reads it from a file); VALUE is read as JSON
    /// for parameters typed other than string.
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    args: Vec<String>,
    /// All arguments as one JSON object.
    #[arg(long, value_name = "JSON")]
    args_json: Option<String>,
    /// Write every host call's outcome to this file, synced before the run goes on, so
    /// that `tvm resume FILE` can finish the run after a crash.
    #[arg(long, value_name = "FILE")]
    journal: Option<PathBuf>,
    /// What is printed: the whole TaskResult as JSON, or only its final content (a
    /// failure's error then goes to stderr).
    #[arg(long, value_enum, default_value_t = Output::Json)]
    output: Output,
    #[command(flatten)]
    host: HostArgs,
    #[command(flatten)]
    limits: LimitArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Output {
    Json,
    Text,
}

#[derive(Args)]
struct ResumeArgs {
    /// The journal a `tvm run --journal FILE` wrote.
    journal: PathBuf,
    /// The bundle, when it is no longer where the run found it; it must be the same bytes.
    #[arg(long, value_name = "FILE")]
    bundle: Option<PathBuf>,
    /// Run again a script that was running when the run stopped (it may have done part
    /// of its work already).
    #[arg(long)]
    rerun_scripts: bool,
    /// Settings not given here are the run's own, from the journal; limits always are.
    #[command(flatten)]
    host: HostArgs,
}

fn main() -> ExitCode {
    // First of all: with keys in the environment, this starts tvm again without them.
    let keys = match keys::take() {
        Ok(keys) => keys,
        Err(e) => {
            output::say(&format!("tvm: error: {e}\n"));
            return ExitCode::from(2);
        }
    };
    protect_keys();
    match env::start(Path::new(".env"), keys) {
        Ok(warnings) => {
            for w in warnings {
                output::say(&format!("tvm: warning: {w}\n"));
            }
        }
        Err(e) => {
            output::say(&format!("tvm: error: {e}\n"));
            return ExitCode::from(2);
        }
    }
    let cli = Cli::parse();
    // A worker's --verbose adds a line per row it ran.
    let most = match &cli.command {
        Command::Worker(args) if args.verbose => tracing::Level::INFO,
        _ => tracing::Level::WARN,
    };
    tv_cli::log::install(most);
    let result = match cli.command {
        Command::Disasm { bundle } => {
            let listing = load(&bundle).map(|(b, _)| tv_vm::disasm::disassemble(&b));
            listing
                .and_then(|l| output::print(&l))
                .map(|()| ExitCode::SUCCESS)
        }
        Command::Run(args) => run(*args),
        Command::Resume(args) => resume(*args),
        // The same command, on this machine or spread over workers through NATS.
        Command::Batch(args) if args.nats.nats.is_some() => nats::batch(*args),
        Command::Batch(args) => batch::batch(*args),
        Command::Worker(args) => nats::worker(*args),
        Command::Info(args) => info::info(&args),
        Command::Test(args) => testing::test(args),
    };
    result.unwrap_or_else(|e| {
        output::say(&format!("tvm: error: {e}\n"));
        ExitCode::from(2)
    })
}

/// Puts this process's memory, where the API keys are, out of reach of the scripts it
/// runs: a process that is not dumpable has its `/proc/PID/mem` (and `environ`)
/// readable by root (CAP_SYS_PTRACE) only, not by other processes of the same user.
/// (Scripts are started without the keys, and the keys left the environment block at
/// start, see `keys`; this closes the way to the memory that holds them.)
fn protect_keys() {
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        output::say(&format!(
            "tvm: warning: cannot mark the process non-dumpable ({e}); scripts run as this \
             user could read the API keys from /proc\n"
        ));
    }
}

/// A bundle (or the bundle of templates, compiled) and the SHA-256 of its bytes.
fn load(path: &Path) -> Result<(Verified, String), String> {
    load_with_bytes(path).map(|(bundle, hash, _)| (bundle, hash))
}

/// [`load`], with the bundle's bytes (a batch published to a server carries them).
fn load_with_bytes(path: &Path) -> Result<(Verified, String, Vec<u8>), String> {
    source::load(path).map(|l| {
        let hash = l.hash();
        (l.bundle, hash, l.bytes)
    })
}

/// The name of the entry point's function, as journal headers and batch records keep it.
fn entry_name(bundle: &Bundle, entry: u32) -> String {
    bundle
        .functions
        .get(entry as usize)
        .map_or(String::new(), |f| f.name.clone())
}

fn run(args: RunArgs) -> Result<ExitCode, String> {
    let source::Loaded { bundle, bytes } = source::load(&args.bundle)?;
    let config = options::run_config(&args.host, Some(&args.limits))?;
    let entry = pick_entry(&bundle, args.entry.as_deref())?;
    let values = bind_args(&bundle, entry, &args.args, args.args_json.as_deref())?;
    let mut host = host(&config, &args.host)?;
    host.context.own_files.extend(args.journal.clone());
    priced(&host, &bundle).map_err(|e| e.to_string())?;
    let limits = config.machine_limits();
    let journal = match &args.journal {
        Some(path) => {
            let f = bundle
                .functions
                .get(entry as usize)
                .ok_or("the entry point has no function")?;
            let hash = tv_runtime::sha256_hex(&bytes);
            let mut header = Header::new(&args.bundle, hash, &f.name, &config);
            header.args = f
                .params
                .iter()
                .map(|p| p.name.clone())
                .zip(values.clone())
                .collect();
            Some(Journal::create(path, &header).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    // Only a journal's header names the program by the hash of its bytes.
    drop(bytes);
    let ran = execute(&bundle, entry, values, limits, &host, journal.as_ref())?;
    if ran.interrupted {
        if let Some(path) = &args.journal {
            output::say(&format!(
                "tvm: the journal keeps what was done; finish the run with `tvm resume {}`\n",
                path.display()
            ));
        }
    }
    let code = print_result(ran, args.output);
    // tvm ends now: the memory of a large program is left to the system to take back
    // at once, rather than freed an allocation at a time first.
    std::mem::forget(bundle);
    code
}

/// The first 16 characters of a hash, for messages; a hash read from a file is
/// untrusted text, so the cut is by characters, never inside one.
fn short(hash: &str) -> String {
    hash.chars().take(16).collect()
}

fn resume(args: ResumeArgs) -> Result<ExitCode, String> {
    let opened = Resume::open(&args.journal).map_err(|e| e.to_string())?;
    let path = opened.bundle(args.bundle.as_deref());
    let (bundle, hash) = load(&path)?;
    let flags = args.host.layer()?;
    let env = env::environment();
    let resumed = opened
        .check(&bundle, &hash, &path, args.rerun_scripts, env, flags)
        .map_err(|e| e.to_string())?;
    let mut host = host(&resumed.config, &args.host)?;
    host.context.own_files.push(args.journal.clone());
    priced(&host, &bundle).map_err(|e| e.to_string())?;
    let journal = resumed.journal;
    let ran = execute(
        &bundle,
        resumed.entry,
        resumed.args,
        resumed.limits,
        &host,
        Some(&journal),
    )?;
    let code = print_result(ran, Output::Json)?;
    let (replayed, made) = journal.counts();
    let bodies = match journal.bodies_replayed() {
        0 => String::new(),
        1 => ", 1 body taken whole from the journal".to_string(),
        n => format!(", {n} bodies taken whole from the journal"),
    };
    output::say(&format!(
        "tvm: resumed: {replayed} answered from the journal, {made} made now{bodies}\n"
    ));
    Ok(code)
}

/// A run's result, and whether Ctrl-C stopped it.
struct Ran {
    result: TaskResult,
    interrupted: bool,
}

/// Prints a run's result as `--output` asks, and gives the exit code: 0 when it
/// completed, 1 when it failed, 130 when Ctrl-C stopped it.
fn print_result(ran: Ran, how: Output) -> Result<ExitCode, String> {
    let result = ran.result;
    let code = if ran.interrupted {
        ExitCode::from(interrupt::EXIT)
    } else if result.is_failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    match how {
        Output::Json => {
            let mut text = serde_json::to_string_pretty(&result).unwrap_or_default();
            text.push('\n');
            output::print(&text)?;
        }
        Output::Text => {
            let content = &result.content;
            let newline = if content.is_empty() || content.ends_with('\n') {
                ""
            } else {
                "\n"
            };
            output::print(&format!("{content}{newline}"))?;
            if let Some(e) = &result.notes.error {
                output::say(&format!("tvm: the run failed: {}\n", e.message));
            }
        }
    }
    Ok(code)
}

/// Runs the entry to its end, or until Ctrl-C, and gives its result, with the run's
/// usage.
fn execute(
    program: &Verified,
    entry: u32,
    values: Vec<Value>,
    limits: Limits,
    host: &RunHost,
    journal: Option<&Journal>,
) -> Result<Ran, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let stopped = stopping.clone();
    let ran = runtime.block_on(async {
        let listener = tokio::spawn(interrupt::on_ctrl_c(stop));
        let run = Run {
            journal,
            interrupt: Some(stopping),
            ..Run::new(program, entry, values, limits)
        };
        let out = run.on(host).await;
        listener.abort();
        out
    });
    if let Some(p) = &host.progress {
        p.finish();
    }
    // A run that needed a provider it could not reach is a usage error, not a
    // failure of the workflow.
    if let Some(problem) = host.unconfigured() {
        return Err(problem);
    }
    let result = ran.result;
    // A Ctrl-C that came as the run was ending did not stop it.
    let interrupted = *stopped.borrow() && result.is_failed();
    Ok(Ran {
        result,
        interrupted,
    })
}

/// The entry to run: the one named, else the bundle's only entry point (see
/// [`Verified::entry_point`]).
fn pick_entry(program: &Verified, name: Option<&str>) -> Result<u32, String> {
    program.entry_point(name).map_err(|e| e.to_string())
}

/// The text of `--arg NAME=@FILE`: a regular file within [`files::ARGUMENT`], so
/// `@/dev/zero` or a FIFO is refused instead of read without end.
fn read_arg_file(path: &Path) -> Result<String, String> {
    let bytes = files::read(path, files::ARGUMENT).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_string())
}

/// Arguments by parameter name, in parameter order, each checked against its
/// parameter's type before anything runs.
fn bind_args(
    bundle: &Bundle,
    entry: u32,
    pairs: &[String],
    json: Option<&str>,
) -> Result<Vec<Value>, String> {
    let f = bundle
        .functions
        .get(entry as usize)
        .ok_or("the entry point has no function")?;
    let mut given: Map<String, Value> = match json {
        Some(j) => match serde_json::from_str(j) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err("--args-json must be a JSON object".into()),
            Err(e) => return Err(format!("--args-json is not valid JSON: {e}")),
        },
        None => Map::new(),
    };
    let from_json: Vec<String> = given.keys().cloned().collect();
    let mut seen: Vec<&str> = Vec::new();
    for pair in pairs {
        let (name, raw) = pair
            .split_once('=')
            .ok_or_else(|| format!("--arg `{pair}` must be NAME=VALUE"))?;
        if seen.contains(&name) {
            return Err(format!("--arg {name} is given twice"));
        }
        if from_json.iter().any(|k| k == name) {
            return Err(format!("`{name}` is given by both --arg and --args-json"));
        }
        seen.push(name);
        // `NAME=@FILE` reads the value from a file, as curl does.
        let from_file;
        let raw = match raw.strip_prefix('@') {
            Some(path) => {
                from_file = read_arg_file(Path::new(path))
                    .map_err(|e| format!("--arg {name}=@{path}: {e}"))?;
                from_file.as_str()
            }
            None => raw,
        };
        let ty = f
            .params
            .iter()
            .find(|p| p.name == name)
            .map_or(tv_stdlib::types::Type::Any, |p| p.ty.to_type());
        given.insert(name.to_string(), tv_vm::args::parse_arg(name, &ty, raw)?);
    }
    tv_vm::args::bind(f, given)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use tv_runtime::providers;

    #[test]
    fn the_help_of_run_and_resume_shows_the_defaults_the_host_uses() {
        for sub in ["run", "resume"] {
            let mut cli = Cli::command();
            let help = cli
                .find_subcommand_mut(sub)
                .expect("subcommand")
                .render_long_help()
                .to_string();
            for default in [
                providers::DEFAULT_CONCURRENCY as u64,
                u64::from(providers::DEFAULT_RETRIES),
                providers::DEFAULT_REQUEST_TIMEOUT_SECS,
                providers::DEFAULT_MAX_REPLY_BYTES as u64,
            ] {
                assert!(
                    help.contains(&format!("[default: {default}]")),
                    "`tvm {sub} --help` does not show the default {default}:\n{help}"
                );
            }
            for flag in [
                "--max-reply-bytes <BYTES>",
                "--allow-read <PATH>",
                "--json-mode <MODE>",
            ] {
                assert!(
                    help.contains(flag),
                    "`tvm {sub} --help` lacks {flag}:\n{help}"
                );
            }
        }
    }
}
