//! What a task's `<model>` settings and `<subtasks>` switch do to the bodies both
//! adapters send, and how each reads a reply cut at the output limit (DESIGN §12).

use super::*;
use openapi::assert_valid_chat_request;
use tv_vm::bundle::ModelSettings;

fn with_settings(model: &str, settings: ModelSettings, subtasks: bool) -> LlmRequest {
    LlmRequest {
        task: TaskMeta {
            subtasks,
            ..task(Some(model))
        }
        .into(),
        settings,
        ..request(Some(model))
    }
}

fn every_setting() -> ModelSettings {
    ModelSettings {
        temperature: Some(0.2),
        max_tokens: Some(800),
        top_p: Some(0.9),
        seed: Some(7),
        stop: Some(vec!["\n".into(), "Observation:".into()]),
    }
}

/// The one body a scripted server received for `req`.
async fn body_sent(api: Api, req: &LlmRequest) -> Value {
    let server = Server::scripted(vec![api.ok("ok", 1, 1)]).await;
    call(api, api.settings(&server), req).await.unwrap();
    let [sent] = &server.requests()[..] else {
        panic!("one request expected")
    };
    sent.json()
}

#[tokio::test]
async fn sampling_settings_reach_openai_as_its_schema_spells_them() {
    let body = body_sent(
        Api::OpenAi,
        &with_settings("gpt-4o", every_setting(), false),
    )
    .await;
    assert_valid_chat_request(&body);
    let fields = ["temperature", "top_p", "seed", "stop", "max_tokens"].map(|k| body[k].clone());
    let expected = [
        json!(0.2),
        json!(0.9),
        json!(7),
        json!(["\n", "Observation:"]),
        json!(800),
    ];
    assert_eq!(fields, expected);
    assert!(body.get("tools").is_none(), "{body}");
}

#[tokio::test]
async fn openai_reasoning_models_are_sent_max_completion_tokens_instead() {
    let settings = ModelSettings {
        max_tokens: Some(300),
        ..ModelSettings::default()
    };
    let body = body_sent(Api::OpenAi, &with_settings("o3-mini", settings, false)).await;
    assert_valid_chat_request(&body);
    assert_eq!(body["max_completion_tokens"], 300);
    assert!(body.get("max_tokens").is_none(), "{body}");
}

#[tokio::test]
async fn sampling_settings_reach_anthropic_as_its_api_spells_them() {
    let req = with_settings("claude-sonnet-4", every_setting(), false);
    let body = body_sent(Api::Anthropic, &req).await;
    assert_eq!(body["max_tokens"], 800);
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["top_p"], 0.9);
    assert_eq!(body["stop_sequences"], json!(["\n", "Observation:"]));
    // The messages API has no seed.
    assert!(
        body.get("seed").is_none() && body.get("tools").is_none(),
        "{body}"
    );
    let plain = with_settings("claude-sonnet-4-5", ModelSettings::default(), false);
    let body = body_sent(Api::Anthropic, &plain).await;
    assert_eq!(
        body["max_tokens"], 4096,
        "the API needs a limit: 4096 is the last default"
    );
}

#[tokio::test]
async fn only_a_task_that_opts_in_is_offered_the_spawning_tool() {
    for api in [Api::OpenAi, Api::Anthropic] {
        let model = if api == Api::OpenAi {
            "gpt-4o"
        } else {
            "claude-sonnet-4-5"
        };
        let without = body_sent(api, &with_settings(model, ModelSettings::default(), false)).await;
        assert!(without.get("tools").is_none(), "{api:?}: {without}");
        let with = body_sent(api, &with_settings(model, ModelSettings::default(), true)).await;
        assert_eq!(with["tools"].as_array().map(Vec::len), Some(1), "{api:?}");
    }
}

#[tokio::test]
async fn a_reply_cut_at_the_output_limit_is_marked_with_the_limit_in_force() {
    for (api, reply) in [
        (
            Api::OpenAi,
            json!({"choices": [{"message": {"role": "assistant", "content": "The first half"}, "finish_reason": "length"}],
                   "usage": {"prompt_tokens": 9, "completion_tokens": 50}}),
        ),
        (
            Api::Anthropic,
            json!({"content": [{"type": "text", "text": "The first half"}], "stop_reason": "max_tokens",
                   "model": "claude-sonnet-4-5-20250929", "usage": {"input_tokens": 9, "output_tokens": 50}}),
        ),
    ] {
        let server = Server::scripted(vec![Reply::json(200, reply)]).await;
        let settings = ModelSettings {
            max_tokens: Some(50),
            ..ModelSettings::default()
        };
        let model = if api == Api::OpenAi {
            "gpt-4o"
        } else {
            "claude-sonnet-4-5"
        };
        let req = with_settings(model, settings, false);
        let r = call(api, api.settings(&server), &req).await.unwrap();
        assert!(r.truncated, "{api:?}");
        assert_eq!(
            (r.content.as_str(), r.max_tokens),
            ("The first half", Some(50))
        );
        // The model that answered, as the server names it, else the one asked for.
        let answered = if api == Api::OpenAi {
            "gpt-4o"
        } else {
            "claude-sonnet-4-5-20250929"
        };
        assert_eq!(r.model, answered);
    }
}

#[tokio::test]
async fn a_server_that_refuses_tools_is_answered_with_the_element_that_turns_them_off() {
    let refusal = json!({"error": {"message": "tools param requires --jinja flag", "type": "invalid_request_error"}});
    let server = Server::scripted(vec![Reply::json(400, refusal)]).await;
    let req = with_settings("local-model", ModelSettings::default(), true);
    let err = call(Api::OpenAi, Api::OpenAi.settings(&server), &req)
        .await
        .unwrap_err();
    assert_mentions(
        &err,
        Reason::UnexpectedError,
        &[
            "HTTP 400",
            "--jinja",
            "<subtasks>enabled</subtasks>",
            "`summarise`",
        ],
    );
}

/// The body a scripted server received for `req`, and the warnings of the reply.
async fn sent_and_said(api: Api, req: &LlmRequest) -> (Value, Vec<String>) {
    let server = Server::scripted(vec![api.ok("ok", 1, 1)]).await;
    let reply = call(api, api.settings(&server), req).await.unwrap();
    (server.requests()[0].json(), reply.warnings)
}

#[tokio::test]
async fn a_reasoning_model_is_sent_no_temperature_top_p_or_stop_and_the_notes_say_so() {
    let (body, warnings) =
        sent_and_said(Api::OpenAi, &with_settings("o3", every_setting(), false)).await;
    assert_valid_chat_request(&body);
    for refused in ["temperature", "top_p", "stop"] {
        assert!(body.get(refused).is_none(), "{refused}: {body}");
        assert!(
            warnings.iter().any(|w| w.contains(&format!(
                "`o3` does not take `{refused}`, so the request leaves `{refused}` out"
            ))),
            "{refused}: {warnings:?}"
        );
    }
    assert_eq!(
        (&body["seed"], &body["max_completion_tokens"]),
        (&json!(7), &json!(800))
    );
    assert!(
        warnings.iter().all(|w| w.starts_with("task `summarise`")),
        "{warnings:?}"
    );
    // A dated snapshot is its model; a model the table does not know gets every setting.
    let (dated, _) = sent_and_said(
        Api::OpenAi,
        &with_settings("o3-2025-04-16", every_setting(), false),
    )
    .await;
    assert!(dated.get("temperature").is_none(), "{dated}");
    let (local, said) = sent_and_said(
        Api::OpenAi,
        &with_settings("llama3.1", every_setting(), false),
    )
    .await;
    assert_eq!(
        (&local["temperature"], &local["stop"]),
        (&json!(0.2), &json!(["\n", "Observation:"]))
    );
    assert!(said.is_empty(), "{said:?}");
}

#[tokio::test]
async fn anthropic_is_sent_temperature_or_top_p_as_its_model_takes_them_and_the_seed_is_said_to_be_left_out(
) {
    let (body, warnings) = sent_and_said(
        Api::Anthropic,
        &with_settings("claude-sonnet-4-5", every_setting(), false),
    )
    .await;
    assert_eq!(body["temperature"], 0.2);
    assert!(body.get("top_p").is_none(), "{body}");
    let said = warnings.join("\n");
    assert!(
        said.contains("`claude-sonnet-4-5` takes `temperature` or `top_p`, not both, so the request leaves `top_p` out")
            && said.contains("Anthropic's API has no seed, so the request leaves `seed` out"),
        "{said}"
    );
}

#[tokio::test]
async fn a_server_that_refuses_tools_with_a_500_is_asked_once_and_told_which_element_to_remove() {
    // llama-server without --jinja, as it answers.
    let refusal = json!({"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}});
    let server =
        Server::scripted(vec![Reply::json(500, refusal), Api::OpenAi.ok("ok", 1, 1)]).await;
    let req = with_settings("local-model", ModelSettings::default(), true);
    let err = call(Api::OpenAi, Api::OpenAi.settings(&server), &req)
        .await
        .unwrap_err();
    assert_eq!(server.hits(), 1, "a refusal is not retried");
    assert_eq!(
        err.kind(),
        CallKind::Refused {
            field: "tools",
            status: 500
        },
        "the status is kept beside the field"
    );
    assert_mentions(
        &err,
        Reason::UnexpectedError,
        &[
            "refused the request's `tools` field",
            "HTTP 500",
            "--jinja",
            "<subtasks>enabled</subtasks>",
            "`summarise`",
        ],
    );
    assert!(!err.message().contains("gave up"), "{err}");
}
