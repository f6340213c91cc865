//! Files planted where `tvm` writes or reads: by a checkout (a link beside the sources, a
//! huge cassette, a `.env` folder) or by a slip of the user's (a FIFO named as a file, a
//! results file named as a batch's own). `tvm` neither writes through a link it did not
//! make, nor removes what it did not create, nor waits on a FIFO, nor takes more memory
//! for a file than its bound says.

use crate::support::files::{self, TempDir};
use std::path::Path;

/// A test whose one reply is fixed, so `tvm test --snapshots` has a result to keep.
const TESTED: &str = r#"<library>
  <task name="greet">
    <instructions>Greet {{who}}</instructions>
    <inputs><input name="who">Who</input></inputs>
  </task>
  <test name="ann is greeted" entry="greet">
    <arg name="who">Ann</arg>
    <reply>Hello, Ann</reply>
  </test>
</library>
"#;

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = files::tvm(args)
        .current_dir(dir)
        .output()
        .expect("tvm runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_snapshot_link_planted_beside_the_sources_is_replaced_not_written_through() {
    let dir = TempDir::new("planted-snap-link");
    let home = TempDir::new("planted-snap-home");
    dir.write("greet.xml", TESTED);
    home.write(".bashrc", "the user's own file\n");
    std::fs::create_dir(dir.path().join("snapshots")).unwrap();
    let pending = dir
        .path()
        .join("snapshots/greet__test_ann_is_greeted.snap.new");
    std::os::unix::fs::symlink(home.path().join(".bashrc"), &pending).unwrap();
    let kept = dir.path().join("snapshots/greet__bytecode_greet.snap");
    std::os::unix::fs::symlink(home.path().join(".bashrc"), &kept).unwrap();
    let (code, stdout, stderr) = run(dir.path(), &["test", ".", "--snapshots"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    let bashrc = std::fs::read_to_string(home.path().join(".bashrc")).unwrap();
    assert_eq!(bashrc, "the user's own file\n", "written through the link");
    assert!(
        !pending.is_symlink(),
        "the link is replaced by the snapshot"
    );
    let written = std::fs::read_to_string(&pending).unwrap();
    assert!(written.contains("Hello, Ann"), "{written}");
    // The kept snapshot that leads out of the folder is not read (nor shown in a diff).
    assert!(
        stderr.contains(
            "tvm: error: the snapshot ./snapshots/greet__bytecode_greet.snap leads out of its \
             folder, so it is not read"
        ),
        "{stderr}"
    );
    assert!(!stdout.contains("the user's own file"), "{stdout}");
}

#[test]
fn a_snapshots_folder_that_is_a_link_is_not_written_into() {
    let dir = TempDir::new("planted-snap-folder");
    let elsewhere = TempDir::new("planted-snap-elsewhere");
    dir.write("greet.xml", TESTED);
    std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("snapshots")).unwrap();
    let (code, _, stderr) = run(dir.path(), &["test", ".", "--snapshots", "--accept"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("./snapshots is not a folder (a link, or a file): tvm writes snapshots only into a folder of its own beside the sources"),
        "{stderr}"
    );
    let written: Vec<_> = std::fs::read_dir(elsewhere.path()).unwrap().collect();
    assert!(written.is_empty(), "{written:?}");
}

/// `tvm` with `args` in `dir`, ended within the deadline (else killed, and the test
/// fails saying it waited); its exit code and what it wrote.
fn run_without_waiting(dir: &Path, args: &[&str]) -> (i32, String) {
    let mut cmd = files::tvm(args);
    cmd.current_dir(dir);
    files::within_deadline(cmd, &format!("tvm {args:?}"))
}

#[test]
fn a_trace_or_cassette_named_as_a_fifo_nobody_reads_is_refused_not_waited_on() {
    let dir = TempDir::new("planted-fifo-out");
    dir.write("greet.xml", TESTED);
    let fifo = dir.path().join("pipe");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let run = ["run", "greet.xml", "--arg", "who=Ann", "--provider", "echo"];
    let (code, stderr) =
        run_without_waiting(dir.path(), &[&run[..], &["--trace", "pipe"]].concat());
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(
            "--trace pipe is a FIFO that no process reads, and tvm does not wait for one"
        ),
        "{stderr}"
    );
    for mode in ["overwrite", "append"] {
        let record = ["--record", "pipe", "--record-mode", mode];
        let (code, stderr) = run_without_waiting(dir.path(), &[&run[..], &record].concat());
        assert_eq!(code, 2, "{mode}: {stderr}");
        assert!(
            stderr.contains("not a regular file: a cassette is read back"),
            "{mode}: {stderr}"
        );
    }
    let (code, stderr) = run_without_waiting(dir.path(), &["test", ".", "--trace", "pipe"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("is a FIFO that no process reads"),
        "{stderr}"
    );
}

#[test]
fn nats_credentials_and_certificates_must_be_regular_files_within_their_bound() {
    let dir = TempDir::new("planted-nats-files");
    dir.write("greet.xml", TESTED)
        .write("rows.jsonl", "{\"who\": \"Ann\"}\n");
    nix::unistd::mkfifo(&dir.path().join("pipe"), nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    dir.write("big.pem", vec![b'A'; (1 << 20) + 1]);
    let publish = [
        "batch",
        "greet.xml",
        "--inputs",
        "rows.jsonl",
        "--nats",
        "nats://127.0.0.1:1",
    ];
    for (flag, file, why) in [
        ("--nats-creds", "pipe", "is a FIFO, not a regular file"),
        ("--nats-ca", "pipe", "is a FIFO, not a regular file"),
        (
            "--nats-creds",
            "/dev/zero",
            "is a device, not a regular file",
        ),
        (
            "--nats-ca",
            "big.pem",
            "is larger than 1 MiB, the most a NATS credentials or certificate file may have",
        ),
    ] {
        let (code, stderr) =
            run_without_waiting(dir.path(), &[&publish[..], &[flag, file]].concat());
        assert_eq!(code, 2, "{flag} {file}: {stderr}");
        assert!(stderr.contains(&format!("{flag} {file} {why}")), "{stderr}");
    }
}

/// A JSON array of `n` zeros: about two bytes each as text, thirty-two once read.
fn zeros(n: usize) -> String {
    let mut text = String::with_capacity(2 * n + 2);
    text.push('[');
    text.push_str(&"0,".repeat(n - 1));
    text.push_str("0]");
    text
}

#[test]
fn a_cassette_whose_entries_would_take_gigabytes_once_read_is_refused_unread() {
    let dir = TempDir::new("planted-cassette-weight");
    dir.write("greet.xml", TESTED);
    // 40 MiB of text, within the 256 MiB a cassette file may have; 640 MiB once read.
    let entry = format!(
        r#"{{"key":"k","task":"greet","prompt":"p","reply":{{"content":"hi","input_tokens":0,"output_tokens":0}},"request":{}}}"#,
        zeros(20 << 20)
    );
    dir.write("heavy.jsonl", format!("{entry}\n"));
    let args = [
        "run",
        "greet.xml",
        "--arg",
        "who=Ann",
        "--provider",
        "replay",
    ];
    let (code, stderr) = run_without_waiting(
        dir.path(),
        &[&args[..], &["--cassette", "heavy.jsonl"]].concat(),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(
            "heavy.jsonl:1: the cassette's entries would take more than 512 MiB once read"
        ),
        "{stderr}"
    );
}

#[test]
fn a_batch_row_heavier_than_the_memory_budget_fails_unparsed_and_the_next_row_runs() {
    let dir = TempDir::new("planted-row-weight");
    dir.write(
        "count.xml",
        r#"<task name="count"><instructions>Count {{len(xs)}}</instructions>
             <inputs><input name="xs" type="number[]">Numbers</input></inputs></task>"#,
    );
    let rows = format!("{{\"xs\": {}}}\n{{\"xs\": [1, 2]}}\n", zeros(1 << 20));
    dir.write("rows.jsonl", rows);
    let args = [
        "batch",
        "count.xml",
        "--inputs",
        "rows.jsonl",
        "--out",
        "out.jsonl",
        "--provider",
        "echo",
        "--max-memory",
        "4MiB",
    ];
    let (code, stderr) = run_without_waiting(dir.path(), &args);
    assert_eq!(code, 1, "{stderr}");
    let out = std::fs::read_to_string(dir.path().join("out.jsonl")).expect("results");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("a line"))
        .collect();
    let error = &lines[0]["result"]["notes"]["error"];
    assert_eq!(error["resource"], "memory", "{out}");
    assert_eq!(
        error["message"],
        "line 1: the row's arguments would take more than 4194304 bytes (--max-memory) once \
         read, so the line was not parsed"
    );
    assert_eq!(lines[1]["status"], "COMPLETE", "{out}");
}

#[test]
fn a_dotenv_that_is_a_folder_is_passed_over_with_a_warning() {
    // `python -m venv .env` makes one.
    let dir = TempDir::new("planted-env-folder");
    dir.write("greet.xml", TESTED)
        .write(".env/bin/activate", "# a virtual environment\n");
    let args = [
        "run",
        "greet.xml",
        "--arg",
        "who=Ann",
        "--provider",
        "echo",
        "--output",
        "text",
    ];
    let (code, stdout, stderr) = run(dir.path(), &args);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Greet Ann"), "{stdout}");
    assert_eq!(
        stderr,
        "tvm: warning: .env is a folder (a virtual environment?), not a file of settings, so it is not read\n"
    );
}
