//! `--record FILE` on a cassette that exists: refused, naming the file and the flag that
//! decides, unless `--record-mode append` (its entries kept, this run's after them) or
//! `--record-mode overwrite` (replaced). A cassette is a record of replies paid for.

use crate::support::files::{self, TempDir};
use crate::support::http::{Reply, Server};

/// `tvm run` of the code review's summary of `diff` against `url` in `dir`, recording
/// to `rec.jsonl` with `mode`.
fn record(dir: &TempDir, url: &str, diff: &str, mode: &[&str]) -> (i32, String) {
    let bundle = files::golden("code_review");
    let diff = format!("diff={diff}");
    let mut args = vec![
        "run",
        bundle.to_str().expect("path"),
        "--entry",
        "summarize_change",
    ];
    args.extend([
        "--arg",
        &diff,
        "--arg",
        "audience=ops",
        "--provider",
        "openai",
    ]);
    args.extend(["--record", "rec.jsonl"]);
    args.extend(mode);
    let out = files::tvm(&args)
        .current_dir(dir.path())
        .env("OPENAI_BASE_URL", format!("{url}/v1"))
        .output()
        .expect("run tvm");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The prompts of the cassette's entries, in order.
fn prompts(dir: &TempDir) -> Vec<String> {
    let text = std::fs::read_to_string(dir.path().join("rec.jsonl")).expect("cassette");
    text.lines()
        .map(|l| {
            let entry: serde_json::Value = serde_json::from_str(l).expect("an entry a line");
            entry["prompt"].as_str().unwrap_or("").to_string()
        })
        .collect()
}

#[test]
fn an_existing_cassette_is_refused_unless_the_record_mode_says_append_or_overwrite() {
    let rt = files::runtime();
    let server = rt.block_on(Server::start(|i, _| {
        Reply::completion(&format!("summary {i}"), 1, 1)
    }));
    let url = server.url();
    let dir = TempDir::new("record");
    assert_eq!(record(&dir, &url, "+first", &[]).0, 0);
    let kept = std::fs::read(dir.path().join("rec.jsonl")).expect("cassette");

    let (code, stderr) = record(&dir, &url, "+second", &[]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        stderr,
        "tvm: error: --record rec.jsonl: the file exists; pass --record-mode append to add \
         this run's replies to it, or --record-mode overwrite to replace it\n"
    );
    assert_eq!(server.hits(), 1, "a refused run asks nothing");
    assert_eq!(
        std::fs::read(dir.path().join("rec.jsonl")).expect("cassette"),
        kept
    );

    // A run killed while writing its last entry left it without its line end.
    std::fs::write(dir.path().join("rec.jsonl"), &kept[..kept.len() - 1]).expect("cut");
    let (code, stderr) = record(&dir, &url, "+second", &["--record-mode", "append"]);
    assert_eq!(code, 0, "{stderr}");
    let appended = prompts(&dir);
    assert_eq!(appended.len(), 2, "{appended:?}");
    assert!(appended[0].ends_with("+first") && appended[1].ends_with("+second"));

    let (code, stderr) = record(&dir, &url, "+third", &["--record-mode", "overwrite"]);
    assert_eq!(code, 0, "{stderr}");
    let replaced = prompts(&dir);
    assert_eq!(replaced.len(), 1, "{replaced:?}");
    assert!(replaced[0].ends_with("+third"));
}

#[test]
fn a_record_mode_without_a_cassette_to_record_is_a_usage_error() {
    let dir = TempDir::new("record-mode");
    let bundle = files::golden("code_review");
    let args = [
        "run",
        bundle.to_str().expect("path"),
        "--record-mode",
        "append",
    ];
    let out = files::tvm(&args)
        .current_dir(dir.path())
        .output()
        .expect("run tvm");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the following required arguments were not provided:\n  --record <FILE>"),
        "{stderr}"
    );
}
