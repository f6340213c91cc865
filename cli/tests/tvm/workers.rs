//! Batches spread over `tvm worker`s through a real `nats-server -js` on 127.0.0.1
//! (DESIGN §16): workers split the rows, a worker killed mid-row has its row finished
//! by another without repeating a finished call, a server restarted mid-batch loses
//! nothing, and publishing twice adds no rows; calls are checked against the log of
//! the model server on 127.0.0.1.

use super::batch::PROGRAM;
use crate::support::files::{self, run_tvm, runtime, scratch};
use crate::support::http::{Reply, Request, Server};
use crate::support::nats::NatsServer;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A model server that echoes the prompt after `ms` milliseconds, so that the answer
/// to a prompt can be found in a journal.
pub(crate) async fn slow_echo(ms: u64) -> Server {
    Server::start(move |_, r| {
        Reply::completion(&format!("seen: {}", r.prompt()), 10, 2).after(Duration::from_millis(ms))
    })
    .await
}

/// [`PROGRAM`] compiled in `dir`, and `rows` rows of `notes` notes each (one call per
/// note, and one to merge them), every prompt distinct.
pub(crate) fn rows(dir: &Path, rows: usize, notes: usize) -> (PathBuf, PathBuf) {
    let bundle = files::compiled(dir, PROGRAM);
    let inputs = dir.join("rows.jsonl");
    let lines: Vec<String> = (0..rows)
        .map(|i| {
            let notes: Vec<String> = (0..notes).map(|n| format!("\"r{i:02}n{n}\"")).collect();
            format!(
                r#"{{"id": "row-{i}", "args": {{"notes": [{}]}}}}"#,
                notes.join(",")
            )
        })
        .collect();
    std::fs::write(&inputs, lines.join("\n")).expect("write the rows");
    (bundle, inputs)
}

pub(crate) fn path(p: &Path) -> &str {
    p.to_str().expect("path")
}

/// `tvm batch --nats` publishing the rows: the batch's name, and stderr.
pub(crate) fn publish(url: &str, bundle: &Path, inputs: &Path, flags: &[&str]) -> (String, String) {
    let mut args = vec![
        "batch",
        path(bundle),
        "--inputs",
        path(inputs),
        "--nats",
        url,
    ];
    args.extend(flags);
    let (code, stdout, stderr) = run_tvm(&args, &[]);
    assert_eq!(code, 0, "{stderr}");
    (stdout.trim().to_string(), stderr)
}

/// A `tvm worker` calling the model server at `model`, its stderr in `log`.
pub(crate) fn worker(url: &str, model: &str, log: &Path, flags: &[&str]) -> Child {
    let mut args = vec!["worker", "--nats", url, "--provider", "openai", "--verbose"];
    args.extend(flags);
    files::tvm(&args)
        .env("OPENAI_BASE_URL", model)
        .env("OPENAI_API_KEY", "test-key")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("worker log"))
        .spawn()
        .expect("start tvm worker")
}

/// `--status` of the batch: its rows finished.
pub(crate) fn finished(url: &str, batch: &str) -> u64 {
    let (code, stdout, stderr) =
        run_tvm(&["batch", "--nats", url, "--batch", batch, "--status"], &[]);
    assert_eq!(code, 0, "{stderr}");
    let after = stdout.split(" rows, ").nth(1).unwrap_or_default();
    after
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Waits until `n` rows of the batch are finished; fails after `secs` seconds.
pub(crate) fn wait_finished(url: &str, batch: &str, n: u64, secs: u64) {
    let started = Instant::now();
    while finished(url, batch) < n {
        assert!(
            started.elapsed() < Duration::from_secs(secs),
            "the batch did not finish {n} rows within {secs} s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `--collect`: the result lines, in the order of the rows; the exit code and stderr.
pub(crate) fn collect(url: &str, batch: &str, dir: &Path) -> (i32, Vec<Value>, String) {
    let out = dir.join("results.jsonl");
    let args = [
        "batch",
        "--nats",
        url,
        "--batch",
        batch,
        "--collect",
        "--out",
        path(&out),
    ];
    let (code, _, stderr) = run_tvm(&args, &[]);
    let lines = std::fs::read_to_string(&out)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    (code, lines, stderr)
}

/// Workers named `names`, each with `flags`, their logs in `dir/NAME.log`.
fn workers(url: &str, model: &str, dir: &Path, names: &[&str], flags: &[&str]) -> Vec<Child> {
    names
        .iter()
        .map(|n| worker(url, model, &dir.join(format!("{n}.log")), flags))
        .collect()
}

pub(crate) fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Every row once, in order, COMPLETE.
fn all_complete(lines: &[Value], n: u64) {
    let indices: Vec<u64> = lines.iter().filter_map(|l| l["index"].as_u64()).collect();
    assert_eq!(
        indices,
        (0..n).collect::<Vec<_>>(),
        "every row once, in order"
    );
    assert!(lines.iter().all(|l| l["status"] == "COMPLETE"), "{lines:?}");
}

/// Prompts asked more than once.
fn repeated(asked: &[Request]) -> Vec<String> {
    let mut prompts: Vec<String> = asked.iter().map(Request::prompt).collect();
    prompts.sort();
    let mut twice: Vec<String> = prompts
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0].clone())
        .collect();
    twice.dedup();
    twice
}

#[test]
fn two_workers_split_a_batch_and_every_call_is_made_once() {
    let rt = runtime();
    let model = rt.block_on(slow_echo(40));
    let dir = scratch("workers", "split");
    let nats = NatsServer::start(&dir);
    let (bundle, inputs) = rows(&dir, 24, 2);
    let (batch, said) = publish(&nats.url(), &bundle, &inputs, &[]);
    assert!(said.contains("24 rows: 24 queued"), "{said}");
    let logs = [dir.join("a.log"), dir.join("b.log")];
    let workers = workers(
        &nats.url(),
        &model.url(),
        &dir,
        &["a", "b"],
        &["--concurrency", "3"],
    );
    wait_finished(&nats.url(), &batch, 24, 60);
    workers.into_iter().for_each(stop);

    let (code, lines, stderr) = collect(&nats.url(), &batch, &dir);
    assert_eq!(code, 0, "{stderr}");
    all_complete(&lines, 24);
    assert_eq!(lines[3]["id"], "row-3");
    let asked = model.requests();
    assert_eq!(asked.len(), 24 * 3, "three calls a row, none twice");
    assert!(repeated(&asked).is_empty());
    for log in &logs {
        let ran = std::fs::read_to_string(log).unwrap_or_default();
        let row_line = |l: &str| l.starts_with("tvm worker: batch ") && l.ends_with(": COMPLETE");
        assert!(ran.lines().any(row_line), "each worker ran rows: {ran}");
    }
}

#[test]
fn a_worker_killed_mid_row_has_its_row_finished_by_another_with_no_finished_call_repeated() {
    let rt = runtime();
    // A row takes two replies in turn (its notes, then the merge): a second at least.
    let model = rt.block_on(slow_echo(500));
    let dir = scratch("workers", "killed");
    let nats = NatsServer::start(&dir);
    let url = nats.url();
    let (bundle, inputs) = rows(&dir, 4, 4);
    let (batch, _) = publish(&url, &bundle, &inputs, &[]);
    let lease = ["--lease", "3", "--concurrency", "2"];
    let first = worker(&url, &model.url(), &dir.join("first.log"), &lease);
    // Killed once a row has answers kept in the server, and before any row ended.
    let server = rt
        .block_on(tv_runtime::nats::Server::connect(
            &tv_runtime::nats::Connect::new(&url),
        ))
        .expect("connect");
    files::wait_for(|| !journal_texts(&rt, &server, &batch, 4).is_empty());
    std::thread::sleep(Duration::from_millis(100));
    stop(first);
    assert_eq!(finished(&url, &batch), 0, "killed mid-row");
    let asked_before = model.requests().len();
    let journals = journal_texts(&rt, &server, &batch, 4).join("\n");
    let kept: Vec<String> = model
        .requests()
        .iter()
        .map(Request::prompt)
        .filter(|p| journals.contains(&format!("seen: {p}").replace('"', "\\\"")))
        .collect();
    assert!(!kept.is_empty(), "a finished call was kept before the kill");

    let second = worker(&url, &model.url(), &dir.join("second.log"), &lease);
    wait_finished(&url, &batch, 4, 60);
    stop(second);
    let (code, lines, stderr) = collect(&url, &batch, &dir);
    assert_eq!(code, 0, "{stderr}");
    all_complete(&lines, 4);
    let again: Vec<String> = model.requests()[asked_before..]
        .iter()
        .map(Request::prompt)
        .collect();
    for p in &kept {
        assert!(
            !again.contains(p),
            "`{p}` was answered before the kill and asked again"
        );
    }
    assert!(
        journal_texts(&rt, &server, &batch, 4).is_empty(),
        "the journals of finished rows are removed"
    );
}

/// The journals the server holds now of the first `rows` rows of `batch` (their first
/// parts: these journals are small).
fn journal_texts(
    rt: &tokio::runtime::Runtime,
    server: &tv_runtime::nats::Server,
    batch: &str,
    rows: u64,
) -> Vec<String> {
    rt.block_on(async {
        let mut texts = Vec::new();
        for i in 0..rows {
            if let Ok(Some(v)) = server.journals.get(format!("{batch}.{i}.0")).await {
                texts.push(String::from_utf8_lossy(&v).into_owned());
            }
        }
        texts
    })
}

#[test]
fn a_server_restarted_mid_batch_loses_no_row() {
    let rt = runtime();
    let model = rt.block_on(slow_echo(100));
    let dir = scratch("workers", "restart");
    let mut nats = NatsServer::start(&dir);
    let url = nats.url();
    let (bundle, inputs) = rows(&dir, 20, 1);
    let (batch, _) = publish(&url, &bundle, &inputs, &[]);
    let w = worker(
        &url,
        &model.url(),
        &dir.join("w.log"),
        &["--concurrency", "2", "--lease", "5"],
    );
    wait_finished(&url, &batch, 4, 60);
    nats.restart();
    wait_finished(&url, &batch, 20, 90);
    stop(w);
    let (code, lines, stderr) = collect(&url, &batch, &dir);
    assert_eq!(code, 0, "{stderr}");
    all_complete(&lines, 20);
}

#[test]
fn publishing_the_same_batch_twice_adds_no_rows_before_or_after_it_ran() {
    let rt = runtime();
    let model = rt.block_on(slow_echo(0));
    let dir = scratch("workers", "twice");
    let nats = NatsServer::start(&dir);
    let url = nats.url();
    let (bundle, inputs) = rows(&dir, 6, 1);
    let (batch, first) = publish(&url, &bundle, &inputs, &[]);
    let (again, second) = publish(&url, &bundle, &inputs, &[]);
    assert_eq!(batch, again, "the same batch has the same name");
    assert!(first.contains("6 queued, 0 there already"), "{first}");
    assert!(second.contains("0 queued, 6 there already"), "{second}");
    let w = worker(&url, &model.url(), &dir.join("w.log"), &[]);
    wait_finished(&url, &batch, 6, 60);
    stop(w);
    let (_, third) = publish(&url, &bundle, &inputs, &[]);
    assert!(third.contains("0 queued, 6 there already"), "{third}");
    let (code, lines, stderr) = collect(&url, &batch, &dir);
    assert_eq!(code, 0, "{stderr}");
    all_complete(&lines, 6);
    assert_eq!(model.hits(), 12, "each row ran once");
    // The same rows under another batch name are another batch.
    let (other, said) = publish(&url, &bundle, &inputs, &["--batch", "other"]);
    assert_eq!(other, "other");
    assert!(said.contains("6 queued"), "{said}");
}

#[test]
fn a_row_handed_out_more_than_max_deliveries_times_ends_as_a_failed_row() {
    let rt = runtime();
    let model = rt.block_on(slow_echo(60_000));
    let dir = scratch("workers", "poison");
    let nats = NatsServer::start(&dir);
    let url = nats.url();
    let (bundle, inputs) = rows(&dir, 1, 1);
    let (batch, _) = publish(&url, &bundle, &inputs, &["--max-deliveries", "1"]);
    let lease = ["--lease", "3"];
    let first = worker(&url, &model.url(), &dir.join("first.log"), &lease);
    files::wait_for(|| model.hits() > 0);
    stop(first);
    let second = worker(&url, &model.url(), &dir.join("second.log"), &lease);
    wait_finished(&url, &batch, 1, 30);
    stop(second);
    let (code, lines, _) = collect(&url, &batch, &dir);
    assert_eq!(code, 1, "a failed row");
    assert_eq!(lines[0]["status"], "FAILED");
    let message = lines[0]["result"]["notes"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("no worker finished the row in 1 attempt: "),
        "{lines:?}"
    );
    assert_eq!(model.hits(), 1, "the row was not run again");
}

#[test]
fn workers_share_the_batch_cap_on_calls_in_flight() {
    let rt = runtime();
    let model = rt.block_on(slow_echo(150));
    let dir = scratch("workers", "shared");
    let nats = NatsServer::start(&dir);
    let url = nats.url();
    let (bundle, inputs) = rows(&dir, 16, 1);
    let (batch, _) = publish(&url, &bundle, &inputs, &["--concurrency", "2"]);
    let workers = workers(
        &url,
        &model.url(),
        &dir,
        &["a", "b"],
        &["--concurrency", "4"],
    );
    wait_finished(&url, &batch, 16, 60);
    workers.into_iter().for_each(stop);
    let (code, lines, stderr) = collect(&url, &batch, &dir);
    assert_eq!(code, 0, "{stderr}");
    all_complete(&lines, 16);
    assert!(
        model.max_in_flight() <= 2,
        "at most 2 calls of the batch at once over both workers, saw {}",
        model.max_in_flight()
    );
}

#[test]
fn workers_never_spend_more_than_the_batch_budget_between_them() {
    let rt = runtime();
    // Each reply costs about $0.0024 (4,000 output tokens of gpt-4o-mini), near its
    // worst case: a budget of $0.01 pays for four calls of the sixteen.
    let model = rt.block_on(Server::start(|_, _| {
        Reply::completion("paid", 10, 4_000).after(Duration::from_millis(50))
    }));
    let dir = scratch("workers", "budget");
    let nats = NatsServer::start(&dir);
    let url = nats.url();
    let (bundle, inputs) = rows(&dir, 16, 0);
    let flags = ["--max-cost", "0.01", "--model", "gpt-4o-mini"];
    let (batch, _) = publish(&url, &bundle, &inputs, &flags);
    let workers = workers(
        &url,
        &model.url(),
        &dir,
        &["a", "b"],
        &["--concurrency", "4"],
    );
    wait_finished(&url, &batch, 16, 60);
    workers.into_iter().for_each(stop);
    let (code, lines, _) = collect(&url, &batch, &dir);
    assert_eq!(code, 1, "rows failed for the budget");
    let spent: f64 = lines
        .iter()
        .filter_map(|l| l["result"]["notes"]["usage"]["costUsd"].as_f64())
        .sum();
    let completed = lines.iter().filter(|l| l["status"] == "COMPLETE").count();
    assert!(spent <= 0.01, "spent ${spent} of a $0.01 budget");
    assert!((1..=4).contains(&completed), "{completed} rows paid for");
    assert_eq!(
        model.hits(),
        completed,
        "no call was sent beyond the budget"
    );
    let refused = lines
        .iter()
        .find(|l| l["status"] == "FAILED")
        .expect("a failed row");
    assert!(refused.to_string().contains("batch's budget"), "{refused}");
}

#[test]
fn a_row_larger_than_the_server_takes_is_a_failed_row_and_a_missing_server_is_named() {
    let dir = scratch("workers", "bounds");
    let nats = NatsServer::start(&dir);
    let url = nats.url();
    let bundle = files::compiled(&dir, PROGRAM);
    let inputs = dir.join("rows.jsonl");
    let big = "x".repeat(1_100_000);
    std::fs::write(
        &inputs,
        format!("{{\"notes\": [\"{big}\"]}}\n{{\"notes\": [\"small\"]}}\n"),
    )
    .expect("write the rows");
    let (batch, said) = publish(&url, &bundle, &inputs, &[]);
    assert!(
        said.contains("1 queued, 0 there already, 1 failed"),
        "{said}"
    );
    let (_, lines, _) = collect(&url, &batch, &dir);
    assert_eq!(lines.len(), 1, "only the failed row has a result yet");
    assert!(
        lines[0]["result"].to_string().contains("max_payload"),
        "{lines:?}"
    );

    drop(nats);
    let (code, _, stderr) = run_tvm(&["batch", "--nats", &url, "--status"], &[]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("cannot connect to a NATS server there"),
        "{stderr}"
    );
}
