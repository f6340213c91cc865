//! Failing calls: rate limits and `Retry-After`, server errors, timeouts, dropped and
//! refused connections, malformed replies, refused keys, and the concurrency cap.

use super::*;

#[tokio::test]
async fn a_rate_limited_request_waits_as_long_as_retry_after_asks_then_succeeds() {
    both(|api| async move {
        let limited = Reply::json(429, r#"{"error": "slow down"}"#).header("retry-after", "1");
        let server = Server::scripted(vec![limited, api.ok("done", 2, 3)]).await;
        assert_eq!(succeeds(api, api.settings(&server)).await.content, "done");
        let hits = server.requests();
        assert_eq!(hits.len(), 2, "{api:?}");
        // The backoff alone would be about 10 ms.
        let gap = hits[1].at - hits[0].at;
        let honoured = gap >= Duration::from_secs(1) && gap < Duration::from_secs(3);
        assert!(honoured, "{api:?}: {gap:?}");
    })
    .await;
}

#[tokio::test]
async fn a_retry_after_beyond_the_waiting_budget_fails_at_once() {
    both(|api| async move {
        // An hour: a client that waited would hang the test, whatever the machine's load.
        let limited = Reply::json(429, "{}").header("retry-after", "3600");
        let server = Server::scripted(vec![limited]).await;
        let started = Instant::now();
        let err = fails(api, api.settings(&server)).await;
        assert!(started.elapsed() < Duration::from_secs(60), "{api:?}");
        assert_eq!(server.hits(), 1, "{api:?}");
        assert_mentions(&err, Reason::UnexpectedError, &["429", "rate-limit budget"]);
    })
    .await;
}

#[tokio::test]
async fn a_persistent_server_error_fails_once_every_retry_is_spent() {
    both(|api| async move {
        let overloaded = Reply::json(500, r#"{"error": "the model is overloaded"}"#);
        let server = Server::scripted(vec![overloaded]).await;
        let mut settings = api.settings(&server);
        settings.max_retries = 3;
        let err = fails(api, settings).await;
        assert_eq!(server.hits(), 4, "{api:?}");
        let parts = [
            api.name(),
            "500",
            "the model is overloaded",
            "gave up after 4 attempts",
        ];
        assert_mentions(&err, Reason::UnexpectedError, &parts);
    })
    .await;
}

#[tokio::test]
async fn a_reply_slower_than_the_request_timeout_is_retried() {
    both(|api| async move {
        // Far slower than three cut attempts take even on a loaded machine.
        let slow = api.ok("late", 1, 1).after(Duration::from_secs(120));
        let server = Server::scripted(vec![slow, api.ok("on time", 1, 1)]).await;
        let mut settings = api.settings(&server);
        settings.request_timeout = Duration::from_millis(200);
        assert_eq!(succeeds(api, settings).await.content, "on time");
        assert_eq!(server.hits(), 2, "{api:?}");
    })
    .await;
}

#[tokio::test]
async fn replies_that_are_always_too_slow_end_in_execution_timeout() {
    both(|api| async move {
        // Far slower than three cut attempts take even on a loaded machine.
        let slow = api.ok("late", 1, 1).after(Duration::from_secs(120));
        let server = Server::scripted(vec![slow]).await;
        let mut settings = api.settings(&server);
        settings.request_timeout = Duration::from_millis(200);
        settings.max_retries = 2;
        let started = Instant::now();
        let err = fails(api, settings).await;
        assert_mentions(
            &err,
            Reason::ExecutionTimeout,
            &[api.name(), "200ms", "3 attempts"],
        );
        assert_eq!(server.hits(), 3, "{api:?}");
        let cut = started.elapsed() < Duration::from_secs(60);
        assert!(cut, "each attempt should end after 200 ms");
    })
    .await;
}

#[tokio::test]
async fn a_connection_dropped_mid_request_is_retried() {
    both(|api| async move {
        let server = Server::scripted(vec![Reply::Drop, api.ok("second try", 1, 1)]).await;
        assert_eq!(
            succeeds(api, api.settings(&server)).await.content,
            "second try"
        );
        assert_eq!(server.hits(), 2, "{api:?}");
    })
    .await;
}

#[tokio::test]
async fn a_server_that_cannot_be_reached_or_always_hangs_up_is_retried_then_reported() {
    // A port that was free a moment ago: connecting is refused.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let mut settings = Settings::new(format!("http://127.0.0.1:{port}/v1"), "m");
    settings.max_retries = 1;
    settings.backoff_base = Duration::from_millis(10);
    let err = fails(Api::OpenAi, settings).await;
    assert_mentions(
        &err,
        Reason::UnexpectedError,
        &["openai: ", "gave up after 2 attempts"],
    );

    let server = Server::scripted(vec![Reply::Drop]).await;
    let mut settings = Api::Anthropic.settings(&server);
    settings.max_retries = 0;
    let err = fails(Api::Anthropic, settings).await;
    assert_mentions(
        &err,
        Reason::UnexpectedError,
        &["anthropic: ", "gave up after 1 attempt"],
    );
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn a_malformed_reply_is_an_unexpected_error_saying_what_is_wrong_and_is_not_retried() {
    both(|api| async move {
        let server = Server::scripted(vec![Reply::json(200, "<html>not json")]).await;
        let err = fails(api, api.settings(&server)).await;
        assert_mentions(
            &err,
            Reason::UnexpectedError,
            &["not JSON", "<html>not json"],
        );
        assert_eq!(server.hits(), 1, "{api:?}");

        let server = Server::scripted(vec![Reply::json(200, r#"{"choices": []}"#)]).await;
        let err = fails(api, api.settings(&server)).await;
        let missing = match api {
            Api::OpenAi => "no `choices[0].message`",
            Api::Anthropic => "no `content` array",
        };
        assert_mentions(&err, Reason::UnexpectedError, &[missing]);
        assert_eq!(server.hits(), 1, "{api:?}");
    })
    .await;
}

#[tokio::test]
async fn a_refused_key_is_not_retried_and_is_named_without_being_shown() {
    both(|api| async move {
        // Servers do echo the key they refuse.
        let refusal = format!(r#"{{"error": "Incorrect API key provided: {KEY}"}}"#);
        let server = Server::scripted(vec![Reply::json(401, refusal)]).await;
        let settings = api.settings(&server);
        assert!(!format!("{settings:?}").contains(KEY));
        let client = Client::new(api, settings);
        let shown = match &client {
            Client::OpenAi(p) => format!("{p:?}"),
            Client::Anthropic(p) => format!("{p:?}"),
        };
        assert!(!shown.contains(KEY), "{shown}");
        let err = client.complete(&request(None)).await.unwrap_err();
        assert_eq!(server.hits(), 1, "{api:?}");
        assert_mentions(
            &err,
            Reason::UnexpectedError,
            &[api.key_var(), "401", "refused"],
        );
        assert_eq!(err.kind(), CallKind::Status(401), "{api:?}");
        assert!(!format!("{err:?}").contains(KEY), "{err}");
    })
    .await;
}

#[tokio::test]
async fn other_client_errors_are_not_retried() {
    both(|api| async move {
        let unknown = Reply::json(400, r#"{"error": "unknown model"}"#);
        let server = Server::scripted(vec![unknown]).await;
        let err = fails(api, api.settings(&server)).await;
        assert_eq!(server.hits(), 1, "{api:?}");
        assert_mentions(&err, Reason::UnexpectedError, &["400", "unknown model"]);
    })
    .await;
}

#[tokio::test]
async fn forty_concurrent_calls_never_exceed_the_cap_and_each_is_answered_once() {
    both(|api| async move {
        // Echoes the last message, so each reply can be matched to its call.
        let server = Server::start(move |_, req| {
            let body = req.json();
            let last = body["messages"].as_array().and_then(|m| m.last()).cloned();
            let text = last.and_then(|m| m["content"].as_str().map(str::to_string));
            api.ok(&text.unwrap_or_default(), 1, 1)
                .after(Duration::from_millis(30))
        })
        .await;
        let mut settings = api.settings(&server);
        settings.concurrency = 8;
        let client = Client::new(api, settings);
        let requests: Vec<LlmRequest> = (0..40)
            .map(|i| LlmRequest {
                messages: vec![message(Role::User, &format!("call {i}"))].into(),
                ..request(None)
            })
            .collect();
        let replies = join_all(requests.iter().map(|r| client.complete(r))).await;
        for (i, reply) in replies.into_iter().enumerate() {
            assert_eq!(reply.unwrap().content, format!("call {i}"), "{api:?}");
        }
        assert_eq!(server.hits(), 40, "{api:?}");
        let max = server.max_in_flight();
        assert!((2..=8).contains(&max), "{api:?}: {max} in flight");
        assert!(server.requests().iter().all(|r| r.path == api.path()));
        assert_openai_bodies_conform(api, &server);
    })
    .await;
}

#[tokio::test]
async fn a_connection_a_restarted_server_keeps_open_without_answering_does_not_stall_the_next_call()
{
    both(|api| async move {
        // The first request of each connection is answered and the connection kept;
        // any later one on it is read and never answered, as a server restarted
        // gracefully does with the connections it kept from before.
        let ok = api.ok("fine", 1, 1);
        let server = Server::keeping_alive(move |_, r| {
            if r.on_connection == 0 {
                ok.clone()
            } else {
                Reply::Silent
            }
        })
        .await;
        let mut settings = api.settings(&server);
        settings.request_timeout = Duration::from_secs(4);
        let client = Client::new(api, settings);
        client.complete(&request(None)).await.unwrap();
        let started = Instant::now();
        let second = client.complete(&request(None)).await.unwrap();
        assert_eq!(second.content, "fine");
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(2),
            "{api:?}: {took:?}, not the request timeout"
        );
        // Each call went on a connection of its own.
        let reused: Vec<usize> = server.requests().iter().map(|r| r.on_connection).collect();
        assert_eq!(reused, [0, 0], "{api:?}");
    })
    .await;
}

#[tokio::test]
async fn a_model_slow_to_say_anything_keeps_the_whole_request_timeout() {
    both(|api| async move {
        // A reply that is not streamed sends nothing until it is whole.
        let slow = api
            .ok("thought it through", 1, 1)
            .after(Duration::from_secs(3));
        let server = Server::keeping_alive(move |_, _| slow.clone()).await;
        let mut settings = api.settings(&server);
        settings.request_timeout = Duration::from_secs(10);
        let started = Instant::now();
        let reply = call(api, settings, &request(None)).await.unwrap();
        assert_eq!(reply.content, "thought it through", "{api:?}");
        assert!(started.elapsed() >= Duration::from_secs(3), "{api:?}");
        assert_eq!(
            server.hits(),
            1,
            "{api:?}: asked once, not abandoned and asked again"
        );
    })
    .await;
}
