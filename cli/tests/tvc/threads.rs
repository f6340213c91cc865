//! `tvc` spreads large programs over the machine's cores; whatever the number of
//! threads (`TVC_THREADS`), it writes the same bundle and the same diagnostics.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Templates per generated program: enough that every parallel path engages.
pub(super) const TEMPLATES: usize = 800;

/// `n` function templates, template `i` calling `i - 1`; `broken` templates get an
/// unknown variable, a call of a missing template and an argument of the wrong type.
pub(super) fn library(first: usize, n: usize, broken: &[usize]) -> String {
    let mut out = String::from("<library>\n");
    for i in first..first + n {
        let call = if i == 0 {
            String::new()
        } else {
            format!("Before: {{{{fn_{:04}(topic, {})}}}}", i - 1, i % 7)
        };
        let error = if broken.contains(&i) {
            "{{missing_var}} {{no_such_template(topic)}} {{fn_0000(topic, \"text\")}}"
        } else {
            ""
        };
        let _ = write!(
            out,
            r#"  <template name="fn_{i:04}" params="topic:string,count:number" returns="object">
    <task>
      <instructions>Study {{{{upper(topic)}}}} in {{{{count}}}} points. {call} {error}
Answer with a JSON object; keep it short and factual, and pad this text a little
so that the file is about the size of a real library's entries.</instructions>
{inputs}      <output_format type="json" schema="object"/>
    </task>
  </template>
"#,
            inputs = branches(i)
        );
    }
    out.push_str("</library>\n");
    out
}

/// Every seventh template has two inputs computed by nested tasks, which run as
/// concurrent branches; in every fourteenth, one of those has two of its own.
fn branches(i: usize) -> String {
    if i % 7 != 3 {
        return String::new();
    }
    let inner = if i % 14 == 3 {
        r#"<inputs>
            <input name="a"><task><instructions>Inner view A of {{topic}}</instructions></task></input>
            <input name="b"><task><instructions>Inner view B of {{topic}}</instructions></task></input>
          </inputs>"#
    } else {
        ""
    };
    format!(
        r#"      <inputs>
        <input name="first"><task><instructions>First view of {{{{topic}}}}</instructions></task></input>
        <input name="second"><task><instructions>Second view of {{{{topic}}}}</instructions>{inner}</task></input>
      </inputs>
"#
    )
}

/// Writes `files` into a fresh directory named after the test.
pub(super) fn program(name: &str, files: &[String]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the program directory");
    for (i, text) in files.iter().enumerate() {
        std::fs::write(dir.join(format!("part_{i}.xml")), text).expect("write a program file");
    }
    dir
}

/// Runs `tvc` with `threads` threads; its exit code, stdout and stderr.
pub(super) fn tvc(threads: usize, args: &[&str]) -> (i32, Vec<u8>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tvc"))
        .args(args)
        .env("TVC_THREADS", threads.to_string())
        .output()
        .expect("run tvc");
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The program of `library(0, TEMPLATES, broken)`, in one file and in four.
pub(super) fn one_file_and_many(name: &str, broken: &[usize]) -> [PathBuf; 2] {
    let whole = program(&format!("{name}_one"), &[library(0, TEMPLATES, broken)]);
    let parts: Vec<String> = (0..4)
        .map(|p| library(p * TEMPLATES / 4, TEMPLATES / 4, broken))
        .collect();
    [whole, program(&format!("{name}_many"), &parts)]
}

#[test]
fn bundles_are_byte_identical_whatever_the_thread_count() {
    for dir in one_file_and_many("same_bundle", &[]) {
        let bundles: Vec<Vec<u8>> = [1, 2, 3]
            .iter()
            .map(|&threads| {
                let out = dir.join(format!("out_{threads}.bin"));
                let dir_arg = dir.to_string_lossy();
                let out_arg = out.to_string_lossy();
                let (code, _, stderr) = tvc(threads, &["compile", &dir_arg, "-o", &out_arg]);
                assert_eq!(code, 0, "{stderr}");
                std::fs::read(&out).expect("the bundle was written")
            })
            .collect();
        assert!(bundles[0].len() > 100_000, "{} bytes", bundles[0].len());
        // Branch functions are named after the function that makes them, nested ones too.
        let has = |name: &str| bundles[0].windows(name.len()).any(|w| w == name.as_bytes());
        assert!(has("fn_0787~2~1") && has("fn_0794~1") && !has("fn_0794~3"));
        assert!(
            bundles.iter().all(|b| *b == bundles[0]),
            "{}",
            dir.display()
        );
    }
}

#[test]
fn diagnostics_are_identical_whatever_the_thread_count() {
    let broken = [3, 199, 200, 201, 433, 799];
    for dir in one_file_and_many("same_diagnostics", &broken) {
        let dir_arg = dir.to_string_lossy();
        let runs: Vec<(i32, Vec<u8>, String)> = [1, 2, 3]
            .iter()
            .map(|&threads| tvc(threads, &["check", "--color", "never", &dir_arg]))
            .collect();
        let (code, _, stderr) = &runs[0];
        assert_eq!(*code, 1, "{stderr}");
        // The broken templates' prompts lose their holes, so their inputs also get a
        // warning each; what counts here is that every thread count says the same.
        assert!(
            stderr.contains(&format!("tvc: {} errors and ", 3 * broken.len())),
            "{stderr}"
        );
        assert!(runs.iter().all(|r| r == &runs[0]), "{}", dir.display());
    }
}

#[test]
fn emitted_trees_are_identical_whatever_the_thread_count() {
    for dir in one_file_and_many("same_trees", &[]) {
        let dir_arg = dir.to_string_lossy();
        for stage in ["xml", "ast", "ir"] {
            let runs: Vec<(i32, Vec<u8>, String)> = [1, 2]
                .iter()
                .map(|&threads| tvc(threads, &["check", "--emit", stage, &dir_arg]))
                .collect();
            assert_eq!(runs[0].0, 0, "{}", runs[0].2);
            assert!(runs[0].1.len() > 100_000, "--emit {stage} printed little");
            assert!(runs[0] == runs[1], "--emit {stage} of {}", dir.display());
        }
    }
}

#[test]
fn a_syntax_error_deep_in_a_large_file_reads_the_same_whatever_the_thread_count() {
    let mut text = library(0, TEMPLATES, &[5, 600]);
    // An end tag that closes the wrong element, three quarters of the way in.
    let at = text
        .match_indices("</instructions>")
        .nth(TEMPLATES * 3 / 4)
        .map(|(i, _)| i)
        .expect("the library has instructions");
    text.replace_range(at..at + "</instructions>".len(), "</instruction>");
    let dir = program("syntax_error", &[text]);
    let dir_arg = dir.to_string_lossy();
    let runs: Vec<(i32, Vec<u8>, String)> = [1, 2, 3]
        .iter()
        .map(|&threads| {
            tvc(
                threads,
                &["check", "--color", "never", "--emit", "xml", &dir_arg],
            )
        })
        .collect();
    let (code, _, stderr) = &runs[0];
    assert_eq!(*code, 1, "{stderr}");
    assert!(stderr.contains("error:"), "{stderr}");
    assert!(runs.iter().all(|r| r == &runs[0]));
}

#[test]
fn a_bundle_made_a_window_of_templates_at_a_time_is_the_bundle_made_whole() {
    use tv_compiler::driver;
    for dir in one_file_and_many("same_windows", &[]) {
        let whole = {
            let c = driver::check_paths(std::slice::from_ref(&dir)).expect("the program");
            let (_, bundle) = driver::compile(&c).expect("it compiles");
            driver::bundle_bytes(&bundle)
        };
        // Windows that split items from the branch functions they make, and one that
        // holds everything.
        for window in [1, 5, 64, 333, TEMPLATES * 2] {
            let mut c = driver::check_paths(std::slice::from_ref(&dir)).expect("the program");
            let bytes = driver::compile_to_bytes_in(&mut c, &mut Default::default(), window)
                .unwrap_or_else(|_| panic!("windows of {window}: errors"));
            assert!(bytes == whole, "windows of {window} in {}", dir.display());
        }
        // `tvc compile` writes them; with a listing asked for, it makes the bundle whole.
        let (dir_arg, out) = (dir.to_string_lossy(), dir.join("out.bin"));
        let out_arg = out.to_string_lossy();
        let (code, _, stderr) = tvc(2, &["compile", &dir_arg, "-o", &out_arg]);
        assert_eq!(code, 0, "{stderr}");
        assert!(std::fs::read(&out).expect("written") == whole);
        let listed = ["compile", &dir_arg, "-o", &out_arg, "--emit", "bytecode"];
        let (code, listing, stderr) = tvc(2, &listed);
        assert_eq!(code, 0, "{stderr}");
        assert!(listing.len() > 100_000);
        assert!(std::fs::read(&out).expect("written") == whole);
    }
}
