//! Scripts as real processes: `sh -c COMMAND` in its own process group, inputs in the
//! environment (`TVM_INPUT_<NAME>`, see `Inputs` for values too large for it) and as
//! a JSON object on stdin, output captured up to a cap, and everything the script
//! started killed when it exits or its timeout passes (see `kill_all`). The providers'
//! API keys are not passed on.

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tv_vm::host::{HostError, ScriptReply, ScriptRequest};
use tv_vm::result::Reason;

#[derive(Clone, Debug)]
pub struct ScriptRunner {
    /// Bytes kept of stdout and of stderr each; the rest is read and dropped.
    pub max_output: usize,
    /// For scripts whose task names no timeout.
    pub default_timeout: Duration,
    /// Where scripts run; the current directory when unset.
    pub workdir: Option<PathBuf>,
}

impl Default for ScriptRunner {
    fn default() -> Self {
        ScriptRunner {
            max_output: 1 << 20,
            default_timeout: Duration::from_secs(60),
            workdir: None,
        }
    }
}

impl ScriptRunner {
    pub async fn run(&self, req: &ScriptRequest) -> Result<ScriptReply, HostError> {
        let timeout = req
            .task
            .timeout
            .map_or(self.default_timeout, Duration::from_secs);
        if req.command.contains('\0') {
            return Err(error(
                Reason::UnexpectedError,
                "the command holds a NUL byte, which no shell command can: pass such a value \
                 as \"$TVM_INPUT_NAME\" (its file, $TVM_INPUT_NAME_FILE) or on stdin instead"
                    .into(),
            ));
        }
        let mut inputs =
            Inputs::prepare(&req.inputs).map_err(|e| error(Reason::UnexpectedError, e))?;
        let mut cmd = Command::new("sh");
        // A command past the kernel's limit for one argument (values quoted into it)
        // is run from a file.
        if req.command.len() > ENV_VALUE_MAX {
            let file = inputs
                .write("command", &req.command)
                .map_err(|e| error(Reason::UnexpectedError, e))?;
            cmd.arg(file);
        } else {
            cmd.arg("-c").arg(&req.command);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(dir) = &self.workdir {
            cmd.current_dir(dir);
        }
        // The providers' keys and the NATS token and password are tvm's, not the
        // script's: a script printing its environment (`env`, a stack trace) would put
        // them into the journal, the trace and the next prompt, and a row's script on a
        // worker is the publisher's code.
        for name in crate::config::env::SECRET_VARS {
            cmd.env_remove(name);
        }
        cmd.envs(inputs.env.iter().map(|(k, v)| (k, v)));
        let marker = marker();
        cmd.env(MARKER_VAR, &marker);
        let mut child = cmd.spawn().map_err(|e| {
            error(
                Reason::UnexpectedError,
                format!("cannot start the script: {e}"),
            )
        })?;
        let pgid = child.id().map(|id| Pid::from_raw(id as i32));
        let stdin = serde_json::Value::Object(req.inputs.clone()).to_string();
        let mut pipe_in = child.stdin.take();
        let feed = async move {
            if let Some(p) = pipe_in.as_mut() {
                // A script that does not read its stdin closes the pipe; that is fine.
                let _ = p.write_all(stdin.as_bytes()).await;
            }
            drop(pipe_in);
        };
        let out = capture(child.stdout.take(), self.max_output);
        let err = capture(child.stderr.take(), self.max_output);
        let waited = async {
            let status = child.wait().await;
            // The script is done. What it left running (`sleep 100 &`, in its group or
            // not) would hold the output pipes open and keep the run waiting for the
            // timeout, so it ends with the script. (While any of it lives, the group
            // keeps the leader's id, so the id cannot name someone else's group; the
            // leader is reaped, so its pid is not used.)
            end_all(pgid, None, &marker).await;
            status
        };
        let work = async {
            let ((), out, err, status) = tokio::join!(feed, out, err, waited);
            (out, err, status)
        };
        match tokio::time::timeout(timeout, work).await {
            Ok((out, err, status)) => {
                let status = status.map_err(|e| {
                    error(Reason::UnexpectedError, format!("the script vanished: {e}"))
                })?;
                let mut notes = std::mem::take(&mut inputs.notes);
                let stdout = out.into_text("stdout", self.max_output, &mut notes);
                let stderr = err.into_text("stderr", self.max_output, &mut notes);
                Ok(ScriptReply {
                    stdout,
                    stderr,
                    exit_code: exit_code(status),
                    notes,
                })
            }
            Err(_) => {
                // Everything it started: a script's own children die with it. The
                // script is not reaped yet, so its pid still names it.
                end_all(pgid, pgid, &marker).await;
                let _ = child.wait().await;
                Err(error(
                    Reason::ExecutionTimeout,
                    format!(
                        "the script did not finish within {} s and was killed",
                        timeout.as_secs()
                    ),
                ))
            }
        }
    }
}

/// [`kill_all`] off the async threads: it reads `/proc` and waits between rounds.
async fn end_all(group: Option<Pid>, leader: Option<Pid>, marker: &str) {
    let marker = marker.to_owned();
    let _ = tokio::task::spawn_blocking(move || kill_all(group, leader, &marker)).await;
}

fn error(reason: Reason, message: String) -> HostError {
    HostError::new(reason, message)
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(-1)
}

struct Captured {
    bytes: Vec<u8>,
    total: usize,
}

impl Captured {
    fn into_text(mut self, stream: &str, cap: usize, notes: &mut Vec<String>) -> String {
        if self.total > cap {
            notes.push(format!("{stream} cut at {cap} of {} bytes", self.total));
            // A cut inside a character leaves the start of one: that is the cut, not
            // bytes that are not UTF-8, so it goes rather than becoming U+FFFD.
            if let Err(e) = std::str::from_utf8(&self.bytes) {
                if e.error_len().is_none() {
                    self.bytes.truncate(e.valid_up_to());
                }
            }
        }
        match String::from_utf8(self.bytes) {
            Ok(s) => s,
            Err(e) => {
                notes.push(format!(
                    "{stream} is not UTF-8; invalid bytes were replaced"
                ));
                String::from_utf8_lossy(e.as_bytes()).into_owned()
            }
        }
    }
}

/// Reads a stream to its end, keeping the first `cap` bytes.
async fn capture(stream: Option<impl AsyncRead + Unpin>, cap: usize) -> Captured {
    let mut kept = Vec::new();
    let mut total = 0;
    let Some(mut s) = stream else {
        return Captured { bytes: kept, total };
    };
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = s.read(&mut buf).await {
        if n == 0 {
            break;
        }
        total += n;
        let room = cap.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
    Captured { bytes: kept, total }
}

// How a script's inputs reach it. Each is in the environment as `TVM_INPUT_<NAME>`, and
// all are on stdin as one JSON object. The kernel refuses to start a program with an
// environment string over 128 KiB (MAX_ARG_STRLEN) or all of them over a few MiB, and no
// environment string can hold a NUL byte: such a value would stop the script from
// starting at all. So a value over [`ENV_VALUE_MAX`], one that would take the inputs in
// the environment past [`ENV_TOTAL_MAX`], or one that holds a NUL, is left out of the
// environment and written to a file instead, named by `TVM_INPUT_<NAME>_FILE` (readable
// by this user only, removed when the script ends); stdin has it as always.

/// The largest value passed in the environment.
pub(crate) const ENV_VALUE_MAX: usize = 64 << 10;
/// The most bytes of input values passed in the environment, all together.
pub(crate) const ENV_TOTAL_MAX: usize = 512 << 10;

/// Input values as the script's environment and files.
#[derive(Default)]
struct Inputs {
    /// Variables to set.
    env: Vec<(String, String)>,
    /// Files written, removed on drop.
    files: Vec<PathBuf>,
    /// What the script should know about where its inputs went.
    notes: Vec<String>,
}

impl Inputs {
    fn prepare(inputs: &Map<String, Value>) -> Result<Inputs, String> {
        let mut out = Inputs::default();
        let mut total = 0;
        for (name, value) in inputs {
            let var = format!("TVM_INPUT_{}", name.to_uppercase());
            let text = tv_stdlib::values::to_text(value);
            let fits = text.len() <= ENV_VALUE_MAX && total + text.len() <= ENV_TOTAL_MAX;
            if fits && !text.contains('\0') {
                total += text.len();
                out.env.push((var, text));
                continue;
            }
            let path = out.write(name, &text)?;
            let why = if text.contains('\0') {
                "holds a NUL byte".to_owned()
            } else {
                format!("has {} bytes", text.len())
            };
            out.notes.push(format!(
                "input `{name}` {why}, too much for the environment: it is not in ${var} \
                 but in the file ${var}_FILE, and on stdin"
            ));
            out.env
                .push((format!("{var}_FILE"), path.display().to_string()));
        }
        Ok(out)
    }

    /// Writes one value (or a command too long for an argument) to a new file of this
    /// user's only.
    fn write(&mut self, name: &str, text: &str) -> Result<PathBuf, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let safe: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let path =
            std::env::temp_dir().join(format!("tvm-input-{}-{n}-{safe}", std::process::id()));
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("cannot write input `{name}` to {}: {e}", path.display()))?;
        self.files.push(path.clone());
        file.write_all(text.as_bytes())
            .map_err(|e| format!("cannot write input `{name}` to {}: {e}", path.display()))?;
        Ok(path)
    }
}

impl Drop for Inputs {
    fn drop(&mut self) {
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
    }
}

// Ending everything a script started. Killing its process group is not enough: a
// script can leave it (`setsid sleep 1000 &`, a daemon that double-forks), and what
// it left would outlive the timeout and the run. So each script's environment carries
// a marker ([`MARKER_VAR`]) that its descendants inherit, and at its end every process
// that carries the marker, or descends from the script while it is alive, is killed.
//
// What escapes: a process that both leaves the group and clears its environment
// (`env -i setsid ...`) after its parent has died. A script is code the user chose to
// run; this bounds what it leaves by accident or by habit, not a determined escape.

/// The variable that marks a script's processes; its value names one script run.
const MARKER_VAR: &str = "TVM_SCRIPT_RUN";

/// Rounds of looking and killing: a process may fork while the others die.
const ROUNDS: usize = 20;

/// A value for [`MARKER_VAR`] no other script run of any tvm shares.
fn marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

/// Kills the script's group and every process marked with `marker`; and, when `leader`
/// is given (the script's own process, not yet reaped, so its pid names it still), every
/// descendant of it.
fn kill_all(group: Option<Pid>, leader: Option<Pid>, marker: &str) {
    if let Some(g) = group {
        let _ = killpg(g, Signal::SIGKILL);
    }
    let needle = format!("{MARKER_VAR}={marker}");
    let me = std::process::id() as i32;
    for _ in 0..ROUNDS {
        let found = survivors(leader, needle.as_bytes(), me);
        if found.is_empty() {
            return;
        }
        for pid in found {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Live processes (not zombies) that descend from `leader` or carry `needle` in their
/// environment, other than this one.
fn survivors(leader: Option<Pid>, needle: &[u8], me: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    let mut found = HashSet::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Some((state, ppid)) = stat(pid) else {
            continue;
        };
        if pid == me || state == 'Z' || state == 'X' {
            continue;
        }
        if leader.is_some_and(|l| l.as_raw() == pid) {
            found.insert(pid);
        }
        children.entry(ppid).or_default().push(pid);
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if environ.split(|&b| b == 0).any(|var| var == needle) {
            found.insert(pid);
        }
    }
    let mut stack: Vec<i32> = leader.map(Pid::as_raw).into_iter().collect();
    stack.extend(found.iter().copied());
    while let Some(p) = stack.pop() {
        for &c in children.get(&p).map_or(&[][..], Vec::as_slice) {
            if found.insert(c) {
                stack.push(c);
            }
        }
    }
    found.remove(&me);
    found.into_iter().collect()
}

/// A process's state letter and parent, from `/proc/PID/stat` (the name before them
/// is in parentheses and may hold spaces or parentheses itself).
fn stat(pid: i32) -> Option<(char, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}
