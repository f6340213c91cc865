//! The checks every expression's tokens pass before either parser reads them: no bad
//! characters or unclosed strings, and nesting within the limits, so that no stage
//! after the parser can recurse off the end of the stack.

use super::{Tok, MAX_EXPR_DEPTH, MAX_EXPR_TREE_DEPTH};
use crate::diag::{Diagnostic, Diagnostics};
use crate::lexer::Token;
use crate::source::Span;

/// Reports bad characters, unclosed strings and excessive nesting; chumsky sees only
/// token streams that pass.
pub(super) fn tokens_are_sound(tokens: &[Tok], diags: &mut Diagnostics) -> bool {
    let mut ok = true;
    let mut depth = TreeDepth::default();
    for (tok, span) in tokens {
        match tok {
            Token::Bad(s) => {
                diags.push(Diagnostic::error(
                    *span,
                    format!("unexpected character `{s}` in an expression"),
                ));
                ok = false;
            }
            Token::Unterminated(_) => {
                diags.push(
                    Diagnostic::error(*span, "string literal is never closed")
                        .with_help("end it with the quote it starts with"),
                );
                ok = false;
            }
            _ => {}
        }
        if let Err(too_deep) = depth.step(tok, *span) {
            diags.push(too_deep);
            return false;
        }
    }
    ok
}

/// Parentheses, calls and `{{` nest at most [`MAX_EXPR_DEPTH`] deep, and the tree an
/// expression builds at most [`MAX_EXPR_TREE_DEPTH`] deep. The tree is deeper than the
/// brackets: each `!`, `&&`, `||`, comparison and `.field` adds a node above the ones
/// before it. Every later stage walks the tree by recursion, so bounding it here, in
/// one pass over the tokens, keeps all of them off the end of the stack.
#[derive(Default)]
struct TreeDepth {
    /// Per open bracket, the operators read at its level since it opened (or since the
    /// last comma: each argument is a tree of its own).
    levels: Vec<usize>,
    /// Operators at the outermost level.
    top: usize,
    /// The sum of `levels`, `top` and the brackets open: a bound on the tree's depth here.
    total: usize,
}

impl TreeDepth {
    fn step(&mut self, tok: &Token, span: Span) -> Result<(), Diagnostic> {
        let ops = match tok {
            Token::Not
            | Token::And
            | Token::Or
            | Token::Dot
            | Token::Eq
            | Token::Ne
            | Token::Lt
            | Token::Le
            | Token::Gt
            | Token::Ge => 1,
            // `x.1.2`: the number after a dot is two indices.
            Token::Number(n) => n.bytes().filter(|&b| b == b'.').count(),
            _ => 0,
        };
        let here = self.levels.last_mut().unwrap_or(&mut self.top);
        *here += ops;
        self.total += ops;
        match tok {
            Token::LParen | Token::Open => {
                self.levels.push(0);
                self.total += 1;
                if self.levels.len() > MAX_EXPR_DEPTH {
                    return Err(Diagnostic::error(
                        span,
                        format!("expression nested more than {MAX_EXPR_DEPTH} levels deep"),
                    ));
                }
            }
            Token::RParen | Token::Close => {
                if let Some(n) = self.levels.pop() {
                    self.total -= n + 1;
                }
            }
            Token::Comma => {
                let here = self.levels.last_mut().unwrap_or(&mut self.top);
                self.total -= *here;
                *here = 0;
            }
            _ => {}
        }
        if self.total > MAX_EXPR_TREE_DEPTH {
            return Err(Diagnostic::error(
                span,
                format!("expression nests more than {MAX_EXPR_TREE_DEPTH} operations deep"),
            )
            .with_help(
                "each `!`, `&&`, `||`, comparison, `.field` and bracket is one level: \
                 split the expression over several inputs or steps",
            ));
        }
        Ok(())
    }
}
