//! Target 4: 64 independent LLM calls (the computed inputs of one task) through the
//! OpenAI adapter against a server on 127.0.0.1 that answers each after 200 ms, with at
//! most 16 calls in flight, take at most 1.15 × 0.8 s (four waves of 16).
//!
//! The task that collects the 64 inputs makes one more call; the server answers that
//! one (its prompt starts with `collect:`) at once, so that the time measured is the
//! fan-out's.

use criterion::{Criterion, SamplingMode};
use http::{Reply, Server};
use serde_json::json;
use std::fmt::Write as _;
use std::time::Duration;
use tv_runtime::host::{Choice, RunHost};
use tv_runtime::providers::{OpenAi, Settings};
use tv_runtime::script::ScriptRunner;
use tv_test_support::{http, workloads};
use tv_vm::limits::Limits;
use tv_vm::result::Status;

/// Benchmarks measure with the allocator the `tvc` and `tvm` binaries use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CALLS: usize = 64;
const DELAY: Duration = Duration::from_millis(200);
const CAP: usize = 16;

/// A task named `fan_out` whose 64 computed inputs are independent LLM tasks.
fn program() -> String {
    let mut inputs = String::new();
    let mut uses = String::new();
    for i in 0..CALLS {
        let _ = writeln!(
            inputs,
            "<input name=\"i{i}\"><task><instructions>item {i}</instructions></task></input>"
        );
        let _ = write!(uses, " {{{{i{i}}}}}");
    }
    format!(
        "<task name=\"fan_out\"><instructions>collect:{uses}</instructions><inputs>\n{inputs}</inputs></task>"
    )
}

/// Echoes the prompt in an OpenAI chat-completions reply, after 200 ms unless it is the
/// collecting call.
fn model(_: usize, req: &http::Request) -> Reply {
    let body = req.json();
    let prompt = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    let delay = if prompt.starts_with("collect:") {
        Duration::ZERO
    } else {
        DELAY
    };
    Reply::json(
        200,
        json!({"choices": [{"message": {"role": "assistant", "content": prompt}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
    )
    .after(delay)
}

fn main() {
    // The server on threads of its own; the calls on one thread, as `tvm run` makes them.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let server = server_rt.block_on(Server::start(model));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let bundle = workloads::bundle(&program());
    let function = bundle.entry("fan_out").expect("entry").function;
    let mut settings = Settings::new(server.url(), "bench-model");
    settings.concurrency = CAP;
    let host = RunHost::with_adapters(
        Choice::Remote(tv_stdlib::models::Provider::OpenAi),
        Some(OpenAi::new(settings).expect("adapter")),
        None,
        ScriptRunner::default(),
    );
    let run = || {
        rt.block_on(tv_runtime::Run::new(&bundle, function, vec![], Limits::default()).on(&host))
            .result
    };

    let result = run();
    assert_eq!(result.status, Status::Complete, "{result:#}");
    assert_eq!(server.hits(), CALLS + 1, "64 calls and the collecting one");
    println!(
        "fan-out: {} calls, at most {} in flight at the server",
        server.hits(),
        server.max_in_flight()
    );

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("fan_out");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10))
        .sampling_mode(SamplingMode::Flat);
    group.bench_function("64 calls of 200 ms capped at 16", |b| b.iter(run));
    group.finish();
    c.final_summary();

    let ideal = (CALLS / CAP) as f64 * DELAY.as_nanos() as f64;
    match workloads::median_ns("fan_out/64 calls of 200 ms capped at 16") {
        Some(t) => println!(
            "fan-out = {} = {:.3} x the ideal {} (target <= 1.15x); most in flight: {}",
            workloads::human(t),
            t / ideal,
            workloads::human(ideal),
            server.max_in_flight()
        ),
        None => println!("fan-out: no median found (run without a filter)"),
    }
}
