//! Target 9: `tvc compile` of a 40 MB library peaks at less than 12 times the size of
//! its XML in resident memory. The release `tvc` (`cargo build --release --bin tvc`)
//! compiles generated libraries written to a temporary folder: the benchmark library's
//! templates (`function_library`, about 700 bytes each) at 10,000 and at 40 MB, and the
//! densest library, one-line templates of about 100 bytes (`dense_library`), at 40 MB.
//! Each compile's peak resident memory is read from `wait4` when it ends; each library
//! is compiled three times and the median printed, with its time.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use tv_test_support::workloads;

/// Benchmarks measure with the allocator the `tvc` and `tvm` binaries use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Bytes of XML in the large libraries.
const LARGE: usize = 40_000_000;
/// Peak resident memory allowed, as a multiple of the XML's size.
const TARGET: f64 = 12.0;

/// `tvc compile FILE -o OUT`: its peak resident memory in KiB, and its time.
// `wait4` reaps the child, with its resource usage, which `Child::wait` does not give.
#[allow(clippy::zombie_processes)]
fn compile(tvc: &Path, file: &Path, out: &Path) -> (u64, Duration) {
    let start = Instant::now();
    let child = Command::new(tvc)
        .arg("compile")
        .arg(file)
        .arg("-o")
        .arg(out)
        .spawn()
        .expect("tvc starts");
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is valid, and `wait4` fills it for our own child,
    // which `Child` never waits for itself.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let took = start.elapsed();
    assert!(
        waited == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "tvc compile {} failed",
        file.display()
    );
    (usage.ru_maxrss as u64, took)
}

fn main() {
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
