//! A built-in's signature and one call of it in progress: what the table in
//! [`super::BUILTINS`] and the implementations in [`crate::functions`] both use.

use crate::bounds::NODE;
use crate::types::Type;
use serde_json::Value;
use std::fmt;

/// A built-in called with a value it cannot use. `function` is the name as called.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltinError {
    /// The built-in's name.
    pub function: String,
    /// What went wrong, as a clause that follows the name.
    pub message: String,
}

impl fmt::Display for BuiltinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.function, self.message)
    }
}

impl std::error::Error for BuiltinError {}

/// One built-in function: its signature for the checker and the implementation the
/// machine calls.
#[derive(Debug)]
pub struct Builtin {
    /// The name templates call it by.
    pub name: &'static str,
    /// Its parameters in order.
    pub params: &'static [BuiltinParam],
    /// The type of its result.
    pub returns: Ret,
    /// One sentence on what it returns, kept beside its signature.
    pub doc: &'static str,
    /// The largest weight of its result beyond the result's own node ([`crate::bounds`]).
    pub(super) bound: fn(&[Value]) -> u64,
    /// The implementation, given arguments already checked against the arity.
    pub(super) function: fn(&Call) -> Result<Value, BuiltinError>,
}

/// A parameter of a built-in.
#[derive(Debug)]
pub struct BuiltinParam {
    /// Its name, as signatures and error messages show it.
    pub name: &'static str,
    /// The values it takes.
    pub ty: Ty,
    /// Optional parameters come last.
    pub optional: bool,
}

/// Types as constants (a `Type` with a `Box` cannot be a `const`), and the unions of
/// types some built-ins take, so the checker can refuse an argument that never works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// Any value.
    Any,
    /// A string.
    String,
    /// A number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// `null`.
    Null,
    /// An object.
    Object,
    /// An array of anything.
    Array,
    /// An array of strings.
    Strings,
    /// Something with a length or members: `len`, the haystack of `contains`.
    StringArrayOrObject,
    /// What `get` looks into; null reads as "nothing there", so lookups chain.
    ObjectArrayOrNull,
    /// A key of an object or an index of an array (a numeric string counts).
    StringOrNumber,
}

impl Ty {
    /// The closest single type: a union is `any`, as nothing narrower holds all of it.
    pub fn to_type(self) -> Type {
        match self {
            Ty::Any | Ty::StringArrayOrObject | Ty::ObjectArrayOrNull | Ty::StringOrNumber => {
                Type::Any
            }
            Ty::String => Type::String,
            Ty::Number => Type::Number,
            Ty::Boolean => Type::Boolean,
            Ty::Null => Type::Null,
            Ty::Object => Type::Object,
            Ty::Array => Type::Array(Box::new(Type::Any)),
            Ty::Strings => Type::Array(Box::new(Type::String)),
        }
    }

    /// The single types a value of this type may have.
    pub fn members(self) -> &'static [Ty] {
        match self {
            Ty::StringArrayOrObject => &[Ty::String, Ty::Array, Ty::Object],
            Ty::ObjectArrayOrNull => &[Ty::Object, Ty::Array, Ty::Null],
            Ty::StringOrNumber => &[Ty::String, Ty::Number],
            Ty::Any => &[Ty::Any],
            Ty::String => &[Ty::String],
            Ty::Number => &[Ty::Number],
            Ty::Boolean => &[Ty::Boolean],
            Ty::Null => &[Ty::Null],
            Ty::Object => &[Ty::Object],
            Ty::Array => &[Ty::Array],
            Ty::Strings => &[Ty::Strings],
        }
    }

    /// Whether an argument of type `t` may be passed: it fits one of the members. An
    /// `any` argument fits everything (its type is known only at run time).
    pub fn accepts(self, t: &Type) -> bool {
        self.members().iter().any(|m| t.fits(&m.to_type()))
    }

    /// The type for a message: "`number`", or "`string`, `array` or `object`".
    pub fn describe(self) -> String {
        let names: Vec<String> = self
            .members()
            .iter()
            .map(|m| format!("`{}`", m.to_type()))
            .collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.concat(),
        }
    }
}

/// As in a signature: `string`, or `string | array | object`.
impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, m) in self.members().iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{}", m.to_type())?;
        }
        Ok(())
    }
}

/// The result type, possibly following the first argument (`default`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ret {
    /// Always this type.
    Fixed(Ty),
    /// The type of the first argument (`default`, which returns it or its fallback).
    SameAsFirst,
}

impl Builtin {
    /// Runs the built-in on arguments bound by position (absent optional trailing ones
    /// left out). A wrong number of arguments is an error, not a panic: the machine may
    /// run bytecode from an older or foreign compiler.
    pub fn call(&'static self, args: &[Value]) -> Result<Value, BuiltinError> {
        let c = Call::new(self, args);
        let (min, max) = (self.min_arity(), self.max_arity());
        if args.len() < min || args.len() > max {
            let wanted = if min == max {
                format!("{min}")
            } else {
                format!("{min} to {max}")
            };
            return Err(c.fail(format!("takes {wanted} arguments, found {}", args.len())));
        }
        (self.function)(&c)
    }

    /// The largest weight its result can have for these arguments, known before it is
    /// built: the machine charges this to its memory budget first.
    pub fn result_bound(&self, args: &[Value]) -> u64 {
        NODE + (self.bound)(args)
    }

    /// How many arguments a call must give: the parameters that are not optional.
    pub fn min_arity(&self) -> usize {
        self.params.iter().filter(|p| !p.optional).count()
    }

    /// How many arguments a call may give: all its parameters.
    pub fn max_arity(&self) -> usize {
        self.params.len()
    }

    /// The signature as the language's documentation shows it:
    /// `join(items: array, separator?: string) -> string`.
    pub fn signature(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| {
                let opt = if p.optional { "?" } else { "" };
                format!("{}{opt}: {}", p.name, p.ty)
            })
            .collect();
        let ret = match self.returns {
            Ret::Fixed(t) => t.to_type().to_string(),
            Ret::SameAsFirst => "same as first".into(),
        };
        format!("{}({}) -> {}", self.name, params.join(", "), ret)
    }
}

pub(super) const fn p(name: &'static str, ty: Ty) -> BuiltinParam {
    BuiltinParam {
        name,
        ty,
        optional: false,
    }
}

pub(super) const fn opt(name: &'static str, ty: Ty) -> BuiltinParam {
    BuiltinParam {
        name,
        ty,
        optional: true,
    }
}

/// One call in progress: the signature (for the function and parameter names in errors)
/// and the arguments.
pub(crate) struct Call<'a> {
    builtin: &'static Builtin,
    args: &'a [Value],
}

impl<'a> Call<'a> {
    pub(crate) fn new(builtin: &'static Builtin, args: &'a [Value]) -> Self {
        Call { builtin, args }
    }

    pub(crate) fn fail(&self, message: String) -> BuiltinError {
        BuiltinError {
            function: self.builtin.name.to_string(),
            message,
        }
    }

    /// The error for argument `i` not being what the function wants.
    pub(crate) fn wrong(&self, i: usize, expected: &str) -> BuiltinError {
        let param = self.builtin.params.get(i).map_or("?", |p| p.name);
        self.fail(format!(
            "expected {expected} for `{param}`, found {}",
            describe(self.arg(i))
        ))
    }

    /// Argument `i`; absent ones read as null so a short slice never panics.
    pub(crate) fn arg(&self, i: usize) -> &'a Value {
        self.args.get(i).unwrap_or(&Value::Null)
    }

    pub(crate) fn opt(&self, i: usize) -> Option<&'a Value> {
        self.args.get(i)
    }

    pub(crate) fn str(&self, i: usize) -> Result<&'a str, BuiltinError> {
        self.arg(i)
            .as_str()
            .ok_or_else(|| self.wrong(i, "a string"))
    }

    pub(crate) fn array(&self, i: usize) -> Result<&'a Vec<Value>, BuiltinError> {
        self.arg(i)
            .as_array()
            .ok_or_else(|| self.wrong(i, "an array"))
    }

    pub(crate) fn object(
        &self,
        i: usize,
    ) -> Result<&'a serde_json::Map<String, Value>, BuiltinError> {
        self.arg(i)
            .as_object()
            .ok_or_else(|| self.wrong(i, "an object"))
    }

    /// A string argument that must not be empty (splitting or replacing on "" has no
    /// single sensible meaning).
    pub(crate) fn non_empty_str(&self, i: usize) -> Result<&'a str, BuiltinError> {
        let s = self.str(i)?;
        if s.is_empty() {
            return Err(self.wrong(i, "a non-empty string"));
        }
        Ok(s)
    }
}

/// A short description of a value for error messages: its kind, then a preview.
fn describe(v: &Value) -> String {
    const PREVIEW: usize = 40;
    let kind = match v {
        Value::Null => return "null".into(),
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    format!(
        "{kind} {}",
        crate::values::cut_chars(&v.to_string(), PREVIEW)
    )
}
