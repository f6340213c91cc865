//! The reply cache (DESIGN §15, `--cache DIR`): provider replies on disk, addressed by
//! the request that was sent. The transport describes each request exactly as sent
//! (provider, endpoint, body; never headers, so never a key) and asks for its `CacheKey`;
//! a hit is answered without sending, a miss is sent and its reply `put`.
//!
//! An entry is `DIR/v1/<first 2 hex>/<64 hex>.json`, one JSON object written in one
//! fixed form: `{"tvmReplyCache":1,"key":"<hex>","crc32":"<8 hex>","reply":<reply>}`.
//! The checksum is over the reply's bytes as they stand in the file, so a reader checks
//! them without re-encoding the reply, and an entry changed after it was written (by hand,
//! by a flipped bit, by a torn write) is reported rather than replayed.

use crate::digest::Sha256Hex;
use crate::files::{self, FileError};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The largest entry read or written. Replies are capped at 8 MiB by default while they
/// stream in (`--max-reply-bytes`); this leaves room for a raised cap and stops a stray
/// huge file from being read into memory.
pub(crate) const MAX_ENTRY_BYTES: u64 = files::CACHE_ENTRY.max;

/// The layout's folder: a later layout gets a folder of its own instead of misreading
/// this one's entries.
const LAYOUT: &str = "v1";

const HEAD: &str = "{\"tvmReplyCache\":1,\"key\":\"";
const CHECKSUM: &str = "\",\"crc32\":\"";
const REPLY: &str = "\",\"reply\":";
const TAIL: &str = "}\n";
const KEY_LEN: usize = 64;
const FRAME_LEN: usize = HEAD.len() + KEY_LEN + CHECKSUM.len() + 8 + REPLY.len() + TAIL.len();

/// The key of one request's occurrence: 64 lowercase hex characters, made only by
/// `ReplyCache::key`, so that it is always a safe file name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey(String);

impl CacheKey {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, PartialEq)]
pub enum Lookup {
    Hit(Value),
    Miss,
    /// The entry exists but cannot be used (its kind: `Read`, `Damaged` or `TooLarge`):
    /// a warning naming the file and what is wrong, and the call is made.
    Damaged(CacheError),
}

/// Why the reply cache could not be opened, an entry read or a reply stored, as a value
/// callers branch on; its message names the folder or entry and what is wrong, as `tvm`
/// prints it.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct CacheError {
    kind: CacheKind,
    message: String,
    /// The file system's error, whose words the message already holds.
    #[source]
    source: Option<io::Error>,
}

/// What went wrong, for the code that decides what to do about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheKind {
    /// The cache's folder is not one, or cannot be made.
    Open,
    /// An entry is there but cannot be read (not a regular file, the file system's
    /// error).
    Read,
    /// An entry's bytes are not an entry of the key asked: cut short, changed since it
    /// was written, another key's, another layout's.
    Damaged,
    /// An entry, or a reply to store, is larger than an entry may be.
    TooLarge,
    /// A reply could not be stored.
    Write,
}

impl CacheError {
    fn new(kind: CacheKind, message: impl Into<String>) -> CacheError {
        CacheError {
            kind,
            message: message.into(),
            source: None,
        }
    }

    fn because(mut self, source: io::Error) -> CacheError {
        self.source = Some(source);
        self
    }

    pub fn kind(&self) -> CacheKind {
        self.kind
    }
}

/// Two failures are the same when they are of one kind and say the same (the file
/// system's errors have no equality of their own).
impl PartialEq for CacheError {
    fn eq(&self, other: &CacheError) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}

pub struct ReplyCache {
    dir: PathBuf,
    /// `dir/v1`.
    entries: PathBuf,
    /// How often this run asked about each request (by the SHA-256 of its text).
    asked: Mutex<HashMap<[u8; 32], u64>>,
}

impl ReplyCache {
    /// Opens the cache in `dir`, creating it (and its parents) when it does not exist.
    pub fn open(dir: &Path) -> Result<ReplyCache, CacheError> {
        let name = dir.display();
        if dir.exists() && !dir.is_dir() {
            let message = format!("the cache directory {name} is a file");
            return Err(CacheError::new(CacheKind::Open, message));
        }
        let entries = dir.join(LAYOUT);
        fs::create_dir_all(&entries).map_err(|e| {
            let message = format!("cannot create the cache directory {name}: {e}");
            CacheError::new(CacheKind::Open, message).because(e)
        })?;
        Ok(ReplyCache {
            dir: dir.to_path_buf(),
            entries,
            asked: Mutex::new(HashMap::new()),
        })
    }

    /// The key of the NEXT occurrence of `request` in this run: the SHA-256 of the
    /// request's canonical text (`serde_json::to_string`), a newline and the occurrence
    /// number in decimal (0 the first time this cache object is asked about this exact
    /// request, 1 the second, ...), so that a workflow asking the same question three
    /// times keeps three samples, and a second run finds them in the same order. The
    /// newline cannot be confused with the text: compact JSON has none outside strings,
    /// and strings escape theirs.
    pub fn key(&self, request: &Value) -> CacheKey {
        // The request text is written straight into the hash, never built whole.
        let mut text = Sha256Hex::new();
        // Writing into a hash cannot fail, and a `Value` always serializes.
        let _ = serde_json::to_writer(&mut text, request);
        let mut key = text.clone();
        let request_hash = text.bytes();
        let occurrence = {
            // A panic elsewhere while holding the lock leaves the counts usable.
            let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
            let count = asked.entry(request_hash).or_insert(0);
            *count += 1;
            *count - 1
        };
        key.update(format!("\n{occurrence}"));
        CacheKey(key.hex())
    }

    fn path(&self, key: &CacheKey) -> PathBuf {
        self.entries
            .join(&key.0[..2])
            .join(format!("{}.json", key.0))
    }

    pub fn get(&self, key: &CacheKey) -> Lookup {
        let path = self.path(key);
        let name = path.display();
        let damaged = |kind, why: String| {
            let message = format!("the reply cache entry {name} is damaged: {why}");
            CacheError::new(kind, message)
        };
        let bytes = match files::read(&path, files::CACHE_ENTRY) {
            Ok(bytes) => bytes,
            Err(FileError::Missing) => return Lookup::Miss,
            Err(FileError::TooLarge(_)) => {
                let why = "it is larger than the 16 MiB an entry may have";
                return Lookup::Damaged(damaged(CacheKind::TooLarge, why.into()));
            }
            Err(e) => {
                let read = damaged(CacheKind::Read, format!("it {e}"));
                return Lookup::Damaged(match e {
                    FileError::Io(e) => read.because(e),
                    _ => read,
                });
            }
        };
        match decode(key, &bytes) {
            Ok(reply) => Lookup::Hit(reply),
            Err(why) => Lookup::Damaged(damaged(CacheKind::Damaged, why)),
        }
    }

    /// Stores `reply` under `key`. The entry is written to a temporary file of its own in
    /// the entry's folder and renamed over the final name, so readers and crashes see the
    /// old entry or the new one, never part of one; two processes storing the same key
    /// both succeed, and the last rename stays.
    pub fn put(&self, key: &CacheKey, reply: &Value) -> Result<(), CacheError> {
        let path = self.path(key);
        let text = serde_json::to_string(reply).map_err(|e| {
            CacheError::new(CacheKind::Write, format!("cannot encode the reply: {e}"))
        })?;
        if (FRAME_LEN + text.len()) as u64 > MAX_ENTRY_BYTES {
            return Err(CacheError::new(CacheKind::TooLarge, format!(
                "a reply of {} bytes is too large for the reply cache (at most {MAX_ENTRY_BYTES} bytes an entry); it is not stored",
                text.len()
            )));
        }
        let crc = crc32fast::hash(text.as_bytes());
        let entry = format!("{HEAD}{key}{CHECKSUM}{crc:08x}{REPLY}{text}{TAIL}");

        let folder = path.parent().unwrap_or(&self.entries);
        fs::create_dir_all(folder).map_err(|e| {
            let message = format!("cannot create the cache folder {}: {e}", folder.display());
            CacheError::new(CacheKind::Write, message).because(e)
        })?;
        let (temp, mut file) = temporary(folder, key)?;
        // Synced before the rename: after a power loss the final name holds the whole
        // entry or is absent (and a torn entry would still fail its checksum).
        let written = file
            .write_all(entry.as_bytes())
            .and_then(|()| file.sync_data());
        drop(file);
        written
            .and_then(|()| fs::rename(&temp, &path))
            .map_err(|e| {
                let _ = fs::remove_file(&temp);
                let message = format!("cannot write the reply cache entry {}: {e}", path.display());
                CacheError::new(CacheKind::Write, message).because(e)
            })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// A new temporary file next to the entry, named after the key, this process and a
/// counter, and created with create-new so that no two writers ever share one (a file
/// left by a crashed process of the same id is stepped over).
fn temporary(folder: &Path, key: &CacheKey) -> Result<(PathBuf, File), CacheError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut attempts = 0;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let temp = folder.join(format!(".{}.{}.{n}.tmp", key.0, std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 100 => attempts += 1,
            Err(e) => {
                let message = format!(
                    "cannot create a temporary file in the cache folder {}: {e}",
                    folder.display()
                );
                return Err(CacheError::new(CacheKind::Write, message).because(e));
            }
        }
    }
}

/// The reply of an entry in the form `put` writes, or what is wrong with it.
fn decode(key: &CacheKey, bytes: &[u8]) -> Result<Value, String> {
    let short = || "it ends too early (a write was cut short)".to_string();
    let foreign = || "it is not an entry of this cache's version 1 layout".to_string();
    let expect = |part: &'static str, at: &[u8]| -> Result<(), String> {
        match at.get(..part.len()) {
            Some(found) if found == part.as_bytes() => Ok(()),
            Some(_) => Err(foreign()),
            None if part.as_bytes().starts_with(at) => Err(short()),
            None => Err(foreign()),
        }
    };
    expect(HEAD, bytes)?;
    let rest = &bytes[HEAD.len()..];
    let stored = rest.get(..KEY_LEN).ok_or_else(short)?;
    if stored != key.0.as_bytes() {
        return Err(format!(
            "it holds the entry of another key ({})",
            String::from_utf8_lossy(stored).escape_debug()
        ));
    }
    let rest = &rest[KEY_LEN..];
    expect(CHECKSUM, rest)?;
    let rest = &rest[CHECKSUM.len()..];
    let digits = rest.get(..8).ok_or_else(short)?;
    let checksum = std::str::from_utf8(digits)
        .ok()
        .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
        .and_then(|d| u32::from_str_radix(d, 16).ok())
        .ok_or_else(foreign)?;
    let rest = &rest[8..];
    expect(REPLY, rest)?;
    let reply = rest[REPLY.len()..]
        .strip_suffix(TAIL.as_bytes())
        .ok_or_else(short)?;
    if crc32fast::hash(reply) != checksum {
        return Err("its checksum does not match: it was changed after it was written".into());
    }
    serde_json::from_slice(reply).map_err(|e| format!("its reply is not JSON ({e})"))
}

#[cfg(test)]
mod tests;
