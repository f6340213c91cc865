//! The async driver: runs the machine, answers its host calls, runs gathered
//! branches and the bodies of its iterations concurrently, and enforces the
//! wall-clock limit and an interruption (Ctrl-C). The dispatch loop itself stays
//! synchronous.
//!
//! A run that stops before its end still counts what it spent: an LLM call in flight
//! when it stopped was sent, and the provider bills it, so it is counted as an
//! abandoned call whose tokens and cost are unknown; bodies that ended or were still
//! running hand over their spending before the run ends.

use crate::host::AsyncHost;
use crate::journal::{body_request, Journal};
use futures::future::{join_all, BoxFuture};
use futures::stream::{FuturesUnordered, StreamExt};
use futures::FutureExt;
use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tv_vm::host::{HostReply, HostRequest};
use tv_vm::interp::{Body, BodyTag, Step, Vm};
use tv_vm::limits::Spending;
use tv_vm::result::{Reason, Resource, TaskError, TaskResult};

/// Drives `vm` to its final task result (a run starts here through
/// [`crate::Run::on`]): every host call answered by `host`, through `journal` when
/// there is one; stopped at the wall-clock limit `wall`, or once `interrupt` holds
/// `true`.
pub(crate) async fn run<H: AsyncHost>(
    vm: &mut Vm<'_>,
    wall: Duration,
    host: &H,
    journal: Option<&Journal>,
    interrupt: Option<watch::Receiver<bool>>,
) -> TaskResult {
    let deadline = Deadline {
        start: Instant::now(),
        wall,
        interrupt,
    };
    let calls = Calls { host, journal };
    drive(vm, &calls, &deadline, String::new()).await
}

/// What a run says when Ctrl-C stopped it.
pub const INTERRUPTED: &str =
    "the run was interrupted (Ctrl-C); calls in flight were abandoned and are counted in notes.usage";

/// Where host calls go: the host, through the journal when there is one.
struct Calls<'h, H> {
    host: &'h H,
    journal: Option<&'h Journal>,
}

impl<H: AsyncHost> Calls<'_, H> {
    /// A body's result, journaled when it COMPLETED (a failed body runs again when
    /// the run is resumed). A journal that cannot be written stops the body.
    async fn body_ended(
        &self,
        name: &str,
        request: Option<String>,
        r: TaskResult,
        spent: &Spending,
    ) -> TaskResult {
        let (Some(journal), Some(request)) = (self.journal, request) else {
            return r;
        };
        if r.is_failed() {
            return r;
        }
        match journal.body_ended(name, &request, &r, spent).await {
            Ok(()) => r,
            Err(e) => TaskResult::failed(TaskError::failure(e.reason(), e.to_string())),
        }
    }

    /// Call `n` of the machine at `path`; the name is only spelled out for a journal.
    async fn call(&self, path: &str, n: u64, request: &HostRequest) -> HostReply {
        match self.journal {
            Some(j) => j.call(self.host, &format!("{path}{n}"), request).await,
            None => self.host.call(request).await,
        }
    }
}

/// When the machines of a run stop: at the wall-clock limit, or once interrupted.
struct Deadline {
    start: Instant,
    wall: Duration,
    interrupt: Option<watch::Receiver<bool>>,
}

/// Why a machine stopped before its end.
#[derive(Clone, Copy)]
enum Stopped {
    Time,
    Interrupted,
}

impl Deadline {
    /// Whether the run has to stop now.
    fn stopped(&self) -> Option<Stopped> {
        if self.interrupt.as_ref().is_some_and(|rx| *rx.borrow()) {
            return Some(Stopped::Interrupted);
        }
        let left = self.wall.checked_sub(self.start.elapsed());
        left.is_none().then_some(Stopped::Time)
    }

    /// `work`'s output, unless the run has to stop first.
    async fn wait<F: Future>(&self, work: F) -> Result<F::Output, Stopped> {
        if let Some(why) = self.stopped() {
            return Err(why);
        }
        let remaining = self.wall.saturating_sub(self.start.elapsed());
        let interrupted = async {
            if let Some(mut rx) = self.interrupt.clone() {
                if rx.wait_for(|stop| *stop).await.is_ok() {
                    return;
                }
            }
            // No interruption can come (none was asked for, or its sender is gone).
            std::future::pending::<()>().await;
        };
        tokio::select! {
            out = work => Ok(out),
            () = tokio::time::sleep(remaining) => Err(Stopped::Time),
            () = interrupted => Err(Stopped::Interrupted),
        }
    }

    fn result(&self, why: Stopped) -> TaskResult {
        match why {
            Stopped::Time => self.exceeded(),
            Stopped::Interrupted => {
                TaskResult::failed(TaskError::failure(Reason::ExecutionHalted, INTERRUPTED))
            }
        }
    }

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

/// Runs one machine (the root, a branch or a body) to its end. `path` names the
/// machine for the journal (see [`crate::journal`]): its host calls and gathers are
/// numbered in the order it makes them, its bodies by their tags.
fn drive<'a, 'b: 'a, H: AsyncHost>(
    vm: &'a mut Vm<'b>,
    via: &'a Calls<'a, H>,
    deadline: &'a Deadline,
    path: String,
) -> BoxFuture<'a, TaskResult> {
    async move {
        let mut made = 0u64;
        // Dropped with the machine's end: a body still running is of no use then.
        let mut bodies = Bodies::default();
        loop {
            if let Some(why) = deadline.stopped() {
                return bodies.stop(vm, deadline, why).await;
            }
            match vm.run() {
                Step::Done(result) => return *result,
                Step::Host(request) => {
                    made += 1;
                    let call = via.call(&path, made, &request);
                    futures::pin_mut!(call);
                    // A host that answers at once (echo, replay, the journal) needs no
                    // timer; only a call that has to wait is raced against the clock.
                    let reply = match call.as_mut().now_or_never() {
                        Some(reply) => reply,
                        None => match deadline.wait(bodies.alongside(call)).await {
                            Ok(reply) => reply,
                            Err(why) => {
                                if let HostRequest::Llm(r) = &*request {
                                    vm.abandon(&via.host.model_of(r));
                                }
                                return bodies.stop(vm, deadline, why).await;
                            }
                        },
                    };
                    vm.resume(reply);
                }
                Step::Gather(calls) => {
                    made += 1;
                    let mut branches: Vec<Vm> = calls
                        .into_iter()
                        .map(|(f, args)| vm.branch(f, args))
                        .collect();
                    let runs = branches
                        .iter_mut()
                        .enumerate()
                        .map(|(i, b)| drive(b, via, deadline, format!("{path}{made}.{i}/")));
                    let results = bodies.alongside(join_all(runs)).await;
                    for b in &branches {
                        vm.add_spent(b.spent(), false);
                    }
                    vm.resume_gathered(results);
                }
                Step::Spawn(body) => bodies.start(vm, *body, via, deadline, &path),
                Step::Await => {
                    let ended = match bodies.next(deadline).await {
                        Ok(Some(ended)) => ended,
                        Ok(None) => return stuck(),
                        Err(why) => return bodies.stop(vm, deadline, why).await,
                    };
                    vm.add_spent(&ended.spent, ended.from_journal);
                    vm.body_ended(ended.tag, ended.result);
                }
            }
        }
    }
    .boxed()
}

/// The machine waits for a body when none is running: a fault of the machine.
fn stuck() -> TaskResult {
    TaskResult::failed(TaskError::failure(
        Reason::UnexpectedError,
        "internal error: the machine waits for a body, but none is running",
    ))
}

/// A body that ended: its result and what it spent (`from_journal`: the journal gave
/// it back whole, so its spending is counted again for this run).
struct Ended {
    tag: BodyTag,
    result: TaskResult,
    spent: Spending,
    from_journal: bool,
}

/// The bodies a machine started ([`Step::Spawn`]) and has not been handed back yet.
#[derive(Default)]
struct Bodies<'a> {
    /// Made at the first body: most machines (a body's own, a branch) start none.
    running: Option<FuturesUnordered<BoxFuture<'a, Ended>>>,
    /// Bodies that ended, or whose result the journal held, in that order: handed to
    /// the machine one at each [`Step::Await`], before any other is waited for.
    ended: VecDeque<Ended>,
}

impl<'a> Bodies<'a> {
    /// Starts `body` as a machine of its own, named `{path}e{each}.{index}/`, unless
    /// the journal holds the result it ended with.
    fn start<'b: 'a, H: AsyncHost>(
        &mut self,
        vm: &Vm<'b>,
        body: Body,
        via: &'a Calls<'a, H>,
        deadline: &'a Deadline,
        path: &str,
    ) {
        let Body {
            function,
            args,
            tag,
        } = body;
        // Names and request hashes are for the journal only.
        let (name, request) = match via.journal {
            Some(_) => (
                format!("{path}e{}.{}/", tag.each, tag.index),
                Some(body_request(function, &args)),
            ),
            None => (String::new(), None),
        };
        if let Some((result, spent)) = via
            .journal
            .zip(request.as_deref())
            .and_then(|(j, request)| j.body(&name, request))
        {
            self.ended.push_back(Ended {
                tag,
                result,
                spent,
                from_journal: true,
            });
            return;
        }
        let mut machine = vm.branch(function, args);
        let running = self.running.get_or_insert_with(FuturesUnordered::new);
        running.push(
            async move {
                // Empty without a journal: cloning it allocates nothing.
                let r = drive(&mut machine, via, deadline, name.clone()).await;
                let spent = machine.take_spent();
                Ended {
                    tag,
                    result: via.body_ended(&name, request, r, &spent).await,
                    spent,
                    from_journal: false,
                }
            }
            .boxed(),
        );
    }

    /// Runs `work` to its end with the bodies running beside it: a body may hold what
    /// the work waits for (a provider's permit). Those that end meanwhile wait in
    /// `ended` for the machine's next [`Step::Await`].
    async fn alongside<F: Future>(&mut self, work: F) -> F::Output {
        futures::pin_mut!(work);
        poll_fn(|cx| {
            if let Some(running) = &mut self.running {
                while let Poll::Ready(Some(ended)) = running.poll_next_unpin(cx) {
                    self.ended.push_back(ended);
                }
            }
            work.as_mut().poll(cx)
        })
        .await
    }

    /// The next body to hand to the machine: the first that ended, else the first of
    /// those running to end; `None` when none is running.
    async fn next(&mut self, deadline: &Deadline) -> Result<Option<Ended>, Stopped> {
        if let Some(ended) = self.ended.pop_front() {
            return Ok(Some(ended));
        }
        let Some(running) = &mut self.running else {
            return Ok(None);
        };
        // A body that can end at once (echo, replay, the journal) needs no timer.
        if let Some(ended) = running.next().now_or_never() {
            return Ok(ended);
        }
        deadline.wait(running.next()).await
    }

    /// The machine stops (`why`) before its end: the bodies that ended hand over what
    /// they spent, and those still running, which stop for the same reason at once,
    /// are waited for, so that every call they made, abandoned ones included, counts.
    async fn stop(&mut self, vm: &mut Vm<'_>, deadline: &Deadline, why: Stopped) -> TaskResult {
        for ended in self.ended.drain(..) {
            vm.add_spent(&ended.spent, ended.from_journal);
        }
        if let Some(running) = &mut self.running {
            while let Some(ended) = running.next().await {
                vm.add_spent(&ended.spent, ended.from_journal);
            }
        }
        deadline.result(why)
    }
}
