//! Target 2: the per-step overhead of the machine, with an echo host, is at most 2 µs:
//! (time(10,000 steps) − time(1 step)) / 9,999 over sequences of atomic steps. Measured
//! twice: the machine driven by a plain loop, and through the async driver `tvm run`
//! uses (tokio, the host behind `AsyncHost`). The figures are printed last, from
//! criterion's medians.
//!
//! The host answers each call with its prompt, as the echo host did when the target was
//! set. Today's echo host answers with the system text and the context too, so in a
//! sequence, where each step inherits the context of the steps before, its replies grow
//! with the run: that would measure the echo's text, not the machine.

use criterion::{BenchmarkId, Criterion, SamplingMode};
use std::hint::black_box;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tv_runtime::host::Blocking;
use tv_test_support::workloads;
use tv_vm::bundle::Verified;
use tv_vm::interp::Vm;
use tv_vm::result::{Status, TaskResult};
use workloads::{limits, PromptEcho};

/// Benchmarks measure with the allocator the `tvc` and `tvm` binaries use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const LONG: usize = 10_000;

/// Runs the `steps` sequence to its end with the prompt-echoing host.
fn run(bundle: &Verified, function: u32) -> TaskResult {
    Vm::new(bundle, function, vec![], limits()).run_with(&mut PromptEcho)
}

/// The same run through the async driver, on a single-threaded tokio runtime.
fn run_driven(rt: &tokio::runtime::Runtime, bundle: &Verified, function: u32) -> TaskResult {
    let host = Blocking(Mutex::new(PromptEcho));
    rt.block_on(tv_runtime::Run::new(bundle, function, vec![], limits()).on(&host))
        .result
}

/// Lengths measured with criterion; the 10,000-step run is timed by criterion too when
/// one run is short enough, else by hand (see `main`).
const LENGTHS: [usize; 4] = [1, 100, 1_000, LONG];

/// A run longer than this is too slow for criterion's ten samples plus warm-up within
/// the few minutes a `cargo bench` may take: its first run is the figure instead (one
/// timing, not a median).
const CRITERION_MAX_RUN: Duration = Duration::from_secs(2);

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("dispatch");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .sampling_mode(SamplingMode::Flat);
    let mut by_hand: Option<f64> = None;
    for steps in LENGTHS {
        let started = Instant::now();
        let bundle = workloads::bundle(&workloads::sequence(steps));
        let compiled = started.elapsed();
        let function = bundle.entry("steps").expect("entry").function;
        let started = Instant::now();
        let result = run(&bundle, function);
        let first = started.elapsed();
        assert_eq!(result.status, Status::Complete, "{result:#}");
        println!("{steps} steps: compiled in {compiled:.2?}, first run {first:.2?}");
        if first > CRITERION_MAX_RUN {
            println!(
                "{steps} steps: one run exceeds {CRITERION_MAX_RUN:?}; criterion skipped, the first run is the figure"
            );
            by_hand = Some(first.as_nanos() as f64);
            continue;
        }
        group.bench_with_input(BenchmarkId::new("echo sequence", steps), &steps, |b, _| {
            b.iter(|| run(black_box(&bundle), function))
        });
        if steps == 1 || steps == LONG {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            assert_eq!(run_driven(&rt, &bundle, function).status, Status::Complete);
            group.bench_with_input(BenchmarkId::new("driver", steps), &steps, |b, _| {
                b.iter(|| run_driven(&rt, black_box(&bundle), function))
            });
        }
    }
    group.finish();
    c.final_summary();

    for steps in LENGTHS {
        if let Some(t) = workloads::median_ns(&format!("dispatch/echo sequence/{steps}")) {
            println!(
                "{steps} steps: median {} ({} per step)",
                workloads::human(t),
                workloads::human(t / steps as f64)
            );
        }
    }
    let long = by_hand.or_else(|| workloads::median_ns(&format!("dispatch/echo sequence/{LONG}")));
    match (workloads::median_ns("dispatch/echo sequence/1"), long) {
        (Some(one), Some(long)) => println!(
            "per-step overhead = ({} - {}) / {} = {} (target <= 2 µs)",
            workloads::human(long),
            workloads::human(one),
            LONG - 1,
            workloads::human((long - one) / (LONG - 1) as f64)
        ),
        _ => println!("per-step overhead: no medians found (run without a filter)"),
    }
    if let (Some(one), Some(long)) = (
        workloads::median_ns("dispatch/driver/1"),
        workloads::median_ns(&format!("dispatch/driver/{LONG}")),
    ) {
        println!(
            "through the async driver: ({} - {}) / {} = {} per step (target <= 2 µs)",
            workloads::human(long),
            workloads::human(one),
            LONG - 1,
            workloads::human((long - one) / (LONG - 1) as f64)
        );
    }
}
