//! `tvm` as a user runs it: exit codes and messages, on the checked-in golden bundle.

use std::path::{Path, PathBuf};
use std::process::Command;

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/code_review.bin")
}

fn tvm(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tvm"))
        .args(args)
        .env_remove("TVM_PROVIDER")
        .output()
        .expect("run tvm");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn run(extra: &[&str]) -> (i32, String, String) {
    let g = golden();
    let mut args = vec!["run", g.to_str().expect("path"), "--provider", "echo"];
    args.extend_from_slice(extra);
    tvm(&args)
}

#[test]
fn a_completed_run_prints_its_result_as_json_and_exits_zero() {
    let (code, stdout, _) = run(&[
        "--entry",
        "summarize_change",
        "--arg",
        "diff=+x",
        "--arg",
        "audience=ops",
    ]);
    assert_eq!(code, 0);
    let r: serde_json::Value = serde_json::from_str(&stdout).expect("JSON on stdout");
    assert_eq!(r["status"], "COMPLETE");
    assert_eq!(
        r["content"],
        "Summarise this change in three sentences for ops:\n+x"
    );
}

#[test]
fn a_failed_run_exits_one() {
    // The echo host's reply is not the JSON object `review` declares.
    let (code, stdout, _) = run(&[
        "--entry",
        "review",
        "--args-json",
        r#"{"diff": "+x", "checklist": ["a"]}"#,
    ]);
    assert_eq!(code, 1);
    assert!(stdout.contains("output_format_failure"), "{stdout}");
}

#[test]
fn usage_errors_exit_two_with_a_clear_message() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "several entry points; choose one with --entry"),
        (&["--entry", "nope"], "no entry point `nope`"),
        (
            &["--entry", "summarize_change", "--arg", "diff=x"],
            "missing argument `audience`",
        ),
        (
            &[
                "--entry",
                "summarize_change",
                "--arg",
                "diff=x",
                "--arg",
                "audience=y",
                "--arg",
                "tone=z",
            ],
            "has no parameter `tone`",
        ),
        (
            &[
                "--entry",
                "review",
                "--arg",
                "diff=x",
                "--arg",
                "checklist=[oops",
            ],
            "--arg checklist expects string[] JSON",
        ),
    ];
    for (args, expected) in cases {
        let (code, _, stderr) = run(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn no_provider_configured_says_how_to_choose_one() {
    let g = golden();
    let (code, _, stderr) = tvm(&["run", g.to_str().expect("path"), "--entry", "review"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no provider is configured"), "{stderr}");
    assert!(stderr.contains("TVM_PROVIDER"), "{stderr}");
}

#[test]
fn a_damaged_bundle_is_refused_with_exit_two() {
    let dir = std::env::temp_dir().join(format!("tvm-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut bytes = std::fs::read(golden()).expect("golden");
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    let bad = dir.join("bad.bin");
    std::fs::write(&bad, &bytes).expect("write");
    let (code, _, stderr) = tvm(&["run", bad.to_str().expect("path"), "--provider", "echo"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("checksum does not match"), "{stderr}");
    let (code, _, stderr) = tvm(&["disasm", bad.to_str().expect("path")]);
    assert_eq!(code, 2, "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn disasm_prints_the_listing() {
    let g = golden();
    let (code, stdout, _) = tvm(&["disasm", g.to_str().expect("path")]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("entry review_pull_request -> fn2"),
        "{stdout}"
    );
    assert!(stdout.contains("# examples/code_review.xml:"), "{stdout}");
}
