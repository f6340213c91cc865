//! `tvm run` of tasks with typed output against a server on 127.0.0.1 (DESIGN §13): the
//! record type in the provider's own field, `--json-mode prompt` and `TVM_JSON_MODE`,
//! the fall back to prompt mode when a server refuses the native field, and dry runs.

use crate::support::files::{self, TempDir};
use crate::support::http::{Reply, Request, Server};
use serde_json::{json, Value};
use std::path::PathBuf;

/// One task whose reply is a record.
const REVIEW: &str = r#"<task name="review">
  <inputs><input name="diff">the change</input></inputs>
  <instructions>Review this change: {{diff}}</instructions>
  <output_format type="json" schema="{approved: boolean, findings: string[]}"/>
</task>"#;

/// Two steps, each with a typed reply.
const TWO_REVIEWS: &str = r#"<task type="sequential" name="two_reviews">
  <inputs><input name="diff">the change</input></inputs>
  <steps>
    <task>
      <instructions>Review this change: {{diff}}</instructions>
      <output_format type="json" schema="{approved: boolean, findings: string[]}"/>
    </task>
    <task>
      <instructions>Review it again, more strictly.</instructions>
      <output_format type="json" schema="{approved: boolean, findings: string[]}"/>
    </task>
  </steps>
</task>"#;

/// The schema the prompt describes for `{approved: boolean, findings: string[]}`.
const DESCRIBED: &str = "Reply with JSON only, matching this JSON Schema:\n\
{\"type\":\"object\",\"properties\":{\"approved\":{\"type\":\"boolean\"},\"findings\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},\"required\":[\"approved\",\"findings\"],\"additionalProperties\":false}";

/// `source` compiled into a bundle in `dir`.
fn bundle(dir: &TempDir, source: &str) -> PathBuf {
    let c = tv_compiler::driver::check_texts([("review.xml", source)]);
    assert!(
        !c.diags.has_errors(),
        "{}",
        c.diags.render_short(&c.sources)
    );
    let (_, b) = tv_compiler::driver::compile(&c).expect("compiles");
    dir.write("review.bin", b.to_bytes());
    dir.path().join("review.bin")
}

/// An OpenAI reply whose text is `content`.
fn openai(content: &str) -> Reply {
    Reply::json(
        200,
        json!({
            "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}
        }),
    )
}

/// `tvm run BUNDLE --arg diff=+x EXTRA...` against the OpenAI-compatible `server`, with
/// `env` set besides; exit code, the result and stderr.
fn run(
    bundle: &std::path::Path,
    server: &Server,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (i32, Value, String) {
    let url = format!("{}/v1", server.url());
    let mut args = vec!["run", bundle.to_str().expect("path"), "--arg", "diff=+x"];
    args.extend_from_slice(extra);
    let mut vars = vec![("OPENAI_BASE_URL", url.as_str())];
    vars.extend_from_slice(env);
    let (code, stdout, stderr) = files::run_tvm(&args, &vars);
    let result = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (code, result, stderr)
}

fn system(request: &Request) -> String {
    let body = request.json();
    assert_eq!(body["messages"][0]["role"], "system", "{body}");
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn is_native(request: &Request) -> bool {
    request.json().get("response_format").is_some()
}

#[test]
fn a_record_output_goes_to_the_server_as_a_strict_response_format_by_default() {
    let dir = TempDir::new("json-native");
    let b = bundle(&dir, REVIEW);
    let rt = files::runtime();
    let reply = r#"{"approved": true, "findings": []}"#;
    let server = rt.block_on(Server::scripted(vec![openai(reply)]));
    let (code, r, stderr) = run(&b, &server, &[], &[]);
    assert_eq!(code, 0, "{r} {stderr}");
    assert_eq!(
        r["parsedContent"],
        json!({"approved": true, "findings": []})
    );
    let body = server.requests()[0].json();
    let format = &body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "review");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(
        format["json_schema"]["schema"]["required"],
        json!(["approved", "findings"])
    );
    crate::support::openapi::assert_valid_chat_request(&body);
}

#[test]
fn json_mode_prompt_describes_the_schema_in_the_system_prompt_instead() {
    let dir = TempDir::new("json-prompt");
    let b = bundle(&dir, REVIEW);
    let rt = files::runtime();
    let reply = r#"{"approved": false, "findings": ["no tests"]}"#;
    let server = rt.block_on(Server::scripted(vec![openai(reply)]));
    // By the flag, by the environment, and the flag over the environment.
    type Way<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)]);
    let ways: [Way; 3] = [
        (&["--json-mode", "prompt"], &[]),
        (&[], &[("TVM_JSON_MODE", "prompt")]),
        (&["--json-mode", "prompt"], &[("TVM_JSON_MODE", "native")]),
    ];
    for (extra, env) in ways {
        let (code, r, stderr) = run(&b, &server, extra, env);
        assert_eq!(code, 0, "{extra:?} {env:?}: {r} {stderr}");
        assert_eq!(r["parsedContent"]["findings"], json!(["no tests"]));
    }
    let (code, _, _) = run(
        &b,
        &server,
        &["--json-mode", "native"],
        &[("TVM_JSON_MODE", "prompt")],
    );
    assert_eq!(code, 0);
    let sent = server.requests();
    let natives: Vec<bool> = sent.iter().map(is_native).collect();
    assert_eq!(natives, [false, false, false, true]);
    for request in &sent[..3] {
        assert_eq!(system(request), DESCRIBED);
        crate::support::openapi::assert_valid_chat_request(&request.json());
    }
}

#[test]
fn an_unknown_json_mode_is_a_usage_error() {
    let dir = TempDir::new("json-unknown");
    let b = bundle(&dir, REVIEW);
    let rt = files::runtime();
    let server = rt.block_on(Server::scripted(vec![openai("{}")]));
    let (code, _, stderr) = run(&b, &server, &["--json-mode", "tools"], &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("native") && stderr.contains("prompt"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&b, &server, &[], &[("TVM_JSON_MODE", "tools")]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("TVM_JSON_MODE"), "{stderr}");
    assert_eq!(server.hits(), 0);
}

#[test]
fn a_server_that_refuses_response_format_serves_the_run_in_prompt_mode_with_one_warning() {
    let dir = TempDir::new("json-fallback");
    let b = bundle(&dir, TWO_REVIEWS);
    let rt = files::runtime();
    // llama.cpp's answer to a field it does not know, for every native request.
    let server = rt.block_on(Server::start(|_, r| {
        if is_native(r) {
            Reply::json(
                400,
                json!({"error": {"code": 400, "type": "invalid_request_error",
                       "message": "Unsupported param: response_format"}}),
            )
        } else {
            openai(r#"{"approved": true, "findings": []}"#)
        }
    }));
    let (code, r, stderr) = run(&b, &server, &[], &[]);
    assert_eq!(code, 0, "{r} {stderr}");
    // The first call, again in prompt mode, then the second step straight in prompt mode.
    let sent = server.requests();
    let natives: Vec<bool> = sent.iter().map(is_native).collect();
    assert_eq!(natives, [true, false, false]);
    // The task has no system prompt: in native mode the prompt is the only message.
    let prompt = json!({"role": "user", "content": "Review this change: +x"});
    assert_eq!(sent[0].json()["messages"], json!([prompt]));
    assert_eq!(sent[1].json()["messages"][1], prompt);
    for request in &sent[1..] {
        assert!(system(request).ends_with(DESCRIBED), "{}", system(request));
    }
    // One warning on stderr, naming the flag that skips the native attempt.
    assert_eq!(stderr.matches("warning:").count(), 1, "{stderr}");
    assert!(stderr.contains("response_format"), "{stderr}");
    assert!(stderr.contains("--json-mode prompt"), "{stderr}");
}

#[test]
fn the_fallback_warning_is_in_the_notes_of_the_task_that_met_it() {
    let dir = TempDir::new("json-fallback-notes");
    let b = bundle(&dir, REVIEW);
    let rt = files::runtime();
    let refused = Reply::json(
        422,
        json!({"detail": "json_schema response format is not supported"}),
    );
    let server = rt.block_on(Server::scripted(vec![
        refused,
        openai(r#"{"approved": true, "findings": []}"#),
    ]));
    let (code, r, stderr) = run(&b, &server, &[], &[]);
    assert_eq!(code, 0, "{r} {stderr}");
    let warnings = r["notes"]["warnings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(warnings.len(), 1, "{r}");
    let w = warnings[0].as_str().unwrap_or_default();
    assert!(
        w.contains("--json-mode prompt") && w.contains("HTTP 422"),
        "{w}"
    );
}

#[test]
fn anthropic_answers_a_record_through_the_forced_tool() {
    let dir = TempDir::new("json-anthropic");
    let b = bundle(&dir, REVIEW);
    let rt = files::runtime();
    let input = json!({"approved": false, "findings": ["missing docs"]});
    let reply = json!({
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "review", "input": input}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 9, "output_tokens": 4}
    });
    let server = rt.block_on(Server::scripted(vec![Reply::json(200, reply)]));
    let url = server.url();
    let args = [
        "run",
        b.to_str().expect("path"),
        "--arg",
        "diff=+x",
        "--provider",
        "anthropic",
    ];
    let (code, stdout, stderr) = files::run_tvm(&args, &[("ANTHROPIC_BASE_URL", url.as_str())]);
    assert_eq!(code, 0, "{stdout} {stderr}");
    let r: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(r["parsedContent"], input);
    let body = server.requests()[0].json();
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "review"})
    );
    assert_eq!(
        body["tools"][0]["input_schema"]["required"],
        json!(["approved", "findings"])
    );
}

#[test]
fn a_dry_run_goes_through_every_typed_step_with_the_smallest_values() {
    let dir = TempDir::new("json-echo");
    let b = bundle(&dir, TWO_REVIEWS);
    let args = [
        "run",
        b.to_str().expect("path"),
        "--arg",
        "diff=+x",
        "--provider",
        "echo",
    ];
    let (code, stdout, stderr) = files::run_tvm(&args, &[]);
    assert_eq!(code, 0, "{stdout} {stderr}");
    let r: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(r["status"], "COMPLETE");
    assert_eq!(
        r["parsedContent"],
        json!({"approved": false, "findings": []})
    );
    assert_eq!(r["notes"]["usage"]["calls"], 2);
}

#[test]
fn a_reply_that_does_not_match_its_type_is_asked_again_with_the_error_and_then_passes() {
    let dir = TempDir::new("json-reask");
    let b = bundle(&dir, REVIEW);
    let rt = files::runtime();
    let server = rt.block_on(Server::scripted(vec![
        openai(r#"{"approved": "yes"}"#),
        openai(r#"{"approved": true, "findings": []}"#),
    ]));
    let (code, r, stderr) = run(&b, &server, &[], &[]);
    assert_eq!(code, 0, "{r} {stderr}");
    assert_eq!(
        r["parsedContent"],
        json!({"approved": true, "findings": []})
    );
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    // The second request is the first conversation, the wrong reply, and the feedback.
    let first = sent[0].json()["messages"].as_array().cloned().unwrap();
    let second = sent[1].json()["messages"].as_array().cloned().unwrap();
    assert_eq!(second.len(), first.len() + 2, "{second:#?}");
    assert_eq!(second[..first.len()], first[..]);
    assert_eq!(
        second[first.len()],
        json!({"role": "assistant", "content": r#"{"approved": "yes"}"#})
    );
    let feedback = &second[first.len() + 1];
    assert_eq!(feedback["role"], "user");
    let text = feedback["content"].as_str().unwrap_or_default();
    assert!(text.contains("approved"), "{text}");
    // Both attempts count.
    assert_eq!(r["notes"]["usage"]["calls"], 2, "{r}");
}
