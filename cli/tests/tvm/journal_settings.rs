//! A resumed run makes its calls with the run's settings: each setting of
//! `tests/fixtures/journals/resume-settings.json` is given once, on the command that
//! starts the run; the run is killed before any call is answered and resumed with no
//! flag, in an environment that names another provider and model, against an
//! OpenAI-compatible server on 127.0.0.1 that keeps what it was sent.

use super::journal::{finish, kill, model_server, tvm, DIGEST};
use crate::support::files::{golden, runtime, scratch, wait_for};
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One setting: its flags on the first command, then what every request of the resumed
/// run carries (JSON pointer → value), or the resumed run's exit code and a text its
/// printed result holds.
struct Case {
    flags: Vec<String>,
    sent: serde_json::Map<String, Value>,
    exit: i64,
    printed: String,
}

fn cases() -> Vec<Case> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/journals/resume-settings.json");
    let text = std::fs::read_to_string(path).expect("the cases");
    let cases: Vec<Value> = serde_json::from_str(&text).expect("cases");
    cases
        .into_iter()
        .map(|c| Case {
            flags: c["flags"]
                .as_array()
                .expect("flags")
                .iter()
                .map(|f| f.as_str().expect("a flag").to_string())
                .collect(),
            sent: c["sent"].as_object().cloned().unwrap_or_default(),
            exit: c["exit"].as_i64().unwrap_or(0),
            printed: c["printed"].as_str().unwrap_or_default().to_string(),
        })
        .collect()
}

#[test]
fn a_run_killed_and_resumed_without_flags_keeps_each_setting_it_was_given() {
    let rt = runtime();
    for case in cases() {
        let shown = case.flags.join(" ");
        let dir = scratch("journal", &format!("setting{}", case.flags[0]));
        let journal = dir.join("run.jsonl");
        let path = journal.to_str().expect("path");
        // Replies that never come in time: the run is killed with no call answered.
        let arrived = Arc::new(AtomicUsize::new(0));
        let slow = rt.block_on(model_server(Duration::from_secs(30), arrived.clone()));
        let bundle = golden("incident_digest");
        let mut args = vec!["run", bundle.to_str().expect("path")];
        args.extend(DIGEST);
        args.push(path);
        args.extend(case.flags.iter().map(String::as_str));
        let child = tvm(&args, &slow)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        wait_for(|| arrived.load(Ordering::SeqCst) >= 1);
        kill(child);
        drop(slow);

        let server = rt.block_on(model_server(Duration::ZERO, Arc::default()));
        let mut resume = tvm(&["resume", path], &server);
        // What the environment says now fills only what the run left unset.
        resume
            .env("TVM_PROVIDER", "echo")
            .env("TVM_MODEL", "env-model");
        let (code, out, err) = finish(&mut resume);
        assert_eq!(i64::from(code), case.exit, "{shown}: {out}{err}");
        assert!(out.contains(&case.printed), "{shown}: {out}");
        let sent = server.requests();
        assert!(
            !sent.is_empty(),
            "{shown}: the run's provider answers, not the environment's"
        );
        for r in &sent {
            let body = r.json();
            for (pointer, value) in &case.sent {
                assert_eq!(body.pointer(pointer), Some(value), "{shown}: {body}");
            }
            if !case.sent.contains_key("/model") {
                assert_eq!(
                    body["model"], "env-model",
                    "{shown}: unset, the environment's"
                );
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
