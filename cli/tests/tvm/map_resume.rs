//! A map killed part-way resumes without starting again the bodies that had finished:
//! `tvm run --journal` over a map of twelve bodies, three at once, against a server on
//! 127.0.0.1 that answers each after a delay of its own (so bodies finish out of
//! order), killed with SIGKILL at many points, then `tvm resume`.

use crate::support::files::{self, runtime, scratch, wait_for};
use crate::support::http::{Reply, Request, Server};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const ITEMS: usize = 12;

const PROGRAM: &str = r#"<library>
  <task name="survey" type="sequential">
    <inputs><input name="topics" type="string[]">What to look at</input></inputs>
    <steps>
      <task type="map" over="topics" as="topic" concurrency="3">
        <task><instructions>Look at {{topic}} ({{index}}).</instructions></task>
      </task>
      <task><instructions>Sum up {{json(output)}}</instructions></task>
    </steps>
  </task>
</library>"#;

/// Each body's reply names its prompt; the later items answer sooner, so bodies end
/// out of order.
fn answer(r: &Request) -> Reply {
    let prompt = r.prompt();
    let n = prompt
        .split(['(', ')'])
        .nth(1)
        .and_then(|i| i.parse::<u64>().ok())
        .unwrap_or(0);
    let delay = Duration::from_millis(20 + 10 * (ITEMS as u64 - n.min(ITEMS as u64)));
    let body = json!({"choices": [{"message": {"role": "assistant", "content": format!("seen: {prompt}")}}],
                      "usage": {"prompt_tokens": 3, "completion_tokens": 2}});
    Reply::json(200, body).after(delay)
}

fn topics() -> String {
    let all: Vec<String> = (0..ITEMS).map(|i| format!("topic-{i}")).collect();
    format!("topics={}", serde_json::to_string(&all).expect("json"))
}

fn tvm(args: &[&str], server: &Server) -> Command {
    let mut cmd = files::tvm(args);
    cmd.env("OPENAI_BASE_URL", server.url())
        .env("OPENAI_API_KEY", "sk-map-resume-test-0123456789");
    cmd
}

fn output(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().expect("run tvm");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

fn records(journal: &Path) -> Vec<Value> {
    std::fs::read_to_string(journal)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn a_map_killed_at_any_point_resumes_without_repeating_a_finished_body() {
    let rt = runtime();
    let dir = scratch("map_resume", "whole");
    let bundle = files::compiled(&dir, PROGRAM);
    let bundle = bundle.to_str().expect("path");
    let arg = topics();
    let run = [
        "run",
        bundle,
        "--entry",
        "survey",
        "--arg",
        &arg,
        "--provider",
        "openai",
    ];

    let server = rt.block_on(Server::start(|_, r| answer(r)));
    let (code, expected, err) = output(&mut tvm(&run, &server));
    assert_eq!(code, 0, "{err}");
    assert_eq!(server.hits(), ITEMS + 1);
    let result: Value = serde_json::from_str(&expected).expect("json");
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|c| c.contains("topic-0") && c.contains("topic-11")),
        "the last step saw every body's value in order: {result}"
    );

    for kill_at in [1, 2, 3, 4, 6, 8, 10, 12, 13] {
        let journal = dir.join(format!("run{kill_at}.jsonl"));
        let arrived = Arc::new(AtomicUsize::new(0));
        let counted = arrived.clone();
        let server = rt.block_on(Server::start(move |_, r| {
            counted.fetch_add(1, Ordering::SeqCst);
            answer(r)
        }));
        let mut args = run.to_vec();
        args.extend(["--journal", journal.to_str().expect("path")]);
        let mut child = tvm(&args, &server)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        wait_for(|| arrived.load(Ordering::SeqCst) >= kill_at);
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");

        let kept = records(&journal);
        let finished: Vec<String> = kept
            .iter()
            .filter(|r| r["event"] == "answered")
            .filter_map(|r| r["reply"]["content"].as_str())
            .map(String::from)
            .collect();
        let before = server.settled_hits();
        let resume = ["resume", journal.to_str().expect("path")];
        let (code, out, err) = output(&mut tvm(&resume, &server));
        assert_eq!(code, 0, "killed at {kill_at}: {err}");
        assert_eq!(
            out, expected,
            "killed at {kill_at}: the resumed run ends differently"
        );
        for r in &server.requests()[before..] {
            let again = format!("seen: {}", r.prompt());
            assert!(
                !finished.contains(&again),
                "killed at {kill_at}: a finished call was made again: {}",
                r.prompt()
            );
        }
        assert_eq!(
            server.hits() - before + finished.len(),
            ITEMS + 1,
            "killed at {kill_at}: every call made exactly once over both runs"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_resumed_map_takes_finished_bodies_from_the_journal_without_running_them() {
    let rt = runtime();
    let dir = scratch("map_resume", "bodies");
    let bundle = files::compiled(&dir, PROGRAM);
    let journal = dir.join("run.jsonl");
    let arg = topics();
    let server = rt.block_on(Server::start(|_, r| answer(r)));
    let run = [
        "run",
        bundle.to_str().expect("path"),
        "--entry",
        "survey",
        "--arg",
        &arg,
        "--provider",
        "openai",
        "--journal",
        journal.to_str().expect("path"),
    ];
    let (code, _, err) = output(&mut tvm(&run, &server));
    assert_eq!(code, 0, "{err}");
    let bodies = records(&journal)
        .iter()
        .filter(|r| r["event"] == "body_ended")
        .count();
    assert_eq!(bodies, ITEMS, "each finished body is in the journal");
    let _ = std::fs::remove_dir_all(&dir);
}
