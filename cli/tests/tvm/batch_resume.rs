//! Stopping `tvm batch` with SIGKILL and running the same command again (DESIGN §16):
//! finished rows are skipped, unfinished ones resume from their journals, and no call
//! whose answer was kept is sent again; checked against the server's log.

use super::batch::PROGRAM;
use crate::support::files::{self, run_tvm, runtime, scratch};
use crate::support::http::{Reply, Request, Server};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A server that echoes the prompt after `ms` milliseconds, so what it answered can be
/// found in a journal.
pub(crate) async fn slow_echo(ms: u64) -> Server {
    Server::start(move |_, r| {
        Reply::completion(&format!("seen: {}", r.prompt()), 10, 2).after(Duration::from_millis(ms))
    })
    .await
}

#[test]
fn a_killed_batch_run_again_skips_finished_rows_and_repeats_no_finished_call() {
    let rt = runtime();
    let server = rt.block_on(slow_echo(60));
    let dir = scratch("batch", "killed");
    let (args, out) = openai_batch(&dir, 12);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let url = server.url();
    let mut child = files::tvm(&args)
        .env("OPENAI_BASE_URL", &url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start tvm");
    files::wait_for(|| std::fs::read_to_string(&out).is_ok_and(|t| t.lines().count() >= 4));
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let asked = server.requests();
    let sent_before = asked.len();
    let answered = kept(&dir, &out, &asked);
    assert!(!answered.is_empty());

    let (code, _, stderr) = run_tvm(&args, &[("OPENAI_BASE_URL", url.as_str())]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<Value> = std::fs::read_to_string(&out)
        .expect("results")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a whole JSON line"))
        .collect();
    let mut indices: Vec<u64> = lines.iter().filter_map(|l| l["index"].as_u64()).collect();
    indices.sort_unstable();
    assert_eq!(indices, (0..12).collect::<Vec<_>>(), "every row once");
    assert!(lines.iter().all(|l| l["status"] == "COMPLETE"));
    let again: Vec<String> = server.requests()[sent_before..]
        .iter()
        .map(Request::prompt)
        .collect();
    for p in &answered {
        assert!(
            !again.contains(p),
            "`{p}` was answered before the kill and asked again"
        );
    }
    assert_eq!(
        state_files(&dir),
        ["batch.json"],
        "a batch that finished keeps only its batch.json"
    );
    assert!(
        stderr.contains("12 rows: 12 completed, 0 failed"),
        "{stderr}"
    );
}

#[test]
fn a_stopped_batch_over_rows_since_edited_is_refused_rather_than_resumed() {
    let rt = runtime();
    let server = rt.block_on(slow_echo(2_000));
    let dir = scratch("batch", "edited");
    let bundle = files::compiled(&dir, PROGRAM);
    let (inputs, out) = (dir.join("rows.jsonl"), dir.join("results.jsonl"));
    std::fs::write(&inputs, r#"{"notes": ["a"]}"#).expect("write the rows");
    let args = [
        "batch",
        bundle.to_str().expect("path"),
        "--inputs",
        inputs.to_str().expect("path"),
        "--out",
        out.to_str().expect("path"),
        "--provider",
        "openai",
    ];
    let url = server.url();
    let mut child = files::tvm(&args)
        .env("OPENAI_BASE_URL", &url)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start tvm");
    files::wait_for(|| server.hits() > 0);
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    std::fs::write(&inputs, r#"{"notes": ["b"]}"#).expect("edit the rows");
    let (code, _, stderr) = run_tvm(&args, &[("OPENAI_BASE_URL", url.as_str())]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("belongs to a batch of another bundle, entry point or inputs"),
        "{stderr}"
    );
}

/// The arguments of `tvm batch` over `rows` rows of [`PROGRAM`] in `dir`, three at once
/// through the OpenAI adapter, and its results file.
pub(crate) fn openai_batch(dir: &Path, rows: usize) -> (Vec<String>, PathBuf) {
    let bundle = files::compiled(dir, PROGRAM);
    let (inputs, out) = (dir.join("rows.jsonl"), dir.join("results.jsonl"));
    let lines: Vec<String> = (0..rows)
        .map(|i| format!(r#"{{"notes": ["n{i:02}"]}}"#))
        .collect();
    std::fs::write(&inputs, lines.join("\n")).expect("write the rows");
    let path = |p: &Path| p.to_str().expect("path").to_string();
    let args = [
        "batch",
        &path(&bundle),
        "--inputs",
        &path(&inputs),
        "--out",
        &path(&out),
    ]
    .into_iter()
    .chain(["--provider", "openai", "--concurrency", "3"])
    .map(str::to_string)
    .collect();
    (args, out)
}

/// The prompts among `asked` whose answers a stopped batch kept: in a row's journal, or
/// in a finished row (whose result holds both its calls' prompts).
pub(crate) fn kept(dir: &Path, out: &Path, asked: &[Request]) -> Vec<String> {
    let journals: String = std::fs::read_dir(dir.join("results.jsonl.state"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "journal"))
        .map(|e| whole_lines(std::fs::read_to_string(e.path()).unwrap_or_default()))
        .collect();
    let finished = whole_lines(std::fs::read_to_string(out).unwrap_or_default());
    // As the prompt appears inside a JSON string.
    let escaped = |text: &str| {
        let quoted = serde_json::to_string(text).expect("a string");
        quoted[1..quoted.len() - 1].to_string()
    };
    asked
        .iter()
        .map(Request::prompt)
        .filter(|p| {
            journals.contains(&escaped(&format!("seen: {p}"))) || finished.contains(&escaped(p))
        })
        .collect()
}

/// `text` without a last line that the kill cut short: a journal and the results drop
/// such a line when they are read again, so what it holds was not kept.
fn whole_lines(mut text: String) -> String {
    text.truncate(text.rfind('\n').map_or(0, |i| i + 1));
    text
}

/// A number from `seed`, advanced (xorshift64*): random kill points that a failure's
/// message can repeat.
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed >> 12;
    *seed ^= *seed << 25;
    *seed ^= *seed >> 27;
    seed.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// Waits until `child` exits (its code) or `after` has passed (`None`).
fn exit_within(child: &mut Child, after: Duration) -> Option<i32> {
    let started = Instant::now();
    while started.elapsed() < after {
        if let Some(status) = child.try_wait().expect("wait") {
            return Some(status.code().unwrap_or(-1));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

#[test]
fn a_batch_killed_at_random_points_until_it_ends_repeats_no_call_whose_answer_it_kept() {
    const ROWS: usize = 20;
    const MOST_KILLS: usize = 8;
    let rt = runtime();
    let server = rt.block_on(slow_echo(30));
    let dir = scratch("batch", "random-kills");
    let (args, out) = openai_batch(&dir, ROWS);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let url = server.url();
    let mut seed = std::env::var("TVM_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let t = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock");
            t.as_nanos() as u64 | 1
        });
    let first_seed = seed;
    // For each kill: the requests the server had seen then, and the prompts kept.
    let mut kills: Vec<(usize, Vec<String>)> = Vec::new();
    let code = loop {
        let mut child = files::tvm(&args)
            .env("OPENAI_BASE_URL", &url)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start tvm");
        if kills.len() == MOST_KILLS {
            break child.wait().expect("wait").code().unwrap_or(-1);
        }
        let at = Duration::from_millis(next(&mut seed) % 300);
        if let Some(code) = exit_within(&mut child, at) {
            break code;
        }
        child.kill().expect("SIGKILL");
        let _ = child.wait();
        let asked = server.requests();
        kills.push((asked.len(), kept(&dir, &out, &asked)));
    };
    let why = format!("TVM_TEST_SEED={first_seed}, {} kills", kills.len());
    assert_eq!(code, 0, "{why}");
    let lines: Vec<Value> = std::fs::read_to_string(&out)
        .expect("results")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{why}: a torn line: {e}")))
        .collect();
    let mut indices: Vec<u64> = lines.iter().filter_map(|l| l["index"].as_u64()).collect();
    indices.sort_unstable();
    assert_eq!(
        indices,
        (0..ROWS as u64).collect::<Vec<_>>(),
        "{why}: every row once"
    );
    assert!(lines.iter().all(|l| l["status"] == "COMPLETE"), "{why}");
    let all = server.requests();
    for (k, (seen, kept)) in kills.iter().enumerate() {
        for later in &all[*seen..] {
            let p = later.prompt();
            assert!(
                !kept.contains(&p),
                "{why}: `{p}`, kept at kill {k}, was asked again"
            );
        }
    }
    assert_eq!(state_files(&dir), ["batch.json"], "{why}");
}

/// The names in the default state folder of the batch in `dir`, sorted.
pub(crate) fn state_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("results.jsonl.state"))
        .expect("the state folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A row journal left in a batch's state folder by a tvm of journal format 1
/// (tests/fixtures/journals): the row is not resumed from it but fails, saying what to
/// do, and the journal is left as it was.
#[test]
fn a_row_journal_of_the_format_before_fails_its_row_with_what_to_do() {
    let dir = scratch("batch", "format-1");
    let bundle = files::compiled(&dir, PROGRAM);
    let (inputs, out) = (dir.join("rows.jsonl"), dir.join("results.jsonl"));
    std::fs::write(&inputs, "{\"notes\": [\"a\"]}\n{\"notes\": [\"b\"]}\n").expect("rows");
    let path = |p: &Path| p.to_str().expect("path").to_string();
    let args = [
        "batch",
        &path(&bundle),
        "--inputs",
        &path(&inputs),
        "--out",
        &path(&out),
        "--provider",
        "echo",
    ];
    let (code, _, stderr) = run_tvm(&args, &[]);
    assert_eq!(code, 0, "{stderr}");
    // As if the batch had stopped with row 1 in flight, under an older tvm.
    let first: String = std::fs::read_to_string(&out)
        .expect("results")
        .lines()
        .filter(|l| l.contains("\"index\":0"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&out, first).expect("row 1 unfinished");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/journals/format-1.jsonl");
    let journal = dir.join("results.jsonl.state/1.journal");
    std::fs::copy(&fixture, &journal).expect("the old journal");

    let (code, _, stderr) = run_tvm(&args, &[]);
    assert_eq!(code, 1, "{stderr}");
    let lines: Vec<Value> = std::fs::read_to_string(&out)
        .expect("results")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let row = lines
        .iter()
        .find(|l| l["index"] == 1)
        .expect("row 1's line");
    assert_eq!(row["status"], "FAILED", "{row}");
    let said = format!(
        "{} was written by an older tvm (journal format 1); this tvm reads format 2: finish \
         the run with the tvm that started it, or run it again",
        journal.display()
    );
    assert!(row.to_string().contains(&said), "{row}");
    assert_eq!(std::fs::read(&journal).ok(), std::fs::read(&fixture).ok());
}
