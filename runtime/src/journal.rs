//! The run journal: every host-call outcome is appended and synced to disk before the
//! machine goes on, so a run that crashed, was killed or lost power can be resumed
//! without paying again for the calls it had finished.
//!
//! The file is JSON lines: a [`Header`] naming the bundle (by SHA-256), the entry, the
//! arguments and the run's settings (never a key), then one [`Record`] per event. Calls
//! are named by their place in the run, not by when they finished: the root machine's
//! calls are `1`, `2`, ...; the branches of a gather that was the machine's call `n`
//! are `n.0/`, `n.1/`, ... and their calls `n.0/1`, and so on. Each machine runs
//! deterministically given its replies, so a resumed run asks the same calls under the
//! same names, whatever order concurrent branches finished in.

use crate::host::AsyncHost;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tv_vm::host::{HostError, HostReply, HostRequest, LlmReply, ScriptReply};
use tv_vm::limits::Limits;
use tv_vm::result::Reason;

/// The journal format; a reader refuses any other.
pub const FORMAT: u32 = 1;

/// The first line: what was run, and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub journal: u32,
    /// The bundle's path when the run started (absolute), and the hash of its bytes.
    pub bundle: PathBuf,
    pub bundle_sha256: String,
    pub entry: String,
    /// The entry's arguments by parameter name.
    pub args: Map<String, Value>,
    /// The run's settings that shape its replies. Keys stay in the environment.
    pub provider: String,
    pub model: Option<String>,
    pub cassette: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
    /// `--allow-read` paths, resolved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_read: Vec<PathBuf>,
    pub limits: Limits,
    /// How the run made its LLM calls; absent (read as `None`) from journals written
    /// before they were kept, whose resumes use the defaults.
    pub concurrency: Option<usize>,
    pub retries: Option<u32>,
    /// Seconds one attempt of an LLM call may take.
    pub request_timeout: Option<u64>,
    /// `--max-reply-bytes`, when it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_reply_bytes: Option<u64>,
    /// The run's default sampling settings (`--temperature`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<tv_vm::bundle::ModelSettings>,
    /// `--force-model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_model: Option<String>,
    /// `--json-mode` (or `TVM_JSON_MODE`) as the run resolved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_mode: Option<String>,
}

/// One event of the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Record {
    /// A script is about to run; its effects on the world may happen from now on.
    ScriptStarted {
        call: String,
        request: String,
        task: String,
        command: String,
    },
    /// A call's answer, which a resumed run is given instead of calling again.
    Answered {
        call: String,
        request: String,
        reply: Answer,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    Llm(LlmReply),
    Script(ScriptReply),
}

/// A script that was running when the run stopped.
#[derive(Clone, Debug, PartialEq)]
pub struct Interrupted {
    pub call: String,
    pub task: String,
    pub command: String,
}

/// An open journal: what it already holds, and the file new events go to.
pub struct Journal {
    path: PathBuf,
    /// Locked for as long as the journal is open (see [`lock_exclusive`]); opened to append.
    file: Mutex<Flock<File>>,
    answers: HashMap<String, (String, Answer)>,
    started: HashMap<String, Interrupted>,
    /// Calls answered from the journal, and calls made, in this process.
    replayed: AtomicUsize,
    made: AtomicUsize,
}

/// The SHA-256 of some bytes, in hex.
pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What identifies a request: the hash of all the machine put into it.
fn request_hash(r: &HostRequest) -> String {
    sha256(serde_json::to_string(r).unwrap_or_default().as_bytes())
}

impl Journal {
    /// Starts a journal for a new run: creates the file (an empty one left by a run that
    /// stopped before its header may be taken over), locks it, refuses one that holds a
    /// run already, and writes and syncs the header, so an unwritable path or a full disk
    /// is reported before any host call is made.
    pub fn create(path: &Path, header: &Header) -> Result<Journal, String> {
        let shown = path.display();
        let mut options = OpenOptions::new();
        options.read(true).append(true);
        // create-new: two runs starting at once cannot both create it.
        let file = match options.clone().create_new(true).open(path) {
            Err(e) if e.kind() == ErrorKind::AlreadyExists => options.open(path),
            opened => opened,
        };
        let file = file.map_err(|e| format!("cannot create the journal {shown}: {e}"))?;
        let file = lock_exclusive(path, file)?;
        // Checked under the lock: a run that held it may have written its header since.
        if file.metadata().is_ok_and(|m| m.is_file() && m.len() > 0) {
            return Err(format!(
                "the journal {shown} already exists: resume it with `tvm resume {shown}`, or remove it to start afresh"
            ));
        }
        let journal = Journal::over(path, file, HashMap::new(), HashMap::new());
        journal.append_line(&serde_json::to_string(header).map_err(|e| e.to_string())?)?;
        sync_parent(path);
        Ok(journal)
    }

    /// Opens a journal to resume it: its header, and a journal that answers what it
    /// holds. A last line cut short by the crash is dropped; any other damage is refused.
    pub fn open(path: &Path) -> Result<(Header, Journal), String> {
        let shown = path.display();
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("cannot open the journal {shown}: {e}"))?;
        // Locked before it is read, so that what it holds cannot change underneath.
        let mut file = lock_exclusive(path, file)?;
        let mut text = Vec::new();
        file.read_to_end(&mut text)
            .map_err(|e| format!("cannot read the journal {shown}: {e}"))?;
        let complete = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let lines = std::str::from_utf8(&text[..complete])
            .map_err(|_| format!("the journal {shown} is damaged: it is not UTF-8"))?;
        let mut lines = lines.lines().enumerate();
        let header: Header = match lines.next() {
            Some((_, l)) => serde_json::from_str(l)
                .map_err(|e| format!("{shown}:1: not a journal header: {e}"))?,
            None => {
                return Err(format!(
                    "the journal {shown} is empty: the run stopped before it began"
                ))
            }
        };
        if header.journal != FORMAT {
            return Err(format!(
                "{shown}: journal format {} is not the format {FORMAT} this tvm reads",
                header.journal
            ));
        }
        let mut answers = HashMap::new();
        let mut started = HashMap::new();
        for (i, line) in lines {
            let record: Record = serde_json::from_str(line)
                .map_err(|e| format!("{shown}:{}: the journal is damaged: {e}", i + 1))?;
            match record {
                Record::ScriptStarted {
                    call,
                    task,
                    command,
                    ..
                } => {
                    started.insert(
                        call.clone(),
                        Interrupted {
                            call,
                            task,
                            command,
                        },
                    );
                }
                Record::Answered {
                    call,
                    request,
                    reply,
                } => {
                    started.remove(&call);
                    answers.insert(call, (request, reply));
                }
            }
        }
        // Drop a torn last line, so new events start on a line of their own; appends
        // then go to the new end.
        file.set_len(complete as u64)
            .and_then(|()| file.seek(SeekFrom::End(0)).map(|_| ()))
            .map_err(|e| format!("cannot write the journal {shown}: {e}"))?;
        Ok((header, Journal::over(path, file, answers, started)))
    }

    fn over(
        path: &Path,
        file: Flock<File>,
        answers: HashMap<String, (String, Answer)>,
        started: HashMap<String, Interrupted>,
    ) -> Journal {
        Journal {
            path: path.to_path_buf(),
            file: Mutex::new(file),
            answers,
            started,
            replayed: AtomicUsize::new(0),
            made: AtomicUsize::new(0),
        }
    }

    /// Scripts that started and never finished: their effects may have happened.
    pub fn interrupted(&self) -> Vec<Interrupted> {
        let mut v: Vec<Interrupted> = self.started.values().cloned().collect();
        v.sort_by(|a, b| a.call.cmp(&b.call));
        v
    }

    /// Calls answered from the journal and calls made so far.
    pub fn counts(&self) -> (usize, usize) {
        (
            self.replayed.load(Ordering::Relaxed),
            self.made.load(Ordering::Relaxed),
        )
    }

    /// Answers call `call` from the journal, or makes it and journals its answer before
    /// returning it. Failed calls are not journaled: a resumed run tries them again.
    pub async fn call<H: AsyncHost>(
        &self,
        host: &H,
        call: &str,
        request: &HostRequest,
    ) -> HostReply {
        let hash = request_hash(request);
        if let Some((journaled, answer)) = self.answers.get(call) {
            if *journaled != hash {
                return halted(request, format!(
                    "the journal {} does not match this run: call {call} asks something else than it did (were the bundle, the arguments or the workspace changed?)",
                    self.path.display()
                ));
            }
            self.replayed.fetch_add(1, Ordering::Relaxed);
            return match answer.clone() {
                Answer::Llm(r) => HostReply::Llm(Ok(r)),
                Answer::Script(r) => HostReply::Script(Ok(r)),
            };
        }
        if let HostRequest::Script(s) = request {
            let started = Record::ScriptStarted {
                call: call.to_string(),
                request: hash.clone(),
                task: s.task.name.clone(),
                command: s.command.clone(),
            };
            if let Err(e) = self.append(&started) {
                return halted(request, e);
            }
        }
        self.made.fetch_add(1, Ordering::Relaxed);
        let reply = host.call(request).await;
        let answer = match &reply {
            HostReply::Llm(Ok(r)) => Answer::Llm(r.clone()),
            HostReply::Script(Ok(r)) => Answer::Script(r.clone()),
            _ => return reply,
        };
        let record = Record::Answered {
            call: call.to_string(),
            request: hash,
            reply: answer,
        };
        match self.append(&record) {
            Ok(()) => reply,
            Err(e) => halted(request, e),
        }
    }

    fn append(&self, record: &Record) -> Result<(), String> {
        self.append_line(&serde_json::to_string(record).map_err(|e| e.to_string())?)
    }

    /// Writes one line and syncs it to the disk before returning.
    fn append_line(&self, line: &str) -> Result<(), String> {
        let mut file = self
            .file
            .lock()
            .map_err(|_| "the journal writer failed earlier".to_string())?;
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        file.write_all(&bytes)
            .and_then(|()| file.sync_data())
            .map_err(|e| format!("cannot write the journal {}: {e}", self.path.display()))
    }
}

/// The run stops: its record of what happened can no longer be trusted or kept.
fn halted(request: &HostRequest, message: String) -> HostReply {
    let e = HostError::new(Reason::ExecutionHalted, message);
    match request {
        HostRequest::Llm(_) => HostReply::Llm(Err(e)),
        HostRequest::Script(_) => HostReply::Script(Err(e)),
    }
}

/// Syncs the folder that holds a new file, so the file itself survives a power loss.
fn sync_parent(path: &Path) {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let Ok(dir) = File::open(parent) {
        // Some file systems cannot sync a folder; the file's own sync still holds.
        let _ = dir.sync_all();
    }
}

/// Locks `file` (the journal at `path`) for this process, or says who holds it.
///
/// The journal's lock (DESIGN §18): one process at a time writes a journal. Two resumes
/// of one journal would each pay for the calls it lacks, run its scripts twice and
/// interleave their records into a journal neither could resume.
///
/// The lock is `flock(LOCK_EX | LOCK_NB)` on the journal's own open file, held for as
/// long as the run has the file open. The kernel drops it when the process ends, however
/// it ends, so a crash never leaves a stale lock behind, and nothing besides the journal
/// is written. Who holds it is read from `/proc/locks`, where the kernel lists each
/// lock with the holder's pid and the file's device and inode: always the true holder,
/// never a stale record.
fn lock_exclusive(path: &Path, mut file: File) -> Result<Flock<File>, String> {
    let shown = path.display();
    // A killed run's lock can outlive it by a moment: a script it was starting holds
    // the file until its `exec` closes it. So a busy lock is tried again for a second
    // before it is taken to be another run's.
    let mut tries = 0;
    let (file, errno) = loop {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => return Ok(locked),
            Err((back, Errno::EWOULDBLOCK)) if tries < 20 => {
                tries += 1;
                file = back;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(refused) => break refused,
        }
    };
    if errno != Errno::EWOULDBLOCK {
        return Err(format!("cannot lock the journal {shown}: {errno}"));
    }
    let holder = file
        .metadata()
        .ok()
        .and_then(|m| holder(m.dev(), m.ino()))
        .map_or_else(
            || "another process".to_owned(),
            |pid| format!("another process (pid {pid})"),
        );
    Err(format!(
        "the journal {shown} is in use by {holder}: a second run on it would repeat its \
         calls and scripts; wait for that run to end, or stop it, then resume"
    ))
}

/// The pid that holds a `flock` on the file with device `dev` and inode `ino`.
fn holder(dev: u64, ino: u64) -> Option<u32> {
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    // Linux's encoding of a device number into its major and minor parts.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let id = format!("{major:02x}:{minor:02x}:{ino}");
    // `1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF`; waiters are marked `->`.
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [_, "FLOCK", _, _, pid, file, ..] if *file == id => pid.parse().ok(),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            journal: FORMAT,
            bundle: PathBuf::from("digest.bin"),
            bundle_sha256: "ab".repeat(32),
            entry: "digest".into(),
            args: Map::new(),
            provider: "openai".into(),
            model: None,
            cassette: None,
            workspace: None,
            allow_read: vec![PathBuf::from("/srv/notes")],
            limits: Limits::default(),
            concurrency: Some(4),
            retries: Some(0),
            request_timeout: Some(30),
            max_reply_bytes: Some(1 << 20),
            sampling: Some(tv_vm::bundle::ModelSettings {
                temperature: Some(0.5),
                ..Default::default()
            }),
            force_model: Some("openai:local".into()),
            json_mode: Some("prompt".into()),
        }
    }

    #[test]
    fn a_header_reads_back_as_it_was_written() {
        let text = serde_json::to_string(&header()).expect("written");
        let back: Header = serde_json::from_str(&text).expect("read");
        assert_eq!(back, header());
    }

    #[test]
    fn a_header_from_before_the_call_settings_were_kept_reads_with_none_of_them() {
        let mut old = serde_json::to_value(header()).expect("written");
        for key in ["concurrency", "retries", "request_timeout"] {
            old.as_object_mut().expect("an object").remove(key);
        }
        let back: Header = serde_json::from_value(old).expect("read");
        assert_eq!(
            (back.concurrency, back.retries, back.request_timeout),
            (None, None, None)
        );
    }

    #[test]
    fn a_second_lock_on_a_locked_journal_is_refused_naming_the_holder() {
        let path = std::env::temp_dir().join(format!("tvm-lock-{}.jsonl", std::process::id()));
        let first = lock_exclusive(&path, File::create(&path).expect("created")).expect("locked");
        let again = File::open(&path).expect("opened");
        let err = lock_exclusive(&path, again).expect_err("held by the first");
        let me = format!("(pid {})", std::process::id());
        assert!(err.contains("is in use by") && err.contains(&me), "{err}");
        drop(first);
        let third = File::open(&path).expect("opened");
        assert!(
            lock_exclusive(&path, third).is_ok(),
            "free once the first is dropped"
        );
        let _ = std::fs::remove_file(&path);
    }
}
