//! What a spawned subtask runs with (DESIGN §19): the seeds' subtask defaults under the
//! template's settings, the request's `context_management` over both, the context of
//! the session that asked, and the request's `file_paths`, read through the real
//! assembler inside the workspace only.

use serde_json::{json, Value};
use std::path::Path;
use tv_runtime::context::{Assembled, Assembler};
use tv_test_support::temp::TempDir;
use tv_tests::{bundle_of, run_with};
use tv_vm::bundle::Inherit;
use tv_vm::host::{Host, HostReply, HostRequest, LlmReply, LlmRequest};
use tv_vm::limits::Limits;

/// `check_login` is what the subtask requests select; `review` asks for one in its
/// second step, whose context holds the first step's result.
const LIBRARY: &str = r#"<library>
  <template name="check_login" params="topic"><task>
    <description>Check the login code for a problem</description>
    <instructions>Check {{topic}} in the login code</instructions>
    <file_paths><path>template_only.txt</path></file_paths></task></template>
  <task name="review" type="sequential">
    <context_management><accumulate_data>true</accumulate_data></context_management>
    <steps>
      <task><instructions>read the login form</instructions></task>
      <task><instructions>plan the review</instructions></task>
    </steps>
  </task>
</library>"#;

/// The line the asking session's context holds.
const PARENT_LINE: &str = "Step 1: the login form validates emails";

/// A host that looks up each request's files with a real [`Assembler`], as `tvm run`
/// does, answers from `reply`, and keeps every request with what was assembled for it.
struct Assembling<F> {
    assembler: Assembler,
    runtime: tokio::runtime::Runtime,
    reply: F,
    seen: Vec<(LlmRequest, Assembled)>,
}

fn assembling<F: FnMut(&LlmRequest) -> String>(
    workspace: Option<&Path>,
    reply: F,
) -> Assembling<F> {
    Assembling {
        assembler: Assembler {
            workspace: workspace.map(Path::to_path_buf),
            ..Assembler::default()
        },
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime"),
        reply,
        seen: Vec::new(),
    }
}

impl<F: FnMut(&LlmRequest) -> String> Host for Assembling<F> {
    fn call(&mut self, request: &HostRequest) -> HostReply {
        let HostRequest::Llm(r) = request else {
            panic!("no script runs here")
        };
        let assembled = self.runtime.block_on(self.assembler.assemble(r));
        let content = (self.reply)(r);
        self.seen.push((r.clone(), assembled.clone()));
        HostReply::Llm(Ok(LlmReply {
            content,
            context_files: assembled.files,
            warnings: assembled.warnings,
            ..LlmReply::default()
        }))
    }
}

impl<F> Assembling<F> {
    /// The requests (and their files) of the atomic tasks whose prompt starts so.
    fn sent(&self, prompt: &str) -> Vec<&(LlmRequest, Assembled)> {
        self.seen
            .iter()
            .filter(|(r, _)| r.messages[0].content.starts_with(prompt))
            .collect()
    }
}

/// Replies for `LIBRARY`: the second step asks for `request` as a subtask, the
/// subtask answers `checked`, and the step then repeats what it was given.
fn review(request: Value) -> impl FnMut(&LlmRequest) -> String {
    let ask = json!({"status": "CONTINUATION", "subtask_request": request}).to_string();
    move |r| match (r.messages[0].content.as_str(), r.messages.len()) {
        ("read the login form", _) => "the login form validates emails".into(),
        ("plan the review", 1) => ask.clone(),
        ("plan the review", _) => r.messages.last().map(|m| m.content.clone()).unwrap(),
        _ => "checked".into(),
    }
}

fn subtask(extra: Value) -> Value {
    let mut request = json!({"type": "atomic", "description": "check the login code",
        "inputs": {"topic": "emails"}});
    if let (Some(r), Value::Object(extra)) = (request.as_object_mut(), extra) {
        r.extend(extra);
    }
    request
}

fn run(
    library: &str,
    request: Value,
    workspace: Option<&Path>,
) -> (Value, Assembling<impl FnMut(&LlmRequest) -> String>) {
    let b = bundle_of(library);
    let mut host = assembling(workspace, review(request));
    let r = run_with(&b, "review", json!({}), Limits::default(), &mut host);
    (r, host)
}

/// The single request the subtask's atomic task sent.
fn checked<F>(host: &Assembling<F>) -> &(LlmRequest, Assembled) {
    let sent = host.sent("Check");
    assert_eq!(sent.len(), 1, "the subtask ran once");
    sent[0]
}

#[test]
fn a_spawned_subtask_receives_the_context_of_the_session_that_asked_for_it() {
    let (r, host) = run(LIBRARY, subtask(json!({})), None);
    assert_eq!(r["status"], "COMPLETE", "{r:#}");
    let (sent, _) = checked(&host);
    // The seeds' subtask defaults: a subset of the parent's context (the host keeps the
    // lines that share a word with the prompt), no fresh context.
    assert_eq!(sent.task.context.inherit, Inherit::Subset);
    assert!(!sent.task.context.fresh);
    assert!(sent.context.to_string().contains(PARENT_LINE), "{sent:?}");
    let subset = tv_runtime::host::relevant_subset(&sent.context.to_string(), "Check emails");
    assert_eq!(subset, format!("{PARENT_LINE}\n"));
}

#[test]
fn a_request_that_states_inherit_context_none_leaves_the_parents_context_out() {
    let request = subtask(json!({"context_management": {"inherit_context": "none"}}));
    let (r, host) = run(LIBRARY, request, None);
    assert_eq!(r["status"], "COMPLETE", "{r:#}");
    let (sent, _) = checked(&host);
    assert_eq!(sent.task.context.inherit, Inherit::None);
    assert_eq!(sent.context.to_string(), "");
}

#[test]
fn a_request_for_fresh_context_inherits_nothing_and_searches_the_workspace() {
    let ws = TempDir::new("fresh");
    ws.write(
        "src/login.rs",
        "// The login code checks emails.\nfn login() {}\n",
    );
    let request = subtask(json!({"context_management": {"fresh_context": "enabled"}}));
    let (_, host) = run(LIBRARY, request, Some(ws.path()));
    let (sent, assembled) = checked(&host);
    assert_eq!(
        (sent.task.context.inherit, sent.task.context.fresh),
        (Inherit::None, true)
    );
    assert_eq!(sent.context.to_string(), "");
    assert!(
        assembled.files.contains(&"src/login.rs".to_string()),
        "{assembled:?}"
    );
}

#[test]
fn a_template_that_inherits_nothing_gets_the_parents_context_only_when_the_request_asks() {
    let fresh_template = LIBRARY.replace(
        "<instructions>Check",
        "<context_management><inherit_context>none</inherit_context>\
         <fresh_context>enabled</fresh_context></context_management><instructions>Check",
    );
    let (_, host) = run(&fresh_template, subtask(json!({})), None);
    let (sent, _) = checked(&host);
    assert_eq!(
        (sent.task.context.inherit, sent.task.context.fresh),
        (Inherit::None, true)
    );
    assert_eq!(sent.context.to_string(), "");

    let full = subtask(json!({"context_management": {"inherit_context": "full"}}));
    let (_, host) = run(&fresh_template, full, None);
    let (sent, _) = checked(&host);
    // Stating an inherited context turns the template's fresh context off.
    assert_eq!(
        (sent.task.context.inherit, sent.task.context.fresh),
        (Inherit::Full, false)
    );
    assert!(sent.context.to_string().contains(PARENT_LINE), "{sent:?}");
}

#[test]
fn conflicting_request_settings_fail_the_spawn_with_an_input_validation_failure_naming_both() {
    let request = subtask(json!({"context_management":
        {"inherit_context": "full", "fresh_context": "enabled"}}));
    let (r, host) = run(LIBRARY, request, None);
    assert!(host.sent("Check").is_empty(), "the subtask never ran");
    let e = &r["notes"]["error"]["details"]["stepError"];
    assert_eq!(e["reason"], "subtask_failure", "{r:#}");
    let inner = &e["details"]["subtaskError"];
    assert_eq!(inner["reason"], "input_validation_failure", "{r:#}");
    let message = inner["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("fresh_context=enabled") && message.contains("inherit_context=full"),
        "{message}"
    );
}

#[test]
fn a_request_setting_outside_the_seeds_vocabulary_is_an_input_validation_failure() {
    for (cm, named) in [
        (json!({"fresh_context": "sometimes"}), "fresh_context"),
        (json!({"inherit_context": "all"}), "inherit_context"),
        (json!({"accumulation_format": "xml"}), "accumulation_format"),
    ] {
        let (r, host) = run(LIBRARY, subtask(json!({"context_management": cm})), None);
        assert!(host.sent("Check").is_empty(), "the subtask never ran");
        let inner = &r["notes"]["error"]["details"]["stepError"]["details"]["subtaskError"];
        assert_eq!(inner["reason"], "input_validation_failure", "{r:#}");
        assert!(
            inner["message"]
                .as_str()
                .unwrap_or_default()
                .contains(named),
            "{inner}"
        );
    }
}

#[test]
fn the_subtasks_settings_reach_the_templates_it_calls_and_the_branches_they_start() {
    // The subtask's atomic task computes two inputs: one by a call, one by a nested
    // task; both run as branches of the subtask's frame.
    let library = r#"<library>
      <template name="list_names" params="code" returns="string[]"><task>
        <instructions>List the names in {{code}}</instructions>
        <output_format type="json" schema="string[]"/></task></template>
      <template name="check_login" params="topic"><task>
        <description>Check the login code for a problem</description>
        <instructions>Check {{topic}} with {{names}} and {{example}}</instructions>
        <inputs>
          <input name="names"><call template="list_names"><arg>topic</arg></call></input>
          <input name="example"><task><instructions>Write an example about {{topic}}</instructions></task></input>
        </inputs></task></template>
      <task name="review" type="sequential">
        <context_management><accumulate_data>true</accumulate_data></context_management>
        <steps>
          <task><instructions>read the login form</instructions></task>
          <task><instructions>plan the review</instructions></task>
        </steps>
      </task>
    </library>"#;
    let b = bundle_of(library);
    let full = subtask(json!({"context_management": {"inherit_context": "full"}}));
    let mut reply = review(full);
    let mut host = assembling(None, move |r: &LlmRequest| {
        if r.messages[0].content.starts_with("List") {
            "[\"a\"]".into()
        } else {
            reply(r)
        }
    });
    let r = run_with(&b, "review", json!({}), Limits::default(), &mut host);
    assert_eq!(r["status"], "COMPLETE", "{r:#}");
    for prompt in ["List the names", "Write an example", "Check emails"] {
        let sent = host.sent(prompt);
        assert_eq!(sent.len(), 1, "{prompt}");
        let (sent, _) = sent[0];
        assert_eq!(sent.task.context.inherit, Inherit::Full, "{prompt}");
        assert!(
            sent.context.to_string().contains(PARENT_LINE),
            "{prompt}: {sent:?}"
        );
    }
    // The parent's own steps run outside the subtask: unchanged.
    let (first, _) = host.sent("read the login form")[0];
    assert_eq!(first.task.context.inherit, Inherit::Full);
    assert_eq!(first.context.to_string(), "");
}

#[test]
fn a_requests_file_paths_replace_the_templates_and_are_read_only_inside_the_workspace() {
    let ws = TempDir::new("ws");
    ws.write("notes/a.txt", "alpha notes\n")
        .write("template_only.txt", "the template's file\n");
    let outside = TempDir::new("outside");
    outside.write("secret.txt", "do not send\n");
    let name = outside.path().file_name().unwrap().to_string_lossy();
    let absolute = outside.path().join("secret.txt");
    let request = subtask(json!({"file_paths": [
        "notes/a.txt",
        format!("../{name}/secret.txt"),
        absolute.to_string_lossy(),
    ]}));
    let (r, host) = run(LIBRARY, request, Some(ws.path()));
    assert_eq!(r["status"], "COMPLETE", "{r:#}");
    let (sent, assembled) = checked(&host);
    assert_eq!(sent.requested_files.len(), 3);
    assert_eq!(assembled.files, ["notes/a.txt"]);
    assert!(assembled.text.contains("alpha notes"));
    assert!(!assembled.text.contains("do not send"));
    assert!(!assembled.text.contains("the template's file"));
    let skipped = assembled
        .warnings
        .iter()
        .filter(|w| w.contains("leads outside the workspace; skipped"))
        .count();
    assert_eq!(skipped, 2, "{:?}", assembled.warnings);
    // The parent sees which files the subtask read; the warnings are for the people
    // running the workflow (README "How programs run", subtasks).
    let given = r["content"].as_str().unwrap_or_default();
    let result: Value = serde_json::from_str(given.trim_start_matches("Subtask result:\n"))
        .unwrap_or_else(|e| panic!("{e}: {given}"));
    assert_eq!(result["notes"]["contextFiles"], json!(["notes/a.txt"]));
    assert!(result["notes"].get("warnings").is_none(), "{result}");
}

#[test]
fn without_a_workspace_a_requests_file_paths_are_not_read_and_a_warning_says_so() {
    // `Cargo.toml` is in the current directory: a template could name it, a model not.
    let request = subtask(json!({"file_paths": ["Cargo.toml"]}));
    let (_, host) = run(LIBRARY, request, None);
    let (_, assembled) = checked(&host);
    assert!(assembled.files.is_empty(), "{assembled:?}");
    assert!(assembled.text.is_empty());
    assert!(
        assembled
            .warnings
            .iter()
            .any(|w| w.contains("read only with --workspace DIR")),
        "{:?}",
        assembled.warnings
    );
}

#[test]
fn named_files_take_precedence_over_fresh_context_unless_the_request_states_it() {
    let ws = TempDir::new("precedence");
    ws.write("notes/a.txt", "alpha notes\n").write(
        "src/login.rs",
        "// The login code checks emails.\nfn login() {}\n",
    );
    let fresh_template = LIBRARY.replace(
        "<instructions>Check",
        "<context_management><inherit_context>none</inherit_context>\
         <fresh_context>enabled</fresh_context></context_management><instructions>Check",
    );
    let named = subtask(json!({"file_paths": ["notes/a.txt"]}));
    let (_, host) = run(&fresh_template, named, Some(ws.path()));
    let (sent, assembled) = checked(&host);
    assert!(!sent.task.context.fresh);
    assert_eq!(assembled.files, ["notes/a.txt"]);

    let both = subtask(json!({"file_paths": ["notes/a.txt"],
        "context_management": {"fresh_context": "enabled"}}));
    let (_, host) = run(&fresh_template, both, Some(ws.path()));
    let (sent, assembled) = checked(&host);
    assert!(sent.task.context.fresh);
    assert_eq!(assembled.files[0], "notes/a.txt");
    assert!(
        assembled.files.contains(&"src/login.rs".to_string()),
        "{assembled:?}"
    );
}
