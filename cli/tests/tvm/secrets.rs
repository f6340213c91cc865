//! No API key leaves the process except in the request headers it is meant for: after
//! runs with known fake keys, successful or failed (a refused key the server echoes, an
//! unreachable server, a bad argument, a damaged bundle) and resumed, neither key nor
//! its first 12 characters is in the bundle, the journal, the trace, the cassette,
//! stdout or stderr of `tvm`, the `Debug` text of the settings, adapters, requests and
//! replies, or what a script can see of its environment.

use crate::support::files;
use crate::support::http;

use files::{golden, runtime, scratch};
use http::{Reply, Request, Server};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use tv_runtime::host::{AsyncHost, CallId};
use tv_runtime::host::{Choice, RunHost};
use tv_runtime::providers::{Anthropic, OpenAi, Settings};
use tv_runtime::script::ScriptRunner;
use tv_vm::bundle::{Bundle, Const};
use tv_vm::host::{HostReply, HostRequest};
use tv_vm::limits::Limits;
use tv_vm::result::Status;

const OPENAI_KEY: &str = "sk-secret-scan-0123456789abcdef";
const ANTHROPIC_KEY: &str = "sk-ant-secret-scan-fedcba9876543210";

/// Everything a run left behind, by name, to be scanned for the keys.
#[derive(Default)]
struct Scan(Vec<(String, String)>);

impl Scan {
    fn text(&mut self, name: &str, text: impl Into<String>) {
        self.0.push((name.to_string(), text.into()));
    }

    /// A file's bytes as text (lossily: a key is ASCII); a file never written is noted
    /// as such so that the test can tell it was not scanned.
    fn file(&mut self, path: &Path) {
        let text = std::fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned());
        self.text(&path.display().to_string(), text.unwrap_or_default());
    }

    fn assert_clean(&self) {
        for (name, text) in &self.0 {
            for key in [OPENAI_KEY, ANTHROPIC_KEY] {
                let leaks: Vec<&str> = text.lines().filter(|l| l.contains(&key[..12])).collect();
                assert!(
                    leaks.is_empty(),
                    "{name} holds (the start of) the key {key}: {leaks:?}"
                );
            }
        }
    }

    /// The text of one place scanned, to check that it was written at all.
    fn get(&self, name: &str) -> &str {
        let found = self.0.iter().find(|(n, _)| n.ends_with(name));
        found.map_or("", |(_, t)| t.as_str())
    }
}

/// `tvm` with both keys in its environment and both providers pointed at `url`.
fn tvm(args: &[&str], url: &str) -> Command {
    let mut cmd = files::tvm(args);
    cmd.env("OPENAI_API_KEY", OPENAI_KEY)
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env("OPENAI_BASE_URL", url)
        .env("ANTHROPIC_BASE_URL", url)
        .env("TVM_SECRETS_MARKER", "visible");
    cmd
}

/// Runs `tvm`, scans its stdout and stderr under `name`, and returns its exit code and
/// stdout.
fn finish(cmd: &mut Command, name: &str, scan: &mut Scan) -> (i32, String) {
    let out = cmd.output().expect("run tvm");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    scan.text(&format!("{name} stdout"), stdout.clone());
    scan.text(
        &format!("{name} stderr"),
        String::from_utf8_lossy(&out.stderr),
    );
    (out.status.code().unwrap_or(-1), stdout)
}

/// The key a request carried, in either wire format.
fn sent_key(r: &Request) -> &str {
    r.header("x-api-key")
        .or_else(|| {
            r.header("authorization")
                .and_then(|a| a.strip_prefix("Bearer "))
        })
        .unwrap_or("")
}

/// A model speaking both wire formats. Request `refuse` (if any) is answered 401 with a
/// message that echoes the key it was sent, as some servers and proxies do.
async fn model(refuse: Option<usize>) -> Server {
    Server::start(move |i, r| {
        if Some(i) == refuse {
            let message = format!("Incorrect API key provided: {}", sent_key(r));
            return Reply::json(401, json!({"error": {"message": message}}));
        }
        let body = r.json();
        let prompt = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        let text = if prompt.starts_with("Review the change") {
            r#"{"approved": true, "findings": []}"#.to_string()
        } else {
            format!("answer {i}")
        };
        if r.path == "/v1/messages" {
            let usage = json!({"input_tokens": 1, "output_tokens": 1});
            Reply::json(
                200,
                json!({"content": [{"type": "text", "text": text}], "usage": usage}),
            )
        } else {
            let message = json!({"role": "assistant", "content": text});
            let usage = json!({"prompt_tokens": 1, "completion_tokens": 1});
            Reply::json(
                200,
                json!({"choices": [{"message": message}], "usage": usage}),
            )
        }
    })
    .await
}

/// Request bodies as the server saw them (a prompt could carry a key to the model).
fn bodies(server: &Server) -> String {
    server.requests().iter().map(|r| r.body.as_str()).collect()
}

/// Runs `bundle` with `args`, has the server refuse request `refuse`, then resumes the
/// run; every file and output of both is scanned.
fn refused_then_resumed(name: &str, bundle: &Path, args: &[&str], refuse: usize, key: &str) {
    let rt = runtime();
    let server = rt.block_on(model(Some(refuse)));
    let dir = scratch("secrets", name);
    let path = |f: &str| dir.join(f).display().to_string();
    let (journal, trace, cassette) = (path("run.jsonl"), path("trace.jsonl"), path("rec.jsonl"));
    let mut run = vec!["run", bundle.to_str().expect("path")];
    run.extend(args);
    run.extend([
        "--journal",
        journal.as_str(),
        "--trace",
        &trace,
        "--record",
        &cassette,
    ]);
    let mut scan = Scan::default();
    let (code, stdout) = finish(&mut tvm(&run, &server.url()), "run", &mut scan);
    assert_eq!(code, 1, "{name}: {stdout}");
    let result: Value = serde_json::from_str(&stdout).expect("JSON");
    let message = result["notes"]["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("was refused (HTTP 401 Unauthorized")
            && message.contains("Incorrect API key provided: <redacted>"),
        "{name}: {message}"
    );
    let (trace2, cassette2) = (path("trace2.jsonl"), path("rec2.jsonl"));
    let resume = [
        "resume",
        journal.as_str(),
        "--trace",
        &trace2,
        "--record",
        &cassette2,
    ];
    let (code, stdout) = finish(&mut tvm(&resume, &server.url()), "resume", &mut scan);
    assert_eq!(code, 0, "{name}: {stdout}");
    for f in [&journal, &trace, &cassette, &trace2, &cassette2] {
        scan.file(Path::new(f));
    }
    scan.file(bundle);
    scan.text("request bodies", bodies(&server));
    scan.assert_clean();
    assert!(scan.get("trace.jsonl").contains("<redacted>"), "{name}");
    assert!(scan.get("run.jsonl").contains("answered"), "{name}");
    assert!(!scan.get("rec2.jsonl").is_empty(), "{name}");
    // The key was in play: the server was sent it, where it belongs.
    assert!(
        server.requests().iter().any(|r| sent_key(r) == key),
        "{name}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_refused_by_a_server_echoing_the_openai_key_and_its_resume_leave_no_key_anywhere() {
    // Request 4 is the first reduction step, after the four concurrent inner tasks.
    let args = ["--arg", "service=payments", "--provider", "openai"];
    let digest = golden("incident_digest");
    refused_then_resumed("digest", &digest, &args, 4, OPENAI_KEY);
}

#[test]
fn a_run_refused_by_a_server_echoing_the_anthropic_key_and_its_resume_leave_no_key_anywhere() {
    // The summary goes to OpenAI (its model is `openai:`), the review to Anthropic.
    let args = [
        "--entry",
        "review_pull_request",
        "--arg",
        "diff=+x",
        "--arg",
        "title=Add a flag",
        "--provider",
        "anthropic",
    ];
    let review = golden("code_review");
    refused_then_resumed("review", &review, &args, 1, ANTHROPIC_KEY);
}

#[test]
fn a_server_that_cannot_be_reached_leaves_no_key_in_the_error_or_the_files() {
    // A port nobody listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let dir = scratch("secrets", "unreachable");
    let path = |f: &str| dir.join(f).display().to_string();
    let (journal, trace, cassette) = (path("run.jsonl"), path("trace.jsonl"), path("rec.jsonl"));
    let bundle = golden("code_review");
    let mut args = files::summarize_change(bundle.to_str().expect("path"));
    args.extend_from_slice(&[
        "--provider",
        "openai",
        "--journal",
        &journal,
        "--trace",
        &trace,
        "--record",
        &cassette,
        "--retries",
        "2",
    ]);
    let mut scan = Scan::default();
    let (code, stdout) = finish(&mut tvm(&args, &url), "run", &mut scan);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("gave up after 3 attempts"), "{stdout}");
    for f in [&journal, &trace, &cassette] {
        scan.file(Path::new(f));
    }
    scan.assert_clean();
    assert!(scan.get("trace.jsonl").contains("\"outcome\":\"error\""));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_argument_or_a_damaged_bundle_is_refused_before_any_call_and_without_a_key() {
    let rt = runtime();
    let server = rt.block_on(model(None));
    let dir = scratch("secrets", "refused");
    let review = golden("code_review");
    let mut cut = std::fs::read(golden("incident_digest")).expect("golden");
    cut.truncate(cut.len() / 2);
    let truncated = dir.join("truncated.bin");
    std::fs::write(&truncated, &cut).expect("write");
    let trace = dir.join("trace.jsonl").display().to_string();
    let review_args = [
        "--entry",
        "review",
        "--arg",
        "diff=x",
        "--provider",
        "anthropic",
    ];
    let cases: [(&Path, &[&str], &str); 3] = [
        (
            &review,
            &["--arg", "checklist=[oops"],
            "`checklist` expects `string[]` (as JSON), got `[oops`",
        ),
        (
            &review,
            &["--arg", "checklist=[]", "--arg", "tone=x"],
            "has no parameter `tone`",
        ),
        (
            &truncated,
            &[],
            "the bundle is damaged: its header declares",
        ),
    ];
    let mut scan = Scan::default();
    for (i, (bundle, extra, expected)) in cases.into_iter().enumerate() {
        let mut args = vec!["run", bundle.to_str().expect("path")];
        args.extend(review_args);
        args.extend(extra);
        args.extend(["--trace", &trace]);
        let out = tvm(&args, &server.url()).output().expect("run tvm");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(2), "{i}: {stderr}");
        assert!(stderr.contains(expected), "{i}: {stderr}");
        assert!(stdout.is_empty(), "{i}: {stdout}");
        scan.text(&format!("case {i} stderr"), stderr.into_owned());
        scan.file(Path::new(&trace));
    }
    scan.file(&truncated);
    scan.assert_clean();
    assert_eq!(server.hits(), 0, "a refused run asks nothing");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A host that keeps the `Debug` text of every request and reply of a run.
struct Recording {
    host: RunHost,
    seen: Mutex<Vec<String>>,
}

impl AsyncHost for Recording {
    async fn call(&self, at: CallId<'_>, request: &HostRequest) -> HostReply {
        let reply = self.host.call(at, request).await;
        let shown = format!("{request:?}\n{request:#?}\n{reply:?}");
        self.seen.lock().expect("lock").push(shown);
        reply
    }
}

#[test]
fn settings_adapters_requests_and_replies_print_no_key_in_their_debug_text() {
    let rt = runtime();
    // Request 1, the review, is refused by Anthropic with its key echoed.
    let server = rt.block_on(model(Some(1)));
    let url = server.url();
    let var = |k: &str| match k {
        "OPENAI_API_KEY" => Some(OPENAI_KEY.to_string()),
        "ANTHROPIC_API_KEY" => Some(ANTHROPIC_KEY.to_string()),
        "OPENAI_BASE_URL" | "ANTHROPIC_BASE_URL" => Some(url.clone()),
        _ => None,
    };
    let (openai, anthropic) = (
        Settings::openai_from_vars(var),
        Settings::anthropic_from_vars(var),
    );
    assert_eq!(openai.api_key.as_deref(), Some(OPENAI_KEY));
    let mut scan = Scan::default();
    for s in [&openai, &anthropic] {
        let shown = format!("{s:?} {s:#?}");
        assert!(shown.contains("<redacted>"), "{shown}");
        scan.text("Settings", shown);
    }
    let openai = OpenAi::new(openai).expect("adapter");
    let anthropic = Anthropic::new(anthropic).expect("adapter");
    scan.text("adapters", format!("{openai:?} {anthropic:#?}"));
    let host = Recording {
        host: RunHost::with_adapters(
            Choice::Remote(tv_stdlib::models::Provider::Anthropic),
            Some(openai),
            Some(anthropic),
            ScriptRunner::default(),
        ),
        seen: Mutex::default(),
    };
    let bundle =
        Bundle::from_bytes(&std::fs::read(golden("code_review")).expect("golden")).expect("bundle");
    let (f, args) = bundle
        .entry_args(
            "review_pull_request",
            &json!({"diff": "+x", "title": "Add a flag"}),
        )
        .expect("entry");
    let result = rt
        .block_on(tv_runtime::Run::new(&bundle, f, args, Limits::default()).on(&host))
        .result;
    assert_eq!(result.status, Status::Failed, "{result:#}");
    scan.text("result", result.to_string());
    let seen = host.seen.into_inner().expect("lock");
    assert_eq!(seen.len(), 2, "the summary, then the refused review");
    assert!(seen[1].contains("Incorrect API key provided: <redacted>"));
    for (i, s) in seen.into_iter().enumerate() {
        scan.text(&format!("call {i}"), s);
    }
    scan.assert_clean();
}

/// `script_between_llm_steps` with its script's `sleep 3;` replaced by `env;`, so the
/// script prints every variable it was given before it echoes the first answer.
fn env_printing_bundle(dir: &Path) -> PathBuf {
    let mut b =
        Bundle::from_bytes(&std::fs::read(golden("script_between_llm_steps")).expect("golden"))
            .expect("bundle")
            .into_bundle();
    let mut replaced = 0;
    for c in &mut b.constants {
        if let Const::Str(s) = c {
            if s.starts_with("sleep 3; ") {
                *s = s.replacen("sleep 3; ", "env; ", 1);
                replaced += 1;
            }
        }
    }
    assert_eq!(replaced, 1, "the golden script changed: {:?}", b.constants);
    let path = dir.join("env.bin");
    std::fs::write(&path, b.to_bytes()).expect("write");
    path
}

#[test]
fn a_script_does_not_see_the_api_keys_so_its_output_cannot_carry_them() {
    let rt = runtime();
    let server = rt.block_on(model(None));
    let dir = scratch("secrets", "env");
    let bundle = env_printing_bundle(&dir);
    let journal = dir.join("run.jsonl").display().to_string();
    let trace = dir.join("trace.jsonl").display().to_string();
    let args = [
        "run",
        bundle.to_str().expect("path"),
        "--provider",
        "openai",
        "--journal",
        &journal,
        "--trace",
        &trace,
    ];
    let mut scan = Scan::default();
    let (code, stdout) = finish(&mut tvm(&args, &server.url()), "run", &mut scan);
    assert_eq!(code, 0, "{stdout}");
    scan.file(Path::new(&journal));
    scan.file(Path::new(&trace));
    scan.text("request bodies", bodies(&server));
    let script_output: Vec<String> = std::fs::read_to_string(&journal)
        .expect("journal")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["reply"]["kind"] == "script")
        .map(|r| r["reply"]["stdout"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(script_output.len(), 1);
    // The script saw the environment (the marker), just not the keys.
    let env = &script_output[0];
    let lines = env.lines().count();
    assert!(env.contains("TVM_SECRETS_MARKER=visible"), "{lines} lines");
    assert!(env.contains("OPENAI_BASE_URL="), "{lines} lines");
    let keys: Vec<&str> = env.lines().filter(|l| l.contains("_API_KEY=")).collect();
    assert!(keys.is_empty(), "the script saw {keys:?}");
    scan.assert_clean();
    assert_eq!(server.hits(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}
