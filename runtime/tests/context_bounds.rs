//! Context look-ups within bounds (DESIGN §18). Which files `file_paths` may read: with
//! a workspace, every entry must resolve inside it, links followed; without one, only
//! literal entries are read, and absolute paths, `..` and links out of the current
//! directory need `--allow-read` (real files, folders and symlinks; cargo runs these
//! tests in the crate's folder). And fresh context with a huge prompt: the query keeps a
//! fixed number of terms and each file's weights are sparse, so memory does not grow
//! with the prompt's size times the files, and the file the prompt is about still comes
//! first.

use crate::support::temp::TempDir;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tv_runtime::context::{Assembled, Assembler};
use tv_vm::bundle::{Assembly, ContextSettings, FilePaths, TaskMeta};
use tv_vm::host::{LlmRequest, Message};

/// A folder holding `ws/` (the workspace) and `outside/secret.txt`, removed when dropped.
struct Layout(TempDir);

const SECRET: &str = "the secret outside the workspace";

impl Layout {
    fn new(name: &str) -> Layout {
        let dir = TempDir::new(&format!("scope-{name}"));
        let root = dir.path();
        std::fs::create_dir_all(root.join("ws/sub")).expect("workspace");
        std::fs::create_dir_all(root.join("outside")).expect("outside");
        std::fs::write(root.join("outside/secret.txt"), SECRET).expect("secret");
        std::fs::write(root.join("ws/notes.txt"), "notes inside").expect("notes");
        symlink(root.join("outside/secret.txt"), root.join("ws/link.txt")).expect("file link");
        symlink(root.join("outside"), root.join("ws/sub/out")).expect("folder link");
        Layout(dir)
    }

    fn root(&self) -> &Path {
        self.0.path()
    }

    fn ws(&self) -> PathBuf {
        self.root().join("ws")
    }

    fn secret(&self) -> String {
        self.root().join("outside/secret.txt").display().to_string()
    }
}

async fn assemble(
    workspace: Option<&Path>,
    allow_read: &[PathBuf],
    file_paths: FilePaths,
) -> Assembled {
    let assembler = Assembler {
        workspace: workspace.map(Path::to_path_buf),
        allow_read: allow_read.to_vec(),
        own_files: Vec::new(),
        ..Assembler::default()
    };
    let request = LlmRequest {
        query: None,
        requested_files: Vec::new(),
        task: TaskMeta {
            file_paths,
            ..TaskMeta::named("read#1")
        }
        .into(),
        system_prompt: String::new(),
        messages: vec![Message::user("hi".into())].into(),
        context: Default::default(),
        model: None,
        settings: Default::default(),
    };
    assembler.assemble(&request).await
}

fn literal(paths: &[&str]) -> FilePaths {
    FilePaths::Literal(paths.iter().map(|p| p.to_string()).collect())
}

fn warned(out: &Assembled, path: &str, why: &str) -> bool {
    out.warnings
        .iter()
        .any(|w| w.contains(&format!("`{path}`")) && w.contains(why))
}

#[tokio::test]
async fn literal_paths_that_leave_the_workspace_are_skipped_with_a_warning() {
    let l = Layout::new("literal");
    let secret = l.secret();
    let escapes = [
        "../outside/secret.txt",
        &secret,
        "/etc/passwd",
        "link.txt",
        "sub/out/secret.txt",
    ];
    let mut paths = vec!["notes.txt"];
    paths.extend(escapes);
    let out = assemble(Some(&l.ws()), &[], literal(&paths)).await;
    assert_eq!(out.files, ["notes.txt"], "{out:?}");
    assert!(
        !out.text.contains(SECRET) && !out.text.contains("root:"),
        "{}",
        out.text
    );
    for escape in escapes {
        assert!(
            warned(&out, escape, "leads outside the workspace"),
            "{escape}: {:?}",
            out.warnings
        );
    }
}

#[tokio::test]
async fn paths_a_command_lists_must_stay_inside_the_workspace_too() {
    let l = Layout::new("command");
    let command = format!(
        "printf '%s\\n' notes.txt /etc/passwd ../outside/secret.txt link.txt {}",
        l.secret()
    );
    let out = assemble(Some(&l.ws()), &[], FilePaths::Command(command)).await;
    assert_eq!(out.files, ["notes.txt"], "{out:?}");
    assert!(
        !out.text.contains(SECRET) && !out.text.contains("root:"),
        "{}",
        out.text
    );
    assert!(
        warned(&out, "/etc/passwd", "leads outside the workspace"),
        "{:?}",
        out.warnings
    );
}

#[tokio::test]
async fn an_allowed_folder_lets_a_literal_path_outside_the_workspace_be_read() {
    let l = Layout::new("allowed");
    let allowed = [l.root().join("outside")];
    let out = assemble(
        Some(&l.ws()),
        &allowed,
        literal(&["link.txt", "/etc/passwd"]),
    )
    .await;
    assert!(out.text.contains(SECRET), "{out:?}");
    assert!(
        !out.text.contains("root:"),
        "only what was allowed: {}",
        out.text
    );
    assert!(warned(&out, "/etc/passwd", "leads outside the workspace"));
}

#[tokio::test]
async fn without_a_workspace_absolute_and_parent_paths_need_allow_read() {
    let l = Layout::new("bare");
    let secret = l.secret();
    // The crate's folder is the current directory: `Cargo.toml` is inside it.
    let paths = ["Cargo.toml", "../Cargo.toml", "/etc/passwd", &secret];
    let out = assemble(None, &[], literal(&paths)).await;
    assert_eq!(out.files, ["Cargo.toml"], "{out:?}");
    for refused in &paths[1..] {
        assert!(
            warned(&out, refused, "--allow-read PATH"),
            "{refused}: {:?}",
            out.warnings
        );
    }
    let allowed = [
        l.root().join("outside"),
        PathBuf::from("..").canonicalize().expect("parent"),
    ];
    let out = assemble(None, &allowed, literal(&paths)).await;
    assert_eq!(
        out.files,
        ["Cargo.toml", "../Cargo.toml", &secret],
        "{out:?}"
    );
    assert!(!out.text.contains("root:"), "{}", out.text);
}

#[tokio::test]
async fn without_a_workspace_a_file_paths_command_is_not_run() {
    let l = Layout::new("norun");
    let marker = l.root().join("ran");
    let command = format!("touch {}; echo Cargo.toml", marker.display());
    let out = assemble(None, &[], FilePaths::Command(command)).await;
    assert!(out.files.is_empty(), "{out:?}");
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("only with --workspace DIR")),
        "{out:?}"
    );
    assert!(!marker.exists(), "the command ran");
}

#[tokio::test]
async fn assembly_globs_only_filter_what_the_walk_found_inside_the_workspace() {
    let l = Layout::new("globs");
    let globs = |g: &[&str]| g.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let request = LlmRequest {
        requested_files: Vec::new(),
        query: Some("notes".into()),
        task: TaskMeta {
            context: ContextSettings {
                fresh: true,
                ..TaskMeta::named("globs#1").context
            },
            assembly: Assembly {
                // Globs that name paths outside, or every path, including the links.
                primary: globs(&["/etc/*", "**", "link.txt", "sub/out/*"]),
                secondary: globs(&["../outside/*", "*.txt"]),
                excluded: Vec::new(),
            },
            ..TaskMeta::named("globs#1")
        }
        .into(),
        system_prompt: String::new(),
        messages: Vec::new().into(),
        context: Default::default(),
        model: None,
        settings: Default::default(),
    };
    let assembler = Assembler {
        workspace: Some(l.ws()),
        ..Assembler::default()
    };
    let out = assembler.assemble(&request).await;
    assert_eq!(out.files, ["notes.txt"], "{out:?}");
    assert!(!out.text.contains(SECRET), "{}", out.text);
    assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
    assert!(out.warnings[0].contains("`../outside/*` leads outside the workspace"));
}

/// A cheap deterministic generator, so that workspaces and prompts are the same each run.
fn next(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

/// `files` files of `words` words each, drawn from `vocabulary` words `w0`, `w1`, ...,
/// plus `src/frobnicator.rs`, the one file about the frobnicator.
fn workspace(name: &str, files: usize, words: usize, vocabulary: u64) -> TempDir {
    let ws = TempDir::new(&format!("fresh-{name}"));
    let dir = ws.path();
    std::fs::create_dir_all(dir.join("notes")).expect("workspace");
    let mut state = 7;
    for f in 0..files {
        let text: Vec<String> = (0..words)
            .map(|_| format!("w{}", next(&mut state) % vocabulary))
            .collect();
        std::fs::write(dir.join(format!("notes/n{f}.txt")), text.join(" ")).expect("write");
    }
    std::fs::create_dir_all(dir.join("src")).expect("src");
    std::fs::write(
        dir.join("src/frobnicator.rs"),
        "/// The frobnicator tunes the flux capacitor.\npub fn frobnicator_tune() {}\n",
    )
    .expect("write");
    ws
}

/// A prompt of about `bytes` bytes: vocabulary words, each once at most (a pasted log
/// of distinct lines, say), then a question that names the frobnicator a few times.
fn huge_prompt(bytes: usize, vocabulary: u64) -> String {
    let mut prompt = String::with_capacity(bytes + 200);
    let mut i = 0;
    while prompt.len() < bytes {
        prompt.push_str(&format!("w{} ", i % vocabulary));
        i += 1;
    }
    prompt.push_str(
        "\nWhy does the frobnicator fail? The frobnicator log and frobnicator tests say little.",
    );
    prompt
}

async fn search(ws: &Path, prompt: String) -> Assembled {
    let request = LlmRequest {
        query: None,
        requested_files: Vec::new(),
        task: TaskMeta {
            file_paths: FilePaths::None,
            context: ContextSettings {
                fresh: true,
                ..TaskMeta::named("ask#1").context
            },
            ..TaskMeta::named("ask#1")
        }
        .into(),
        system_prompt: String::new(),
        messages: vec![Message::user(prompt)].into(),
        context: Default::default(),
        model: None,
        settings: Default::default(),
    };
    let assembler = Assembler {
        workspace: Some(ws.to_path_buf()),
        ..Assembler::default()
    };
    assembler.assemble(&request).await
}

fn peak_memory_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmHWM:"));
    let kib = line.and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok());
    kib.unwrap_or(0) / 1024
}

#[tokio::test]
async fn a_huge_prompt_still_brings_the_file_it_is_about_first() {
    let ws = workspace("huge", 400, 100, 80_000);
    let started = Instant::now();
    let out = search(ws.path(), huge_prompt(540_000, 80_000)).await;
    let took = started.elapsed();
    assert_eq!(
        out.files.first().map(String::as_str),
        Some("src/frobnicator.rs"),
        "{:?}",
        out.files
    );
    assert!(took.as_secs() < 20, "took {took:?}");
    assert!(peak_memory_mib() < 400, "peak {} MiB", peak_memory_mib());
}

/// The figure for the record: a 540 KB prompt of about 77,000 distinct words against
/// 6,000 files whose words are drawn from them. `cargo test -p tv-runtime --test runtime -- --ignored --nocapture 540_kb`.
#[tokio::test]
#[ignore]
async fn a_540_kb_prompt_against_6000_files_reports_its_peak_memory() {
    let ws = workspace("measure", 6_000, 200, 80_000);
    let before = peak_memory_mib();
    let started = Instant::now();
    let out = search(ws.path(), huge_prompt(540_000, 80_000)).await;
    println!(
        "files {:?}; peak resident memory {before} MiB before the search, {} MiB after; {:?}",
        &out.files[..out.files.len().min(3)],
        peak_memory_mib(),
        started.elapsed()
    );
}
