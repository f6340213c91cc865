//! The async driver: runs the machine, answers its host calls, runs gathered
//! branches concurrently, and enforces the wall-clock limit. The dispatch loop itself
//! stays synchronous.

use crate::bundle::Bundle;
use crate::host::{Host, HostReply, HostRequest};
use crate::interp::{Step, Usage, Vm};
use crate::limits::Limits;
use crate::result::exhausted;
use futures::future::{join_all, BoxFuture};
use futures::FutureExt;
use serde_json::Value;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A host whose calls take time: providers, processes, files.
pub trait AsyncHost: Sync {
    fn call(&self, request: &HostRequest) -> impl std::future::Future<Output = HostReply> + Send;
}

/// Any synchronous [`Host`] (the echo host, scripted test hosts) as an async one.
pub struct Blocking<H>(pub Mutex<H>);

impl<H: Host + Send> AsyncHost for Blocking<H> {
    async fn call(&self, request: &HostRequest) -> HostReply {
        match self.0.lock() {
            Ok(mut h) => h.call(request),
            Err(poisoned) => poisoned.into_inner().call(request),
        }
    }
}

/// Runs `function` of `bundle` to its final task result.
pub async fn run<H: AsyncHost>(
    bundle: &Bundle,
    function: u32,
    args: Vec<Value>,
    limits: Limits,
    host: &H,
) -> (Value, Usage) {
    let deadline = Deadline {
        start: Instant::now(),
        wall: limits.wall_time,
    };
    let mut vm = Vm::new(bundle, function, args, limits);
    let result = drive(&mut vm, host, deadline).await;
    (result, vm.usage())
}

#[derive(Clone, Copy)]
struct Deadline {
    start: Instant,
    wall: Duration,
}

impl Deadline {
    fn exceeded(&self) -> Value {
        let secs = self.wall.as_secs();
        exhausted(
            "time",
            format!("the run took longer than {secs} s"),
            self.start.elapsed().as_secs(),
            secs,
        )
    }
}

/// Runs one machine (the root or a branch) to its end.
fn drive<'a, 'b: 'a, H: AsyncHost>(
    vm: &'a mut Vm<'b>,
    host: &'a H,
    deadline: Deadline,
) -> BoxFuture<'a, Value> {
    async move {
        loop {
            let Some(remaining) = deadline.wall.checked_sub(deadline.start.elapsed()) else {
                return deadline.exceeded();
            };
            match vm.run() {
                Step::Done(result) => return result,
                Step::Host(request) => {
                    match tokio::time::timeout(remaining, host.call(&request)).await {
                        Ok(reply) => vm.resume(reply),
                        Err(_) => return deadline.exceeded(),
                    }
                }
                Step::Gather(calls) => {
                    let mut branches: Vec<Vm> = calls
                        .into_iter()
                        .map(|(f, args)| vm.branch(f, args))
                        .collect();
                    let runs = branches.iter_mut().map(|b| drive(b, host, deadline));
                    let results = join_all(runs).await;
                    vm.resume_gathered(results);
                }
            }
        }
    }
    .boxed()
}
