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
