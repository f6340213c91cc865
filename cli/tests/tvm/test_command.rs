//! `tvm test` (DESIGN §17): tests written beside the templates run offline, one line
//! each and a closing count; snapshots in insta's format that insta itself reads.

use crate::support::files::{self, TempDir};
use crate::support::http::{Reply, Server};
use std::path::Path;

const LIBRARY: &str = r#"<library>
  <type name="Verdict">{approved: boolean, reasons: string[]}</type>
  <task name="judge">
    <instructions>Judge this title: {{title}}</instructions>
    <inputs><input name="title" type="string">The title</input></inputs>
    <output_format type="json" schema="Verdict"/>
  </task>
  <task name="loop" type="director_evaluator_loop">
    <max_iterations>3</max_iterations>
    <director><task><instructions>Write a slogan</instructions></task></director>
    <evaluator><task><instructions>Evaluate the slogan: {{director_result}}</instructions><output_format type="json" schema="EvaluationResult"/></task></evaluator>
  </task>
  <test name="a clear title is approved" entry="judge">
    <arg name="title">Fix the login page</arg>
    <reply match="Fix the login">{"approved": true, "reasons": ["clear"]}</reply>
    <expect path="parsedContent.approved" equals="true"/>
    <expect path="parsedContent.reasons" contains="clear"/>
  </test>
  <test name="a title read from a file" entry="judge">
    <arg name="title" file="titles/vague.txt"/>
    <reply match="stuff">{"approved": false, "reasons": ["vague"]}</reply>
    <expect path="parsedContent.reasons.0" equals="vague"/>
  </test>
  <test name="the evaluator is answered in turn" entry="loop">
    <reply match="Write a slogan">Deploy calmly</reply>
    <reply match="Evaluate">{"success": false, "feedback": "shorter"}</reply>
    <reply match="Evaluate">{"success": true}</reply>
    <expect path="notes.usage.calls" equals="4"/>
  </test>
  <test name="a wrong expectation fails" entry="judge">
    <arg name="title">Fix the login page</arg>
    <reply>{"approved": false, "reasons": []}</reply>
    <expect path="parsedContent.approved" equals="true"/>
  </test>
  <test name="a request no reply answers fails" entry="judge">
    <arg name="title">Something else</arg>
    <reply match="Fix the login">{"approved": true, "reasons": []}</reply>
  </test>
</library>
"#;

fn folder(name: &str) -> TempDir {
    let dir = TempDir::new(name);
    dir.write("judge.xml", LIBRARY);
    dir.write("titles/vague.txt", "Do stuff");
    dir
}

fn tvm_test(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["test", "."];
    all.extend_from_slice(args);
    let out = files::tvm(&all)
        .current_dir(dir)
        .output()
        .expect("tvm test");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn each_test_gets_a_line_and_the_count_closes_the_report_with_no_request_sent() {
    let rt = files::runtime();
    let server = rt.block_on(Server::scripted(vec![Reply::completion(
        "from the network",
        1,
        1,
    )]));
    let dir = folder("tvm-test");
    let url = format!("{}/v1", server.url());
    let out = files::tvm(&["test", "."])
        .current_dir(dir.path())
        .env("OPENAI_BASE_URL", &url)
        .env("OPENAI_API_KEY", "sk-test")
        .env("TVM_PROVIDER", "openai")
        .output()
        .expect("tvm test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let expected = [
        "PASS  a clear title is approved  ./judge.xml:13:3",
        "PASS  a title read from a file  ./judge.xml:19:3",
        "PASS  the evaluator is answered in turn  ./judge.xml:24:3",
        "FAIL  a wrong expectation fails  ./judge.xml:30:3",
        "      expected parsedContent.approved to equal true, got false",
        "FAIL  a request no reply answers fails  ./judge.xml:35:3",
    ];
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(&lines[..expected.len()], expected, "{stdout}");
    assert!(
        lines[expected.len()].starts_with("      the run ended FAILED: no offline reply for task `judge#1` (prompt \"Judge this title: Something else\")"),
        "{stdout}"
    );
    assert_eq!(lines.last(), Some(&"3 passed, 2 failed"));
    assert_eq!(server.hits(), 0, "a test sent a request to the provider");
}

/// The rule that chooses an offline reply, case by case: each case is a `<test>` of
/// the fixture (tests/fixtures/workflow_tests), which states what it expects.
#[test]
fn offline_replies_are_chosen_by_the_readmes_rule_case_by_case() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/workflow_tests");
    let out = files::tvm(&["test", "."])
        .current_dir(&fixtures)
        .output()
        .expect("tvm test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let passed = stdout.lines().filter(|l| l.starts_with("PASS  ")).count();
    assert!(passed >= 10, "{stdout}");
    assert!(
        stdout.ends_with(&format!("{passed} passed, 0 failed\n")),
        "{stdout}"
    );
}

#[test]
fn a_filter_runs_only_the_tests_it_names_and_all_passing_exits_zero() {
    let dir = folder("tvm-test-filter");
    let (code, stdout, stderr) = tvm_test(dir.path(), &["--filter", "title"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.ends_with("2 passed, 0 failed\n"), "{stdout}");
}

#[test]
fn a_filter_that_matches_no_test_fails_and_names_the_tests_there_are() {
    let dir = folder("tvm-test-filter-none");
    let (code, stdout, stderr) = tvm_test(dir.path(), &["--filter", "aproved"]);
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    assert!(
        stderr.starts_with(
            "tvm: error: --filter `aproved`: no test's name holds it, so nothing was tested; \
             the tests are:\n    a clear title is approved\n"
        ),
        "{stderr}"
    );
    // Templates without a test fail too: nothing was tested.
    let empty = TempDir::new("tvm-test-none");
    empty.write(
        "judge.xml",
        LIBRARY.split("  <test ").next().unwrap_or("").to_string() + "</library>\n",
    );
    let (code, stdout, stderr) = tvm_test(empty.path(), &[]);
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    assert_eq!(
        stderr,
        "tvm: error: no <test> elements in .: nothing was tested\n"
    );
}

#[test]
fn trace_writes_the_calls_of_each_test_as_run_does_naming_the_test() {
    let dir = folder("tvm-test-trace");
    let trace = dir.path().join("calls.jsonl");
    let trace_arg = trace.to_string_lossy().into_owned();
    let (code, stdout, _) = tvm_test(dir.path(), &["--filter", "title", "--trace", &trace_arg]);
    assert_eq!(code, 0, "{stdout}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&trace)
        .expect("the trace")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let tests: Vec<&str> = lines
        .iter()
        .map(|l| l["test"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        tests,
        ["a clear title is approved", "a title read from a file"]
    );
    let first = &lines[0];
    assert_eq!(
        (
            &first["kind"],
            &first["task"],
            &first["prompt"],
            &first["outcome"],
            &first["seq"]
        ),
        (
            &serde_json::json!("llm"),
            &serde_json::json!("judge#1"),
            &serde_json::json!("Judge this title: Fix the login page"),
            &serde_json::json!("ok"),
            &serde_json::json!(1)
        )
    );
    let keys: Vec<&String> = first.as_object().expect("an object").keys().collect();
    assert_eq!(keys[0], "test", "the test comes first: {keys:?}");
}

#[test]
fn snapshots_are_written_new_then_accepted_then_compared_and_a_change_is_shown() {
    let dir = folder("tvm-test-snapshots");
    let filter = ["--filter", "clear title", "--snapshots"];
    let (code, stdout, _) = tvm_test(dir.path(), &filter);
    assert_eq!(code, 1, "{stdout}");
    let snaps = dir.path().join("snapshots");
    let pending = snaps.join("judge__test_a_clear_title_is_approved.snap.new");
    // insta reads what was written, as `cargo insta review` does before accepting it.
    let snapshot = insta::Snapshot::from_file(&pending).expect("insta reads the file");
    assert_eq!(
        snapshot.metadata().expression(),
        Some("the result of test `a clear title is approved`")
    );
    assert_eq!(snapshot.metadata().source(), Some("./judge.xml"));
    let text = snapshot.contents().as_text().expect("text").to_string();
    let result: serde_json::Value = serde_json::from_str(&text).expect("the result as JSON");
    assert_eq!(result["parsedContent"]["approved"], true);
    let listing = snaps.join("judge__bytecode_judge.snap.new");
    let listing = insta::Snapshot::from_file(&listing).expect("insta reads the listing");
    let listing = listing.contents().as_text().expect("text").to_string();
    assert!(listing.contains("# judge.xml:3:3"), "{listing}");
    // Accepted, as `cargo insta review` does it: the `.snap.new` renamed.
    std::fs::rename(
        &pending,
        snaps.join("judge__test_a_clear_title_is_approved.snap"),
    )
    .unwrap();
    let (code, stdout, _) = tvm_test(dir.path(), &filter);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.starts_with("PASS  a clear title is approved"),
        "{stdout}"
    );
    assert!(
        stdout.contains("FAIL  the bytecode of task `judge` is new"),
        "{stdout}"
    );
    let (code, stdout, _) = tvm_test(dir.path(), &[&filter[..], &["--accept"]].concat());
    assert_eq!(code, 0, "{stdout}");
    let leftover: Vec<_> = std::fs::read_dir(&snaps)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".snap.new"))
        .collect();
    assert!(leftover.is_empty(), "{leftover:?}");
    dir.write(
        "judge.xml",
        LIBRARY.replace("[\"clear\"]", "[\"clear\", \"short\"]"),
    );
    let (code, stdout, _) = tvm_test(dir.path(), &filter);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("the result of test `a clear title is approved` is changed"),
        "{stdout}"
    );
    // How it changed is shown, so it can be judged without another tool.
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("+ ") && l.contains("short")),
        "{stdout}"
    );
}

#[test]
fn two_tests_whose_snapshot_files_would_coincide_are_told_apart_not_overwritten() {
    let dir = TempDir::new("tvm-test-same-file");
    let twins = LIBRARY.replace(
        "<test name=\"a wrong expectation fails\"",
        "<test name=\"A clear title, is approved\"",
    );
    dir.write("judge.xml", twins);
    dir.write("titles/vague.txt", "Do stuff");
    let (code, stdout, _) = tvm_test(
        dir.path(),
        &["--filter", "lear title", "--snapshots", "--accept"],
    );
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("the result of test `A clear title, is approved` would be kept in ./snapshots/judge__test_a_clear_title_is_approved.snap, as the result of test `a clear title is approved` is: rename one of them"),
        "{stdout}"
    );
    let kept = std::fs::read_to_string(
        dir.path()
            .join("snapshots/judge__test_a_clear_title_is_approved.snap"),
    )
    .unwrap();
    assert!(
        kept.contains("\"clear\""),
        "the first test's result was overwritten:\n{kept}"
    );
}

#[test]
fn a_test_file_behind_a_link_out_of_the_folder_is_not_read() {
    let dir = folder("tvm-test-link");
    let outside = TempDir::new("tvm-test-link-target");
    outside.write("secret.txt", "the secret of another folder");
    std::fs::remove_file(dir.path().join("titles/vague.txt")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("titles/vague.txt"),
    )
    .unwrap();
    let (code, stdout, _) = tvm_test(dir.path(), &["--filter", "read from a file"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("argument `title`: titles/vague.txt: leads out of the test's folder through a link, so it is not read"),
        "{stdout}"
    );
    assert!(!stdout.contains("the secret"), "{stdout}");
}

#[test]
fn templates_with_errors_stop_the_tests_before_any_runs() {
    let dir = TempDir::new("tvm-test-errors");
    dir.write(
        "bad.xml",
        LIBRARY.replace(
            "entry=\"judge\">\n    <arg name=\"title\">Fix",
            "entry=\"jugde\">\n    <arg name=\"title\">Fix",
        ),
    );
    let (code, stdout, stderr) = tvm_test(dir.path(), &[]);
    assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
    assert!(
        stderr.contains("runs `jugde`, which is not a template or task of the program"),
        "{stderr}"
    );
}

#[test]
fn the_shipped_examples_pass_their_tests_and_match_their_snapshots() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = files::tvm(&["test", "examples", "--snapshots"])
        .current_dir(&root)
        .output()
        .expect("tvm test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.ends_with(" passed, 0 failed\n"), "{stdout}");
}

/// A library of script tests: one reads a file beside it, one fails on purpose.
const SCRIPTS: &str = r#"<library>
  <task name="count" type="script">
    <script_execution><command>wc -l &lt; data/lines.txt</command></script_execution>
  </task>
  <task name="broken" type="script">
    <script_execution><command>for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo "line $i" &gt;&amp;2; done; exit 3</command></script_execution>
  </task>
  <test name="the script reads a file beside the test" entry="count">
    <expect path="content" contains="2"/>
  </test>
  <test name="a failing script shows its stderr" entry="broken"/>
</library>
"#;

#[test]
fn scripts_run_in_the_test_files_folder_and_a_failing_one_shows_the_end_of_its_stderr() {
    let dir = TempDir::new("tvm-test-scripts");
    dir.write("suite/scripts.xml", SCRIPTS);
    dir.write("suite/data/lines.txt", "one\ntwo\n");
    // Run from the folder above: the script's relative path is the test's.
    let out = files::tvm(&["test", "suite"])
        .current_dir(dir.path())
        .output()
        .expect("tvm test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("PASS  the script reads a file beside the test"),
        "{stdout}"
    );
    let shown: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.contains("the script's stderr ended:"))
        .skip(1)
        .take_while(|l| l.trim_start().starts_with("line"))
        .map(str::trim)
        .collect();
    let last: Vec<String> = (3..=12).map(|i| format!("line {i}")).collect();
    assert_eq!(shown, last, "the last 10 lines of stderr:\n{stdout}");
    assert!(
        stdout.contains("the script exited with status 3"),
        "{stdout}"
    );
}
