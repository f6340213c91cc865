//! The built-in functions at run time, over `serde_json::Value`, each registered with its
//! signature (names, parameters, arity) in `builtins::BUILTINS`; the value rules they
//! share with the VM (text, truthiness, equality, JSON from model output) are in
//! [`crate::values`].

type Value = serde_json::Value;

pub(crate) use crate::builtins::call::BuiltinError;
use crate::builtins::call::Call;
use crate::values::{equal, int_of, parse_json_text, to_text};
use serde_json::Number;

// The implementations, registered with their signatures in `builtins::BUILTINS`.

pub(crate) fn upper(c: &Call) -> Result<Value, BuiltinError> {
    Ok(c.str(0)?.to_uppercase().into())
}

pub(crate) fn lower(c: &Call) -> Result<Value, BuiltinError> {
    Ok(c.str(0)?.to_lowercase().into())
}

pub(crate) fn trim(c: &Call) -> Result<Value, BuiltinError> {
    Ok(c.str(0)?.trim().into())
}

pub(crate) fn json(c: &Call) -> Result<Value, BuiltinError> {
    Ok(c.arg(0).to_string().into())
}

pub(crate) fn keys(c: &Call) -> Result<Value, BuiltinError> {
    Ok(c.object(0)?.keys().cloned().collect::<Vec<_>>().into())
}

pub(crate) fn str(c: &Call) -> Result<Value, BuiltinError> {
    Ok(to_text(c.arg(0)).into())
}

pub(crate) fn parse_json(c: &Call) -> Result<Value, BuiltinError> {
    parse_json_text(c.str(0)?).map_err(|e| c.fail(format!("the text is not JSON: {e}")))
}

pub(crate) fn starts_with(c: &Call) -> Result<Value, BuiltinError> {
    Ok(c.str(0)?.starts_with(c.str(1)?).into())
}

pub(crate) fn ends_with(c: &Call) -> Result<Value, BuiltinError> {
    Ok(c.str(0)?.ends_with(c.str(1)?).into())
}

pub(crate) fn merge(c: &Call) -> Result<Value, BuiltinError> {
    let mut merged = c.object(0)?.clone();
    merged.extend(c.object(1)?.iter().map(|(k, v)| (k.clone(), v.clone())));
    Ok(Value::Object(merged))
}

pub(crate) fn len(c: &Call) -> Result<Value, BuiltinError> {
    let n = match c.arg(0) {
        Value::String(s) => s.chars().count(),
        Value::Array(a) => a.len(),
        Value::Object(o) => o.len(),
        _ => return Err(c.wrong(0, "a string, an array or an object")),
    };
    Ok(n.into())
}

pub(crate) fn join(c: &Call) -> Result<Value, BuiltinError> {
    let items = c.array(0)?;
    let separator = match c.opt(1) {
        Some(_) => c.str(1)?,
        None => ", ",
    };
    let texts: Vec<String> = items.iter().map(to_text).collect();
    Ok(texts.join(separator).into())
}

pub(crate) fn split(c: &Call) -> Result<Value, BuiltinError> {
    let text = c.str(0)?;
    let separator = c.non_empty_str(1)?;
    Ok(text.split(separator).collect::<Vec<_>>().into())
}

pub(crate) fn replace(c: &Call) -> Result<Value, BuiltinError> {
    let text = c.str(0)?;
    let from = c.non_empty_str(1)?;
    let to = c.str(2)?;
    Ok(text.replace(from, to).into())
}

pub(crate) fn contains(c: &Call) -> Result<Value, BuiltinError> {
    let needle = c.arg(1);
    let found = match c.arg(0) {
        Value::String(s) => s.contains(to_text(needle).as_str()),
        Value::Array(a) => a.iter().any(|item| equal(item, needle)),
        // Object keys are strings; a number needle is more likely a mistake than a key.
        Value::Object(o) => o.contains_key(c.str(1).map_err(|_| c.wrong(1, "a string key"))?),
        _ => return Err(c.wrong(0, "a string, an array or an object")),
    };
    Ok(found.into())
}

pub(crate) fn default(c: &Call) -> Result<Value, BuiltinError> {
    Ok(match c.arg(0) {
        Value::Null => c.arg(1).clone(),
        Value::String(s) if s.is_empty() => c.arg(1).clone(),
        v => v.clone(),
    })
}

pub(crate) fn get(c: &Call) -> Result<Value, BuiltinError> {
    let fallback = || c.opt(2).cloned().unwrap_or(Value::Null);
    let key = c.arg(1);
    let found = match c.arg(0) {
        // Null reads as "nothing there", so `get(get(a, "b"), "c")` chains without errors.
        Value::Null => None,
        Value::Object(o) => {
            let key = key.as_str().ok_or_else(|| c.wrong(1, "a string key"))?;
            o.get(key)
        }
        Value::Array(a) => {
            let index = array_index(key).ok_or_else(|| c.wrong(1, "an integer index"))?;
            resolve_index(a, index)
        }
        _ => return Err(c.wrong(0, "an object or an array")),
    };
    Ok(found.cloned().unwrap_or_else(fallback))
}

/// An array index from a whole number or a numeric string ("2", "-1"). Out-of-range
/// floats saturate, so they read as absent rather than wrapping around.
fn array_index(key: &Value) -> Option<i128> {
    match key {
        Value::Number(n) => whole_number(n),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn whole_number(n: &Number) -> Option<i128> {
    if let Some(i) = int_of(n) {
        return Some(i);
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0).then_some(f as i128)
}

/// The item at `index`, negative counting from the end; None when out of range.
fn resolve_index(items: &[Value], index: i128) -> Option<&Value> {
    let len = i128::try_from(items.len()).ok()?;
    let i = if index < 0 { len + index } else { index };
    usize::try_from(i).ok().and_then(|i| items.get(i))
}

pub(crate) fn truncate(c: &Call) -> Result<Value, BuiltinError> {
    let text = c.str(0)?;
    let max = c
        .arg(1)
        .as_number()
        .and_then(whole_number)
        .filter(|n| *n >= 0)
        .ok_or_else(|| c.wrong(1, "a non-negative whole number"))?;
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    // By characters, never by bytes: a byte cut could split "é".
    Ok(text.chars().take(max).collect::<String>().into())
}

#[cfg(test)]
mod tests;
