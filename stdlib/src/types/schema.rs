//! A type as JSON Schema, as providers' structured-output modes take it (DESIGN §13),
//! and the smallest value of a type, which a dry run answers with.

use super::{Record, Type};
use serde_json::{json, Map, Value};

/// The JSON Schema of a type, in the form OpenAI's strict mode requires wherever the
/// type allows it: a record is an `object` whose `properties` are all `required`, with
/// `additionalProperties: false`; an optional field is a union with `null`. String
/// literals are an `enum`. `any` is `{}` and a plain `object` or `array` has no
/// further constraint, which strict mode does not accept (see [`strict_schema`]).
pub fn json_schema(t: &Type) -> Value {
    match t {
        Type::Any => json!({}),
        Type::String => json!({"type": "string"}),
        Type::Number => json!({"type": "number"}),
        Type::Boolean => json!({"type": "boolean"}),
        Type::Null => json!({"type": "null"}),
        Type::Object => json!({"type": "object"}),
        Type::Array(item) if **item == Type::Any => json!({"type": "array"}),
        Type::Array(item) => json!({"type": "array", "items": json_schema(item)}),
        Type::Literals(ls) => json!({"type": "string", "enum": ls.as_ref()}),
        Type::Record(r) => record_schema(r),
    }
}

fn record_schema(r: &Record) -> Value {
    let mut properties = Map::with_capacity(r.fields.len());
    for f in &r.fields {
        let schema = json_schema(&f.ty);
        let schema = if f.optional {
            json!({"anyOf": [schema, {"type": "null"}]})
        } else {
            schema
        };
        properties.insert(f.name.clone(), schema);
    }
    let required: Vec<&str> = r.fields.iter().map(|f| f.name.as_str()).collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// The schema a provider's strict mode accepts, when the type can be written in it:
/// a record at the top, and under it no `any`, plain `object` or untyped `array`
/// (strict mode needs every object's properties and every array's items).
pub fn strict_schema(t: &Type) -> Option<Value> {
    (matches!(t, Type::Record(_)) && fully_typed(t)).then(|| json_schema(t))
}

/// The property a value that is not a record is sent in under strict mode, which takes
/// only an object at the top: `string[]` is asked for as `{"value": [...]}`, and the
/// reply is unwrapped before it is read.
pub const WRAPPED: &str = "value";

/// The strict schema of a fully typed type that is not a record (`string[]`, a union of
/// strings, `number`): an object whose one required property, [`WRAPPED`], is the type.
pub fn strict_wrapped(t: &Type) -> Option<Value> {
    let wrapped = !matches!(t, Type::Record(_)) && fully_typed(t);
    wrapped.then(|| {
        json!({
            "type": "object",
            "properties": {WRAPPED: json_schema(t)},
            "required": [WRAPPED],
            "additionalProperties": false,
        })
    })
}

fn fully_typed(t: &Type) -> bool {
    match t {
        Type::Any | Type::Object => false,
        Type::Array(item) => **item != Type::Any && fully_typed(item),
        Type::Record(r) => r.fields.iter().all(|f| fully_typed(&f.ty)),
        Type::String | Type::Number | Type::Boolean | Type::Null | Type::Literals(_) => true,
    }
}

/// The smallest value of a type (DESIGN §13): a record with its required fields,
/// `""`, `0`, `false`, `[]`, `{}`, the first of some literals; `null` for `any`.
pub fn smallest_value(t: &Type) -> Value {
    match t {
        Type::Any | Type::Null => Value::Null,
        Type::String => Value::String(String::new()),
        Type::Number => json!(0),
        Type::Boolean => Value::Bool(false),
        Type::Object => Value::Object(Map::new()),
        Type::Array(_) => Value::Array(Vec::new()),
        Type::Literals(ls) => ls.first().map_or(Value::Null, |l| Value::String(l.clone())),
        Type::Record(r) => Value::Object(
            r.fields
                .iter()
                .filter(|f| !f.optional)
                .map(|f| (f.name.clone(), smallest_value(&f.ty)))
                .collect(),
        ),
    }
}
