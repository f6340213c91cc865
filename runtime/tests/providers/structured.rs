//! Structured output (DESIGN §13) on the wire: a record type in OpenAI's
//! `response_format` or as Anthropic's forced tool, its schema described in the system
//! text in prompt mode, and the fall back to prompt mode when a server refuses the
//! native field.

use super::*;
use std::sync::Arc;
use tv_runtime::providers::JsonMode;
use tv_stdlib::types::{strict_schema, Field, Record, Type};
use tv_vm::bundle::{Output, ValueType};

/// `{approved: boolean, findings: string[], severity?: "low"|"high"}`.
fn review_type(name: Option<&str>) -> Type {
    let written = r#"{approved: boolean, findings: string[], severity?: "low"|"high"}"#;
    let Some(Type::Record(r)) = Type::parse(written) else {
        panic!("a record type")
    };
    Type::Record(Arc::new(Record::new(
        name.map(str::to_string),
        r.fields.clone(),
    )))
}

/// A task named `task` whose reply must be of type `ty`, asked once.
fn typed(task: &str, ty: &Type) -> LlmRequest {
    LlmRequest {
        task: TaskMeta {
            output: Output::Json(Some(ValueType::from(ty))),
            ..TaskMeta::named(task)
        }
        .into(),
        messages: vec![message(Role::User, "Review the change.")].into(),
        ..request(None)
    }
}

fn with_mode(api: Api, server: &Server, mode: JsonMode) -> Settings {
    let mut s = api.settings(server);
    s.json_mode = mode;
    s
}

/// The text the system prompt ends with in prompt mode.
fn described(ty: &Type) -> String {
    format!(
        "Reply with JSON only, matching this JSON Schema:\n{}",
        tv_stdlib::types::json_schema(ty)
    )
}

/// The system text a body carries, whichever API it is for (Anthropic's text blocks
/// joined as one text).
fn system_of(api: Api, body: &Value) -> String {
    match api {
        Api::OpenAi => body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        Api::Anthropic => body["system"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n\n"),
    }
}

/// An Anthropic reply that answers through the tool `name`.
fn tool_reply(name: &str, input: Value) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "msg_1", "type": "message", "role": "assistant",
            "content": [
                {"type": "text", "text": "Here is the review."},
                {"type": "tool_use", "id": "toolu_1", "name": name, "input": input}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 12, "output_tokens": 8}
        }),
    )
}

#[tokio::test]
async fn openai_gets_a_record_type_as_a_strict_json_schema_response_format() {
    let ty = review_type(Some("Review"));
    let server = Server::scripted(vec![Api::OpenAi.ok(r#"{"approved": true}"#, 3, 2)]).await;
    let reply = call(
        Api::OpenAi,
        Api::OpenAi.settings(&server),
        &typed("review", &ty),
    )
    .await;
    assert_eq!(reply.unwrap().content, r#"{"approved": true}"#);
    let body = server.requests()[0].json();
    assert_eq!(
        body["response_format"],
        json!({
            "type": "json_schema",
            "json_schema": {"name": "Review", "strict": true, "schema": strict_schema(&ty).unwrap()},
        })
    );
    // The schema travels in its field only: the system text is the task's own.
    assert_eq!(system_of(Api::OpenAi, &body), SYSTEM);
    assert_eq!(body.get("tools"), None);
    openapi::assert_valid_chat_request(&body);
}

#[tokio::test]
async fn an_undeclared_record_is_named_after_its_task_in_the_characters_the_api_allows() {
    let ty = review_type(None);
    let server = Server::scripted(vec![Api::OpenAi.ok("{}", 1, 1)]).await;
    let client = Client::new(Api::OpenAi, Api::OpenAi.settings(&server));
    let long = "x".repeat(80);
    for task in ["review change#2", "v#x", long.as_str(), ""] {
        client.complete(&typed(task, &ty)).await.unwrap();
    }
    let names: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r.json()["response_format"]["json_schema"]["name"].clone())
        .collect();
    assert_eq!(
        names,
        [
            json!("review_change"),
            json!("v_x"),
            json!("x".repeat(64)),
            json!("output")
        ]
    );
    assert_openai_bodies_conform(Api::OpenAi, &server);
}

#[tokio::test]
async fn anthropic_forces_one_tool_whose_input_is_the_reply() {
    let ty = review_type(Some("Review"));
    let input = json!({"approved": false, "findings": ["no tests"], "severity": "high"});
    let server = Server::scripted(vec![tool_reply("Review", input.clone())]).await;
    let reply = call(
        Api::Anthropic,
        Api::Anthropic.settings(&server),
        &typed("review", &ty),
    )
    .await
    .unwrap();
    // The tool's input is the reply, as JSON text; the words beside it are not.
    let content: Value = serde_json::from_str(&reply.content).expect("JSON text");
    assert_eq!(content, input);
    assert_eq!((reply.input_tokens, reply.output_tokens), (12, 8));
    assert_eq!(reply.subtask_request, None);
    let body = server.requests()[0].json();
    assert_eq!(body["tools"].as_array().map(Vec::len), Some(1));
    let tool = &body["tools"][0];
    assert_eq!(tool["name"], "Review");
    assert_eq!(tool["input_schema"], strict_schema(&ty).unwrap());
    assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "Review"})
    );
    assert_eq!(system_of(Api::Anthropic, &body), SYSTEM);
}

#[tokio::test]
async fn a_reply_that_ignores_the_forced_tool_is_read_as_text() {
    let ty = review_type(None);
    let server = Server::scripted(vec![Api::Anthropic.ok(r#"{"approved": true}"#, 1, 1)]).await;
    let reply = call(
        Api::Anthropic,
        Api::Anthropic.settings(&server),
        &typed("review", &ty),
    )
    .await;
    assert_eq!(reply.unwrap().content, r#"{"approved": true}"#);
}

#[tokio::test]
async fn an_openai_refusal_is_the_reply_so_the_type_check_can_say_what_came_back() {
    let ty = review_type(None);
    let body = json!({"choices": [{"message": {
        "role": "assistant", "content": null, "refusal": "I cannot review this."
    }, "finish_reason": "stop"}]});
    let server = Server::scripted(vec![Reply::json(200, body)]).await;
    let reply = call(
        Api::OpenAi,
        Api::OpenAi.settings(&server),
        &typed("review", &ty),
    )
    .await;
    assert_eq!(reply.unwrap().content, "I cannot review this.");
}

#[tokio::test]
async fn prompt_mode_describes_the_schema_at_the_end_of_the_system_text() {
    both(|api| async move {
        let ty = review_type(Some("Review"));
        let server = Server::scripted(vec![api.ok("{}", 1, 1)]).await;
        let settings = with_mode(api, &server, JsonMode::Prompt);
        call(api, settings, &typed("review", &ty)).await.unwrap();
        let body = server.requests()[0].json();
        assert_eq!(
            system_of(api, &body),
            format!("{SYSTEM}\n\n{}", described(&ty)),
            "{api:?}"
        );
        for native in ["response_format", "tools", "tool_choice"] {
            assert_eq!(body.get(native), None, "{api:?} sent {native}");
        }
        assert_openai_bodies_conform(api, &server);
    })
    .await;
}

#[tokio::test]
async fn a_type_strict_mode_cannot_express_is_described_in_the_prompt_even_in_native_mode() {
    both(|api| async move {
        // A field of type `object`, an untyped array, a record with one: no strict schema.
        let loose = [
            "{approved: boolean, details: object}",
            "array",
            "{items: array}",
        ];
        let server = Server::scripted(vec![api.ok("{}", 1, 1)]).await;
        let client = Client::new(api, api.settings(&server));
        for written in loose {
            let ty = Type::parse(written).expect(written);
            assert_eq!(strict_schema(&ty), None, "{written}");
            client.complete(&typed("loose", &ty)).await.unwrap();
        }
        for (sent, written) in server.requests().iter().zip(loose) {
            let body = sent.json();
            let ty = Type::parse(written).unwrap();
            let system = system_of(api, &body);
            assert!(
                system.ends_with(&described(&ty)),
                "{api:?} {written}: {system}"
            );
            assert_eq!(body.get("response_format"), None, "{api:?} {written}");
            assert_eq!(body.get("tool_choice"), None, "{api:?} {written}");
        }
        assert_openai_bodies_conform(api, &server);
    })
    .await;
}

#[tokio::test]
async fn text_and_untyped_json_add_nothing_to_the_request() {
    both(|api| async move {
        let server = Server::scripted(vec![api.ok("ok", 1, 1)]).await;
        let client = Client::new(api, api.settings(&server));
        let text = typed("t", &Type::String);
        let text = LlmRequest {
            task: TaskMeta::named("t").into(),
            ..text
        };
        let untyped = LlmRequest {
            task: TaskMeta {
                output: Output::Json(None),
                ..TaskMeta::named("u")
            }
            .into(),
            ..text.clone()
        };
        let any = typed("a", &Type::Any);
        for req in [&text, &untyped, &any] {
            client.complete(req).await.unwrap();
        }
        for sent in server.requests() {
            let body = sent.json();
            assert_eq!(system_of(api, &body), SYSTEM, "{api:?}");
            assert_eq!(body.get("response_format"), None, "{api:?}");
            assert_eq!(body.get("tools"), None, "{api:?}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_task_that_may_spawn_keeps_its_tool_and_anthropic_describes_the_schema_instead() {
    let ty = review_type(Some("Review"));
    let spawning = LlmRequest {
        task: TaskMeta {
            output: Output::Json(Some(ValueType::from(&ty))),
            subtasks: true,
            ..TaskMeta::named("review")
        }
        .into(),
        ..typed("review", &ty)
    };
    // OpenAI takes the tool and the response format together: the model either calls
    // the tool or answers in the schema.
    let server = Server::scripted(vec![Api::OpenAi.ok("{}", 1, 1)]).await;
    call(Api::OpenAi, Api::OpenAi.settings(&server), &spawning)
        .await
        .unwrap();
    let body = server.requests()[0].json();
    assert_eq!(body["tools"][0]["function"]["name"], "spawn_subtask");
    assert_eq!(body["response_format"]["json_schema"]["name"], "Review");
    openapi::assert_valid_chat_request(&body);
    // A forced tool would forbid spawning: Anthropic offers the spawning tool alone and
    // describes the schema.
    let server = Server::scripted(vec![Api::Anthropic.ok("{}", 1, 1)]).await;
    call(Api::Anthropic, Api::Anthropic.settings(&server), &spawning)
        .await
        .unwrap();
    let body = server.requests()[0].json();
    let names: Vec<&Value> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["name"])
        .collect();
    assert_eq!(names, [&json!("spawn_subtask")]);
    assert_eq!(body.get("tool_choice"), None);
    assert!(system_of(Api::Anthropic, &body).ends_with(&described(&ty)));
}

/// What a server without structured output says, in each API's error shape.
fn refusal(api: Api) -> Reply {
    Reply::json(
        400,
        match api {
            Api::OpenAi => json!({"error": {
                "message": "Unsupported parameter: 'response_format' is not supported with this model.",
                "type": "invalid_request_error", "param": "response_format", "code": null
            }}),
            Api::Anthropic => json!({"type": "error", "error": {
                "type": "invalid_request_error", "message": "tool_choice: Extra inputs are not permitted"
            }}),
        },
    )
}

/// Whether a body asked for the native form.
fn is_native(body: &Value) -> bool {
    body.get("response_format").is_some() || body.get("tool_choice").is_some()
}

#[tokio::test]
async fn a_server_that_refuses_the_native_field_is_asked_again_in_prompt_mode_for_the_rest_of_the_run(
) {
    both(|api| async move {
        let ty = review_type(Some("Review"));
        let server =
            Server::scripted(vec![refusal(api), api.ok(r#"{"approved": true}"#, 4, 2)]).await;
        let client = Client::new(api, api.settings(&server));
        let first = client.complete(&typed("first", &ty)).await.unwrap();
        let second = client.complete(&typed("second", &ty)).await.unwrap();
        assert_eq!(first.content, r#"{"approved": true}"#, "{api:?}");
        // One warning for the run, on the call that switched.
        assert_eq!(first.warnings.len(), 1, "{api:?}: {:?}", first.warnings);
        let warning = &first.warnings[0];
        for part in [api.name(), "--json-mode prompt", "in the prompt"] {
            assert!(
                warning.contains(part),
                "{api:?}: {part:?} missing: {warning}"
            );
        }
        assert_eq!(second.warnings, Vec::<String>::new(), "{api:?}");
        // The server's log: native, the same call described, then the next task described.
        let bodies: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
        assert_eq!(bodies.len(), 3, "{api:?}");
        let natives: Vec<bool> = bodies.iter().map(is_native).collect();
        assert_eq!(natives, [true, false, false], "{api:?}");
        // The same conversation, asked again.
        let turns = |b: &Value| -> Vec<Value> {
            let all = b["messages"].as_array().cloned().unwrap_or_default();
            all.into_iter().filter(|m| m["role"] != "system").collect()
        };
        assert_eq!(turns(&bodies[0]), turns(&bodies[1]), "{api:?}");
        assert_eq!(
            turns(&bodies[1]),
            [json!({"role": "user", "content": "Review the change."})]
        );
        for body in &bodies[1..] {
            assert!(system_of(api, body).ends_with(&described(&ty)), "{api:?}");
            assert_eq!(body.get("tools"), None, "{api:?}");
        }
        assert_openai_bodies_conform(api, &server);
    })
    .await;
}

#[tokio::test]
async fn concurrent_calls_refused_at_once_fall_back_together_with_one_warning() {
    both(|api| async move {
        let ty = review_type(None);
        let ok = api.ok("{}", 1, 1);
        let no = refusal(api);
        // Every native body is refused, whenever it arrives.
        let server = Server::start(move |_, r| {
            let body = r.json();
            if is_native(&body) {
                no.clone()
            } else {
                ok.clone().after(Duration::from_millis(20))
            }
        })
        .await;
        let client = Client::new(api, api.settings(&server));
        let requests: Vec<LlmRequest> = (0..4).map(|i| typed(&format!("t{i}"), &ty)).collect();
        let replies = join_all(requests.iter().map(|r| client.complete(r))).await;
        let warnings: usize = replies
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|e| panic!("{api:?}: {e:?}"))
                    .warnings
                    .len()
            })
            .sum();
        assert_eq!(warnings, 1, "{api:?}");
        let described = server
            .requests()
            .iter()
            .filter(|r| !is_native(&r.json()))
            .count();
        assert_eq!(described, 4, "{api:?}");
    })
    .await;
}

#[tokio::test]
async fn when_the_prompt_mode_call_fails_too_the_error_names_the_feature_and_the_flag() {
    both(|api| async move {
        let ty = review_type(None);
        let server = Server::scripted(vec![
            refusal(api),
            Reply::json(400, json!({"error": "bad"})),
        ])
        .await;
        let err = call(api, api.settings(&server), &typed("review", &ty))
            .await
            .expect_err("both calls fail");
        let feature = match api {
            Api::OpenAi => "response_format",
            Api::Anthropic => "tool_choice",
        };
        assert_mentions(
            &err,
            Reason::UnexpectedError,
            &[api.name(), "HTTP 400", feature, "--json-mode prompt", "bad"],
        );
        assert_eq!(server.hits(), 2, "{api:?}");
    })
    .await;
}

#[tokio::test]
async fn a_refusal_about_something_else_is_no_reason_to_fall_back() {
    both(|api| async move {
        let ty = review_type(None);
        let other = json!({"error": {"message": "max_tokens is too large"}});
        let server = Server::scripted(vec![Reply::json(400, other), api.ok("{}", 1, 1)]).await;
        let client = Client::new(api, api.settings(&server));
        client
            .complete(&typed("review", &ty))
            .await
            .expect_err("refused");
        client.complete(&typed("review", &ty)).await.unwrap();
        let natives: Vec<bool> = server
            .requests()
            .iter()
            .map(|r| is_native(&r.json()))
            .collect();
        assert_eq!(natives, [true, true], "{api:?}");
    })
    .await;
}

#[tokio::test]
async fn a_server_that_refuses_the_native_field_with_any_status_is_not_retried_and_is_asked_in_prompt_mode(
) {
    both(|api| async move {
        let ty = review_type(None);
        // llama.cpp's words and status when it is asked for tools without --jinja; a
        // server without structured output, with a 500 of its own.
        let words = match api {
            Api::OpenAi => "'response_format' is not supported by this server",
            Api::Anthropic => "tools param requires --jinja flag",
        };
        let refused = Reply::json(
            500,
            json!({"error": {"code": 500, "message": words, "type": "server_error"}}),
        );
        let server = Server::scripted(vec![refused, api.ok(r#"{"approved": true}"#, 4, 2)]).await;
        let reply = call(api, api.settings(&server), &typed("review", &ty))
            .await
            .unwrap_or_else(|e| panic!("{api:?}: {e:?}"));
        assert_eq!(reply.content, r#"{"approved": true}"#, "{api:?}");
        let natives: Vec<bool> = server
            .requests()
            .iter()
            .map(|r| is_native(&r.json()))
            .collect();
        assert_eq!(
            natives,
            [true, false],
            "{api:?}: one refusal, no retry, then prompt mode"
        );
        assert!(
            reply.warnings[0].contains("HTTP 500"),
            "{api:?}: {:?}",
            reply.warnings
        );
    })
    .await;
}

#[tokio::test]
async fn a_server_error_that_names_no_field_the_request_carried_is_retried_as_before() {
    let ty = review_type(None);
    // `tools` is named, but a typed request to OpenAI carries `response_format` only.
    let words = json!({"error": {"message": "internal error in the tools worker"}});
    let server = Server::scripted(vec![Reply::json(500, words), Api::OpenAi.ok("{}", 1, 1)]).await;
    call(
        Api::OpenAi,
        Api::OpenAi.settings(&server),
        &typed("review", &ty),
    )
    .await
    .unwrap();
    let natives: Vec<bool> = server
        .requests()
        .iter()
        .map(|r| is_native(&r.json()))
        .collect();
    assert_eq!(natives, [true, true], "retried, and still native");
}

#[tokio::test]
async fn a_list_goes_to_the_server_wrapped_in_an_object_and_its_reply_is_unwrapped() {
    both(|api| async move {
        let ty = Type::parse("string[]").unwrap();
        let wrapped = json!({"value": ["a.rs", "b.rs"]});
        let answer = match api {
            Api::OpenAi => api.ok(&wrapped.to_string(), 3, 2),
            Api::Anthropic => tool_reply("files", wrapped),
        };
        let server = Server::scripted(vec![answer]).await;
        let reply = call(api, api.settings(&server), &typed("files", &ty))
            .await
            .unwrap_or_else(|e| panic!("{api:?}: {e:?}"));
        assert_eq!(reply.content, r#"["a.rs","b.rs"]"#, "{api:?}");
        let body = server.requests()[0].json();
        let schema = match api {
            Api::OpenAi => body["response_format"]["json_schema"]["schema"].clone(),
            Api::Anthropic => body["tools"][0]["input_schema"].clone(),
        };
        assert_eq!(
            schema,
            json!({"type": "object", "properties": {"value": {"type": "array", "items": {"type": "string"}}},
                   "required": ["value"], "additionalProperties": false}),
            "{api:?}"
        );
        assert!(!system_of(api, &body).contains("Reply with JSON only"), "{api:?}");
        assert_openai_bodies_conform(api, &server);
    })
    .await;
}

#[tokio::test]
async fn a_wrapped_list_refused_by_the_server_is_described_unwrapped_in_prompt_mode() {
    both(|api| async move {
        let ty = Type::parse("string[]").unwrap();
        let server = Server::scripted(vec![refusal(api), api.ok(r#"["a.rs"]"#, 3, 2)]).await;
        let reply = call(api, api.settings(&server), &typed("files", &ty))
            .await
            .unwrap_or_else(|e| panic!("{api:?}: {e:?}"));
        assert_eq!(reply.content, r#"["a.rs"]"#, "{api:?}");
        let body = server.requests()[1].json();
        assert!(system_of(api, &body).ends_with(&described(&ty)), "{api:?}");
    })
    .await;
}

#[test]
fn the_json_mode_reads_native_or_prompt() {
    assert_eq!(JsonMode::parse("native"), Some(JsonMode::Native));
    assert_eq!(JsonMode::parse("prompt"), Some(JsonMode::Prompt));
    assert_eq!(JsonMode::parse("tools"), None);
    assert_eq!(JsonMode::default(), JsonMode::Native);
    assert_eq!(
        Settings::new("http://127.0.0.1:1", "m").json_mode,
        JsonMode::Native
    );
}

#[test]
fn a_declared_record_keeps_its_name_and_other_types_are_named_after_the_task() {
    use tv_runtime::providers::schema_name;
    let field = |name: &str| Field {
        name: name.into(),
        optional: false,
        ty: Type::Boolean,
    };
    let declared = Type::Record(Arc::new(Record::new(
        Some("Verdict".into()),
        vec![field("ok")],
    )));
    assert_eq!(schema_name(&declared, "judge"), "Verdict");
    assert_eq!(schema_name(&review_type(None), "judge.v2"), "judge_v2");
    // The spawning tool's name stays the spawning tool's.
    assert_eq!(
        schema_name(&review_type(None), "spawn_subtask"),
        "spawn_subtask_reply"
    );
}
