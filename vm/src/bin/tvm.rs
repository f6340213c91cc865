//! `tvm`: loads, verifies and runs task-template bundles.

use clap::{Args, Parser, Subcommand};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use tv_vm::bundle::Bundle;
use tv_vm::cassette::{Cassette, Recorder};
use tv_vm::driver;
use tv_vm::limits::Limits;
use tv_vm::observe::{Progress, Trace};
use tv_vm::providers::Settings;
use tv_vm::runhost::{Choice, RunHost};
use tv_vm::script::ScriptRunner;

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
    /// Run an entry point and print its TaskResult as JSON.
    Run(Box<RunArgs>),
    /// Print the bundle's listing.
    Disasm { bundle: PathBuf },
}

#[derive(Args)]
struct RunArgs {
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
    /// Who answers LLM calls: openai, anthropic or echo (default: $TVM_PROVIDER, else
    /// the provider whose key is set).
    #[arg(long, env = "TVM_PROVIDER")]
    provider: Option<String>,
    /// The model for tasks that name none (default: $TVM_MODEL, else the provider's).
    #[arg(long)]
    model: Option<String>,
    /// The recorded replies `--provider replay` answers from.
    #[arg(long, value_name = "FILE")]
    cassette: Option<PathBuf>,
    /// The folder whose files fresh context may search (honouring .gitignore); none
    /// named, none searched.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Write one JSON line per host call: what was asked, how long, tokens, outcome.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Write every LLM reply of this run to a cassette.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// LLM calls in flight at once, per provider.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    #[command(flatten)]
    limits: LimitArgs,
}

/// Limits; defaults are those of `Limits::default()`.
#[derive(Args)]
struct LimitArgs {
    /// Nested template calls.
    #[arg(long, default_value_t = Limits::default().call_depth)]
    max_call_depth: usize,
    /// Nested subtasks.
    #[arg(long, default_value_t = Limits::default().subtask_depth)]
    max_subtask_depth: usize,
    /// Director-evaluator iterations over the run.
    #[arg(long, default_value_t = Limits::default().loop_iterations)]
    max_iterations: u64,
    /// Assistant turns over the run.
    #[arg(long, default_value_t = Limits::default().turns)]
    max_turns: u64,
    /// Tokens over the run.
    #[arg(long, default_value_t = Limits::default().tokens)]
    max_tokens: u64,
    /// Wall-clock seconds for the run.
    #[arg(long, default_value_t = Limits::default().wall_time.as_secs())]
    timeout: u64,
    /// Instructions executed.
    #[arg(long, default_value_t = Limits::default().instructions)]
    max_instructions: u64,
}

impl LimitArgs {
    fn limits(&self) -> Limits {
        Limits {
            call_depth: self.max_call_depth,
            subtask_depth: self.max_subtask_depth,
            loop_iterations: self.max_iterations,
            turns: self.max_turns,
            tokens: self.max_tokens,
            wall_time: Duration::from_secs(self.timeout),
            instructions: self.max_instructions,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Disasm { bundle } => load(&bundle).map(|b| {
            print!("{}", tv_vm::disasm::disassemble(&b));
            ExitCode::SUCCESS
        }),
        Command::Run(args) => run(*args),
    };
    result.unwrap_or_else(|e| {
        eprintln!("tvm: error: {e}");
        ExitCode::from(2)
    })
}

fn load(path: &Path) -> Result<Bundle, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Bundle::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn run(args: RunArgs) -> Result<ExitCode, String> {
    let bundle = load(&args.bundle)?;
    let choice = match args.provider.as_deref() {
        Some(p) => Choice::parse(p).ok_or_else(|| format!("unknown provider `{p}` (known: openai, anthropic, replay, echo)"))?,
        None => RunHost::default_from_keys().ok_or(
            "no provider is configured: pass --provider openai|anthropic (with OPENAI_API_KEY or ANTHROPIC_API_KEY set, \
             or OPENAI_BASE_URL pointing at a local server), or --provider echo for a dry run; TVM_PROVIDER sets the default",
        )?,
    };
    let (model, concurrency) = (args.model.clone(), args.concurrency);
    let tune = move |s: &mut Settings| {
        if let Some(m) = &model {
            s.default_model = m.clone();
        }
        s.concurrency = concurrency;
    };
    let mut host = RunHost::new(choice, tune, ScriptRunner::default())?;
    match (&args.cassette, choice) {
        (Some(path), Choice::Replay) => host.cassette = Some(Cassette::load(path)?),
        (None, Choice::Replay) => return Err("--provider replay needs --cassette FILE".into()),
        (Some(_), _) => return Err("--cassette is read by --provider replay only".into()),
        (None, _) => {}
    }
    if let Some(path) = &args.record {
        host.recorder = Some(Recorder::create(path)?);
    }
    if let Some(path) = &args.trace {
        host.trace = Some(Trace::create(path)?);
    }
    host.progress = Some(Progress::new());
    host.context.workspace = args.workspace.clone();
    let entry = pick_entry(&bundle, args.entry.as_deref())?;
    let values = bind_args(&bundle, entry, &args.args, args.args_json.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let (result, _) = runtime.block_on(driver::run(
        &bundle,
        entry,
        values,
        args.limits.limits(),
        &host,
    ));
    if let Some(p) = &host.progress {
        p.finish();
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&result).unwrap_or_default()
    );
    Ok(if tv_vm::result::is_failed(&result) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn pick_entry(bundle: &Bundle, name: Option<&str>) -> Result<u32, String> {
    let names = || {
        bundle
            .entries
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match name {
        Some(n) => bundle
            .entry(n)
            .map(|e| e.function)
            .ok_or_else(|| format!("no entry point `{n}` in the bundle (entries: {})", names())),
        None if bundle.entries.len() == 1 => Ok(bundle.entries[0].function),
        None => Err(format!(
            "the bundle has several entry points; choose one with --entry ({})",
            names()
        )),
    }
}

/// Arguments by parameter name, in parameter order.
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
    for pair in pairs {
        let (name, raw) = pair
            .split_once('=')
            .ok_or_else(|| format!("--arg `{pair}` must be NAME=VALUE"))?;
        // `NAME=@FILE` reads the value from a file, as curl does.
        let from_file;
        let raw = match raw.strip_prefix('@') {
            Some(path) => {
                from_file = std::fs::read_to_string(path)
                    .map_err(|e| format!("--arg {name}=@{path}: {e}"))?;
                from_file.as_str()
            }
            None => raw,
        };
        let ty = f
            .params
            .iter()
            .find(|p| p.name == name)
            .map_or("any", |p| p.ty.as_str());
        let value = match ty {
            "string" | "any" => Value::String(raw.to_string()),
            _ => serde_json::from_str(raw)
                .map_err(|e| format!("--arg {name} expects {ty} JSON: {e}"))?,
        };
        given.insert(name.to_string(), value);
    }
    if let Some(unknown) = given
        .keys()
        .find(|k| !f.params.iter().any(|p| &p.name == *k))
    {
        let names: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
        return Err(format!(
            "`{}` has no parameter `{unknown}` (parameters: {})",
            f.name,
            names.join(", ")
        ));
    }
    f.params
        .iter()
        .map(|p| {
            given.remove(&p.name).ok_or_else(|| {
                format!(
                    "missing argument `{}` for `{}`: pass --arg {}=...",
                    p.name, f.name, p.name
                )
            })
        })
        .collect()
}
