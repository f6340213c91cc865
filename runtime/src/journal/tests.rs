use super::*;
use tv_vm::result::Reason;

fn header() -> Header {
    use crate::config::{Calls, ContextPart, Models, RunConfig, Sampling};
    let config = RunConfig {
        models: Models {
            force: Some("openai:local".into()),
            ..Models::default()
        },
        sampling: Sampling {
            temperature: Some(0.5),
            ..Sampling::default()
        },
        json_mode: Some(crate::providers::JsonMode::Prompt),
        calls: Calls {
            concurrency: Some(4),
            retries: Some(0),
            request_timeout_secs: Some(30),
            max_reply_bytes: Some(1 << 20),
            ..Calls::default()
        },
        context: ContextPart {
            allow_read: Some(vec![PathBuf::from("/srv/notes")]),
            require_files: Some(true),
            ..ContextPart::default()
        },
        ..RunConfig::defaults()
    };
    Header {
        journal: FORMAT,
        bundle: PathBuf::from("digest.bin"),
        bundle_sha256: "ab".repeat(32),
        entry: "digest".into(),
        args: Map::new(),
        config: RunConfig {
            provider: crate::config::ProviderPart {
                choice: Some(crate::host::Choice::Remote(
                    tv_stdlib::models::Provider::OpenAi,
                )),
                cassette: None,
            },
            ..config
        },
    }
}

#[test]
fn a_header_reads_back_as_it_was_written() {
    let text = serde_json::to_string(&header()).expect("written");
    let back: Header = serde_json::from_str(&text).expect("read");
    assert_eq!(back, header());
}

#[test]
fn a_body_record_reads_back_with_its_result_as_it_was() {
    let mut result = TaskResult::complete("[1,null]".into());
    result.parsed_content = Some(serde_json::json!([1, null]));
    result.set_note("tokens", serde_json::json!({"input": 3}));
    let record = Record::BodyEnded {
        body: "2.1/e0.3/".into(),
        request: body_request(4, &[serde_json::json!("item")]),
        result: result.clone(),
        spent: tv_vm::limits::Spending {
            total: tv_vm::limits::Spent {
                calls: 2,
                input_tokens: 3,
                output_tokens: 4,
                cost: 5,
                ..Default::default()
            },
            by_model: vec![("gpt-4o-mini".into(), Default::default())],
        },
    };
    let text = serde_json::to_string(&record).expect("written");
    assert!(
        text.starts_with(r#"{"event":"body_ended","body":"2.1/e0.3/""#),
        "{text}"
    );
    let Ok(Record::BodyEnded {
        result: back,
        spent,
        ..
    }) = serde_json::from_str(&text)
    else {
        panic!("not read back: {text}");
    };
    assert_eq!(back, result);
    let t = spent.total;
    assert_eq!(
        (t.calls, t.input_tokens, t.output_tokens, t.cost),
        (2, 3, 4, 5)
    );
    assert_eq!(spent.by_model[0].0, "gpt-4o-mini");
}

/// A header as tvm wrote it before journal format 2.
const FORMAT_1: &str = r#"{"journal":1,"bundle":"/w/digest.tvb","bundle_sha256":"abab","entry":"digest","args":{},"provider":"openai","model":null,"cassette":null,"workspace":null,"limits":{"call_depth":64,"subtask_depth":5,"loop_iterations":100,"turns":200,"tokens":1000000,"wall_time":{"secs":1800,"nanos":0},"instructions":10000000,"memory":536870912,"concurrency":16},"concurrency":16,"retries":4,"request_timeout":120,"json_mode":"native"}"#;

#[test]
fn a_journal_of_format_1_is_refused_with_what_to_do() {
    let dir = folder("format-1");
    let path = dir.join("old.journal");
    std::fs::write(&path, format!("{FORMAT_1}\n")).unwrap();
    let Err(e) = Journal::open(&path) else {
        panic!("a format-1 journal was opened");
    };
    assert_eq!(e.kind(), &JournalKind::Format { found: 1 });
    assert_eq!(
        e.to_string(),
        format!(
            "{} was written by an older tvm (journal format 1); this tvm reads format 2: \
             finish the run with the tvm that started it, or run it again",
            path.display()
        )
    );
    let future = FORMAT_1.replace(r#""journal":1"#, r#""journal":3"#);
    std::fs::write(&path, format!("{future}\n")).unwrap();
    let Err(e) = Journal::open(&path) else {
        panic!("a format-3 journal was opened");
    };
    assert_eq!(e.kind(), &JournalKind::Format { found: 3 });
    let why = ": journal format 3 is not the format 2 this tvm reads";
    assert_eq!(e.to_string(), format!("{}{why}", path.display()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_header_keeps_no_setting_outside_its_config() {
    let text = serde_json::to_value(header()).unwrap();
    let keys: Vec<&String> = text.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "journal",
            "bundle",
            "bundle_sha256",
            "entry",
            "args",
            "config"
        ]
    );
}

fn llm(prompt: &str) -> HostRequest {
    HostRequest::Llm(tv_vm::host::LlmRequest {
        query: None,
        requested_files: Vec::new(),
        task: tv_vm::bundle::TaskMeta::named("ask#1").into(),
        system_prompt: String::new(),
        messages: vec![tv_vm::host::Message::user(prompt.into())].into(),
        context: Default::default(),
        model: None,
        settings: Default::default(),
    })
}

/// The root machine's first call.
const FIRST: CallId = CallId { path: "", n: 1 };

/// Answers with the prompt, as the echo provider does, and counts its calls.
struct Counting(AtomicUsize);

impl AsyncHost for Counting {
    async fn call(&self, _: CallId<'_>, request: &HostRequest) -> HostReply {
        self.0.fetch_add(1, Ordering::SeqCst);
        let HostRequest::Llm(r) = request else {
            panic!("only LLM calls here");
        };
        HostReply::Llm(Ok(tv_vm::host::echo(r)))
    }
}

fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tv-journal-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
}

#[test]
fn a_deferred_journal_makes_its_file_with_its_first_answer_and_resumes_from_it() {
    let dir = folder("deferred");
    let path = dir.join("0.journal");
    let host = Counting(AtomicUsize::new(0));
    let journal = Journal::deferred(&path, header(), None);
    assert!(!journal.on_disk() && !path.exists());
    let reply = runtime().block_on(journal.call(&host, FIRST, &llm("first")));
    assert!(matches!(reply, HostReply::Llm(Ok(_))), "{reply:?}");
    assert!(journal.on_disk());
    drop(journal);

    let (back, resumed) = Journal::open(&path).expect("opened");
    assert_eq!(back, header());
    runtime().block_on(resumed.call(&host, FIRST, &llm("first")));
    assert_eq!(
        host.0.load(Ordering::SeqCst),
        1,
        "answered from the journal"
    );
    assert_eq!(resumed.counts(), (1, 0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_echo_providers_calls_are_made_again_rather_than_journaled() {
    let dir = folder("echo");
    let path = dir.join("0.journal");
    let host = Counting(AtomicUsize::new(0));
    let mut dry = header();
    dry.config.provider.choice = Some(crate::host::Choice::Echo);
    let journal = Journal::deferred(&path, dry, None);
    runtime().block_on(journal.call(&host, FIRST, &llm("first")));
    assert!(
        !journal.on_disk() && !path.exists(),
        "a dry run writes nothing"
    );
    assert_eq!(journal.counts(), (0, 1));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_ended_journals_file_becomes_the_next_ones_and_starts_empty() {
    let dir = folder("spare");
    let spares = Arc::new(Spares::new(&dir));
    let host = Counting(AtomicUsize::new(0));
    let rt = runtime();
    let first = Journal::deferred(&dir.join("0.journal"), header(), Some(spares.clone()));
    rt.block_on(first.call(&host, FIRST, &llm("first")));
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let used = inode(&dir.join("0.journal"));
    spares.keep(first);
    assert!(!dir.join("0.journal").exists());

    let second = Journal::deferred(&dir.join("1.journal"), header(), Some(spares.clone()));
    rt.block_on(second.call(&host, FIRST, &llm("second")));
    drop(second);
    assert_eq!(inode(&dir.join("1.journal")), used, "the same file");
    let text = std::fs::read_to_string(dir.join("1.journal")).expect("the journal");
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.contains("second") && !text.contains("first"), "{text}");
    let (_, resumed) = Journal::open(&dir.join("1.journal")).expect("opened");
    rt.block_on(resumed.call(&host, FIRST, &llm("second")));
    assert_eq!(resumed.counts(), (1, 0));

    // A spare never takes the place of a file that is there, and a stopped run's are
    // cleared.
    spares.keep(resumed);
    std::fs::write(dir.join("2.journal"), "").expect("a file in the way");
    let third = Journal::deferred(&dir.join("2.journal"), header(), Some(spares.clone()));
    rt.block_on(third.call(&host, FIRST, &llm("third")));
    assert_ne!(inode(&dir.join("2.journal")), used);
    spares.keep(third);
    Spares::clear(&dir);
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Journals [`Journal::open`] refuses: a name, what the file holds (`None`: no file),
/// the kind, and the refusal as `tvm` prints it, `{p}` standing for the journal's path.
fn refused_journals() -> Vec<(&'static str, Option<Vec<u8>>, JournalKind, &'static str)> {
    let header = serde_json::to_string(&header()).unwrap();
    let format_3 = FORMAT_1.replace(r#""journal":1"#, r#""journal":3"#);
    let damaged = |line| JournalKind::Damaged { line };
    vec![
        (
            "missing",
            None,
            JournalKind::Open,
            "the journal {p} does not exist",
        ),
        (
            "a folder",
            Some(Vec::new()),
            JournalKind::Open,
            "the journal {p} cannot be read: Is a directory (os error 21)",
        ),
        (
            "empty",
            Some(Vec::new()),
            JournalKind::Empty,
            "the journal {p} is empty: the run stopped before it began",
        ),
        (
            "torn header",
            Some(br#"{"journal":2,"bund"#.to_vec()),
            JournalKind::Empty,
            "the journal {p} is empty: the run stopped before it began",
        ),
        (
            "not UTF-8",
            Some(b"\xff\n".to_vec()),
            damaged(None),
            "the journal {p} is damaged: it is not UTF-8",
        ),
        (
            "not a header",
            Some(b"[1]\n".to_vec()),
            damaged(Some(1)),
            "{p}:1: not a journal header: invalid length 1, expected struct Header with 6 elements",
        ),
        (
            "format 1",
            Some(format!("{FORMAT_1}\n").into_bytes()),
            JournalKind::Format { found: 1 },
            "{p} was written by an older tvm (journal format 1); this tvm reads format 2: \
             finish the run with the tvm that started it, or run it again",
        ),
        (
            "format 3",
            Some(format!("{format_3}\n").into_bytes()),
            JournalKind::Format { found: 3 },
            "{p}: journal format 3 is not the format 2 this tvm reads",
        ),
        (
            "a damaged record",
            Some(format!("{header}\n{{\"event\":\"lost\"}}\n").into_bytes()),
            damaged(Some(2)),
            "{p}:2: the journal is damaged: unknown variant `lost`, expected one of \
             `script_started`, `answered`, `body_ended` at line 1 column 15",
        ),
    ]
}

#[test]
fn each_journal_refusal_has_its_kind_and_reads_as_tvm_has_always_printed_it() {
    let dir = folder("refused");
    for (name, content, kind, expected) in refused_journals() {
        let path = dir.join(format!("{}.journal", name.replace(' ', "-")));
        match content {
            Some(_) if name == "a folder" => std::fs::create_dir(&path).unwrap(),
            Some(bytes) => std::fs::write(&path, bytes).unwrap(),
            None => {}
        }
        let Err(e) = Journal::open(&path) else {
            panic!("{name}: opened");
        };
        let expected = expected.replace("{p}", &path.display().to_string());
        assert_eq!((e.kind(), e.to_string()), (&kind, expected), "{name}");
    }
    // A new run's journal: one that holds a run, and one a run holds.
    let path = dir.join("held.journal");
    drop(Journal::create(&path, &header()).expect("created"));
    let shown = path.display();
    let exists = Journal::create(&path, &header()).err();
    let held = Journal::open(&path).expect("opened");
    let refusals = [
        (
            exists,
            JournalKind::Exists,
            format!(
                "the journal {shown} already exists: resume it with `tvm resume {shown}`, or \
                 remove it to start afresh"
            ),
        ),
        (
            Journal::open(&path).err(),
            JournalKind::Locked,
            format!(
                "the journal {shown} is in use by another process (pid {}): a second run on it \
                 would repeat its calls and scripts; wait for that run to end, or stop it, then \
                 resume",
                std::process::id()
            ),
        ),
    ];
    for (e, kind, expected) in refusals {
        let e = e.expect("refused");
        assert_eq!((e.kind(), e.to_string()), (&kind, expected));
    }
    drop(held);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_call_asked_otherwise_than_the_journal_recorded_it_halts_the_run() {
    let dir = folder("mismatch");
    let path = dir.join("run.journal");
    let host = Counting(AtomicUsize::new(0));
    let journal = Journal::create(&path, &header()).expect("created");
    runtime().block_on(journal.call(&host, FIRST, &llm("first")));
    drop(journal);
    let (_, resumed) = Journal::open(&path).expect("opened");
    let reply = runtime().block_on(resumed.call(&host, FIRST, &llm("changed")));
    let HostReply::Llm(Err(e)) = reply else {
        panic!("a changed call was answered: {reply:?}");
    };
    assert_eq!(e.reason, Reason::ExecutionHalted);
    let expected = format!(
        "the journal {} does not match this run: call 1 asks something else than it did \
         (were the bundle, the arguments or the workspace changed?)",
        path.display()
    );
    assert_eq!(e.message, expected);
    assert_eq!(
        host.0.load(Ordering::SeqCst),
        1,
        "the changed call was not made"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
