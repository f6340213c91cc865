//! Checking a bundle's bytes without holding its functions decoded: what `tvc` does to
//! every bundle it writes, so that compiling a large library never needs its whole
//! bundle in memory twice. The same checks as [`super::Bundle::from_bytes`], in the
//! same order of the payload, with the same errors: the header, then each part decoded
//! in turn. Functions and tasks are decoded twice, one at a time: first to find where
//! each list ends, keeping the names and parameter counts that calls are checked
//! against; then each verified against those, the constants and the counts of tasks
//! and files (which follow the functions).

use super::verify::{in_function, verify_entries, verify_function, verify_task, Around};
use super::{config, payload_of, BundleError, Const, Entry, Function, TaskMeta, VerifyError};
use bincode::de::read::Reader;
use bincode::de::{Decode, Decoder, DecoderImpl};
use bincode::error::DecodeError;
use std::sync::Arc;

/// What verifying a function needs of the bundle around it, without its functions.
struct Kept {
    constants: Vec<Const>,
    callees: Vec<(String, usize)>,
    tasks: usize,
    files: usize,
}

impl Around for Kept {
    fn constant(&self, i: u32) -> Option<&Const> {
        self.constants.get(i as usize)
    }
    fn tasks(&self) -> usize {
        self.tasks
    }
    fn files(&self) -> usize {
        self.files
    }
    fn callee(&self, f: u32) -> Option<(&str, usize)> {
        self.callees
            .get(f as usize)
            .map(|(name, params)| (name.as_str(), *params))
    }
}

/// The payload as bincode reads it, counting what has been read.
struct Tracked<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader for Tracked<'_> {
    fn read(&mut self, out: &mut [u8]) -> Result<(), DecodeError> {
        let left = self.bytes.len().saturating_sub(self.at);
        if out.len() > left {
            return Err(DecodeError::UnexpectedEnd {
                additional: out.len() - left,
            });
        }
        out.copy_from_slice(&self.bytes[self.at..self.at + out.len()]);
        self.at += out.len();
        Ok(())
    }
}

fn invalid(e: String) -> BundleError {
    BundleError::Invalid(VerifyError(e))
}

fn damaged(e: DecodeError) -> BundleError {
    BundleError::Decode(e.to_string())
}

/// Whether `bytes` is a bundle [`super::Bundle::from_bytes`] accepts, and if not, the
/// error it gives; memory for one function at a time besides the rest of the bundle.
/// One decoder reads the payload as the derived decoder of a bundle does, claiming
/// the same sizes against the same limit, so a bundle too large for one is too large
/// for the other.
pub fn verify_bytes(bytes: &[u8]) -> Result<(), BundleError> {
    let payload = payload_of(bytes)?;
    let mut d = DecoderImpl::new(
        Tracked {
            bytes: payload,
            at: 0,
        },
        config(),
        (),
    );
    let _version = String::decode(&mut d).map_err(damaged)?;
    let constants = Vec::<Const>::decode(&mut d).map_err(damaged)?;
    // What `Vec<Function>`'s decoder does, keeping only names and parameter counts.
    let count = u64::decode(&mut d).map_err(damaged)?;
    let count =
        usize::try_from(count).map_err(|_| damaged(DecodeError::OutsideUsizeRange(count)))?;
    d.claim_container_read::<Function>(count).map_err(damaged)?;
    let first = d.reader().at;
    let mut callees = Vec::new();
    for _ in 0..count {
        d.unclaim_bytes_read(std::mem::size_of::<Function>());
        let f = Function::decode(&mut d).map_err(damaged)?;
        callees.push((f.name, f.params.len()));
    }
    // The tasks too, one at a time: how many, and where they start.
    let tasks = u64::decode(&mut d).map_err(damaged)?;
    let tasks =
        usize::try_from(tasks).map_err(|_| damaged(DecodeError::OutsideUsizeRange(tasks)))?;
    d.claim_container_read::<Arc<TaskMeta>>(tasks)
        .map_err(damaged)?;
    let first_task = d.reader().at;
    for _ in 0..tasks {
        d.unclaim_bytes_read(std::mem::size_of::<Arc<TaskMeta>>());
        Arc::<TaskMeta>::decode(&mut d).map_err(damaged)?;
    }
    let entries = Vec::<Entry>::decode(&mut d).map_err(damaged)?;
    let files = Vec::<String>::decode(&mut d).map_err(damaged)?;
    let used = d.reader().at;
    if used != payload.len() {
        return Err(BundleError::Decode(format!(
            "{} bytes after the payload",
            payload.len() - used
        )));
    }
    let kept = Kept {
        constants,
        callees,
        tasks,
        files: files.len(),
    };
    // Read again, one at a time: each decoded the first time, so each decodes now.
    let mut d = DecoderImpl::new(
        Tracked {
            bytes: payload,
            at: first,
        },
        config(),
        (),
    );
    for i in 0..kept.callees.len() {
        let f = Function::decode(&mut d).map_err(damaged)?;
        verify_function(&kept, &f).map_err(|e| invalid(in_function(i, &f, e)))?;
    }
    verify_entries(kept.callees.len(), &entries).map_err(invalid)?;
    let mut d = DecoderImpl::new(
        Tracked {
            bytes: payload,
            at: first_task,
        },
        config(),
        (),
    );
    for _ in 0..tasks {
        let t = TaskMeta::decode(&mut d).map_err(damaged)?;
        verify_task(&t, kept.files).map_err(invalid)?;
    }
    Ok(())
}
