//! What never reaches a model through the files of its context (DESIGN §18): secret
//! files (`.env*`, keys, `.git/`, credentials) unless a template names one in a literal
//! `<path>`, and tvm's own files (tests, journals, traces, cassettes, cache entries,
//! snapshots) from a workspace search. Real folders, links, commands and processes.

use crate::support::files::{self, TempDir};
use crate::support::http::{Reply, Server};
use serde_json::{json, Value};
use tv_runtime::context::{Assembled, Assembler};
use tv_vm::bundle::{ContextSettings, FilePaths, TaskMeta};
use tv_vm::host::{LlmRequest, Message};

/// The key a workspace's `.env` holds; nothing a model is sent may contain it.
const KEY: &str = "sk-workspace-live-7f3c9a";

fn request(file_paths: FilePaths, fresh: bool, prompt: &str, requested: &[&str]) -> LlmRequest {
    LlmRequest {
        query: None,
        requested_files: requested.iter().map(|p| p.to_string()).collect(),
        task: TaskMeta {
            file_paths,
            context: ContextSettings {
                fresh,
                ..TaskMeta::named("t#1").context
            },
            ..TaskMeta::named("t#1")
        }
        .into(),
        system_prompt: String::new(),
        messages: vec![Message::user(prompt.into())].into(),
        context: Default::default(),
        model: None,
        settings: Default::default(),
    }
}

async fn assemble(ws: &TempDir, req: &LlmRequest) -> Assembled {
    let assembler = Assembler {
        workspace: Some(ws.path().to_path_buf()),
        ..Assembler::default()
    };
    assembler.assemble(req).await
}

/// A workspace with the secrets a project keeps beside its code, every one of them
/// about the login token, and one ordinary file about it.
fn project() -> TempDir {
    let ws = TempDir::new("secrets");
    let secret = format!("login token key {KEY}\n");
    for path in [
        ".env",
        "config/.env.production",
        "certs/login.pem",
        "deploy/id_ed25519",
        ".aws/credentials",
        "credentials.json",
        "cache/.env/login.txt",
    ] {
        ws.write(path, &secret);
    }
    ws.write(
        "src/login.rs",
        "// Checks the login token before every request.\n",
    );
    // A .gitignore that un-hides what a walk would pass over as hidden.
    ws.write(".gitignore", "!.env\n!.aws/\n!.env.production\n");
    std::os::unix::fs::symlink(".env", ws.path().join("notes.txt")).expect("link");
    ws
}

fn assert_no_key(out: &Assembled) {
    assert!(!out.text.contains(KEY), "a secret was sent: {}", out.text);
}

#[tokio::test]
async fn paths_a_command_or_a_model_names_never_read_a_secret_file_and_each_warning_names_its_rule()
{
    let ws = project();
    let listed = [".env", "certs/login.pem", "notes.txt", "src/login.rs"];
    let cmd = FilePaths::Command(format!("printf '{}\\n'", listed.join("\\n")));
    let by_command = assemble(&ws, &request(cmd, false, "hi", &[])).await;
    let by_model = assemble(&ws, &request(FilePaths::None, false, "hi", &listed)).await;
    for out in [by_command, by_model] {
        assert_no_key(&out);
        assert_eq!(out.files, ["src/login.rs"]);
        assert_eq!(
            out.warnings,
            [
                "file_paths: `.env` matches the secret-file rule `.env*`; skipped (only a \
                 literal <path> of the template reads such a file)",
                "file_paths: `certs/login.pem` matches the secret-file rule `*.pem`; skipped \
                 (only a literal <path> of the template reads such a file)",
                "file_paths: `notes.txt` matches the secret-file rule `.env*`; skipped (only a \
                 literal <path> of the template reads such a file)",
            ]
        );
    }
}

#[tokio::test]
async fn a_literal_path_naming_a_secret_file_is_read_but_one_leading_to_it_through_a_link_is_not() {
    let ws = project();
    let paths = FilePaths::Literal(vec![".env".into(), "notes.txt".into()]);
    let out = assemble(&ws, &request(paths, false, "hi", &[])).await;
    assert_eq!(out.files, [".env"]);
    assert!(out.text.contains(KEY));
    assert_eq!(
        out.warnings,
        [
            "file_paths: `notes.txt` matches the secret-file rule `.env*`; skipped (only a \
          literal <path> of the template reads such a file)"
        ]
    );
}

#[tokio::test]
async fn fresh_context_and_descriptions_pass_over_secret_files_even_when_gitignore_unhides_them() {
    let ws = project();
    let prompt = "Where is the login token key checked?";
    let fresh = assemble(&ws, &request(FilePaths::None, true, prompt, &[])).await;
    let described = FilePaths::Description("the login token key".into());
    let matched = assemble(&ws, &request(described, false, "hi", &[])).await;
    for (out, label) in [
        (fresh, "fresh context"),
        (matched, "file_paths description"),
    ] {
        assert_no_key(&out);
        assert_eq!(out.files, ["src/login.rs"], "{label}");
        assert_eq!(
            out.warnings,
            [format!(
                "{label}: 7 files passed over as secrets: `.aws/credentials` (rule `.aws/`), \
                 `.env` (rule `.env*`), `cache/.env/login.txt` (rule `.env*`), \
                 `certs/login.pem` (rule `*.pem`), `config/.env.production` (rule `.env*`) \
                 and 2 more"
            )]
        );
    }
}

/// Files tvm writes about runs and tests, each about the release date, in a workspace
/// with one ordinary file about it.
fn tvm_files(ws: &TempDir) {
    let about = "the release date is on the launch calendar";
    let test_file = format!(
        "<library>\n<task name=\"t\"><instructions>x</instructions></task>\n\
         <test name=\"date\" entry=\"t\"><reply>{about}: June 4</reply></test>\n</library>\n"
    );
    ws.write("library.xml", test_file)
        .write(
            "run.jsonl",
            format!("{{\"journal\":3,\"bundle\":\"{about}\"}}\n"),
        )
        .write(
            "trace.jsonl",
            format!("{{\"kind\":\"llm\",\"task\":\"{about}\"}}\n"),
        )
        .write(
            "replies.cassette",
            format!("{{\"key\":\"00\",\"prompt\":\"{about}\"}}\n"),
        )
        .write(
            "cache/v1/ab/ab00.json",
            format!("{{\"tvmReplyCache\":1,\"key\":\"{about}\"}}\n"),
        )
        .write(
            "snapshots/t.snap",
            format!("---\nsource: \"x\"\n---\n{about}\n"),
        )
        .write("live/trace.log", format!("{about}: written by this run\n"))
        .write("notes.md", format!("The team fixed {about}.\n"));
}

#[tokio::test]
async fn a_workspace_search_never_adds_tvms_own_files_known_by_content_or_as_this_runs_files() {
    let ws = TempDir::new("own");
    tvm_files(&ws);
    let assembler = Assembler {
        workspace: Some(ws.path().to_path_buf()),
        own_files: vec![ws.path().join("live")],
        ..Assembler::default()
    };
    let prompt = "When is the release date on the launch calendar?";
    let out = assembler
        .assemble(&request(FilePaths::None, true, prompt, &[]))
        .await;
    assert_eq!(out.files, ["notes.md"], "{}", out.text);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

/// A run whose workspace holds tests finds neither the test file (its replies) nor its
/// cassette when a task turns fresh context on; `tvm test` searches nothing at all; and
/// the compiler says that `inherit_context=none` turned the search on.
#[test]
fn tvm_test_never_feeds_the_test_file_or_its_cassette_to_fresh_context() {
    let dir = TempDir::new("tvm-test-own");
    dir.write(
        "launch.xml",
        r#"<library>
  <task name="ask">
    <instructions>When is the release date on the launch calendar?</instructions>
    <context_management><inherit_context>none</inherit_context></context_management>
  </task>
  <test name="the date is asked for" entry="ask">
    <reply match="release date">the release date is on the launch calendar: June 4</reply>
    <expect path="content" contains="June 4"/>
  </test>
</library>
"#,
    );
    dir.write(
        "replies.jsonl",
        "{\"key\":\"00\",\"prompt\":\"the release date on the launch calendar\"}\n",
    );
    dir.write(
        "notes.md",
        "The release date moved on the launch calendar.\n",
    );
    let out = files::tvm(&["test", "."])
        .current_dir(dir.path())
        .output()
        .expect("tvm test");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed, 0 failed"), "{stdout}");
    assert!(
        stderr.contains("launch.xml:4:42: warning: inherit_context=none turns fresh context on"),
        "{stderr}"
    );
    let run = files::tvm(&[
        "run",
        "launch.xml",
        "--workspace",
        ".",
        "--provider",
        "echo",
    ])
    .current_dir(dir.path())
    .output()
    .expect("tvm run");
    let result: serde_json::Value = serde_json::from_slice(&run.stdout).expect("a result");
    assert_eq!(
        result["notes"]["contextFiles"],
        serde_json::json!(["notes.md"]),
        "{result:#}"
    );
}

/// The library a model asks for a subtask from: its reply to `plan` names files.
const SUBTASKS: &str = r#"<library>
  <template name="check_notes" params="topic"><task>
    <description>Check the notes for a problem</description>
    <instructions>Check {{topic}} in the notes</instructions></task></template>
  <task name="review" type="sequential">
    <steps>
      <task><instructions>plan the review</instructions></task>
    </steps>
  </task>
</library>"#;

#[test]
fn a_models_subtask_request_for_the_env_file_sends_no_key_to_the_model() {
    let rt = files::runtime();
    let ask = json!({"status": "CONTINUATION", "subtask_request": {
        "type": "atomic", "description": "check the notes", "inputs": {"topic": "keys"},
        "file_paths": [".env", "notes.md", "config/.env.production", "deploy/id_ed25519"]}})
    .to_string();
    let server = rt.block_on(Server::start(move |i, _| match i {
        0 => Reply::completion(&ask, 5, 5),
        _ => Reply::completion("checked", 5, 5),
    }));
    let ws = project();
    ws.write("notes.md", "The notes about keys.\n");
    let dir = TempDir::new("subtask-env");
    let bundle = files::compiled(dir.path(), SUBTASKS);
    let (code, out, err) = files::run_tvm(
        &[
            "run",
            bundle.to_str().expect("path"),
            "--entry",
            "review",
            "--provider",
            "openai",
            "--workspace",
            ws.path().to_str().expect("path"),
        ],
        &[
            ("OPENAI_BASE_URL", &server.url()),
            ("OPENAI_API_KEY", "sk-test-caller"),
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let sent: Vec<String> = server.requests().iter().map(|r| r.body.clone()).collect();
    assert_eq!(sent.len(), 3, "plan, the subtask, the plan again: {sent:?}");
    assert!(sent[1].contains("The notes about keys."), "{}", sent[1]);
    for body in &sent {
        assert!(!body.contains(KEY), "a request carried the key: {body}");
    }
    // The skipped files are said on stderr; the session that asked gets the subtask's
    // result without its warnings, which are for the people running the workflow.
    for rule in ["`.env*`", "`id_*`"] {
        let warning = format!("matches the secret-file rule {rule}; skipped");
        assert!(err.contains(&warning), "{err}");
    }
    let result: Value = serde_json::from_str(&out).expect("a result");
    assert_eq!(result["status"], "COMPLETE");
}

#[tokio::test]
async fn a_path_holding_a_nul_byte_is_skipped_whole_not_read_up_to_the_nul() {
    let ws = project();
    let listed = "printf 'src/login.rs\\000.env\\n'".to_string();
    let out = assemble(&ws, &request(FilePaths::Command(listed), false, "hi", &[])).await;
    assert!(out.files.is_empty(), "{:?}", out.files);
    assert_eq!(
        out.warnings,
        ["file_paths: `src/login.rs\0.env` holds a NUL byte, which no path can; skipped"]
    );
}

#[tokio::test]
async fn only_the_path_below_the_folder_a_file_is_read_from_is_matched_against_the_rules() {
    let ws = TempDir::new("rules-below");
    let outside = TempDir::new("rules-above");
    outside.write("secrets.d/notes.md", "plain notes\n");
    let allowed = outside.path().join("secrets.d");
    std::os::unix::fs::symlink(allowed.join("notes.md"), ws.path().join("notes.md")).expect("link");
    let assembler = Assembler {
        workspace: Some(ws.path().to_path_buf()),
        allow_read: vec![allowed.canonicalize().expect("resolved")],
        ..Assembler::default()
    };
    let req = request(
        FilePaths::Literal(vec!["notes.md".into()]),
        false,
        "hi",
        &[],
    );
    let out = assembler.assemble(&req).await;
    // `secrets.d` names the granted folder, not the file: the file is read.
    assert_eq!(out.files, ["notes.md"], "{:?}", out.warnings);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}
