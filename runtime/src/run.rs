//! A run of one entry point of a verified bundle on a host: what `tvm run`, `tvm
//! resume`, `tvm test`, a batch's rows and a worker's rows each start. The run's
//! result carries `notes.usage` (DESIGN §15): the LLM calls, tokens and cost of the
//! whole run, in total and by model, written here so that no caller can forget it.

use crate::driver;
use crate::host::AsyncHost;
use crate::journal::{Journal, Journaled};
use serde_json::Value;
use tokio::sync::watch;
use tv_vm::bundle::Verified;
use tv_vm::interp::{Usage, Vm};
use tv_vm::limits::Limits;
use tv_vm::result::TaskResult;

/// What to run: `entry` (a function of `program`) with `args`, one per parameter,
/// within `limits`.
pub struct Run<'a> {
    pub program: &'a Verified,
    pub entry: u32,
    pub args: Vec<Value>,
    pub limits: Limits,
    /// Every host call goes through it when there is one: answered from it when it
    /// holds the call, else made and written down before the run goes on.
    pub journal: Option<&'a Journal>,
    /// The run stops, as it stops at its wall-clock limit, once this holds `true`
    /// (`tvm run` sets it at Ctrl-C): every machine ends at its next wait with an
    /// `execution_halted` failure ([`INTERRUPTED`](crate::INTERRUPTED)), its calls in flight
    /// counted as abandoned.
    pub interrupt: Option<watch::Receiver<bool>>,
}

/// How a run ended: its result, with `notes.usage`, and what it used of its limits.
#[derive(Debug)]
pub struct Ran {
    pub result: TaskResult,
    pub usage: Usage,
}

impl Ran {
    /// The result of a run that could not start (its journal could not be opened):
    /// it used nothing, and says so in its `notes.usage` as every run's result does.
    pub(crate) fn unstarted(mut result: TaskResult) -> Ran {
        let usage = Usage::default();
        result.set_note("usage", usage.notes());
        Ran { result, usage }
    }
}

impl<'a> Run<'a> {
    /// A run without a journal, which only its limits stop.
    pub fn new(program: &'a Verified, entry: u32, args: Vec<Value>, limits: Limits) -> Self {
        Run {
            program,
            entry,
            args,
            limits,
            journal: None,
            interrupt: None,
        }
    }

    /// Runs to the final task result, every host call answered by `host`.
    pub async fn on<H: AsyncHost>(self, host: &H) -> Ran {
        let wall = self.limits.wall_time;
        let mut vm = Vm::new(self.program, self.entry, self.args, self.limits);
        let mut result = match self.journal {
            Some(journal) => {
                let host = Journaled { host, journal };
                driver::run(&mut vm, wall, &host, self.interrupt).await
            }
            None => driver::run(&mut vm, wall, host, self.interrupt).await,
        };
        let usage = vm.usage();
        result.set_note("usage", usage.notes());
        Ran { result, usage }
    }
}
