//! Target: running a workflow of 100 LLM calls again from a warm reply cache takes at
//! most 50 ms in total. Each iteration is a whole re-run as `tvm run --cache DIR` does
//! it in-process: the cache opened, the OpenAI adapter and the host built, and the
//! workflow (a map of 99 calls, then one that sums them up) driven to its end, every
//! call answered from the cache. The server on 127.0.0.1 that filled the cache is
//! checked to receive nothing more. The figure is printed last.

use criterion::Criterion;
use http::{Reply, Server};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use tv_runtime::cache::ReplyCache;
use tv_runtime::host::{Choice, RunHost};
use tv_runtime::ledger::Ledger;
use tv_runtime::prices::Prices;
use tv_runtime::providers::{OpenAi, Settings};
use tv_runtime::script::ScriptRunner;
use tv_test_support::{http, workloads};
use tv_vm::bundle::Verified;
use tv_vm::result::{Status, TaskResult};

/// Benchmarks measure with the allocator the `tvc` and `tvm` binaries use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PROGRAM: &str = r#"<template name="survey" params="xs:string[]">
  <task type="sequential">
    <steps>
      <task type="map" over="xs" concurrency="16">
        <task><instructions>Look at {{item}} and say what stands out.</instructions></task>
      </task>
      <task><instructions>Sum up: {{json(output)}}</instructions></task>
    </steps>
  </task>
</template>"#;

/// An OpenAI chat completion of about 400 bytes naming its prompt's length.
fn model(_: usize, req: &http::Request) -> Reply {
    let n = req.body.len();
    Reply::json(
        200,
        json!({"model": "gpt-4o-mini",
               "choices": [{"message": {"role": "assistant", "content": format!("{} (a reply to {n} bytes)", "Nothing stands out. ".repeat(12))}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 120, "completion_tokens": 60}}),
    )
}

/// One whole run against `url` with the cache in `dir`.
fn run(rt: &tokio::runtime::Runtime, bundle: &Verified, url: &str, dir: &Path) -> TaskResult {
    let ledger = Ledger {
        prices: Prices::builtin(),
        budget: None,
        cache: Some(ReplyCache::open(dir).expect("cache")),
        shared: None,
    };
    let adapter = OpenAi::new(Settings::new(url, "gpt-4o-mini"))
        .expect("adapter")
        .with_ledger(Some(Arc::new(ledger)));
    let host = RunHost::with_adapters(
        Choice::Remote(tv_stdlib::models::Provider::OpenAi),
        Some(adapter),
        None,
        ScriptRunner::default(),
    );
    let function = bundle.entry("survey").expect("entry").function;
    let items: Vec<Value> = (0..99).map(|i| json!(format!("file {i}.rs"))).collect();
    rt.block_on(
        tv_runtime::Run::new(
            bundle,
            function,
            vec![Value::Array(items)],
            workloads::limits(),
        )
        .on(&host),
    )
    .result
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let server = server_rt.block_on(Server::start(model));
    let dir = std::env::temp_dir().join(format!("tv-bench-rerun-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let bundle = workloads::bundle(PROGRAM);
    let url = server.url();
    let first = run(&rt, &bundle, &url, &dir);
    assert_eq!(first.status, Status::Complete, "{first:#}");
    assert_eq!(server.hits(), 100);
    let again = run(&rt, &bundle, &url, &dir);
    assert_eq!(
        again.content, first.content,
        "a re-run gives the same result"
    );
    assert_eq!(server.hits(), 100, "a re-run sends nothing");

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("rerun");
    group.bench_function("100 calls from a warm cache", |b| {
        b.iter(|| run(&rt, &bundle, &url, &dir))
    });
    group.finish();
    c.final_summary();
    assert_eq!(server.hits(), 100, "no iteration sent anything");
    if let Some(t) = workloads::median_ns("rerun/100 calls from a warm cache") {
        println!(
            "re-run of 100 calls from a warm cache = {} (target <= 50 ms)",
            workloads::human(t)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
