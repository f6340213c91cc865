//! `tvc check --watch` as a user runs it: a real process on a real directory, its
//! reports read from its stderr while the templates change under it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a report may take to come: generous, for a loaded machine.
const DEADLINE: Duration = Duration::from_secs(20);

const VALID: &str = "<task>\n  <instructions>Say hello</instructions>\n</task>\n";
const MISSPELT: &str = "<task>\n  <instrutions>Say hello</instrutions>\n</task>\n";

/// A running `tvc check --watch`, its stderr gathered by a thread; killed when dropped.
struct Watching {
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Watching {
    fn start(args: &[&str]) -> Watching {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tvc"))
            .args(["check", "--watch", "--color", "never"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tvc starts");
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().expect("stderr");
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                sink.lock().expect("not poisoned").push_str(&text);
            }
        });
        Watching { child, stderr }
    }

    fn said(&self) -> String {
        self.stderr.lock().expect("not poisoned").clone()
    }

    /// Waits until `text` appears after byte `from` of the stderr; where it ends.
    fn wait_for(&self, from: usize, text: &str) -> usize {
        let start = Instant::now();
        loop {
            let said = self.said();
            if let Some(at) = said.get(from..).and_then(|rest| rest.find(text)) {
                return from + at + text.len();
            }
            assert!(
                start.elapsed() < DEADLINE,
                "no `{text}` within {DEADLINE:?}; tvc said:\n{said}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An empty directory of this test's own.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("watch_{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn a_watched_directory_is_checked_again_after_each_change_of_a_template() {
    let dir = fresh_dir("directory");
    let file = dir.join("greet.xml");
    std::fs::write(&file, VALID).expect("write");
    let tvc = Watching::start(&[&dir.to_string_lossy()]);
    let at = tvc.wait_for(0, "tvc: ok, 0 errors in 1 file");

    std::fs::write(&file, MISSPELT).expect("write");
    let at = tvc.wait_for(at, "greet.xml:2:4: error: unknown element `<instrutions>`");
    let at = tvc.wait_for(at, "tvc: 2 errors and 0 warnings in 1 file");

    std::fs::write(&file, VALID).expect("write");
    let at = tvc.wait_for(at, "tvc: ok, 0 errors in 1 file");

    // A template added to the directory is checked with the others.
    std::fs::create_dir_all(dir.join("more")).expect("mkdir");
    std::fs::write(dir.join("more/other.xml"), VALID).expect("write");
    tvc.wait_for(at, "tvc: ok, 0 errors in 2 files");

    // Off a terminal, the reports are kept, each after a line that says what changed.
    let said = tvc.said();
    assert!(!said.contains('\x1b'), "{said}");
    assert!(said.contains("\n---- "), "{said}");
    assert!(
        said.contains("greet.xml changed, checking again ----"),
        "{said}"
    );
}

#[test]
fn a_missing_path_is_a_usage_error_before_anything_is_watched() {
    let dir = fresh_dir("missing");
    let out = Command::new(env!("CARGO_BIN_EXE_tvc"))
        .args(["check", "--watch"])
        .arg(dir.join("no_such.xml"))
        .output()
        .expect("tvc runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("tvc: error: "), "{stderr}");
    assert!(stderr.contains("no_such.xml"), "{stderr}");
}

#[test]
fn a_template_beside_a_watched_file_or_a_file_of_another_kind_starts_no_check() {
    let dir = fresh_dir("ignored");
    let file = dir.join("main.xml");
    std::fs::write(&file, VALID).expect("write");
    let tvc = Watching::start(&[&file.to_string_lossy()]);
    let at = tvc.wait_for(0, "tvc: ok, 0 errors in 1 file");
    // Neither a template beside the watched file nor a note starts a check; the change
    // of the watched file that follows does, and is the only one named.
    std::fs::write(dir.join("beside.xml"), MISSPELT).expect("write");
    std::fs::write(dir.join("notes.txt"), "remember").expect("write");
    std::fs::write(&file, MISSPELT).expect("write");
    tvc.wait_for(at, "tvc: 2 errors and 0 warnings in 1 file");
    let said = tvc.said();
    let changes: Vec<&str> = said.lines().filter(|l| l.starts_with("---- ")).collect();
    assert!(!changes.is_empty(), "{said}");
    assert!(
        changes
            .iter()
            .all(|l| l.ends_with("main.xml changed, checking again ----")),
        "{said}"
    );
}
