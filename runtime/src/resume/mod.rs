//! `tvm resume`: finishing a run from its journal. What is decided before anything
//! runs is here: that the bundle is the one the run used (by the SHA-256 of its
//! bytes), that no script was cut off in the middle unless the user says to run it
//! again, the entry point and arguments the journal names, and the run's settings.
//!
//! The settings are a stack of layers ([`RunConfig::overlay`]): the defaults, then what
//! the environment gives for a resume (no bound: the run's own are in its journal), then
//! the run's config as its journal keeps it, then the flags given now. So the
//! environment only fills what the run left unset, and a flag given now wins. The
//! limits are always the run's.
//!
//! Loading the bundle is the caller's (it may compile templates, which the runtime
//! does not depend on): [`Resume::open`] reads the journal, the caller loads the bundle
//! [`Resume::bundle`] names (or one given instead), then [`Resume::check`] takes it.

use crate::config::{Environment, Purpose, RunConfig};
use crate::host::RunHost;
use crate::journal::{Header, Journal, JournalError};
use serde_json::Value;
use std::path::{Path, PathBuf};
use tv_vm::bundle::Verified;
use tv_vm::limits::Limits;

/// Why a run cannot be resumed; each reads as `tvm` prints it.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// The journal cannot be read: missing, locked by a run, damaged, of another format;
    /// its kind says which.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The bundle's bytes are not those the run used.
    #[error(
        "the journal {} was written for a bundle with SHA-256 {}, but {} has {}: it was recompiled or replaced; \
         resume with the bundle the run used (--bundle FILE)",
        .journal.display(), short(.recorded), .bundle.display(), short(.found)
    )]
    BundleChanged {
        journal: PathBuf,
        /// The hash the journal names (untrusted text).
        recorded: String,
        bundle: PathBuf,
        found: String,
    },
    /// A script was running when the run stopped, and running it again was not asked.
    #[error(
        "the run stopped while the script of task `{task}` (call {call}) was running: {command}\n\
         it may have done part of its work; pass --rerun-scripts to run it again"
    )]
    ScriptCutOff {
        task: String,
        call: String,
        command: String,
    },
    /// The bundle has no entry point of the journal's name taking its arguments.
    #[error("the bundle has no entry point `{0}` taking the journal's arguments")]
    NoEntry(String),
    /// A setting of the environment is not one a run takes.
    #[error("{0}")]
    Setting(String),
}

/// The first 16 characters of a hash, for messages; a journal's is untrusted text, so
/// the cut is by characters, never inside one.
fn short(hash: &str) -> String {
    hash.chars().take(16).collect()
}

/// A journal opened to resume its run (and locked: no other run writes it meanwhile).
pub struct Resume {
    path: PathBuf,
    header: Header,
    journal: Journal,
}

/// A run ready to go on: the journal answering what it holds, the entry point and its
/// arguments, the settings and the limits.
pub struct Resumable {
    pub journal: Journal,
    pub header: Header,
    pub entry: u32,
    pub args: Vec<Value>,
    /// The run's settings: see the module's documentation.
    pub config: RunConfig,
    /// The run's own limits, its map concurrency among them.
    pub limits: Limits,
}

impl Resume {
    /// Opens the journal at `path` (see [`Journal::open`]).
    pub fn open(path: &Path) -> Result<Resume, ResumeError> {
        let (header, journal) = Journal::open(path)?;
        Ok(Resume {
            path: path.to_path_buf(),
            header,
            journal,
        })
    }

    /// What the journal's first line says of the run.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The bundle to load: `given` (`--bundle`), else where the run found it.
    pub fn bundle(&self, given: Option<&Path>) -> PathBuf {
        given.map_or_else(|| self.header.bundle.clone(), Path::to_path_buf)
    }

    /// Takes the loaded `bundle`, read from `path` with bytes hashing to `hash`, and
    /// settles the run: refused if the bundle is not the run's, if a script was cut
    /// off and `rerun_scripts` is not set, or if the entry point is gone. The settings
    /// are `env`'s for a resume under the run's, under `flags` (the command line's
    /// layer); unset, the provider is the one whose key `env` holds.
    pub fn check(
        self,
        bundle: &Verified,
        hash: &str,
        path: &Path,
        rerun_scripts: bool,
        env: &Environment,
        flags: RunConfig,
    ) -> Result<Resumable, ResumeError> {
        let Resume {
            path: journal_path,
            header,
            journal,
        } = self;
        if hash != header.bundle_sha256 {
            return Err(ResumeError::BundleChanged {
                journal: journal_path,
                recorded: header.bundle_sha256,
                bundle: path.to_path_buf(),
                found: hash.to_string(),
            });
        }
        if let Some(s) = journal.interrupted().into_iter().next() {
            if !rerun_scripts {
                return Err(ResumeError::ScriptCutOff {
                    task: s.task,
                    call: s.call,
                    command: s.command,
                });
            }
        }
        let (entry, args) = bundle
            .entry_args(&header.entry, &Value::Object(header.args.clone()))
            .ok_or_else(|| ResumeError::NoEntry(header.entry.clone()))?;
        let config = settings(&header, env, flags)?;
        let limits = header.config.machine_limits();
        Ok(Resumable {
            journal,
            header,
            entry,
            args,
            config,
            limits,
        })
    }
}

/// The resumed run's settings: the defaults, the environment's for a resume, the run's
/// as its journal keeps them, then `flags`; the provider, where none is named, the one
/// whose key is set.
pub fn settings(
    header: &Header,
    env: &Environment,
    flags: RunConfig,
) -> Result<RunConfig, ResumeError> {
    let environment = env.layer(Purpose::Resume).map_err(ResumeError::Setting)?;
    let mut config = RunConfig::defaults()
        .overlay(environment)
        .overlay(header.config.clone())
        .overlay(flags);
    if config.provider.choice.is_none() {
        config.provider.choice = RunHost::default_from_keys(env.vars());
    }
    Ok(config)
}

#[cfg(test)]
mod tests;
