//! Target 5: start-up of `tvm run` on a one-step bundle with the echo provider (the
//! release binary, spawned; build it first with `cargo build --release --bin tvm`), and
//! the resident memory of a process that has loaded the 10,000-template bundle (read
//! from `/proc/self/status`; a figure reported, not a timing). Also the time
//! `Bundle::from_bytes` takes to decode and verify that bundle: most of what `tvm`
//! does before a large library's first instruction.

use criterion::{Criterion, SamplingMode};
use std::hint::black_box;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tv_test_support::workloads;
use tv_vm::bundle::Bundle;

/// Benchmarks measure with the allocator the `tvc` and `tvm` binaries use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Set in the child that loads a bundle and reports its memory: the bundle's path, or
/// empty for the baseline that loads nothing.
const CHILD: &str = "TV_BENCH_MEMORY_CHILD";

/// In the child: loads the bundle at `path` (if any) and prints `VmRSS VmHWM` in KiB.
fn report_memory(path: &str) {
    let bundle = (!path.is_empty()).then(|| {
        let bytes = std::fs::read(path).expect("bundle file");
        Bundle::from_bytes(&bytes).expect("the bundle loads")
    });
    black_box(&bundle);
    println!(
        "{} {}",
        workloads::status_kib("VmRSS").unwrap_or(0),
        workloads::status_kib("VmHWM").unwrap_or(0)
    );
}

/// Runs this benchmark again as a child that loads `bundle`; its (VmRSS, VmHWM) in KiB.
fn memory_of(bundle: Option<&Path>) -> (u64, u64) {
    let out = Command::new(std::env::current_exe().expect("own path"))
        .env(
            CHILD,
            bundle.map(|p| p.display().to_string()).unwrap_or_default(),
        )
        .output()
        .expect("the memory child runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text.split_whitespace().map(|n| n.parse().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

fn main() {
    if let Ok(path) = std::env::var(CHILD) {
        report_memory(&path);
        return;
    }
    let dir = std::env::temp_dir().join(format!("tv-bench-startup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary folder");

    // Resident memory after loading the 10,000-template bundle.
    let library = workloads::bundle(&workloads::function_library(workloads::LIBRARY_TEMPLATES));
    let library_path = dir.join("library.bin");
    let library_bytes = library.to_bytes();
    std::fs::write(&library_path, &library_bytes).expect("write the library bundle");
    drop(library);
    let size = std::fs::metadata(&library_path)
        .map(|m| m.len())
        .unwrap_or(0);
    let (base_rss, base_hwm) = memory_of(None);
    let (rss, hwm) = memory_of(Some(&library_path));
    println!(
        "memory: baseline process VmRSS {base_rss} KiB (VmHWM {base_hwm} KiB); after loading the \
         {}-template bundle ({:.2} MB) VmRSS {rss} KiB (VmHWM {hwm} KiB), {:+.1} MiB resident",
        workloads::LIBRARY_TEMPLATES,
        size as f64 / 1e6,
        (rss as f64 - base_rss as f64) / 1024.0
    );

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("startup");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .sampling_mode(SamplingMode::Flat);
    // What a loaded bundle holds is freed outside the clock, as for the compile.
    group.bench_function("read the library bundle", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let bundle = black_box(Bundle::from_bytes(black_box(&library_bytes)));
                total += start.elapsed();
                drop(bundle.expect("the bundle loads"));
            }
            total
        })
    });
    if let Some(t) = workloads::median_ns("startup/read the library bundle") {
        println!(
            "reading: median {} to decode and verify the {:.2} MB bundle",
            workloads::human(t),
            library_bytes.len() as f64 / 1e6
        );
    }

    // Start-up of `tvm run` on a one-step bundle.
    let Some(tvm) = workloads::tvm_binary() else {
        println!(
            "start-up: skipped, no release tvm binary (build it with `cargo build --release --bin tvm`)"
        );
        group.finish();
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let one = workloads::bundle("<task name=\"one\"><instructions>hello</instructions></task>");
    let one_path = dir.join("one.bin");
    std::fs::write(&one_path, one.to_bytes()).expect("write the one-step bundle");
    let run = || {
        let status = Command::new(&tvm)
            .arg("run")
            .arg(&one_path)
            .args(["--provider", "echo"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("tvm runs");
        assert!(status.success(), "tvm run failed: {status}");
    };
    run();
    group.bench_function("tvm run of a one-step bundle with echo", |b| b.iter(run));
    group.finish();
    c.final_summary();
    match workloads::median_ns("startup/tvm run of a one-step bundle with echo") {
        Some(t) => println!(
            "start-up: median {} for `tvm run` ({})",
            workloads::human(t),
            tvm.display()
        ),
        None => println!("start-up: no median found (run without a filter)"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
