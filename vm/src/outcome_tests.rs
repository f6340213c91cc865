use super::*;

/// `conform` on a COMPLETE result, in value form as the tests read it.
fn conformed(mut r: TaskResult, schema: &Output) -> Value {
    conform(&mut r, schema);
    r.into()
}

#[test]
fn a_value_that_fails_its_declared_type_names_the_path_and_keeps_the_reply() {
    let declared = Type::parse("string[][]").expect("a type");
    let schema = Output::Json(Some((&declared).into()));
    // A composite's final value, as `finish` conforms it: text to parse, or a
    // value its last step parsed already.
    let text = r#"[["a"], ["b", true]]"#;
    let r = conformed(TaskResult::complete(text.into()), &schema);
    let e = &r["notes"]["error"];
    assert_eq!(e["reason"], "output_format_failure");
    assert_eq!(
        e["message"],
        "the output should be `string[][]` JSON, but at `$[1][1]` expected string, got boolean"
    );
    assert_eq!(
        e["details"],
        json!({"expected": "string[][]", "actual": "boolean", "path": "$[1][1]",
               "expectedAtPath": "string", "content": text})
    );
    assert_eq!(r["content"], text);
    let mut parsed = TaskResult::complete("[]?".into());
    parsed.parsed_content = Some(json!([["a"], "b"]));
    let r = conformed(parsed, &schema);
    assert_eq!(r["notes"]["error"]["details"]["path"], "$[1]");
    assert_eq!(r["notes"]["error"]["details"]["expectedAtPath"], "string[]");
    assert_eq!(r["content"], "[]?");
    let ok = conformed(TaskResult::complete(r#"[["a"], []]"#.into()), &schema);
    assert_eq!(ok["parsedContent"], json!([["a"], []]));
    let r = check_return(TaskResult::complete("12".into()).into(), &Type::Number);
    assert_eq!(
        r["notes"]["error"]["message"],
        "the result should be `number`, but at `$` expected number, got string"
    );
    assert_eq!(r["content"], "12");
}

#[test]
fn a_failed_step_passes_its_reason_on_and_a_cut_one_gives_unexpected_error() {
    let failed = |e: TaskError| Value::from(TaskResult::failed(e));
    let timeout = failed(TaskError::failure(Reason::ExecutionTimeout, "slow"));
    let r = fail_sequence(timeout, json!([]), 1, 3);
    assert_eq!(r["notes"]["error"]["reason"], "execution_timeout");
    assert_eq!(r["notes"]["error"]["message"], "step 2 of 3 failed: slow");
    assert_eq!(
        r["notes"]["error"]["details"]["stepError"],
        json!({"type": "TASK_FAILURE", "reason": "execution_timeout", "message": "slow"})
    );
    let cut = failed(TaskError::exhausted(Resource::Output, "cut", 9, 8));
    let r = fail_reduce(cut, json!(0), json!(2), json!([]), json!("start"));
    assert_eq!(r["notes"]["error"]["reason"], "unexpected_error");
    assert_eq!(
        r["notes"]["error"]["details"]["inputError"]["resource"],
        "output"
    );
}

#[test]
fn a_cut_reply_fails_with_its_text_and_notes_after_the_error() {
    let reply = LlmReply {
        content: "half".into(),
        output_tokens: 8,
        truncated: true,
        max_tokens: Some(8),
        warnings: vec!["capped".into()],
        ..LlmReply::default()
    };
    let r = serde_json::to_string(&llm_result(reply, &Output::Text)).expect("written");
    assert_eq!(
        r,
        r#"{"status":"FAILED","content":"half","notes":{"error":{"type":"RESOURCE_EXHAUSTION","resource":"output","message":"the reply was cut at the output limit of 8 tokens; raise `max_tokens` on the task's `<model>` or `--max-output-tokens`","metrics":{"used":8,"limit":8}},"warnings":["capped"]}}"#
    );
}

#[test]
fn a_reply_that_is_not_an_evaluation_result_says_what_is_wrong_where() {
    let r = evaluation(TaskResult::complete(r#"{"success": "yes"}"#.into()).into());
    assert_eq!(r["notes"]["error"]["details"]["path"], "$.success");
    assert_eq!(r["notes"]["error"]["details"]["actual"], "string");
    assert_eq!(
        r["notes"]["error"]["message"],
        "the evaluator's reply should be an EvaluationResult {success: boolean, feedback?: string}, but at `$.success` expected boolean, got string"
    );
    let r = evaluation(TaskResult::complete("[true]".into()).into());
    assert_eq!(r["notes"]["error"]["details"]["actual"], "array");
    assert_eq!(r["notes"]["error"]["details"]["path"], "$");
    let ok = evaluation(TaskResult::complete(r#"{"success": true}"#.into()).into());
    assert_eq!(ok["parsedContent"], json!({"success": true}));
}

#[test]
fn a_composites_result_has_the_printed_key_order_whatever_its_last_step_set_first() {
    // The last step's criteria came before the composite's output format parsed
    // anything; the result still prints parsedContent before criteria.
    let mut step = TaskResult::complete("[1, 2]".into());
    step.criteria = Some("inner".into());
    let mut value = Value::from(step);
    value["parsedContent"] = json!([1, 2]);
    let meta = TaskMeta {
        output: Output::Json(None),
        criteria: Some("outer".into()),
        ..TaskMeta::named("s")
    };
    let r = finish(value, &meta).expect("a task result");
    assert_eq!(
        r.to_string(),
        r#"{"status":"COMPLETE","content":"[1, 2]","notes":{},"parsedContent":[1,2],"criteria":"outer"}"#
    );
    assert!(finish(json!("not a result"), &meta).is_err());
}

#[test]
fn a_map_takes_its_bodies_values_or_fails_at_the_first_failed_item_passing_its_reason_on() {
    let mut parsed = TaskResult::complete("{\"n\": 1}".into());
    parsed.parsed_content = Some(json!({"n": 1}));
    let texts = vec![
        Value::from(parsed.clone()),
        TaskResult::complete("two".into()).into(),
    ];
    let r = map_result(texts);
    assert_eq!(r["parsedContent"], json!([{"n": 1}, "two"]));
    assert_eq!(r["content"], r#"[{"n":1},"two"]"#);
    let failed = |e: TaskError| Value::from(TaskResult::failed(e));
    let results = vec![
        Value::from(parsed),
        Value::Null,
        failed(TaskError::failure(Reason::ExecutionTimeout, "slow")),
        failed(TaskError::exhausted(Resource::Output, "cut", 9, 8)),
    ];
    let r = map_result(results);
    let e = &r["notes"]["error"];
    assert_eq!(e["reason"], "execution_timeout");
    assert_eq!(
        e["message"],
        "item 3 of 4 (index 2) of the map failed: slow"
    );
    assert_eq!(e["details"]["failedIndex"], 2);
    assert_eq!(e["details"]["totalItems"], 4);
    let partial = &e["details"]["partialResults"];
    assert_eq!(partial[0]["parsedContent"], json!({"n": 1}));
    assert_eq!(
        partial
            .as_array()
            .map(|p| p[1..].iter().all(Value::is_null)),
        Some(true)
    );
    assert_eq!(e["details"]["itemError"]["reason"], "execution_timeout");
}

#[test]
fn a_reply_cut_with_no_limit_sent_reports_no_limit_and_says_what_to_set() {
    let reply = LlmReply {
        content: "half an ans".into(),
        output_tokens: 412,
        truncated: true,
        max_tokens: None,
        ..LlmReply::default()
    };
    let r = Value::from(llm_result(reply, &Output::Text));
    let e = &r["notes"]["error"];
    assert_eq!(
        (e["type"].as_str(), e["resource"].as_str()),
        (Some("RESOURCE_EXHAUSTION"), Some("output"))
    );
    assert!(e.get("metrics").is_none(), "no limit was set: {e}");
    assert_eq!(e["details"]["outputTokens"], 412);
    let message = e["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("no max_tokens was sent")
            && message.contains("--ctx-size")
            && message.contains("--max-output-tokens"),
        "{message}"
    );
    assert_eq!(r["content"], "half an ans");
}

#[test]
fn the_cut_text_of_a_failed_step_item_or_input_stays_in_the_composites_content() {
    let cut = || {
        let mut r = TaskResult::failed(TaskError::exhausted(Resource::Output, "cut", 9, 8));
        r.content = "the first half of an answer".into();
        Value::from(r)
    };
    let sequence = fail_sequence(cut(), json!([]), 0, 2);
    let reduce = fail_reduce(cut(), json!(0), json!(2), json!([]), json!("start"));
    let map = map_result(vec![TaskResult::complete("one".into()).into(), cut()]);
    for r in [sequence, reduce, map] {
        assert_eq!(r["status"], "FAILED", "{r}");
        assert_eq!(r["content"], "the first half of an answer", "{r}");
    }
}

#[test]
fn a_script_word_whose_text_starts_with_a_dash_fails_naming_its_hole() {
    for dashed in [json!("--output=/etc/passwd"), json!("-"), json!(-3)] {
        let r = check_option(dashed.clone(), "branch");
        assert!(is_failed(&r), "{dashed}");
        assert_eq!(r["notes"]["error"]["reason"], "input_validation_failure");
        assert_eq!(r["notes"]["error"]["details"]["hole"], "branch");
    }
    for fine in [
        json!("main"),
        json!(" -x"),
        json!(3),
        json!(["-x"]),
        json!(null),
    ] {
        assert_eq!(check_option(fine.clone(), "branch"), fine);
    }
    let long = "-".repeat(1000);
    let r = check_option(json!(long), "b");
    let shown = r["notes"]["error"]["details"]["value"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(shown.chars().count(), 201, "200 characters and an ellipsis");
}

#[test]
fn a_cond_that_fails_when_no_case_holds_names_its_place_and_the_value() {
    let r = no_case("t.xml:7:5", "output.severity", json!("low"));
    let e = &r["notes"]["error"];
    assert_eq!(r["status"], "FAILED");
    assert_eq!(e["reason"], "input_validation_failure");
    assert_eq!(
        e["message"],
        "t.xml:7:5: no case of the `<cond>` holds for `output.severity`, which is \"low\", and it says otherwise=\"fail\""
    );
    assert_eq!(
        e["details"],
        json!({"location": "t.xml:7:5", "path": "output.severity", "value": "low"})
    );
    // A long value is cut in the message, kept whole in the details.
    let long = "x".repeat(1000);
    let r = no_case("t.xml:1:1", "v", json!(long));
    let message = r["notes"]["error"]["message"].as_str().unwrap_or_default();
    assert!(message.len() < 400 && message.contains('…'), "{message}");
    assert_eq!(r["notes"]["error"]["details"]["value"], json!(long));
    // Cases that test no one value: the place alone.
    let r = no_case("t.xml:1:1", "", Value::Null);
    assert_eq!(
        r["notes"]["error"]["message"],
        "t.xml:1:1: no case of the `<cond>` holds, and it says otherwise=\"fail\""
    );
}
