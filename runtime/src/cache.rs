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
pub const MAX_ENTRY_BYTES: u64 = files::CACHE_ENTRY.max;

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

#[derive(Clone, Debug, PartialEq)]
pub enum Lookup {
    Hit(Value),
    Miss,
    /// the entry exists but cannot be used: a warning naming the file and what is wrong
    Damaged(String),
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
    pub fn open(dir: &Path) -> Result<ReplyCache, String> {
        let name = dir.display();
        if dir.exists() && !dir.is_dir() {
            return Err(format!("the cache directory {name} is a file"));
        }
        let entries = dir.join(LAYOUT);
        fs::create_dir_all(&entries)
            .map_err(|e| format!("cannot create the cache directory {name}: {e}"))?;
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
        let damaged = |why: String| {
            Lookup::Damaged(format!("the reply cache entry {name} is damaged: {why}"))
        };
        let bytes = match files::read(&path, files::CACHE_ENTRY) {
            Ok(bytes) => bytes,
            Err(FileError::Missing) => return Lookup::Miss,
            Err(FileError::TooLarge(_)) => {
                return damaged("it is larger than the 16 MiB an entry may have".into())
            }
            Err(e) => return damaged(format!("it {e}")),
        };
        match decode(key, &bytes) {
            Ok(reply) => Lookup::Hit(reply),
            Err(why) => damaged(why),
        }
    }

    /// Stores `reply` under `key`. The entry is written to a temporary file of its own in
    /// the entry's folder and renamed over the final name, so readers and crashes see the
    /// old entry or the new one, never part of one; two processes storing the same key
    /// both succeed, and the last rename stays.
    pub fn put(&self, key: &CacheKey, reply: &Value) -> Result<(), String> {
        let path = self.path(key);
        let text =
            serde_json::to_string(reply).map_err(|e| format!("cannot encode the reply: {e}"))?;
        if (FRAME_LEN + text.len()) as u64 > MAX_ENTRY_BYTES {
            return Err(format!(
                "a reply of {} bytes is too large for the reply cache (at most {MAX_ENTRY_BYTES} bytes an entry); it is not stored",
                text.len()
            ));
        }
        let crc = crc32fast::hash(text.as_bytes());
        let entry = format!("{HEAD}{key}{CHECKSUM}{crc:08x}{REPLY}{text}{TAIL}");

        let folder = path.parent().unwrap_or(&self.entries);
        fs::create_dir_all(folder)
            .map_err(|e| format!("cannot create the cache folder {}: {e}", folder.display()))?;
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
                format!("cannot write the reply cache entry {}: {e}", path.display())
            })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// A new temporary file next to the entry, named after the key, this process and a
/// counter, and created with create-new so that no two writers ever share one (a file
/// left by a crashed process of the same id is stepped over).
fn temporary(folder: &Path, key: &CacheKey) -> Result<(PathBuf, File), String> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut attempts = 0;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let temp = folder.join(format!(".{}.{}.{n}.tmp", key.0, std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 100 => attempts += 1,
            Err(e) => {
                return Err(format!(
                    "cannot create a temporary file in the cache folder {}: {e}",
                    folder.display()
                ))
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
mod tests {
    use super::*;
    use serde_json::json;

    /// A cache folder in the temporary folder, removed when dropped.
    struct Scratch(PathBuf);
    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("tv-cache-{}-{name}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            Scratch(dir)
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn request(prompt: &str) -> Value {
        json!({"provider": "openai", "endpoint": "/v1/chat/completions",
               "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]}})
    }

    fn reply(text: &str) -> Value {
        json!({"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 12, "completion_tokens": 3}})
    }

    /// A cache in `scratch` with one entry, its key and its file.
    fn one_entry(scratch: &Scratch) -> (ReplyCache, CacheKey, PathBuf) {
        let cache = ReplyCache::open(&scratch.0).unwrap();
        let key = cache.key(&request("Name a colour."));
        cache.put(&key, &reply("Teal.")).unwrap();
        let path = cache.path(&key);
        (cache, key, path)
    }

    /// Asserts that the entry of `key` at `path` is damaged, with a message that names
    /// the file and says `why`.
    fn assert_damaged(cache: &ReplyCache, key: &CacheKey, path: &Path, why: &str) {
        match cache.get(key) {
            Lookup::Damaged(message) => {
                let file = path.display().to_string();
                assert!(
                    message.contains(&file) && message.contains(why),
                    "{message}"
                );
            }
            other => panic!("expected a damaged entry ({why}), got {other:?}"),
        }
    }

    #[test]
    fn a_stored_reply_is_a_hit_and_an_absent_one_a_miss() {
        let scratch = Scratch::new("hit");
        let (cache, key, path) = one_entry(&scratch);
        assert_eq!(cache.get(&key), Lookup::Hit(reply("Teal.")));
        assert!(path.starts_with(scratch.0.join("v1").join(&key.as_str()[..2])));
        assert_eq!(cache.dir(), scratch.0);
        let absent = cache.key(&request("Name a shape."));
        assert_eq!(cache.get(&absent), Lookup::Miss);
        // Stored again, the entry is replaced.
        cache.put(&key, &reply("Ochre.")).unwrap();
        assert_eq!(cache.get(&key), Lookup::Hit(reply("Ochre.")));
    }

    #[test]
    fn each_occurrence_of_a_request_has_its_own_key_and_a_second_run_the_same_keys() {
        let scratch = Scratch::new("occurrences");
        let first = ReplyCache::open(&scratch.0).unwrap();
        let asked = request("Pick a number.");
        let keys: Vec<CacheKey> = (0..3).map(|_| first.key(&asked)).collect();
        assert!(keys[0] != keys[1] && keys[1] != keys[2] && keys[0] != keys[2]);
        for (i, key) in keys.iter().enumerate() {
            first.put(key, &reply(&i.to_string())).unwrap();
        }
        // Another request does not move this one's count.
        let other = first.key(&request("Pick a letter."));
        assert!(!keys.contains(&other));
        let second = ReplyCache::open(&scratch.0).unwrap();
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(&second.key(&asked), key);
            assert_eq!(second.get(key), Lookup::Hit(reply(&i.to_string())));
        }
    }

    #[test]
    fn a_key_is_the_sha_256_of_the_request_text_a_newline_and_the_occurrence() {
        let cache = ReplyCache::open(&Scratch::new("vector").0).unwrap();
        // printf '{"a":1}\n0' | sha256sum, then with 1: a key never changes between
        // versions, or every cache goes cold.
        let first = "70d1cde45d6c92fd130c9bbfe1fc0c9d1bb79c2f3f7d50b1e037ccb37efbcb9a";
        let second = "fa23b941500a395097e7c289eca072d607c8aea5983da4a10a857a3cb280a867";
        assert_eq!(cache.key(&json!({"a": 1})).as_str(), first);
        assert_eq!(cache.key(&json!({"a": 1})).as_str(), second);
    }

    #[test]
    fn keys_are_64_lowercase_hex_characters_without_the_request_text() {
        let cache = ReplyCache::open(&Scratch::new("hex").0).unwrap();
        for prompt in ["", "secret-word", "ab"] {
            let key = cache.key(&request(prompt));
            assert_eq!(key.as_str().len(), 64);
            let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
            assert!(key.as_str().bytes().all(hex), "{key}");
            assert!(!key.as_str().contains("secret"));
        }
    }

    #[test]
    fn an_entry_changed_after_it_was_written_is_damaged() {
        let scratch = Scratch::new("edited");
        let (cache, key, path) = one_entry(&scratch);
        // Still JSON, still the same shape: only the checksum tells.
        let text = fs::read_to_string(&path).unwrap().replace("Teal.", "Teak.");
        fs::write(&path, text).unwrap();
        assert_damaged(&cache, &key, &path, "checksum does not match");
        // A flipped bit in the reply.
        cache.put(&key, &reply("Teal.")).unwrap();
        let mut bytes = fs::read(&path).unwrap();
        let at = bytes.len() - 20;
        bytes[at] ^= 1;
        fs::write(&path, bytes).unwrap();
        assert_damaged(&cache, &key, &path, "checksum does not match");
    }

    #[test]
    fn an_entry_that_does_not_parse_or_is_cut_short_is_damaged() {
        let scratch = Scratch::new("garbage");
        let (cache, key, path) = one_entry(&scratch);
        let whole = fs::read(&path).unwrap();
        for cut in [0, 10, HEAD.len() + 10, whole.len() / 2, whole.len() - 1] {
            fs::write(&path, &whole[..cut]).unwrap();
            assert_damaged(&cache, &key, &path, "ends too early");
        }
        for text in ["not json at all", "{\"key\": 1}", "\u{0}\u{ff}"] {
            fs::write(&path, text).unwrap();
            assert_damaged(&cache, &key, &path, "not an entry");
        }
        // A reply that is not JSON, with a checksum that matches it.
        let bad = b"{\"oops";
        let mut forged = whole[..HEAD.len() + KEY_LEN + CHECKSUM.len()].to_vec();
        forged.extend_from_slice(format!("{:08x}", crc32fast::hash(bad)).as_bytes());
        forged.extend_from_slice(REPLY.as_bytes());
        forged.extend_from_slice(bad);
        forged.extend_from_slice(TAIL.as_bytes());
        fs::write(&path, forged).unwrap();
        assert_damaged(&cache, &key, &path, "its reply is not JSON");
    }

    #[test]
    fn an_entry_under_the_name_of_another_key_is_damaged() {
        let scratch = Scratch::new("moved");
        let (cache, key, path) = one_entry(&scratch);
        let other = cache.key(&request("Name a colour."));
        let other_path = cache.path(&other);
        fs::create_dir_all(other_path.parent().unwrap()).unwrap();
        fs::copy(&path, &other_path).unwrap();
        assert_damaged(&cache, &other, &other_path, &format!("another key ({key})"));
    }

    #[test]
    fn an_entry_over_the_size_cap_or_not_a_file_is_damaged_without_being_read() {
        let scratch = Scratch::new("large");
        let (cache, key, path) = one_entry(&scratch);
        // Sparse: the size is there, the bytes are not.
        let handle = File::options().write(true).open(&path).unwrap();
        handle.set_len(MAX_ENTRY_BYTES + 1).unwrap();
        assert_damaged(&cache, &key, &path, "larger than the 16 MiB");
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        assert_damaged(&cache, &key, &path, "it is a directory, not a regular file");
    }

    #[test]
    fn a_put_leaves_nothing_but_its_entry_and_concurrent_puts_of_a_key_all_succeed() {
        let scratch = Scratch::new("atomic");
        let (_, key, path) = one_entry(&scratch);
        // Two cache objects stand for two processes storing the same key at once.
        std::thread::scope(|s| {
            for writer in 0..2 {
                let cache = ReplyCache::open(&scratch.0).unwrap();
                let key = &key;
                s.spawn(move || {
                    for i in 0..50 {
                        cache.put(key, &reply(&format!("{writer}/{i}"))).unwrap();
                        assert!(matches!(cache.get(key), Lookup::Hit(_)));
                    }
                });
            }
        });
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [path.file_name().unwrap()]);
    }

    #[test]
    fn opening_creates_the_directory_and_refuses_a_file() {
        let scratch = Scratch::new("open");
        let nested = scratch.0.join("a/b");
        assert!(ReplyCache::open(&nested).is_ok());
        assert!(nested.join("v1").is_dir());
        let file = scratch.0.join("file");
        fs::write(&file, "x").unwrap();
        let error = ReplyCache::open(&file).err().unwrap();
        let named = error.contains(&file.display().to_string());
        assert!(named && error.contains("is a file"), "{error}");
        let under = ReplyCache::open(&file.join("below")).err().unwrap();
        assert!(under.contains("cannot create"), "{under}");
    }
}
