//! Rate limits (429): the calls in flight adapt, `Retry-After` holds every call back,
//! and a rate-limited call waits within its own budget instead of spending its retries.

use super::*;

fn requests(n: usize) -> Vec<LlmRequest> {
    (0..n)
        .map(|i| LlmRequest {
            messages: vec![message(Role::User, &format!("call {i}"))].into(),
            ..request(None)
        })
        .collect()
}

#[tokio::test]
async fn a_provider_taking_six_calls_a_window_answers_all_48_with_no_retries_allowed() {
    both(|api| async move {
        let server = Server::start(http::windowed(
            6,
            Duration::from_millis(150),
            api.ok("done", 1, 1),
        ))
        .await;
        let mut settings = api.settings(&server);
        settings.concurrency = 16;
        settings.max_retries = 0;
        let client = Client::new(api, settings);
        let calls = requests(48);
        let replies = join_all(calls.iter().map(|r| client.complete(r))).await;
        for (i, reply) in replies.into_iter().enumerate() {
            assert!(reply.is_ok(), "{api:?}: call {i}: {reply:?}");
        }
        // Every call was answered 200 once; the other requests were refused.
        let refused = server.hits() - 48;
        assert!(refused > 0, "{api:?}: the provider never said 429");
        // Without the shared pause, each of the 16 calls in flight would come back at
        // its own backoff and be refused again several times per window.
        assert!(
            refused < 48,
            "{api:?}: {refused} calls refused for 48 answered"
        );
    })
    .await;
}

#[tokio::test]
async fn rate_limits_do_not_spend_the_retries_of_a_call() {
    both(|api| async move {
        let limited = Reply::json(429, r#"{"error": "slow down"}"#).header("retry-after-ms", "5");
        let mut script = vec![limited; 6];
        script.push(api.ok("done", 1, 1));
        let server = Server::scripted(script).await;
        let mut settings = api.settings(&server);
        settings.max_retries = 0;
        assert_eq!(succeeds(api, settings).await.content, "done", "{api:?}");
        assert_eq!(server.hits(), 7, "{api:?}");
    })
    .await;
}

#[tokio::test]
async fn a_provider_that_always_says_429_without_a_wait_is_given_up_after_a_hundred_tries() {
    both(|api| async move {
        let server = Server::scripted(vec![Reply::json(429, "{}")]).await;
        let mut settings = api.settings(&server);
        settings.backoff_base = Duration::from_millis(1);
        let err = fails(api, settings).await;
        assert_eq!(server.hits(), 100, "{api:?}");
        assert_mentions(
            &err,
            Reason::UnexpectedError,
            &["429", "rate-limited 100 times"],
        );
    })
    .await;
}

#[tokio::test]
async fn the_rate_limit_wait_is_a_budget_of_its_own_named_when_it_runs_out() {
    both(|api| async move {
        let limited = Reply::json(429, "{}").header("retry-after-ms", "300");
        let server = Server::scripted(vec![limited]).await;
        let mut settings = api.settings(&server);
        settings.max_rate_wait = Duration::from_millis(700);
        let err = fails(api, settings).await;
        // Waits of 300 ms twice fit in 700 ms; a third would not.
        assert_eq!(server.hits(), 3, "{api:?}");
        assert_mentions(&err, Reason::UnexpectedError, &["429", "rate-limit budget"]);
    })
    .await;
}

#[tokio::test]
async fn a_429_saying_the_account_has_no_quota_left_fails_at_once() {
    let body = r#"{"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}"#;
    let server = Server::scripted(vec![Reply::json(429, body)]).await;
    let err = fails(Api::OpenAi, Api::OpenAi.settings(&server)).await;
    assert_eq!(server.hits(), 1);
    assert_mentions(
        &err,
        Reason::UnexpectedError,
        &["quota is used up", "waiting will not help"],
    );
}
