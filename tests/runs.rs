//! Every program under `tests/fixtures/runs` is run, and what it asked of the world and
//! the result it gave are snapshotted in `snapshots/runs`: the fixtures show what each
//! element of a template does when it runs.
//!
//! A fixture's leading comment says what it shows; a line `args: {...}` in it gives the
//! run arguments. The host answers an LLM call whose prompt holds `REPLY ` with the rest
//! of that line, and any other with `echo: ` and the prompt's first line; a script whose
//! command starts with `fail ` exits with status 1 and the rest on stderr, any other
//! prints its command.

use serde_json::Value;
use tv_tests::{compile, each_fixture, fixtures, in_suite, rendered, run_with, Fixture};
use tv_vm::bundle::Verified;
use tv_vm::host::{Host, HostReply, HostRequest, LlmReply, LlmRequest, ScriptReply};
use tv_vm::limits::Limits;

#[derive(Default)]
struct RunHost {
    log: String,
}

impl Host for RunHost {
    fn call(&mut self, request: &HostRequest) -> HostReply {
        use std::fmt::Write as _;
        match request {
            HostRequest::Llm(r) => {
                let _ = writeln!(self.log, "llm {}", tv_vm::disasm::describe_task(&r.task));
                for (label, text) in [
                    ("system", r.system_prompt.as_str()),
                    ("context", &r.context.to_string()),
                    ("query", r.query.as_deref().unwrap_or("")),
                    ("prompt", prompt_of(r)),
                ] {
                    if !text.is_empty() {
                        let _ = writeln!(self.log, "  {label}: {text:?}");
                    }
                }
            }
            HostRequest::Script(s) => {
                let _ = writeln!(self.log, "script {:?}", s.command);
                if !s.inputs.is_empty() {
                    let inputs = serde_json::to_string(&s.inputs).unwrap_or_default();
                    let _ = writeln!(self.log, "  inputs: {inputs}");
                }
            }
        }
        answer(request)
    }
}

fn prompt_of(r: &LlmRequest) -> &str {
    r.messages.last().map_or("", |m| m.content.as_str())
}

/// What a run fixture's host answers (see the module's comment): `tests/requests.rs`
/// answers the same, so that its requests are the ones these snapshots show.
pub(crate) fn answer(request: &HostRequest) -> HostReply {
    match request {
        HostRequest::Llm(r) => {
            let prompt = prompt_of(r);
            let content = match prompt.split_once("REPLY ") {
                Some((_, rest)) => rest.lines().next().unwrap_or("").to_string(),
                None => format!("echo: {}", prompt.lines().next().unwrap_or("")),
            };
            HostReply::Llm(Ok(LlmReply {
                content,
                input_tokens: 10,
                output_tokens: 5,
                ..LlmReply::default()
            }))
        }
        HostRequest::Script(s) => {
            let reply = match s.command.strip_prefix("fail ") {
                Some(why) => ScriptReply {
                    stderr: why.to_string(),
                    exit_code: 1,
                    ..ScriptReply::default()
                },
                None => ScriptReply {
                    stdout: s.command.clone(),
                    ..ScriptReply::default()
                },
            };
            HostReply::Script(Ok(reply))
        }
    }
}

/// The run fixture `f`, compiled and verified (it must compile without errors).
pub(crate) fn verified(f: &Fixture) -> Verified {
    let c = compile(f);
    assert!(
        !c.diags.has_errors(),
        "{}:\n{}",
        f.path.display(),
        rendered(&c)
    );
    let (_, bundle) = tv_compiler::driver::compile(&c).expect("compiles");
    Verified::new(bundle).expect("verifies")
}

/// The `args: {...}` line of a fixture's leading comment.
pub(crate) fn args_of(source: &str) -> Value {
    source
        .lines()
        .find_map(|l| l.trim().strip_prefix("args:"))
        .map_or(Value::Object(Default::default()), |a| {
            serde_json::from_str(a.trim().trim_end_matches("-->").trim()).expect("args: is JSON")
        })
}

#[test]
fn every_run_fixture_asks_and_returns_what_its_snapshot_shows() {
    let all = fixtures("runs");
    assert!(all.len() >= 8, "only {} run fixtures", all.len());
    each_fixture("runs", |f| {
        let bundle = verified(f);
        let source = std::fs::read_to_string(&f.path).expect("fixture");
        let entry = bundle.entries.first().expect("an entry").name.clone();
        let mut host = RunHost::default();
        let result = run_with(
            &bundle,
            &entry,
            args_of(&source),
            Limits::default(),
            &mut host,
        );
        let shown = format!(
            "{}\nresult:\n{}",
            host.log,
            serde_json::to_string_pretty(&result).expect("json")
        );
        in_suite("runs", || insta::assert_snapshot!(f.name.clone(), shown));
    });
}
