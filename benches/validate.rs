//! Issue target: reading a 2 KB reply and checking it against a 20-field record type
//! takes at most 20 µs, parsing included. Measured three ways: the bare read and check
//! (`parse_json_text` then `mismatch`), the same reply wrapped in prose and a fence (the
//! lenient path), and the machine's whole step from a reply to a task result.

use criterion::Criterion;
use std::hint::black_box;
use std::time::Duration;
use tv_stdlib::types::Type;
use tv_stdlib::values::parse_json_text;
use tv_vm::bundle::{Output, ValueType};
use tv_vm::host::LlmReply;
use tv_vm::llm_result;

const RECORD: &str = r#"{
    id: string, title: string, summary: string, approved: boolean, score: number,
    severity: "low"|"medium"|"high"|"critical", findings: string[], files: string[],
    owners: string[], labels?: string[], risk: number, confidence: number,
    category: "bug"|"feature"|"refactor"|"docs", breaking: boolean, tests_added: boolean,
    reviewer: {name: string, team: string}, links: string[], notes?: string,
    effort: number, follow_ups: {title: string, done: boolean}[]
}"#;

/// A reply of about 2 KB that is of the record type.
fn reply() -> String {
    let finding =
        |i: usize| format!("Finding {i}: the handler retries without a bound on the queue");
    let v = serde_json::json!({
        "id": "PR-4821", "title": "Bound the retry queue of the ingest worker",
        "summary": "The change bounds the retry queue and adds a metric for dropped items; the new limit is configurable and defaults to 10,000 entries.",
        "approved": false, "score": 6.5, "severity": "high",
        "findings": (0..15).map(finding).collect::<Vec<_>>(),
        "files": ["src/ingest/worker.rs", "src/ingest/queue.rs", "src/metrics.rs", "tests/ingest.rs"],
        "owners": ["ingest-team", "platform"], "labels": ["reliability", "needs-tests"],
        "risk": 0.4, "confidence": 0.85, "category": "bug", "breaking": false,
        "tests_added": true, "reviewer": {"name": "R. Osei", "team": "platform"},
        "links": ["https://example.com/issues/4800", "https://example.com/runbooks/ingest"],
        "notes": null, "effort": 3,
        "follow_ups": [{"title": "Alert on dropped items", "done": false}, {"title": "Document the limit", "done": true}],
    });
    serde_json::to_string_pretty(&v).expect("serialises")
}

fn main() {
    let ty = Type::parse(RECORD).expect("the record type parses");
    let text = reply();
    assert!(
        (1900..2400).contains(&text.len()),
        "about 2 KB: {}",
        text.len()
    );
    let fenced = format!("Here is the review you asked for.\n\n```json\n{text}\n```\n\nLet me know if anything is unclear.");
    let check = |t: &str| {
        let v = parse_json_text(t).expect("reads");
        ty.mismatch(&v)
    };
    assert_eq!(check(&text), None);
    assert_eq!(check(&fenced), None);
    let output = Output::Json(Some(ValueType::from(&ty)));
    let step = |t: &str| {
        llm_result(
            LlmReply {
                content: t.to_string(),
                ..LlmReply::default()
            },
            &output,
        )
    };
    assert!(!step(&text).is_failed());

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("validate");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function(
        "2 KB reply read and checked against a 20-field record",
        |b| b.iter(|| check(black_box(&text))),
    );
    group.bench_function("the same reply in prose and a fence", |b| {
        b.iter(|| check(black_box(&fenced)))
    });
    group.bench_function("the machine's step from reply to task result", |b| {
        b.iter(|| step(black_box(&text)))
    });
    group.finish();
    c.final_summary();
}
