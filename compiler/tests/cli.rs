//! `tvc check` as a user runs it: exit codes, stdout silence, stderr format.

use std::path::Path;
use std::process::Command;

fn tvc(args: &[&str]) -> (i32, String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(env!("CARGO_BIN_EXE_tvc"))
        .args(args)
        .current_dir(root)
        .output()
        .expect("run tvc");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_valid_directory_checks_silently_with_exit_zero() {
    let (code, stdout, stderr) = tvc(&["check", "examples"]);
    assert_eq!((code, stdout.as_str(), stderr.as_str()), (0, "", ""));
}

#[test]
fn errors_print_path_line_col_with_an_excerpt_and_exit_one() {
    let (code, stdout, stderr) = tvc(&[
        "check",
        "--color",
        "never",
        "tests/fixtures/invalid/unknown_element_typo.xml",
    ]);
    assert_eq!(code, 1);
    assert_eq!(stdout, "");
    assert!(
        stderr.starts_with("tests/fixtures/invalid/unknown_element_typo.xml:4:4: error: unknown element `<instrutions>`"),
        "{stderr}"
    );
    assert!(stderr.contains("did you mean `instructions`?"), "{stderr}");
    assert!(
        stderr.ends_with("tvc: 1 error and 0 warnings\n"),
        "{stderr}"
    );
}

#[test]
fn warnings_print_but_do_not_fail_the_check() {
    let (code, _, stderr) = tvc(&[
        "check",
        "--color",
        "never",
        "tests/fixtures/valid/unknown_bare_model_warning.xml",
    ]);
    assert_eq!(code, 0);
    assert!(
        stderr.contains(": warning: unknown model `llama3`"),
        "{stderr}"
    );
}

#[test]
fn a_missing_path_is_a_usage_error_with_exit_two() {
    let (code, _, stderr) = tvc(&["check", "no/such/dir"]);
    assert_eq!(code, 2);
    assert!(stderr.starts_with("tvc: error: no/such/dir:"), "{stderr}");
}

#[test]
fn emit_ast_prints_the_checked_tree_on_stdout() {
    let (code, stdout, _) = tvc(&["check", "--emit", "ast", "examples/code_review.xml"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("template review(diff: string, checklist: string[]) -> object @14:19"),
        "{stdout}"
    );
    assert!(stdout.contains("arg var diff"), "{stdout}");
}
