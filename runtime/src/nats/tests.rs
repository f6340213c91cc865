use super::lease::Lease;
use super::log::KvLog;
use super::*;
use crate::journal::{JournalKind, RemoteLog};
use async_nats::{ConnectError, ConnectErrorKind};
use std::sync::Arc;
use std::time::Instant;
use tv_test_support::nats::NatsServer;
use tv_test_support::temp::TempDir;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// An I/O error with rustls's error inside, as the client library hands on a server
/// certificate it does not trust.
fn untrusted() -> std::io::Error {
    let e = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
    std::io::Error::new(std::io::ErrorKind::InvalidData, e)
}

/// Failures met before the server is asked anything, or as it is reached: each one's
/// kind, and its words as `tvm` prints them.
fn refusals() -> Vec<(Result<(), NatsError>, NatsKind, &'static str)> {
    let options = |c: Connect| runtime().block_on(c.options()).map(|_| ());
    let tls = Connect::new("tls://127.0.0.1:4222");
    let plain = Connect::new("nats://127.0.0.1:4222");
    let failed = |to: &Connect, e| Err(connect_failed(&to.shown(), to, e));
    let header = serde_json::json!({"batch": "b", "header": {"journal": 1}});
    vec![
        (
            options(Connect::new("")),
            NatsKind::Settings,
            "--nats: the server's URL is empty",
        ),
        (
            options(Connect::new("http://h:1")),
            NatsKind::Settings,
            "--nats h: a NATS server URL starts with nats:// or tls://",
        ),
        (
            options(Connect {
                user: Some("bo".into()),
                ..Connect::new("nats://ann:pw@h:1")
            }),
            NatsKind::Settings,
            "--nats nats://h:1: the user is given both in the URL and with --nats-user; give it once",
        ),
        (
            options(Connect {
                cert: Some("c.pem".into()),
                ..Connect::new("nats://h:1")
            }),
            NatsKind::Settings,
            "--nats nats://h:1: a client certificate needs both --nats-cert and --nats-key",
        ),
        (
            failed(&plain, ConnectError::new(ConnectErrorKind::AuthorizationViolation)),
            NatsKind::Auth,
            "--nats nats://127.0.0.1:4222: the server refused to let us in (authorization violation): check --nats-creds, --nats-token, or --nats-user and --nats-password",
        ),
        (
            failed(&tls, ConnectError::with_source(ConnectErrorKind::Io, untrusted())),
            NatsKind::Tls,
            "--nats tls://127.0.0.1:4222: the TLS connection failed: invalid peer certificate: UnknownIssuer; a server whose certificate a private CA signed needs --nats-ca FILE",
        ),
        // Words decide nothing: an I/O error that speaks of certificates is not TLS's.
        (
            failed(
                &plain,
                ConnectError::with_source(
                    ConnectErrorKind::Io,
                    std::io::Error::other("no certificate here"),
                ),
            ),
            NatsKind::Connect,
            "--nats nats://127.0.0.1:4222: cannot connect to a NATS server there: IO error: no certificate here",
        ),
        (
            failed(&plain, ConnectError::new(ConnectErrorKind::TimedOut)),
            NatsKind::Timeout,
            "--nats nats://127.0.0.1:4222: cannot connect to a NATS server there: timed out",
        ),
        (
            Err(jetstream_failed("nats://h:1", std::io::Error::other("no responders"))),
            NatsKind::NoJetStream,
            "--nats nats://h:1: no responders (is JetStream on? start the server with `nats-server -js`; a user that may not make streams, as a worker in the README's layout, needs a batch published first)",
        ),
        (
            BatchRecord::read(header, "b").map(|_| ()),
            NatsKind::Record,
            "batch b in the server was written by an older tvm (journal format 1); this tvm reads format 2: finish the run with the tvm that started it, or run it again",
        ),
        (
            valid_batch_name("a b"),
            NatsKind::Record,
            "`a b` is not a batch name: use 1 to 64 letters, digits, `-` or `_`",
        ),
    ]
}

#[test]
fn each_failure_before_the_server_answers_has_its_kind_and_reads_as_tvm_has_always_printed_it() {
    for (got, kind, expected) in refusals() {
        let e = got.expect_err(expected);
        assert_eq!((e.kind(), e.to_string()), (kind, expected.to_string()));
    }
}

/// The server's answers that asking again would not change come back at once, of their
/// kind: a result stored twice, a lease another delivery took, a journal part another
/// worker wrote. (Retried, each would take [`OUTAGE`].)
#[test]
fn the_servers_settled_answers_come_back_at_once_of_their_kind() {
    let dir = TempDir::new("nats-settled");
    let nats = NatsServer::start(dir.path());
    let rt = runtime();
    rt.block_on(async {
        let server = Server::connect(&Connect::new(&nats.url()))
            .await
            .expect("connected");
        let started = Instant::now();
        let done = tv_vm::result::TaskResult::complete("done".into());
        let first = results::store_result(&server, "b", 0, &serde_json::Value::Null, &done).await;
        assert!(first.expect("stored"), "the first result is stored");
        let again = results::store_result(&server, "b", 0, &serde_json::Value::Null, &done).await;
        assert!(!again.expect("answered"), "the second is not");

        let journals = server.journals.clone();
        let old = Lease::take(journals.clone(), "b.1", 7, 1).await.expect("taken");
        let new = Lease::take(journals.clone(), "b.1", 7, 2).await.expect("taken");
        let (old, new) = (old.expect("a lease"), Arc::new(new.expect("a lease")));
        assert!(!old.hold().await.expect("answered"), "a later delivery holds it");
        assert!(new.hold().await.expect("answered"));

        // Two logs of one row under one lease: the second to write finds the part made.
        let open = || KvLog::open(journals.clone(), "b.1".into(), "{}".into(), new.clone());
        let ((_, first), (_, second)) = (open().await.unwrap(), open().await.unwrap());
        first.append("one".into()).await.expect("written");
        let e = second.append("two".into()).await.expect_err("refused");
        assert_eq!(e.kind(), &JournalKind::Remote);
        let taken = "row b.1 was taken over by another worker (this one stopped sending heartbeats for too long)";
        assert_eq!(e.to_string(), taken);
        assert!(second.lost() && !first.lost());
        assert!(started.elapsed() < OUTAGE / 4, "{:?}", started.elapsed());
    });
}
