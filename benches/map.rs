//! Issue 20's targets for a map over a list known at run time.
//!
//! 1. A map of 1,000 bodies, each an LLM call that a server on 127.0.0.1 answers after
//!    200 ms, at concurrency 50 (through the OpenAI adapter, its cap 50 too), takes at
//!    most 1.10 × the ideal 4 s (20 waves of 50).
//! 2. The machine's work per item, with a host that answers at once, is at most 5 µs:
//!    (time(map of 10,000 items) − time(map of 1 item)) / 9,999, driven by the plain
//!    loop and by the async driver `tvm run` uses.
//!
//! The figures are printed last, from criterion's medians.

use criterion::{BenchmarkId, Criterion, SamplingMode};
use http::{Reply, Server};
use serde_json::{json, Value};
use std::sync::Mutex;
use std::time::Duration;
use tv_runtime::host::{Blocking, Choice, RunHost};
use tv_runtime::providers::{OpenAi, Settings};
use tv_runtime::script::ScriptRunner;
use tv_test_support::{http, workloads};
use tv_vm::bundle::Verified;
use tv_vm::interp::Vm;
use tv_vm::result::{Status, TaskResult};
use workloads::{limits, PromptEcho};

/// Benchmarks measure with the allocator the `tvc` and `tvm` binaries use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const BODIES: usize = 1_000;
const DELAY: Duration = Duration::from_millis(200);
const CONCURRENCY: usize = 50;
const LONG: usize = 10_000;

/// A template mapping one atomic body over its list, at most `concurrency` at once.
fn program(concurrency: usize) -> String {
    format!(
        r#"<template name="each" params="xs:string[]">
  <task type="map" over="xs" concurrency="{concurrency}">
    <task><instructions>Look at {{{{item}}}}.</instructions></task>
  </task>
</template>"#
    )
}

fn items(n: usize) -> Value {
    Value::Array((0..n).map(|i| Value::String(format!("item {i}"))).collect())
}

/// An OpenAI chat-completions reply echoing the prompt, after 200 ms.
fn model(_: usize, req: &http::Request) -> Reply {
    let body = req.json();
    let prompt = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    Reply::json(
        200,
        json!({"choices": [{"message": {"role": "assistant", "content": prompt}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
    )
    .after(DELAY)
}

fn run(bundle: &Verified, function: u32, n: usize) -> TaskResult {
    Vm::new(bundle, function, vec![items(n)], limits()).run_with(&mut PromptEcho)
}

fn run_driven(
    rt: &tokio::runtime::Runtime,
    bundle: &Verified,
    function: u32,
    n: usize,
) -> TaskResult {
    let host = Blocking(Mutex::new(PromptEcho));
    rt.block_on(tv_runtime::Run::new(bundle, function, vec![items(n)], limits()).on(&host))
        .result
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut c = Criterion::default().configure_from_args();

    // Target 2 first: it needs no server.
    let echo = workloads::bundle(&program(CONCURRENCY));
    let each = echo.entry("each").expect("entry").function;
    let done = run(&echo, each, LONG);
    assert_eq!(done.status, Status::Complete, "{done:#}");
    assert_eq!(
        done.parsed_content
            .as_ref()
            .and_then(Value::as_array)
            .map(Vec::len),
        Some(LONG)
    );
    let mut group = c.benchmark_group("map_overhead");
    group.sample_size(20);
    for n in [1, LONG] {
        group.bench_with_input(BenchmarkId::new("loop", n), &n, |b, &n| {
            b.iter(|| run(&echo, each, n))
        });
        group.bench_with_input(BenchmarkId::new("driver", n), &n, |b, &n| {
            b.iter(|| run_driven(&rt, &echo, each, n))
        });
    }
    group.finish();

    // Target 1: 1,000 calls of 200 ms, 50 at once, against a server on 127.0.0.1.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let server = server_rt.block_on(Server::start(model));
    let bundle = workloads::bundle(&program(CONCURRENCY));
    let function = bundle.entry("each").expect("entry").function;
    let mut settings = Settings::new(server.url(), "bench-model");
    settings.concurrency = CONCURRENCY;
    let host = RunHost::with_adapters(
        Choice::Remote(tv_stdlib::models::Provider::OpenAi),
        Some(OpenAi::new(settings).expect("adapter")),
        None,
        ScriptRunner::default(),
    );
    let remote = || {
        rt.block_on(
            tv_runtime::Run::new(&bundle, function, vec![items(BODIES)], limits()).on(&host),
        )
        .result
    };
    let result = remote();
    assert_eq!(result.status, Status::Complete, "{result:#}");
    assert_eq!(server.hits(), BODIES);
    println!(
        "map: {} calls, at most {} in flight at the server",
        server.hits(),
        server.max_in_flight()
    );
    let mut group = c.benchmark_group("map");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(45))
        .sampling_mode(SamplingMode::Flat);
    group.bench_function("1000 bodies of 200 ms at concurrency 50", |b| {
        b.iter(remote)
    });
    group.finish();
    c.final_summary();

    for driver in ["loop", "driver"] {
        let one = workloads::median_ns(&format!("map_overhead/{driver}/1"));
        let long = workloads::median_ns(&format!("map_overhead/{driver}/{LONG}"));
        if let (Some(one), Some(long)) = (one, long) {
            let per = (long - one) / (LONG - 1) as f64;
            println!(
                "map, per item ({driver}) = {} (target <= 5 us)",
                workloads::human(per)
            );
        }
    }
    let ideal = (BODIES / CONCURRENCY) as f64 * DELAY.as_nanos() as f64;
    if let Some(t) = workloads::median_ns("map/1000 bodies of 200 ms at concurrency 50") {
        println!(
            "map of 1,000 x 200 ms at 50 = {} = {:.3} x the ideal {} (target <= 1.10x); most in flight: {}",
            workloads::human(t),
            t / ideal,
            workloads::human(ideal),
            server.max_in_flight()
        );
    }
}
