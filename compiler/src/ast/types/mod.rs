//! Written types: `<type name="Review">` declarations and every type a template writes
//! (`params`, `returns`, `schema`, `<input type>`).
//!
//! A file is built on its own (often on a worker of its own), but a type may name a
//! declaration of any file, written before or after it. So building checks a type's
//! syntax and sets aside every type that names a declared type; once every file is
//! built, [`resolve`] resolves the declarations in dependency order (a cycle is an
//! error naming the chain) and then the types set aside, and writes them into the tree.

use super::build::Builder;
use super::schema::{self, did_you_mean_preferring};
use super::Ident;
use crate::diag::Diagnostic;
use crate::source::{Span, Spanned};
use crate::xml::{Element, Text};
use std::borrow::Cow;
use std::cell::RefCell;
use std::ops::Range;
use std::sync::Arc;
use tv_stdlib::types::{parse_with, Type, TypeError, SCALAR_NAMES, TYPE_NAMES};

mod resolve;

pub use resolve::Resolved;
pub(crate) use resolve::{apply as apply_resolved, resolve};

/// The predeclared record every evaluator's reply is read as (DESIGN §13).
pub(crate) const EVALUATION_RESULT: &str = "EvaluationResult";

/// `<type name="Review">{approved: boolean}</type>`, as written.
#[derive(Clone, Debug)]
pub struct TypeDecl {
    pub name: Ident,
    pub text: WrittenText,
    /// The names it uses that are not scalars, in order: what it depends on.
    pub uses: Vec<String>,
    /// False when its syntax is wrong (reported): it resolves to `any`, quietly.
    pub valid: bool,
}

/// A type's text kept past its XML tree: the decoded attribute or element text, the
/// way back to source offsets, and the bytes of it that are the type.
#[derive(Clone, Debug)]
pub struct WrittenText {
    pub text: Text<'static>,
    pub range: Range<usize>,
}

impl WrittenText {
    fn new(text: &Text, range: Range<usize>) -> WrittenText {
        let text = Text {
            value: Cow::Owned(text.value.to_string()),
            map: text.map.clone(),
            span: text.span,
        };
        WrittenText { text, range }
    }

    fn as_str(&self) -> &str {
        &self.text.value[self.range.clone()]
    }

    fn span(&self) -> Span {
        self.text.span_of(self.range.clone())
    }
}

/// A type that names declared types, set aside until every file is built; the tree
/// holds `any` at `span` until then.
#[derive(Clone, Debug)]
pub struct PendingType {
    pub written: WrittenText,
    pub what: &'static str,
}

/// The declarations of one file and its types that name declared types.
#[derive(Clone, Debug, Default)]
pub struct Declared {
    pub decls: Vec<TypeDecl>,
    pub pending: Vec<PendingType>,
}

impl Declared {
    pub fn extend(&mut self, other: Declared) {
        self.decls.extend(other.decls);
        self.pending.extend(other.pending);
    }
}

/// Reads a type's syntax, standing an empty literal union in for every name that is
/// not a scalar (it fits wherever a declared type could stand), and lists those names.
fn scan(s: &str) -> Result<(Type, Vec<String>), TypeError> {
    let names = RefCell::new(Vec::new());
    let t = parse_with(s, &|name| {
        names.borrow_mut().push(name.to_string());
        Some(Type::Literals(Arc::new(Vec::new())))
    })?;
    Ok((t, names.into_inner()))
}

impl Builder<'_> {
    /// The type written in `text[range]` (`what` names it in messages: "schema type").
    pub(super) fn written_type(
        &mut self,
        text: &Text,
        range: Range<usize>,
        what: &'static str,
    ) -> Option<Spanned<Type>> {
        let raw = &text.value[range.clone()];
        let at = range.start + (raw.len() - raw.trim_start().len());
        let written = WrittenText::new(text, at..at + raw.trim().len());
        let span = written.span();
        match scan(written.as_str()) {
            Err(e) => {
                self.diags.push(type_error(&written, &e, what, &[]));
                None
            }
            Ok((t, names)) if names.is_empty() => Some(Spanned::new(t, span)),
            Ok(_) => {
                self.types.pending.push(PendingType { written, what });
                Some(Spanned::new(Type::Any, span))
            }
        }
    }

    /// A type attribute's whole value.
    pub(super) fn type_attr(&mut self, text: &Text, what: &'static str) -> Option<Spanned<Type>> {
        self.written_type(text, 0..text.value.len(), what)
    }

    /// `<type name="Review">{approved: boolean}</type>` in a `<library>`.
    pub(super) fn type_decl(&mut self, el: &Element) {
        schema::check_attrs(el, crate::language::ElementId::TypeDecl, self.diags);
        schema::no_elements(el, self.diags);
        let Some(name) = el.attr("name") else {
            self.diags.push(
                Diagnostic::error(el.head(), "a `<type>` needs a `name`")
                    .with_help("write <type name=\"Review\">{approved: boolean}</type>"),
            );
            return;
        };
        let name = self.ident_attr(&name.value, "type name");
        let text = el.text();
        let written = WrittenText::new(&text, 0..text.value.len());
        let trimmed = text.value.trim();
        let lead = text.value.len() - text.value.trim_start().len();
        let written = WrittenText {
            range: lead..lead + trimmed.len(),
            ..written
        };
        if trimmed.is_empty() {
            self.diags.push(
                Diagnostic::error(el.head(), format!("type `{}` is empty", name.node)).with_help(
                    "write the type inside the element, like {approved: boolean, notes?: string}",
                ),
            );
            return;
        }
        let (uses, valid) = match scan(written.as_str()) {
            Ok((_, uses)) => (uses, true),
            Err(e) => {
                self.diags
                    .push(type_error(&written, &e, "declared type", &[]));
                (Vec::new(), false)
            }
        };
        self.types.decls.push(TypeDecl {
            name,
            text: written,
            uses,
            valid,
        });
    }
}

/// The diagnostic of a type that is not one; `known` are the declared names, for a
/// suggestion.
fn type_error(written: &WrittenText, e: &TypeError, what: &str, known: &[&str]) -> Diagnostic {
    let s = written.as_str();
    let start = written.range.start;
    let span = written
        .text
        .span_of(start + e.span.start..start + e.span.end);
    if let Some(name) = &e.unknown {
        let message = if name == s {
            format!("unknown {what} `{name}`")
        } else {
            format!("unknown type `{name}` in this {what}")
        };
        let help = match did_you_mean_preferring(name, known, &SCALAR_NAMES) {
            Some(c) => format!("did you mean `{c}`? Types are {TYPE_NAMES}"),
            None => format!(
                "types are {TYPE_NAMES}; a `<library>` declares one with <type name=\"{name}\">{{field: string}}</type>"
            ),
        };
        return Diagnostic::error(span, message).with_help(help);
    }
    let arrays = tv_stdlib::types::array_nesting(s);
    if arrays > tv_stdlib::types::MAX_NESTING {
        return Diagnostic::error(
            written.span(),
            format!(
                "the {what} nests arrays {arrays} deep; at most {} levels are allowed",
                tv_stdlib::types::MAX_NESTING
            ),
        )
        .with_help("write the deeper levels as `array` or `any`");
    }
    let d = Diagnostic::error(span, format!("invalid {what}: {}", e.message));
    if e.message.contains("nests more than") {
        d.with_help("write the deeper levels as `array`, `object` or `any`")
    } else {
        d.with_help(format!("types are {TYPE_NAMES}"))
    }
}

/// The byte ranges of `s` between its top-level commas: those outside braces,
/// brackets, parentheses and quotes (`r:{a: string, b: number}, n:number` is two).
pub(crate) fn split_top_level(s: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let (mut depth, mut start, mut quote) = (0usize, 0, None::<char>);
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '{' | '[' | '(') => depth += 1,
            (None, '}' | ']' | ')') => depth = depth.saturating_sub(1),
            (None, ',') if depth == 0 => {
                out.push(start..i);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(start..s.len());
    out
}

#[cfg(test)]
mod tests {
    use super::split_top_level;

    #[test]
    fn params_split_only_at_commas_outside_records_and_quotes() {
        let s = "r:{a: string, b: number}, n:number, s:\"a,b\"|'c', x";
        let parts: Vec<&str> = split_top_level(s).into_iter().map(|r| &s[r]).collect();
        assert_eq!(
            parts,
            [
                "r:{a: string, b: number}",
                " n:number",
                " s:\"a,b\"|'c'",
                " x"
            ]
        );
    }
}
