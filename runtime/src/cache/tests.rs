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

/// Asserts that the entry of `key` at `path` is damaged, of `kind`, with the warning
/// that names the file and says `why`.
fn assert_damaged(cache: &ReplyCache, key: &CacheKey, path: &Path, kind: CacheKind, why: &str) {
    match cache.get(key) {
        Lookup::Damaged(e) => {
            assert_eq!(e.kind(), kind, "{e}");
            let expected = format!("the reply cache entry {} is damaged: {why}", path.display());
            assert_eq!(e.to_string(), expected);
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

const CHANGED: &str = "its checksum does not match: it was changed after it was written";
const SHORT: &str = "it ends too early (a write was cut short)";
const FOREIGN: &str = "it is not an entry of this cache's version 1 layout";

#[test]
fn an_entry_changed_after_it_was_written_is_damaged() {
    let scratch = Scratch::new("edited");
    let (cache, key, path) = one_entry(&scratch);
    // Still JSON, still the same shape: only the checksum tells.
    let text = fs::read_to_string(&path).unwrap().replace("Teal.", "Teak.");
    fs::write(&path, text).unwrap();
    assert_damaged(&cache, &key, &path, CacheKind::Damaged, CHANGED);
    // A flipped bit in the reply.
    cache.put(&key, &reply("Teal.")).unwrap();
    let mut bytes = fs::read(&path).unwrap();
    let at = bytes.len() - 20;
    bytes[at] ^= 1;
    fs::write(&path, bytes).unwrap();
    assert_damaged(&cache, &key, &path, CacheKind::Damaged, CHANGED);
}

#[test]
fn an_entry_that_does_not_parse_or_is_cut_short_is_damaged() {
    let scratch = Scratch::new("garbage");
    let (cache, key, path) = one_entry(&scratch);
    let whole = fs::read(&path).unwrap();
    for cut in [0, 10, HEAD.len() + 10, whole.len() / 2, whole.len() - 1] {
        fs::write(&path, &whole[..cut]).unwrap();
        assert_damaged(&cache, &key, &path, CacheKind::Damaged, SHORT);
    }
    for text in ["not json at all", "{\"key\": 1}", "\u{0}\u{ff}"] {
        fs::write(&path, text).unwrap();
        assert_damaged(&cache, &key, &path, CacheKind::Damaged, FOREIGN);
    }
    // A reply that is not JSON, with a checksum that matches it.
    let bad = b"{\"oops";
    let mut forged = whole[..HEAD.len() + KEY_LEN + CHECKSUM.len()].to_vec();
    forged.extend_from_slice(format!("{:08x}", crc32fast::hash(bad)).as_bytes());
    forged.extend_from_slice(REPLY.as_bytes());
    forged.extend_from_slice(bad);
    forged.extend_from_slice(TAIL.as_bytes());
    fs::write(&path, forged).unwrap();
    let why = serde_json::from_slice::<Value>(bad).unwrap_err();
    let why = format!("its reply is not JSON ({why})");
    assert_damaged(&cache, &key, &path, CacheKind::Damaged, &why);
}

#[test]
fn an_entry_under_the_name_of_another_key_is_damaged() {
    let scratch = Scratch::new("moved");
    let (cache, key, path) = one_entry(&scratch);
    let other = cache.key(&request("Name a colour."));
    let other_path = cache.path(&other);
    fs::create_dir_all(other_path.parent().unwrap()).unwrap();
    fs::copy(&path, &other_path).unwrap();
    let why = format!("it holds the entry of another key ({key})");
    assert_damaged(&cache, &other, &other_path, CacheKind::Damaged, &why);
}

#[test]
fn an_entry_over_the_size_cap_or_not_a_file_is_damaged_without_being_read() {
    let scratch = Scratch::new("large");
    let (cache, key, path) = one_entry(&scratch);
    // Sparse: the size is there, the bytes are not.
    let handle = File::options().write(true).open(&path).unwrap();
    handle.set_len(MAX_ENTRY_BYTES + 1).unwrap();
    let why = "it is larger than the 16 MiB an entry may have";
    assert_damaged(&cache, &key, &path, CacheKind::TooLarge, why);
    fs::remove_file(&path).unwrap();
    fs::create_dir(&path).unwrap();
    let why = "it is a directory, not a regular file";
    assert_damaged(&cache, &key, &path, CacheKind::Read, why);
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
    assert_eq!(error.kind(), CacheKind::Open);
    let under = ReplyCache::open(&file.join("below")).err().unwrap();
    assert_eq!(under.kind(), CacheKind::Open);
}

/// Entries `get` reports as damaged: what is put at the entry's path, the kind, and the
/// warning as `tvm` prints it, `{p}` standing for the entry's path.
type Spoiled = (&'static str, fn(&Path), CacheKind, &'static str);

fn damaged_entries() -> Vec<Spoiled> {
    vec![
        (
            "over the cap",
            |p| File::create(p).unwrap().set_len(MAX_ENTRY_BYTES + 1).unwrap(),
            CacheKind::TooLarge,
            "the reply cache entry {p} is damaged: it is larger than the 16 MiB an entry may have",
        ),
        (
            "a folder",
            |p| fs::create_dir(p).unwrap(),
            CacheKind::Read,
            "the reply cache entry {p} is damaged: it is a directory, not a regular file",
        ),
        (
            "cut short",
            |p| fs::write(p, HEAD).unwrap(),
            CacheKind::Damaged,
            "the reply cache entry {p} is damaged: it ends too early (a write was cut short)",
        ),
        (
            "edited",
            |p| {
                let text = fs::read_to_string(p).unwrap().replace("Teal.", "Teak.");
                fs::write(p, text).unwrap();
            },
            CacheKind::Damaged,
            "the reply cache entry {p} is damaged: its checksum does not match: it was changed after it was written",
        ),
    ]
}

#[test]
fn each_cache_failure_reads_as_tvm_has_always_printed_it() {
    for (name, spoil, kind, expected) in damaged_entries() {
        let scratch = Scratch::new(&format!("table-{}", name.replace(' ', "-")));
        let (cache, key, path) = one_entry(&scratch);
        if name != "edited" {
            fs::remove_file(&path).unwrap();
        }
        spoil(&path);
        let Lookup::Damaged(e) = cache.get(&key) else {
            panic!("{name}: not damaged");
        };
        let expected = expected.replace("{p}", &path.display().to_string());
        assert_eq!((e.kind(), e.to_string()), (kind, expected), "{name}");
    }
    let scratch = Scratch::new("table-refused");
    let file = scratch.0.join("file");
    fs::create_dir_all(&scratch.0).unwrap();
    fs::write(&file, "x").unwrap();
    let cache = ReplyCache::open(&scratch.0.join("c")).unwrap();
    let key = cache.key(&request("Name a colour."));
    let shard = scratch.0.join("c/v1").join(&key.as_str()[..2]);
    fs::write(&shard, "in the way").unwrap();
    let huge = json!("x".repeat(MAX_ENTRY_BYTES as usize));
    let refusals = [
        (
            ReplyCache::open(&file).err(),
            CacheKind::Open,
            format!("the cache directory {} is a file", file.display()),
        ),
        (
            ReplyCache::open(&file.join("below")).err(),
            CacheKind::Open,
            format!(
                "cannot create the cache directory {}/below: Not a directory (os error 20)",
                file.display()
            ),
        ),
        (
            cache.put(&key, &reply("Teal.")).err(),
            CacheKind::Write,
            format!(
                "cannot create the cache folder {}: File exists (os error 17)",
                shard.display()
            ),
        ),
        (
            cache.put(&key, &huge).err(),
            CacheKind::TooLarge,
            format!(
                "a reply of {} bytes is too large for the reply cache (at most {MAX_ENTRY_BYTES} bytes an entry); it is not stored",
                MAX_ENTRY_BYTES + 2
            ),
        ),
    ];
    for (got, kind, expected) in refusals {
        let got = got.map(|e| (e.kind(), e.to_string()));
        assert_eq!(got, Some((kind, expected)));
    }
}
