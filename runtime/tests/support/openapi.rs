//! OpenAI's published API description as the judge of the request bodies the OpenAI
//! adapter sends: `components.schemas.CreateChatCompletionRequest` of `openapi.yaml` in the
//! `shared/` folder that sits beside the repository (as CI clones it).
//!
//! The document is read and its schema compiled once per test binary: it is about 3 MB of
//! YAML, too slow to parse again in every test.

use jsonschema::{Draft, Registry, Validator};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{json, Map, Value};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The name the document is registered under. Its `$ref`s are fragments
/// (`#/components/schemas/...`), so they resolve inside it whatever the name is; a URN
/// cannot be mistaken for something to download.
const BASE: &str = "urn:openai:openapi";

/// The schema every chat-completion request body must conform to.
const REQUEST: &str = "#/components/schemas/CreateChatCompletionRequest";

/// Where the spec is: `shared/` beside the repository, which is two levels above this crate.
pub fn spec_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/openai-openapi/openapi.yaml")
}

/// The compiled request schema. Panics, naming the path, if the spec cannot be read: a
/// missing spec must fail the tests that need it, not let them pass unchecked.
pub fn validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| compile(read_spec(&spec_path()).unwrap_or_else(|e| panic!("{e}"))))
}

/// The spec at `path` as JSON, or why it cannot be had.
pub fn read_spec(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "OpenAI's API spec cannot be read at {} ({e}); these tests need the `shared/` \
             folder beside the repository, with openai-openapi/openapi.yaml in it",
            path.display()
        )
    })?;
    yaml_serde::from_str(&text)
        .map(|Json(spec)| spec)
        .map_err(|e| format!("{} is not a YAML document ({e})", path.display()))
}

/// A YAML value as JSON. `serde_json::Value` refuses integers beyond 64 bits, and the spec
/// has one: the minimum of `seed` is written -9223372036854776000, which is how a float
/// prints -2^63 (`i64::MIN`), but read as an integer lies below `i64::MIN`. Read as a float
/// it is exactly the bound meant.
struct Json(Value);

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(yaml: D) -> Result<Json, D::Error> {
        yaml.deserialize_any(JsonVisitor).map(Json)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a value JSON can hold")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, yaml: D) -> Result<Value, D::Error> {
        yaml.deserialize_any(self)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_i128<E>(self, v: i128) -> Result<Value, E> {
        Ok((v as f64).into())
    }

    fn visit_u128<E>(self, v: u128) -> Result<Value, E> {
        Ok((v as f64).into())
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(Json(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some((key, Json(value))) = map.next_entry::<String, Json>()? {
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
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
