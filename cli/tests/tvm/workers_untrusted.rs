//! What a worker does with messages it cannot trust, against a real `nats-server -js`
//! on 127.0.0.1: messages published by hand (garbage, wrong ids, rows of batches that
//! are not there or whose record is damaged, rows naming another batch), bundle objects
//! that do not hash to their name or do not load, rows injected under another id, and a
//! worker that wakes after its row was handed to another.

use super::workers::{collect, publish, rows, slow_echo, stop, wait_finished, worker};
use crate::support::files::{self, run_tvm, runtime, scratch};
use crate::support::http::{Reply, Server};
use crate::support::nats::NatsServer;
use async_nats::jetstream::{self, message::PublishMessage};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

/// The test's own client of the server, publishing as anyone on it may.
struct Hand {
    rt: tokio::runtime::Runtime,
    js: jetstream::Context,
}

impl Hand {
    fn new(url: &str) -> Hand {
        let rt = runtime();
        let js =
            rt.block_on(async { jetstream::new(async_nats::connect(url).await.expect("connect")) });
        Hand { js, rt }
    }

    /// Publishes `payload` on `subject` with the message id `id`; whether the server
    /// took it as new.
    fn publish(&self, subject: &str, id: Option<&str>, payload: Vec<u8>) -> bool {
        self.rt.block_on(async {
            let mut m = PublishMessage::build().payload(payload.into());
            if let Some(id) = id {
                m = m.message_id(id);
            }
            let ack = self
                .js
                .send_publish(subject.to_string(), m)
                .await
                .expect("publish");
            !ack.await.expect("the server's ack").duplicate
        })
    }

    fn row(&self, batch: &str, id: &str, payload: &Value) -> bool {
        let subject = format!("tvm.rows.{batch}");
        self.publish(&subject, Some(id), payload.to_string().into_bytes())
    }

    fn put_record(&self, name: &str, record: Vec<u8>) {
        self.rt.block_on(async {
            let kv = self.js.get_key_value("tvm_batches").await.expect("bucket");
            kv.put(name, record.into()).await.expect("put a record");
        })
    }

    fn record(&self, name: &str) -> Value {
        self.rt.block_on(async {
            let kv = self.js.get_key_value("tvm_batches").await.expect("bucket");
            let bytes = kv.get(name).await.expect("get").expect("a record");
            serde_json::from_slice(&bytes).expect("a record")
        })
    }

    fn put_object(&self, name: &str, bytes: &[u8]) {
        self.rt.block_on(async {
            let store = self
                .js
                .get_object_store("tvm_bundles")
                .await
                .expect("store");
            let mut reader = bytes;
            store.put(name, &mut reader).await.expect("put an object");
        })
    }

    fn has_object(&self, name: &str) -> bool {
        self.rt.block_on(async {
            let store = self
                .js
                .get_object_store("tvm_bundles")
                .await
                .expect("store");
            store.info(name).await.is_ok_and(|i| !i.deleted)
        })
    }
}

/// A row of [`super::batch::PROGRAM`] as the publisher writes it.
fn row(batch: &str, index: u64, note: &str) -> Value {
    json!({"batch": batch, "index": index, "id": format!("hand-{index}"), "args": {"notes": [note]}})
}

/// Waits for a worker started with `--idle-exit` to stop: its exit code and stderr.
fn ended(mut child: Child, log: &Path) -> (i32, String) {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            return (status.code().unwrap_or(-1), text);
        }
        if started.elapsed() > Duration::from_secs(60) {
            stop(child);
            panic!(
                "the worker did not stop: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The error message of a failed result line.
fn reason(line: &Value) -> String {
    line["result"]["notes"]["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_worker_outlives_messages_that_are_not_rows_and_stores_the_rows_they_name_as_failed() {
    let rt = runtime();
    let model = rt.block_on(slow_echo(0));
    let dir = scratch("workers_untrusted", "garbage");
    let nats = NatsServer::start(&dir);
    let url = nats.url();
    let (bundle, inputs) = rows(&dir, 2, 1);
    let (good, _) = publish(&url, &bundle, &inputs, &["--batch", "good"]);
    let hand = Hand::new(&url);
    // A batch of five rows whose messages are published by hand.
    let mut record = hand.record(&good);
    record["batch"] = json!("hand");
    record["rows"] = json!(5);
    hand.put_record("hand", record.to_string().into_bytes());
    hand.put_record("broken", b"{not a record".to_vec());
    assert!(hand.publish("tvm.rows.hand", Some("hand.1"), b"\x00garbage".to_vec()));
    assert!(hand.publish("tvm.rows.hand", None, b"no id at all".to_vec()));
    assert!(hand.row("hand", "hand.2", &row("good", 2, "other batch")));
    assert!(hand.row("hand", "hand.4", &row("hand", 3, "wrong id")));
    assert!(hand.row("hand", "hand.9", &row("hand", 9, "past the end")));
    assert!(hand.row("nosuch", "nosuch.0", &row("nosuch", 0, "no batch")));
    assert!(hand.row("broken", "broken.0", &row("broken", 0, "damaged record")));
    assert!(hand.publish("tvm.rows.hand", Some("hand.3"), vec![b'x'; 900_000]));
    // A good row after all of them: the worker is still there to run it.
    assert!(hand.row("hand", "hand.0", &row("hand", 0, "fine")));

    let log = dir.join("w.log");
    let w = worker(&url, &model.url(), &log, &["--idle-exit", "3"]);
    let (code, said) = ended(w, &log);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("3 rows completed, 4 failed"), "{said}");
    assert!(said.contains("4 messages dropped"), "{said}");
    for why in [
        "a message of batch hand that names no row of it",
        "the server has no record of that batch",
        "the record of batch broken in the server is damaged",
        "names row 9, but the batch has 5 rows",
    ] {
        assert!(said.contains(why), "`{why}` in {said}");
    }
    let dropped = said
        .lines()
        .filter(|l| l.starts_with("tvm worker: warning: dropped a message: "));
    assert_eq!(
        dropped.count(),
        4,
        "each dropped message said on a line of its own: {said}"
    );

    let (code, lines, _) = collect(&url, &good, &dir);
    assert_eq!(code, 0);
    assert_eq!(lines.len(), 2);
    let (code, lines, stderr) = collect(&url, "hand", &dir);
    assert_eq!(code, 1);
    assert!(stderr.contains("5 rows: 1 completed, 4 failed"), "{stderr}");
    let by_index = |i: u64| lines.iter().find(|l| l["index"] == i).expect("a line");
    assert_eq!(by_index(0)["status"], "COMPLETE");
    assert!(reason(by_index(1)).contains("its message in the queue is not a row"));
    assert!(reason(by_index(2)).contains("names batch `good`, not the batch it was queued for"));
    assert!(reason(by_index(3)).contains("not a row"), "{}", by_index(3));
    assert!(reason(by_index(4)).contains("names row 3, not the row its message id names"));
    assert_eq!(by_index(4)["status"], "FAILED");
    assert_eq!(
        model.hits(),
        6,
        "only the good rows called the model, two calls each"
    );
}

#[test]
fn a_bundle_object_that_does_not_hash_to_its_name_is_removed_and_publishing_again_replaces_it() {
    let rt = runtime();
    let model = rt.block_on(slow_echo(0));
    let dir = scratch("workers_untrusted", "bundle");
    let nats = NatsServer::start(&dir);
    let url = nats.url();
    let (bundle, inputs) = rows(&dir, 2, 1);
    let (one, _) = publish(&url, &bundle, &inputs, &["--batch", "one"]);
    let hand = Hand::new(&url);
    let record = hand.record(&one);
    let sha = record["header"]["bundle_sha256"]
        .as_str()
        .expect("sha")
        .to_string();
    hand.put_object(&sha, b"not the bundle");
    // A batch whose bundle has the hash of its name but is not a bundle.
    let junk = b"TVB\0 junk".to_vec();
    let junk_sha = tv_runtime::sha256_hex(&junk);
    hand.put_object(&junk_sha, &junk);
    let mut other = record.clone();
    other["batch"] = json!("junk");
    other["header"]["bundle_sha256"] = json!(junk_sha);
    hand.put_record("junk", other.to_string().into_bytes());
    assert!(hand.row("junk", "junk.0", &row("junk", 0, "a")));
    assert!(hand.row("junk", "junk.1", &row("junk", 1, "b")));

    let log = dir.join("w.log");
    let (code, said) = ended(
        worker(&url, &model.url(), &log, &["--idle-exit", "3"]),
        &log,
    );
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("0 rows completed, 4 failed"), "{said}");
    let (code, lines, _) = collect(&url, &one, &dir);
    assert_eq!(code, 1);
    assert_eq!(lines.len(), 2);
    let why = reason(&lines[0]);
    assert!(
        why.contains("does not have the SHA-256 it is named by"),
        "{why}"
    );
    assert!(why.contains("it was removed"), "{why}");
    assert!(!hand.has_object(&sha), "the bad object was removed");
    let (_, lines, _) = collect(&url, "junk", &dir);
    assert!(
        reason(&lines[1]).contains("its bundle does not load"),
        "{lines:?}"
    );

    // Damaged again before the next batch of the bundle: publishing replaces it.
    hand.put_object(&sha, b"not the bundle either");
    let (two, _) = publish(&url, &bundle, &inputs, &["--batch", "two"]);
    let w = worker(&url, &model.url(), &dir.join("w2.log"), &[]);
    wait_finished(&url, &two, 2, 30);
    stop(w);
    let (code, lines, stderr) = collect(&url, &two, &dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(lines.iter().all(|l| l["status"] == "COMPLETE"), "{lines:?}");
    assert!(hand.has_object(&sha));
    assert_eq!(model.hits(), 4);
}

#[test]
fn a_row_injected_under_another_id_is_dropped_and_one_under_a_queued_id_is_refused_by_the_server() {
    let rt = runtime();
    let model = rt.block_on(slow_echo(0));
    let dir = scratch("workers_untrusted", "injected");
    let nats = NatsServer::start(&dir);
    let url = nats.url();
    // Any command makes the queue; the row is injected before the batch is published,
    // so that it comes to a worker first.
    run_tvm(&["batch", "--nats", &url, "--status"], &[]);
    let hand = Hand::new(&url);
    assert!(hand.row("b", "b.0.evil", &row("b", 0, "evil")));
    let (bundle, inputs) = rows(&dir, 2, 1);
    let (batch, _) = publish(&url, &bundle, &inputs, &["--batch", "b"]);
    assert!(
        !hand.row("b", "b.0", &row("b", 0, "evil twin")),
        "a queued id is a duplicate"
    );
    let log = dir.join("w.log");
    let (code, said) = ended(
        worker(&url, &model.url(), &log, &["--idle-exit", "3"]),
        &log,
    );
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("1 messages dropped"), "{said}");
    let (code, lines, _) = collect(&url, &batch, &dir);
    assert_eq!(code, 0);
    assert!(!lines[0].to_string().contains("evil"), "{}", lines[0]);
    let asked: Vec<String> = model.requests().iter().map(|r| r.prompt()).collect();
    assert!(asked.iter().all(|p| !p.contains("evil")), "{asked:?}");
}

#[test]
fn a_worker_that_wakes_after_its_row_was_handed_to_another_does_not_store_its_result() {
    let rt = runtime();
    // The first call is answered late; every later one at once.
    let model = rt.block_on(Server::start(|n, _| {
        let (text, ms) = if n == 0 {
            ("first", 5_000)
        } else {
            ("second", 2_500)
        };
        Reply::completion(text, 10, 2).after(Duration::from_millis(ms))
    }));
    let dir = scratch("workers_untrusted", "woke");
    let nats = NatsServer::start(&dir);
    let url = nats.url();
    let (bundle, inputs) = rows(&dir, 1, 0);
    let (batch, _) = publish(&url, &bundle, &inputs, &[]);
    let lease = ["--lease", "3"];
    let sleeper_log = dir.join("sleeper.log");
    let sleeper = worker(&url, &model.url(), &sleeper_log, &lease);
    files::wait_for(|| model.hits() == 1);
    signal(&sleeper, "-STOP");
    // Past the lease the server hands the row to the second worker.
    let other = worker(&url, &model.url(), &dir.join("other.log"), &lease);
    files::wait_for(|| model.hits() == 2);
    signal(&sleeper, "-CONT");
    wait_finished(&url, &batch, 1, 30);
    std::thread::sleep(Duration::from_secs(1));
    stop(sleeper);
    stop(other);
    let (code, lines, _) = collect(&url, &batch, &dir);
    assert_eq!(code, 0);
    let content = lines[0]["result"]["content"].as_str().unwrap_or_default();
    assert_eq!(
        content, "second",
        "the holder's answer is the result: {}",
        lines[0]
    );
    let said = std::fs::read_to_string(&sleeper_log).unwrap_or_default();
    assert!(!said.contains(": COMPLETE"), "{said}");
    assert_eq!(model.hits(), 2);
}

fn signal(child: &Child, which: &str) {
    let ok = std::process::Command::new("kill")
        .args([which, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(ok.success());
}

/// A batch published by a tvm of journal format 1 (its record's header as the journal
/// fixture's, tests/fixtures/journals): `--status` and `--collect` refuse it saying what
/// to do, as `tvm resume` refuses such a journal.
#[test]
fn a_batch_published_by_the_format_before_is_refused_with_what_to_do() {
    let dir = scratch("workers_untrusted", "format-1");
    let nats = NatsServer::start(&dir);
    let url = nats.url();
    let (bundle, inputs) = rows(&dir, 1, 0);
    publish(&url, &bundle, &inputs, &["--batch", "new"]);
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/journals/format-1.jsonl");
    let text = std::fs::read_to_string(fixture).expect("the fixture");
    let header: Value = serde_json::from_str(text.lines().next().expect("a header")).expect("JSON");
    let old = json!({"batch": "old", "rows": 1, "rows_sha256": "ab", "header": header,
                     "calls": 16, "max_deliveries": 3});
    let hand = Hand::new(&url);
    hand.put_record("old", old.to_string().into_bytes());
    let said = "tvm: error: batch old in the server was written by an older tvm (journal format \
                1); this tvm reads format 2: finish the run with the tvm that started it, or run \
                it again\n";
    let (code, out, err) = run_tvm(
        &["batch", "--nats", &url, "--batch", "old", "--status"],
        &[],
    );
    assert_eq!((code, out.as_str(), err.as_str()), (2, "", said));
    let (code, lines, err) = collect(&url, "old", &dir);
    assert_eq!((code, lines.len(), err.as_str()), (2, 0, said));
}
