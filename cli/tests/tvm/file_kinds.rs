//! Every file `tvm` reads is a regular file (DESIGN §18): a FIFO in its place would
//! block the open until a writer came, and a device (`/dev/zero`) would be read without
//! end. For each kind of file, a real `tvm` process meets a FIFO and a link to
//! `/dev/zero` where the file should be, and must refuse it, naming what it is, well
//! within a deadline the test enforces by killing it.

use crate::support::files::{self, golden, within_deadline, TempDir};
use crate::support::http::{Reply, Server};
use nix::sys::stat::Mode;
use std::path::Path;

/// One kind of file: where the odd file is put (relative to the scenario's folder), the
/// command that reads it (`{f}` is that path, `{b}` the bundle), the exit code, and what
/// stderr or stdout says for a FIFO and for a device.
struct Kind {
    name: &'static str,
    at: &'static str,
    args: &'static [&'static str],
    code: i32,
    fifo: &'static str,
    device: &'static str,
}

const RUN: &[&str] = &[
    "run",
    "{b}",
    "--arg",
    "service=payments",
    "--provider",
    "echo",
];
const FIFO: &str = "is a FIFO, not a regular file";
const DEVICE: &str = "is a device, not a regular file";

const KINDS: &[Kind] = &[
    Kind {
        name: "a program file",
        at: "program.bin",
        args: &["run", "{f}"],
        code: 2,
        fifo: "tvm: error: {f} is a FIFO",
        device: "tvm: error: {f} is a device",
    },
    Kind {
        name: "an argument file",
        at: "service.txt",
        args: &["run", "{b}", "--arg", "service=@{f}", "--provider", "echo"],
        code: 2,
        fifo: "tvm: error: --arg service=@{f}: is a FIFO",
        device: "tvm: error: --arg service=@{f}: is a device",
    },
    Kind {
        name: "a cassette",
        at: "replies.jsonl",
        args: &[
            "run",
            "{b}",
            "--arg",
            "service=x",
            "--provider",
            "replay",
            "--cassette",
            "{f}",
        ],
        code: 2,
        fifo: "tvm: error: the cassette {f} is a FIFO",
        device: "tvm: error: the cassette {f} is a device",
    },
    Kind {
        name: "the inputs of a batch",
        at: "rows.jsonl",
        args: &[
            "batch",
            "{b}",
            "--inputs",
            "{f}",
            "--out",
            "{d}/out.jsonl",
            "--provider",
            "echo",
        ],
        code: 2,
        fifo: "tvm: error: --inputs {f} is a FIFO",
        device: "tvm: error: --inputs {f} is a device",
    },
    Kind {
        name: "the results of a batch",
        at: "out.jsonl",
        args: &[
            "batch",
            "{b}",
            "--inputs",
            "{d}/rows.txt",
            "--out",
            "{f}",
            "--provider",
            "echo",
        ],
        code: 2,
        fifo: "tvm: error: --out {f} is a FIFO",
        device: "tvm: error: --out {f} is a device",
    },
    Kind {
        name: "a batch's state record",
        at: "out.jsonl.state/batch.json",
        args: &[
            "batch",
            "{b}",
            "--inputs",
            "{d}/rows.txt",
            "--out",
            "{d}/out.jsonl",
            "--provider",
            "echo",
        ],
        code: 2,
        fifo: "tvm: error: {f} is a FIFO",
        device: "tvm: error: {f} is a link, and tvm never follows a link to its own files",
    },
    Kind {
        name: "a .env file",
        at: ".env",
        args: RUN,
        code: 2,
        fifo: "tvm: error: .env is a FIFO",
        device: "tvm: error: .env is a device",
    },
    Kind {
        name: "a journal to resume",
        at: "run.journal",
        args: &["resume", "{f}"],
        code: 2,
        fifo: "tvm: error: the journal {f} is a FIFO",
        device: "tvm: error: the journal {f} is a device",
    },
    Kind {
        name: "a journal to write",
        at: "run.journal",
        args: &[
            "run",
            "{b}",
            "--arg",
            "service=x",
            "--provider",
            "echo",
            "--journal",
            "{f}",
        ],
        code: 2,
        fifo: "tvm: error: the journal {f} is a FIFO",
        device: "tvm: error: the journal {f} is a device",
    },
    Kind {
        name: "a price file",
        at: "prices.json",
        args: &[
            "run",
            "{b}",
            "--arg",
            "service=x",
            "--provider",
            "echo",
            "--prices",
            "{f}",
        ],
        code: 2,
        fifo: "tvm: error: the price file {f} is a FIFO",
        device: "tvm: error: the price file {f} is a device",
    },
    Kind {
        name: "a test's argument file",
        at: "titles/title.txt",
        args: &["test", "."],
        code: 1,
        fifo: "argument `title`: titles/title.txt: is a FIFO",
        // A link out of the test's folder is refused before what it leads to is looked at.
        device: "argument `title`: titles/title.txt: leads out of the test's folder",
    },
    Kind {
        name: "a test's cassette",
        at: "titles/replies.jsonl",
        args: &["test", ".", "--filter", "cassette"],
        code: 1,
        fifo: "cassette titles/replies.jsonl: is a FIFO",
        device: "cassette titles/replies.jsonl: leads out of the test's folder",
    },
    Kind {
        name: "a snapshot",
        at: "snapshots/judge__test_a_title_from_text.snap",
        args: &["test", ".", "--snapshots", "--filter", "text"],
        code: 2,
        fifo: "tvm: error: the snapshot ./snapshots/judge__test_a_title_from_text.snap is a FIFO",
        // Opened beneath its folder: a link out of it is refused before what it leads to
        // is looked at.
        device: "tvm: error: the snapshot ./snapshots/judge__test_a_title_from_text.snap leads out of its folder",
    },
];

/// One bound: the file of a kind one byte larger than its bound (sparse, so nothing of it
/// is written or read), and what refuses it.
struct Bound {
    at: &'static str,
    size: u64,
    args: &'static [&'static str],
    code: i32,
    says: &'static str,
}

const BOUNDS: &[Bound] = &[
    Bound {
        at: "program.bin",
        size: 64 << 20,
        args: &["run", "{f}"],
        code: 2,
        says: "tvm: error: {f} is larger than 64 MiB, the most a program file may have",
    },
    Bound {
        at: "service.txt",
        size: 64 << 20,
        args: &["run", "{b}", "--arg", "service=@{f}", "--provider", "echo"],
        code: 2,
        says: "tvm: error: --arg service=@{f}: is larger than 64 MiB, the most an argument file may have",
    },
    Bound {
        at: "replies.jsonl",
        size: 256 << 20,
        args: &["run", "{b}", "--arg", "service=x", "--provider", "replay", "--cassette", "{f}"],
        code: 2,
        says: "tvm: error: the cassette {f} is larger than 256 MiB, the most a cassette may have",
    },
    Bound {
        at: "run.journal",
        size: 1 << 30,
        args: &["resume", "{f}"],
        code: 2,
        says: "tvm: error: the journal {f} is larger than 1 GiB, the most a journal may have",
    },
    Bound {
        at: "prices.json",
        size: 1 << 20,
        args: &["run", "{b}", "--arg", "service=x", "--provider", "echo", "--prices", "{f}"],
        code: 2,
        says: "tvm: error: the price file {f} is larger than 1 MiB, the most a price file may have",
    },
    Bound {
        at: "out.jsonl.state/batch.json",
        size: 64 << 10,
        args: &["batch", "{b}", "--inputs", "{d}/rows.txt", "--out", "{d}/out.jsonl", "--provider", "echo"],
        code: 2,
        says: "tvm: error: {f} is larger than 64 KiB, the most a batch's state record may have",
    },
    Bound {
        at: "titles/title.txt",
        size: 64 << 20,
        args: &["test", "."],
        code: 1,
        says: "argument `title`: titles/title.txt: is larger than 64 MiB, the most an argument file may have",
    },
    Bound {
        at: "titles/replies.jsonl",
        size: 256 << 20,
        args: &["test", ".", "--filter", "cassette"],
        code: 1,
        says: "cassette titles/replies.jsonl: is larger than 256 MiB, the most a cassette may have",
    },
    Bound {
        at: "snapshots/judge__test_a_title_from_text.snap",
        size: 64 << 20,
        args: &["test", ".", "--snapshots", "--filter", "text"],
        code: 2,
        says: "tvm: error: the snapshot ./snapshots/judge__test_a_title_from_text.snap is larger than 64 MiB, the most a snapshot may have",
    },
];

/// The templates and tests the `tvm test` kinds run.
const TESTS: &str = r#"<library>
  <task name="judge">
    <instructions>Judge this title: {{title}}</instructions>
    <inputs><input name="title" type="string">The title</input></inputs>
  </task>
  <test name="a title from text" entry="judge">
    <arg name="title">Fix the login</arg>
    <reply>fine</reply>
  </test>
  <test name="a title from a file" entry="judge">
    <arg name="title" file="titles/title.txt"/>
    <reply>fine</reply>
  </test>
  <test name="a cassette" entry="judge">
    <arg name="title">Fix the login</arg>
    <cassette path="titles/replies.jsonl"/>
  </test>
</library>
"#;

/// The scenario's folder: the test library, rows for a batch, and the odd file at `at`.
fn scenario(kind: &Kind, fifo: bool) -> TempDir {
    let dir = TempDir::new("file-kinds");
    dir.write("judge.xml", TESTS)
        .write("rows.txt", "{\"service\": \"a\"}\n")
        .write("titles/.keep", "");
    let at = dir.path().join(kind.at);
    std::fs::create_dir_all(at.parent().expect("a folder")).expect("folder");
    if fifo {
        nix::unistd::mkfifo(&at, Mode::S_IRUSR | Mode::S_IWUSR).expect("mkfifo");
    } else {
        std::os::unix::fs::symlink("/dev/zero", &at).expect("link");
    }
    dir
}

fn fill(text: &str, dir: &Path, kind: &Kind) -> String {
    text.replace("{f}", dir.join(kind.at).to_str().expect("path"))
        .replace("{b}", golden("incident_digest").to_str().expect("path"))
        .replace("{d}", dir.to_str().expect("path"))
}

#[test]
fn every_kind_of_file_tvm_reads_refuses_a_fifo_and_a_device_naming_it_and_never_blocks() {
    for kind in KINDS {
        for fifo in [true, false] {
            let dir = scenario(kind, fifo);
            let args: Vec<String> = kind
                .args
                .iter()
                .map(|a| fill(a, dir.path(), kind))
                .collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut cmd = files::tvm(&args);
            cmd.current_dir(dir.path());
            let what = format!(
                "{} as {}",
                kind.name,
                if fifo { "a FIFO" } else { "a device" }
            );
            let (code, text) = within_deadline(cmd, &what);
            let expected = fill(if fifo { kind.fifo } else { kind.device }, dir.path(), kind);
            assert!(
                text.contains(&expected),
                "{what}: expected {expected:?} in:\n{text}"
            );
            assert_eq!(code, kind.code, "{what}:\n{text}");
        }
    }
}

#[test]
fn every_bound_refuses_a_file_one_byte_larger_naming_the_bound_before_reading_it() {
    for bound in BOUNDS {
        let dir = TempDir::new("file-bounds");
        dir.write("judge.xml", TESTS)
            .write("rows.txt", "{\"service\": \"a\"}\n")
            .write(bound.at, "");
        let at = dir.path().join(bound.at);
        let file = std::fs::File::options()
            .write(true)
            .open(&at)
            .expect("open");
        file.set_len(bound.size + 1).expect("a sparse file");
        let fill = |t: &str| {
            t.replace("{f}", at.to_str().expect("path"))
                .replace("{b}", golden("incident_digest").to_str().expect("path"))
                .replace("{d}", dir.path().to_str().expect("path"))
        };
        let args: Vec<String> = bound.args.iter().map(|a| fill(a)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut cmd = files::tvm(&args);
        cmd.current_dir(dir.path());
        let (code, text) = within_deadline(cmd, bound.at);
        let says = fill(bound.says);
        assert!(
            text.contains(&says),
            "{}: expected {says:?} in:\n{text}",
            bound.at
        );
        assert_eq!(code, bound.code, "{}:\n{text}", bound.at);
    }
}

#[test]
fn a_reply_cache_entry_that_is_a_fifo_or_a_device_is_reported_damaged_and_the_call_is_sent() {
    let rt = files::runtime();
    let server = rt.block_on(Server::scripted(vec![Reply::completion("fine", 3, 2)]));
    let dir = TempDir::new("cache-kinds");
    let cache = dir.path().join("cache");
    let bundle = golden("incident_digest");
    let run = || {
        let mut cmd = files::tvm(&[
            "run",
            bundle.to_str().expect("path"),
            "--arg",
            "service=payments",
            "--provider",
            "openai",
            "--cache",
            cache.to_str().expect("path"),
        ]);
        cmd.env("OPENAI_BASE_URL", server.url())
            .env("OPENAI_API_KEY", "sk-cache-kinds");
        cmd
    };
    let (code, text) = within_deadline(run(), "the first run");
    assert_eq!(code, 0, "{text}");
    let entries: Vec<_> = walk(&cache.join("v1"));
    assert!(!entries.is_empty(), "no entry was stored");
    for fifo in [true, false] {
        for entry in &entries {
            std::fs::remove_file(entry).expect("remove the entry");
            if fifo {
                nix::unistd::mkfifo(entry, Mode::S_IRUSR | Mode::S_IWUSR).expect("mkfifo");
            } else {
                std::os::unix::fs::symlink("/dev/zero", entry).expect("link");
            }
        }
        let before = server.hits();
        let (code, text) = within_deadline(run(), "a run over the odd entries");
        assert_eq!(code, 0, "{text}");
        let what = if fifo { FIFO } else { DEVICE };
        assert!(text.contains(&format!("is damaged: it {what}")), "{text}");
        assert!(server.hits() > before, "the calls were not sent again");
    }
}

/// The files under `dir`, at any depth.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read the folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
