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
    assert!(stderr.ends_with("tvc: 1 error and 1 warning\n"), "{stderr}");
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
fn schema_prints_the_xsd_of_the_template_language_on_stdout() {
    let (code, stdout, stderr) = tvc(&["schema"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_eq!(stdout, tv_compiler::language::xsd());
}

#[test]
fn a_closed_stdout_ends_tvc_schema_quietly_with_exit_zero() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_tvc"))
        .arg("schema")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tvc starts");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("tvc ends");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn emit_ast_prints_the_checked_tree_on_stdout() {
    let (code, stdout, _) = tvc(&["check", "--emit", "ast", "examples/code_review.xml"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("template review(diff: string, checklist: string[]) -> Review @19:19"),
        "{stdout}"
    );
    assert!(stdout.contains("arg var diff"), "{stdout}");
}

#[test]
fn timings_list_every_stage_that_ran_on_stderr_and_change_nothing_else() {
    let out = std::env::temp_dir().join(format!("tvc-timings-{}.bin", std::process::id()));
    let out_arg = out.to_string_lossy().into_owned();
    let args = ["compile", "examples/incident_digest.xml", "-o", &out_arg];
    let (code, stdout, stderr) = tvc(&[&args[..], &["--timings"]].concat());
    assert_eq!((code, stdout.as_str()), (0, ""));
    let timed = std::fs::read(&out).expect("bundle written");
    let (code, _, quiet) = tvc(&args);
    assert_eq!((code, quiet.as_str()), (0, ""));
    assert_eq!(std::fs::read(&out).expect("bundle written"), timed);
    let _ = std::fs::remove_file(&out);
    let stages: Vec<&str> = stderr
        .lines()
        .skip(1)
        .map(|l| l.split("  ").find(|w| !w.is_empty()).unwrap_or(""))
        .collect();
    assert!(stderr.starts_with("tvc: timings\n"), "{stderr}");
    assert_eq!(
        stages,
        [
            "load files",
            "read XML",
            "build syntax trees",
            "check",
            "lower to IR",
            "generate bytecode",
            "encode the bundle",
            "verify the bundle",
            "write the bundle",
            "total"
        ],
        "{stderr}"
    );

    // A check that fails still says where its time went, after the diagnostics.
    let bad = "tests/fixtures/invalid/unknown_element_typo.xml";
    let (code, _, stderr) = tvc(&["check", "--color", "never", "--timings", bad]);
    assert_eq!(code, 1);
    let report = stderr
        .split("tvc: 1 error and 1 warning\n")
        .nth(1)
        .unwrap_or("");
    assert!(report.starts_with("tvc: timings\n  load files"), "{stderr}");
    assert!(
        report.contains("  check ") && !report.contains("lower to IR"),
        "{stderr}"
    );
}

/// `tvc` with extra environment variables.
fn tvc_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(env!("CARGO_BIN_EXE_tvc"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(root)
        .output()
        .expect("run tvc");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The text without its ANSI colour sequences (`ESC [ ... m`).
fn without_colour(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        rest = rest.find('m').map_or("", |end| &rest[end + 1..]);
    }
    out.push_str(rest);
    out
}

#[test]
fn a_second_label_in_the_same_file_shares_the_excerpt_headed_by_the_error_location() {
    let file = "tests/fixtures/invalid/duplicate_template_name_in_library.xml";
    for colour in ["never", "always"] {
        let (code, stderr) = tvc_env(&["check", "--color", colour, file], &[]);
        assert_eq!(code, 1);
        let plain = without_colour(&stderr);
        assert!(
            plain.starts_with(&format!("{file}:8:19: error: `summarize` is defined twice")),
            "{plain}"
        );
        let headers: Vec<&str> = plain.lines().filter(|l| l.contains("─[ ")).collect();
        assert_eq!(headers, [format!("   ╭─[ {file}:8:19 ]")], "{plain}");
        assert!(plain.contains("first defined here"), "{plain}");
    }
}

#[test]
fn colour_always_colours_even_with_no_color_set_and_auto_does_not_off_a_terminal() {
    let file = "tests/fixtures/invalid/unknown_element_typo.xml";
    let (_, always) = tvc_env(&["check", "--color", "always", file], &[("NO_COLOR", "1")]);
    assert!(always.contains("\x1b["), "{always}");
    let (_, never) = tvc_env(&["check", "--color", "never", file], &[]);
    assert_eq!(without_colour(&always), never);
    let (_, auto) = tvc_env(&["check", file], &[("NO_COLOR", "1")]);
    assert!(!auto.contains('\x1b'), "{auto}");
}

/// A listing larger than a pipe's buffer, read one line at a time by a reader that
/// stops after the first, as `| head -1` does; then both pipes closed before `tvc`
/// writes anything.
#[test]
fn a_reader_that_stops_early_ends_tvc_quietly_without_a_panic() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("closed_pipe");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let templates: String = (0..400)
        .map(|i| format!("<template name=\"t{i}\" params=\"x\"><task><instructions>Say {{{{x}}}} in the voice number {i}.</instructions></task></template>\n"))
        .collect();
    let file = dir.join("big.xml");
    std::fs::write(&file, format!("<library>\n{templates}</library>\n")).expect("write");
    let spawn = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tvc"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tvc starts")
    };
    let path = file.to_string_lossy();
    for emit in ["ir", "bytecode", "ast"] {
        let mut child = spawn(&["check", "--emit", emit, &path]);
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("a line");
        assert!(!first.is_empty());
        let out = child.wait_with_output().expect("tvc ends");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{emit}: {stderr}");
        assert!(!stderr.contains("panicked"), "{emit}: {stderr}");
    }
    let mut child = spawn(&["check", "--emit", "ir", "tests/no/such/file.xml"]);
    drop(child.stdout.take());
    drop(child.stderr.take());
    assert_eq!(child.wait().expect("tvc ends").code(), Some(2));
}

/// `tvc compile ARGS -o OUT` run in `dir`; the bundle's bytes, or the failure.
fn compiled_in(dir: &Path, args: &[&str], out: &Path) -> Vec<u8> {
    let _ = std::fs::remove_file(out);
    let run = Command::new(env!("CARGO_BIN_EXE_tvc"))
        .arg("compile")
        .args(args)
        .arg("-o")
        .arg(out)
        .current_dir(dir)
        .output()
        .expect("run tvc");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{args:?} in {}: {stderr}",
        dir.display()
    );
    std::fs::read(out).expect("a bundle")
}

#[test]
fn the_same_sources_give_the_same_bundle_bytes_however_their_paths_are_spelled_and_wherever_tvc_runs(
) {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("spellings");
    let _ = std::fs::remove_dir_all(&root);
    let (lib, other) = (root.join("lib"), root.join("elsewhere"));
    std::fs::create_dir_all(&lib).expect("lib");
    std::fs::create_dir_all(&other).expect("elsewhere");
    let template = "<task name=\"t\"><inputs><input name=\"x\">text</input></inputs>\n  <instructions>Say {{upper(x)}}</instructions>\n</task>\n";
    std::fs::write(root.join("t.xml"), template).expect("t.xml");
    std::fs::write(lib.join("a.xml"), "<library><template name=\"a\" params=\"y\"><task><instructions>{{y}}</instructions></task></template></library>\n").expect("a.xml");
    let out = root.join("out.bin");
    let absolute = root.join("t.xml");
    let absolute = absolute.to_str().expect("UTF-8");
    let one = compiled_in(&root, &["t.xml"], &out);
    for (dir, path) in [
        (&root, "./t.xml"),
        (&root, "lib/../t.xml"),
        (&root, absolute),
        (&other, "../t.xml"),
        (&lib, "./../elsewhere/../t.xml"),
    ] {
        assert!(
            compiled_in(dir, &[path], &out) == one,
            "{path} in {} gave other bytes",
            dir.display()
        );
    }
    // The bundle names the file as it is within the folder holding the inputs.
    let b = tv_vm::bundle::Bundle::from_bytes(&one).expect("a bundle");
    assert_eq!(b.files[0], "t.xml");
    // Several files, named one by one or found in their folder, from anywhere.
    let two = compiled_in(&root, &["lib/a.xml", "t.xml"], &out);
    let b = tv_vm::bundle::Bundle::from_bytes(&two).expect("a bundle");
    assert_eq!(b.files[..2], ["lib/a.xml", "t.xml"]);
    assert!(compiled_in(&other, &["../lib/a.xml", "../t.xml"], &out) == two);
    // The folder itself: its files are found, sorted, and named the same way.
    assert!(compiled_in(&other, &[".."], &out) == two);

    // Diagnostics still name the file as it was written.
    std::fs::write(
        root.join("w.xml"),
        "<task><instructions>x</instructions><model>llama3</model></task>\n",
    )
    .expect("w.xml");
    let run = Command::new(env!("CARGO_BIN_EXE_tvc"))
        .args(["check", "--color", "never", "lib/../w.xml"])
        .current_dir(&root)
        .output()
        .expect("run tvc");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.starts_with("lib/../w.xml:1:"), "{stderr}");
}
