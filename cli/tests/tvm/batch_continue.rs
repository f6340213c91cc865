//! Running a `tvm batch` command again (DESIGN §16): a row whose line the results file
//! holds is done and is never paid for again; `--retry-failed` runs the failed rows
//! from what their journals kept; `--rerun` starts over keeping the earlier results;
//! results of another batch are never mixed in; Ctrl-C says what is done. Every call is
//! counted at a server on 127.0.0.1.

use super::batch_resume::{kept, openai_batch, slow_echo};
use crate::support::files::{self, run_tvm, runtime, scratch};
use crate::support::http::{Reply, Request, Server};
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;
use std::process::Stdio;

/// The result lines of `out`, parsed.
fn lines(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out)
        .expect("results")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a whole JSON line"))
        .collect()
}

/// The rows of `out`, sorted, checking that each has one line.
fn indices(out: &Path) -> Vec<u64> {
    let mut all: Vec<u64> = lines(out)
        .iter()
        .filter_map(|l| l["index"].as_u64())
        .collect();
    all.sort_unstable();
    let unique: HashSet<u64> = all.iter().copied().collect();
    assert_eq!(unique.len(), all.len(), "a row has two lines: {all:?}");
    all
}

fn prompts(asked: &[Request]) -> HashSet<String> {
    asked.iter().map(Request::prompt).collect()
}

#[test]
fn a_finished_batch_run_again_says_every_row_is_done_and_calls_nothing() {
    let rt = runtime();
    let server = rt.block_on(slow_echo(0));
    let dir = scratch("batch-continue", "finished");
    let (args, out) = openai_batch(&dir, 5);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = [("OPENAI_BASE_URL", server.url())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (code, _, stderr) = run_tvm(&args, &env);
    assert_eq!(code, 0, "{stderr}");
    let (paid, results) = (server.hits(), std::fs::read(&out).expect("results"));
    assert_eq!(paid, 10);

    let (code, _, stderr) = run_tvm(&args, &env);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("all 5 rows are done (5 completed, 0 failed)"),
        "{stderr}"
    );
    assert_eq!(server.hits(), paid, "a finished row was paid for again");
    assert_eq!(std::fs::read(&out).expect("results"), results);
}

#[test]
fn a_batch_stopped_by_its_cost_limit_goes_on_with_retry_failed_paying_only_for_what_it_lacks() {
    const ROWS: usize = 10;
    let rt = runtime();
    // Each call costs about 0.00007 USD (50 input and 100 output tokens of gpt-4o-mini):
    // 0.001 USD pays for some of the rows' 20 calls, not all.
    let server = rt.block_on(Server::start(|_, r| {
        Reply::completion(&format!("seen: {}", r.prompt()), 50, 100)
    }));
    let dir = scratch("batch-continue", "cost");
    let (args, out) = openai_batch(&dir, ROWS);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["--max-output-tokens", "100"]);
    let url = server.url();
    let env = [("OPENAI_BASE_URL", url.as_str())];
    let capped: Vec<&str> = args
        .iter()
        .copied()
        .chain(["--max-cost", "0.001"])
        .collect();
    let (code, _, stderr) = run_tvm(&capped, &env);
    assert_eq!(code, 1, "{stderr}");
    let failed: Vec<u64> = lines(&out)
        .iter()
        .filter(|l| l["status"] != "COMPLETE")
        .filter_map(|l| l["index"].as_u64())
        .collect();
    assert!(!failed.is_empty() && failed.len() < ROWS, "{failed:?}");
    let before = server.requests();

    let (code, _, stderr) = run_tvm(&capped, &env);
    assert_eq!(code, 1, "{stderr}");
    let done = format!(
        "all {ROWS} rows are done ({} completed, {} failed)",
        ROWS - failed.len(),
        failed.len()
    );
    assert!(stderr.contains(&done), "{stderr}");
    assert_eq!(server.hits(), before.len(), "a plain run again paid");

    let retry: Vec<&str> = args
        .iter()
        .copied()
        .chain(["--max-cost", "1", "--retry-failed"])
        .collect();
    let (code, _, stderr) = run_tvm(&retry, &env);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(indices(&out), (0..ROWS as u64).collect::<Vec<_>>());
    assert!(lines(&out).iter().all(|l| l["status"] == "COMPLETE"));
    let again = prompts(&server.requests()[before.len()..]);
    let answered = prompts(&before);
    assert!(!again.is_empty());
    assert!(
        again.is_disjoint(&answered),
        "asked again: {:?}",
        again.intersection(&answered).collect::<Vec<_>>()
    );
}

#[test]
fn results_of_another_batch_are_refused_and_rerun_keeps_them_as_previous() {
    let rt = runtime();
    let server = rt.block_on(slow_echo(0));
    let dir = scratch("batch-continue", "another");
    let (args, out) = openai_batch(&dir, 3);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let url = server.url();
    let env = [("OPENAI_BASE_URL", url.as_str())];
    let (code, _, stderr) = run_tvm(&args, &env);
    assert_eq!(code, 0, "{stderr}");
    let (paid, first) = (server.hits(), std::fs::read(&out).expect("results"));

    let rows = dir.join("rows.jsonl");
    let mut text = std::fs::read_to_string(&rows).expect("rows");
    text.push_str("\n{\"notes\": [\"added\"]}");
    std::fs::write(&rows, text).expect("edit the rows");
    let (code, _, stderr) = run_tvm(&args, &env);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("belongs to a batch of another bundle, entry point or inputs")
            && stderr.contains("--rerun"),
        "{stderr}"
    );
    assert_eq!(
        (server.hits(), std::fs::read(&out).expect("results")),
        (paid, first.clone())
    );

    let rerun: Vec<&str> = args.iter().copied().chain(["--rerun"]).collect();
    let (code, _, stderr) = run_tvm(&rerun, &env);
    assert_eq!(code, 0, "{stderr}");
    let previous = dir.join("results.jsonl.previous");
    assert!(
        stderr.contains(&format!("kept as {}", previous.display())),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&previous).expect("kept"), first);
    assert_eq!(indices(&out), [0, 1, 2, 3]);
    assert_eq!(server.hits(), paid + 8);

    let results = std::fs::read(&out).expect("results");
    let (code, _, stderr) = run_tvm(&rerun, &env);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("which exists already"), "{stderr}");
    assert_eq!(std::fs::read(&out).expect("results"), results);
    assert_eq!(server.hits(), paid + 8);

    std::fs::remove_dir_all(dir.join("results.jsonl.state")).expect("forget the state");
    let (code, _, stderr) = run_tvm(&args, &env);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no state folder"), "{stderr}");
    assert_eq!(std::fs::read(&out).expect("results"), results);
    assert_eq!(server.hits(), paid + 8);
}

#[test]
fn ctrl_c_says_how_many_rows_are_done_and_the_same_command_goes_on_without_paying_for_them() {
    const ROWS: usize = 12;
    let rt = runtime();
    let server = rt.block_on(slow_echo(100));
    let dir = scratch("batch-continue", "ctrl-c");
    let (args, out) = openai_batch(&dir, ROWS);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let url = server.url();
    let child = files::tvm(&args)
        .env("OPENAI_BASE_URL", &url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tvm");
    files::wait_for(|| std::fs::read_to_string(&out).is_ok_and(|t| t.lines().count() >= 4));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
    let stopped = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    assert_eq!(stopped.status.code(), Some(130), "{stderr}");
    let done = lines(&out).len();
    assert!(done < ROWS, "the batch ended before Ctrl-C");
    let told = format!("interrupted: {done} of {ROWS} rows are done ({done} completed, 0 failed)");
    assert!(stderr.contains(&told), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "run the same command again to resume the other {}",
            ROWS - done
        )),
        "{stderr}"
    );
    let asked = server.requests();
    let answered: HashSet<String> = kept(&dir, &out, &asked).into_iter().collect();

    let (code, _, stderr) = run_tvm(&args, &[("OPENAI_BASE_URL", url.as_str())]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(indices(&out), (0..ROWS as u64).collect::<Vec<_>>());
    let again = prompts(&server.requests()[asked.len()..]);
    assert!(
        again.is_disjoint(&answered),
        "asked again: {:?}",
        again.intersection(&answered).collect::<Vec<_>>()
    );
    // Each row asks two calls; the finished rows' are among those not asked again.
    assert!(server.hits() - asked.len() <= 2 * (ROWS - done));
}
