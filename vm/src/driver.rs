//! The async driver: runs the machine, answers its host calls, and enforces the
//! wall-clock limit around them. The dispatch loop itself stays synchronous.

use crate::bundle::Bundle;
use crate::host::{Host, HostReply, HostRequest};
use crate::interp::{Step, Usage, Vm};
use crate::limits::Limits;
use crate::result::exhausted;
use serde_json::Value;
use std::sync::Mutex;
use std::time::Instant;

/// A host whose calls take time: providers, processes, files.
pub trait AsyncHost {
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
    let start = Instant::now();
    let wall = limits.wall_time;
    let mut vm = Vm::new(bundle, function, args, limits);
    loop {
        match vm.run() {
            Step::Done(result) => return (result, vm.usage()),
            Step::Host(request) => {
                let timed_out = || {
                    let used = start.elapsed().as_secs();
                    exhausted(
                        "time",
                        format!("the run took longer than {} s", wall.as_secs()),
                        used,
                        wall.as_secs(),
                    )
                };
                let Some(remaining) = wall.checked_sub(start.elapsed()) else {
                    return (timed_out(), vm.usage());
                };
                match tokio::time::timeout(remaining, host.call(&request)).await {
                    Ok(reply) => vm.resume(reply),
                    Err(_) => return (timed_out(), vm.usage()),
                }
            }
        }
    }
}
