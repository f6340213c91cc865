//! The batch targets (DESIGN §16).
//!
//! 1. Per-row overhead: 10,000 rows of a one-task workflow (an atomic task with a
//!    parameter) answered by the echo provider take at most 50 µs each, through
//!    `batch::run` in-process with the host `tvm batch --provider echo` builds, each
//!    result written to a file as the CLI writes it.
//! 2. Peak resident memory of `tvm batch --provider echo` (the release binary, spawned;
//!    build it first with `cargo build --release --bin tvm`) at most 64 MB at 10,000 and
//!    at 100,000 rows, the two about equal: rows stream. Measured with its default state
//!    folder and with `--state DIR`, and, for comparison, of `batch::run` in a process
//!    of its own without a state.
//! 3. 1,000 rows, each an LLM call through the OpenAI adapter that a server on 127.0.0.1
//!    answers after 200 ms, at concurrency 100 (rows and the provider's cap), take at
//!    most 1.10 × the ideal 2 s (ten waves of 100): in-process, and through `tvm batch`.
//!
//! The figures are printed last, from criterion's medians.

use criterion::{Criterion, SamplingMode};
use loopback::Loopback;
use serde_json::json;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tv_runtime::batch::{self, Batch, Summary};
use tv_runtime::host::{Choice, RunHost};
use tv_runtime::ledger::Ledger;
use tv_runtime::observe::Progress;
use tv_runtime::prices::Prices;
use tv_runtime::providers::{OpenAi, Settings};
use tv_runtime::script::ScriptRunner;
use tv_stdlib::models::Provider;
use tv_test_support::{loopback, workloads};
use tv_vm::bundle::{Bundle, Verified};
use tv_vm::limits::Limits;

/// Benchmarks measure with the allocator the `tvc` and `tvm` binaries use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ROWS: usize = 10_000;
const MANY_ROWS: usize = 100_000;
const REMOTE_ROWS: usize = 1_000;
const DELAY: Duration = Duration::from_millis(200);
const CONCURRENCY: usize = 100;
/// `tvm batch`'s default `--concurrency`.
const CLI_CONCURRENCY: usize = 16;

/// Set in the child that measures memory: what it runs (see [`child`]).
const CHILD: &str = "TV_BENCH_BATCH_CHILD";

const PROGRAM: &str = r#"<task name="answer">
  <inputs><input name="question" type="string">The question</input></inputs>
  <instructions>Answer in one sentence: {{question}}</instructions>
</task>"#;

/// `n` rows, every other one `{"id": ..., "args": {...}}` and the others a plain object
/// of arguments.
fn rows(n: usize) -> String {
    let mut out = String::with_capacity(n * 64);
    for i in 0..n {
        let question = format!("What does row {i} of the benchmark ask about?");
        let _ = if i % 2 == 0 {
            writeln!(
                out,
                "{}",
                json!({"id": format!("row-{i}"), "args": {"question": question}})
            )
        } else {
            writeln!(out, "{}", json!({ "question": question }))
        };
    }
    out
}

/// The host `tvm batch` builds (`options::host`): the provider `choice`, at most
/// `concurrency` calls in flight, the built-in prices, the progress line (hidden when
/// stderr is not a terminal). For OpenAI, its adapter pointed at `url`.
fn cli_host(choice: Choice, url: Option<&str>, concurrency: usize) -> RunHost {
    let ledger = Some(Arc::new(Ledger {
        prices: Prices::builtin(),
        budget: None,
        cache: None,
        shared: None,
    }));
    let openai = url.map(|url| {
        let mut settings = Settings::new(url, "bench-model");
        settings.concurrency = concurrency;
        OpenAi::new(settings)
            .expect("adapter")
            .with_ledger(ledger.clone())
    });
    let mut host = RunHost::with_adapters(choice, openai, None, ScriptRunner::default());
    host.ledger = ledger;
    host.progress = Some(Progress::new());
    host
}

/// One batch over `inputs` in-process, without a state, its results written to `out`.
fn run_batch(
    rt: &tokio::runtime::Runtime,
    bundle: &Verified,
    host: &RunHost,
    concurrency: usize,
    inputs: impl BufRead,
    out: &mut impl Write,
) -> Summary {
    let limits = Limits {
        concurrency,
        ..Limits::default()
    };
    let b = Batch {
        bundle,
        function: bundle.entry("answer").expect("entry").function,
        host,
        limits: &limits,
        concurrency,
        state: None,
        progress: host.progress.as_ref(),
    };
    let summary = rt
        .block_on(batch::run(&b, inputs, out))
        .expect("the batch runs");
    assert_eq!(summary.failed, 0, "{}", summary.line());
    summary
}

/// A new results file in `dir`, buffered as `tvm batch` buffers it.
fn results(dir: &Path) -> BufWriter<std::fs::File> {
    BufWriter::new(std::fs::File::create(dir.join("results.jsonl")).expect("results file"))
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// In the child: runs what `spec` says, then prints the peak resident memory of what it
/// ran, in KiB. `tvm ARGS...` spawns the release binary and reads its peak from
/// `getrusage(RUSAGE_CHILDREN)` (this process waits for nothing else); `inprocess
/// BUNDLE ROWS OUT` runs `batch::run` here, without a state, and reads VmHWM.
fn child(spec: &str) {
    let args: Vec<&str> = spec.split('\u{1f}').collect();
    match args.as_slice() {
        ["inprocess", bundle, inputs, out] => {
            let bundle =
                Bundle::from_bytes(&std::fs::read(bundle).expect("bundle")).expect("loads");
            let host = cli_host(Choice::Echo, None, CLI_CONCURRENCY);
            let inputs = BufReader::new(std::fs::File::open(inputs).expect("inputs"));
            let mut out = BufWriter::new(std::fs::File::create(out).expect("results"));
            run_batch(
                &current_thread(),
                &bundle,
                &host,
                CLI_CONCURRENCY,
                inputs,
                &mut out,
            );
            println!("{}", workloads::status_kib("VmHWM").unwrap_or(0));
        }
        [tvm, rest @ ..] => {
            let status = Command::new(tvm)
                .args(rest)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("tvm runs");
            assert!(status.success(), "tvm batch failed: {status}");
            let usage =
                nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
                    .expect("getrusage");
            println!("{}", usage.max_rss());
        }
        [] => panic!("an empty child spec"),
    }
}

/// Runs this benchmark again as a child that runs `spec`; its peak resident memory in
/// KiB, and how long the child took.
fn peak_of(spec: &[&str], env: &[(&str, &str)]) -> (u64, Duration) {
    let start = Instant::now();
    let out = Command::new(std::env::current_exe().expect("own path"))
        .env(CHILD, spec.join("\u{1f}"))
        .envs(env.iter().copied())
        .output()
        .expect("the memory child runs");
    let took = start.elapsed();
    assert!(
        out.status.success(),
        "the memory child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    (text.trim().parse().unwrap_or(0), took)
}

/// `tvm batch` as a process: the release binary, the bundle's file, a scratch folder.
struct Processes {
    tvm: String,
    bundle: String,
    dir: PathBuf,
}

impl Processes {
    /// The rows in `rows` written to a file, and `tvm batch` of them with `flags`: its
    /// peak resident memory in KiB and how long it took.
    fn batch(
        &self,
        name: &str,
        rows: &str,
        flags: &[&str],
        env: &[(&str, &str)],
    ) -> (u64, Duration) {
        let path = |what: &str| {
            self.dir
                .join(format!("{name}-{what}"))
                .display()
                .to_string()
        };
        let (inputs, out) = (path("rows.jsonl"), path("results.jsonl"));
        std::fs::write(&inputs, rows).expect("write the rows");
        // A batch run again over its results would find every row done: each
        // measurement starts a new one.
        let _ = std::fs::remove_file(&out);
        let _ = std::fs::remove_dir_all(format!("{out}.state"));
        let mut spec = vec![
            self.tvm.as_str(),
            "batch",
            &self.bundle,
            "--inputs",
            &inputs,
            "--out",
            &out,
        ];
        spec.extend(flags);
        peak_of(&spec, env)
    }

    /// Target 2: with the echo provider at 10,000 and 100,000 rows, its state in the
    /// default folder and in one named by `--state`; and `batch::run` in a process of
    /// its own, without a state. (How, rows, KiB, time.)
    fn memory(&self) -> Vec<(&'static str, usize, u64, Duration)> {
        let mut figures = Vec::new();
        for n in [ROWS, MANY_ROWS] {
            let rows = rows(n);
            let state = self.dir.join(format!("state-{n}")).display().to_string();
            let echo = ["--provider", "echo"];
            let (kib, took) = self.batch("echo", &rows, &echo, &[]);
            figures.push(("tvm batch", n, kib, took));
            let named = ["--provider", "echo", "--state", &state];
            let (kib, took) = self.batch("named", &rows, &named, &[]);
            figures.push(("tvm batch --state DIR", n, kib, took));
            let inputs = self.dir.join("inprocess-rows.jsonl").display().to_string();
            let out = self
                .dir
                .join("inprocess-results.jsonl")
                .display()
                .to_string();
            std::fs::write(&inputs, &rows).expect("write the rows");
            let (kib, took) = peak_of(&["inprocess", &self.bundle, &inputs, &out], &[]);
            figures.push(("batch::run, no state", n, kib, took));
        }
        figures
    }

    /// Target 3 through `tvm batch`, three times: (KiB, time) of each.
    fn remote(&self, url: &str, rows: &str) -> Vec<(u64, Duration)> {
        let concurrency = CONCURRENCY.to_string();
        let flags = ["--provider", "openai", "--concurrency", &concurrency];
        let env = [("OPENAI_BASE_URL", url), ("OPENAI_API_KEY", "bench")];
        (0..3)
            .map(|_| self.batch("remote", rows, &flags, &env))
            .collect()
    }
}

/// The OpenAI chat-completions reply to every call, sent 200 ms after the request.
const REPLY: &str = r#"{"choices": [{"message": {"role": "assistant", "content": "An answer."}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}"#;

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        child(&spec);
        return;
    }
    let dir = std::env::temp_dir().join(format!("tv-bench-batch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary folder");
    let bundle = workloads::bundle(PROGRAM);
    let rt = current_thread();
    let mut c = Criterion::default().configure_from_args();

    // Target 1: per-row overhead with the echo provider.
    let echo = cli_host(Choice::Echo, None, CLI_CONCURRENCY);
    let inputs = rows(ROWS);
    let summary = run_batch(
        &rt,
        &bundle,
        &echo,
        CLI_CONCURRENCY,
        inputs.as_bytes(),
        &mut results(&dir),
    );
    assert_eq!(summary.completed, ROWS as u64);
    let mut group = c.benchmark_group("batch_overhead");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8))
        .sampling_mode(SamplingMode::Flat);
    group.bench_function("10000 rows, echo", |b| {
        b.iter(|| {
            run_batch(
                &rt,
                &bundle,
                &echo,
                CLI_CONCURRENCY,
                inputs.as_bytes(),
                &mut results(&dir),
            )
        })
    });
    group.bench_function("one run of the workflow, echo", |b| {
        let function = bundle.entry("answer").expect("entry").function;
        let args = vec![json!("What does row 1 of the benchmark ask about?")];
        b.iter(|| {
            rt.block_on(
                tv_runtime::Run::new(&bundle, function, args.clone(), Limits::default()).on(&echo),
            )
        })
    });
    group.finish();

    // Target 3: 1,000 rows of 200 ms at concurrency 100. The server keeps connections
    // alive, as providers do, and answers each on a thread of its own, so 100 at once
    // are answered side by side; the rows run on one thread, as `tvm batch` runs them.
    let server = Loopback::start_after(REPLY, DELAY);
    let remote = cli_host(
        Choice::Remote(Provider::OpenAi),
        Some(&server.url()),
        CONCURRENCY,
    );
    let remote_inputs = rows(REMOTE_ROWS);
    let summary = run_batch(
        &rt,
        &bundle,
        &remote,
        CONCURRENCY,
        remote_inputs.as_bytes(),
        &mut results(&dir),
    );
    assert_eq!(summary.completed, REMOTE_ROWS as u64);
    let tally = server.tally();
    assert_eq!(tally.requests, REMOTE_ROWS as u64);
    println!(
        "batch: {} calls over {} connections",
        tally.requests, tally.connections
    );
    let mut group = c.benchmark_group("batch");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(25))
        .sampling_mode(SamplingMode::Flat);
    group.bench_function("1000 rows of 200 ms at concurrency 100", |b| {
        b.iter(|| {
            run_batch(
                &rt,
                &bundle,
                &remote,
                CONCURRENCY,
                remote_inputs.as_bytes(),
                &mut results(&dir),
            )
        })
    });
    group.finish();
    c.final_summary();

    // Target 2 (and target 3 through the CLI): `tvm batch` as a process.
    let bundle_path = dir.join("answer.bin");
    std::fs::write(&bundle_path, bundle.to_bytes()).expect("write the bundle");
    let processes = workloads::tvm_binary().map(|tvm| Processes {
        tvm: tvm.display().to_string(),
        bundle: bundle_path.display().to_string(),
        dir: dir.clone(),
    });
    let memory: Vec<_> = processes.iter().flat_map(Processes::memory).collect();
    let cli_remote: Vec<_> = processes
        .iter()
        .flat_map(|p| p.remote(&server.url(), &remote_inputs))
        .collect();

    // The figures.
    let per = |path: &str, n: usize| workloads::median_ns(path).map(|t| t / n as f64);
    if let Some(t) = per("batch_overhead/10000 rows, echo", ROWS) {
        println!(
            "batch, per row (10,000 rows, echo, in-process) = {} (target <= 50 us)",
            workloads::human(t)
        );
    }
    if let Some(t) = workloads::median_ns("batch_overhead/one run of the workflow, echo") {
        println!(
            "batch: one run of the workflow alone = {}",
            workloads::human(t)
        );
    }
    let ideal = (REMOTE_ROWS / CONCURRENCY) as f64 * DELAY.as_nanos() as f64;
    if let Some(t) = workloads::median_ns("batch/1000 rows of 200 ms at concurrency 100") {
        println!(
            "batch of 1,000 x 200 ms at 100 (in-process) = {} = {:.3} x the ideal {} (target <= 1.10x)",
            workloads::human(t),
            t / ideal,
            workloads::human(ideal),
        );
    }
    for (kib, took) in &cli_remote {
        println!(
            "batch of 1,000 x 200 ms at 100 (tvm batch, its state kept) = {} = {:.3} x the ideal; peak RSS {kib} KiB",
            workloads::human(took.as_nanos() as f64),
            took.as_nanos() as f64 / ideal
        );
    }
    for (how, n, kib, took) in &memory {
        println!(
            "batch memory: {how}, {n} rows, echo: peak RSS {kib} KiB ({:.1} MB; target <= 64 MB); {} per row",
            *kib as f64 * 1024.0 / 1e6,
            workloads::human(took.as_nanos() as f64 / *n as f64)
        );
    }
    if processes.is_none() {
        println!("batch memory and tvm batch: skipped, no release tvm binary (build it with `cargo build --release --bin tvm`)");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
