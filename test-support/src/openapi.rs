//! OpenAI's published API description as the judge of the request bodies the OpenAI
//! adapter sends: `components.schemas.CreateChatCompletionRequest` and the schemas it
//! refers to, taken from OpenAI's published `openapi.yaml` into `tests/data/`.
//!
//! The document is read and its schema compiled once per test binary.

use jsonschema::{Draft, Registry, Validator};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The name the document is registered under. Its `$ref`s are fragments
/// (`#/components/schemas/...`), so they resolve inside it whatever the name is; a URN
/// cannot be mistaken for something to download.
const BASE: &str = "urn:openai:openapi";

/// The schema every chat-completion request body must conform to.
const REQUEST: &str = "#/components/schemas/CreateChatCompletionRequest";

/// Where the spec is: the part of it these tests read, carried in the repository
/// (`runtime/tests/data/README.md` says where it was taken from and how to take it again).
pub fn spec_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../runtime/tests/data/openai-chat-request.json")
}

/// The compiled request schema. Panics, naming the path, if the spec cannot be read: a
/// missing spec must fail the tests that need it, not let them pass unchecked.
pub(crate) fn validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| compile(read_spec(&spec_path()).unwrap_or_else(|e| panic!("{e}"))))
}

/// The spec at `path` as JSON, or why it cannot be had. The `minimum` of `seed` is written
/// -9223372036854776000, which is how a float prints -2^63 (`i64::MIN`); serde_json reads
/// an integer beyond 64 bits as that float, which is exactly the bound meant.
pub fn read_spec(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "OpenAI's API spec cannot be read at {} ({e})",
            path.display()
        )
    })?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not JSON ({e})", path.display()))
}

/// The validator for the request schema, with the whole document registered so that every
/// `$ref` in it resolves.
fn compile(spec: Value) -> Validator {
    // OpenAPI 3.1 schemas are JSON Schema 2020-12. Its own keywords (`discriminator`,
    // `x-oaiMeta`, `x-stainless-*`) are annotations there, which a 2020-12 validator ignores
    // as unknown keywords, so they can neither pass nor fail a body. `nullable: true`, a
    // leftover of OpenAPI 3.0 on about a hundred fields, is ignored as well: a `null` in one
    // of them fails here though the spec means to allow it. That errs on the strict side
    // only, and the adapter sends no nulls.
    let registry = Registry::new()
        .draft(Draft::Draft202012)
        .add(BASE, spec)
        .and_then(|r| r.prepare())
        .unwrap_or_else(|e| panic!("OpenAI's API spec cannot be registered: {e}"));
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .with_registry(&registry)
        .build(&json!({"$ref": format!("{BASE}{REQUEST}")}))
        .unwrap_or_else(|e| panic!("{REQUEST} of OpenAI's API spec does not compile: {e}"))
}

/// Every way `body` breaks the request schema, one line each: where in the body, and what.
pub fn validate(body: &Value) -> Result<(), Vec<String>> {
    let errors: Vec<String> = validator()
        .iter_errors(body)
        .map(|e| format!("{}: {e}", display_path(e.instance_path().as_str())))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Panics with every violation if `body` is not a valid chat-completion request.
pub fn assert_valid_chat_request(body: &Value) {
    if let Err(errors) = validate(body) {
        panic!(
            "the body breaks OpenAI's CreateChatCompletionRequest schema:\n  {}\nbody: {body:#}",
            errors.join("\n  ")
        );
    }
}

/// The body itself is the empty pointer, which would print as nothing.
fn display_path(pointer: &str) -> &str {
    if pointer.is_empty() {
        "(the body)"
    } else {
        pointer
    }
}
