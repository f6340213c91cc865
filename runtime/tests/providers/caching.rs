//! Prompt caching on the wire (DESIGN §15): which of Anthropic's system blocks carry
//! `cache_control`, and the cache reads and writes both providers report in `usage`.

use super::*;
use tv_stdlib::types::Type;
use tv_vm::bundle::{Output, ValueType};

/// `chars` characters of plain prose, the same for the same length.
fn prose(chars: usize) -> String {
    "The release notes say that v2 ships on Friday, after the last review. "
        .chars()
        .cycle()
        .take(chars)
        .collect()
}

/// The standard conversation to `model`, with this system prompt and context; `spawn`:
/// the task offers the spawning tool.
fn with(model: &str, system_prompt: String, context: String, spawn: bool) -> LlmRequest {
    LlmRequest {
        task: TaskMeta {
            subtasks: spawn,
            ..task(Some(model))
        }
        .into(),
        system_prompt,
        context: context.into(),
        ..request(Some(model))
    }
}

/// The body the Anthropic adapter sends for `req`.
async fn anthropic_body(req: &LlmRequest) -> Value {
    let server = Server::scripted(vec![Api::Anthropic.ok("ok", 1, 1)]).await;
    let reply = call(Api::Anthropic, Api::Anthropic.settings(&server), req).await;
    reply.unwrap_or_else(|e| panic!("{e:?}"));
    server.requests()[0].json()
}

/// For each system block of `body`, whether it asks to be cached; a mark must be the
/// ephemeral one.
fn marks(body: &Value) -> Vec<bool> {
    let blocks = body["system"].as_array().expect("system blocks");
    blocks
        .iter()
        .map(|block| match block.get("cache_control") {
            Some(mark) => {
                assert_eq!(mark, &json!({"type": "ephemeral"}), "{block}");
                true
            }
            None => false,
        })
        .collect()
}

/// Characters of the tools `body` offers, as sent.
fn tool_chars(body: &Value) -> usize {
    body.get("tools")
        .map_or(0, |t| t.to_string().chars().count())
}

/// Tokens in `chars` characters, as the adapter estimates them.
fn tokens(chars: usize) -> usize {
    chars.div_ceil(4)
}

/// An Anthropic reply whose `usage` is `usage`.
fn anthropic_reply(usage: Value) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "usage": usage
        }),
    )
}

/// An OpenAI reply whose `usage` is `usage`.
fn openai_reply(usage: Value) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "chatcmpl-1",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": usage
        }),
    )
}

/// Token counts of every kind, to compare in one assertion: input, output, cache reads,
/// cache writes.
fn counts(r: &LlmReply) -> (u64, u64, u64, u64) {
    (
        r.input_tokens,
        r.output_tokens,
        r.cache_read_tokens,
        r.cache_write_tokens,
    )
}

#[tokio::test]
async fn a_long_system_prompt_and_a_long_file_context_both_carry_cache_control_for_anthropic() {
    let (prompt, context) = (prose(6000), prose(8000));
    let mut req = with("claude-sonnet-4-5", prompt.clone(), context.clone(), true);
    std::sync::Arc::make_mut(&mut req.messages)
        .insert(1, message(Role::System, "Answer in English."));
    let body = anthropic_body(&req).await;
    let mark = json!({"type": "ephemeral"});
    // Static first: the system prompt, the files, then the session's own system text,
    // which changes from call to call and is not marked.
    let expected = json!([
        {"type": "text", "text": prompt, "cache_control": mark},
        {"type": "text", "text": format!("Context:\n{context}"), "cache_control": mark},
        {"type": "text", "text": "Answer in English."},
    ]);
    assert_eq!(body["system"], expected);
    assert_eq!(body["messages"], conversation());
}

#[tokio::test]
async fn a_short_prompt_is_sent_in_system_blocks_without_cache_control() {
    let body = anthropic_body(&request(Some("claude-sonnet-4-5"))).await;
    let expected = json!([
        {"type": "text", "text": "You are terse."},
        {"type": "text", "text": "Context:\nnotes.txt: v2 ships on Friday."},
    ]);
    assert_eq!(body["system"], expected);
    assert!(!body.to_string().contains("cache_control"), "{body}");
}

#[tokio::test]
async fn a_request_without_system_text_sends_no_system_field() {
    let req = with("claude-sonnet-4-5", String::new(), String::new(), true);
    let body = anthropic_body(&req).await;
    assert_eq!(body.get("system"), None, "{body}");
}

#[tokio::test]
async fn only_the_context_block_is_marked_when_only_the_prefix_through_it_is_long_enough() {
    let (prompt, context) = (prose(2000), prose(2000));
    let req = with("claude-sonnet-4-5", prompt, context, true);
    let body = anthropic_body(&req).await;
    // The tools, then the system prompt, fall short of Sonnet's 1024 tokens; with the
    // context they reach it, though the context alone would not.
    let through_prompt = tool_chars(&body) + 2000;
    let context_block = "Context:\n".len() + 2000;
    assert!(tokens(through_prompt) < 1024);
    assert!(tokens(context_block) < 1024);
    assert!(tokens(through_prompt + context_block) >= 1024);
    assert_eq!(marks(&body), [false, true]);
}

#[tokio::test]
async fn the_offered_tools_count_toward_the_cacheable_prefix() {
    // 1000 tokens of system prompt: too short for Sonnet on its own.
    let alone = with("claude-sonnet-4-5", prose(4000), String::new(), false);
    assert_eq!(marks(&anthropic_body(&alone).await), [false]);
    // The spawning tool comes first in the prompt and makes it long enough.
    let spawning = with("claude-sonnet-4-5", prose(4000), String::new(), true);
    assert_eq!(marks(&anthropic_body(&spawning).await), [true]);
    // So does the forced reply tool of a typed task.
    let Some(ty) = Type::parse("{approved: boolean, findings: string[]}") else {
        panic!("a record type")
    };
    let typed = LlmRequest {
        task: TaskMeta {
            output: Output::Json(Some(ValueType::from(&ty))),
            model: Some("claude-sonnet-4-5".into()),
            ..TaskMeta::named("review")
        }
        .into(),
        ..alone.clone()
    };
    let body = anthropic_body(&typed).await;
    assert_eq!(body["tool_choice"]["name"], "review");
    assert!(tokens(tool_chars(&body) + 4000) >= 1024);
    assert_eq!(marks(&body), [true]);
}

#[tokio::test]
async fn a_prefix_counts_four_characters_a_token_rounded_up_against_the_models_minimum() {
    // No tools, no context: the prefix is the system prompt alone.
    let cases = [
        // 1023 tokens; 4093 characters round up to 1024.
        ("claude-sonnet-4-5", 4092, false),
        ("claude-sonnet-4-5", 4093, true),
        ("claude-sonnet-4-5-20250929", 4096, true),
        ("claude-opus-4-1", 4096, true),
        // Haiku 3 and 3.5 need 2048 tokens.
        ("claude-3-5-haiku-latest", 8188, false),
        ("claude-3-5-haiku-20241022", 8189, true),
        ("claude-3-haiku-20240307", 8192, true),
        // Opus 4.5, Opus 4.6 and Haiku 4.5 need 4096, however a proxy spells them.
        ("claude-opus-4-5", 16380, false),
        ("claude-opus-4-5-20251101", 16381, true),
        ("claude-opus-4-6", 16380, false),
        ("claude-haiku-4-5", 8192, false),
        ("claude-haiku-4-5-20251001", 16384, true),
        ("anthropic/claude-haiku-4.5", 16380, false),
        // A model the list does not name caches from 1024 tokens.
        ("claude-sonnet-9", 4096, true),
    ];
    for (model, chars, marked) in cases {
        let req = with(model, prose(chars), String::new(), false);
        let body = anthropic_body(&req).await;
        assert_eq!(marks(&body), [marked], "{model} with {chars} characters");
    }
}

#[tokio::test]
async fn a_schema_described_in_the_prompt_is_a_last_block_that_is_not_marked() {
    let Some(ty) = Type::parse("{approved: boolean}") else {
        panic!("a record type")
    };
    let req = LlmRequest {
        task: TaskMeta {
            output: Output::Json(Some(ValueType::from(&ty))),
            ..TaskMeta::named("review")
        }
        .into(),
        ..with("claude-sonnet-4-5", prose(6000), String::new(), false)
    };
    let server = Server::scripted(vec![Api::Anthropic.ok("{\"approved\": true}", 1, 1)]).await;
    let mut settings = Api::Anthropic.settings(&server);
    settings.json_mode = tv_runtime::providers::JsonMode::Prompt;
    call(Api::Anthropic, settings, &req).await.unwrap();
    let body = server.requests()[0].json();
    assert_eq!(marks(&body), [true, false]);
    let last = body["system"][1]["text"].as_str().unwrap_or_default();
    assert!(last.starts_with("Reply with JSON only"), "{last}");
}

#[tokio::test]
async fn anthropic_cache_reads_and_writes_are_reported_and_input_tokens_sums_them_all() {
    let server = Server::scripted(vec![
        // The first call writes the prefix to the cache, the second reads it.
        anthropic_reply(json!({
            "input_tokens": 21, "cache_creation_input_tokens": 1800,
            "cache_read_input_tokens": 0, "output_tokens": 393
        })),
        anthropic_reply(json!({
            "input_tokens": 25, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 1800, "output_tokens": 400
        })),
    ])
    .await;
    let client = Client::new(Api::Anthropic, Api::Anthropic.settings(&server));
    let req = with("claude-sonnet-4-5", prose(8000), String::new(), true);
    let first = client.complete(&req).await.unwrap();
    assert_eq!(counts(&first), (1821, 393, 0, 1800));
    let second = client.complete(&req).await.unwrap();
    assert_eq!(counts(&second), (1825, 400, 1800, 0));
}

#[tokio::test]
async fn openai_cached_tokens_are_reported_as_cache_reads_and_its_bodies_still_conform() {
    let usage = json!({
        "prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0}
    });
    let server = Server::scripted(vec![openai_reply(usage)]).await;
    let (prompt, context) = (prose(6000), prose(8000));
    let req = with("openai:gpt-4o", prompt.clone(), context.clone(), true);
    let reply = call(Api::OpenAi, Api::OpenAi.settings(&server), &req).await;
    // `prompt_tokens` already counts the cached ones.
    assert_eq!(counts(&reply.unwrap()), (2006, 300, 1920, 0));
    let body = server.requests()[0].json();
    openapi::assert_valid_chat_request(&body);
    // OpenAI caches on its own: static text leads, and nothing is marked.
    let mut messages = vec![json!({
        "role": "system", "content": format!("{prompt}\n\nContext:\n{context}")
    })];
    messages.extend(conversation().as_array().unwrap().iter().cloned());
    assert_eq!(body["messages"], Value::Array(messages));
    assert!(!body.to_string().contains("cache_control"));
}

#[tokio::test]
async fn a_reply_with_no_usage_counts_zero_tokens_of_every_kind() {
    let (anthropic, openai) = (anthropic_reply, openai_reply);
    let replies = [
        (Api::Anthropic, anthropic(Value::Null)),
        (Api::Anthropic, anthropic(json!({}))),
        (Api::OpenAi, openai(Value::Null)),
        (Api::OpenAi, openai(json!({}))),
        (Api::OpenAi, openai(json!({"prompt_tokens_details": null}))),
        (
            Api::OpenAi,
            Reply::json(200, json!({"choices": [{"message": {"content": "ok"}}]})),
        ),
        (
            Api::Anthropic,
            Reply::json(200, json!({"content": [{"type": "text", "text": "ok"}]})),
        ),
    ];
    for (api, reply) in replies {
        let server = Server::scripted(vec![reply]).await;
        let reply = succeeds(api, api.settings(&server)).await;
        assert_eq!(counts(&reply), (0, 0, 0, 0), "{api:?}");
        assert_openai_bodies_conform(api, &server);
    }
}

#[tokio::test]
async fn usage_without_cache_fields_reports_no_cache_reads_or_writes() {
    both(|api| async move {
        let server = Server::scripted(vec![api.ok("ok", 31, 5)]).await;
        let reply = succeeds(api, api.settings(&server)).await;
        assert_eq!(counts(&reply), (31, 5, 0, 0), "{api:?}");
    })
    .await;
}
