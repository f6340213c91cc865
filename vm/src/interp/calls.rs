//! The machine's host-call side: asking for an LLM turn or a script run, taking the
//! reply back, and branching for gathered calls.

use crate::bundle::Output;
use crate::bundle::{Inherit, TaskMeta};
use crate::host::{Host, HostReply, HostRequest, LlmReply, LlmRequest, Message, ScriptRequest};
use crate::interp::{fault, Attempts, Body, Fault, RunsAs, Session, Step, Vm, Waiting};
use crate::outcome::{conform, script_result, with_criteria};
use crate::result::{Resource, TaskError, TaskResult};
use crate::shared::SharedText;
use crate::usage::Spent;
use serde_json::{Map, Value};
use std::collections::VecDeque;
use std::sync::Arc;
use tv_stdlib::values::{into_text, to_text};

impl<'b> Vm<'b> {
    /// A machine for one concurrent branch of this one: it shares the run's budget and
    /// counts its frames on top of this machine's.
    pub fn branch(&self, function: u32, args: Vec<Value>) -> Vm<'b> {
        let mut vm = Vm {
            bundle: self.bundle,
            limits: self.limits.clone(),
            frames: Vec::new(),
            stack: Vec::new(),
            budget: self.budget.clone(),
            instructions: 0,
            depth_offset: self.depth_offset + self.frames.len(),
            subtask_offset: self.subtask_offset
                + self.frames.iter().filter(|f| f.spawned.is_some()).count(),
            scope: self.frames.last().and_then(|f| f.scope.clone()),
            waiting: None,
            again: None,
            done: None,
            eaches: 0,
            spent: crate::limits::Spending::default(),
            ended_iteration: Spent::default(),
            items: self.items.clone(),
        };
        let argc = self
            .bundle
            .functions
            .get(function as usize)
            .map(|f| f.params.len());
        if argc != Some(args.len()) {
            let wrong = fault("a branch calls a function with the wrong arguments");
            vm.done = Some(Box::new(TaskResult::failed(wrong)));
        } else if let Err(fault) = vm.push_frame(function as usize, args) {
            vm.done = Some(Box::new(TaskResult::failed(fault)));
        }
        vm
    }

    /// Runs the machine to its end with a host that answers at once (tests, fuzzing);
    /// gathered branches run one after another, in order, and a body runs to its end
    /// as soon as it is started, its result handed over at the next wait. `tvm` uses
    /// the async driver, which runs them concurrently.
    pub fn run_with(&mut self, host: &mut impl Host) -> TaskResult {
        let mut ended = VecDeque::new();
        loop {
            match self.run() {
                Step::Done(r) => return *r,
                Step::Host(req) => {
                    let reply = host.call(&req);
                    self.resume(reply);
                }
                Step::Gather(calls) => {
                    let mut results = Vec::with_capacity(calls.len());
                    for (f, args) in calls {
                        let mut branch = self.branch(f, args);
                        results.push(branch.run_with(host));
                        self.add_spent(&branch.spent, false);
                    }
                    self.resume_gathered(results);
                }
                Step::Spawn(body) => {
                    let Body {
                        function,
                        args,
                        tag,
                    } = *body;
                    let mut machine = self.branch(function, args);
                    ended.push_back((tag, machine.run_with(host)));
                    self.add_spent(&machine.spent, false);
                }
                Step::Await => match ended.pop_front() {
                    Some((tag, r)) => self.body_ended(tag, r),
                    // The next `run` ends with this fault.
                    None => {
                        let stuck = fault("the machine waits for a body, but none is running");
                        self.waiting = None;
                        self.finish(TaskResult::failed(stuck));
                    }
                },
            }
        }
    }

    /// Resumes after the branches of a `Gather` finished, with their results in order.
    pub fn resume_gathered(&mut self, results: Vec<TaskResult>) {
        self.waiting = None;
        let results = results.into_iter().map(Value::from).collect();
        self.stack.push(Value::Array(results));
    }

    pub(crate) fn atomic(
        &mut self,
        task: u32,
        context: SharedText,
        query: Option<String>,
    ) -> Result<Step, Fault> {
        let prompt = into_text(self.pop()?);
        let system = into_text(self.pop()?);
        let (context, spawned) = self.in_subtask(task, context)?;
        // The host may hand the text back (an echo, a model quoting its prompt), so
        // building it counts like building any value.
        let size = context.len() + prompt.len() + system.len();
        self.charge((size + query.as_ref().map_or(0, String::len)) as u64)?;
        self.ask(Session {
            task,
            system,
            context,
            query,
            spawned,
            messages: Arc::new(vec![Message::user(prompt)]),
            attempts: Attempts::default(),
            start: self.spent.total,
        })
    }

    /// An atomic task inside a spawned subtask (DESIGN §19) runs with the template's
    /// settings as a subtask (else its own) and the request's merged over them; with an
    /// inherited context, the asking session's context comes before its own.
    fn in_subtask(
        &mut self,
        task: u32,
        context: SharedText,
    ) -> Result<(SharedText, Option<RunsAs>), Fault> {
        let Some(scope) = self.frames.last().and_then(|f| f.scope.clone()) else {
            return Ok((context, None));
        };
        let meta = self.task(task)?;
        let base = meta.spawned.as_ref().unwrap_or(&meta.context);
        let settings = scope.overrides.apply(base);
        let parent = &scope.parent_context;
        let context = if settings.inherit == Inherit::None || parent.is_empty() {
            context
        } else if context.is_empty() {
            parent.clone()
        } else {
            self.reserve((parent.len() + context.len() + 1) as u64)?;
            format!("{parent}\n{context}").into()
        };
        let runs_as = RunsAs {
            task: Arc::new(TaskMeta {
                context: settings,
                ..(*meta).clone()
            }),
            files: Arc::new(scope.overrides.files.clone()),
        };
        Ok((context, Some(runs_as)))
    }

    /// The next LLM call of a session, once the turn and token limits allow it.
    pub(crate) fn ask(&mut self, session: Session) -> Result<Step, Fault> {
        self.request(session).map(Step::Host)
    }

    /// [`Vm::ask`]'s request, the machine waiting for its reply.
    pub(crate) fn request(&mut self, session: Session) -> Result<Box<HostRequest>, Fault> {
        if self.budget.turns() >= self.limits.turns {
            return Err(TaskError::exhausted(
                Resource::Turns,
                "the run reached its limit of assistant turns",
                self.budget.turns(),
                self.limits.turns,
            )
            .into());
        }
        if self.budget.tokens() >= self.limits.tokens {
            return Err(TaskError::exhausted(
                Resource::Context,
                "the run reached its token limit",
                self.budget.tokens(),
                self.limits.tokens,
            )
            .into());
        }
        let (task, requested_files) = match &session.spawned {
            Some(runs_as) => (runs_as.task.clone(), runs_as.files.to_vec()),
            None => (self.task(session.task)?, Vec::new()),
        };
        let request = LlmRequest {
            model: task.model.clone(),
            settings: task.settings.clone(),
            task,
            system_prompt: session.system.clone(),
            messages: Arc::clone(&session.messages),
            context: session.context.clone(),
            query: session.query.clone(),
            requested_files,
        };
        self.waiting = Some(Waiting::Llm(Box::new(session)));
        Ok(Box::new(HostRequest::Llm(request)))
    }

    pub(crate) fn script(&mut self, task: u32) -> Result<Step, Fault> {
        let inputs = match self.pop()? {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let command = to_text(&self.pop()?);
        self.charge(command.len() as u64)?;
        let meta = self.task(task)?;
        self.waiting = Some(Waiting::Script(task));
        Ok(Step::Host(Box::new(HostRequest::Script(ScriptRequest {
            task: meta,
            command,
            inputs,
        }))))
    }

    /// Resumes after a host call with its reply, which becomes a task result (or,
    /// for a subtask request, a new frame).
    pub fn resume(&mut self, reply: HostReply) {
        let waiting = self.waiting.take();
        let task = match &waiting {
            Some(Waiting::Llm(s)) => Some(s.task),
            Some(Waiting::Script(t)) => Some(*t),
            _ => None,
        };
        // The result's usage is what was spent since its session began: every attempt,
        // re-ask and subtask of it (a script's: nothing).
        let start = match &waiting {
            Some(Waiting::Llm(s)) => s.start,
            _ => self.spent.total,
        };
        let mut r = match (waiting, reply) {
            (Some(Waiting::Llm(session)), HostReply::Llm(Ok(reply))) => {
                match self.replied(*session, reply) {
                    Some(r) => r,
                    None => return,
                }
            }
            (Some(Waiting::Script(t)), HostReply::Script(Ok(reply))) => {
                // Its stdout, again in the output, and read as JSON when it is typed.
                let output = self.bundle.tasks.get(t as usize).map(|m| &m.output);
                let copies = if matches!(output, Some(Output::Json(_))) {
                    3
                } else {
                    2
                };
                let size = reply.stdout.len() + reply.stderr.len();
                match self.reserve(copies * size as u64) {
                    Ok(()) => {
                        let mut r = script_result(reply);
                        if let (Some(output), false) = (output, r.is_failed()) {
                            // No re-ask: no model wrote it.
                            conform(&mut r, output);
                        }
                        r
                    }
                    Err(fault) => TaskResult::failed(fault),
                }
            }
            (Some(_), HostReply::Llm(Err(e)) | HostReply::Script(Err(e))) => {
                TaskResult::failed(e.into_task_error())
            }
            (Some(_), _) => {
                TaskResult::failed(fault("a host reply does not match the host call in flight"))
            }
            (None, _) => {
                let stray = fault("a host reply arrived with no host call in flight");
                self.done = Some(Box::new(TaskResult::failed(stray)));
                return;
            }
        };
        if let Some(meta) = task.and_then(|t| self.bundle.tasks.get(t as usize)) {
            with_criteria(&mut r, meta);
        }
        r.set_note("usage", self.spent.total.since(start).notes());
        self.stack.push(r.into());
    }

    /// The result of an LLM reply, or `None` when the reply started a subtask or a
    /// re-ask, or the machine could not keep it (the fault is on the stack then).
    fn replied(&mut self, session: Session, reply: LlmReply) -> Option<TaskResult> {
        let spent = Spent::of(&reply);
        // A host that names no model (a test's) still has its calls counted.
        let model = if reply.model.is_empty() {
            "unknown"
        } else {
            reply.model.as_str()
        };
        self.budget.spend(spent);
        self.spent.record(model, spent);
        // The reply is here already (the host caps its size); what the machine keeps
        // of it counts from now on.
        if let Err(fault) = self.reserve(reply.content.len() as u64) {
            self.stack.push(TaskResult::failed(fault).into());
            return None;
        }
        // A cut reply is not an answer, so it asks for no subtask either.
        if reply.truncated {
            return self.judged(session, reply);
        }
        match self.continuation(session, &reply) {
            Ok(Some(session)) => self.judged(session, reply),
            Ok(None) => None,
            Err(failure) => Some(*failure),
        }
    }
}
