//! Stage 2a: the tokens of the `{{ ... }}` expression language (logos).

use logos::Logos;
use std::fmt;

#[derive(Logos, Clone, Debug, PartialEq)]
#[logos(skip r"[ \t\r\n]+")]
pub(crate) enum Token<'s> {
    #[token("{{")]
    Open,
    #[token("}}")]
    Close,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token(",")]
    Comma,
    #[token(".")]
    Dot,
    #[token("=")]
    Assign,
    #[token("==")]
    #[token("===")]
    Eq,
    #[token("!=")]
    #[token("!==")]
    Ne,
    #[token("<")]
    Lt,
    #[token("<=")]
    Le,
    #[token(">")]
    Gt,
    #[token(">=")]
    Ge,
    #[token("&&")]
    #[token("and")]
    And,
    #[token("||")]
    #[token("or")]
    Or,
    #[token("!")]
    #[token("not")]
    Not,
    #[token("true")]
    True,
    #[token("false")]
    False,
    #[token("null")]
    Null,
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*")]
    Ident(&'s str),
    #[regex(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")]
    Number(&'s str),
    /// With its quotes; escapes are decoded by the parser.
    #[regex(r#""([^"\\]|\\.)*""#)]
    #[regex(r#"'([^'\\]|\\.)*'"#)]
    Str(&'s str),
    /// A string that runs to the end of the expression without its closing quote.
    #[regex(r#""([^"\\]|\\.)*"#, priority = 0)]
    #[regex(r#"'([^'\\]|\\.)*"#, priority = 0)]
    Unterminated(&'s str),
    /// A character the language does not use.
    Bad(&'s str),
}

impl fmt::Display for Token<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Token::Open => "`{{`",
            Token::Close => "`}}`",
            Token::LParen => "`(`",
            Token::RParen => "`)`",
            Token::Comma => "`,`",
            Token::Dot => "`.`",
            Token::Assign => "`=`",
            Token::Eq => "`==`",
            Token::Ne => "`!=`",
            Token::Lt => "`<`",
            Token::Le => "`<=`",
            Token::Gt => "`>`",
            Token::Ge => "`>=`",
            Token::And => "`&&`",
            Token::Or => "`||`",
            Token::Not => "`!`",
            Token::True => "`true`",
            Token::False => "`false`",
            Token::Null => "`null`",
            Token::Ident(s) => return write!(f, "identifier `{s}`"),
            Token::Number(s) => return write!(f, "number `{s}`"),
            Token::Str(_) => "a string",
            Token::Unterminated(_) => "an unterminated string",
            Token::Bad(s) => return write!(f, "`{s}`"),
        };
        f.write_str(s)
    }
}

/// Tokens of `src` with their byte ranges; unknown characters become [`Token::Bad`].
pub(crate) fn lex(src: &str) -> Vec<(Token<'_>, std::ops::Range<usize>)> {
    let mut lexer = Token::lexer(src);
    let mut out = Vec::new();
    while let Some(tok) = lexer.next() {
        let range = lexer.span();
        let tok = tok.unwrap_or_else(|()| Token::Bad(&src[range.clone()]));
        out.push((tok, range));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_and_symbols_have_their_synonyms() {
        let toks: Vec<_> = lex("a === b and not c || d !== 1")
            .into_iter()
            .map(|t| t.0)
            .collect();
        assert_eq!(
            toks,
            vec![
                Token::Ident("a"),
                Token::Eq,
                Token::Ident("b"),
                Token::And,
                Token::Not,
                Token::Ident("c"),
                Token::Or,
                Token::Ident("d"),
                Token::Ne,
                Token::Number("1")
            ]
        );
    }

    #[test]
    fn a_string_may_hold_closing_braces() {
        let toks = lex(r#"f("}}", 'it\'s')"#);
        assert_eq!(toks[2].0, Token::Str(r#""}}""#));
        assert_eq!(toks[4].0, Token::Str(r"'it\'s'"));
    }

    #[test]
    fn an_unclosed_string_is_its_own_token() {
        let toks = lex(r#"f("abc"#);
        assert_eq!(toks[2].0, Token::Unterminated("\"abc"));
    }

    #[test]
    fn identifiers_that_start_with_keywords_stay_identifiers() {
        let toks = lex("notes android nullable");
        assert!(toks.iter().all(|t| matches!(t.0, Token::Ident(_))));
    }
}
