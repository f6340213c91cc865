//! Types as templates write them (DESIGN §5, §13):
//!
//! ```text
//! type    := member ('|' member)*          members of a union are string literals
//! member  := primary ('[]')*
//! primary := NAME | STRING | '[]' | '(' type ')' | '{' (field (',' field)* ','?)? '}'
//! field   := (NAME | STRING) '?'? ':' type
//! ```
//!
//! A NAME is a scalar (`string`, `number`, `boolean`, `null`, `object`, `array`,
//! `any`) or a type the library declares. Strings are quoted with `"` or `'`.

use super::{Field, Record, Type, MAX_NESTING, MAX_SIZE, SCALAR_NAMES};
use std::ops::Range;
use std::sync::Arc;

/// Why a written type is not one, and where (byte offsets into the text parsed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeError {
    /// Where in the text, in bytes.
    pub span: Range<usize>,
    /// What is wrong, as a sentence.
    pub message: String,
    /// The name, when the error is a name that is neither a scalar nor declared, so
    /// the caller can suggest one it knows.
    pub unknown: Option<String>,
}

/// Parses a type, resolving names that are not scalars with `declared`.
pub fn parse_with(text: &str, declared: &dyn Fn(&str) -> Option<Type>) -> Result<Type, TypeError> {
    let mut p = Parser {
        text,
        pos: 0,
        level: 0,
        declared,
    };
    let (t, _) = p.union()?;
    p.skip_space();
    if p.pos < text.len() {
        return Err(p.error(p.pos..text.len(), "unexpected text after the type"));
    }
    Ok(t)
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    /// Records and parentheses open around the parser now.
    level: usize,
    declared: &'a dyn Fn(&str) -> Option<Type>,
}

type Parsed = Result<(Type, usize), TypeError>;

impl Parser<'_> {
    fn error(&self, span: Range<usize>, message: impl Into<String>) -> TypeError {
        TypeError {
            span,
            message: message.into(),
            unknown: None,
        }
    }

    fn skip_space(&mut self) {
        let rest = &self.text[self.pos..];
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_space();
        self.text[self.pos..].chars().next()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char, what: &str) -> Result<(), TypeError> {
        if self.eat(c) {
            return Ok(());
        }
        let at = self.pos;
        let end = self.text[at..]
            .chars()
            .next()
            .map_or(at, |ch| at + ch.len_utf8());
        let found = match self.text[at..].chars().next() {
            Some(ch) => format!("`{ch}`"),
            None => "the end".to_string(),
        };
        Err(self.error(at..end, format!("expected {what}, found {found}")))
    }

    /// A type with its depth (how deeply its arrays and records nest).
    fn union(&mut self) -> Parsed {
        let start = self.peek().map_or(self.pos, |_| self.pos);
        let first = self.member()?;
        if self.peek() != Some('|') {
            return Ok(first);
        }
        let mut all: Vec<String> = Vec::new();
        let mut member = first;
        let mut member_start = start;
        loop {
            match member.0 {
                Type::Literals(ls) => all.extend(
                    ls.iter()
                        .filter(|l| !all.contains(l))
                        .cloned()
                        .collect::<Vec<_>>(),
                ),
                other => {
                    return Err(self.error(
                        member_start..self.pos,
                        format!("a union joins string literals only, and `{other}` is not one"),
                    ))
                }
            }
            if !self.eat('|') {
                return Ok((Type::Literals(Arc::new(all)), 0));
            }
            self.skip_space();
            member_start = self.pos;
            member = self.member()?;
        }
    }

    fn member(&mut self) -> Parsed {
        let start = self.peek().map_or(self.pos, |_| self.pos);
        let (mut t, depth) = self.primary()?;
        let mut arrays = 0;
        while self.text[self.pos..].trim_start().starts_with("[]") {
            self.skip_space();
            self.pos += 2;
            arrays += 1;
            if depth + arrays > MAX_NESTING {
                return Err(self.error(
                    start..self.pos,
                    format!("the type nests more than {MAX_NESTING} levels of arrays and records"),
                ));
            }
        }
        for _ in 0..arrays {
            t = Type::Array(Box::new(t));
        }
        Ok((t, depth + arrays))
    }

    fn primary(&mut self) -> Parsed {
        let start = self.pos;
        match self.peek() {
            Some('{') => self.nested(|p| p.record()),
            Some('(') => self.nested(|p| {
                p.pos += 1;
                let inner = p.union()?;
                p.expect(')', "`)`")?;
                Ok(inner)
            }),
            Some('"' | '\'') => {
                let s = self.string()?;
                Ok((Type::Literals(Arc::new(vec![s])), 0))
            }
            Some('[') if self.text[self.pos..].starts_with("[]") => {
                self.pos += 2;
                Ok((Type::Array(Box::new(Type::Any)), 1))
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => self.name(),
            Some(c) => Err(self.error(
                self.pos..self.pos + c.len_utf8(),
                format!("expected a type, found `{c}`"),
            )),
            None => Err(self.error(start..self.pos, "expected a type, found the end")),
        }
    }

    /// Records and parentheses recurse; the level bounds how deeply.
    fn nested(&mut self, inner: impl FnOnce(&mut Self) -> Parsed) -> Parsed {
        if self.level >= MAX_NESTING {
            let at = self.pos;
            return Err(self.error(
                at..at + 1,
                format!("the type nests more than {MAX_NESTING} levels of arrays and records"),
            ));
        }
        self.level += 1;
        let r = inner(self);
        self.level -= 1;
        r
    }

    fn ident(&mut self) -> &str {
        self.skip_space();
        let rest = &self.text[self.pos..];
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        self.pos += len;
        &rest[..len]
    }

    fn name(&mut self) -> Parsed {
        self.skip_space();
        let start = self.pos;
        let name = self.ident().to_string();
        let t = match name.as_str() {
            "any" => Type::Any,
            "string" => Type::String,
            "number" => Type::Number,
            "boolean" => Type::Boolean,
            "null" => Type::Null,
            "object" => Type::Object,
            "array" => Type::Array(Box::new(Type::Any)),
            _ => match (self.declared)(&name) {
                Some(t) => t,
                None => {
                    return Err(TypeError {
                        span: start..self.pos,
                        message: format!("unknown type `{name}`"),
                        unknown: Some(name),
                    })
                }
            },
        };
        let depth = t.depth();
        Ok((t, depth))
    }

    fn record(&mut self) -> Parsed {
        let open = self.pos;
        self.pos += 1;
        let mut fields: Vec<Field> = Vec::new();
        let mut depth = 0;
        while !self.eat('}') {
            let at = self.pos;
            let name = match self.peek() {
                Some('"' | '\'') => self.string()?,
                Some(c) if c.is_ascii_alphabetic() || c == '_' => self.ident().to_string(),
                Some(_) => {
                    self.skip_space();
                    return Err(self.error(self.pos..self.pos + 1, "expected a field name or `}`"));
                }
                None => {
                    return Err(self.error(open..open + 1, "this record is never closed with `}`"))
                }
            };
            if fields.iter().any(|f| f.name == name) {
                return Err(self.error(at..self.pos, format!("field `{name}` is declared twice")));
            }
            let optional = self.eat('?');
            self.expect(':', "`:` and the field's type")?;
            let (ty, d) = self.union()?;
            depth = depth.max(d);
            fields.push(Field { name, optional, ty });
            if !self.eat(',') {
                self.expect('}', "`,` or `}`")?;
                break;
            }
        }
        if depth + 1 > MAX_NESTING {
            return Err(self.error(
                open..self.pos,
                format!("the type nests more than {MAX_NESTING} levels of arrays and records"),
            ));
        }
        let record = Record::new(None, fields);
        if record.size > MAX_SIZE {
            return Err(self.error(
                open..self.pos,
                format!("the type holds more than {MAX_SIZE} types written out"),
            ));
        }
        Ok((Type::Record(Arc::new(record)), depth + 1))
    }

    /// A quoted string, `"..."` or `'...'`, with the escapes of expressions.
    fn string(&mut self) -> Result<String, TypeError> {
        self.skip_space();
        let start = self.pos;
        let mut chars = self.text[self.pos..].char_indices();
        let Some((_, quote)) = chars.next() else {
            return Err(self.error(start..start, "expected a string"));
        };
        let mut out = String::new();
        while let Some((i, c)) = chars.next() {
            match c {
                c if c == quote => {
                    self.pos = start + i + c.len_utf8();
                    return Ok(out);
                }
                '\\' => match chars.next() {
                    Some((_, e @ ('"' | '\'' | '\\'))) => out.push(e),
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    Some((j, e)) => {
                        let at = start + j;
                        return Err(self.error(
                            at - 1..at + e.len_utf8(),
                            format!("unknown escape `\\{e}`: strings take \\\" \\' \\\\ \\n \\t"),
                        ));
                    }
                    None => break,
                },
                c => out.push(c),
            }
        }
        Err(self.error(start..self.text.len(), "this string is never closed"))
    }
}

/// Whether a name may be declared as a type: not a scalar's.
pub fn is_scalar_name(name: &str) -> bool {
    SCALAR_NAMES.contains(&name)
}
