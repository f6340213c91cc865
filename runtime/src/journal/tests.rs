use super::*;

fn header() -> Header {
    Header {
        journal: FORMAT,
        bundle: PathBuf::from("digest.bin"),
        bundle_sha256: "ab".repeat(32),
        entry: "digest".into(),
        args: Map::new(),
        provider: "openai".into(),
        model: None,
        cassette: None,
        workspace: None,
        allow_read: vec![PathBuf::from("/srv/notes")],
        limits: Limits::default(),
        concurrency: Some(4),
        retries: Some(0),
        request_timeout: Some(30),
        rate_wait: None,
        max_reply_bytes: Some(1 << 20),
        sampling: Some(tv_vm::bundle::ModelSettings {
            temperature: Some(0.5),
            ..Default::default()
        }),
        force_model: Some("openai:local".into()),
        json_mode: Some("prompt".into()),
        max_cost: None,
        prices: None,
        cache: None,
        require_files: true,
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

#[test]
fn a_header_from_before_the_call_settings_were_kept_reads_with_none_of_them() {
    let mut old = serde_json::to_value(header()).expect("written");
    for key in ["concurrency", "retries", "request_timeout"] {
        old.as_object_mut().expect("an object").remove(key);
    }
    let back: Header = serde_json::from_value(old).expect("read");
    assert_eq!(
        (back.concurrency, back.retries, back.request_timeout),
        (None, None, None)
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

/// Answers with the prompt, as the echo provider does, and counts its calls.
struct Counting(AtomicUsize);

impl AsyncHost for Counting {
    async fn call(&self, request: &HostRequest) -> HostReply {
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
    let reply = runtime().block_on(journal.call(&host, "1", &llm("first")));
    assert!(matches!(reply, HostReply::Llm(Ok(_))), "{reply:?}");
    assert!(journal.on_disk());
    drop(journal);

    let (back, resumed) = Journal::open(&path).expect("opened");
    assert_eq!(back, header());
    runtime().block_on(resumed.call(&host, "1", &llm("first")));
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
    let dry = Header {
        provider: "echo".into(),
        ..header()
    };
    let journal = Journal::deferred(&path, dry, None);
    runtime().block_on(journal.call(&host, "1", &llm("first")));
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
    rt.block_on(first.call(&host, "1", &llm("first")));
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let used = inode(&dir.join("0.journal"));
    spares.keep(first);
    assert!(!dir.join("0.journal").exists());

    let second = Journal::deferred(&dir.join("1.journal"), header(), Some(spares.clone()));
    rt.block_on(second.call(&host, "1", &llm("second")));
    drop(second);
    assert_eq!(inode(&dir.join("1.journal")), used, "the same file");
    let text = std::fs::read_to_string(dir.join("1.journal")).expect("the journal");
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.contains("second") && !text.contains("first"), "{text}");
    let (_, resumed) = Journal::open(&dir.join("1.journal")).expect("opened");
    rt.block_on(resumed.call(&host, "1", &llm("second")));
    assert_eq!(resumed.counts(), (1, 0));

    // A spare never takes the place of a file that is there, and a stopped run's are
    // cleared.
    spares.keep(resumed);
    std::fs::write(dir.join("2.journal"), "").expect("a file in the way");
    let third = Journal::deferred(&dir.join("2.journal"), header(), Some(spares.clone()));
    rt.block_on(third.call(&host, "1", &llm("third")));
    assert_ne!(inode(&dir.join("2.journal")), used);
    spares.keep(third);
    Spares::clear(&dir);
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
