//! Stage 2b: expressions (chumsky over logos tokens) and the `{{ ... }}` holes of text.
//!
//! Expressions are read from decoded XML text; every token is given its span in the XML
//! file through the text's offset map, so errors point into the file, not into the text
//! node. Each hole is parsed on its own, so one bad hole never hides the next one.

use crate::ast::{Arg, BinOp, CmpOp, Expr, ExprKind, Literal, Segment, TextPart, TextTemplate};
use crate::diag::{Diagnostic, Diagnostics};
use crate::lexer::Token;
use crate::source::{FileId, Span, Spanned};
use crate::xml::Text;
use chumsky::error::{Rich, RichPattern, RichReason};
use chumsky::input::{Input as _, Stream, ValueInput};
use chumsky::prelude::*;
use logos::Logos;

mod depth;
mod descent;
#[cfg(test)]
mod tests;

/// Parentheses, calls and `{{` nested deeper than this are refused before parsing.
pub(crate) const MAX_EXPR_DEPTH: usize = 64;

/// The tree an expression builds nests at most this deep, counting operators and
/// path segments as well as brackets (see `TreeDepth`).
pub(crate) const MAX_EXPR_TREE_DEPTH: usize = 256;

impl chumsky::span::Span for Span {
    type Context = FileId;
    type Offset = u32;

    fn new(file: FileId, range: std::ops::Range<u32>) -> Self {
        Span {
            file,
            start: range.start,
            end: range.end.max(range.start),
        }
    }

    fn context(&self) -> FileId {
        self.file
    }

    fn start(&self) -> u32 {
        self.start
    }

    fn end(&self) -> u32 {
        self.end
    }
}

type Tok<'s> = (Token<'s>, Span);
type Err<'s> = extra::Err<Rich<'s, Token<'s>, Span>>;

/// Splits text into literal runs and `{{ ... }}` holes, parsing each hole.
pub(crate) fn parse_template(text: &Text, diags: &mut Diagnostics) -> TextTemplate {
    let s: &str = &text.value;
    let braces = memchr::memchr_iter(b'{', s.as_bytes()).count();
    // A hole opens with two braces and adds up to two parts: room for all of them.
    let mut parts = Vec::with_capacity(braces + 1);
    // One token buffer for all the holes, with room for a call with a few arguments.
    let mut tokens = Vec::with_capacity(if braces >= 2 { 16 } else { 0 });
    let mut lit = String::new();
    let mut lit_start = 0;
    let mut i = 0;
    while let Some(j) = find_open(s.as_bytes(), i) {
        if j > 0 && s.as_bytes()[j - 1] == b'\\' {
            // `\{{` is a literal `{{`.
            lit.push_str(&s[i..j - 1]);
            lit.push_str("{{");
            i = j + 2;
            continue;
        }
        lit.push_str(&s[i..j]);
        flush(&mut parts, &mut lit, text, lit_start..j);
        let (expr, next) = parse_hole(text, j, &mut tokens, diags);
        parts.push(TextPart::Expr(expr));
        i = next;
        lit_start = next;
    }
    lit.push_str(&s[i..]);
    flush(&mut parts, &mut lit, text, lit_start..s.len());
    // A library holds hundreds of thousands of these: no room for parts never made.
    parts.shrink_to_fit();
    TextTemplate {
        parts,
        span: text.span,
    }
}

/// The offset of the first `{{` at or after `from`.
fn find_open(s: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(k) = memchr::memchr(b'{', s.get(at..)?) {
        let j = at + k;
        if s.get(j + 1) == Some(&b'{') {
            return Some(j);
        }
        at = j + 1;
    }
    None
}

fn flush(parts: &mut Vec<TextPart>, lit: &mut String, text: &Text, range: std::ops::Range<usize>) {
    if !lit.is_empty() {
        parts.push(TextPart::Lit(std::mem::take(lit), text.span_of(range)));
    }
}

/// Parses the hole whose `{{` is at `open`; returns it and the offset after its `}}`.
fn parse_hole<'s>(
    text: &'s Text,
    open: usize,
    tokens: &mut Vec<Tok<'s>>,
    diags: &mut Diagnostics,
) -> (Expr, usize) {
    let body_start = open + 2;
    let mut depth = 0usize;
    let mut lexer = Token::lexer(&text.value[body_start..]);
    tokens.clear();
    while let Some(tok) = lexer.next() {
        let r = lexer.span();
        let tok = tok.unwrap_or(Token::Bad(lexer.slice()));
        match tok {
            Token::Open => depth += 1,
            Token::Close if depth == 0 => {
                let close = body_start + r.start;
                let hole = text.span_of(open..close + 2);
                let expr = parse_tokens(tokens, hole, diags);
                return (expr, close + 2);
            }
            Token::Close => depth -= 1,
            _ => {}
        }
        tokens.push((tok, text.span_of(body_start + r.start..body_start + r.end)));
    }
    if let Some((_, s)) = tokens
        .iter()
        .find(|(t, _)| matches!(t, Token::Unterminated(_)))
    {
        // The string swallowed the `}}`: the string is the thing to fix.
        diags.push(
            Diagnostic::error(*s, "string literal is never closed")
                .with_help("end it with the quote it starts with"),
        );
        return (error_expr(*s), text.value.len());
    }
    let span = text.span_of(open..open + 2);
    diags.push(
        Diagnostic::error(span, "`{{` is never closed with `}}`")
            .with_label("this expression has no end")
            .with_help("close it with `}}`, or write `\\{{` for a literal `{{`"),
    );
    (error_expr(span), text.value.len())
}

/// Parses a whole text as one expression (the `test` of a case, a `<condition>`).
/// A test wrapped entirely in `{{ }}` is accepted too.
pub(crate) fn parse_test(text: &Text, diags: &mut Diagnostics) -> Expr {
    let span = text.trimmed_span();
    let mut tokens: Vec<Tok> = crate::lexer::lex(&text.value)
        .into_iter()
        .map(|(t, r)| (t, text.span_of(r)))
        .collect();
    parse_tokens(&mut tokens, span, diags)
}

/// The expression of `tokens`; the chumsky grammar, when it is needed, takes them.
fn parse_tokens<'s>(tokens: &mut Vec<Tok<'s>>, whole: Span, diags: &mut Diagnostics) -> Expr {
    if tokens.is_empty() {
        diags.push(
            Diagnostic::error(whole, "empty expression")
                .with_help("write a variable, a literal or a call"),
        );
        return error_expr(whole);
    }
    if !depth::tokens_are_sound(tokens, diags) {
        return error_expr(whole);
    }
    // Well-formed holes, nearly all of them, are read without building the grammar.
    if let Some(e) = descent::parse(tokens) {
        return e;
    }
    grammar(std::mem::take(tokens), whole, diags)
}

/// The chumsky grammar over `tokens`: recovers from errors and reports each of them.
fn grammar<'s>(tokens: Vec<Tok<'s>>, whole: Span, diags: &mut Diagnostics) -> Expr {
    let eoi = Span::new(whole.file, whole.end as usize..whole.end as usize);
    // `{{name=value}}`: a named argument written outside a call's parentheses.
    let named_arg = match tokens.as_slice() {
        [(Token::Ident(_), _), (Token::Assign, at), ..] => Some(*at),
        _ => None,
    };
    let input = Stream::from_iter(tokens).map(eoi, |(t, s): (_, _)| (t, s));
    let (out, errs) = expr_parser()
        .then_ignore(end())
        .parse(input)
        .into_output_errors();
    for e in errs {
        diags.push(describe(&e, named_arg));
    }
    out.unwrap_or_else(|| error_expr(whole))
}

fn error_expr(span: Span) -> Expr {
    Expr {
        kind: ExprKind::Error,
        span,
    }
}

fn mk(kind: ExprKind, span: Span) -> Expr {
    Expr { kind, span }
}

fn expr_parser<'s, I>() -> impl Parser<'s, I, Expr, Err<'s>> + Clone
where
    I: ValueInput<'s, Token = Token<'s>, Span = Span>,
{
    recursive(|expr| {
        let ident = select! { Token::Ident(s) => s.to_string() }
            .map_with(|s, e| Spanned::new(s, e.span()))
            .labelled("identifier");

        let string =
            select! { Token::Str(s) => s }.validate(|s: &str, e, emitter| match unescape(s) {
                Ok(v) => Literal::Str(v),
                Err(msg) => {
                    emitter.emit(Rich::custom(e.span(), msg));
                    Literal::Str(String::new())
                }
            });
        let literal = select! {
            Token::True => Literal::Bool(true),
            Token::False => Literal::Bool(false),
            Token::Null => Literal::Null,
            Token::Number(n) => Literal::Num(n.parse().unwrap_or(f64::NAN)),
        }
        .or(string)
        .map_with(|l, e| mk(ExprKind::Lit(l), e.span()))
        .labelled("literal");

        let arg = ident
            .then_ignore(just(Token::Assign))
            .then(expr.clone())
            .map(|(name, value)| Arg {
                name: Some(name),
                value,
            })
            .or(expr.clone().map(|value| Arg { name: None, value }));
        let args = arg
            .separated_by(just(Token::Comma))
            .collect::<Vec<_>>()
            .delimited_by(just(Token::LParen), just(Token::RParen))
            .recover_with(via_parser(nested_delimiters(
                Token::LParen,
                Token::RParen,
                [(Token::Open, Token::Close)],
                // One error argument marks the list as unreadable, so no arity error follows.
                |span| {
                    vec![Arg {
                        name: None,
                        value: error_expr(span),
                    }]
                },
            )));
        let call = ident
            .then(args)
            .map_with(|(name, args), e| mk(ExprKind::Call { name, args }, e.span()));
        let var = ident.map(|i| mk(ExprKind::Var(i.node), i.span));
        let paren = expr
            .clone()
            .delimited_by(just(Token::LParen), just(Token::RParen));
        let braces = expr
            .clone()
            .delimited_by(just(Token::Open), just(Token::Close));
        let atom = choice((literal, call, var, paren, braces));

        let segments = select! {
            Token::Ident(s) => Some(vec![(Segment::Name(s.to_string()), 0..s.len())]),
            // `x.1.2` lexes `1.2` as one number: two indices.
            Token::Number(n) => index_segments(n),
        }
        .validate(|segs, e, emitter| {
            let span: Span = e.span();
            match segs {
                Some(segs) => segs
                    .into_iter()
                    .map(|(seg, r)| Spanned::new(seg, span.slice(r)))
                    .collect(),
                None => {
                    emitter.emit(Rich::custom(
                        span,
                        "a path index must be a whole number like `.0`",
                    ));
                    vec![Spanned::new(Segment::Index(0), span)]
                }
            }
        })
        .labelled("field name or index");
        let postfix = atom.foldl_with(
            just(Token::Dot).ignore_then(segments).repeated(),
            |base, segs: Vec<Spanned<Segment>>, _| {
                segs.into_iter().fold(base, |base, seg| {
                    let span = base.span.to(seg.span);
                    mk(ExprKind::Field(Box::new(base), seg), span)
                })
            },
        );

        let cmp_op = select! {
            Token::Eq => BinOp::Cmp(CmpOp::Eq),
            Token::Ne => BinOp::Cmp(CmpOp::Ne),
            Token::Lt => BinOp::Cmp(CmpOp::Lt),
            Token::Le => BinOp::Cmp(CmpOp::Le),
            Token::Gt => BinOp::Cmp(CmpOp::Gt),
            Token::Ge => BinOp::Cmp(CmpOp::Ge),
        };
        let comparison = postfix
            .clone()
            .then(cmp_op.then(postfix).or_not())
            .map_with(|(l, rhs), e| match rhs {
                Some((op, r)) => mk(ExprKind::Binary(op, Box::new(l), Box::new(r)), e.span()),
                None => l,
            });
        let not = just(Token::Not)
            .map_with(|_, e| e.span())
            .repeated()
            .foldr_with(comparison, |op: Span, inner: Expr, _| {
                let span = op.to(inner.span);
                mk(ExprKind::Not(Box::new(inner)), span)
            });
        let and =
            not.clone()
                .foldl_with(just(Token::And).ignore_then(not).repeated(), |l, r, e| {
                    mk(
                        ExprKind::Binary(BinOp::And, Box::new(l), Box::new(r)),
                        e.span(),
                    )
                });
        and.clone()
            .foldl_with(just(Token::Or).ignore_then(and).repeated(), |l, r, e| {
                mk(
                    ExprKind::Binary(BinOp::Or, Box::new(l), Box::new(r)),
                    e.span(),
                )
            })
    })
}

/// The index segments a number token stands for after a `.`: `3` or `1.2`.
fn index_segments(n: &str) -> Option<Vec<(Segment, std::ops::Range<usize>)>> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mut out = Vec::new();
    let mut at = 0;
    for part in n.split('.') {
        if !digits(part) {
            return None;
        }
        out.push((Segment::Index(part.parse().ok()?), at..at + part.len()));
        at += part.len() + 1;
    }
    Some(out)
}

/// Decodes a quoted string token.
fn unescape(quoted: &str) -> Result<String, String> {
    let inner = &quoted[1..quoted.len() - 1];
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('"') => out.push('"'),
            Some('\'') => out.push('\''),
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => {
                return Err(format!(
                    "unknown escape `\\{other}` in a string (known: \\\" \\' \\\\ \\n \\t)"
                ))
            }
            None => return Err("a string cannot end with a lone `\\`".into()),
        }
    }
    Ok(out)
}

/// The diagnostic of a parse error; `named_arg`: where a `=` would start a named
/// argument written outside a call.
fn describe(e: &Rich<'_, Token<'_>, Span>, named_arg: Option<Span>) -> Diagnostic {
    let span = *e.span();
    match e.reason() {
        RichReason::Custom(msg) => Diagnostic::error(span, msg.clone()),
        RichReason::ExpectedFound { expected, found } => {
            let assign = matches!(found.as_deref(), Some(Token::Assign));
            let found = match found {
                Some(t) => format!("found {}", **t),
                None => "the expression ends".to_string(),
            };
            let mut wanted: Vec<String> = expected
                .iter()
                .filter_map(|p| match p {
                    RichPattern::Token(t) => Some(format!("{}", **t)),
                    RichPattern::Label(l) => Some(l.to_string()),
                    RichPattern::EndOfInput => Some("the end of the expression".into()),
                    _ => None,
                })
                .collect();
            wanted.sort();
            wanted.dedup();
            let msg = match wanted.len() {
                0 => format!("unexpected input: {found}"),
                1 => format!("expected {}, but {found}", wanted[0]),
                _ => {
                    let last = wanted.pop().unwrap_or_default();
                    format!("expected {} or {last}, but {found}", wanted.join(", "))
                }
            };
            let d = Diagnostic::error(span, msg);
            match (assign, named_arg == Some(span)) {
                (true, true) => d.with_help(
                    "a named argument `name=value` goes inside a call's parentheses; to compare, write `==`",
                ),
                (true, false) => d.with_help(
                    "did you mean `==`? A single `=` compares nothing: equality is `==`",
                ),
                _ => d,
            }
        }
    }
}

/// Parses one expression given as a string (tests, tools): the expression and its
/// errors, with spans as byte offsets into `src`.
pub fn parse_standalone(src: &str) -> (Expr, Vec<Diagnostic>) {
    let text = Text {
        value: src.into(),
        span: Span::new(FileId(0), 0..src.len()),
        ..Text::default()
    };
    let mut diags = Diagnostics::new();
    let expr = parse_test(&text, &mut diags);
    (expr, diags.sorted().into_iter().cloned().collect())
}
