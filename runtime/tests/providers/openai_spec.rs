//! The OpenAI adapter's request bodies against OpenAI's published API description
//! (`CreateChatCompletionRequest`), and the check itself shown to catch broken bodies.

use super::*;
use openapi::{assert_valid_chat_request, validate};

fn with(system_prompt: &str, context: &str, messages: &[(Role, &str)]) -> LlmRequest {
    LlmRequest {
        system_prompt: system_prompt.into(),
        context: context.into(),
        messages: messages
            .iter()
            .map(|(role, content)| message(*role, content))
            .collect::<Vec<_>>()
            .into(),
        ..request(None)
    }
}

#[tokio::test]
async fn every_body_the_openai_adapter_sends_conforms_to_openais_published_schema() {
    let named = LlmRequest {
        task: task(Some("openai:gpt-4o")).into(),
        ..request(Some("openai:gpt-4o"))
    };
    let requests = [
        // A plain request: one user message, no system text at all.
        with("", "", &[(Role::User, "Summarise the notes.")]),
        with("You are terse.", "", &[(Role::User, "Hi.")]),
        with("", "notes.txt: v2 ships on Friday.", &[(Role::User, "Hi.")]),
        // System prompt and context, then a conversation with assistant turns.
        request(None),
        named,
        // A system message inside the conversation, as templates may write one.
        with(
            "You are terse.",
            "",
            &[
                (Role::User, "Summarise the notes."),
                (Role::System, "Answer in English."),
                (Role::Assistant, ""),
                (Role::User, "Go on."),
            ],
        ),
    ];
    let server = Server::scripted(vec![Api::OpenAi.ok("ok", 1, 1)]).await;
    let client = Client::new(Api::OpenAi, Api::OpenAi.settings(&server));
    for req in &requests {
        client.complete(req).await.unwrap();
    }
    let sent = server.requests();
    assert_eq!(sent.len(), requests.len());
    for request in &sent {
        assert_valid_chat_request(&request.json());
    }
    // The checks above saw what was meant to be sent: the model named, and a body without
    // any system message.
    assert_eq!(sent[4].json()["model"], "gpt-4o");
    assert_eq!(sent[0].json()["messages"].as_array().unwrap().len(), 1);
}

#[test]
fn the_schema_check_rejects_bodies_that_break_the_spec_and_says_where() {
    let good = json!({
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Hi."}],
    });
    assert_eq!(validate(&good), Ok(()));

    let rejected = |body: Value, location: &str| {
        let errors = validate(&body).expect_err("the body should be rejected");
        assert!(
            errors.iter().any(|e| e.starts_with(location)),
            "no error at {location}: {errors:#?}"
        );
    };
    let mut hot = good.clone();
    hot["temperature"] = json!("hot");
    rejected(hot, "/temperature: ");
    let mut wizard = good.clone();
    wizard["messages"][0]["role"] = json!("wizard");
    rejected(wizard, "/messages/0: ");
    rejected(json!({"model": "gpt-4o-mini"}), "(the body): ");
    rejected(
        json!({"model": "gpt-4o-mini", "messages": []}),
        "/messages: ",
    );
    let mut tool = good.clone();
    tool["tools"] = json!([{"type": "function", "function": {"description": "no name"}}]);
    rejected(tool, "/tools/0: ");
}

#[test]
#[should_panic(expected = "/temperature: ")]
fn asserting_a_broken_body_panics_with_its_errors() {
    assert_valid_chat_request(&json!({
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Hi."}],
        "temperature": "hot",
    }));
}

#[test]
fn a_missing_spec_is_an_error_that_names_where_it_was_looked_for() {
    let path = openapi::spec_path().with_file_name("no-such-spec.json");
    let err = openapi::read_spec(&path).unwrap_err();
    assert!(err.contains("no-such-spec.json"), "{err}");
    assert!(err.contains("tests/data"), "{err}");
}

/// What a request with sampling settings and a tool or an output schema would look like:
/// shapes the adapter may send later, checked against the spec now.
fn tuned(extra: Value) -> Value {
    let mut body = json!({
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Review the change."},
        ],
    });
    for (key, value) in extra.as_object().unwrap() {
        body[key] = value.clone();
    }
    body
}

#[test]
fn sampling_settings_with_max_tokens_or_max_completion_tokens_conform() {
    let sampling = json!({"temperature": 0.2, "top_p": 0.9, "seed": 7, "stop": ["###"]});
    for cap in ["max_tokens", "max_completion_tokens"] {
        let mut extra = sampling.clone();
        extra[cap] = json!(800);
        assert_valid_chat_request(&tuned(extra));
    }
}

#[test]
fn a_function_tool_conforms() {
    let tool = json!({
        "type": "function",
        "function": {
            "name": "spawn_subtask",
            "description": "Run a subtask and continue this task with its result.",
            "parameters": subtask_schema(),
        }
    });
    assert_valid_chat_request(&tuned(json!({"tools": [tool]})));
}

#[test]
fn a_strict_json_schema_response_format_conforms() {
    let format = json!({
        "type": "json_schema",
        "json_schema": {
            "name": "Review",
            "strict": true,
            "schema": {
                "type": "object",
                "properties": {"approved": {"type": "boolean"}},
                "required": ["approved"],
                "additionalProperties": false,
            }
        }
    });
    assert_valid_chat_request(&tuned(json!({"response_format": format})));
}
