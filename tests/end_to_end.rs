//! Every operator end to end through the OpenAI adapter against a real HTTP server on
//! 127.0.0.1 that answers like a model would, with scripts as real processes.

use crate::http;

use http::{Reply, Server};
use serde_json::{json, Value};
use tv_runtime::host::{Choice, RunHost};
use tv_runtime::providers::{OpenAi, Settings};
use tv_runtime::script::ScriptRunner;
use tv_tests::bundle_of;
use tv_vm::limits::Limits;

/// The last message of a request (same field in both wire formats) and whether the
/// model has not spoken yet in this conversation.
fn turn(req: &http::Request) -> (String, bool) {
    let body = req.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let prompt = messages
        .last()
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    (prompt, !messages.iter().any(|m| m["role"] == "assistant"))
}

/// Answers from the last user message: `json:` prompts get JSON, `spawn` asks for a
/// subtask through the tool, anything else is echoed in upper case.
fn model(_: usize, req: &http::Request) -> Reply {
    let (prompt, first_turn) = turn(req);
    let message = if prompt.starts_with("spawn") && first_turn {
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "spawn_subtask",
            "arguments": json!({"type": "atomic", "description": "shout the word", "inputs": {"word": "hey"}}).to_string()}}]})
    } else if let Some(rest) = prompt.strip_prefix("json:") {
        json!({"role": "assistant", "content": rest.trim()})
    } else {
        json!({"role": "assistant", "content": prompt.to_uppercase()})
    };
    // `cut:` prompts are answered as a model stopped by its output limit.
    let finish = if prompt.starts_with("cut:") {
        "length"
    } else {
        "stop"
    };
    Reply::json(
        200,
        json!({"choices": [{"message": message, "finish_reason": finish}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
    )
}

fn run(src: &str, entry: &str, args: Vec<Value>) -> (Value, usize) {
    let (r, requests) = run_in(src, entry, args, None);
    (r, requests.len())
}

/// Runs with `workspace` as the folder context comes from; returns the requests seen.
fn run_in(
    src: &str,
    entry: &str,
    args: Vec<Value>,
    workspace: Option<std::path::PathBuf>,
) -> (Value, Vec<http::Request>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let server = Server::start(model).await;
        let b = bundle_of(src);
        let mut settings = Settings::new(server.url(), "test-model");
        settings.concurrency = 4;
        let mut host = RunHost::with_adapters(
            Choice::Remote(tv_stdlib::models::Provider::OpenAi),
            Some(OpenAi::new(settings).expect("adapter")),
            None,
            ScriptRunner::default(),
        );
        host.context.workspace = workspace;
        let f = b.entry(entry).expect("entry").function;
        let r = (tv_runtime::Run::new(&b, f, args, Limits::default())
            .on(&host)
            .await)
            .result;
        (r.into(), server.requests())
    })
}

#[test]
fn an_atomic_task_with_json_output_is_parsed() {
    let (r, hits) = run(
        r#"<task name="t"><instructions>json: {"n": 2}</instructions><output_format type="json" schema="object"/></task>"#,
        "t",
        vec![],
    );
    assert_eq!((r["parsedContent"].clone(), hits), (json!({"n": 2}), 1));
}

#[test]
fn a_sequence_a_cond_and_a_call_run_in_order() {
    let src = r#"<library>
      <template name="shout" params="word"><task><instructions>{{word}}!</instructions></task></template>
      <task name="s" type="sequential"><steps>
        <task><instructions>json: {"ok": true}</instructions><output_format type="json"/></task>
        <cond><case test="output.ok"><call template="shout"><arg>yes</arg></call></case></cond>
        <task><instructions>then {{output}}</instructions></task>
      </steps></task></library>"#;
    let (r, hits) = run(src, "s", vec![]);
    assert_eq!((r["content"].as_str(), hits), (Some("THEN YES!"), 3));
}

#[test]
fn a_reduce_runs_its_inner_tasks_concurrently_and_folds_in_order() {
    let src = r#"<task name="r" type="reduce">
      <inputs><input name="a">a</input><input name="b">b</input><input name="c">c</input></inputs>
      <inner_task><instructions>{{current_input}}</instructions></inner_task>
      <reduction_task><instructions>json: "{{accumulator}}{{current_result}}"</instructions><output_format type="json" schema="string"/></reduction_task>
    </task>"#;
    let (r, hits) = run(src, "r", vec![]);
    assert_eq!((r["parsedContent"].as_str(), hits), (Some("ABC"), 6));
}

#[test]
fn a_script_runs_as_a_process_with_its_inputs() {
    let src = r#"<task name="s" type="script"><inputs><input name="who">a name</input></inputs>
      <script_execution><command>printf 'hi %s' {{who}}</command><timeout>10</timeout></script_execution></task>"#;
    let (r, hits) = run(src, "s", vec![json!("ada; echo injected")]);
    assert_eq!(
        (r["content"].as_str(), hits),
        (Some("hi ada; echo injected"), 0)
    );
}

/// A fresh folder for files a hostile value would create.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tv-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

#[test]
fn a_model_reply_inside_the_authors_double_quotes_is_printed_and_never_run() {
    let dir = scratch("double-quoted-reply");
    let pwned = dir.join("PWNED");
    let reply = format!("x $(touch {}) `touch {}`", pwned.display(), pwned.display());
    let src = format!(
        r#"<task name="s" type="sequential"><steps>
          <task><instructions>json: {reply}</instructions></task>
          <task type="script"><script_execution><command>echo "label {{{{output}}}}"</command></script_execution></task>
        </steps></task>"#
    );
    let (r, _) = run(&src, "s", vec![]);
    assert_eq!(
        r["content"].as_str().map(str::trim_end),
        Some(&*format!("label {reply}"))
    );
    assert!(!pwned.exists(), "the reply ran as shell code");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_value_inside_the_authors_single_quotes_cannot_close_them() {
    let dir = scratch("single-quoted-arg");
    let pwned = dir.join("PWNED");
    let value = format!("a'; touch {}; echo 'b", pwned.display());
    let src = r#"<task name="s" type="script"><inputs><input name="v">a value</input></inputs>
      <script_execution><command>printf '%s|' 'before {{v}} after' "in {{v}}" {{v}}</command></script_execution></task>"#;
    let (r, _) = run(src, "s", vec![json!(value)]);
    let expected = format!("before {value} after|in {value}|{value}|");
    assert_eq!(r["content"].as_str(), Some(&*expected));
    assert!(!pwned.exists(), "the value ran as shell code");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_director_evaluator_loop_stops_when_the_evaluator_approves() {
    let src = r#"<task name="l" type="director_evaluator_loop"><max_iterations>4</max_iterations>
      <director><instructions>draft {{current_iteration}} {{evaluation_feedback}}</instructions></director>
      <evaluator><instructions>json: {"success": false, "feedback": "more of {{director_result}}"}</instructions></evaluator>
      <termination_condition><condition>current_iteration &gt;= 2</condition></termination_condition>
    </task>"#;
    let (r, hits) = run(src, "l", vec![]);
    assert_eq!(
        (r["content"].as_str(), hits),
        (Some("DRAFT 2 MORE OF DRAFT 1 NULL"), 4)
    );
    assert_eq!(r["notes"]["iterations"], 2);
    assert_eq!(
        r["notes"]["evaluation"]["feedback"],
        "more of DRAFT 2 MORE OF DRAFT 1 NULL"
    );
}

#[test]
fn a_subtask_requested_through_the_tool_runs_and_the_parent_continues() {
    let src = r#"<library>
      <template name="shout" params="word"><task><description>shout the word</description><instructions>{{word}}!</instructions></task></template>
      <task name="p"><instructions>spawn please</instructions></task></library>"#;
    let (r, hits) = run(src, "p", vec![]);
    // The parent's first turn, the subtask, then the parent again with the result.
    assert_eq!(hits, 3);
    assert_eq!(r["status"], "COMPLETE");
    assert!(
        r["content"].as_str().unwrap_or("").contains("HEY!"),
        "{r:#}"
    );
}

#[test]
fn named_files_and_workspace_matches_reach_the_model_and_missing_ones_are_noted() {
    let dir = std::env::temp_dir().join(format!("tv-e2e-ws-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src")).expect("dir");
    std::fs::write(
        dir.join("src/auth.rs"),
        "fn login_token_expiry() { /* tokens expire after 15 minutes */ }\n",
    )
    .expect("write");
    std::fs::write(dir.join("README.md"), "A deploy tool.\n").expect("write");
    let src = r#"<task name="t"><instructions>Explain login token expiry</instructions>
      <context_management><inherit_context>none</inherit_context><fresh_context>enabled</fresh_context></context_management>
      <file_paths><path>README.md</path><path>missing.txt</path></file_paths></task>"#;
    let (r, requests) = run_in(src, "t", vec![], Some(dir.clone()));
    let system = requests[0].json()["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        system.contains("--- README.md ---\nA deploy tool."),
        "{system}"
    );
    assert!(
        system.contains("tokens expire after 15 minutes"),
        "{system}"
    );
    assert_eq!(r["status"], "COMPLETE");
    let warnings = r["notes"]["warnings"].to_string();
    assert!(warnings.contains("missing.txt"), "{r:#}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_failing_file_paths_command_fails_the_task_without_calling_the_model() {
    let dir = std::env::temp_dir().join(format!("tv-e2e-cmd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let src = r#"<task name="t"><instructions>Review these files</instructions>
      <file_paths source="command"><command>echo no index &gt;&amp;2; exit 128</command></file_paths></task>"#;
    let (r, requests) = run_in(src, "t", vec![], Some(dir.clone()));
    assert!(requests.is_empty(), "the model was called");
    assert_eq!(r["status"], "FAILED", "{r:#}");
    assert_eq!(r["notes"]["error"]["type"], "TASK_FAILURE");
    assert_eq!(r["notes"]["error"]["reason"], "context_retrieval_failure");
    assert_eq!(
        r["notes"]["error"]["message"],
        "file_paths: the command `echo no index >&2; exit 128` failed with exit code 128: no index"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The same model, speaking Anthropic's messages API.
fn claude(_: usize, req: &http::Request) -> Reply {
    let (prompt, first_turn) = turn(req);
    let content = if prompt.starts_with("spawn") && first_turn {
        json!([{"type": "tool_use", "id": "t1", "name": "spawn_subtask",
                "input": {"type": "atomic", "description": "shout the word", "inputs": {"word": "hey"}}}])
    } else {
        json!([{"type": "text", "text": prompt.to_uppercase()}])
    };
    Reply::json(
        200,
        json!({"content": content, "usage": {"input_tokens": 1, "output_tokens": 1}}),
    )
}

#[test]
fn a_sequence_with_a_subtask_runs_through_the_anthropic_adapter() {
    let src = r#"<library>
      <template name="shout" params="word"><task><description>shout the word</description><instructions>{{word}}!</instructions></task></template>
      <task name="s" type="sequential"><steps>
        <task><instructions>spawn please</instructions></task>
        <task><instructions>after {{output}}</instructions></task>
      </steps></task></library>"#;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (r, hits): (Value, _) = rt.block_on(async {
        let server = Server::start(claude).await;
        let b = bundle_of(src);
        let settings = Settings::new(server.url(), "claude-test");
        let host = RunHost::with_adapters(
            Choice::Remote(tv_stdlib::models::Provider::Anthropic),
            None,
            Some(tv_runtime::providers::Anthropic::new(settings).expect("adapter")),
            ScriptRunner::default(),
        );
        let f = b.entry("s").expect("entry").function;
        let r = (tv_runtime::Run::new(&b, f, vec![], Limits::default())
            .on(&host)
            .await)
            .result;
        (r.into(), server.requests())
    });
    assert_eq!(hits.len(), 4, "parent, subtask, parent again, second step");
    assert_eq!(hits[0].path, "/v1/messages");
    assert!(
        r["content"].as_str().unwrap_or("").starts_with("AFTER "),
        "{r:#}"
    );
    assert!(
        r["content"].as_str().unwrap_or("").contains("HEY!"),
        "{r:#}"
    );
}

#[test]
fn a_wide_fan_out_through_a_capped_adapter_drops_and_repeats_no_call() {
    let items: String = (0..24)
        .map(|i| format!("<input name=\"i{i}\">item{i}</input>"))
        .collect();
    let src = format!(
        r#"<task name="r" type="reduce"><inputs>{items}</inputs>
             <inner_task><instructions>{{{{current_input}}}}</instructions></inner_task>
             <reduction_task><instructions>json: "{{{{accumulator}}}}."</instructions><output_format type="json"/></reduction_task>
           </task>"#
    );
    let (r, requests) = run_in(&src, "r", vec![], None);
    assert_eq!(r["status"], "COMPLETE", "{r:#}");
    let prompts: Vec<String> = requests
        .iter()
        .map(|q| {
            q.json()["messages"]
                .as_array()
                .and_then(|m| m.last())
                .map_or(String::new(), |m| m["content"].to_string())
        })
        .collect();
    for i in 0..24 {
        let asked = prompts
            .iter()
            .filter(|p| **p == format!("\"item{i}\""))
            .count();
        assert_eq!(asked, 1, "inner task {i} was asked {asked} times");
    }
    assert_eq!(requests.len(), 48);
}

#[test]
fn a_reply_cut_by_the_output_limit_fails_its_task_and_keeps_the_cut_text() {
    let src = r#"<task name="t"><instructions>cut: the first half of an essay</instructions>
      <model max_tokens="5"/></task>"#;
    let (r, hits) = run(src, "t", vec![]);
    assert_eq!((r["status"].as_str(), hits), (Some("FAILED"), 1));
    assert_eq!(r["content"], "CUT: THE FIRST HALF OF AN ESSAY");
    let error = &r["notes"]["error"];
    assert_eq!(error["type"], "RESOURCE_EXHAUSTION");
    assert_eq!(error["resource"], "output");
    assert_eq!(error["metrics"]["limit"], 5);
}
