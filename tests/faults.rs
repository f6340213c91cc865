//! Faults in the middle of real workflows: a provider that refuses, drops, garbles or
//! never answers one step's request, and scripts that hang, leave children behind,
//! flood their output or print bytes that are not UTF-8. Each test compiles a sequence,
//! runs it through `RunHost` against the scripted HTTP server on 127.0.0.1 (OpenAI wire
//! format) with scripts as real processes, and checks exactly how the run ends, which
//! steps ran and what the server was asked. (A damaged bundle given to `tvm` is covered
//! by `cli/tests/tvm/cli.rs` and `cli/tests/tvm/secrets.rs`.)

use crate::http;

use http::{Reply, Server};
use serde_json::{json, Value};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tv_runtime::host::{AsyncHost, CallId};
use tv_runtime::host::{Choice, RunHost};
use tv_runtime::providers::{OpenAi, Settings};
use tv_runtime::script::ScriptRunner;
use tv_tests::bundle_of;
use tv_vm::host::{HostReply, HostRequest, ScriptReply};
use tv_vm::limits::Limits;

/// Four steps, each quoting the answer to the one before.
const FOUR_STEPS: &str = r#"<task name="four" type="sequential"><steps>
  <task><instructions>step one</instructions></task>
  <task><instructions>step two after {{output}}</instructions></task>
  <task><instructions>step three after {{output}}</instructions></task>
  <task><instructions>step four after {{output}}</instructions></task>
</steps></task>"#;

/// A model step, a script step running `command`, and a model step given its output.
fn around_script(command: &str, timeout: u64, next: &str) -> String {
    format!(
        r#"<task name="s" type="sequential"><steps>
  <task><instructions>before</instructions></task>
  <task type="script"><script_execution><command>{command}</command><timeout>{timeout}</timeout></script_execution></task>
  <task><instructions>{next}</instructions></task>
</steps></task>"#
    )
}

/// The model's answer to request `i`.
fn answer(i: usize) -> Reply {
    let message = json!({"role": "assistant", "content": format!("answer {i}")});
    Reply::json(
        200,
        json!({"choices": [{"message": message}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
    )
}

/// The host of `tvm run`, keeping every script reply for the test to read.
struct Watched {
    host: RunHost,
    scripts: Mutex<Vec<ScriptReply>>,
}

impl AsyncHost for Watched {
    async fn call(&self, at: CallId<'_>, request: &HostRequest) -> HostReply {
        let reply = self.host.call(at, request).await;
        if let HostReply::Script(Ok(r)) = &reply {
            self.scripts.lock().expect("lock").push(r.clone());
        }
        reply
    }
}

/// How a run ended, what the server was asked (the last message of each request, in
/// order), the replies of the scripts that finished, and how long the run took.
struct Outcome {
    result: Value,
    prompts: Vec<String>,
    scripts: Vec<ScriptReply>,
    took: Duration,
}

impl Outcome {
    fn error(&self) -> &Value {
        &self.result["notes"]["error"]
    }

    fn message(&self) -> &str {
        self.error()["message"].as_str().unwrap_or("")
    }
}

/// Runs the entry `entry` of `src` against a server answering with `responder`; the
/// adapter retries at most twice, 1 ms apart, and gives each attempt `attempt` to end.
fn run(
    src: &str,
    entry: &str,
    attempt: Duration,
    responder: impl Fn(usize, &http::Request) -> Reply + Send + Sync + 'static,
) -> Outcome {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let server = Server::start(responder).await;
        let bundle = bundle_of(src);
        let mut settings = Settings::new(server.url(), "test-model");
        settings.api_key = Some("sk-faults-test-key".into());
        settings.max_retries = 2;
        settings.backoff_base = Duration::from_millis(1);
        settings.request_timeout = attempt;
        let host = Watched {
            host: RunHost::with_adapters(
                Choice::Remote(tv_stdlib::models::Provider::OpenAi),
                Some(OpenAi::new(settings).expect("adapter")),
                None,
                ScriptRunner::default(),
            ),
            scripts: Mutex::default(),
        };
        let f = bundle.entry(entry).expect("entry").function;
        let start = Instant::now();
        let result = (tv_runtime::Run::new(&bundle, f, vec![], Limits::default())
            .on(&host)
            .await)
            .result;
        let result = serde_json::Value::from(result);
        let took = start.elapsed();
        let prompts = server
            .requests()
            .iter()
            .map(|r| {
                let body = r.json();
                let last = body["messages"].as_array().and_then(|m| m.last()).cloned();
                last.and_then(|m| m["content"].as_str().map(str::to_string))
                    .unwrap_or_default()
            })
            .collect();
        let scripts = host.scripts.into_inner().expect("lock");
        Outcome {
            result,
            prompts,
            scripts,
            took,
        }
    })
}

const SECONDS: Duration = Duration::from_secs(5);

/// Proves only that a run did not hang: the bound is far above what any run needs.
fn did_not_hang(o: &Outcome) {
    assert!(
        o.took < Duration::from_secs(20),
        "the run took {:?}",
        o.took
    );
}

#[test]
fn a_refused_key_or_a_bad_request_fails_the_sequence_at_that_step_without_asking_again_or_further()
{
    let cases = [
        (401, 2, "openai: the API key in OPENAI_API_KEY was refused (HTTP 401 Unauthorized: {\"error\": \"no such key\"})"),
        (400, 1, "openai: HTTP 400 Bad Request: {\"error\": \"no such key\"}"),
    ];
    for (status, failing, expected) in cases {
        let o = run(FOUR_STEPS, "four", SECONDS, move |i, _| {
            if i < failing {
                answer(i)
            } else {
                Reply::json(status, r#"{"error": "no such key"}"#)
            }
        });
        assert_eq!(o.result["status"], "FAILED", "{status}: {:#}", o.result);
        assert_eq!(o.error()["type"], "TASK_FAILURE");
        assert_eq!(o.error()["reason"], "unexpected_error");
        assert_eq!(
            o.message(),
            format!("step {} of 4 failed: {expected}", failing + 1)
        );
        let details = &o.error()["details"];
        assert_eq!(details["failedStep"], failing + 1);
        assert_eq!(details["totalSteps"], 4);
        assert_eq!(details["stepError"]["message"], expected);
        let partial: Vec<Value> = details["partialResults"]
            .as_array()
            .map(|a| a.iter().map(|r| r["content"].clone()).collect())
            .unwrap_or_default();
        let answers: Vec<Value> = (0..failing).map(|i| json!(format!("answer {i}"))).collect();
        assert_eq!(partial, answers);
        // One request per step that ran, the failing one asked once, the rest never.
        assert_eq!(o.prompts.len(), failing + 1, "{status}: {:?}", o.prompts);
        assert!(
            !o.prompts.iter().any(|p| p.starts_with("step four")),
            "{:?}",
            o.prompts
        );
    }
}

#[test]
fn connections_dropped_at_a_step_are_retried_and_the_step_fails_when_the_retries_run_out() {
    let o = run(FOUR_STEPS, "four", SECONDS, |i, _| {
        if i == 0 {
            answer(i)
        } else {
            Reply::Drop
        }
    });
    assert_eq!(o.result["status"], "FAILED", "{:#}", o.result);
    assert_eq!(o.error()["reason"], "unexpected_error");
    let m = o.message();
    assert!(m.starts_with("step 2 of 4 failed: openai: "), "{m}");
    assert!(m.ends_with("(gave up after 3 attempts)"), "{m}");
    assert_eq!(o.error()["details"]["failedStep"], 2);
    // The first step, then the second three times (two retries); no third step.
    assert_eq!(o.prompts.len(), 4, "{:?}", o.prompts);
    assert!(o.prompts[1..]
        .iter()
        .all(|p| p == "step two after answer 0"));
    did_not_hang(&o);
}

#[test]
fn a_connection_dropped_once_mid_workflow_is_retried_and_the_run_completes() {
    let o = run(FOUR_STEPS, "four", SECONDS, |i, _| {
        if i == 1 {
            Reply::Drop
        } else {
            answer(i)
        }
    });
    assert_eq!(o.result["status"], "COMPLETE", "{:#}", o.result);
    assert_eq!(o.result["content"], "answer 4");
    assert_eq!(
        o.prompts,
        [
            "step one",
            "step two after answer 0",
            "step two after answer 0",
            "step three after answer 2",
            "step four after answer 3"
        ]
    );
}

#[test]
fn a_reply_that_is_not_json_or_lacks_a_message_fails_its_step_without_a_retry() {
    let cases = [
        (
            r#"{"choices": [{"message": "#,
            "openai: the reply is not JSON (",
        ),
        (
            r#"{"id": "x"}"#,
            r#"openai: the reply has no `choices[0].message`: {"id":"x"}"#,
        ),
    ];
    for (body, expected) in cases {
        let o = run(FOUR_STEPS, "four", SECONDS, move |i, _| {
            if i == 0 {
                answer(i)
            } else {
                Reply::json(200, body)
            }
        });
        assert_eq!(o.result["status"], "FAILED", "{body}: {:#}", o.result);
        assert_eq!(o.error()["reason"], "unexpected_error");
        let m = o.message();
        assert!(
            m.starts_with(&format!("step 2 of 4 failed: {expected}")),
            "{m}"
        );
        assert_eq!(o.error()["details"]["failedStep"], 2);
        assert_eq!(o.prompts, ["step one", "step two after answer 0"]);
    }
}

#[test]
fn a_step_that_gets_no_reply_in_time_fails_with_a_timeout_after_its_retries() {
    let o = run(FOUR_STEPS, "four", Duration::from_millis(200), |i, _| {
        if i == 0 {
            answer(i)
        } else {
            answer(i).after(Duration::from_secs(30))
        }
    });
    assert_eq!(o.result["status"], "FAILED", "{:#}", o.result);
    assert_eq!(o.error()["reason"], "execution_timeout");
    assert_eq!(
        o.message(),
        "step 2 of 4 failed: openai: no reply within 200ms (gave up after 3 attempts)"
    );
    assert_eq!(o.prompts.len(), 4, "{:?}", o.prompts);
    did_not_hang(&o);
}

#[test]
fn a_refused_call_in_one_of_three_concurrent_inner_tasks_fails_the_reduce_at_that_input() {
    let src = r#"<task name="r" type="reduce">
      <inputs><input name="a">alpha</input><input name="b">beta</input><input name="c">gamma</input></inputs>
      <inner_task><instructions>inner {{current_input}}</instructions></inner_task>
      <reduction_task><instructions>fold {{current_result}}</instructions></reduction_task>
    </task>"#;
    let o = run(src, "r", SECONDS, |i, r| {
        if r.body.contains("inner beta") {
            Reply::json(400, r#"{"error": "bad"}"#)
        } else {
            answer(i)
        }
    });
    assert_eq!(o.result["status"], "FAILED", "{:#}", o.result);
    assert_eq!(o.error()["reason"], "unexpected_error");
    assert_eq!(
        o.message(),
        r#"input 2 of 3 (index 1) of the reduction failed: openai: HTTP 400 Bad Request: {"error": "bad"}"#
    );
    let details = &o.error()["details"];
    assert_eq!(details["failedInputIndex"], 1);
    assert_eq!(details["totalInputs"], 3);
    assert_eq!(details["processedInputs"], json!(["alpha"]));
    // The fold of the first input was the fourth request.
    assert_eq!(details["currentAccumulator"], "answer 3");
    // All three inner tasks ran (at once, in any order); only the first was folded.
    let mut inner = o.prompts[..3].to_vec();
    inner.sort();
    assert_eq!(inner, ["inner alpha", "inner beta", "inner gamma"]);
    assert_eq!(o.prompts.len(), 4, "{:?}", o.prompts);
    assert!(o.prompts[3].starts_with("fold answer "), "{:?}", o.prompts);
}

#[test]
fn a_hanging_script_is_killed_at_its_timeout_and_the_next_step_never_runs() {
    let o = run(
        &around_script("sleep 100", 1, "after {{output}}"),
        "s",
        SECONDS,
        |i, _| answer(i),
    );
    assert_eq!(o.result["status"], "FAILED", "{:#}", o.result);
    assert_eq!(o.error()["reason"], "execution_timeout");
    assert_eq!(
        o.message(),
        "step 2 of 3 failed: the script did not finish within 1 s and was killed"
    );
    assert_eq!(o.error()["details"]["failedStep"], 2);
    assert_eq!(o.prompts, ["before"]);
    assert!(o.scripts.is_empty());
    did_not_hang(&o);
}

/// Whether process `pid` is still running (a zombie waiting to be reaped is not).
fn running(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    !stat.is_empty() && !stat.contains(") Z ")
}

#[test]
fn a_script_that_exits_leaving_a_child_on_its_output_finishes_and_the_child_is_killed() {
    let dir = std::env::temp_dir().join(format!("tv-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let forms = [
        ("sleep 100 &amp; echo $! > {pid}; echo started", "started\n"),
        ("(sleep 100 &amp; echo $! > {pid}); echo done", "done\n"),
    ];
    for (i, (command, printed)) in forms.into_iter().enumerate() {
        let pidfile = dir.join(format!("child{i}.pid"));
        let command = command.replace("{pid}", &pidfile.display().to_string());
        let o = run(
            &around_script(&command, 15, "after {{output}}"),
            "s",
            SECONDS,
            |i, _| answer(i),
        );
        assert_eq!(o.result["status"], "COMPLETE", "{command}: {:#}", o.result);
        assert_eq!(o.scripts.len(), 1);
        assert_eq!(o.scripts[0].stdout, printed, "{command}");
        assert_eq!(o.scripts[0].exit_code, 0);
        assert_eq!(o.prompts, ["before", &format!("after {printed}")]);
        did_not_hang(&o);
        let pid = std::fs::read_to_string(&pidfile).expect("pid file");
        // The group is killed as the script ends; give the kernel a moment to act.
        let start = Instant::now();
        while running(&pid) && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!running(&pid), "{command}: the child {pid} still runs");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn megabytes_of_script_output_are_capped_with_a_note_and_the_next_step_gets_the_capped_text() {
    // The cap is 1 MiB; text cut inside a character keeps only whole characters.
    let cases = [
        (r"head -c 5000000 /dev/zero | tr '\0' x", "x", 1 << 20),
        ("yes é | head -c 5000000", "é\n", 349_525),
    ];
    for (command, unit, times) in cases {
        let o = run(
            &around_script(command, 30, "got {{len(output)}} characters"),
            "s",
            SECONDS,
            |i, _| answer(i),
        );
        assert_eq!(o.result["status"], "COMPLETE", "{command}: {:#}", o.result);
        assert_eq!(o.result["content"], "answer 1");
        assert_eq!(o.scripts.len(), 1);
        let script = &o.scripts[0];
        let tail: String = script.stdout.chars().rev().take(4).collect();
        assert!(
            script.stdout == unit.repeat(times),
            "{command}: …{tail:?} reversed"
        );
        assert_eq!(script.notes, ["stdout cut at 1048576 of 5000000 bytes"]);
        let chars = unit.chars().count() * times;
        assert_eq!(o.prompts, ["before", &format!("got {chars} characters")]);
    }
}

#[test]
fn script_output_that_is_not_utf8_is_kept_with_a_note_and_the_run_goes_on() {
    let o = run(
        &around_script(r"printf '\377\376ok'", 30, "after {{output}}"),
        "s",
        SECONDS,
        |i, _| answer(i),
    );
    assert_eq!(o.result["status"], "COMPLETE", "{:#}", o.result);
    assert_eq!(o.scripts.len(), 1);
    assert_eq!(o.scripts[0].stdout, "\u{fffd}\u{fffd}ok");
    assert_eq!(
        o.scripts[0].notes,
        ["stdout is not UTF-8; invalid bytes were replaced"]
    );
    assert_eq!(o.prompts, ["before", "after \u{fffd}\u{fffd}ok"]);
}
