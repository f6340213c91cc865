//! A script's hole whose value would be read as an option, as `tvm run` meets it: the
//! script fails before it starts.

use serde_json::json;

/// `tvm run` of the template `xml`, written to `t.xml` in `dir`, run in `dir` with
/// the echo provider and `args`: its result.
fn run_in(dir: &std::path::Path, xml: &str, args: &[&str]) -> serde_json::Value {
    std::fs::write(dir.join("t.xml"), xml).expect("write the template");
    let mut all = vec!["run", "t.xml", "--provider", "echo"];
    all.extend_from_slice(args);
    let out = crate::support::files::tvm(&all)
        .current_dir(dir)
        .output()
        .expect("run tvm");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn a_value_that_would_be_read_as_an_option_fails_the_script_before_it_starts() {
    let dir = crate::support::temp::TempDir::new("option");
    let owned = dir.path().join("owned");
    let order = format!("order=--output={}", owned.display());
    let xml = r#"<task name="sorted" type="script">
      <inputs><input name="order">How to sort</input></inputs>
      <script_execution><command>touch started; sort {{order}} /dev/null</command></script_execution>
    </task>"#;
    let r = run_in(dir.path(), xml, &["--arg", &order]);
    let error = &r["notes"]["error"];
    assert_eq!(
        (&r["status"], &error["reason"]),
        (&json!("FAILED"), &json!("input_validation_failure"))
    );
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`{{order}}`") && message.contains("option"),
        "{message}"
    );
    assert_eq!(error["details"]["hole"], "order");
    assert!(!owned.exists(), "sort wrote the file the value named");
    assert!(!dir.path().join("started").exists(), "the script started");

    // After `--`, the value is an operand: sort looks for a file of that name.
    let r = run_in(
        dir.path(),
        &xml.replace("sort {{order}}", "sort -- {{order}}"),
        &["--arg", &order],
    );
    assert_eq!(r["notes"]["error"]["details"]["exitCode"], 2);
    assert!(!owned.exists());
    // A value that does not start with `-` runs as always.
    let r = run_in(dir.path(), xml, &["--arg", "order=-"]);
    assert_eq!(r["notes"]["error"]["reason"], "input_validation_failure");
    let r = run_in(dir.path(), xml, &["--arg", "order=/dev/null"]);
    assert_eq!(r["status"], "COMPLETE");
}
