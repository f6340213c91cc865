//! `tvm batch` (DESIGN §16): rows from a JSON-lines file, each a run of the entry point,
//! against the echo host and a server on 127.0.0.1; results read back from the file.

use crate::support::files::{self, run_tvm, runtime, scratch};
use crate::support::http::{self, Reply, Server};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

pub(crate) const PROGRAM: &str = r#"<library>
  <task name="summarize" type="sequential">
    <inputs><input name="notes" type="string[]">Meeting notes</input></inputs>
    <steps>
      <task type="map" over="notes" as="note"><task><instructions>Summarize: {{note}}</instructions></task></task>
      <task><instructions>Merge these summaries: {{json(output)}}</instructions></task>
    </steps>
  </task>
</library>"#;

/// `tvm batch` of [`PROGRAM`] over `rows` (one per line) with `flags`; its exit code,
/// the result lines in the order they were written, and stderr.
fn batch(
    dir: &Path,
    rows: &[&str],
    flags: &[&str],
    env: &[(&str, &str)],
) -> (i32, Vec<Value>, String) {
    let bundle = files::compiled(dir, PROGRAM);
    let (inputs, out) = (dir.join("rows.jsonl"), dir.join("results.jsonl"));
    std::fs::write(&inputs, rows.join("\n")).expect("write the rows");
    let mut args = vec![
        "batch",
        bundle.to_str().expect("path"),
        "--inputs",
        inputs.to_str().expect("path"),
        "--out",
        out.to_str().expect("path"),
    ];
    args.extend(flags);
    let (code, _, stderr) = run_tvm(&args, env);
    let lines = std::fs::read_to_string(&out)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    (code, lines, stderr)
}

fn by_index(lines: &[Value], i: u64) -> &Value {
    lines
        .iter()
        .find(|l| l["index"] == json!(i))
        .unwrap_or_else(|| panic!("no row {i} in {lines:?}"))
}

#[test]
fn each_row_is_a_line_with_its_id_and_a_bad_line_is_a_failed_row_naming_it() {
    let dir = scratch("batch", "rows");
    let rows = [
        r#"{"notes": ["a", "b"]}"#,
        r#"{"id": "second", "args": {"notes": ["c"]}}"#,
        "",
        "not json",
        r#"{"notes": 3}"#,
        "[1]",
    ];
    let (code, lines, stderr) = batch(&dir, &rows, &["--provider", "echo"], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert_eq!(by_index(&lines, 0)["status"], "COMPLETE");
    assert_eq!(by_index(&lines, 0)["id"], Value::Null);
    let second = by_index(&lines, 1);
    assert_eq!(
        (&second["id"], &second["status"]),
        (&json!("second"), &json!("COMPLETE"))
    );
    assert_eq!(second["result"]["notes"]["usage"]["calls"], json!(2));
    for (i, line, what) in [
        (2, 4, "not JSON"),
        (3, 5, "`notes` expects"),
        (4, 6, "not an array"),
    ] {
        let row = by_index(&lines, i);
        let error = &row["result"]["notes"]["error"];
        assert_eq!(row["status"], "FAILED");
        assert_eq!(error["reason"], "input_validation_failure");
        let message = error["message"].as_str().unwrap_or("");
        assert!(message.starts_with(&format!("line {line}: ")), "{message}");
        assert!(message.contains(what), "{message}");
    }
    assert!(
        stderr.contains("tvm: batch: 5 rows: 2 completed, 3 failed; 5 LLM calls"),
        "{stderr}"
    );
}

#[test]
fn rows_run_side_by_side_within_one_provider_cap() {
    let rt = runtime();
    let server = rt.block_on(Server::start(|_, _| {
        Reply::completion("fine", 10, 2).after(Duration::from_millis(100))
    }));
    let dir = scratch("batch", "cap");
    let rows: Vec<String> = (0..12)
        .map(|i| format!(r#"{{"notes": ["n{i}", "m{i}"]}}"#))
        .collect();
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let url = server.url();
    let (code, lines, stderr) = batch(
        &dir,
        &rows,
        &["--provider", "openai", "--concurrency", "3"],
        &[("OPENAI_BASE_URL", url.as_str())],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(lines.len(), 12);
    assert!(lines.iter().all(|l| l["status"] == "COMPLETE"));
    assert_eq!(server.hits(), 36);
    assert!(
        server.max_in_flight() <= 3,
        "{} in flight",
        server.max_in_flight()
    );
    assert!(server.max_in_flight() >= 2, "rows did not overlap");
    assert!(
        stderr.contains("12 rows: 12 completed, 0 failed; 36 LLM calls"),
        "{stderr}"
    );
}

#[test]
fn all_rows_share_one_budget() {
    let rt = runtime();
    let server = rt.block_on(Server::start(|_, _| Reply::completion("fine", 50, 100)));
    let dir = scratch("batch", "budget");
    let rows: Vec<String> = (0..10)
        .map(|i| format!(r#"{{"notes": ["n{i}"]}}"#))
        .collect();
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let url = server.url();
    // Each call's worst case (100 output tokens at 0.60 USD per million, plus its input)
    // is about 0.0001 USD: 0.001 USD holds a few rows of two calls, not ten.
    let (code, lines, stderr) = batch(
        &dir,
        &rows,
        &[
            "--provider",
            "openai",
            "--max-cost",
            "0.001",
            "--max-output-tokens",
            "100",
            "--concurrency",
            "2",
        ],
        &[("OPENAI_BASE_URL", url.as_str())],
    );
    assert_eq!(code, 1, "{stderr}");
    let spent: f64 = lines
        .iter()
        .filter_map(|l| l["result"]["notes"]["usage"]["costUsd"].as_f64())
        .sum();
    assert!(spent <= 0.001, "{spent}");
    let refused = lines
        .iter()
        .filter(|l| l.to_string().contains(r#""resource":"cost""#))
        .count();
    assert!(refused > 0 && refused < 10, "{refused} rows refused");
}

#[test]
fn a_rate_limited_batch_ends_with_every_row_complete_though_no_retries_are_allowed() {
    let rt = runtime();
    let window = Duration::from_millis(200);
    let ok = Reply::completion("fine", 10, 2);
    let server = rt.block_on(Server::start(http::windowed(5, window, ok)));
    let dir = scratch("batch", "rate");
    let rows: Vec<String> = (0..15)
        .map(|i| format!(r#"{{"notes": ["n{i}"]}}"#))
        .collect();
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let url = server.url();
    let flags = [
        "--provider",
        "openai",
        "--concurrency",
        "16",
        "--retries",
        "0",
    ];
    let (code, lines, stderr) = batch(&dir, &rows, &flags, &[("OPENAI_BASE_URL", url.as_str())]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(lines.len(), 15);
    assert!(lines.iter().all(|l| l["status"] == "COMPLETE"), "{lines:?}");
    assert!(server.hits() > 30, "the provider never said 429");
}

#[test]
fn the_shipped_tickets_triage_from_their_cassette() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let dir = scratch("batch", "example");
    let source = std::fs::read_to_string(examples.join("triage.xml")).expect("the example");
    let bundle = files::compiled(&dir, &source);
    let out = dir.join("results.jsonl");
    let (inputs, cassette) = (
        examples.join("tickets.jsonl"),
        examples.join("triage.cassette.jsonl"),
    );
    let (code, _, stderr) = run_tvm(
        &[
            "batch",
            bundle.to_str().expect("path"),
            "--inputs",
            inputs.to_str().expect("path"),
            "--out",
            out.to_str().expect("path"),
            "--provider",
            "replay",
            "--cassette",
            cassette.to_str().expect("path"),
        ],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<Value> = std::fs::read_to_string(&out)
        .expect("results")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let t101 = lines.iter().find(|l| l["id"] == "T-101").expect("T-101");
    assert_eq!(t101["result"]["parsedContent"]["urgency"], "high", "{t101}");
    assert_eq!(lines.len(), 5);
    assert!(stderr.contains("5 rows: 5 completed, 0 failed"), "{stderr}");
}

#[test]
fn results_written_over_the_inputs_by_any_name_are_refused_before_anything_is_touched() {
    let dir = scratch("batch", "same");
    let bundle = files::compiled(&dir, PROGRAM);
    let inputs = dir.join("rows.jsonl");
    let row = r#"{"notes": ["a"]}"#;
    std::fs::write(&inputs, row).expect("write the rows");
    let (linked, hard) = (dir.join("linked.jsonl"), dir.join("hard.jsonl"));
    std::os::unix::fs::symlink(&inputs, &linked).expect("symlink");
    std::fs::hard_link(&inputs, &hard).expect("hard link");
    let dotted = dir.join(".").join("rows.jsonl");
    for out in [&inputs, &linked, &hard, &dotted] {
        let (code, _, stderr) = run_tvm(
            &[
                "batch",
                bundle.to_str().expect("path"),
                "--inputs",
                inputs.to_str().expect("path"),
                "--out",
                out.to_str().expect("path"),
                "--provider",
                "echo",
            ],
            &[],
        );
        assert_eq!(code, 2, "{}: {stderr}", out.display());
        assert!(stderr.contains("is the inputs file"), "{stderr}");
        assert_eq!(std::fs::read_to_string(&inputs).expect("rows"), row);
        let mut state = out.clone().into_os_string();
        state.push(".state");
        assert!(!Path::new(&state).exists(), "{state:?} was made");
    }
}

/// An entry point with a parameter named `id`.
const LOOKUP: &str = r#"<library>
  <task name="lookup">
    <inputs><input name="id" type="number">Record</input><input name="name" type="string">Its name</input></inputs>
    <instructions>Look up record {{id}} named {{name}}</instructions>
  </task>
</library>"#;

#[test]
fn a_rows_own_id_labels_its_line_and_is_an_argument_only_of_an_entry_that_takes_one() {
    let dir = scratch("batch", "ids");
    let rows = [
        r#"{"id": "T-1", "notes": ["a"]}"#,
        r#"{"id": "T-2", "args": {"notes": ["b"]}}"#,
    ];
    let (code, lines, stderr) = batch(&dir, &rows, &["--provider", "echo"], &[]);
    assert_eq!(code, 0, "{stderr}");
    for (i, id) in [(0, "T-1"), (1, "T-2")] {
        let row = by_index(&lines, i);
        assert_eq!(
            (&row["id"], &row["status"]),
            (&json!(id), &json!("COMPLETE"))
        );
    }

    let dir = scratch("batch", "id-parameter");
    let bundle = files::compiled(&dir, LOOKUP);
    let (inputs, out) = (dir.join("rows.jsonl"), dir.join("results.jsonl"));
    std::fs::write(&inputs, r#"{"id": 42, "name": "ada"}"#).expect("write the rows");
    let (code, _, stderr) = run_tvm(
        &[
            "batch",
            bundle.to_str().expect("path"),
            "--inputs",
            inputs.to_str().expect("path"),
            "--out",
            out.to_str().expect("path"),
            "--provider",
            "echo",
        ],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let line: Value =
        serde_json::from_str(std::fs::read_to_string(&out).expect("results").trim()).expect("JSON");
    assert_eq!(line["id"], json!(42), "{line}");
    let content = line["result"]["content"].as_str().unwrap_or_default();
    assert!(content.contains("Look up record 42 named ada"), "{line}");
}
