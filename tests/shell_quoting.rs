//! Script quoting against a real shell: for random values in each context a hole can
//! stand in (a bare word, inside the author's `"..."`, inside the author's `'...'`),
//! the command the machine builds, run by `sh -c`, prints exactly the value with its
//! surrounding text, and runs nothing of the value.

use proptest::prelude::*;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use tv_tests::{bundle_of, run_with};
use tv_vm::bundle::Verified;
use tv_vm::host::EchoHost;
use tv_vm::limits::Limits;

/// Where a value that escaped its quoting would leave a file; one per test, as the
/// tests run side by side.
fn trap(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tv-quoting-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("trap folder");
    dir.join("PWNED")
}

fn clear(trap: &Path) {
    if let Some(dir) = trap.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Values made of the pieces that matter to a shell, plus any other character but NUL
/// (which no command line can hold).
fn value(trap: &Path) -> impl Strategy<Value = String> {
    let trap = trap.display().to_string();
    let piece = prop_oneof![
        3 => prop::sample::select(vec![
            "'", "\"", "$", "`", "\\", ";", "|", "&", "\n", " ", "\t", "#", "*", "~", "!",
            "${x}", "$HOME", "'\\''", "\\\"", "<<E", "}", ")", "(",
        ])
        .prop_map(str::to_string),
        1 => Just(format!("$(touch {trap})")),
        1 => Just(format!("`touch {trap}`")),
        1 => Just(format!("'; touch {trap}; '")),
        1 => Just(format!("\"; touch {trap}; \"")),
        3 => any::<char>()
            .prop_filter("no NUL", |c| *c != '\0')
            .prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
}

/// A script task whose command prints its arguments with `printf '%s'`, given after it.
fn script(args: &str) -> Verified {
    bundle_of(&format!(
        r#"<task name="s" type="script"><inputs><input name="v">a value</input></inputs>
             <script_execution><command>printf '%s' {args}</command></script_execution></task>"#
    ))
}

/// The command the machine builds for `v`, and what `sh -c` prints when running it.
fn run(bundle: &Verified, v: &str) -> (String, String) {
    let r = run_with(
        bundle,
        "s",
        json!({ "v": v }),
        Limits::default(),
        &mut EchoHost,
    );
    let command = r["content"].as_str().expect("the command").to_string();
    let out = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .output()
        .expect("sh runs");
    (command, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn check(bundle: &Verified, trap: &Path, v: &str, expected: String) -> Result<(), TestCaseError> {
    let (command, printed) = run(bundle, v);
    prop_assert_eq!(printed, expected, "command: {}", command);
    prop_assert!(!trap.exists(), "the value ran as code: {}", command);
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

#[test]
fn a_value_standing_as_a_bare_word_part_is_printed_as_it_is_and_never_run() {
    let trap = trap("bare");
    let bundle = script("pre{{v}}post");
    proptest!(config(), |(v in value(&trap))| {
        check(&bundle, &trap, &v, format!("pre{v}post"))?;
    });
    clear(&trap);
}

#[test]
fn a_value_inside_the_authors_double_quotes_is_printed_as_it_is_and_never_run() {
    let trap = trap("double");
    let bundle = script("\"label {{v}} end\"");
    proptest!(config(), |(v in value(&trap))| {
        check(&bundle, &trap, &v, format!("label {v} end"))?;
    });
    clear(&trap);
}

#[test]
fn a_value_inside_the_authors_single_quotes_is_printed_as_it_is_and_never_run() {
    let trap = trap("single");
    let bundle = script("'label {{v}} end'");
    proptest!(config(), |(v in value(&trap))| {
        check(&bundle, &trap, &v, format!("label {v} end"))?;
    });
    clear(&trap);
}

#[test]
fn one_value_in_all_three_contexts_of_one_command_is_printed_three_times() {
    let trap = trap("all");
    let bundle = script("{{v}}\"|$HOME|{{v}}|\"'|$HOME|{{v}}'");
    let home = std::env::var("HOME").unwrap_or_default();
    proptest!(config(), |(v in value(&trap))| {
        check(&bundle, &trap, &v, format!("{v}|{home}|{v}||$HOME|{v}"))?;
    });
    clear(&trap);
}

/// Every case of `tests/fixtures/shell_commands.txt`, compiled as the command of a
/// script task whose input is `v`: a refused hole gets one error saying why, whose help
/// names `$TVM_INPUT_V`; an accepted one compiles, with the option check the table says.
#[test]
fn every_command_of_the_shell_table_gets_the_verdict_the_table_gives() {
    let table =
        std::fs::read_to_string("tests/fixtures/shell_commands.txt").expect("the command table");
    let mut wrong = Vec::new();
    let mut count = 0;
    for line in table
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let (verdict, command) = line
            .split_once(char::is_whitespace)
            .unwrap_or_else(|| panic!("{line:?}: a verdict and a command"));
        let command = command.trim_start().replace('⏎', "\n");
        count += 1;
        if let Some(problem) = verdict_problem(verdict, &command) {
            wrong.push(format!("{line}\n    {problem}"));
        }
    }
    assert!(count >= 250, "only {count} cases");
    assert!(
        wrong.is_empty(),
        "{} of {count} cases:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// What is wrong with the compiler's verdict on `command`, if anything.
fn verdict_problem(verdict: &str, command: &str) -> Option<String> {
    use tv_compiler::diag::Severity;
    use tv_compiler::{contexts, Piece};
    let escaped = command
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let xml = format!(
        r#"<task name="s" type="script"><inputs><input name="v">a value</input></inputs>
             <script_execution><command>{escaped}</command></script_execution></task>"#
    );
    let c = tv_compiler::driver::check_texts([("case.xml", xml.as_str())]);
    let errors: Vec<_> = c
        .diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    let phrase = match verdict {
        "code" => "not from being run as code",
        "name" => "the value would choose",
        "quoting" => "cannot quote its value safely",
        "option" | "data" => {
            if !errors.is_empty() {
                return Some(format!("refused: {}", c.diags.render_short(&c.sources)));
            }
            let mut pieces = Vec::new();
            for (i, text) in command.split("{{v}}").enumerate() {
                if i > 0 {
                    pieces.push(Piece::Hole);
                }
                pieces.push(Piece::Text(text));
            }
            let holes = contexts(&pieces).expect("accepted by the compiler");
            let option = verdict == "option";
            return (holes.iter().any(|h| h.option) != option)
                .then(|| format!("the option check is {:?}", holes));
        }
        other => panic!("unknown verdict {other:?}"),
    };
    match errors.as_slice() {
        [e] if e.message.contains(phrase)
            && e.help.as_ref().is_some_and(|h| h.contains("$TVM_INPUT_V")) =>
        {
            None
        }
        _ => Some(format!(
            "expected one error with {phrase:?}: {}",
            c.diags.render_short(&c.sources)
        )),
    }
}
