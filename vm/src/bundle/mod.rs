//! The bundle file: a checked header, then a bincode payload.
//!
//! ```text
//! magic "TVB\0" | format version u16 LE | payload length u32 LE | CRC-32 u32 LE | payload
//! ```
//! The payload is every type below in declaration order, as bincode's derived `Encode`
//! writes it (integers of variable length, little endian). It is decoded with a size
//! limit; a bundle that is truncated, altered or simply not a bundle is refused with a
//! [`BundleError`], never a panic. Decoding is followed by the verifier: what reading
//! gives is a [`Verified`] bundle, the only kind a machine runs.

use crate::isa::Op;

mod lean;
mod task;
mod types;
mod verified;
pub mod verify;
use bincode::error::EncodeError;
use bincode::{Decode, Encode};
pub use lean::verify_bytes;
use serde::Serialize;
use std::fmt;
use std::sync::Arc;
pub use task::{
    Assembly, ContextSettings, FilePaths, Inherit, ModelSettings, Output, StatedContext, TaskMeta,
    MAX_STOP_SEQUENCES,
};
pub use types::{TaskType, ValueType};
pub use verified::{EntryError, Names, Verified, VerifyError};

/// The first four bytes of every bundle file.
pub const MAGIC: &[u8; 4] = b"TVB\0";
/// Bumped whenever an older reader would misread the bytes of a newer writer. A reader
/// reads its own format only: an older bundle is refused with a message that says to
/// recompile it.
pub const VERSION: u16 = 8;
const HEADER: usize = 4 + 2 + 4 + 4;
/// The largest payload a reader accepts.
pub(crate) const MAX_PAYLOAD: usize = 256 << 20;

/// A compiled program.
#[derive(Clone, Debug, PartialEq, Encode, Decode)]
pub struct Bundle {
    /// The version of the `tvc` that wrote it.
    pub compiler_version: String,
    /// The constants `Const` instructions load, by index.
    pub constants: Vec<Const>,
    /// Every function, by the index calls and entries name.
    pub functions: Vec<Function>,
    /// What host calls need about each atomic or script task, by the index
    /// instructions name.
    pub tasks: Vec<Arc<TaskMeta>>,
    /// The items a run may start at, by name.
    pub entries: Vec<Entry>,
    /// Source file paths, for the source map.
    pub files: Vec<String>,
}

/// A constant; arrays and objects are built at run time.
#[derive(Clone, Debug, PartialEq, Encode, Decode)]
pub enum Const {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Num(f64),
    /// A string.
    Str(String),
}

/// A function of bytecode: a template, a function, or a body one of them runs apart.
#[derive(Clone, Debug, PartialEq, Encode, Decode)]
pub struct Function {
    /// Its item's name (`NAME~N` for a body the item runs apart), for messages and
    /// listings.
    pub name: String,
    /// Its parameters, in the order callers pass them.
    pub params: Vec<Param>,
    /// Locals including the parameters, which come first.
    pub locals: u16,
    /// Its instructions.
    pub code: Vec<Op>,
    /// Source position of each instruction (`lines[pc]`).
    pub lines: Vec<Loc>,
    /// What the function returns when it completes: its declared type (checked by
    /// `CheckReturn`), else the type the compiler inferred; `any` for bodies run apart.
    pub returns: ValueType,
    /// Set for templates that subtask requests may select.
    pub matchable: Option<MatchInfo>,
    /// What the source says the item does (its task's `<description>`), for `tvm info`;
    /// empty for the bodies a function runs apart.
    pub doc: String,
}

/// A parameter of a function.
#[derive(Clone, Debug, PartialEq, Encode, Decode)]
pub struct Param {
    /// Its name: a run's named arguments are bound by it.
    pub name: String,
    /// The type its argument is checked against.
    pub ty: ValueType,
    /// What the source says of it (a root task's `<input name>` text), for `tvm info`.
    pub doc: String,
}

/// A position in the source: where an instruction came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Encode, Decode, Default)]
pub struct Loc {
    /// The file, as an index into [`Bundle::files`].
    pub file: u32,
    /// The line, from 1.
    pub line: u32,
    /// The column in characters, from 1.
    pub col: u32,
}

/// What template selection for subtask requests looks at.
#[derive(Clone, Debug, PartialEq, Encode, Decode)]
pub struct MatchInfo {
    /// The kind of task the template is; a request may ask for one.
    pub task_type: TaskType,
    /// The template's `subtype`, any word its author chose.
    pub subtype: Option<String>,
    /// The words matching scores: the description, then the criteria when there are any.
    pub description: String,
}

/// A template that inherits its caller's context (it states `inherit_context` `full` or
/// `subset`) takes that context as its last parameter, under this name, which no
/// source parameter can have. Callers pass their context; a run's entry and a spawned
/// subtask pass theirs (none, or the parent's).
pub const CONTEXT_PARAM: &str = "(context)";

/// An item a run may start at.
#[derive(Clone, Debug, PartialEq, Encode, Decode)]
pub struct Entry {
    /// The item's name, as `tvm run --entry` takes it.
    pub name: String,
    /// Its function, as an index into [`Bundle::functions`].
    pub function: u32,
}

/// Why bytes are not a bundle this machine runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundleError {
    /// Fewer bytes than a header.
    TooShort,
    /// The magic bytes are not a bundle's.
    NotABundle,
    /// The bundle is of this format, not [`VERSION`].
    Version(u16),
    /// The header's payload length is not the number of bytes that follow it.
    Length {
        /// The length the header states.
        declared: usize,
        /// The bytes that follow the header.
        actual: usize,
    },
    /// The payload's CRC-32 is not the header's.
    Checksum,
    /// The payload does not decode as a bundle, or bytes follow it.
    Decode(String),
    /// The payload decodes to a bundle the verifier refuses.
    Invalid(VerifyError),
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::TooShort => f.write_str("the file is too short to be a bundle"),
            BundleError::NotABundle => f.write_str("the file is not a bundle (wrong magic bytes)"),
            BundleError::Version(v) if *v < VERSION => write!(
                f,
                "the bundle is of format {v}, written by an older tvc; this tvm reads format {VERSION} only: recompile the templates with this version's tvc"
            ),
            BundleError::Version(v) => write!(
                f,
                "the bundle is of format {v}, newer than this tvm reads (format {VERSION}): run it with the tvm of the tvc that wrote it, or recompile the templates with this version's tvc"
            ),
            BundleError::Length { declared, actual } => write!(
                f,
                "the bundle is damaged: its header declares {declared} bytes of payload but {actual} follow"
            ),
            BundleError::Checksum => f.write_str("the bundle is damaged: its checksum does not match"),
            BundleError::Decode(e) => write!(f, "the bundle is damaged: {e}"),
            BundleError::Invalid(e) => write!(f, "the bundle is invalid: {e}"),
        }
    }
}

impl std::error::Error for BundleError {}

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_PAYLOAD>()
}

/// Appends to a `Vec` as it goes: `bincode::encode_to_vec` walks the value twice, once
/// to size the buffer.
struct Out<'a>(&'a mut Vec<u8>);

impl bincode::enc::write::Writer for Out<'_> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> Result<(), EncodeError> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }
}

/// Appends the encoding of `v`. Nothing in a bundle fails to encode and the writer
/// cannot fail, so an error here would be a bug in bincode.
fn put(v: &impl Encode, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    bincode::encode_into_writer(v, Out(out), config())
}

/// The payload of a bundle file, once its header is checked: magic, format, length
/// and checksum.
fn payload_of(bytes: &[u8]) -> Result<&[u8], BundleError> {
    if bytes.len() < 4 {
        return Err(BundleError::TooShort);
    }
    if &bytes[..4] != MAGIC {
        return Err(BundleError::NotABundle);
    }
    if bytes.len() < HEADER {
        return Err(BundleError::TooShort);
    }
    // Before the length and the checksum: an older bundle is intact, and should be
    // told apart from a damaged one.
    let version = u16::from_le_bytes([bytes[4], bytes[5]]);
    if version != VERSION {
        return Err(BundleError::Version(version));
    }
    let declared = u32::from_le_bytes([bytes[6], bytes[7], bytes[8], bytes[9]]) as usize;
    let payload = &bytes[HEADER..];
    if declared != payload.len() || declared > MAX_PAYLOAD {
        return Err(BundleError::Length {
            declared,
            actual: payload.len(),
        });
    }
    let sum = u32::from_le_bytes([bytes[10], bytes[11], bytes[12], bytes[13]]);
    if crc32fast::hash(payload) != sum {
        return Err(BundleError::Checksum);
    }
    Ok(payload)
}

/// A list given encoded: how many items, and their encodings one after the other,
/// in pieces (as [`Bundle::encode_functions`] and [`encode_tasks`] make them).
pub type Encoded = (u64, Vec<Vec<u8>>);

/// The encoded tasks of `tasks`, one after the other, without the length of the list.
pub fn encode_tasks(tasks: &[Arc<TaskMeta>]) -> Vec<u8> {
    let mut out = Vec::new();
    for t in tasks {
        // Encoding into memory cannot fail (see `put`).
        let _ = put(t, &mut out);
    }
    out
}

/// A bundle file from its parts, its functions and tasks given encoded: what
/// [`Bundle::to_bytes`] writes, for a writer that never holds every function and
/// task decoded at once. The payload is written after room for the header, which is
/// filled in at the end, and each piece is freed once copied: a large bundle is in
/// memory about once, not three times.
pub fn assemble(
    compiler_version: &String,
    constants: &[Const],
    functions: Encoded,
    tasks: Encoded,
    entries: &[Entry],
    files: &[String],
) -> Vec<u8> {
    // Encoding into memory cannot fail (see `put`).
    let encode = |put_all: &dyn Fn(&mut Vec<u8>) -> Result<(), EncodeError>| {
        let mut out = Vec::new();
        let _ = put_all(&mut out);
        out
    };
    let head = encode(&|out| {
        put(compiler_version, out)?;
        put(&constants, out)
    });
    // A list's length is a u64, as for every list.
    let lists = [functions, tasks].map(|(count, pieces)| (encode(&|out| put(&count, out)), pieces));
    let tail = encode(&|out| {
        put(&entries, out)?;
        put(&files, out)
    });
    let size = lists
        .iter()
        .flat_map(|(count, pieces)| pieces.iter().chain([count]));
    let size = HEADER + head.len() + size.map(Vec::len).sum::<usize>() + tail.len();
    let mut out = Vec::with_capacity(size);
    out.resize(HEADER, 0);
    out.extend_from_slice(&head);
    for (count, pieces) in lists {
        out.extend_from_slice(&count);
        for piece in pieces {
            out.extend_from_slice(&piece);
        }
    }
    out.extend_from_slice(&tail);
    let length = (out.len() - HEADER) as u32;
    let sum = crc32fast::hash(&out[HEADER..]);
    let header = [
        MAGIC.as_slice(),
        &VERSION.to_le_bytes(),
        &length.to_le_bytes(),
        &sum.to_le_bytes(),
    ];
    out[..HEADER].copy_from_slice(&header.concat());
    out
}

impl Bundle {
    /// The bytes of the bundle file; the same bundle always gives the same bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_bytes_with(|functions| vec![Bundle::encode_functions(functions)])
    }

    /// [`Bundle::to_bytes`] with the functions, most of a bundle, encoded by `encode`:
    /// it may encode slices of them apart (on other threads) with
    /// [`Bundle::encode_functions`] and return the pieces in order. The bytes are the
    /// same, since an encoded list is its length followed by its encoded items.
    pub fn to_bytes_with(&self, encode: impl FnOnce(&[Function]) -> Vec<Vec<u8>>) -> Vec<u8> {
        // The pattern names every field, so a new one cannot be left out here.
        let Bundle {
            compiler_version,
            constants,
            functions,
            tasks,
            entries,
            files,
        } = self;
        let encoded = encode(functions);
        let tasks_encoded = vec![encode_tasks(tasks)];
        assemble(
            compiler_version,
            constants,
            (functions.len() as u64, encoded),
            (tasks.len() as u64, tasks_encoded),
            entries,
            files,
        )
    }

    /// The encoded functions of `functions`, one after the other, without the length
    /// of the list.
    pub fn encode_functions(functions: &[Function]) -> Vec<u8> {
        let mut out = Vec::new();
        for f in functions {
            // Encoding into memory cannot fail (see `put`).
            let _ = put(f, &mut out);
        }
        out
    }

    /// Reads and verifies a bundle.
    pub fn from_bytes(bytes: &[u8]) -> Result<Verified, BundleError> {
        let payload = payload_of(bytes)?;
        let (bundle, used): (Bundle, usize) = bincode::decode_from_slice(payload, config())
            .map_err(|e| BundleError::Decode(e.to_string()))?;
        if used != payload.len() {
            return Err(BundleError::Decode(format!(
                "{} bytes after the payload",
                payload.len() - used
            )));
        }
        Verified::new(bundle).map_err(BundleError::Invalid)
    }

    /// The entry of this name.
    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// An entry's function and its arguments in parameter order, taken from `named`
    /// by parameter name (`null` for any not given).
    pub fn entry_args(
        &self,
        entry: &str,
        named: &serde_json::Value,
    ) -> Option<(u32, Vec<serde_json::Value>)> {
        let e = self.entry(entry)?;
        let f = self.functions.get(e.function as usize)?;
        let values = f
            .params
            .iter()
            .map(|p| match named.get(&p.name) {
                // A run's entry has no caller, so no context to inherit.
                _ if p.name == CONTEXT_PARAM => serde_json::Value::String(String::new()),
                Some(v) => v.clone(),
                None => serde_json::Value::Null,
            })
            .collect();
        Some((e.function, values))
    }

    /// A source position as messages write it: `file:line:col`.
    pub fn location(&self, loc: Loc) -> String {
        let file = self
            .files
            .get(loc.file as usize)
            .map_or("?", String::as_str);
        format!("{file}:{}:{}", loc.line, loc.col)
    }
}
