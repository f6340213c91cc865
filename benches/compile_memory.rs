//! Target 9: `tvc compile` of a 40 MB library peaks at less than 12 times the size of
//! its XML in resident memory. The release `tvc` (`cargo build --release --bin tvc`)
//! compiles generated libraries written to a temporary folder: the benchmark library's
//! templates (`function_library`, about 700 bytes each) at 10,000 and at 40 MB, and the
//! densest library, one-line templates of about 100 bytes (`dense_library`), at 40 MB.
//! Each compile runs in a child of the benchmark, which reads its peak resident memory
//! from `getrusage` when it ends; each library is compiled three times and the median
//! printed, with its time.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use tv_test_support::child::numbers_from_child;
use tv_test_support::workloads;

/// Benchmarks measure with the allocator the `tvc` and `tvm` binaries use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Bytes of XML in the large libraries.
const LARGE: usize = 40_000_000;
/// Peak resident memory allowed, as a multiple of the XML's size.
const TARGET: f64 = 12.0;

/// Set in the child that runs one `tvc compile` and reports its peak: the binary's, the
/// library's and the bundle's paths. A child of its own, as this process waits for
/// nothing else, so `getrusage(RUSAGE_CHILDREN)` reads that one compile, and it holds
/// none of the generated libraries (a process started from this one would take its
/// peak resident memory as its own first figure).
const CHILD: &str = "TV_BENCH_COMPILE_MEMORY_CHILD";

/// In the child: `tvc compile FILE -o OUT`, then its peak resident memory in KiB and its
/// time in nanoseconds. Panics unless it succeeded.
fn report_compile(tvc: &Path, file: &Path, out: &Path) {
    use nix::sys::resource::{getrusage, UsageWho};
    let start = Instant::now();
    let status = Command::new(tvc)
        .arg("compile")
        .arg(file)
        .arg("-o")
        .arg(out)
        .status()
        .expect("tvc starts");
    let took = start.elapsed();
    assert!(
        status.success(),
        "tvc compile {} failed: {status}",
        file.display()
    );
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    println!("{} {}", usage.max_rss(), took.as_nanos());
}

/// `tvc compile FILE -o OUT`, in a child of this benchmark: its peak resident memory in
/// KiB, and its time.
fn compile(tvc: &Path, file: &Path, out: &Path) -> (u64, Duration) {
    let spec = [tvc, file, out]
        .map(|p| p.display().to_string())
        .join("\u{1f}");
    let n = numbers_from_child(CHILD, &spec);
    (n[0], Duration::from_nanos(n[1]))
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        let paths: Vec<&Path> = spec.split('\u{1f}').map(Path::new).collect();
        report_compile(paths[0], paths[1], paths[2]);
        return;
    }
    let Some(tvc) = workloads::tvc_binary() else {
        println!("no release tvc: run `cargo build --release --bin tvc` first");
        return;
    };
    let dir = std::env::temp_dir().join(format!("tv-compile-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    // The first 100 templates call nothing, and are shorter than the rest.
    let per_template = workloads::function_library(2_000).len() / 2_000;
    let libraries = [
        (
            "benchmark library, 10,000 templates",
            workloads::function_library(workloads::LIBRARY_TEMPLATES),
        ),
        (
            "benchmark library's templates, 40 MB",
            workloads::function_library(LARGE / per_template),
        ),
        ("one-line templates, 40 MB", workloads::dense_library(LARGE)),
    ];
    for (name, xml) in libraries {
        let file = dir.join("library.xml");
        std::fs::write(&file, &xml).expect("write the library");
        let out = dir.join("library.bin");
        let mut runs: Vec<(u64, Duration)> = (0..3).map(|_| compile(&tvc, &file, &out)).collect();
        runs.sort();
        let (peak, took) = runs[1];
        let bundle = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
        let ratio = (peak * 1024) as f64 / xml.len() as f64;
        println!(
            "{name}: {:.1} MB of XML, bundle {:.1} MB; peak {:.0} MB = {ratio:.1}x the XML{}; {:.2} s",
            xml.len() as f64 / 1e6,
            bundle as f64 / 1e6,
            (peak * 1024) as f64 / 1e6,
            if xml.len() >= LARGE {
                format!(" (target < {TARGET}x)")
            } else {
                String::new()
            },
            took.as_secs_f64()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
