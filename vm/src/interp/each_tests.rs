use super::*;
use crate::bundle::ValueType;
use crate::bundle::{Bundle, Const, Entry, Function, Loc, Param, TaskMeta, Verified};
use crate::host::{Host, HostReply, HostRequest, ScriptReply};
use crate::isa::Op::{
    self, Append, Call, Complete, EachEnd, EachMore, EachNext, EachStart, Items, Jump,
    JumpIfFailed, JumpIfFalse, Load, MakeArray, MapResult, Pop, Return, Script, Spawn, Store,
};
use crate::limits::Limits;
use std::sync::Arc;

/// Constants: 0 null, 1 "early", 2 "a", 3 "b".
fn constants() -> Vec<Const> {
    ["early", "a", "b"]
        .iter()
        .fold(vec![Const::Null], |mut c, s| {
            c.push(Const::Str(s.to_string()));
            c
        })
}

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

/// What a map over local `over` compiles to, starting at `at`, with `item` and
/// `index` in locals `item` and `item + 1`, calling `body(item, index)`: leaves the
/// map's result on the stack.
fn map_code(at: u32, over: u16, item: u16, n: u16, body: u32) -> Vec<Op> {
    let end = at + 15;
    vec![
        Load(over),
        Items,
        JumpIfFailed(end),
        EachStart(n),
        EachMore, // at + 4
        JumpIfFalse(at + 13),
        EachNext,
        Store(item + 1),
        Store(item),
        Load(item),
        Load(item + 1),
        Spawn(body, 2),
        Jump(at + 4),
        EachEnd, // at + 13
        MapResult,
    ]
}

/// `main(xs)` (function 0) maps `body(item, index)` (function 1) over `xs`, at most
/// `n` at once; the body runs its item as a script command (a host call), so the
/// map's value is its items as text. Function 2 is free for a test to fill in.
fn map_bundle(n: u16, extra: Function) -> Bundle {
    let mut main = map_code(0, 0, 1, n, 1);
    main.push(Return);
    let body = vec![Load(0), Op::Const(0), Script(0), Return];
    Bundle {
        compiler_version: "test".into(),
        constants: constants(),
        functions: vec![
            function("main", &["xs"], 3, main),
            function("body", &["item", "index"], 2, body),
            extra,
        ],
        tasks: vec![Arc::new(TaskMeta::named("run"))],
        entries: vec![Entry {
            name: "main".into(),
            function: 0,
        }],
        files: vec!["each.xml".into()],
    }
}

fn verified(b: Bundle) -> Verified {
    Verified::new(b).expect("the bundle verifies")
}

fn unused() -> Function {
    function("unused", &[], 0, vec![Op::Const(0), Return])
}

/// Answers each script with its command, and fails the command `fail`.
#[derive(Default)]
struct Scripts {
    commands: Vec<String>,
}

impl Host for Scripts {
    fn call(&mut self, request: &HostRequest) -> HostReply {
        let HostRequest::Script(s) = request else {
            panic!("only scripts are asked here");
        };
        self.commands.push(s.command.clone());
        HostReply::Script(Ok(ScriptReply {
            stdout: s.command.clone(),
            exit_code: i32::from(s.command == "fail"),
            ..ScriptReply::default()
        }))
    }
}

fn run(b: &Verified, xs: Value) -> (Value, Vec<String>) {
    let mut host = Scripts::default();
    let r = Vm::new(b, 0, vec![xs], Limits::default()).run_with(&mut host);
    (r.into(), host.commands)
}

/// Runs a machine as a driver would, but handing finished bodies back newest first,
/// and counts the bodies running at once; with the tags the bodies were started under.
fn run_counting(vm: &mut Vm, host: &mut Scripts) -> (Value, usize, Vec<BodyTag>) {
    let (mut running, mut most, mut tags) = (Vec::new(), 0, Vec::new());
    loop {
        match vm.run() {
            Step::Done(r) => return ((*r).into(), most, tags),
            Step::Host(request) => vm.resume(host.call(&request)),
            Step::Gather(_) => panic!("no gather here"),
            Step::Spawn(body) => {
                tags.push(body.tag);
                running.push(*body);
                most = most.max(running.len());
            }
            Step::Await => {
                let body = running.pop().expect("a body to wait for");
                let r = vm.branch(body.function, body.args).run_with(host);
                vm.body_ended(body.tag, r);
            }
        }
    }
}

#[test]
fn a_map_over_three_items_gives_their_bodies_values_in_order() {
    let (r, calls) = run(&verified(map_bundle(0, unused())), json!(["x", "y", "z"]));
    assert_eq!(r["status"], "COMPLETE");
    assert_eq!(r["parsedContent"], json!(["x", "y", "z"]));
    assert_eq!(r["content"], r#"["x","y","z"]"#);
    assert_eq!(calls, ["x", "y", "z"]);
}

#[test]
fn a_map_over_a_value_that_is_not_an_array_fails_naming_its_type() {
    let b = verified(map_bundle(0, unused()));
    for (xs, named, kind) in [
        (json!("x"), "a string", "string"),
        (json!(null), "null", "null"),
        (json!(3), "a number", "number"),
        (json!(true), "a boolean", "boolean"),
        (
            json!({"status": "COMPLETE", "content": "[]"}),
            "an object",
            "object",
        ),
    ] {
        let (r, calls) = run(&b, xs);
        let e = &r["notes"]["error"];
        assert_eq!(e["reason"], "input_validation_failure");
        let said = format!("the list to iterate over is {named}, not an array");
        assert_eq!(e["message"], said);
        assert_eq!(e["details"], json!({ "type": kind }));
        assert!(calls.is_empty());
    }
}

#[test]
fn a_map_over_an_empty_array_completes_with_an_empty_array() {
    let (r, calls) = run(&verified(map_bundle(0, unused())), json!([]));
    assert_eq!(r["status"], "COMPLETE");
    assert_eq!(r["parsedContent"], json!([]));
    assert_eq!(r["content"], "[]");
    assert!(calls.is_empty());
}

#[test]
fn a_failing_body_starts_no_further_body_and_fails_the_map_at_its_index() {
    let b = verified(map_bundle(1, unused()));
    let (r, calls) = run(&b, json!(["a", "fail", "c", "d", "e"]));
    assert_eq!(calls, ["a", "fail"], "no body starts after the failure");
    let e = &r["notes"]["error"];
    assert_eq!(e["reason"], "unexpected_error");
    assert_eq!(
        e["message"],
        "item 2 of 5 (index 1) of the map failed: the script exited with status 1"
    );
    let d = &e["details"];
    assert_eq!(
        (d["failedIndex"].clone(), d["totalItems"].clone()),
        (json!(1), json!(5))
    );
    let partial = d["partialResults"].as_array().expect("an array");
    assert_eq!(partial.len(), 5);
    assert_eq!(partial[0]["status"], "COMPLETE");
    assert_eq!(partial[0]["content"], "a");
    assert!(partial[1..].iter().all(Value::is_null), "{partial:?}");
    assert_eq!(d["itemError"]["message"], "the script exited with status 1");
}

#[test]
fn bodies_already_running_when_one_fails_are_waited_for_and_kept() {
    let b = verified(map_bundle(3, unused()));
    let mut host = Scripts::default();
    let mut vm = Vm::new(
        &b,
        0,
        vec![json!(["a", "b", "fail", "d"])],
        Limits::default(),
    );
    // Newest first: `fail` ends before `a` and `b`, which had started.
    let (r, _, tags) = run_counting(&mut vm, &mut host);
    assert_eq!(tags.len(), 3, "`d` never starts");
    let d = &r["notes"]["error"]["details"];
    assert_eq!(d["failedIndex"], 2);
    assert_eq!(d["partialResults"][0]["content"], "a");
    assert_eq!(d["partialResults"][1]["content"], "b");
    assert_eq!(d["partialResults"][3], Value::Null);
}

#[test]
fn no_more_bodies_run_at_once_than_the_iteration_allows() {
    for (n, most_expected) in [(1, 1), (2, 2), (4, 4), (9, 6)] {
        let b = verified(map_bundle(n, unused()));
        let mut host = Scripts::default();
        let xs = json!(["1", "2", "3", "4", "5", "6"]);
        let mut vm = Vm::new(&b, 0, vec![xs.clone()], Limits::default());
        let (r, most, tags) = run_counting(&mut vm, &mut host);
        assert_eq!(most, most_expected, "concurrency {n}");
        assert_eq!(
            r["parsedContent"], xs,
            "in item order whatever order they ended in"
        );
        let indices: Vec<u64> = tags.iter().map(|t| t.index).collect();
        assert_eq!(indices, [0, 1, 2, 3, 4, 5]);
        assert!(tags.iter().all(|t| t.each == 0));
    }
}

#[test]
fn no_concurrency_stated_is_the_limits_and_zero_there_still_runs_one_body_at_a_time() {
    for (limit, most_expected) in [(3, 3), (0, 1)] {
        let b = verified(map_bundle(0, unused()));
        let limits = Limits {
            concurrency: limit,
            ..Limits::default()
        };
        let mut vm = Vm::new(&b, 0, vec![json!(["1", "2", "3", "4"])], limits);
        let (r, most, _) = run_counting(&mut vm, &mut Scripts::default());
        assert_eq!(most, most_expected);
        assert_eq!(r["status"], "COMPLETE");
    }
}

#[test]
fn a_second_iteration_of_a_machine_gets_the_next_number() {
    // main maps twice over its list and returns the second map.
    let mut code = map_code(0, 0, 1, 0, 1);
    code.push(Pop);
    code.extend(map_code(16, 0, 1, 0, 1));
    code.push(Return);
    let mut b = map_bundle(0, unused());
    b.functions[0] = function("main", &["xs"], 3, code);
    let b = verified(b);
    let mut vm = Vm::new(&b, 0, vec![json!(["p", "q"])], Limits::default());
    let (r, _, tags) = run_counting(&mut vm, &mut Scripts::default());
    assert_eq!(r["parsedContent"], json!(["p", "q"]));
    let tags: Vec<(u64, u64)> = tags.iter().map(|t| (t.each, t.index)).collect();
    assert_eq!(tags, [(0, 0), (0, 1), (1, 0), (1, 1)]);
}

#[test]
fn iteration_instructions_out_of_place_are_faults_not_panics() {
    let cases: Vec<(Vec<Op>, &str)> = vec![
        (vec![EachMore, Complete, Return], "outside an iteration"),
        (vec![EachEnd, Return], "outside an iteration"),
        (
            vec![EachNext, Pop, Complete, Return],
            "outside an iteration",
        ),
        (
            vec![Op::Const(1), EachStart(0), Op::Const(0), Return],
            "not an array",
        ),
        (
            vec![Op::Const(1), MapResult, Return],
            "results are not an array",
        ),
        (
            vec![
                Op::Const(2),
                MakeArray(1),
                EachStart(1),
                Op::Const(2),
                Op::Const(0),
                Spawn(1, 2),
            ],
            "for no item",
        ),
    ];
    for (mut code, says) in cases {
        if code.last() != Some(&Return) {
            code.extend([Op::Const(0), Return]);
        }
        let mut b = map_bundle(0, unused());
        b.functions[0] = function("main", &["xs"], 3, code);
        let b = verified(b);
        let (r, _) = run(&b, json!([]));
        let message = r["notes"]["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{message}");
    }
}

#[test]
fn a_machine_that_waits_for_a_body_it_is_never_given_fails_instead_of_hanging() {
    let b = verified(map_bundle(1, unused()));
    let mut vm = Vm::new(&b, 0, vec![json!(["a", "b"])], Limits::default());
    assert!(matches!(vm.run(), Step::Spawn(_)));
    // The body is dropped: the synchronous runner has none to hand over.
    let r = Value::from(vm.run_with(&mut Scripts::default()));
    let message = r["notes"]["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("waits for a body, but none is running"),
        "{message}"
    );

    let mut vm = Vm::new(&b, 0, vec![json!(["a", "b"])], Limits::default());
    assert!(matches!(vm.run(), Step::Spawn(_)));
    assert_eq!(vm.run(), Step::Await);
    let Step::Done(r) = vm.run() else {
        panic!("run again without the body");
    };
    let message = &r.notes.error.as_ref().expect("an error").message;
    assert!(
        message.contains("before a body it waits for ended"),
        "{message}"
    );
}

#[test]
fn a_frame_that_returns_with_an_iteration_open_drops_it_and_its_bodies_results() {
    // `early()` starts a body for the first of two items, then returns without
    // waiting for it; main then maps as usual.
    let early = vec![
        Op::Const(2),
        Op::Const(3),
        MakeArray(2),
        EachStart(2),
        EachNext,
        Store(1),
        Store(0),
        Load(0),
        Load(1),
        Spawn(1, 2),
        Op::Const(1),
        Complete,
        Return,
    ];
    let mut code = vec![Call(2, 0), Pop];
    code.extend(map_code(2, 0, 1, 1, 1));
    code.push(Return);
    let mut b = map_bundle(1, function("early", &[], 2, early));
    b.functions[0] = function("main", &["xs"], 3, code);
    let b = verified(b);
    let (r, calls) = run(&b, json!(["x", "y"]));
    assert_eq!(r["parsedContent"], json!(["x", "y"]));
    assert_eq!(calls, ["a", "x", "y"]);
}

#[test]
fn a_reduction_pass_may_run_a_map_of_its_own_inside_the_frames_iteration() {
    // main(xs): an iteration without bodies over xs, each item mapping over xs.
    let mut code = vec![
        Load(0),
        EachStart(0),
        EachMore, // 2
        JumpIfFalse(24),
        EachNext,
        Pop,
        Pop,
    ];
    code.extend(map_code(7, 0, 1, 0, 1));
    code.extend([Append(3), Jump(2), EachEnd, Pop, Load(3), Complete, Return]);
    let mut b = map_bundle(0, unused());
    b.functions[0] = function("main", &["xs"], 4, code);
    let b = verified(b);
    let (r, calls) = run(&b, json!(["u", "v"]));
    assert_eq!(r["status"], "COMPLETE", "{r}");
    let maps = r["parsedContent"].as_array().expect("the maps' results");
    assert_eq!(maps.len(), 2);
    assert!(maps.iter().all(|m| m["parsedContent"] == json!(["u", "v"])));
    assert_eq!(calls, ["u", "v", "u", "v"]);
}

#[test]
fn a_body_result_nested_as_deep_as_a_value_may_ends_the_map_instead_of_nesting_deeper() {
    let b = verified(map_bundle(1, unused()));
    let mut vm = Vm::new(&b, 0, vec![json!(["a"])], Limits::default());
    let Step::Spawn(body) = vm.run() else {
        panic!("a body first");
    };
    assert_eq!(vm.run(), Step::Await);
    let deep = (0..crate::limits::MAX_NESTING).fold(json!(1), |v, _| json!([v]));
    let mut r = TaskResult::complete(String::new());
    r.parsed_content = Some(deep);
    vm.body_ended(body.tag, r);
    let Step::Done(r) = vm.run() else {
        panic!("the end");
    };
    let e = r.notes.error.as_ref().expect("a failure");
    assert!(
        e.message.contains("deeper than 512 levels"),
        "{}",
        e.message
    );
}
