//! Replies too large to hold (DESIGN §18): a server that sends an endless body, or
//! declares a huge one, fails the call at `max_reply_bytes` instead of filling memory.

use super::*;

/// The peak resident memory of this test process so far, in bytes.
fn peak_memory() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmHWM:"));
    let kib = line.and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok());
    kib.unwrap_or(0) * 1024
}

/// Settings under which only the size of a reply can end the call early.
fn patient(api: Api, server: &Server, cap: usize) -> Settings {
    let mut s = api.settings(server);
    s.request_timeout = Duration::from_secs(60);
    s.max_reply_bytes = cap;
    s
}

#[tokio::test]
async fn an_endless_reply_fails_its_call_at_the_reply_cap_without_retrying() {
    both(|api| async move {
        let server = Server::scripted(vec![Reply::Endless { status: 200 }]).await;
        let started = Instant::now();
        let err = fails(api, patient(api, &server, 1 << 20)).await;
        assert!(started.elapsed() < Duration::from_secs(10), "{api:?}");
        assert_mentions(
            &err,
            Reason::UnexpectedError,
            &[api.name(), "1048576 bytes", "--max-reply-bytes"],
        );
        assert_eq!(
            server.hits(),
            1,
            "{api:?}: a reply too large is not retried"
        );
    })
    .await;
    // Both bodies were read up to 1 MiB; before the cap this reached gigabytes.
    let peak = peak_memory();
    assert!(peak < 512 << 20, "peak resident memory {peak} bytes");
}

#[tokio::test]
async fn a_reply_that_declares_a_length_over_the_cap_fails_before_its_body_is_read() {
    both(|api| async move {
        let big = api.ok(&"x".repeat(4096), 1, 1);
        let server = Server::scripted(vec![big]).await;
        let err = fails(api, patient(api, &server, 1024)).await;
        assert_mentions(
            &err,
            Reason::UnexpectedError,
            &["1024 bytes", "--max-reply-bytes"],
        );
        assert_eq!(server.hits(), 1, "{api:?}");
    })
    .await;
}

#[tokio::test]
async fn an_endless_error_reply_is_excerpted_from_its_first_bytes_only() {
    both(|api| async move {
        let server = Server::scripted(vec![Reply::Endless { status: 503 }]).await;
        let mut settings = patient(api, &server, 8 << 20);
        settings.max_retries = 1;
        let started = Instant::now();
        let err = fails(api, settings).await;
        assert!(started.elapsed() < Duration::from_secs(10), "{api:?}");
        assert_mentions(
            &err,
            Reason::UnexpectedError,
            &["503", "gave up after 2 attempts"],
        );
        assert_eq!(server.hits(), 2, "{api:?}");
    })
    .await;
}

#[tokio::test]
async fn a_reply_within_the_cap_is_read_whole() {
    both(|api| async move {
        let server = Server::scripted(vec![api.ok(&"y".repeat(10_000), 1, 1)]).await;
        let reply = call(api, patient(api, &server, 64 << 10), &request(None)).await;
        assert_eq!(reply.expect("a reply within the cap").content.len(), 10_000);
    })
    .await;
}
