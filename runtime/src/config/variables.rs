//! The table of every variable `tvm` reads ([`VARIABLES`]): what each sets, whether a
//! `.env` may set it (or only lower it), whether it is a secret. The README's table of
//! variables is held to it by a test; [`super::env`] reads them, [`super::dotenv`]
//! takes from a `.env` only what it allows.

/// How a `.env` may set a variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DotEnv {
    /// Only the environment sets it.
    Never,
    Yes,
    /// A `.env` may lower it, never raise it.
    LowerOnly,
}

/// A variable `tvm` reads, as the README's table of settings lists it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Variable {
    pub name: &'static str,
    /// What it sets, as the README says (read by the test that holds the README's table
    /// to this one).
    #[cfg_attr(not(test), allow(dead_code))]
    pub sets: &'static str,
    pub dotenv: DotEnv,
    /// A secret: it never stays in `tvm`'s environment block (`tvm` starts itself
    /// again without it) and never reaches a script's environment. [`SECRET_VARS`] lists
    /// them, and a test holds the two to each other.
    #[cfg_attr(not(test), allow(dead_code))]
    pub secret: bool,
}

const fn var(name: &'static str, sets: &'static str, dotenv: DotEnv, secret: bool) -> Variable {
    Variable {
        name,
        sets,
        dotenv,
        secret,
    }
}

/// Every variable `tvm` reads from its environment (and a `.env`).
pub(crate) const VARIABLES: &[Variable] = &[
    var(OPENAI_API_KEY, "OpenAI's key", DotEnv::Yes, true),
    var(ANTHROPIC_API_KEY, "Anthropic's key", DotEnv::Yes, true),
    var(OPENAI_BASE_URL, "OpenAI's server", DotEnv::Yes, false),
    var(ANTHROPIC_BASE_URL, "Anthropic's server", DotEnv::Yes, false),
    var(TVM_PROVIDER, "the default provider", DotEnv::Yes, false),
    var(
        TVM_MODEL,
        "the model of tasks that name none",
        DotEnv::Yes,
        false,
    ),
    var(TVM_JSON_MODE, "`native` or `prompt`", DotEnv::Yes, false),
    var(TVM_CACHE, "the reply cache's folder", DotEnv::Yes, false),
    var(TVM_MAX_COST, "the budget in USD", DotEnv::LowerOnly, false),
    var(
        TVM_CONCURRENCY,
        "LLM calls in flight per provider",
        DotEnv::LowerOnly,
        false,
    ),
    var(NATS_TOKEN, "the NATS server's token", DotEnv::Never, true),
    var(
        NATS_PASSWORD,
        "the NATS user's password",
        DotEnv::Never,
        true,
    ),
    var(
        NATS_CREDS,
        "the NATS credentials file",
        DotEnv::Never,
        false,
    ),
    var(NATS_USER, "the NATS user", DotEnv::Never, false),
    var(NATS_CA, "the NATS server's CA", DotEnv::Never, false),
    var(
        NATS_CERT,
        "the NATS client certificate",
        DotEnv::Never,
        false,
    ),
    var(NATS_KEY, "the NATS client key", DotEnv::Never, false),
];

/// The variables that hold secrets `tvm` uses (those of `VARIABLES` marked secret).
pub const SECRET_VARS: &[&str] = &[OPENAI_API_KEY, ANTHROPIC_API_KEY, NATS_TOKEN, NATS_PASSWORD];

/// The variables the provider adapters read.
pub(crate) const PROVIDER_VARS: &[&str] = &[
    OPENAI_API_KEY,
    OPENAI_BASE_URL,
    ANTHROPIC_API_KEY,
    ANTHROPIC_BASE_URL,
    TVM_MODEL,
];

/// The `TVM_*` settings, each in the README's table of settings.
pub const SETTINGS: &[&str] = &[
    TVM_CACHE,
    TVM_CONCURRENCY,
    TVM_JSON_MODE,
    TVM_MAX_COST,
    TVM_MODEL,
    TVM_PROVIDER,
];

/// `TVM_*` names `tvm` gives the scripts it runs (inputs, the marker of a script's
/// processes): a `tvm` started by a script finds them, and they are not settings.
pub const GIVEN_TO_SCRIPTS: &[&str] = &["TVM_INPUT_", "TVM_SCRIPT_RUN"];

pub const OPENAI_API_KEY: &str = "OPENAI_API_KEY";
pub const ANTHROPIC_API_KEY: &str = "ANTHROPIC_API_KEY";
pub const OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";
pub const ANTHROPIC_BASE_URL: &str = "ANTHROPIC_BASE_URL";
pub const TVM_PROVIDER: &str = "TVM_PROVIDER";
pub const TVM_MODEL: &str = "TVM_MODEL";
pub const TVM_JSON_MODE: &str = "TVM_JSON_MODE";
pub const TVM_CACHE: &str = "TVM_CACHE";
pub const TVM_MAX_COST: &str = "TVM_MAX_COST";
pub const TVM_CONCURRENCY: &str = "TVM_CONCURRENCY";
/// What a NATS server may ask a worker or a publisher for, as the `nats` tool reads it.
pub const NATS_TOKEN: &str = "NATS_TOKEN";
pub const NATS_PASSWORD: &str = "NATS_PASSWORD";
/// How to sign in to a NATS server and check who it is, as the `nats` tool reads them
/// (each a flag's default, `--nats-creds` ...).
pub const NATS_CREDS: &str = "NATS_CREDS";
pub const NATS_USER: &str = "NATS_USER";
pub const NATS_CA: &str = "NATS_CA";
pub const NATS_CERT: &str = "NATS_CERT";
pub const NATS_KEY: &str = "NATS_KEY";

/// Whether a snapshot of the process environment should hold `name`: a variable of
/// `VARIABLES`, or a `TVM_*` name (a misspelt setting is named in a warning).
pub fn wanted(name: &str) -> bool {
    name.starts_with("TVM_") || VARIABLES.iter().any(|v| v.name == name)
}
