//! A small POSIX shell lexer for script commands: it decides, for every `{{...}}` hole
//! of a `<command>`, the quoting context the hole stands in, so the machine can quote
//! the value for exactly that context (DESIGN §18).
//!
//! Only the literal text around the holes is lexed; a hole is a word part whose value
//! is unknown. The lexer does not parse the shell grammar: it follows just what changes
//! how a character is read (quotes, escapes, expansions, comments, heredocs). Wherever
//! it cannot be sure what the shell would make of a value, it refuses the hole, and the
//! author passes the value in the environment instead.
//!
//! The lexer is fed text in pieces, so the fuzz target can lex a command with its
//! values spliced in and check that no value changed the lexer's state.
//!
//! Quoting keeps a value one word; it cannot stop the command from running that word
//! as code (`sh -c {{x}}`). So the lexer also hands what it reads at the top level to
//! `words`, which groups it into words and commands, and `resolve` says, from the
//! table of `commands`, what the command makes of each hole's word: data (and whether
//! a value starting with `-` would be an option there), or code, which is refused.

mod commands;
mod lexer;
mod positional;
mod resolve;
mod scan;
mod verdict;
mod word;
mod words;

pub use lexer::Lexer;
pub(crate) use tv_vm::isa::Quote;
#[cfg(test)]
pub(crate) use {positional::MAX_CODE, word::MAX_WORDS, words::MAX_NESTING};

/// A piece of a command: literal text, or a hole whose value is unknown.
#[derive(Clone, Copy, Debug)]
pub enum Piece<'a> {
    Text(&'a str),
    Hole,
}

/// How a hole's value goes into the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hole {
    /// The quoting context it stands in.
    pub quote: Quote,
    /// The value leads a word of a command's arguments, with no `--` before it in
    /// that command: a value starting with `-` would be read as an option.
    pub option: bool,
}

/// Why a hole is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// The compiler cannot tell how to quote the value there.
    Quoting,
    /// Quoted or not, a command runs the value as code there.
    Code,
    /// The value would choose the program to run, or a subcommand.
    Name,
    /// The value would choose an option.
    Option,
}

/// Why hole number `hole` (counting from 0) cannot stand where it does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub hole: usize,
    /// Where the hole stands, as a phrase: "inside a heredoc".
    pub reason: String,
    pub why: Why,
}

/// The quoting context of every hole of a command template.
pub(crate) fn template_contexts(t: &crate::ast::TextTemplate) -> Result<Vec<Hole>, Refusal> {
    let pieces: Vec<Piece> = t
        .parts
        .iter()
        .map(|p| match p {
            crate::ast::TextPart::Lit(s, _) => Piece::Text(s),
            crate::ast::TextPart::Expr(_) => Piece::Hole,
        })
        .collect();
    contexts(&pieces)
}

/// How every hole of a command goes in, or the first hole that cannot stand where
/// it does.
pub fn contexts(pieces: &[Piece]) -> Result<Vec<Hole>, Refusal> {
    let mut lexer = Lexer::default();
    let mut holes = Vec::new();
    let mut first: Option<Refusal> = None;
    let mut refuse = |r: Refusal| {
        if first.as_ref().is_none_or(|f| r.hole < f.hole) {
            first = Some(r);
        }
    };
    for piece in pieces {
        match piece {
            Piece::Text(t) => lexer.text(t),
            Piece::Hole => {
                let hole = holes.len();
                match lexer.hole() {
                    Ok(h) => holes.push(h),
                    Err((why, reason)) => {
                        refuse(Refusal { hole, reason, why });
                        holes.push(Hole {
                            quote: Quote::Bare,
                            option: true,
                        });
                    }
                }
            }
        }
    }
    let unclosed = lexer.unclosed();
    lexer.finish();
    if let Some((hole, reason)) = lexer.words.late.take() {
        let why = Why::Code;
        refuse(Refusal { hole, reason, why });
    }
    if let Some(hole) = unclosed.filter(|&h| h < holes.len()) {
        let reason = "after a quote or expansion that is never closed".into();
        let why = Why::Quoting;
        refuse(Refusal { hole, reason, why });
    }
    match first {
        Some(r) => Err(r),
        None => Ok(holes),
    }
}
