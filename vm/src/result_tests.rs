use super::*;
use serde_json::json;

/// Results of every shape the machine makes.
fn samples() -> Vec<TaskResult> {
    let mut parsed = TaskResult::complete("[1]".into());
    parsed.parsed_content = Some(json!([1]));
    parsed.criteria = Some("a list".into());
    parsed.set_note("tokens", json!({"input": 3, "output": 1}));
    let mut null = TaskResult::complete("null".into());
    null.parsed_content = Some(Value::Null);
    let mut cut = TaskResult::failed(TaskError::exhausted(Resource::Output, "cut", 9, 8));
    cut.content = "half an ans".into();
    cut.set_note("tokens", json!({"input": 1, "output": 9}));
    let detailed = TaskError::failure(Reason::OutputFormatFailure, "no")
        .with_details(json!({"path": "$", "expected": "number"}));
    vec![
        TaskResult::complete("done".into()),
        parsed,
        null,
        cut,
        TaskResult::failed(detailed),
        TaskResult::failed(
            TaskError::failure(Reason::UnexpectedError, "x").with_details(Value::Null),
        ),
    ]
}

#[test]
fn results_print_with_the_keys_and_order_of_design_7() {
    let text: Vec<String> = samples()
        .iter()
        .map(|r| serde_json::to_string(r).expect("written"))
        .collect();
    assert_eq!(
        text[0],
        r#"{"status":"COMPLETE","content":"done","notes":{}}"#
    );
    assert_eq!(
        text[1],
        r#"{"status":"COMPLETE","content":"[1]","notes":{"tokens":{"input":3,"output":1}},"parsedContent":[1],"criteria":"a list"}"#
    );
    assert_eq!(
        text[2],
        r#"{"status":"COMPLETE","content":"null","notes":{},"parsedContent":null}"#
    );
    assert_eq!(
        text[3],
        r#"{"status":"FAILED","content":"half an ans","notes":{"error":{"type":"RESOURCE_EXHAUSTION","resource":"output","message":"cut","metrics":{"used":9,"limit":8}},"tokens":{"input":1,"output":9}}}"#
    );
    assert_eq!(
        text[4],
        r#"{"status":"FAILED","content":"","notes":{"error":{"type":"TASK_FAILURE","reason":"output_format_failure","message":"no","details":{"path":"$","expected":"number"}}}}"#
    );
    assert_eq!(
        text[5],
        r#"{"status":"FAILED","content":"","notes":{"error":{"type":"TASK_FAILURE","reason":"unexpected_error","message":"x"}}}"#
    );
}

#[test]
fn the_value_form_is_what_serde_writes_and_reads_back_as_the_same_result() {
    for r in samples() {
        let written = serde_json::to_string(&r).expect("written");
        let value = Value::from(r.clone());
        assert_eq!(value.to_string(), written);
        assert_eq!(TaskResult::try_from(value).expect("read"), r);
    }
}

#[test]
fn every_reason_and_resource_has_the_name_the_seeds_give_it() {
    let reasons: Vec<Value> = Reason::ALL.iter().map(|r| json!(r)).collect();
    assert_eq!(
        reasons,
        json!([
            "context_retrieval_failure",
            "context_matching_failure",
            "context_parsing_failure",
            "xml_validation_failure",
            "output_format_failure",
            "execution_timeout",
            "execution_halted",
            "subtask_failure",
            "input_validation_failure",
            "unexpected_error",
            "max_iterations_reached"
        ])
        .as_array()
        .expect("an array")
        .clone()
    );
    let resources: Vec<Value> = Resource::ALL.iter().map(|r| json!(r)).collect();
    assert_eq!(
        Value::Array(resources),
        json!([
            "depth",
            "turns",
            "context",
            "output",
            "time",
            "iterations",
            "instructions",
            "memory",
            "cost"
        ])
    );
}

#[test]
fn status_and_kind_are_read_from_the_value_form() {
    let failed = Value::from(TaskResult::failed(TaskError::exhausted(
        Resource::Depth,
        "deep",
        6,
        5,
    )));
    assert!(is_failed(&failed));
    assert_eq!(
        Status::of(&json!({"status": "CONTINUATION"})),
        Some(Status::Continuation)
    );
    assert_eq!(Status::of(&json!({"status": "done"})), None);
    assert_eq!(
        ErrorKind::of(&failed["notes"]["error"]),
        Some(ErrorKind::ResourceExhaustion {
            resource: Resource::Depth
        })
    );
    assert!(!is_failed(&Value::from(TaskResult::complete("a".into()))));
}

#[test]
fn a_value_that_is_not_a_result_is_refused() {
    assert!(TaskResult::try_from(json!(12)).is_err());
    assert!(TaskResult::try_from(json!({"status": "DONE", "content": "", "notes": {}})).is_err());
    let bad_reason = json!({"status": "FAILED", "content": "", "notes": {"error":
        {"type": "TASK_FAILURE", "reason": "timeout", "message": "m"}}});
    assert!(TaskResult::try_from(bad_reason).is_err());
}

#[test]
fn a_result_as_a_model_is_sent_it_has_no_usage_cache_marks_or_warnings_at_any_depth() {
    let inner = json!({"status": "FAILED", "content": "",
        "notes": {"usage": {"calls": 1, "costUsd": 0.01}, "cached": true, "error": {"message": "cut"}}});
    // The model's own answer is data, whatever keys it uses.
    let answer = json!({"notes": {"usage": "as written", "cached": true}});
    let r = json!({"status": "COMPLETE", "content": "done",
        "notes": {"usage": {"calls": 2}, "warnings": ["the cached reply cannot be read"],
                  "contextFiles": ["a.rs"], "evaluation": inner},
        "parsedContent": answer});
    assert_eq!(
        for_model(&r),
        json!({"status": "COMPLETE", "content": "done",
            "notes": {"contextFiles": ["a.rs"], "evaluation": {"status": "FAILED", "content": "",
                "notes": {"error": {"message": "cut"}}}},
            "parsedContent": answer})
    );
}
