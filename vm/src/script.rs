//! Scripts as real processes: `sh -c COMMAND` in its own process group, inputs in the
//! environment (`TVM_INPUT_<NAME>`) and as a JSON object on stdin, output captured up
//! to a cap, and the whole group killed when the script exits or its timeout passes.
//! The providers' API keys are not passed on.

use crate::host::{HostError, ScriptReply, ScriptRequest};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

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
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(&req.command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(dir) = &self.workdir {
            cmd.current_dir(dir);
        }
        // The providers' keys are tvm's, not the script's: a script printing its
        // environment (`env`, a stack trace) would put them into the journal, the trace
        // and the next prompt.
        cmd.env_remove(crate::providers::openai::KEY_VAR)
            .env_remove(crate::providers::anthropic::KEY_VAR);
        for (name, value) in &req.inputs {
            cmd.env(
                format!("TVM_INPUT_{}", name.to_uppercase()),
                tv_stdlib::values::to_text(value),
            );
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| error("unexpected_error", format!("cannot start the script: {e}")))?;
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
            // The script is done. What it left running in its group (`sleep 100 &`)
            // would hold the output pipes open and keep the run waiting for the
            // timeout, so it ends with the script. (While any of it lives, the group
            // keeps the leader's id, so the id cannot name someone else's group.)
            if let Some(pgid) = pgid {
                let _ = killpg(pgid, Signal::SIGKILL);
            }
            status
        };
        let work = async {
            let ((), out, err, status) = tokio::join!(feed, out, err, waited);
            (out, err, status)
        };
        match tokio::time::timeout(timeout, work).await {
            Ok((out, err, status)) => {
                let status = status
                    .map_err(|e| error("unexpected_error", format!("the script vanished: {e}")))?;
                let mut notes = Vec::new();
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
                // The whole group: a script's own children die with it.
                if let Some(pgid) = pgid {
                    let _ = killpg(pgid, Signal::SIGKILL);
                }
                let _ = child.wait().await;
                Err(error(
                    "execution_timeout",
                    format!(
                        "the script did not finish within {} s and was killed",
                        timeout.as_secs()
                    ),
                ))
            }
        }
    }
}

fn error(reason: &str, message: String) -> HostError {
    HostError {
        reason: reason.into(),
        message,
    }
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
