//! Maps over lists known at run time, driven as `tvm` drives them: bodies running at
//! once up to the map's concurrency, their results in input order, and a journaled run
//! resumed without running again a body that had completed. The bundles are built by
//! hand; each body runs its item as a script command, which the test hosts answer
//! after (virtual) time that may depend on the item.

use crate::support::files;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tv_runtime::host::{AsyncHost, CallId};
use tv_runtime::journal::{self, Header, Journal};
use tv_runtime::Run;
use tv_vm::bundle::{Bundle, Const, Entry, Function, Loc, Param, TaskMeta, ValueType, Verified};
use tv_vm::host::{HostError, HostReply, HostRequest, ScriptReply};
use tv_vm::isa::Op::{self, *};
use tv_vm::limits::{Limits, Spending};
use tv_vm::result::{Reason, TaskResult};

fn function(name: &str, params: &[&str], locals: u16, code: Vec<Op>) -> Function {
    Function {
        name: name.into(),
        params: params
            .iter()
            .map(|p| Param {
                name: p.to_string(),
                ty: ValueType::ANY,
                doc: String::new(),
            })
            .collect(),
        locals,
        lines: vec![Loc::default(); code.len()],
        code,
        returns: ValueType::ANY,
        matchable: None,
        doc: String::new(),
    }
}

/// `main(xs)` maps `body(item, index)` over `xs`, at most `n` bodies at once (0: the
/// run's limit), as the compiler writes a map; the body runs its item as a script.
fn map_bundle(n: u16) -> Verified {
    Verified::new(unverified_map(n)).expect("the bundle verifies")
}

/// [`map_bundle`] before it is verified, to change.
fn unverified_map(n: u16) -> Bundle {
    let main = vec![
        Load(0),
        Items,
        JumpIfFailed(15),
        EachStart(n),
        EachMore,
        JumpIfFalse(13),
        EachNext,
        Store(2),
        Store(1),
        Load(1),
        Load(2),
        Spawn(1, 2),
        Jump(4),
        EachEnd,
        MapResult,
        Return,
    ];
    let body = vec![Load(0), Op::Const(0), Script(0), Return];
    Bundle {
        compiler_version: "test".into(),
        constants: vec![Const::Null, Const::Str("main".into())],
        functions: vec![
            function("main", &["xs"], 3, main),
            function("body", &["item", "index"], 2, body),
        ],
        tasks: vec![Arc::new(TaskMeta::named("run"))],
        entries: vec![Entry {
            name: "main".into(),
            function: 0,
        }],
        files: vec!["each.xml".into()],
    }
}

/// How a [`Scripts`] host answers the command of item `i`.
#[derive(Clone, Copy)]
enum Answer {
    /// After this long.
    After(Duration),
    /// Never.
    Hang,
    /// With a failure (which the journal does not keep).
    Fail,
}

/// Answers each script command, an item's number, with that number as its output,
/// and keeps count of the calls: in order made, in order ended, and most at once.
struct Scripts {
    answer: Box<dyn Fn(usize) -> Answer + Send + Sync>,
    made: Mutex<Vec<String>>,
    ended: Mutex<Vec<String>>,
    in_flight: AtomicUsize,
    most: AtomicUsize,
}

impl Scripts {
    fn new(answer: impl Fn(usize) -> Answer + Send + Sync + 'static) -> Scripts {
        Scripts {
            answer: Box::new(answer),
            made: Mutex::default(),
            ended: Mutex::default(),
            in_flight: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
        }
    }

    fn made(&self) -> Vec<String> {
        let mut made = self.made.lock().expect("calls").clone();
        made.sort_by_key(|c| c.parse::<usize>().unwrap_or(usize::MAX));
        made
    }
}

impl AsyncHost for Scripts {
    async fn call(&self, _: CallId<'_>, request: &HostRequest) -> HostReply {
        let HostRequest::Script(s) = request else {
            panic!("only scripts here");
        };
        let command = s.command.clone();
        self.made.lock().expect("calls").push(command.clone());
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        let answer = (self.answer)(command.parse().unwrap_or(0));
        match answer {
            Answer::After(t) => tokio::time::sleep(t).await,
            Answer::Hang => std::future::pending().await,
            Answer::Fail => {}
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.ended.lock().expect("calls").push(command.clone());
        match answer {
            Answer::Fail => HostReply::Script(Err(HostError::new(
                Reason::UnexpectedError,
                "the script could not start",
            ))),
            _ => HostReply::Script(Ok(ScriptReply {
                stdout: command,
                ..ScriptReply::default()
            })),
        }
    }
}

/// A runtime whose clock moves only when every task waits, so that timings are exact.
fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime")
}

/// Maps over the numbers `0..items` (at most `n` at once), with the run's limits'
/// concurrency `limit`: the result and how long it took.
fn timed_map(n: u16, limit: usize, items: usize, host: &Scripts) -> (Value, Duration) {
    let b = map_bundle(n);
    let limits = Limits {
        concurrency: limit,
        ..Limits::default()
    };
    let xs = json!((0..items).collect::<Vec<_>>());
    paused().block_on(async {
        let start = tokio::time::Instant::now();
        let ran = Run::new(&b, 0, vec![xs], limits).on(host).await;
        (ran.result.into(), start.elapsed())
    })
}

fn numbers(range: std::ops::Range<usize>) -> Value {
    json!(range.map(|i| i.to_string()).collect::<Vec<_>>())
}

#[test]
fn a_map_of_twenty_bodies_at_concurrency_four_runs_four_at_once_and_takes_five_sleeps() {
    let host = Scripts::new(|_| Answer::After(Duration::from_millis(100)));
    let (r, took) = timed_map(4, 16, 20, &host);
    assert_eq!(r["status"], "COMPLETE", "{r}");
    assert_eq!(r["parsedContent"], numbers(0..20));
    assert_eq!(host.most.load(Ordering::SeqCst), 4);
    assert_eq!(took.as_millis() / 100, 5, "{took:?}");
}

#[test]
fn a_map_that_states_no_concurrency_runs_as_many_bodies_at_once_as_the_run_allows() {
    let host = Scripts::new(|_| Answer::After(Duration::from_millis(100)));
    let (r, took) = timed_map(0, 5, 20, &host);
    assert_eq!(r["parsedContent"], numbers(0..20));
    assert_eq!(host.most.load(Ordering::SeqCst), 5);
    assert_eq!(took.as_millis() / 100, 4, "{took:?}");
}

#[test]
fn results_keep_the_input_order_when_later_bodies_finish_first() {
    // Item i sleeps (20 - i) × 10 ms: the last starts last and ends first.
    let host = Scripts::new(|i| Answer::After(Duration::from_millis(10 * (20 - i as u64))));
    let (r, took) = timed_map(20, 16, 20, &host);
    let ended = host.ended.lock().expect("calls").clone();
    assert_eq!(ended.first().map(String::as_str), Some("19"), "{ended:?}");
    assert_eq!(ended.last().map(String::as_str), Some("0"), "{ended:?}");
    assert_eq!(r["parsedContent"], numbers(0..20));
    assert_eq!(r["content"], numbers(0..20).to_string());
    assert_eq!(took.as_millis(), 200);
}

#[test]
fn a_failing_body_fails_the_map_after_the_bodies_already_running_have_ended() {
    // Three at once; item 1 fails at once, items 0 and 2 end later, item 3 never runs.
    let host = Scripts::new(|i| match i {
        1 => Answer::Fail,
        _ => Answer::After(Duration::from_millis(100)),
    });
    let (r, took) = timed_map(3, 16, 6, &host);
    assert_eq!(host.made(), ["0", "1", "2"]);
    let d = &r["notes"]["error"]["details"];
    assert_eq!(
        (d["failedIndex"].clone(), d["totalItems"].clone()),
        (json!(1), json!(6))
    );
    let partial = d["partialResults"].as_array().expect("an array");
    assert_eq!(partial[0]["content"], "0");
    assert_eq!(partial[2]["content"], "2", "a body running when 1 failed");
    assert!(partial[3..].iter().all(Value::is_null));
    assert_eq!(took.as_millis(), 100, "the map waits for 0 and 2");
}

fn header() -> Header {
    Header {
        journal: journal::FORMAT,
        bundle: "each.bin".into(),
        bundle_sha256: "00".repeat(32),
        entry: "main".into(),
        args: Map::new(),
        config: tv_runtime::config::RunConfig::default(),
    }
}

/// What a journaled run ended with (`None`: it did not end within a minute, and was
/// stopped as a killed run is), with the bodies and the calls its journal answered.
struct Journaled {
    result: Option<TaskResult>,
    bodies_replayed: usize,
    calls_replayed: usize,
}

/// Maps over `xs` with a journal at `path`, a new one or the one a run left there.
fn journaled(path: &std::path::Path, xs: Value, n: u16, host: &Scripts) -> Journaled {
    let b = map_bundle(n);
    let journal = match std::fs::metadata(path) {
        Ok(_) => Journal::open(path).expect("opened").1,
        Err(_) => Journal::create(path, &header()).expect("created"),
    };
    let run = Run {
        journal: Some(&journal),
        ..Run::new(&b, 0, vec![xs], Limits::default())
    };
    let r = paused()
        .block_on(async { tokio::time::timeout(Duration::from_secs(60), run.on(host)).await });
    Journaled {
        result: r.ok().map(|ran| ran.result),
        bodies_replayed: journal.bodies_replayed(),
        calls_replayed: journal.counts().0,
    }
}

/// The bodies the journal holds as completed, by name.
fn bodies_in(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("the journal");
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["event"] == "body_ended")
        .map(|r| r["body"].as_str().unwrap_or("").to_string())
        .collect();
    names.sort();
    names
}

fn scratch(name: &str) -> std::path::PathBuf {
    files::scratch("each", name)
}

#[test]
fn tvm_run_concurrency_sets_the_maps_default_and_a_resume_takes_completed_bodies_whole() {
    let dir = scratch("cli");
    let bundle = dir.join("each.bin");
    std::fs::write(&bundle, map_bundle(0).to_bytes()).expect("bundle written");
    let journal = dir.join("run.jsonl");
    let (bundle, journal) = (
        bundle.to_str().expect("path"),
        journal.to_str().expect("path"),
    );
    let xs = r#"{"xs": ["echo a", "echo b"]}"#;
    let run = [
        "run",
        bundle,
        "--args-json",
        xs,
        "--concurrency",
        "3",
        "--journal",
        journal,
    ];
    let (code, out, err) = files::run_tvm(&run, &[]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).expect("a result");
    assert_eq!(r["parsedContent"], json!(["a\n", "b\n"]));
    let text = std::fs::read_to_string(journal).expect("the journal");
    let header: Header = serde_json::from_str(text.lines().next().unwrap_or("")).expect("header");
    assert_eq!(header.config.calls.concurrency, Some(3));
    let (code, again, err) = files::run_tvm(&["resume", journal], &[]);
    assert_eq!((code, again), (0, out));
    assert!(
        err.contains("0 made now, 2 bodies taken whole from the journal"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_resumed_run_starts_no_body_the_journal_holds_as_completed_nor_makes_its_calls() {
    let dir = scratch("resume");
    let path = dir.join("run.jsonl");
    // Four at once: items 0 to 3 end, 4 to 7 start and never end; the run is stopped.
    let first = Scripts::new(|i| match i {
        0..=3 => Answer::After(Duration::from_millis(10)),
        _ => Answer::Hang,
    });
    let xs = json!([0, 1, 2, 3, 4, 5, 6, 7]);
    let stopped = journaled(&path, xs.clone(), 4, &first);
    assert!(stopped.result.is_none(), "the run hangs");
    assert_eq!(first.made(), ["0", "1", "2", "3", "4", "5", "6", "7"]);
    assert_eq!(bodies_in(&path), ["e0.0/", "e0.1/", "e0.2/", "e0.3/"]);

    let again = Scripts::new(|_| Answer::After(Duration::from_millis(10)));
    let resumed = journaled(&path, xs, 4, &again);
    let r = resumed.result.expect("the resumed run ends");
    assert!(!r.is_failed(), "{r}");
    assert_eq!(r.parsed_content, Some(numbers(0..8)));
    assert_eq!(
        again.made(),
        ["4", "5", "6", "7"],
        "only the bodies that had not ended"
    );
    assert_eq!((resumed.bodies_replayed, resumed.calls_replayed), (4, 0));
    assert_eq!(bodies_in(&path).len(), 8);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_body_that_failed_runs_again_on_resume_and_those_that_completed_do_not() {
    let dir = scratch("failed");
    let path = dir.join("run.jsonl");
    let first = Scripts::new(|i| match i {
        2 => Answer::Fail,
        _ => Answer::After(Duration::from_millis(10)),
    });
    let xs = json!([0, 1, 2, 3]);
    let r = journaled(&path, xs.clone(), 1, &first)
        .result
        .expect("the run ends");
    let e = r.notes.error.as_ref().expect("a failure");
    assert_eq!(
        e.message,
        "item 3 of 4 (index 2) of the map failed: the script could not start"
    );
    assert_eq!(bodies_in(&path), ["e0.0/", "e0.1/"]);

    let again = Scripts::new(|_| Answer::After(Duration::from_millis(10)));
    let resumed = journaled(&path, xs, 1, &again);
    let r = resumed.result.expect("the resumed run ends");
    assert_eq!(r.parsed_content, Some(numbers(0..4)));
    assert_eq!(again.made(), ["2", "3"]);
    assert_eq!(resumed.bodies_replayed, 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_journaled_body_asked_with_other_arguments_runs_again() {
    let dir = scratch("changed");
    let path = dir.join("run.jsonl");
    let host = Scripts::new(|_| Answer::After(Duration::from_millis(10)));
    let first = journaled(&path, json!([0, 1]), 1, &host);
    assert!(first.result.is_some_and(|r| !r.is_failed()));
    // The same bodies by name, over other items: none is taken from the journal, and
    // their calls, which ask something else now, stop the run.
    let changed = journaled(&path, json!([5, 6]), 1, &host);
    assert_eq!(changed.bodies_replayed, 0);
    let r = changed.result.expect("the run ends");
    let e = r.notes.error.as_ref().expect("a failure");
    assert!(
        e.message.contains("does not match this run"),
        "{}",
        e.message
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_body_goes_on_while_its_machine_waits_for_a_host_call() {
    // main starts a body for "b", then makes its own call, which the host answers only
    // once the body's call has been made: the body must run meanwhile.
    let main = vec![
        Op::Const(2),
        MakeArray(1),
        EachStart(2),
        EachNext,
        Store(2),
        Store(1),
        Load(1),
        Load(2),
        Spawn(1, 2),
        Op::Const(1),
        Op::Const(0),
        Script(0),
        EachEnd,
        Pop,
        Return,
    ];
    let mut b = unverified_map(1);
    b.constants.push(Const::Str("7".into()));
    b.functions[0] = function("main", &["xs"], 3, main);
    let b = Verified::new(b).expect("verifies");
    let body_called = Arc::new(tokio::sync::Semaphore::new(0));
    let host = Waits {
        body_called: body_called.clone(),
    };
    let run = Run::new(&b, 0, vec![json!(null)], Limits::default()).on(&host);
    let r = paused().block_on(async { tokio::time::timeout(Duration::from_secs(60), run).await });
    let r = r.expect("no deadlock").result;
    assert_eq!(r.content, "main", "{r}");
}

/// Answers the call `main` once a body's call has been made.
struct Waits {
    body_called: Arc<tokio::sync::Semaphore>,
}

impl AsyncHost for Waits {
    async fn call(&self, _: CallId<'_>, request: &HostRequest) -> HostReply {
        let HostRequest::Script(s) = request else {
            panic!("only scripts here");
        };
        if s.command == "main" {
            let _ = self.body_called.acquire().await;
        } else {
            self.body_called.add_permits(1);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        HostReply::Script(Ok(ScriptReply {
            stdout: s.command.clone(),
            ..ScriptReply::default()
        }))
    }
}

/// A layer that keeps places, as the journal does: what it is told of each call and
/// body, in order.
struct Places {
    inner: Scripts,
    told: Mutex<Vec<String>>,
}

impl Places {
    fn tell(&self, what: String) {
        self.told.lock().expect("told").push(what);
    }
}

impl AsyncHost for Places {
    async fn call(&self, at: CallId<'_>, request: &HostRequest) -> HostReply {
        self.tell(format!("call {at}"));
        self.inner.call(at, request).await
    }

    fn keeps_places(&self) -> bool {
        true
    }

    fn kept_body(&self, body: tv_runtime::host::BodyId<'_>) -> Option<(TaskResult, Spending)> {
        self.tell(format!("kept? {} {}", body.path, body.args[0]));
        // The second item's body ended in an earlier run.
        (body.args[0] == "1").then(|| (TaskResult::complete("one".into()), Spending::default()))
    }

    async fn body_ended(
        &self,
        body: tv_runtime::host::BodyId<'_>,
        result: TaskResult,
        _: &Spending,
    ) -> TaskResult {
        self.tell(format!("ended {} {}", body.path, body.args[0]));
        result
    }
}

#[test]
fn a_layer_that_keeps_places_is_told_where_each_call_and_body_comes_from_and_may_hand_a_body_back()
{
    let host = Places {
        inner: Scripts::new(|_| Answer::After(Duration::from_millis(10))),
        told: Mutex::default(),
    };
    let b = map_bundle(1);
    let xs = json!(["0", "1", "2"]);
    let ran = paused().block_on(Run::new(&b, 0, vec![xs], Limits::default()).on(&host));
    assert_eq!(ran.result.parsed_content, Some(json!(["0", "one", "2"])));
    let told = host.told.lock().expect("told").clone();
    let expected = [
        "kept? e0.0/ \"0\"",
        "call e0.0/1",
        "ended e0.0/ \"0\"",
        "kept? e0.1/ \"1\"",
        "kept? e0.2/ \"2\"",
        "call e0.2/1",
        "ended e0.2/ \"2\"",
    ];
    assert_eq!(told, expected);
}
