//! Context look-ups: files named by `file_paths` (literal, command, description) and
//! fresh context searched in a workspace, within limits, with warnings instead of errors.

use crate::support::temp::TempDir;
use std::time::{Duration, Instant};
use tv_runtime::context::{Assembled, Assembler, Limits};
use tv_runtime::host::{AsyncHost, CallId};
use tv_runtime::host::{Choice, RunHost};
use tv_runtime::script::ScriptRunner;
use tv_vm::bundle::{Assembly, ContextSettings, FilePaths, TaskMeta};
use tv_vm::host::{HostReply, HostRequest, LlmRequest, Message};

fn request(file_paths: FilePaths, fresh: bool, prompt: &str) -> LlmRequest {
    LlmRequest {
        query: None,
        requested_files: Vec::new(),
        task: TaskMeta {
            file_paths,
            context: ContextSettings {
                fresh,
                ..TaskMeta::named("test#1").context
            },
            ..TaskMeta::named("test#1")
        }
        .into(),
        system_prompt: "You are a careful engineer.".into(),
        messages: vec![Message::user(prompt.into())].into(),
        context: Default::default(),
        model: None,
        settings: Default::default(),
    }
}

fn literal(paths: &[&str]) -> FilePaths {
    FilePaths::Literal(paths.iter().map(|p| p.to_string()).collect())
}

fn in_workspace(dir: &TempDir) -> Assembler {
    Assembler {
        workspace: Some(dir.path().to_path_buf()),
        limits: Limits::default(),
        allow_read: Vec::new(),
        own_files: Vec::new(),
        require_files: false,
        no_search: false,
    }
}

async fn assemble(assembler: &Assembler, req: &LlmRequest) -> Assembled {
    assembler.assemble(req).await
}

#[tokio::test]
async fn literal_paths_are_included_with_headers_relative_to_the_workspace() {
    let dir = TempDir::new("literal");
    dir.write("a.txt", "alpha\n").write("sub/b.txt", "beta");
    let absolute = dir.path().join("sub/b.txt");
    let paths = literal(&["a.txt", absolute.to_str().expect("utf-8 temp dir")]);
    let out = assemble(&in_workspace(&dir), &request(paths, false, "hi")).await;
    assert_eq!(out.text, "--- a.txt ---\nalpha\n--- sub/b.txt ---\nbeta\n");
    assert_eq!(out.files, ["a.txt", "sub/b.txt"]);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

#[tokio::test]
async fn a_missing_path_is_a_warning_and_the_other_files_are_still_included() {
    let dir = TempDir::new("missing");
    dir.write("a.txt", "alpha\n").write("c.txt", "gamma\n");
    let req = request(literal(&["a.txt", "nope.txt", "c.txt"]), false, "hi");
    let out = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(out.files, ["a.txt", "c.txt"]);
    assert_eq!(out.warnings, ["file_paths: `nope.txt` does not exist"]);
}

#[tokio::test]
async fn binary_files_and_files_that_are_not_utf8_are_skipped_with_warnings() {
    let dir = TempDir::new("binary");
    dir.write("a.bin", b"PK\x03\x04\0\0data")
        .write("latin1.txt", b"caf\xe9\n")
        .write("ok.txt", "fine\n");
    let req = request(literal(&["a.bin", "latin1.txt", "ok.txt"]), false, "hi");
    let out = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(out.files, ["ok.txt"]);
    assert_eq!(out.warnings.len(), 2, "{:?}", out.warnings);
    assert!(out.warnings[0].starts_with("file_paths: `a.bin` is not a text file"));
    assert!(out.warnings[1].starts_with("file_paths: `latin1.txt` is not a text file"));
}

#[tokio::test]
async fn a_long_file_is_cut_on_a_character_boundary_with_a_marker() {
    let dir = TempDir::new("cut");
    // 'é' is bytes 4 and 5 (from 0), so a cut at 5 bytes falls back to 4.
    dir.write("long.txt", "abcdéfghijklmnop\n");
    let mut assembler = in_workspace(&dir);
    assembler.limits.max_file_bytes = 5;
    let out = assemble(&assembler, &request(literal(&["long.txt"]), false, "hi")).await;
    assert_eq!(out.text, "--- long.txt ---\nabcd\n[... cut at 4 bytes]\n");
    assembler.limits.max_file_bytes = 6;
    let out = assemble(&assembler, &request(literal(&["long.txt"]), false, "hi")).await;
    assert_eq!(out.text, "--- long.txt ---\nabcdé\n[... cut at 6 bytes]\n");
    // The read stops a few bytes past the cap, inside 'é': still text, not binary.
    dir.write("split.txt", "aaaaaaébc\n");
    assembler.limits.max_file_bytes = 3;
    let out = assemble(&assembler, &request(literal(&["split.txt"]), false, "hi")).await;
    assert_eq!(out.text, "--- split.txt ---\naaa\n[... cut at 3 bytes]\n");
    assert!(out.warnings.is_empty());
}

#[tokio::test]
async fn the_total_byte_limit_leaves_the_remaining_files_out_with_a_warning() {
    let dir = TempDir::new("total");
    for name in ["1.txt", "2.txt", "3.txt", "4.txt"] {
        dir.write(name, "x".repeat(30));
    }
    let mut assembler = in_workspace(&dir);
    assembler.limits.max_total_bytes = 100;
    let req = request(literal(&["1.txt", "2.txt", "3.txt", "4.txt"]), false, "hi");
    let out = assemble(&assembler, &req).await;
    assert_eq!(out.files, ["1.txt", "2.txt"]);
    assert!(out.text.len() <= 100);
    assert_eq!(
        out.warnings,
        ["file_paths: 2 files left out: the limit of 100 bytes was reached"]
    );
}

#[tokio::test]
async fn the_file_count_limit_leaves_the_remaining_files_out_with_a_warning() {
    let dir = TempDir::new("count");
    for name in ["1.txt", "2.txt", "3.txt"] {
        dir.write(name, "small\n");
    }
    let mut assembler = in_workspace(&dir);
    assembler.limits.max_files = 2;
    let req = request(literal(&["1.txt", "2.txt", "3.txt"]), false, "hi");
    let out = assemble(&assembler, &req).await;
    assert_eq!(out.files, ["1.txt", "2.txt"]);
    assert_eq!(
        out.warnings,
        ["file_paths: 1 file left out: the limit of 2 files was reached"]
    );
}

#[tokio::test]
async fn a_command_lists_the_files_to_include_one_per_line() {
    let dir = TempDir::new("command");
    dir.write("a.txt", "alpha\n").write("sub/b.txt", "beta\n");
    let cmd = FilePaths::Command("printf 'a.txt\\n\\n  sub/b.txt\\n'".into());
    let out = assemble(&in_workspace(&dir), &request(cmd, false, "hi")).await;
    assert_eq!(out.files, ["a.txt", "sub/b.txt"]);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

#[tokio::test]
async fn a_failing_command_is_a_retrieval_failure_that_quotes_its_error() {
    let dir = TempDir::new("failing");
    dir.write("a.txt", "alpha\n");
    let cmd = FilePaths::Command("echo a.txt; echo >&2; echo broken >&2; exit 3".into());
    let out = assemble(&in_workspace(&dir), &request(cmd, true, "alpha")).await;
    // Nothing else is looked up: the task fails without its files.
    assert_eq!(
        out,
        Assembled {
            failure: Some(
                "file_paths: the command `echo a.txt; echo >&2; echo broken >&2; exit 3` \
                 failed with exit code 3: broken"
                    .into()
            ),
            ..Assembled::default()
        }
    );
}

#[tokio::test]
async fn a_command_that_outlives_its_timeout_is_stopped_and_is_a_retrieval_failure() {
    let dir = TempDir::new("slow");
    let mut assembler = in_workspace(&dir);
    assembler.limits.command_timeout = Duration::from_millis(200);
    let started = Instant::now();
    let out = assemble(
        &assembler,
        &request(FilePaths::Command("sleep 600".into()), false, "hi"),
    )
    .await;
    // Stopped at 200 ms; the bound only tells "stopped" from "waited for the command".
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "{:?}",
        started.elapsed()
    );
    assert!(out.warnings.is_empty() && out.files.is_empty(), "{out:?}");
    assert_eq!(
        out.failure.as_deref(),
        Some("file_paths: the command `sleep 600` did not finish within 200ms and was stopped")
    );
}

#[tokio::test]
async fn a_command_that_succeeds_is_no_failure_even_when_its_paths_are_missing() {
    let dir = TempDir::new("listed-missing");
    let cmd = FilePaths::Command("echo gone.txt".into());
    let out = assemble(&in_workspace(&dir), &request(cmd, false, "hi")).await;
    assert_eq!(out.failure, None);
    assert_eq!(out.warnings, ["file_paths: `gone.txt` does not exist"]);
}

#[tokio::test]
async fn a_failing_file_paths_command_fails_the_task_and_the_model_is_not_called() {
    let dir = TempDir::new("runhost");
    dir.write("a.txt", "alpha\n");
    let mut host = RunHost::with_adapters(Choice::Echo, None, None, ScriptRunner::default());
    host.context = in_workspace(&dir);
    let failing = request(
        FilePaths::Command("echo a.txt; echo no index >&2; exit 2".into()),
        false,
        "hi",
    );
    match host
        .call(CallId { path: "", n: 1 }, &HostRequest::Llm(failing))
        .await
    {
        HostReply::Llm(Err(e)) => {
            assert_eq!(e.reason, tv_vm::result::Reason::ContextRetrievalFailure);
            assert_eq!(
                e.message,
                "file_paths: the command `echo a.txt; echo no index >&2; exit 2` \
                 failed with exit code 2: no index"
            );
        }
        other => panic!("the echo provider was called: {other:?}"),
    }
    // The same command without its failure: the echo provider answers, with the file.
    let working = request(FilePaths::Command("echo a.txt".into()), false, "hi");
    match host
        .call(CallId { path: "", n: 1 }, &HostRequest::Llm(working))
        .await
    {
        HostReply::Llm(Ok(reply)) => assert_eq!(reply.context_files, ["a.txt"]),
        other => panic!("{other:?}"),
    }
}

/// What happens to a file a task names that cannot be read, case by case: without
/// `--require-files` a warning (also in `unread`, which `tvm` says on stderr) and the
/// model is asked without it; with it, a failure naming the path, except for a file
/// the author excluded and for paths a subtask request (a model) chose.
#[tokio::test]
async fn a_file_that_cannot_be_read_is_a_warning_or_under_require_files_a_failure() {
    let dir = TempDir::new("required");
    dir.write("a.txt", "alpha\n").write("bin.dat", "\0\x01");
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link.txt")).expect("link");
    let many: Vec<String> = (0..21).map(|i| format!("f{i}.txt")).collect();
    for f in &many {
        dir.write(f, "x\n");
    }
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let needs =
        "; the task needs every file it names (--require-files), so the model was not called";
    // (what the task names, how it is asked for, the warning, the failure when required)
    let cases: Vec<(FilePaths, &str, &str, String)> = vec![
        (literal(&["a.txt", "nope.txt"]), "literal", "file_paths: `nope.txt` does not exist",
            format!("file_paths: `nope.txt` does not exist{needs}")),
        (literal(&["a.txt", "link.txt"]), "literal",
            "file_paths: `link.txt` leads outside the workspace; skipped",
            format!("file_paths: `link.txt` leads outside the workspace; skipped{needs}")),
        (literal(&["bin.dat"]), "literal",
            "file_paths: `bin.dat` is not a text file (binary or not UTF-8); skipped",
            format!("file_paths: `bin.dat` is not a text file (binary or not UTF-8); skipped{needs}")),
        (FilePaths::Command("echo a.txt; echo gone.txt".into()), "literal",
            "file_paths: `gone.txt` does not exist",
            format!("file_paths: `gone.txt` does not exist{needs}")),
        (FilePaths::Command("echo a.txt".into()), "no workspace",
            "file_paths: a command's paths are read only with --workspace DIR; the command was not run",
            format!("file_paths: a command's paths are read only with --workspace DIR; the command was not run{needs}")),
        (literal(&many), "literal", "file_paths: 1 file left out: the limit of 20 files was reached",
            format!("file_paths: `f20.txt` and the files after it (1 in all) do not fit: the limit of 20 files was reached{needs}")),
        (literal(&["a.txt", "nope.txt"]), "requested", "file_paths: `nope.txt` does not exist", String::new()),
        (literal(&["a.txt", "bin.dat"]), "excluded",
            "file_paths: `bin.dat` matches excluded_elements `*.dat`; skipped", String::new()),
    ];
    for (paths, how, warning, failure) in cases {
        for required in [false, true] {
            let mut assembler = in_workspace(&dir);
            assembler.require_files = required;
            let mut req = request(paths.clone(), false, "hi");
            match how {
                "no workspace" => assembler.workspace = None,
                "requested" => {
                    let FilePaths::Literal(named) = &paths else {
                        panic!()
                    };
                    req.requested_files = named.clone();
                }
                "excluded" => req = assembled_by(req, &[], &[], &["*.dat"]),
                _ => {}
            }
            let out = assemble(&assembler, &req).await;
            let case = format!("{how} {paths:?} required={required}");
            if required && !failure.is_empty() {
                assert_eq!(out.failure.as_deref(), Some(failure.as_str()), "{case}");
                continue;
            }
            assert_eq!(out.failure, None, "{case}");
            assert!(
                out.warnings.iter().any(|w| w == warning),
                "{case}: {:?}",
                out.warnings
            );
            let said = out.unread.iter().any(|w| w == warning);
            assert_eq!(said, how != "excluded", "{case}: {:?}", out.unread);
        }
    }
}

/// A small project: one file about login sessions, others about unrelated things.
fn project(name: &str) -> TempDir {
    let dir = TempDir::new(name);
    dir.write(
        "src/auth.rs",
        "// Login sessions.\npub struct Session { token: String, expires_at: u64 }\n\
         pub fn login(user: &str) -> Session { todo!() }\n\
         /// The token expiry is checked on every request.\npub fn is_expired(s: &Session) -> bool { todo!() }\n",
    )
    .write("src/db/migrate.rs", "// Database schema migrations.\nfn migrate(schema: &Schema) {}\n")
    .write("src/render.rs", "// Draws widgets on the screen.\nfn draw(widget: &Widget) {}\n")
    .write("README.md", "A demo project with a database and a screen.\n");
    dir
}

#[tokio::test]
async fn a_description_ranks_the_workspace_files_by_relevance() {
    let dir = project("description");
    let desc = FilePaths::Description("the database schema migration".into());
    let out = assemble(&in_workspace(&dir), &request(desc, false, "hi")).await;
    assert_eq!(
        out.files.first().map(String::as_str),
        Some("src/db/migrate.rs")
    );
    assert!(out
        .text
        .starts_with("--- src/db/migrate.rs (relevance 1.00) ---\n"));
    assert!(!out.files.contains(&"src/render.rs".to_string()));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

#[tokio::test]
async fn a_description_without_a_workspace_is_a_warning() {
    let desc = FilePaths::Description("the database schema".into());
    let out = assemble(&Assembler::default(), &request(desc, false, "hi")).await;
    assert_eq!(
        out,
        Assembled {
            warnings: vec!["file_paths description needs --workspace".into()],
            ..Assembled::default()
        }
    );
}

#[tokio::test]
async fn fresh_context_ranks_the_file_about_the_prompt_first() {
    let dir = project("fresh");
    let req = request(
        FilePaths::None,
        true,
        "Why does the login token expiry fail?",
    );
    let out = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(out.files, ["src/auth.rs"]);
    assert!(out
        .text
        .starts_with("--- src/auth.rs (relevance 1.00) ---\n// Login sessions."));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

#[tokio::test]
async fn fresh_context_never_includes_ignored_hidden_or_linked_files() {
    let dir = project("ignored");
    let strong = "login token expiry login token expiry login token expiry\n";
    dir.write(".gitignore", "secret.rs\nbuild/\n")
        .write("secret.rs", strong)
        .write("build/out.rs", strong)
        .write("notes/.ignore", "*.log\n")
        .write("notes/trace.log", strong)
        .write(".env", strong);
    let outside = TempDir::new("outside");
    outside.write("token.rs", strong);
    std::os::unix::fs::symlink(outside.path().join("token.rs"), dir.path().join("link.rs"))
        .expect("symlink");
    std::os::unix::fs::symlink(outside.path(), dir.path().join("linkdir")).expect("symlink");
    let req = request(FilePaths::None, true, "login token expiry");
    let out = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(out.files, ["src/auth.rs"]);
    assert!(!out.text.contains(strong.trim()));
}

#[tokio::test]
async fn fresh_context_without_a_workspace_searches_nothing_and_says_so() {
    let req = request(
        FilePaths::None,
        true,
        "login token expiry in Cargo.toml and src/lib.rs",
    );
    let out = assemble(&Assembler::default(), &req).await;
    assert_eq!(
        out,
        Assembled {
            warnings: vec!["fresh context was requested but no workspace was given \
                        (tvm run --workspace DIR); no files were searched"
                .into()],
            ..Assembled::default()
        }
    );
}

#[tokio::test]
async fn a_long_matching_file_is_shown_as_excerpts_around_its_best_lines() {
    let dir = TempDir::new("excerpt");
    let mut text: Vec<String> = (1..=200).map(|i| format!("filler line {i}")).collect();
    text[149] = "check the token expiry here".into();
    dir.write("big.rs", text.join("\n"));
    let req = request(FilePaths::None, true, "token expiry");
    let out = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(out.files, ["big.rs"]);
    let expected: String = (147..=153).map(|i| format!("{}\n", text[i - 1])).collect();
    assert_eq!(
        out.text,
        format!("--- big.rs (relevance 1.00) ---\n[lines 147-153]\n{expected}")
    );
}

#[tokio::test]
async fn files_named_by_file_paths_are_not_repeated_by_fresh_context() {
    let dir = project("named");
    let req = request(literal(&["src/auth.rs"]), true, "login token expiry");
    let out = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(out.files, ["src/auth.rs"]);
    assert!(out.text.starts_with("--- src/auth.rs ---\n"));
}

#[tokio::test]
async fn odd_file_names_and_unreadable_files_do_not_stop_the_search() {
    use std::os::unix::ffi::OsStrExt;
    let dir = project("odd");
    let odd = dir
        .path()
        .join(std::ffi::OsStr::from_bytes(b"bad\xffname-token.rs"));
    std::fs::write(odd, "login token expiry\n").expect("odd name");
    dir.write("empty.rs", "")
        .write("huge.rs", "token ".repeat(100_000));
    let req = request(FilePaths::None, true, "login token expiry");
    let out = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(out.files, ["src/auth.rs"]);
}

#[tokio::test]
async fn the_output_is_the_same_on_every_run() {
    let dir = project("determinism");
    for name in ["b/session.rs", "a/session.rs", "c/session.rs"] {
        dir.write(name, "session handling\n");
    }
    let req = request(FilePaths::None, true, "session token");
    let first = assemble(&in_workspace(&dir), &req).await;
    let second = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(first, second);
    // Equal scores are ordered by path.
    assert_eq!(
        first.files,
        [
            "src/auth.rs",
            "a/session.rs",
            "b/session.rs",
            "c/session.rs"
        ]
    );
}

/// Two files: one about what the task's inputs say, one about what its prompt says.
fn billing_and_login(name: &str) -> TempDir {
    let dir = TempDir::new(name);
    dir.write(
        "src/billing.rs",
        "// Invoice totals and refunds.\nfn invoice_total() {}\n",
    )
    .write(
        "src/login.rs",
        "// Login token expiry.\nfn login_token() {}\n",
    );
    dir
}

#[tokio::test]
async fn a_query_is_searched_instead_of_the_prompt() {
    let dir = billing_and_login("query");
    let mut req = request(
        FilePaths::None,
        true,
        "Why does the login token expiry fail?",
    );
    let out = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(out.files, ["src/login.rs"]);
    req.query = Some("invoice refunds".into());
    let out = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(out.files, ["src/billing.rs"]);
    assert!(out
        .text
        .starts_with("--- src/billing.rs (relevance 1.00) ---\n"));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

#[tokio::test]
async fn a_query_and_a_description_search_together_and_the_prompt_does_not() {
    let dir = billing_and_login("query-description");
    dir.write("src/schema.rs", "// Database schema migrations.\n");
    let mut req = request(
        FilePaths::Description("database schema".into()),
        true,
        "login token expiry",
    );
    req.query = Some("invoice refunds".into());
    let mut out = assemble(&in_workspace(&dir), &req).await;
    out.files.sort();
    assert_eq!(out.files, ["src/billing.rs", "src/schema.rs"]);
    // Without fresh context the query is not used: only the description searches.
    let mut req = request(FilePaths::Description("database schema".into()), false, "x");
    req.query = Some("invoice refunds".into());
    let out = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(out.files, ["src/schema.rs"]);
}

/// The request with `context_assembly` globs.
fn assembled_by(
    mut req: LlmRequest,
    primary: &[&str],
    secondary: &[&str],
    excluded: &[&str],
) -> LlmRequest {
    let globs = |g: &[&str]| g.iter().map(|s| s.to_string()).collect();
    req.task = TaskMeta {
        assembly: Assembly {
            primary: globs(primary),
            secondary: globs(secondary),
            excluded: globs(excluded),
        },
        ..(*req.task).clone()
    }
    .into();
    req
}

/// Config files, docs, code about login tokens, and secrets that match the prompt best.
fn layered(name: &str) -> TempDir {
    let dir = TempDir::new(name);
    dir.write("config/a.toml", "token = 1\n")
        .write("config/b.toml", "port = 80\n")
        .write("config/nested/c.toml", "deep = true\n")
        .write("docs/guide.md", "How to write a guide.\n")
        .write("docs/login.md", "Help with signing in.\n")
        .write("notes.md", "Meeting notes.\n")
        .write("src/auth.rs", "// login token expiry checks\n")
        .write("src/session.rs", "// a login session\n")
        .write(
            "secrets/key.txt",
            "login token expiry login token expiry: hunter2\n",
        );
    std::os::unix::fs::symlink(
        dir.path().join("secrets/key.txt"),
        dir.path().join("alias.txt"),
    )
    .expect("symlink");
    dir
}

#[tokio::test]
async fn primary_files_come_first_and_secondary_ones_after_the_ranked_rest() {
    let dir = layered("order");
    let req = assembled_by(
        request(FilePaths::None, true, "login token expiry"),
        &["config/*.toml"],
        &["*.md"],
        &["secrets"],
    );
    let out = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(
        out.files,
        [
            // Primary, in path order; `*` stays in its folder; a.toml is not ranked again.
            "config/a.toml",
            "config/b.toml",
            // Ranked; docs/login.md matches a secondary glob but was ranked in.
            "src/auth.rs",
            "docs/login.md",
            "src/session.rs",
            // Secondary, in path order: a glob without `/` matches at any depth.
            "docs/guide.md",
            "notes.md",
        ]
    );
    assert!(out
        .text
        .starts_with("--- config/a.toml (primary) ---\ntoken = 1\n"));
    assert!(out.text.contains("--- src/auth.rs (relevance 1.00) ---\n"));
    assert!(out
        .text
        .ends_with("--- notes.md (secondary) ---\nMeeting notes.\n"));
    assert!(!out.text.contains("hunter2"), "{}", out.text);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

#[tokio::test]
async fn primary_and_secondary_files_stay_within_the_caps() {
    let dir = layered("caps");
    let req = assembled_by(
        request(FilePaths::None, true, "login token expiry"),
        &["config/**"],
        &["docs"],
        &[],
    );
    let mut assembler = in_workspace(&dir);
    assembler.limits.max_files = 4;
    let out = assemble(&assembler, &req).await;
    assert_eq!(
        out.files,
        [
            "config/a.toml",
            "config/b.toml",
            "config/nested/c.toml",
            "secrets/key.txt"
        ]
    );
    // Left out: the three other ranked files and the secondary docs/guide.md.
    assert_eq!(
        out.warnings,
        ["fresh context: 4 files left out: the limit of 4 files was reached"]
    );
    let mut assembler = in_workspace(&dir);
    assembler.limits.max_total_bytes = 90;
    let out = assemble(&assembler, &req).await;
    assert_eq!(out.files, ["config/a.toml", "config/b.toml"]);
    assert!(out.text.len() <= 90, "{}", out.text);
    assert!(
        out.warnings[0].starts_with("fresh context: ")
            && out.warnings[0].ends_with("files left out: the limit of 90 bytes was reached"),
        "{:?}",
        out.warnings
    );
}

#[tokio::test]
async fn primary_and_secondary_globs_order_a_description_search_too() {
    let dir = layered("description-order");
    let req = assembled_by(
        request(FilePaths::Description("login session".into()), false, "x"),
        &["notes.md"],
        &["config/b.toml"],
        &[],
    );
    let out = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(out.files.first().map(String::as_str), Some("notes.md"));
    assert_eq!(out.files.last().map(String::as_str), Some("config/b.toml"));
}

#[tokio::test]
async fn excluded_files_never_reach_the_context_whatever_names_them() {
    let dir = layered("excluded");
    let excluded = |req| assembled_by(req, &[], &[], &["secrets"]);
    // Literal paths, as written, through `..` or through a link: skipped, with a warning.
    let paths = [
        "notes.md",
        "secrets/key.txt",
        "docs/../secrets/key.txt",
        "alias.txt",
    ];
    let req = excluded(request(literal(&paths), false, "hi"));
    let out = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(out.files, ["notes.md"]);
    for path in &paths[1..] {
        let warning = format!("file_paths: `{path}` matches excluded_elements `secrets`; skipped");
        assert!(
            out.warnings.contains(&warning),
            "{path}: {:?}",
            out.warnings
        );
    }
    // Listed by a command.
    let cmd = FilePaths::Command("printf 'secrets/key.txt\\nnotes.md\\n'".into());
    let out = assemble(&in_workspace(&dir), &excluded(request(cmd, false, "hi"))).await;
    assert_eq!(out.files, ["notes.md"]);
    assert_eq!(
        out.warnings,
        ["file_paths: `secrets/key.txt` matches excluded_elements `secrets`; skipped"]
    );
    // Matched by fresh context, even when a primary glob names it: silently left out.
    let req = request(FilePaths::None, true, "login token expiry");
    let req = assembled_by(req, &["secrets/**"], &[], &["secrets"]);
    let out = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(
        out.files,
        [
            "src/auth.rs",
            "docs/login.md",
            "config/a.toml",
            "src/session.rs"
        ]
    );
    assert!(!out.text.contains("hunter2"));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

#[tokio::test]
async fn without_a_workspace_only_excluded_globs_apply_to_literal_paths() {
    // Cargo runs this test in the crate's folder.
    let req = assembled_by(
        request(literal(&["Cargo.toml", "./src/lib.rs"]), true, "hi"),
        &["src/**"],
        &[],
        &["*.toml"],
    );
    let out = assemble(&Assembler::default(), &req).await;
    assert_eq!(out.files, ["./src/lib.rs"]);
    assert_eq!(
        out.warnings,
        [
            "fresh context was requested but no workspace was given \
             (tvm run --workspace DIR); no files were searched",
            "context_assembly: primary_elements and secondary_elements choose workspace \
             files, and no workspace was given (tvm run --workspace DIR); they were not used",
            "file_paths: `Cargo.toml` matches excluded_elements `*.toml`; skipped",
        ]
    );
    // Excluded globs alone need no warning.
    let req = assembled_by(
        request(literal(&["Cargo.toml"]), false, "hi"),
        &[],
        &[],
        &["x"],
    );
    let out = assemble(&Assembler::default(), &req).await;
    assert_eq!((out.files.len(), out.warnings.len()), (1, 0), "{out:?}");
}

#[tokio::test]
async fn globs_that_cannot_be_used_are_warnings_and_ordering_without_a_search_is_noted() {
    let dir = layered("bad-globs");
    let req = assembled_by(
        request(literal(&["notes.md"]), false, "hi"),
        &["../outside/*"],
        &["src/[a"],
        &[],
    );
    let out = assemble(&in_workspace(&dir), &req).await;
    assert_eq!(out.files, ["notes.md"]);
    assert_eq!(out.warnings.len(), 3, "{:?}", out.warnings);
    assert!(out.warnings[0].starts_with("context_assembly: primary_elements and secondary_elements order the files a workspace search finds"));
    assert!(out.warnings[1].starts_with(
        "context_assembly: primary_elements `../outside/*` leads outside the workspace"
    ));
    assert!(out.warnings[2]
        .starts_with("context_assembly: secondary_elements `src/[a` is not a valid glob"));
}
