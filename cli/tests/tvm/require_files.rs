//! `--require-files` and a missing file as `tvm run` reports them: on stderr once, or
//! failing the task.

use crate::support::files::{self, TempDir};

/// `tvm run`: a missing file is said on stderr once, however many calls meet it, and
/// the result still completes; `--require-files` fails the task, naming the path, and
/// the model is not asked.
#[test]
fn a_missing_file_is_said_on_stderr_once_and_require_files_fails_the_task() {
    let dir = TempDir::new("required-cli");
    dir.write(
        "notes.xml",
        r#"<task name="digest" type="map" over="days" as="day">
  <inputs><input name="days" type="string[]">The days</input></inputs>
  <task><instructions>Summarize {{day}}</instructions>
    <file_paths><path>notes.md</path><path>agenda.md</path></file_paths></task>
</task>"#,
    )
    .write("agenda.md", "ship it\n");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "notes.xml",
            "--provider",
            "echo",
            "--arg",
            r#"days=["mon","tue"]"#,
        ];
        args.extend_from_slice(extra);
        let out = files::tvm(&args)
            .current_dir(dir.path())
            .output()
            .expect("tvm");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = run(&[]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let warning = "tvm: warning: task `digest~1#1`: file_paths: `notes.md` does not exist; \
                   the model is asked without it (--require-files fails the task instead)";
    assert_eq!(stderr.matches(warning).count(), 1, "{stderr}");
    assert!(stdout.contains("--- agenda.md ---"), "{stdout}");
    let (code, stdout, _) = run(&["--require-files"]);
    assert_eq!(code, Some(1), "{stdout}");
    let result: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    let error = &result["notes"]["error"];
    assert_eq!(error["reason"], "context_retrieval_failure", "{stdout}");
    assert_eq!(
        error["details"]["itemError"]["message"],
        "file_paths: `notes.md` does not exist; the task needs every file it names \
         (--require-files), so the model was not called"
    );
    assert_eq!(
        result["notes"]["usage"]["calls"], 0,
        "the model was not asked"
    );
}
