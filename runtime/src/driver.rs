//! The async driver: runs the machine, answers its host calls, runs gathered
//! branches concurrently, and enforces the wall-clock limit. The dispatch loop itself
//! stays synchronous.

use crate::host::AsyncHost;
use crate::journal::Journal;
use futures::future::{join_all, BoxFuture};
use futures::FutureExt;
use serde_json::Value;
use std::time::{Duration, Instant};
use tv_vm::bundle::Bundle;
use tv_vm::host::{HostReply, HostRequest};
use tv_vm::interp::{Step, Usage, Vm};
use tv_vm::limits::Limits;
use tv_vm::result::{Resource, TaskError, TaskResult};

/// Runs `function` of `bundle` to its final task result.
pub async fn run<H: AsyncHost>(
    bundle: &Bundle,
    function: u32,
    args: Vec<Value>,
    limits: Limits,
    host: &H,
) -> (TaskResult, Usage) {
    run_journaled(bundle, function, args, limits, host, None).await
}

/// [`run`], with every host call going through `journal` when there is one: answered
/// from it when it holds the call, else made and written down before the run goes on.
pub async fn run_journaled<H: AsyncHost>(
    bundle: &Bundle,
    function: u32,
    args: Vec<Value>,
    limits: Limits,
    host: &H,
    journal: Option<&Journal>,
) -> (TaskResult, Usage) {
    let deadline = Deadline {
        start: Instant::now(),
        wall: limits.wall_time,
    };
    let calls = Calls { host, journal };
    let mut vm = Vm::new(bundle, function, args, limits);
    let result = drive(&mut vm, &calls, deadline, String::new()).await;
    (result, vm.usage())
}

/// Where host calls go: the host, through the journal when there is one.
struct Calls<'h, H> {
    host: &'h H,
    journal: Option<&'h Journal>,
}

impl<H: AsyncHost> Calls<'_, H> {
    /// Call `n` of the machine at `path`; the name is only spelled out for a journal.
    async fn call(&self, path: &str, n: u64, request: &HostRequest) -> HostReply {
        match self.journal {
            Some(j) => j.call(self.host, &format!("{path}{n}"), request).await,
            None => self.host.call(request).await,
        }
    }
}

#[derive(Clone, Copy)]
struct Deadline {
    start: Instant,
    wall: Duration,
}

impl Deadline {
    fn exceeded(&self) -> TaskResult {
        let secs = self.wall.as_secs();
        TaskResult::failed(TaskError::exhausted(
            Resource::Time,
            format!("the run took longer than {secs} s"),
            self.start.elapsed().as_secs(),
            secs,
        ))
    }
}

/// Runs one machine (the root or a branch) to its end. `path` names the machine for
/// the journal (see [`crate::journal`]); its calls are numbered in the order it makes
/// them.
fn drive<'a, 'b: 'a, H: AsyncHost>(
    vm: &'a mut Vm<'b>,
    via: &'a Calls<'a, H>,
    deadline: Deadline,
    path: String,
) -> BoxFuture<'a, TaskResult> {
    async move {
        let mut made = 0u64;
        loop {
            made += 1;
            let Some(remaining) = deadline.wall.checked_sub(deadline.start.elapsed()) else {
                return deadline.exceeded();
            };
            match vm.run() {
                Step::Done(result) => return *result,
                Step::Host(request) => {
                    let call = via.call(&path, made, &request);
                    futures::pin_mut!(call);
                    // A host that answers at once (echo, replay, the journal) needs no
                    // timer; only a call that has to wait is raced against the clock.
                    let reply = match call.as_mut().now_or_never() {
                        Some(reply) => reply,
                        None => match tokio::time::timeout(remaining, call).await {
                            Ok(reply) => reply,
                            Err(_) => return deadline.exceeded(),
                        },
                    };
                    vm.resume(reply);
                }
                Step::Gather(calls) => {
                    let mut branches: Vec<Vm> = calls
                        .into_iter()
                        .map(|(f, args)| vm.branch(f, args))
                        .collect();
                    let runs = branches
                        .iter_mut()
                        .enumerate()
                        .map(|(i, b)| drive(b, via, deadline, format!("{path}{made}.{i}/")));
                    let results = join_all(runs).await;
                    vm.resume_gathered(results);
                }
                Step::Spawn(_) | Step::Await => {
                    return TaskResult::failed(tv_vm::result::TaskError::failure(
                        tv_vm::result::Reason::UnexpectedError,
                        "iteration is not implemented yet",
                    ))
                }
            }
        }
    }
    .boxed()
}
