//! Row 2b: the cost of one step seen from the command line. The release `tvm` (build it
//! first with `cargo build --release --bin tvm`) is spawned on sequences of 1 and of
//! 10,000 atomic steps answered by `--provider echo`, and the cost of a step is
//! (t(10,000) − t(1)) / 9,999. Everything a process does per step is in it: reading and
//! verifying the larger bundle, the page faults of the memory a fresh process touches
//! first, freeing it, printing the result. `dispatch` (row 2) measures the machine's
//! share of it in process, where memory is reused from one run to the next.
//!
//! Two sequences: without accumulation (`<accumulate_data>false</accumulate_data>`),
//! which the target is about, and with it (a sequence's default: from about step 80 on,
//! each step is sent the 16 KiB cap of earlier results, and echo answers with it).
//! Without `--max-turns` a run stops at its 200th call, the default turn limit.
//!
//! Criterion times each run (wall clock). As the machine is shared, every run is also
//! measured in interleaved rounds through `getrusage`: its CPU time (user + system), minor
//! page faults and peak resident memory, printed as min and median over the rounds. A
//! 200-step sequence with accumulation (200 calls, the default turn limit) gives the
//! peak resident memory of a short run. The figures are printed last.

use criterion::{BenchmarkId, Criterion, SamplingMode};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tv_test_support::child::numbers_from_child;
use tv_test_support::workloads;

/// Benchmarks measure with the allocator the `tvc` and `tvm` binaries use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const LONG: usize = 10_000;
/// The short run whose peak resident memory is reported: the default turn limit.
const CALLS: usize = 200;
/// Interleaved rounds of `getrusage` measurements.
const ROUNDS: usize = 9;
/// The default limit of 200 turns would stop the long runs.
const LIMITS: [&str; 2] = ["--max-turns", "20000"];

/// One measured program: its label in the report, its steps and its bundle's file.
struct Case {
    label: &'static str,
    steps: usize,
    path: PathBuf,
}

/// What one spawned run used, read from `getrusage`.
#[derive(Clone, Copy)]
struct Used {
    wall: Duration,
    cpu: Duration,
    peak_kib: u64,
    faults: u64,
}

/// `tvm run BUNDLE --provider echo`, its output discarded.
fn command(tvm: &Path, bundle: &Path) -> Command {
    let mut c = Command::new(tvm);
    c.arg("run")
        .arg(bundle)
        .args(["--provider", "echo"])
        .args(LIMITS)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// Set in the child that runs `tvm` once and reports what it used: the binary's and the
/// bundle's paths. A child of its own, because a process started from this one takes
/// its peak resident memory as its own first figure (the kernel keeps the larger of the
/// two across `exec`), and this one holds the compiled workloads.
const CHILD: &str = "TV_BENCH_STEP_COST_CHILD";

/// In the child: runs `bundle` once and prints what the run used: wall and CPU time in
/// nanoseconds, peak resident memory in KiB, minor page faults. Panics unless it exited
/// 0 (COMPLETE).
fn report_run(tvm: &Path, bundle: &Path) {
    use nix::sys::resource::{getrusage, UsageWho};
    let start = Instant::now();
    let status = command(tvm, bundle).status().expect("tvm starts");
    let wall = start.elapsed();
    assert!(
        status.success(),
        "tvm run {} did not complete: {status}",
        bundle.display()
    );
    // This process waits for nothing else: what its children used is what the run used.
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    let time = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec() as u64) + Duration::from_micros(t.tv_usec() as u64)
    };
    let cpu = time(usage.user_time()) + time(usage.system_time());
    println!(
        "{} {} {} {}",
        wall.as_nanos(),
        cpu.as_nanos(),
        usage.max_rss(),
        usage.minor_page_faults()
    );
}

/// Runs `bundle` once, in a child of this benchmark; what the run used.
fn used(tvm: &Path, bundle: &Path) -> Used {
    let spec = format!("{}\u{1f}{}", tvm.display(), bundle.display());
    let n = numbers_from_child(CHILD, &spec);
    Used {
        wall: Duration::from_nanos(n[0]),
        cpu: Duration::from_nanos(n[1]),
        peak_kib: n[2],
        faults: n[3],
    }
}

/// The result `tvm` prints for `bundle`: its status and length.
fn result_of(tvm: &Path, bundle: &Path) -> String {
    let out = command(tvm, bundle)
        .stdout(Stdio::piped())
        .output()
        .expect("tvm runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(&text).expect("tvm prints JSON");
    format!("{}, {} bytes of JSON", v["status"], text.len())
}

/// The minimum and the median of `xs` (sorted here).
fn min_median<T: Copy + Ord>(mut xs: Vec<T>) -> (T, T) {
    xs.sort();
    (xs[0], xs[xs.len() / 2])
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Per-step figures of `label` from the rounds: CPU and wall time (min, median), faults.
fn per_step(label: &str, one: &[Used], long: &[Used]) {
    let step = |a: f64, b: f64| (b - a) / (LONG - 1) as f64;
    let (cpu1, cpu1_med) = min_median(one.iter().map(|u| u.cpu).collect());
    let (cpu, cpu_med) = min_median(long.iter().map(|u| u.cpu).collect());
    let (wall1, wall1_med) = min_median(one.iter().map(|u| u.wall).collect());
    let (wall, wall_med) = min_median(long.iter().map(|u| u.wall).collect());
    let (_, faults1) = min_median(one.iter().map(|u| u.faults).collect());
    let (_, faults) = min_median(long.iter().map(|u| u.faults).collect());
    println!(
        "{label}: per step, CPU {:.2} µs (min) / {:.2} µs (median), wall {:.2} / {:.2} µs, \
         {:.2} minor faults",
        step(micros(cpu1), micros(cpu)),
        step(micros(cpu1_med), micros(cpu_med)),
        step(micros(wall1), micros(wall)),
        step(micros(wall1_med), micros(wall_med)),
        step(faults1 as f64, faults as f64),
    );
}

/// The sequences of 1 and `LONG` steps, with and without accumulation, written as
/// bundles into `dir`; and the `CALLS`-step one.
fn write_cases(dir: &Path) -> (Vec<Case>, PathBuf) {
    let write = |name: &str, src: String| {
        let path = dir.join(format!("{name}.bin"));
        std::fs::write(&path, workloads::bundle(&src).to_bytes()).expect("write a bundle");
        path
    };
    let mut cases = Vec::new();
    for steps in [1, LONG] {
        let plain = workloads::sequence_without_accumulation(steps);
        cases.push(Case {
            label: "no accumulation",
            steps,
            path: write(&format!("plain{steps}"), plain),
        });
        cases.push(Case {
            label: "accumulation",
            steps,
            path: write(&format!("acc{steps}"), workloads::sequence(steps)),
        });
    }
    (cases, write("calls", workloads::sequence(CALLS)))
}

/// Criterion's wall-clock timing of each case.
fn time_cases(tvm: &Path, cases: &[Case]) {
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("step_cost");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .sampling_mode(SamplingMode::Flat);
    for case in cases {
        let id = BenchmarkId::new(case.label, case.steps);
        group.bench_with_input(id, &case, |b, case| {
            b.iter(|| {
                let status = command(tvm, &case.path).status().expect("tvm runs");
                assert!(status.success(), "tvm run failed: {status}");
            })
        });
    }
    group.finish();
    c.final_summary();
}

/// The figures of the rounds (one list per case, in the order of `cases`) and of
/// criterion's medians.
fn report(cases: &[Case], rounds: &[Vec<Used>]) {
    for (case, used) in cases.iter().zip(rounds) {
        let (cpu, cpu_med) = min_median(used.iter().map(|u| u.cpu).collect());
        let (_, peak) = min_median(used.iter().map(|u| u.peak_kib).collect());
        let (_, faults) = min_median(used.iter().map(|u| u.faults).collect());
        println!(
            "{} {}: CPU {cpu:.2?} (min) / {cpu_med:.2?} (median), peak {peak} KiB, {faults} \
             minor faults (medians of {ROUNDS} rounds)",
            case.label, case.steps
        );
    }
    for label in ["no accumulation", "accumulation"] {
        let of = |steps| {
            let i = cases
                .iter()
                .position(|c| c.label == label && c.steps == steps)
                .expect("measured");
            rounds[i].as_slice()
        };
        per_step(label, of(1), of(LONG));
        let median = |steps| workloads::median_ns(&format!("step_cost/{label}/{steps}"));
        if let (Some(one), Some(long)) = (median(1), median(LONG)) {
            println!(
                "{label}: criterion, ({} - {}) / {} = {} per step (target <= 4.2 µs without \
                 accumulation)",
                workloads::human(long),
                workloads::human(one),
                LONG - 1,
                workloads::human((long - one) / (LONG - 1) as f64)
            );
        }
    }
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        let (tvm, bundle) = spec.split_once('\u{1f}').expect("two paths");
        report_run(Path::new(tvm), Path::new(bundle));
        return;
    }
    let Some(tvm) = workloads::tvm_binary() else {
        println!("no release tvm: run `cargo build --release --bin tvm` first");
        return;
    };
    let dir = std::env::temp_dir().join(format!("tv-bench-step-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let (cases, short) = write_cases(&dir);
    for case in &cases {
        let result = result_of(&tvm, &case.path);
        println!("{} {}: {result}", case.label, case.steps);
    }
    // Interleaved rounds: each run once per round, in turn; the short run last.
    let mut rounds: Vec<Vec<Used>> = vec![Vec::new(); cases.len() + 1];
    for _ in 0..ROUNDS {
        for (i, case) in cases.iter().enumerate() {
            rounds[i].push(used(&tvm, &case.path));
        }
        rounds[cases.len()].push(used(&tvm, &short));
    }
    time_cases(&tvm, &cases);
    report(&cases, &rounds);
    let (low, peak) = min_median(rounds[cases.len()].iter().map(|u| u.peak_kib).collect());
    println!(
        "{CALLS}-call echo run: peak resident memory {peak} KiB = {:.1} MiB (median; min {low} KiB)",
        peak as f64 / 1024.0
    );
    let _ = std::fs::remove_dir_all(&dir);
}
