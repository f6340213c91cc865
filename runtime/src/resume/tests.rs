use super::*;
use crate::config::env::{Source, Vars};
use crate::config::{Models, Sampling};
use crate::host::Choice;
use crate::journal::JournalKind;
use tv_stdlib::models::Provider;
use tv_test_support::temp::TempDir;

/// The checked-in digest bundle (entry `digest(service)`), and the hash of its bytes.
fn digest() -> (Verified, String) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/golden/incident_digest.bin"
    );
    let bytes = std::fs::read(path).expect("the golden bundle");
    let bundle = tv_vm::bundle::Bundle::from_bytes(&bytes).expect("verified");
    (bundle, crate::digest::sha256_hex(&bytes))
}

/// A run of the digest with `config`, as its journal's header keeps it.
fn header(hash: &str, config: RunConfig) -> Header {
    let mut header = Header::new(
        Path::new("/gone/digest.bin"),
        hash.into(),
        "incident_digest",
        &config,
    );
    header.args.insert("service".into(), "payments".into());
    header
}

/// A journal holding `header` and then `records` (JSON lines), in `dir`.
fn journal(dir: &TempDir, header: &Header, records: &[&str]) -> PathBuf {
    let mut text = serde_json::to_string(header).expect("a header") + "\n";
    for r in records {
        text.push_str(r);
        text.push('\n');
    }
    dir.write("run.jsonl", text);
    dir.path().join("run.jsonl")
}

fn env(vars: &[(&str, &str)]) -> Environment {
    let mut v = Vars::default();
    for (name, value) in vars {
        v.insert(name, value.to_string(), Source::Environment);
    }
    Environment::of(v)
}

#[test]
fn a_journal_of_another_bundle_is_refused_naming_both_hashes() {
    let dir = TempDir::new("resume-bundle");
    let (bundle, hash) = digest();
    let path = journal(&dir, &header(&"ab".repeat(32), RunConfig::defaults()), &[]);
    let opened = Resume::open(&path).expect("opened");
    assert_eq!(opened.bundle(None), PathBuf::from("/gone/digest.bin"));
    let given = Path::new("other.bin");
    assert_eq!(opened.bundle(Some(given)), given);
    let Err(e) = opened.check(
        &bundle,
        &hash,
        given,
        false,
        &env(&[]),
        RunConfig::default(),
    ) else {
        panic!("resumed over another bundle");
    };
    assert_eq!(
        e.to_string(),
        format!(
            "the journal {} was written for a bundle with SHA-256 abababababababab, but other.bin \
             has {}: it was recompiled or replaced; resume with the bundle the run used (--bundle FILE)",
            path.display(),
            &hash[..16]
        )
    );
}

#[test]
fn a_script_cut_off_is_run_again_only_when_asked() {
    let dir = TempDir::new("resume-script");
    let (bundle, hash) = digest();
    let started = r#"{"event":"script_started","call":"2","request":"cd","task":"collect#1","command":"echo logs"}"#;
    let path = journal(&dir, &header(&hash, RunConfig::defaults()), &[started]);
    let check = |rerun| {
        let opened = Resume::open(&path).expect("opened");
        let at = Path::new("digest.bin");
        opened.check(&bundle, &hash, at, rerun, &env(&[]), RunConfig::default())
    };
    let Err(e) = check(false) else {
        panic!("a cut-off script was run again unasked");
    };
    assert_eq!(
        e.to_string(),
        "the run stopped while the script of task `collect#1` (call 2) was running: echo logs\n\
         it may have done part of its work; pass --rerun-scripts to run it again"
    );
    let resumed = check(true).expect("resumed when asked");
    assert_eq!(resumed.args, vec![Value::from("payments")]);
}

#[test]
fn an_entry_point_the_bundle_lacks_is_refused() {
    let dir = TempDir::new("resume-entry");
    let (bundle, hash) = digest();
    let mut h = header(&hash, RunConfig::defaults());
    h.entry = "gone".into();
    let path = journal(&dir, &h, &[]);
    let opened = Resume::open(&path).expect("opened");
    let Err(e) = opened.check(
        &bundle,
        &hash,
        Path::new("b"),
        false,
        &env(&[]),
        RunConfig::default(),
    ) else {
        panic!("resumed without its entry point");
    };
    assert!(
        matches!(&e, ResumeError::NoEntry(entry) if entry == "gone"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "the bundle has no entry point `gone` taking the journal's arguments"
    );
}

#[test]
fn a_missing_journal_or_one_a_run_holds_is_refused_with_the_journals_kind_and_words() {
    let dir = TempDir::new("resume-missing");
    let missing = dir.path().join("none.jsonl");
    let Err(ResumeError::Journal(why)) = Resume::open(&missing) else {
        panic!("a missing journal was opened");
    };
    assert_eq!(why.kind(), &JournalKind::Open);
    let expected = format!("the journal {} does not exist", missing.display());
    assert_eq!(why.to_string(), expected);

    let (_, hash) = digest();
    let path = journal(&dir, &header(&hash, RunConfig::defaults()), &[]);
    let running = Resume::open(&path).expect("opened");
    let Err(ResumeError::Journal(why)) = Resume::open(&path) else {
        panic!("a journal a run holds was opened again");
    };
    assert_eq!(why.kind(), &JournalKind::Locked, "{why}");
    drop(running);
    assert!(Resume::open(&path).is_ok(), "free once the run ends");
}

/// The run's settings win over the environment's, the flags given now over both; the
/// environment fills only what the run left unset, and the limits stay the run's.
#[test]
fn a_resumed_run_takes_the_runs_settings_under_the_flags_and_over_the_environment() {
    let dir = TempDir::new("resume-settings");
    let (bundle, hash) = digest();
    let mut run = RunConfig::defaults();
    run.models = Models {
        default: Some("run-model".into()),
        force: None,
    };
    run.sampling.seed = Some(7);
    run.calls.concurrency = Some(3);
    run.calls.retries = Some(0);
    run.limits.turns = Some(9);
    let path = journal(&dir, &header(&hash, run), &[]);
    let environment = env(&[
        ("TVM_MODEL", "env-model"),
        ("TVM_JSON_MODE", "prompt"),
        ("TVM_CONCURRENCY", "12"),
        ("OPENAI_API_KEY", "sk-test"),
    ]);
    let mut flags = RunConfig::default();
    flags.calls.retries = Some(2);
    flags.sampling = Sampling {
        temperature: Some(0.5),
        ..Sampling::default()
    };
    let opened = Resume::open(&path).expect("opened");
    let r = opened
        .check(&bundle, &hash, Path::new("b"), false, &environment, flags)
        .expect("resumed");
    let c = &r.config;
    assert_eq!(c.models.default.as_deref(), Some("run-model"), "the run's");
    assert_eq!(c.sampling.seed, Some(7), "the run's");
    assert_eq!(c.sampling.temperature, Some(0.5), "the flag's");
    assert_eq!(c.calls.retries, Some(2), "the flag's over the run's");
    assert_eq!(
        c.calls.concurrency,
        Some(3),
        "a resume takes no bound from the environment"
    );
    // The run's journal keeps its JSON mode (native by default), so the variable is not taken.
    assert_eq!(c.json_mode, Some(crate::providers::JsonMode::Native));
    assert_eq!(
        c.provider.choice,
        Some(Choice::Remote(Provider::OpenAi)),
        "from the key"
    );
    assert_eq!(
        (r.limits.turns, r.limits.concurrency),
        (9, 3),
        "the run's limits"
    );
}

#[test]
fn the_environment_fills_what_the_run_left_unset() {
    let mut run = RunConfig::defaults();
    run.json_mode = None;
    let h = header("x", run);
    let environment = env(&[("TVM_MODEL", "env-model"), ("TVM_JSON_MODE", "prompt")]);
    let c = settings(&h, &environment, RunConfig::default()).expect("settled");
    assert_eq!(c.models.default.as_deref(), Some("env-model"));
    assert_eq!(c.json_mode, Some(crate::providers::JsonMode::Prompt));
    assert_eq!(c.provider.choice, None, "no key, no provider named");
    let bad = env(&[("TVM_PROVIDER", "nope")]);
    assert_eq!(
        settings(&h, &bad, RunConfig::default())
            .unwrap_err()
            .to_string(),
        "unknown provider `nope` (known: openai, anthropic, replay, echo)"
    );
}
