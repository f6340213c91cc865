//! Context look-ups: files named by `file_paths` (literal, command, description) and
//! fresh context searched in a workspace, within limits, with warnings instead of errors.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tv_vm::bundle::{ContextSettings, FilePaths, TaskMeta};
use tv_vm::context::{Assembled, Assembler, Limits};
use tv_vm::host::{LlmRequest, Message};

/// A folder under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir =
            std::env::temp_dir().join(format!("tv-context-{}-{n}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) -> &TempDir {
        let path = self.0.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("parent dir");
        }
        std::fs::write(path, bytes).expect("write");
        self
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

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
        messages: vec![Message {
            role: "user".into(),
            content: prompt.into(),
        }]
        .into(),
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
async fn a_failing_command_is_a_warning_that_quotes_its_error() {
    let dir = TempDir::new("failing");
    let cmd = FilePaths::Command("echo a.txt; echo broken >&2; exit 3".into());
    let out = assemble(&in_workspace(&dir), &request(cmd, false, "hi")).await;
    assert!(out.files.is_empty());
    assert_eq!(
        out.warnings,
        ["file_paths: the command `echo a.txt; echo broken >&2; exit 3` failed with exit code 3: broken"]
    );
}

#[tokio::test]
async fn a_command_that_outlives_its_timeout_is_stopped_with_a_warning() {
    let dir = TempDir::new("slow");
    let mut assembler = in_workspace(&dir);
    assembler.limits.command_timeout = Duration::from_millis(200);
    let started = Instant::now();
    let out = assemble(
        &assembler,
        &request(FilePaths::Command("sleep 5".into()), false, "hi"),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.warnings.len(), 1);
    assert!(
        out.warnings[0].contains("did not finish within 200ms"),
        "{:?}",
        out.warnings
    );
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
