//! Target 1: compiling a generated library of 10,000 function templates (about 7 MB of
//! XML) to bundle bytes takes at most 5 times a bare quick-xml event scan of the same
//! bytes. Both are measured in the same run; the ratio of the medians is printed last.
//! The compile's clock stops before what it built is freed, as `tvc` exits without
//! freeing it. Encoding the library's bundle (`driver::bundle_bytes`, the last stage of
//! the compile) is also measured on its own, and so is the compile as `tvc compile` runs
//! it (`driver::compile_to_bytes`: the same bytes, a window of templates at a time).

use criterion::{Criterion, SamplingMode, Throughput};
use quick_xml::events::Event;
use quick_xml::Reader;
use std::hint::black_box;
use std::time::{Duration, Instant};
use tv_compiler::timings::Timings;
use tv_test_support::workloads;

/// Benchmarks measure with the allocator the `tvc` and `tvm` binaries use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Every event of `xml`, read and dropped; the number of events.
fn scan(xml: &str) -> usize {
    let mut reader = Reader::from_str(xml);
    let mut events = 0;
    loop {
        match reader.read_event() {
            Ok(Event::Eof) => return events,
            Ok(e) => {
                black_box(e);
                events += 1;
            }
            Err(e) => panic!("the generated library is not XML: {e}"),
        }
    }
}

/// Everything a compile leaves behind: the checked program, its IR, the bundle and its
/// bytes.
type Compiled = (
    tv_compiler::driver::Compilation,
    Option<(tv_compiler::ir::Program, tv_vm::bundle::Bundle)>,
    Vec<u8>,
);

/// Checks, compiles and serialises the library, keeping what it built.
fn compile_to_bytes(xml: &str) -> Compiled {
    let c = tv_compiler::driver::check_texts([("bench.xml", xml)]);
    assert!(!c.diags.has_errors(), "the library checks");
    let out = tv_compiler::driver::compile(&c);
    let bytes = out
        .as_ref()
        .map(|(_, bundle)| tv_compiler::driver::bundle_bytes(bundle))
        .expect("the library compiles");
    (c, out, bytes)
}

/// Checks the library and makes its bundle's bytes as `tvc compile` does, a window of
/// templates at a time; what is left of the compilation, and the bytes.
fn compile_in_windows(xml: &str) -> (tv_compiler::driver::Compilation, Vec<u8>) {
    let mut c = tv_compiler::driver::check_texts([("bench.xml", xml)]);
    assert!(!c.diags.has_errors(), "the library checks");
    let bytes = tv_compiler::driver::compile_to_bytes(&mut c, &mut Timings::default())
        .expect("the library compiles");
    (c, bytes)
}

/// The time of `iters` compiles, each one's memory freed after its clock stops: `tvc`
/// exits without freeing what it built, so freeing is not part of compiling.
fn time_compiles(xml: &str, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        let compiled = black_box(compile_to_bytes(black_box(xml)));
        total += start.elapsed();
        drop(compiled);
    }
    total
}

/// The median time of each compiler stage over a few runs, to show where the time goes
/// (the same stages `tvc compile --timings` reports).
fn stages(xml: &str) {
    let runs: Vec<Timings> = (0..5)
        .map(|_| {
            let c = tv_compiler::driver::check_texts([("bench.xml", xml)]);
            let mut t = c.timings.clone();
            let (_, bundle) = tv_compiler::driver::compile_timed(&c, &mut t).expect("compiles");
            t.time("serialize the bundle", || {
                black_box(tv_compiler::driver::bundle_bytes(&bundle))
            });
            t
        })
        .collect();
    println!("stages, median of {} runs:", runs.len());
    for (i, (stage, _)) in runs[0].stages().iter().enumerate() {
        let mut took: Vec<Duration> = runs.iter().map(|t| t.stages()[i].1).collect();
        took.sort();
        println!(
            "  {stage:<32} {:>8.2} ms",
            took[took.len() / 2].as_secs_f64() * 1e3
        );
    }
}

fn main() {
    // `TVC_THREADS=1 cargo bench --bench compile` measures one thread, as `tvc` would.
    tv_compiler::driver::configure(tv_compiler::driver::Options {
        threads: std::env::var("TVC_THREADS")
            .ok()
            .and_then(|v| v.parse().ok()),
    });
    let xml = workloads::function_library(workloads::LIBRARY_TEMPLATES);
    let bundle_size = compile_to_bytes(&xml).2.len();
    println!(
        "library: {} templates, {:.2} MB of XML, {} events, bundle {:.2} MB",
        workloads::LIBRARY_TEMPLATES,
        xml.len() as f64 / 1e6,
        scan(&xml),
        bundle_size as f64 / 1e6
    );
    stages(&xml);

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("compile");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(20))
        .sampling_mode(SamplingMode::Flat)
        .throughput(Throughput::Bytes(xml.len() as u64));
    group.bench_function("quick-xml event scan", |b| b.iter(|| scan(black_box(&xml))));
    group.bench_function("library to bundle bytes", |b| {
        b.iter_custom(|iters| time_compiles(&xml, iters))
    });
    // What `tvc compile` runs: the same bytes, a window of templates at a time.
    group.bench_function("library to bundle bytes in windows", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let compiled = black_box(compile_in_windows(black_box(&xml)));
                total += start.elapsed();
                drop(compiled);
            }
            total
        })
    });
    // The same templates in a library small enough for the caches: what a template
    // costs when memory is not the limit.
    let (_, compiled, _) = compile_to_bytes(&xml);
    let (_, library) = compiled.expect("the library compiles");
    group.throughput(Throughput::Bytes(bundle_size as u64));
    group.bench_function("library bundle to bytes", |b| {
        b.iter(|| tv_compiler::driver::bundle_bytes(black_box(&library)))
    });
    let small = workloads::function_library(SMALL_LIBRARY);
    group.throughput(Throughput::Bytes(small.len() as u64));
    group.bench_function("small library to bundle bytes", |b| {
        b.iter_custom(|iters| time_compiles(&small, iters))
    });
    group.finish();
    c.final_summary();

    match (
        workloads::median_ns("compile/quick-xml event scan"),
        workloads::median_ns("compile/library to bundle bytes"),
    ) {
        (Some(scan), Some(compile)) => println!(
            "compile / scan = {} / {} = {:.1}x (target <= 5x)",
            workloads::human(compile),
            workloads::human(scan),
            compile / scan
        ),
        _ => println!("compile / scan: no medians found (run without a filter)"),
    }
    if let (Some(whole), Some(windows)) = (
        workloads::median_ns("compile/library to bundle bytes"),
        workloads::median_ns("compile/library to bundle bytes in windows"),
    ) {
        println!(
            "in windows (tvc compile) / whole = {} / {} = {:.2}",
            workloads::human(windows),
            workloads::human(whole),
            windows / whole
        );
    }
    if let Some(t) = workloads::median_ns("compile/library bundle to bytes") {
        println!(
            "encoding: median {} for the {:.2} MB bundle",
            workloads::human(t),
            bundle_size as f64 / 1e6
        );
    }
    if let (Some(scan), Some(large), Some(small)) = (
        workloads::median_ns("compile/quick-xml event scan"),
        workloads::median_ns("compile/library to bundle bytes"),
        workloads::median_ns("compile/small library to bundle bytes"),
    ) {
        let per = |ns: f64, n: usize| workloads::human(ns / n as f64);
        println!(
            "per template: scan {}, compile {} in a library of {}, {} in one of {}",
            per(scan, workloads::LIBRARY_TEMPLATES),
            per(large, workloads::LIBRARY_TEMPLATES),
            workloads::LIBRARY_TEMPLATES,
            per(small, SMALL_LIBRARY),
            SMALL_LIBRARY
        );
    }
}

/// Templates in the library whose compile fits in the caches.
const SMALL_LIBRARY: usize = 200;
