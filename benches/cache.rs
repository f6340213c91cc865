//! Target: a reply cache hit (the request's key, the entry read and checked, the reply
//! decoded to the text and usage the transport hands on) takes at most 50 µs for a 4 KB
//! OpenAI chat-completion reply, from a warm cache directory of a few hundred entries.
//! A miss and a put are measured too, for comparison; the figure is printed last.

use criterion::{BatchSize, Criterion};
use serde_json::{json, Value};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;
use tv_runtime::cache::{Lookup, ReplyCache};
use tv_test_support::workloads;

/// Benchmarks measure with the allocator the `tvc` and `tvm` binaries use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Other entries in the directory, so that the hit is one of many.
const NEIGHBOURS: usize = 500;

/// A chat-completions request as the OpenAI adapter sends it: a system prompt, about
/// 1.5 KB of instructions and a JSON schema.
fn request(variant: usize) -> Value {
    let instructions = format!(
        "Review change {variant} of the ingest worker. {}",
        "Say which retries are unbounded, which metrics are missing and what to test. ".repeat(18)
    );
    json!({
        "provider": "openai",
        "endpoint": "/v1/chat/completions",
        "body": {
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You are a careful reviewer. Answer in JSON."},
                {"role": "user", "content": instructions}
            ],
            "temperature": 0.2,
            "max_tokens": 1024,
            "response_format": {"type": "json_schema", "json_schema": {"name": "Review", "strict": true, "schema": {
                "type": "object", "additionalProperties": false, "required": ["summary", "findings", "approved"],
                "properties": {"summary": {"type": "string"}, "approved": {"type": "boolean"},
                               "findings": {"type": "array", "items": {"type": "string"}}}}}}
        }
    })
}

/// An OpenAI chat completion of about 4 KB whose content is a JSON review (so it is full
/// of escaped quotes, as structured replies are).
fn reply() -> Value {
    let findings: Vec<String> = (0..40)
        .map(|i| {
            format!(
                "Finding {i}: the handler at worker.rs:{} retries without a bound on the queue",
                100 + i * 7
            )
        })
        .collect();
    let content = json!({
        "summary": "The change bounds the retry queue and adds a metric for dropped items; the limit is configurable and defaults to 10,000 entries.",
        "findings": findings,
        "approved": false,
    });
    json!({
        "id": "chatcmpl-CXh2kq8bY3nTz1Lr9VfWm4Qe7sPa0",
        "object": "chat.completion",
        "created": 1_764_072_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content.to_string(), "refusal": null, "annotations": []},
            "logprobs": null,
            "finish_reason": "stop"
        }],
        "usage": {
            "prompt_tokens": 1184, "completion_tokens": 712, "total_tokens": 1896,
            "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
        },
        "service_tier": "default",
        "system_fingerprint": "fp_560af6e559"
    })
}

/// What the transport takes from a reply: its text and token counts.
fn decode(reply: &Value) -> (String, u64, u64, u64) {
    let usage = &reply["usage"];
    let count = |v: &Value| v.as_u64().unwrap_or(0);
    (
        reply["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        count(&usage["prompt_tokens"]),
        count(&usage["completion_tokens"]),
        count(&usage["prompt_tokens_details"]["cached_tokens"]),
    )
}

/// Removes the benchmark's cache directory however the benchmark ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn main() {
    let dir = Scratch(std::env::temp_dir().join(format!("tv-bench-cache-{}", std::process::id())));
    let asked = request(0);
    let answer = reply();
    let size = serde_json::to_string(&answer).expect("serialises").len();
    assert!((3900..4400).contains(&size), "about 4 KB: {size}");

    // A first run fills the directory.
    let first = ReplyCache::open(&dir.0).expect("the cache opens");
    first.put(&first.key(&asked), &answer).expect("stored");
    for i in 1..=NEIGHBOURS {
        first.put(&first.key(&request(i)), &answer).expect("stored");
    }
    // Each iteration is a second run's first question: a fresh cache object (made
    // outside the timing), so the request is at its occurrence 0 and hits.
    let hit = |cache: &mut ReplyCache| match cache.get(&cache.key(black_box(&asked))) {
        Lookup::Hit(reply) => decode(&reply),
        other => panic!("expected a hit, got {other:?}"),
    };
    assert_eq!(hit(&mut ReplyCache::open(&dir.0).unwrap()), decode(&answer));
    let fresh = || ReplyCache::open(&dir.0).expect("the cache opens");
    let absent = request(NEIGHBOURS + 1);

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("cache");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("a cache hit", |b| {
        b.iter_batched_ref(fresh, hit, BatchSize::SmallInput)
    });
    group.bench_function("a cache miss", |b| {
        b.iter_batched_ref(
            fresh,
            |cache| matches!(cache.get(&cache.key(&absent)), Lookup::Miss),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("a put of the 4 KB reply", |b| {
        b.iter_batched_ref(
            fresh,
            |cache| cache.put(&cache.key(&asked), &answer).expect("stored"),
            BatchSize::SmallInput,
        )
    });
    group.finish();
    c.final_summary();

    match workloads::median_ns("cache/a cache hit") {
        Some(t) => println!(
            "a cache hit of a {size}-byte reply = {} (target <= 50 us)",
            workloads::human(t)
        ),
        None => println!("cache hit: no median found (run without a filter)"),
    }
}
