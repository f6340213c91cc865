//! What a new user meets first with `tvm run`: a run of scripts without any provider,
//! arguments checked before anything runs, run defaults and `--force-model` in the
//! request, the run's usage in the result, and pipes closed early.

use crate::support::files;
use crate::support::http;

use http::{Reply, Server};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::Stdio;

use files::run_tvm as run;

fn path(name: &str) -> String {
    files::golden(name).to_string_lossy().into_owned()
}

#[test]
fn a_run_of_scripts_needs_no_provider_and_its_script_gets_the_declared_inputs() {
    let bundle = path("scripts_only");
    let (code, stdout, stderr) = run(&["run", &bundle, "--arg", "who=ada"], &[]);
    assert_eq!(code, 0, "{stderr}");
    let r: Value = serde_json::from_str(&stdout).expect("a result");
    assert_eq!(r["content"], r#"hello ada, stdin {"who":"ada"}"#);
    assert_eq!(r["notes"]["usage"]["calls"], 0);
}

#[test]
fn arguments_and_the_workspace_are_checked_before_anything_runs() {
    let (scripts, review) = (path("scripts_only"), path("code_review"));
    let dir = files::scratch("first-run", "checks");
    let marker = dir.join("ran");
    let cases: &[(&str, &[&str], &str)] = &[
        (
            &scripts,
            &["--arg", "who=a", "--arg", "who=b"],
            "--arg who is given twice",
        ),
        (
            &scripts,
            &["--arg", "who=a", "--args-json", r#"{"who": "b"}"#],
            "`who` is given by both --arg and --args-json",
        ),
        (
            &review,
            &[
                "--entry",
                "review",
                "--args-json",
                r#"{"diff": "+x", "checklist": [1, 2]}"#,
            ],
            "`checklist` expects `string[]` (as JSON), got `[1,2]`",
        ),
        (
            &scripts,
            &["--arg", "who=@/dev/zero"],
            "--arg who=@/dev/zero: is a device, not a regular file",
        ),
        (
            &scripts,
            &["--arg", "who=a", "--workspace", "/no/such/folder"],
            "--workspace /no/such/folder: no such directory",
        ),
    ];
    for (bundle, extra, expected) in cases {
        let mut args = vec![
            "run",
            bundle,
            "--provider",
            "echo",
            "--trace",
            marker.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = run(&args, &[]);
        assert_eq!(code, 2, "{extra:?}: {stderr}");
        assert!(stderr.contains(expected), "{extra:?}: {stderr}");
        assert!(
            stdout.is_empty() && !marker.exists(),
            "{extra:?} ran something"
        );
    }
}

#[test]
fn run_defaults_and_a_forced_model_reach_the_request_and_the_trace_shows_what_was_sent() {
    let rt = files::runtime();
    let reply = json!({"model": "local-7b", "choices": [{"message": {"role": "assistant", "content": "Fine."}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 7, "completion_tokens": 3}});
    let server = rt.block_on(Server::scripted(vec![Reply::json(200, reply)]));
    let dir = files::scratch("first-run", "defaults");
    let trace = dir.join("trace.jsonl");
    let bundle = path("code_review");
    let mut args = files::summarize_change(&bundle);
    let trace_arg = trace.to_string_lossy().into_owned();
    args.extend_from_slice(&[
        "--provider",
        "openai",
        "--temperature",
        "0.3",
        "--seed",
        "11",
        "--max-output-tokens",
        "200",
        "--force-model",
        "openai:local-7b",
        "--trace",
        &trace_arg,
    ]);
    let url = format!("{}/v1", server.url());
    let (code, stdout, stderr) = run(&args, &[("OPENAI_BASE_URL", &url)]);
    assert_eq!(code, 0, "{stderr}");
    let [sent] = &server.requests()[..] else {
        panic!("one request expected")
    };
    let body = sent.json();
    let settings = ["model", "temperature", "seed", "max_tokens"].map(|k| body[k].clone());
    assert_eq!(
        settings,
        [json!("local-7b"), json!(0.3), json!(11), json!(200)]
    );
    let r: Value = serde_json::from_str(&stdout).expect("a result");
    let usage = &r["notes"]["usage"];
    assert_eq!(
        (usage["calls"].as_u64(), usage["inputTokens"].as_u64()),
        (Some(1), Some(7))
    );
    let line: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert_eq!(line["model"], "local-7b");
    assert_eq!(line["settings"]["temperature"], 0.3);
    assert!(
        line["system"]
            .as_str()
            .is_some_and(|s| s.contains("senior engineer")),
        "{line}"
    );
}

#[test]
fn a_range_the_flags_cannot_take_is_refused() {
    let bundle = path("scripts_only");
    for (flag, value) in [
        ("--temperature", "2.5"),
        ("--max-output-tokens", "0"),
        ("--max-memory", "12XB"),
        ("--max-memory", "0"),
        ("--concurrency", "0"),
        ("--request-timeout", "0"),
        ("--timeout", "0"),
        ("--max-instructions", "0"),
        ("--max-call-depth", "0"),
    ] {
        let (code, _, stderr) = run(&["run", &bundle, "--arg", "who=a", flag, value], &[]);
        assert_eq!(code, 2, "{flag}: {stderr}");
        assert!(stderr.contains(flag), "{stderr}");
    }
}

/// `--concurrency 0` was taken as 1 by `tvm run`, `resume` and `batch`; it is refused by
/// each, as are the other counts with which nothing could run.
#[test]
fn a_count_of_zero_is_refused_by_run_resume_and_batch_before_anything_is_read() {
    let bundle = path("scripts_only");
    let dir = files::scratch("first-run", "zero");
    let missing = dir.join("nothing-here");
    let missing = missing.to_str().expect("path");
    let commands: [&[&str]; 3] = [
        &["run", &bundle, "--arg", "who=a"],
        &["resume", missing],
        &["batch", &bundle, "--inputs", missing, "--out", missing],
    ];
    for command in commands {
        for flag in ["--concurrency", "--request-timeout"] {
            let args: Vec<&str> = command.iter().copied().chain([flag, "0"]).collect();
            let (code, _, stderr) = run(&args, &[]);
            assert_eq!(code, 2, "{args:?}: {stderr}");
            assert!(
                stderr.contains(&format!("invalid value '0' for '{flag}")),
                "{args:?}: {stderr}"
            );
        }
    }
    assert!(!std::path::Path::new(missing).exists());
}

/// `tvm run` of the code-review bundle's `summarize_change`, with the echo provider, on a
/// diff of `lines` lines written into a scratch folder named `name`.
fn big_change(name: &str, lines: usize) -> Vec<String> {
    let diff = files::scratch("first-run", name).join("big.diff");
    std::fs::write(&diff, "+ a line of a large change\n".repeat(lines)).unwrap();
    let bundle = path("code_review");
    let arg = format!("diff=@{}", diff.display());
    ["run", &bundle, "--entry", "summarize_change", "--arg", &arg]
        .into_iter()
        .chain(["--arg", "audience=ops", "--provider", "echo"])
        .map(str::to_string)
        .collect()
}

/// A result larger than a pipe's buffer, read one line at a time by a reader that stops
/// after the first (as `| head -1` does).
#[test]
fn a_reader_that_stops_early_ends_tvm_quietly_with_the_runs_exit_code() {
    let owned = big_change("pipe", 20_000);
    let args: Vec<&str> = owned.iter().map(String::as_str).collect();
    let mut child = files::tvm(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tvm starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "{\n");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn closed_stdout_and_stderr_end_tvm_without_a_panic() {
    let bundle = path("code_review");
    for args in [
        vec!["disasm", bundle.as_str()],
        vec!["run", bundle.as_str()],
    ] {
        let mut child = files::tvm(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tvm starts");
        // Both readers go away before tvm writes anything.
        drop(child.stdout.take());
        drop(child.stderr.take());
        let code = child.wait().unwrap().code();
        let expected = if args[0] == "disasm" { 0 } else { 2 };
        assert_eq!(code, Some(expected), "{args:?}");
    }
}

#[test]
fn a_run_whose_values_outgrow_max_memory_fails_with_resource_memory() {
    let mut owned = big_change("memory", 10_000);
    owned.extend(["--max-memory".to_string(), "64KiB".to_string()]);
    let args: Vec<&str> = owned.iter().map(String::as_str).collect();
    let (code, stdout, stderr) = run(&args, &[]);
    assert_eq!(code, 1, "{stderr}");
    let r: Value = serde_json::from_str(&stdout).expect("a result");
    assert_eq!(r["notes"]["error"]["resource"], "memory", "{r:#}");
    assert_eq!(r["notes"]["error"]["metrics"]["limit"], 64 << 10);
}
