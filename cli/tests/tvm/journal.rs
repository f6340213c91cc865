//! The journal as users meet it: `tvm run --journal`, killed with SIGKILL at many
//! points, then `tvm resume`, against an OpenAI-compatible server on 127.0.0.1 that
//! keeps every request it was sent.

use crate::support::files;
use crate::support::http;

use files::{golden, runtime, scratch, wait_for};
use http::{Reply, Request, Server};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const KEY: &str = "sk-journal-test-key-0123456789";

pub(super) fn tvm(args: &[&str], server: &Server) -> Command {
    let mut cmd = files::tvm(args);
    cmd.env("OPENAI_BASE_URL", server.url())
        .env("OPENAI_API_KEY", KEY);
    cmd
}

pub(super) fn finish(cmd: &mut Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("run tvm");
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (status.code().unwrap_or(-1), text(stdout), text(stderr))
}

/// The model's answer to a prompt: a function of the prompt, so runs are comparable.
fn answer_to(prompt: &str) -> String {
    let sum = prompt
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(131).wrapping_add(u64::from(b)));
    format!("line {sum:016x}")
}

fn prompt_of(r: &Request) -> String {
    let body = r.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages
        .last()
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

/// The model's reply to a request, after `delay`.
fn answer(r: &Request, delay: Duration) -> Reply {
    let body = json!({"choices": [{"message": {"role": "assistant", "content": answer_to(&prompt_of(r))}}],
                      "usage": {"prompt_tokens": 3, "completion_tokens": 2}});
    Reply::json(200, body).after(delay)
}

/// A server answering every prompt after `delay`; `arrived` counts requests as they come.
pub(super) async fn model_server(delay: Duration, arrived: Arc<AtomicUsize>) -> Server {
    Server::start(move |_, r| {
        arrived.fetch_add(1, Ordering::SeqCst);
        answer(r, delay)
    })
    .await
}

pub(super) const DIGEST: [&str; 5] = [
    "--arg",
    "service=payments",
    "--provider",
    "openai",
    "--journal",
];

/// Complete lines of a journal; the last may be cut short by the kill.
fn lines(journal: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(journal).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The LLM answers the journal holds: calls that finished before the kill.
fn answered(journal: &Path) -> Vec<String> {
    lines(journal)
        .iter()
        .filter(|r| r["event"] == "answered" && r["reply"]["kind"] == "llm")
        .map(|r| r["reply"]["content"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Where a run is stopped.
#[derive(Clone, Copy, Debug)]
enum KillAt {
    /// When the server has received this many requests (the last one in flight).
    Request(usize),
    /// When the journal holds this many complete lines.
    Lines(usize),
}

pub(super) fn kill(mut child: Child) {
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
}

/// Runs the digest, kills it at `at`, resumes it, and checks the result against an
/// uninterrupted run and that no call the journal held was made again.
fn kill_and_resume(rt: &tokio::runtime::Runtime, at: KillAt, expected: &str) {
    let dir = scratch("journal", &format!("{at:?}").replace(['(', ')'], ""));
    let journal = dir.join("run.jsonl");
    let arrived = Arc::new(AtomicUsize::new(0));
    let server = rt.block_on(model_server(Duration::from_millis(15), arrived.clone()));
    let bundle = golden("incident_digest");
    let mut args = vec!["run", bundle.to_str().expect("path")];
    args.extend(DIGEST);
    args.push(journal.to_str().expect("path"));
    let child = tvm(&args, &server)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    match at {
        KillAt::Request(n) => wait_for(|| arrived.load(Ordering::SeqCst) >= n),
        KillAt::Lines(n) => wait_for(|| {
            std::fs::read_to_string(&journal).is_ok_and(|t| t.matches('\n').count() >= n)
        }),
    }
    kill(child);
    let finished = answered(&journal);
    let before = server.settled_hits();
    let resume = ["resume", journal.to_str().expect("path")];
    let (mut code, mut out, mut err) = finish(&mut tvm(&resume, &server));
    if code == 2 && err.contains("--rerun-scripts") {
        (code, out, err) = finish(&mut tvm(
            &[resume[0], resume[1], "--rerun-scripts"],
            &server,
        ));
    }
    assert_eq!(code, 0, "{at:?}: {err}");
    assert_eq!(out, expected, "{at:?}: the resumed run ends differently");
    for r in &server.requests()[before..] {
        let again = answer_to(&prompt_of(r));
        assert!(
            !finished.contains(&again),
            "{at:?}: a journaled call was made again: {}",
            prompt_of(r)
        );
    }
    let total = server.hits() - before + finished.len();
    assert!(
        total >= 10,
        "{at:?}: the workflow asks ten questions; {total} were answered"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_killed_at_any_point_resumes_to_the_same_result_without_repeating_a_finished_call() {
    let rt = runtime();
    let server = rt.block_on(model_server(Duration::ZERO, Arc::default()));
    let bundle = golden("incident_digest");
    let mut args = vec!["run", bundle.to_str().expect("path")];
    args.extend(&DIGEST[..4]);
    let (code, expected, err) = finish(&mut tvm(&args, &server));
    assert_eq!(code, 0, "{err}");
    assert_eq!(server.hits(), 10);
    drop(server);
    // Ten model calls (four of them at once), one script, eleven journal records.
    let points = (1..=10)
        .map(KillAt::Request)
        .chain((1..=12).map(KillAt::Lines));
    for at in points {
        kill_and_resume(&rt, at, &expected);
    }
}

#[test]
fn a_script_cut_off_by_the_kill_runs_again_only_when_asked() {
    let rt = runtime();
    let server = rt.block_on(model_server(Duration::ZERO, Arc::default()));
    let dir = scratch("journal", "script");
    let journal = dir.join("run.jsonl");
    let bundle = golden("script_between_llm_steps");
    let args = [
        "run",
        bundle.to_str().expect("path"),
        "--provider",
        "openai",
        "--journal",
        journal.to_str().expect("path"),
    ];
    let child = tvm(&args, &server)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    wait_for(|| {
        lines(&journal)
            .iter()
            .any(|r| r["event"] == "script_started")
    });
    kill(child);
    assert_eq!(server.hits(), 1);

    let resume = ["resume", journal.to_str().expect("path")];
    let (code, _, err) = finish(&mut tvm(&resume, &server));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("script_between_llm_steps#2") && err.contains("sleep 3; echo checked"),
        "{err}"
    );
    assert!(err.contains("--rerun-scripts"), "{err}");
    assert_eq!(
        server.hits(),
        1,
        "nothing is asked before the script question is settled"
    );

    let (code, out, err) = finish(&mut tvm(
        &[resume[0], resume[1], "--rerun-scripts"],
        &server,
    ));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("resumed: 1 answered from the journal, 2 made now"),
        "{err}"
    );
    let prompts: Vec<String> = server.requests().iter().map(prompt_of).collect();
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    assert!(
        prompts[1].starts_with("Summarise this check: checked line "),
        "{prompts:?}"
    );
    let r: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(r["status"], "COMPLETE");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_journal_is_refused_with_another_bundle_and_an_existing_journal_is_not_overwritten() {
    let rt = runtime();
    let server = rt.block_on(model_server(Duration::ZERO, Arc::default()));
    let dir = scratch("journal", "mismatch");
    let journal = dir.join("run.jsonl");
    let bundle = golden("incident_digest");
    let mut args = vec!["run", bundle.to_str().expect("path")];
    args.extend(DIGEST);
    args.push(journal.to_str().expect("path"));
    assert_eq!(finish(&mut tvm(&args, &server)).0, 0);
    let hits = server.hits();

    let (code, _, err) = finish(&mut tvm(&args, &server));
    assert_eq!(code, 2);
    assert!(
        err.contains("already exists") && err.contains("tvm resume"),
        "{err}"
    );

    let other = golden("code_review");
    let resume = [
        "resume",
        journal.to_str().expect("path"),
        "--bundle",
        other.to_str().expect("path"),
    ];
    let (code, _, err) = finish(&mut tvm(&resume, &server));
    assert_eq!(code, 2);
    assert!(
        err.contains("was written for a bundle with SHA-256"),
        "{err}"
    );
    assert_eq!(server.hits(), hits, "a refused journal makes no call");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_torn_last_line_is_dropped_and_the_run_finishes() {
    let rt = runtime();
    let server = rt.block_on(model_server(Duration::ZERO, Arc::default()));
    let dir = scratch("journal", "torn");
    let journal = dir.join("run.jsonl");
    let bundle = golden("incident_digest");
    let mut args = vec!["run", bundle.to_str().expect("path")];
    args.extend(DIGEST);
    args.push(journal.to_str().expect("path"));
    let (_, expected, _) = finish(&mut tvm(&args, &server));
    let text = std::fs::read_to_string(&journal).expect("journal");
    let cut = text.trim_end().rfind('\n').expect("several lines") + 40;
    std::fs::write(&journal, &text[..cut]).expect("tear the last line");
    let hits = server.hits();
    let (code, out, err) = finish(&mut tvm(
        &["resume", journal.to_str().expect("path")],
        &server,
    ));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, expected);
    assert_eq!(server.hits(), hits + 1, "only the torn call is made again");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unwritable_journal_or_a_device_stops_the_run_before_any_call() {
    let rt = runtime();
    let server = rt.block_on(model_server(Duration::ZERO, Arc::default()));
    let bundle = golden("incident_digest");
    for (path, expected) in [
        ("/nonexistent-folder/run.jsonl", "cannot create the journal"),
        // Not a file a journal can be kept in: refused before anything is written.
        (
            "/dev/full",
            "the journal /dev/full is a device, not a regular file",
        ),
    ] {
        let mut args = vec!["run", bundle.to_str().expect("path")];
        args.extend(DIGEST);
        args.push(path);
        let (code, out, err) = finish(&mut tvm(&args, &server));
        assert_eq!(code, 2, "{path}: {err}");
        assert!(err.contains(expected), "{path}: {err}");
        assert!(out.is_empty(), "{path}: {out}");
    }
    assert_eq!(server.hits(), 0);
}

/// A model server that refuses request `refused` (0-based) with a server error and
/// answers every other one after `delay`.
async fn refusing_server(refused: usize, delay: Duration) -> Server {
    Server::start(move |i, r| {
        if i == refused {
            return Reply::json(500, json!({"error": {"message": "overloaded"}}));
        }
        answer(r, delay)
    })
    .await
}

#[test]
fn a_resumed_run_makes_its_calls_as_the_run_did_unless_told_otherwise() {
    let rt = runtime();
    let dir = scratch("journal", "settings");
    let journal = dir.join("run.jsonl");
    let bundle = golden("incident_digest");
    let path = journal.to_str().expect("path");
    let mut args = vec!["run", bundle.to_str().expect("path")];
    args.extend(&DIGEST[..4]);
    args.extend([
        "--concurrency",
        "1",
        "--retries",
        "0",
        "--request-timeout",
        "30",
        "--journal",
        path,
    ]);
    // The second call is refused and, with no retries, its task fails.
    let server = rt.block_on(refusing_server(1, Duration::ZERO));
    assert_eq!(finish(&mut tvm(&args, &server)).0, 1);
    let header = lines(&journal).remove(0);
    assert_eq!(
        (
            &header["config"]["calls"]["concurrency"],
            &header["config"]["calls"]["retries"],
            &header["config"]["calls"]["request_timeout_secs"]
        ),
        (&json!(1), &json!(0), &json!(30)),
        "{header}"
    );

    // Resumed with nothing said: the run's settings. No retry, so the refused call
    // fails the run again, and calls go one at a time.
    let server = rt.block_on(refusing_server(0, Duration::from_millis(5)));
    let (code, out, err) = finish(&mut tvm(&["resume", path], &server));
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(server.hits(), 1, "one refused call, not retried");

    // Told to retry: the refused call is tried again and the run finishes, still one
    // call at a time.
    let server = rt.block_on(refusing_server(0, Duration::from_millis(5)));
    let (code, out, err) = finish(&mut tvm(&["resume", path, "--retries", "1"], &server));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(server.max_in_flight(), 1, "the run's concurrency");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_journal_whose_bundle_hash_holds_multibyte_characters_is_refused_with_a_message_not_a_panic() {
    let dir = scratch("journal", "multibyte");
    let journal = dir.join("run.jsonl");
    let path = journal.to_str().expect("path");
    let bundle = golden("incident_digest");
    let run = [
        "run",
        bundle.to_str().expect("path"),
        "--arg",
        "service=payments",
        "--provider",
        "echo",
        "--journal",
        path,
    ];
    let (code, _, err) = finish(&mut files::tvm(&run));
    assert_eq!(code, 0, "{err}");
    // Byte 16 of this hash falls inside an `é`: a cut by bytes there would panic.
    let forged = format!("a{}", "é".repeat(20));
    let text = std::fs::read_to_string(&journal).expect("journal");
    let (header, rest) = text.split_once('\n').expect("a header line");
    let mut header: Value = serde_json::from_str(header).expect("JSON");
    header["bundle_sha256"] = json!(forged);
    std::fs::write(&journal, format!("{header}\n{rest}")).expect("write");
    let (code, out, err) = finish(&mut files::tvm(&["resume", path]));
    assert_eq!(code, 2, "{out}\n{err}");
    let shown: String = forged.chars().take(16).collect();
    assert!(
        err.contains(&format!(
            "was written for a bundle with SHA-256 {shown}, but"
        )),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A journal as a tvm of journal format 1 wrote it (tests/fixtures/journals): refused
/// with what to do, before anything is loaded, and left as it was.
#[test]
fn a_journal_of_the_format_before_is_refused_with_what_to_do_and_left_as_it_was() {
    let dir = scratch("journal", "format-1");
    let journal = dir.join("old.jsonl");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/journals/format-1.jsonl");
    std::fs::copy(&fixture, &journal).expect("copied");
    let path = journal.to_str().expect("path");
    let (code, out, err) = finish(&mut files::tvm(&["resume", path]));
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert_eq!(
        err,
        format!(
            "tvm: error: {path} was written by an older tvm (journal format 1); this tvm \
             reads format 2: finish the run with the tvm that started it, or run it again\n"
        )
    );
    let kept = std::fs::read(&journal).expect("the journal");
    assert_eq!(kept, std::fs::read(&fixture).expect("the fixture"));
    let _ = std::fs::remove_dir_all(&dir);
}
