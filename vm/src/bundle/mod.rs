//! The bundle file: a checked header, then a bincode payload.
//!
//! ```text
//! magic "TVB\0" | format version u16 LE | payload length u32 LE | CRC-32 u32 LE | payload
//! ```
//! The payload is decoded with a size limit; a bundle that is truncated, altered or
//! simply not a bundle is refused with a [`BundleError`], never a panic. Decoding is
//! followed by the verifier before anything runs.

use crate::isa::Op;

mod encode;
pub mod verify;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

pub const MAGIC: &[u8; 4] = b"TVB\0";
/// Bumped whenever an older reader would misread the bytes of a newer writer.
pub const VERSION: u16 = 3;
const HEADER: usize = 4 + 2 + 4 + 4;
/// The largest payload a reader accepts.
pub const MAX_PAYLOAD: usize = 256 << 20;

/// A compiled program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    pub compiler_version: String,
    pub constants: Vec<Const>,
    pub functions: Vec<Function>,
    pub tasks: Vec<Arc<TaskMeta>>,
    pub entries: Vec<Entry>,
    /// Source file paths, for the source map.
    pub files: Vec<String>,
}

/// A constant; arrays and objects are built at run time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Const {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Function {
    pub name: String,
    pub params: Vec<Param>,
    /// Locals including the parameters, which come first.
    pub locals: u16,
    pub code: Vec<Op>,
    /// Source position of each instruction (`lines[pc]`).
    pub lines: Vec<Loc>,
    /// What the function returns, as written in the source (`any` when unstated).
    pub returns: String,
    /// Set for templates that subtask requests may select.
    pub matchable: Option<MatchInfo>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    pub ty: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Loc {
    pub file: u32,
    pub line: u32,
    pub col: u32,
}

/// What template selection for subtask requests looks at.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchInfo {
    pub task_type: String,
    pub subtype: Option<String>,
    /// The words matching scores: the description, then the criteria when there are any.
    pub description: String,
}

/// What a host call needs to know about the task that makes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskMeta {
    pub name: String,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub output: Output,
    pub context: ContextSettings,
    pub file_paths: FilePaths,
    pub criteria: Option<String>,
    /// Script timeout in seconds.
    pub timeout: Option<u64>,
    pub loc: Loc,
    /// Sampling settings the task states on its `<model>`; the run's defaults fill the rest.
    pub settings: ModelSettings,
    /// Whether the model is offered the `spawn_subtask` tool (`<subtasks>enabled</subtasks>`).
    pub subtasks: bool,
    /// The context settings when the template this task is the body of runs as a
    /// spawned subtask: the seeds' subtask defaults under what the task states. A
    /// request's own `context_management` is merged over these at run time.
    pub spawned: Option<ContextSettings>,
    /// `context_assembly`: path globs that order and filter the files of the context.
    pub assembly: Assembly,
}

/// A template that inherits its caller's context (it states `inherit_context` `full` or
/// `subset`) takes that context as its last parameter, under this name, which no
/// source parameter can have. Callers pass their context; a run's entry and a spawned
/// subtask pass theirs (none, or the parent's).
pub const CONTEXT_PARAM: &str = "(context)";

/// `context_assembly` (DESIGN §19): comma-separated path globs, split. Primary files
/// come first, secondary ones after the ranked rest, excluded ones never.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assembly {
    pub primary: Vec<String>,
    pub secondary: Vec<String>,
    pub excluded: Vec<String>,
}

impl Assembly {
    pub fn is_empty(&self) -> bool {
        self.primary.is_empty() && self.secondary.is_empty() && self.excluded.is_empty()
    }
}

/// Sampling settings of one LLM call (DESIGN §12). A field left `None` is not sent, so
/// the provider's own default applies (Anthropic's required `max_tokens` excepted).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelSettings {
    /// 0 to 2.
    pub temperature: Option<f64>,
    /// The most tokens the reply may have; a reply cut there fails its task.
    pub max_tokens: Option<u64>,
    /// 0 to 1.
    pub top_p: Option<f64>,
    pub seed: Option<i64>,
    /// A sequence that ends the reply where the model writes it.
    pub stop: Option<String>,
}

impl ModelSettings {
    /// These settings, with every field left unset taken from `defaults`.
    pub fn or(&self, defaults: &ModelSettings) -> ModelSettings {
        ModelSettings {
            temperature: self.temperature.or(defaults.temperature),
            max_tokens: self.max_tokens.or(defaults.max_tokens),
            top_p: self.top_p.or(defaults.top_p),
            seed: self.seed.or(defaults.seed),
            stop: self.stop.clone().or_else(|| defaults.stop.clone()),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == ModelSettings::default()
    }
}

/// ` temperature=0.2 max_tokens=800 ...`, the fields that are set, for listings.
impl fmt::Display for ModelSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(t) = self.temperature {
            write!(f, " temperature={t}")?;
        }
        if let Some(n) = self.max_tokens {
            write!(f, " max_tokens={n}")?;
        }
        if let Some(p) = self.top_p {
            write!(f, " top_p={p}")?;
        }
        if let Some(s) = self.seed {
            write!(f, " seed={s}")?;
        }
        if let Some(s) = &self.stop {
            write!(f, " stop={s:?}")?;
        }
        Ok(())
    }
}

impl TaskMeta {
    /// A task with text output, no files, no timeout and no inherited context.
    pub fn named(name: &str) -> TaskMeta {
        TaskMeta {
            name: name.into(),
            model: None,
            provider: None,
            output: Output::Text,
            context: ContextSettings {
                inherit: Inherit::None,
                accumulate: false,
                full_output: false,
                fresh: false,
            },
            file_paths: FilePaths::None,
            criteria: None,
            timeout: None,
            loc: Loc::default(),
            settings: ModelSettings::default(),
            subtasks: false,
            spawned: None,
            assembly: Assembly::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Output {
    Text,
    /// JSON, optionally of a declared type (`object`, `string[]`, ...).
    Json(Option<String>),
}

/// Context settings after defaults and explicit settings are merged (DESIGN §3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextSettings {
    pub inherit: Inherit,
    pub accumulate: bool,
    pub full_output: bool,
    pub fresh: bool,
}

/// What a template or a subtask request states about its context; `None` where it
/// states nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatedContext {
    pub inherit: Option<Inherit>,
    pub accumulate: Option<bool>,
    pub full_output: Option<bool>,
    pub fresh: Option<bool>,
}

impl ContextSettings {
    /// These settings (defaults) with `stated` merged over them (DESIGN §3): a stated
    /// setting wins, and where fresh context and an inherited one would meet, the
    /// other dimension takes the compatible value: fresh context stated alone means
    /// nothing inherited; otherwise (inherit stated, or defaults that conflict among
    /// themselves) the inherited context wins and fresh context is off. The compiler
    /// merges a template's statement over the operator defaults with it; the machine
    /// merges a subtask request's over a template's subtask settings.
    pub fn merged(&self, stated: &StatedContext) -> ContextSettings {
        let mut s = ContextSettings {
            inherit: stated.inherit.unwrap_or(self.inherit),
            accumulate: stated.accumulate.unwrap_or(self.accumulate),
            full_output: stated.full_output.unwrap_or(self.full_output),
            fresh: stated.fresh.unwrap_or(self.fresh),
        };
        if s.fresh && s.inherit != Inherit::None {
            match (stated.inherit, stated.fresh) {
                (None, Some(true)) => s.inherit = Inherit::None,
                _ => s.fresh = false,
            }
        }
        s
    }
}

/// `inherit=full accumulate=false:minimal fresh=false`, for listings.
impl fmt::Display for ContextSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let format = if self.full_output { "full" } else { "minimal" };
        write!(
            f,
            "inherit={} accumulate={}:{format} fresh={}",
            self.inherit, self.accumulate, self.fresh
        )
    }
}

/// What a task receives of the context around it (`inherit_context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Inherit {
    Full,
    None,
    /// The lines of the inherited context that share a word with the request.
    Subset,
}

impl Inherit {
    pub fn as_str(self) -> &'static str {
        match self {
            Inherit::Full => "full",
            Inherit::None => "none",
            Inherit::Subset => "subset",
        }
    }

    pub fn parse(s: &str) -> Option<Inherit> {
        match s {
            "full" => Some(Inherit::Full),
            "none" => Some(Inherit::None),
            "subset" => Some(Inherit::Subset),
            _ => None,
        }
    }
}

impl fmt::Display for Inherit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum FilePaths {
    None,
    Literal(Vec<String>),
    Command(String),
    Description(String),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub name: String,
    pub function: u32,
}

/// A bundle of format 1 or 2, read into today's shape. Version 1 task metadata had no
/// model settings and no subtask flag; both kept `inherit` as a string and had no
/// subtask settings or context assembly.
#[derive(Deserialize)]
struct BundleOld<T> {
    compiler_version: String,
    constants: Vec<Const>,
    functions: Vec<Function>,
    tasks: Vec<T>,
    entries: Vec<Entry>,
    files: Vec<String>,
}

#[derive(Deserialize)]
struct ContextSettingsOld {
    inherit: String,
    accumulate: bool,
    full_output: bool,
    fresh: bool,
}

#[derive(Deserialize)]
struct TaskMetaV1 {
    name: String,
    model: Option<String>,
    provider: Option<String>,
    output: Output,
    context: ContextSettingsOld,
    file_paths: FilePaths,
    criteria: Option<String>,
    timeout: Option<u64>,
    loc: Loc,
}

/// Version 2: version 1's fields, then the model settings and the subtask flag. Bincode
/// writes a struct as its fields one after the other, so a tuple reads the same bytes.
#[derive(Deserialize)]
struct TaskMetaV2(TaskMetaV1, ModelSettings, bool);

impl From<TaskMetaV1> for TaskMeta {
    fn from(t: TaskMetaV1) -> TaskMeta {
        TaskMeta {
            name: t.name,
            model: t.model,
            provider: t.provider,
            output: t.output,
            context: ContextSettings {
                inherit: Inherit::parse(&t.context.inherit).unwrap_or(Inherit::None),
                accumulate: t.context.accumulate,
                full_output: t.context.full_output,
                fresh: t.context.fresh,
            },
            file_paths: t.file_paths,
            criteria: t.criteria,
            timeout: t.timeout,
            loc: t.loc,
            settings: ModelSettings::default(),
            // Version 1 offered the spawning tool to every task; it still does.
            subtasks: true,
            spawned: None,
            assembly: Assembly::default(),
        }
    }
}

impl From<TaskMetaV2> for TaskMeta {
    fn from(TaskMetaV2(v1, settings, subtasks): TaskMetaV2) -> TaskMeta {
        TaskMeta {
            settings,
            subtasks,
            ..v1.into()
        }
    }
}

impl<T: Into<TaskMeta>> From<BundleOld<T>> for Bundle {
    fn from(b: BundleOld<T>) -> Bundle {
        Bundle {
            compiler_version: b.compiler_version,
            constants: b.constants,
            functions: b.functions,
            tasks: b.tasks.into_iter().map(|t| Arc::new(t.into())).collect(),
            entries: b.entries,
            files: b.files,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundleError {
    TooShort,
    NotABundle,
    Version(u16),
    Length { declared: usize, actual: usize },
    Checksum,
    Decode(String),
    Invalid(String),
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::TooShort => f.write_str("the file is too short to be a bundle"),
            BundleError::NotABundle => f.write_str("the file is not a bundle (wrong magic bytes)"),
            BundleError::Version(v) => write!(
                f,
                "bundle format version {v} is not supported (this tvm reads versions 1 to {VERSION}); recompile it with a matching tvc"
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
        let payload = self.payload(encode).unwrap_or_default();
        let mut out = Vec::with_capacity(HEADER + payload.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        out.extend_from_slice(&payload);
        out
    }

    /// The encoded functions of `functions`, one after the other, without the length
    /// of the list.
    pub fn encode_functions(functions: &[Function]) -> Vec<u8> {
        let mut out = Vec::new();
        for f in functions {
            encode::function(f, &mut out);
        }
        out
    }

    /// The fields in declaration order, as the derived `Serialize` writes them. The
    /// pattern names every field, so a new one cannot be left out here.
    fn payload(
        &self,
        encode: impl FnOnce(&[Function]) -> Vec<Vec<u8>>,
    ) -> Result<Vec<u8>, bincode::error::EncodeError> {
        use bincode::serde::encode_into_std_write as put;
        let Bundle {
            compiler_version,
            constants,
            functions,
            tasks,
            entries,
            files,
        } = self;
        let mut out = Vec::new();
        put(compiler_version, &mut out, config())?;
        put(constants, &mut out, config())?;
        put(functions.len() as u64, &mut out, config())?;
        for piece in encode(functions) {
            out.extend_from_slice(&piece);
        }
        put(tasks, &mut out, config())?;
        put(entries, &mut out, config())?;
        put(files, &mut out, config())?;
        Ok(out)
    }

    /// Reads and verifies a bundle.
    pub fn from_bytes(bytes: &[u8]) -> Result<Bundle, BundleError> {
        if bytes.len() < 4 {
            return Err(BundleError::TooShort);
        }
        if &bytes[..4] != MAGIC {
            return Err(BundleError::NotABundle);
        }
        if bytes.len() < HEADER {
            return Err(BundleError::TooShort);
        }
        let version = u16::from_le_bytes([bytes[4], bytes[5]]);
        if !(1..=VERSION).contains(&version) {
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
        let decoded = match version {
            1 => bincode::serde::decode_from_slice::<BundleOld<TaskMetaV1>, _>(payload, config())
                .map(|(b, used)| (b.into(), used)),
            2 => bincode::serde::decode_from_slice::<BundleOld<TaskMetaV2>, _>(payload, config())
                .map(|(b, used)| (b.into(), used)),
            _ => bincode::serde::decode_from_slice(payload, config()),
        };
        let (bundle, used): (Bundle, usize) =
            decoded.map_err(|e| BundleError::Decode(e.to_string()))?;
        if used != payload.len() {
            return Err(BundleError::Decode(format!(
                "{} bytes after the payload",
                payload.len() - used
            )));
        }
        verify::verify(&bundle).map_err(BundleError::Invalid)?;
        Ok(bundle)
    }

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

    pub fn location(&self, loc: Loc) -> String {
        let file = self
            .files
            .get(loc.file as usize)
            .map_or("?", String::as_str);
        format!("{file}:{}:{}", loc.line, loc.col)
    }
}
