//! Branches that run at once: computed inputs and reduce inner tasks.

use serde_json::{json, Value};
use tv_tests::{bundle_of, run_with, scripted};
use tv_vm::host::HostRequest;
use tv_vm::limits::Limits;

/// A host that answers every LLM call after 100 ms of (virtual) time.
struct Sleepy;

impl tv_runtime::host::AsyncHost for Sleepy {
    async fn call(
        &self,
        _: tv_runtime::host::CallId<'_>,
        request: &HostRequest,
    ) -> tv_vm::host::HostReply {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let HostRequest::Llm(r) = request else {
            panic!("no scripts here")
        };
        tv_vm::host::HostReply::Llm(Ok(tv_vm::host::LlmReply {
            content: r.messages[0].content.to_uppercase(),
            ..Default::default()
        }))
    }
}

fn timed_run(src: &str, entry: &str) -> (Value, std::time::Duration) {
    let b = bundle_of(src);
    let f = b.entry(entry).expect("entry").function;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let start = tokio::time::Instant::now();
        let r = (tv_runtime::Run::new(&b, f, vec![], Limits::default())
            .on(&Sleepy)
            .await)
            .result;
        (r.into(), start.elapsed())
    })
}

#[test]
fn independent_computed_inputs_run_concurrently_and_the_parent_waits_for_all() {
    let (r, took) = timed_run(
        r#"<task name="t"><inputs>
             <input name="a"><task><instructions>one</instructions></task></input>
             <input name="b"><task><instructions>two</instructions></task></input>
             <input name="c"><task><instructions>three</instructions></task></input>
           </inputs><instructions>{{a}} {{b}} {{c}}</instructions></task>"#,
        "t",
    );
    assert_eq!(r["content"], "ONE TWO THREE");
    // Three 100 ms calls at once, then the parent's own call: 200 ms, not 400 ms.
    assert_eq!(took.as_millis() / 100, 2, "{took:?}");
}

#[test]
fn reduce_inner_tasks_run_ahead_concurrently_while_reductions_stay_in_order() {
    let (r, took) = timed_run(
        r#"<task name="r" type="reduce">
             <inputs><input name="a">a</input><input name="b">b</input><input name="c">c</input></inputs>
             <inner_task><instructions>x{{current_input}}</instructions></inner_task>
             <reduction_task><instructions>{{accumulator}}{{current_result}}</instructions></reduction_task>
           </task>"#,
        "r",
    );
    assert_eq!(r["content"], "XAXBXC");
    // All inner tasks together (100 ms), then three reductions one after another.
    assert_eq!(took.as_millis() / 100, 4, "{took:?}");
}

#[test]
fn a_failing_computed_input_fails_its_task() {
    let b = bundle_of(
        r#"<task name="t"><inputs>
             <input name="a"><task><instructions>ok</instructions></task></input>
             <input name="b"><task><instructions>bad</instructions><output_format type="json" schema="number"/></task></input>
           </inputs><instructions>{{a}} {{b}}</instructions></task>"#,
    );
    let mut host = scripted(|r| r.messages[0].content.clone());
    let r = run_with(&b, "t", json!({}), Limits::default(), &mut host);
    assert_eq!(r["notes"]["error"]["reason"], "output_format_failure");
    // `a`, then `b` and its one re-ask.
    assert_eq!(
        host.requests.len(),
        3,
        "the parent's own call is never made"
    );
}
