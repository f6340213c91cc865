//! The bounds as `tvm` users meet them, with real `tvm` processes and a model server on
//! 127.0.0.1: `--max-reply-bytes` fails a call whose reply is too large and is kept by the
//! journal for `tvm resume`; `--allow-read` names paths that must exist and is kept by
//! the journal too; and one process at a time on a journal (DESIGN §18): while a run is
//! under way, a second `run --journal` or `resume` on the same file exits 2 naming the
//! holder, makes no call, and leaves a journal that resumes to the run's own result.

use crate::support::files;
use crate::support::http;

use files::{golden, runtime, scratch};
use http::{Reply, Server};
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tvm(args: &[&str], server: &Server) -> Command {
    let mut cmd = files::tvm(args);
    cmd.env("OPENAI_BASE_URL", server.url())
        .env("OPENAI_API_KEY", "sk-cli-bounds-key");
    cmd
}

fn finish(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().expect("run tvm");
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        text(out.stdout),
        text(out.stderr),
    )
}

fn error_message(stdout: &str) -> String {
    let result: Value = serde_json::from_str(stdout).expect("a TaskResult");
    result["notes"]["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn an_endless_reply_fails_the_run_at_max_reply_bytes_and_a_resume_keeps_the_cap() {
    let rt = runtime();
    let server = rt.block_on(Server::scripted(vec![Reply::Endless { status: 200 }]));
    let dir = scratch("cli_bounds", "reply");
    let journal = dir.join("run.jsonl");
    let (bundle, path) = (golden("incident_digest"), journal.to_str().expect("path"));
    let run = [
        "run",
        bundle.to_str().expect("path"),
        "--arg",
        "service=payments",
        "--provider",
        "openai",
        "--max-reply-bytes",
        "4096",
        "--journal",
        path,
    ];
    let (code, out, err) = finish(&mut tvm(&run, &server));
    assert_eq!(code, 1, "{err}");
    let message = error_message(&out);
    assert!(
        message.contains("4096 bytes") && message.contains("--max-reply-bytes"),
        "{out}"
    );
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&journal)
            .expect("journal")
            .lines()
            .next()
            .expect("header"),
    )
    .expect("JSON");
    assert_eq!(header["config"]["calls"]["max_reply_bytes"], 4096);

    let (code, out, err) = finish(&mut tvm(&["resume", path], &server));
    assert_eq!(code, 1, "{err}");
    assert!(error_message(&out).contains("4096 bytes"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn allow_read_names_a_path_that_must_exist_and_the_journal_keeps_it_resolved() {
    let rt = runtime();
    let server = rt.block_on(Server::scripted(vec![Reply::Drop]));
    let dir = scratch("cli_bounds", "allow");
    let bundle = golden("incident_digest");
    let mut run = vec![
        "run",
        bundle.to_str().expect("path"),
        "--arg",
        "service=payments",
        "--provider",
        "echo",
    ];
    let (code, _, err) = finish(&mut tvm(
        &[&run[..], &["--allow-read", "/no/such/folder"]].concat(),
        &server,
    ));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--allow-read /no/such/folder"), "{err}");

    let journal = dir.join("run.jsonl");
    let allowed = dir.join("notes");
    std::fs::create_dir_all(&allowed).expect("folder");
    let linked = dir.join("link");
    std::os::unix::fs::symlink(&allowed, &linked).expect("link");
    run.extend(["--allow-read", linked.to_str().expect("path"), "--journal"]);
    run.push(journal.to_str().expect("path"));
    let (code, _, err) = finish(&mut tvm(&run, &server));
    assert_eq!(code, 0, "{err}");
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&journal)
            .expect("journal")
            .lines()
            .next()
            .expect("header"),
    )
    .expect("JSON");
    let kept = allowed.canonicalize().expect("resolved");
    assert_eq!(
        header["config"]["context"]["allow_read"][0],
        kept.to_str().expect("path")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_second_process_on_a_journal_in_use_exits_2_naming_the_holder_and_makes_no_call() {
    let rt = runtime();
    // Slow replies keep the first run inside its calls while the others try.
    let server = rt.block_on(Server::start(|_, _| {
        let body = json!({"choices": [{"message": {"role": "assistant", "content": "fine"}}],
                          "usage": {"prompt_tokens": 3, "completion_tokens": 2}});
        Reply::json(200, body).after(Duration::from_millis(700))
    }));
    let dir = scratch("journal_lock", "held");
    let journal = dir.join("run.jsonl");
    let (bundle, path) = (golden("incident_digest"), journal.to_str().expect("path"));
    let run = [
        "run",
        bundle.to_str().expect("path"),
        "--arg",
        "service=payments",
        "--provider",
        "openai",
        "--journal",
        path,
    ];
    let first = tvm(&run, &server)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("first tvm");
    let started = Instant::now();
    while server.hits() == 0 {
        assert!(started.elapsed() < Duration::from_secs(20), "no call came");
        std::thread::sleep(Duration::from_millis(5));
    }
    let holder = format!("pid {}", first.id());
    // The others get a server of their own: any call they made would show there, however
    // many calls the first run makes meanwhile on a loaded machine.
    let others = rt.block_on(Server::start(|_, _| Reply::json(500, json!({}))));
    for second in [&run[..], &["resume", path][..]] {
        let (code, out, err) = finish(&mut tvm(second, &others));
        assert_eq!(code, 2, "{second:?}: {err}");
        assert!(
            err.contains("is in use by") && err.contains(&holder),
            "{err}"
        );
        assert!(out.is_empty(), "{out}");
        assert_eq!(others.hits(), 0, "{second:?} made a call");
    }
    let output = first.wait_with_output().expect("first tvm ends");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let calls = server.hits();

    // The journal is whole: a resume answers everything from it and calls nothing.
    let (code, out, err) = finish(&mut tvm(&["resume", path], &server));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.as_bytes(), output.stdout, "the run's own result");
    assert!(
        err.contains("made now") && err.contains(" 0 made now"),
        "{err}"
    );
    assert_eq!(server.hits(), calls);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_recorded_reply_larger_than_max_reply_bytes_fails_its_replayed_call_as_the_provider_would() {
    let rt = runtime();
    let long = "x".repeat(6000);
    let server = rt.block_on(Server::scripted(vec![Reply::completion(&long, 3, 2)]));
    let dir = scratch("cli_bounds", "replay");
    let cassette = dir.join("replies.jsonl");
    let bundle = golden("incident_digest");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            bundle.to_str().expect("path"),
            "--arg",
            "service=payments",
        ];
        args.extend_from_slice(extra);
        finish(&mut tvm(&args, &server))
    };
    let (code, _, err) = run(&[
        "--provider",
        "openai",
        "--record",
        cassette.to_str().expect("path"),
    ]);
    assert_eq!(code, 0, "{err}");
    let cap = ["--max-reply-bytes", "4096"];
    let (code, out, err) = run(&[&["--provider", "openai"][..], &cap].concat());
    assert_eq!(code, 1, "{err}");
    let sent = error_message(&out);
    let replay = [
        "--provider",
        "replay",
        "--cassette",
        cassette.to_str().expect("path"),
    ];
    let (code, out, err) = run(&[&replay[..], &cap].concat());
    assert_eq!(code, 1, "{err}");
    let replayed = error_message(&out);
    let words = "the reply is larger than the limit of 4096 bytes (--max-reply-bytes); \
                 reading stopped there";
    assert!(sent.ends_with(&format!("openai: {words}")), "{sent}");
    assert_eq!(replayed, sent.replace("openai: ", "replay: "));
    // Within the cap, the same cassette replays.
    let (code, out, err) = run(&replay);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&long), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
