//! Workers and publishers signing in to a real `nats-server -js` on 127.0.0.1 that asks
//! for it, with a configuration the test writes: a token, a user and password, the
//! README's least-privilege accounts, and TLS with a CA made in the test.

use super::workers::{path, rows, slow_echo};
use crate::support::files::{run_tvm, runtime, scratch};
use crate::support::nats::NatsServer;
use std::path::Path;
use std::time::Duration;

/// `tvm` with `args` and `env`, the model server at `model` answering as OpenAI.
fn tvm(args: &[&str], env: &[(&str, &str)], model: &str) -> (i32, String, String) {
    let mut all = vec![("OPENAI_BASE_URL", model), ("OPENAI_API_KEY", "test-key")];
    all.extend_from_slice(env);
    run_tvm(args, &all)
}

/// Publishes two rows as batch `name`, runs them with a worker and collects them, each
/// with `sign_in` (flags) and `env`: the collected stderr.
fn round_trip(
    url: &str,
    (dir, name): (&Path, &str),
    sign_in: &[&str],
    env: &[(&str, &str)],
    model: &str,
) -> String {
    let (bundle, inputs) = rows(dir, 2, 1);
    let mut args = vec![
        "batch",
        path(&bundle),
        "--inputs",
        path(&inputs),
        "--nats",
        url,
    ];
    args.extend(["--batch", name]);
    args.extend(sign_in);
    let (code, batch, stderr) = tvm(&args, env, model);
    assert_eq!(code, 0, "{stderr}");
    let batch = batch.trim().to_string();
    let mut args = vec![
        "worker",
        "--nats",
        url,
        "--provider",
        "openai",
        "--idle-exit",
        "2",
    ];
    args.extend(sign_in);
    let (code, _, stderr) = tvm(&args, env, model);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("2 rows completed"), "{stderr}");
    let out = dir.join("results.jsonl");
    let mut args = vec![
        "batch",
        "--nats",
        url,
        "--batch",
        &batch,
        "--collect",
        "--out",
        path(&out),
    ];
    args.extend(sign_in);
    let (code, _, stderr) = tvm(&args, env, model);
    assert_eq!(code, 0, "{stderr}");
    stderr
}

#[test]
fn a_server_that_asks_for_a_token_or_a_password_lets_in_only_who_gives_it() {
    let rt = runtime();
    let model = rt.block_on(slow_echo(0));
    let dir = scratch("workers_auth", "token");
    let nats = NatsServer::with_config(&dir, "authorization { token: \"tok-3141\" }\n");
    let url = nats.url();
    round_trip(
        &url,
        (&dir, "t"),
        &[],
        &[("NATS_TOKEN", "tok-3141")],
        &model.url(),
    );
    let with_token = format!("nats://tok-3141@127.0.0.1:{}", nats.port());
    let (code, out, _) = tvm(&["batch", "--nats", &with_token, "--status"], &[], "");
    assert_eq!(code, 0);
    assert!(out.contains("2 finished"), "{out}");
    let (code, _, stderr) = tvm(&["worker", "--nats", &url, "--provider", "echo"], &[], "");
    assert_eq!(code, 2);
    assert!(
        stderr.contains("the server refused to let us in (authorization violation)"),
        "{stderr}"
    );
    let wrong = format!("nats://wrong-tok@127.0.0.1:{}", nats.port());
    let (code, _, stderr) = tvm(&["batch", "--nats", &wrong, "--status"], &[], "");
    assert_eq!(code, 2);
    assert!(
        !stderr.contains("wrong-tok"),
        "the token is not shown: {stderr}"
    );

    let dir = scratch("workers_auth", "password");
    let config = "authorization { users: [ { user: ann, password: \"pw-2718\" } ] }\n";
    let nats = NatsServer::with_config(&dir, config);
    let port = nats.port();
    let in_url = format!("nats://ann:pw-2718@127.0.0.1:{port}");
    round_trip(&in_url, (&dir, "p"), &[], &[], &model.url());
    let flags = ["--nats-user", "ann", "--nats-password", "pw-2718"];
    let (code, out, _) = tvm(
        &[&["batch", "--nats", &nats.url(), "--status"][..], &flags].concat(),
        &[],
        "",
    );
    assert_eq!(code, 0);
    assert!(out.contains("2 finished"), "{out}");
    let wrong = format!("nats://ann:pw-wrong@127.0.0.1:{port}");
    let (code, _, stderr) = tvm(&["worker", "--nats", &wrong, "--provider", "echo"], &[], "");
    assert_eq!(code, 2);
    assert!(stderr.contains("authorization violation"), "{stderr}");
    assert!(
        !stderr.contains("pw-wrong"),
        "the password is not shown: {stderr}"
    );
    let (code, _, stderr) = tvm(
        &["batch", "--nats", &in_url, "--nats-user", "bob", "--status"],
        &[],
        "",
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("the user is given both in the URL and with --nats-user"),
        "{stderr}"
    );
}

/// The least-privilege layout as the README shows it.
fn readme_accounts() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let start = readme.find("```conf\n").expect("the README's accounts") + "```conf\n".len();
    let len = readme[start..].find("```").expect("the block's end");
    readme[start..start + len].to_string()
}

#[test]
fn with_the_readme_accounts_a_worker_runs_rows_but_cannot_publish_rows_records_or_bundles() {
    let rt = runtime();
    let model = rt.block_on(slow_echo(0));
    let dir = scratch("workers_auth", "accounts");
    let nats = NatsServer::with_config(&dir, &readme_accounts());
    let port = nats.port();
    let publisher = format!("nats://publisher:publisher-secret@127.0.0.1:{port}");
    let worker = [("NATS_USER", "worker"), ("NATS_PASSWORD", "worker-secret")];
    let (bundle, inputs) = rows(&dir, 2, 1);
    let args = [
        "batch",
        path(&bundle),
        "--inputs",
        path(&inputs),
        "--nats",
        &publisher,
        "--batch",
        "b",
    ];
    let (code, _, stderr) = tvm(&args, &[], &model.url());
    assert_eq!(code, 0, "{stderr}");
    let url = nats.url();
    let args = [
        "worker",
        "--nats",
        &url,
        "--provider",
        "openai",
        "--idle-exit",
        "2",
    ];
    let (code, _, stderr) = tvm(&args, &worker, &model.url());
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("2 rows completed"), "{stderr}");
    let (code, out, _) = tvm(
        &["batch", "--nats", &publisher, "--batch", "b", "--status"],
        &[],
        "",
    );
    assert_eq!(code, 0);
    assert!(out.contains("2 finished (2 completed, 0 failed)"), "{out}");

    // The worker's user publishing a batch: refused at its record.
    let args = [
        "batch",
        path(&bundle),
        "--inputs",
        path(&inputs),
        "--nats",
        &url,
        "--batch",
        "w",
    ];
    let (code, _, stderr) = tvm(&args, &worker, &model.url());
    assert_eq!(code, 2);
    assert!(
        stderr.contains("cannot make the record of batch w"),
        "{stderr}"
    );
    // And by hand: a row, a record, a bundle object.
    let refused = rt.block_on(async {
        let client = async_nats::ConnectOptions::with_user_and_password(
            "worker".into(),
            "worker-secret".into(),
        )
        .connect(url.as_str())
        .await
        .expect("connect as the worker");
        let js = async_nats::jetstream::new(client);
        let row = refused(async {
            let ack = js
                .publish("tvm.rows.b", "{}".into())
                .await
                .map_err(|e| e.to_string())?;
            ack.await.map(|_| ()).map_err(|e| e.to_string())
        });
        let row = row.await;
        let kv = js
            .get_key_value("tvm_batches")
            .await
            .expect("read the records");
        let record = refused(async {
            kv.put("b", "{}".into())
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        let record = record.await;
        let store = js
            .get_object_store("tvm_bundles")
            .await
            .expect("read the bundles");
        let object = refused(async {
            let mut bytes: &[u8] = b"evil";
            store
                .put("x", &mut bytes)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        let object = object.await;
        [row, record, object]
    });
    assert_eq!(
        refused,
        [true, true, true],
        "row, record, bundle object refused"
    );
    let (code, out, _) = tvm(
        &["batch", "--nats", &publisher, "--batch", "b", "--status"],
        &[],
        "",
    );
    assert_eq!(code, 0);
    assert!(out.contains("0 in the queue"), "no row was added: {out}");
}

/// Whether the server refused `op` (an error, or no answer within 5 s).
async fn refused(op: impl std::future::Future<Output = Result<(), String>>) -> bool {
    tokio::time::timeout(Duration::from_secs(5), op)
        .await
        .map_or(true, |r| r.is_err())
}

/// A CA and a certificate for 127.0.0.1 it signed, written to `dir`: the CA's path.
fn certificates(dir: &Path) -> String {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("a key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "tvm test CA");
    let ca_cert = ca.self_signed(&ca_key).expect("the CA");
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().expect("a key");
    let params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .expect("params");
    let cert = params
        .signed_by(&key, &issuer)
        .expect("the server's certificate");
    std::fs::write(dir.join("ca.pem"), ca_cert.pem()).expect("write");
    std::fs::write(dir.join("server.pem"), cert.pem()).expect("write");
    std::fs::write(dir.join("server-key.pem"), key.serialize_pem()).expect("write");
    path(&dir.join("ca.pem")).to_string()
}

#[test]
fn over_tls_a_worker_that_trusts_the_servers_ca_runs_rows_and_one_that_does_not_is_refused() {
    let rt = runtime();
    let model = rt.block_on(slow_echo(0));
    let dir = scratch("workers_auth", "tls");
    let ca = certificates(&dir);
    let config = format!(
        "tls {{ cert_file: \"{}\", key_file: \"{}\" }}\n",
        path(&dir.join("server.pem")),
        path(&dir.join("server-key.pem"))
    );
    let nats = NatsServer::with_config(&dir, &config);
    let url = format!("tls://127.0.0.1:{}", nats.port());
    round_trip(&url, (&dir, "flag"), &["--nats-ca", &ca], &[], &model.url());
    round_trip(
        &nats.url(),
        (&dir, "env"),
        &[],
        &[("NATS_CA", &ca)],
        &model.url(),
    );
    let (code, _, stderr) = tvm(&["worker", "--nats", &url, "--provider", "echo"], &[], "");
    assert_eq!(code, 2);
    assert!(stderr.contains("the TLS connection failed"), "{stderr}");
    assert!(stderr.contains("needs --nats-ca FILE"), "{stderr}");
    let missing = path(&dir.join("nope.pem")).to_string();
    let (code, _, stderr) = tvm(
        &[
            "worker",
            "--nats",
            &url,
            "--nats-ca",
            &missing,
            "--provider",
            "echo",
        ],
        &[],
        "",
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--nats-ca") && stderr.contains("nope.pem"),
        "{stderr}"
    );
}
