//! The state folder of `tvm batch` as a place on the disk (DESIGN §16, §18): a batch
//! takes only a new or empty folder or its own, removes nothing but its own files, holds
//! it alone while it runs, and refuses what another user, a link or a FIFO could have
//! put in its way, before touching anything.

use super::batch::PROGRAM;
use super::batch_resume::slow_echo;
use crate::support::files::{self, run_tvm, runtime, scratch};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// `tvm batch` of [`PROGRAM`] over `rows` rows written in `dir`, with `flags`; its
/// arguments and its results file.
fn batch_args(dir: &Path, rows: usize, flags: &[&str]) -> (Vec<String>, PathBuf) {
    let bundle = files::compiled(dir, PROGRAM);
    let (inputs, out) = (dir.join("rows.jsonl"), dir.join("results.jsonl"));
    let lines: Vec<String> = (0..rows)
        .map(|i| format!(r#"{{"notes": ["n{i:02}"]}}"#))
        .collect();
    std::fs::write(&inputs, lines.join("\n")).expect("write the rows");
    let path = |p: &Path| p.to_str().expect("path").to_string();
    let args = ["batch", &path(&bundle), "--inputs", &path(&inputs)]
        .into_iter()
        .map(str::to_string)
        .chain(["--out".to_string(), path(&out)])
        .chain(flags.iter().map(|f| f.to_string()))
        .collect();
    (args, out)
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut all: Vec<String> = std::fs::read_dir(dir)
        .expect("a folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    all.sort();
    all
}

#[test]
fn a_state_folder_holding_the_users_files_is_refused_and_left_as_it_was() {
    let dir = scratch("batch-state", "users");
    let mine = dir.join("mine");
    std::fs::create_dir_all(mine.join("sub")).expect("folders");
    std::fs::write(mine.join("notes.txt"), "mine").expect("a file");
    std::fs::write(mine.join("sub/deep.txt"), "deep").expect("a file");
    let state = mine.to_str().expect("path").to_string();
    let (args, out) = batch_args(&dir, 2, &["--provider", "echo", "--state", &state]);
    let (code, _, stderr) = run_tvm(&strs(&args), &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("holds files and no batch.json"), "{stderr}");
    assert_eq!(names(&mine), ["notes.txt", "sub"]);
    assert_eq!(names(&mine.join("sub")), ["deep.txt"]);
    assert!(!out.exists(), "the results were made");

    // `--state .` in a folder of the user's: the working directory is refused as it is.
    let before = names(&dir);
    let (args, _) = batch_args(&dir, 2, &["--provider", "echo", "--state", "."]);
    let output = files::tvm(&strs(&args))
        .current_dir(&dir)
        .output()
        .expect("run tvm");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("holds files and no batch.json"), "{stderr}");
    assert_eq!(names(&dir), before);
}

#[test]
fn a_batch_that_ends_removes_its_own_files_only_and_keeps_the_folder_it_was_given() {
    let rt = runtime();
    let server = rt.block_on(slow_echo(50));
    let dir = scratch("batch-state", "own");
    let given = dir.join("given");
    std::fs::create_dir(&given).expect("an empty folder");
    let state = given.to_str().expect("path").to_string();
    let flags = [
        "--provider",
        "openai",
        "--concurrency",
        "2",
        "--state",
        &state,
    ];
    let (args, out) = batch_args(&dir, 8, &flags);
    let child = files::tvm(&strs(&args))
        .env("OPENAI_BASE_URL", server.url())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tvm");
    files::wait_for(|| std::fs::read_to_string(&out).is_ok_and(|t| t.lines().count() >= 1));
    // The user puts a file of their own in the folder while the batch runs.
    std::fs::write(given.join("notes.txt"), "mine").expect("a file");
    let ended = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&ended.stderr);
    assert_eq!(ended.status.code(), Some(0), "{stderr}");
    assert_eq!(names(&given), ["batch.json", "notes.txt"]);
    assert_eq!(
        std::fs::read_to_string(given.join("notes.txt")).unwrap(),
        "mine"
    );
    let marker: Value =
        serde_json::from_str(&std::fs::read_to_string(given.join("batch.json")).unwrap())
            .expect("JSON");
    assert!(marker["bundle_sha256"].is_string(), "{marker}");
}

#[test]
fn a_second_batch_on_a_state_folder_in_use_is_refused_naming_the_first_and_pays_nothing() {
    const ROWS: usize = 4;
    let rt = runtime();
    let server = rt.block_on(slow_echo(150));
    let dir = scratch("batch-state", "twice");
    let (args, out) = batch_args(&dir, ROWS, &["--provider", "openai", "--concurrency", "1"]);
    let url = server.url();
    let first = files::tvm(&strs(&args))
        .env("OPENAI_BASE_URL", &url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tvm");
    files::wait_for(|| server.hits() > 0);
    let (code, _, stderr) = run_tvm(&strs(&args), &[("OPENAI_BASE_URL", url.as_str())]);
    assert_eq!(code, 2, "{stderr}");
    let holder = format!("is in use by another process (pid {})", first.id());
    assert!(stderr.contains(&holder), "{stderr}");
    let ended = first.wait_with_output().expect("wait");
    assert_eq!(ended.status.code(), Some(0));
    assert_eq!(server.hits(), 2 * ROWS, "a row was paid for twice");
    let lines = std::fs::read_to_string(&out).expect("results");
    assert_eq!(lines.lines().count(), ROWS, "{lines}");
}

#[test]
fn a_second_batch_of_another_state_folder_writing_the_same_results_is_refused_and_pays_nothing() {
    // Long enough that the first is still running when the second gives up waiting
    // for its lock (a second).
    const ROWS: usize = 4;
    let rt = runtime();
    let server = rt.block_on(slow_echo(400));
    let dir = scratch("batch-state", "same-out");
    let (args, out) = batch_args(&dir, ROWS, &["--provider", "openai", "--concurrency", "1"]);
    let url = server.url();
    let first = files::tvm(&strs(&args))
        .env("OPENAI_BASE_URL", &url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tvm");
    // The first row is in flight: the results file is there, and empty.
    files::wait_for(|| server.hits() > 0);
    let other = dir.join("other.state");
    let mut second = args.clone();
    second.extend([
        "--state".to_string(),
        other.to_str().expect("path").to_string(),
    ]);
    let (code, _, stderr) = run_tvm(&strs(&second), &[("OPENAI_BASE_URL", url.as_str())]);
    assert_eq!(code, 2, "{stderr}");
    let holder = format!(
        "results.jsonl is being written by another process (pid {}), another tvm batch",
        first.id()
    );
    assert!(stderr.contains(&holder), "{stderr}");
    let ended = first.wait_with_output().expect("wait");
    assert_eq!(ended.status.code(), Some(0));
    assert_eq!(server.hits(), 2 * ROWS, "a row was paid for twice");
    let lines = std::fs::read_to_string(&out).expect("results");
    assert_eq!(lines.lines().count(), ROWS, "{lines}");
}

#[test]
fn a_state_folder_another_user_could_fill_is_refused() {
    let dir = scratch("batch-state", "others");
    let open = dir.join("open");
    std::fs::create_dir(&open).expect("a folder");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let state = open.to_str().expect("path").to_string();
    let (args, out) = batch_args(&dir, 1, &["--provider", "echo", "--state", &state]);
    let (code, _, stderr) = run_tvm(&strs(&args), &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("may be written by every user"), "{stderr}");
    assert!(names(&open).is_empty() && !out.exists());

    // A folder of another user can be made only by root; as anyone else, the check
    // above is the one this test makes.
    let theirs = dir.join("theirs");
    std::fs::create_dir(&theirs).expect("a folder");
    let uid = nix::unistd::Uid::from_raw(4242);
    if nix::unistd::chown(&theirs, Some(uid), None).is_ok() {
        let state = theirs.to_str().expect("path").to_string();
        let (args, _) = batch_args(&dir, 1, &["--provider", "echo", "--state", &state]);
        let (code, _, stderr) = run_tvm(&strs(&args), &[]);
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains("belongs to another user (uid 4242)"),
            "{stderr}"
        );
        assert!(names(&theirs).is_empty());
    }
}

#[test]
fn a_batch_json_that_is_a_link_or_not_tvms_is_refused_and_kept_even_with_rerun() {
    let dir = scratch("batch-state", "markers");
    let elsewhere = dir.join("elsewhere.json");
    std::fs::write(&elsewhere, "{}").expect("a file");
    let linked = dir.join("linked");
    std::fs::create_dir(&linked).expect("a folder");
    std::os::unix::fs::symlink(&elsewhere, linked.join("batch.json")).expect("link");
    let config = dir.join("config");
    std::fs::create_dir(&config).expect("a folder");
    let theirs = r#"{"name": "a batch.json of the user's own"}"#;
    std::fs::write(config.join("batch.json"), theirs).expect("a file");
    std::fs::write(config.join("1.journal"), "mine").expect("a file");
    for (folder, why) in [
        (
            &linked,
            "batch.json is a link, and tvm never follows a link",
        ),
        (&config, "its batch.json was not written by tvm batch"),
    ] {
        let state = folder.to_str().expect("path").to_string();
        let flags = ["--provider", "echo", "--state", &state, "--rerun"];
        let (args, out) = batch_args(&dir, 1, &flags);
        let (code, _, stderr) = run_tvm(&strs(&args), &[]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(why), "{stderr}");
        assert!(!out.exists());
    }
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "{}");
    assert_eq!(names(&config), ["1.journal", "batch.json"]);
    assert_eq!(
        std::fs::read_to_string(config.join("batch.json")).unwrap(),
        theirs
    );
}

#[test]
fn a_results_file_that_is_a_fifo_is_refused_at_once() {
    let dir = scratch("batch-state", "fifo");
    let (args, out) = batch_args(&dir, 1, &["--provider", "echo"]);
    nix::unistd::mkfifo(&out, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let (code, stderr) = files::within_deadline(files::tvm(&strs(&args)), "the batch");
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("is a FIFO, not a regular file"), "{stderr}");
    assert!(!dir.join("results.jsonl.state").exists());
}

#[test]
fn a_journal_planted_as_a_link_fails_its_row_and_what_it_points_at_is_untouched() {
    let rt = runtime();
    let server = rt.block_on(slow_echo(100));
    let dir = scratch("batch-state", "planted");
    let (args, out) = batch_args(&dir, 6, &["--provider", "openai", "--concurrency", "1"]);
    let url = server.url();
    let mut child = files::tvm(&strs(&args))
        .env("OPENAI_BASE_URL", &url)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tvm");
    files::wait_for(|| std::fs::read_to_string(&out).is_ok_and(|t| t.lines().count() >= 1));
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let secret = dir.join("secret.txt");
    std::fs::write(&secret, "not a journal").expect("a file");
    let planted = dir.join("results.jsonl.state/5.journal");
    let _ = std::fs::remove_file(&planted);
    std::os::unix::fs::symlink(&secret, &planted).expect("link");

    let (code, _, stderr) = run_tvm(&strs(&args), &[("OPENAI_BASE_URL", url.as_str())]);
    assert_eq!(code, 1, "{stderr}");
    let text = std::fs::read_to_string(&out).expect("results");
    let row: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON"))
        .find(|l| l["index"] == 5)
        .expect("row 5");
    let message = row["result"]["notes"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("is not a journal tvm wrote"), "{row}");
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "not a journal");
    assert!(planted
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink()));
}

#[test]
fn a_results_or_inputs_file_named_as_a_file_of_the_state_folder_is_refused_before_it_is_touched() {
    let dir = scratch("batch-state", "own-names");
    let state = dir.join("st");
    let state_arg = state.to_str().expect("path").to_string();
    // The results named as row 1's journal: the row's journal would be the results, and
    // --rerun would remove them as the batch's own.
    let (mut args, _) = batch_args(&dir, 2, &["--provider", "echo", "--state", &state_arg]);
    let at = args.iter().position(|a| a == "--out").expect("--out") + 1;
    args[at] = format!("{state_arg}/../st/1.journal");
    let (code, _, stderr) = run_tvm(&strs(&args), &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("/../st/1.journal is named as a file of the batch's state folder"),
        "{stderr}"
    );
    assert!(!state.exists(), "nothing was made");
    // The inputs kept as a spare of a batch's folder: --rerun would remove them.
    let (args, _) = batch_args(&dir, 2, &["--provider", "echo", "--state", &state_arg]);
    let (code, _, stderr) = run_tvm(&strs(&args), &[]);
    assert_eq!(code, 0, "{stderr}");
    let kept = state.join("0.spare");
    std::fs::copy(dir.join("rows.jsonl"), &kept).expect("copy the rows");
    let (mut args, _) = batch_args(
        &dir,
        2,
        &["--provider", "echo", "--state", &state_arg, "--rerun"],
    );
    let at = args.iter().position(|a| a == "--inputs").expect("--inputs") + 1;
    args[at] = kept.to_str().expect("path").to_string();
    let (code, _, stderr) = run_tvm(&strs(&args), &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--inputs ")
            && stderr.contains("st/0.spare is named as a file of the batch's state folder"),
        "{stderr}"
    );
    assert!(kept.is_file(), "the inputs are where they were");
}
