//! The expression grammar by recursive descent, for holes that parse: the same trees
//! and spans the chumsky grammar in [`super`] builds, without building that grammar
//! for every hole. It gives up (`None`) at the first thing it cannot read; the chumsky
//! grammar then parses the hole again, recovers, and explains every error.
//!
//! Nesting is bounded before either parser runs (`tokens_are_sound`), so the recursion
//! here is too; runs of `!` are folded in a loop.

use super::{index_segments, mk, unescape, Tok};
use crate::ast::{Arg, BinOp, CmpOp, Expr, ExprKind, Literal, Segment};
use crate::lexer::Token;
use crate::source::{Span, Spanned};

/// The expression the whole of `tokens` spells, if it is well formed.
pub(super) fn parse(tokens: &[Tok]) -> Option<Expr> {
    let mut p = Descent { tokens, at: 0 };
    let e = p.or()?;
    (p.at == tokens.len()).then_some(e)
}

struct Descent<'t, 's> {
    tokens: &'t [Tok<'s>],
    at: usize,
}

impl Descent<'_, '_> {
    fn peek(&self) -> Option<&Token<'_>> {
        self.tokens.get(self.at).map(|(t, _)| t)
    }

    fn eat(&mut self, t: &Token) -> bool {
        let yes = self.peek() == Some(t);
        self.at += usize::from(yes);
        yes
    }

    /// From the first token read at `from` to the last token read, as chumsky spans a
    /// rule's output.
    fn since(&self, from: usize) -> Span {
        let first = self.tokens[from].1;
        first.to(self.tokens[self.at - 1].1)
    }

    fn or(&mut self) -> Option<Expr> {
        if let Some(e) = self.lone_atom() {
            return Some(e);
        }
        self.chain(Token::Or, BinOp::Or, Self::and)
    }

    /// A variable or a literal that is the whole expression here, as most holes and
    /// arguments are: read without climbing every level of the grammar for it.
    fn lone_atom(&mut self) -> Option<Expr> {
        let ends = matches!(
            self.tokens.get(self.at + 1),
            None | Some((Token::Comma | Token::RParen | Token::Close, _))
        );
        let simple = matches!(
            self.peek(),
            Some(
                Token::Ident(_)
                    | Token::Str(_)
                    | Token::Number(_)
                    | Token::True
                    | Token::False
                    | Token::Null
            )
        );
        if !(ends && simple) {
            return None;
        }
        let at = self.at;
        let atom = self.atom();
        if atom.is_none() {
            self.at = at;
        }
        atom
    }

    fn and(&mut self) -> Option<Expr> {
        self.chain(Token::And, BinOp::And, Self::not)
    }

    /// `operand (sep operand)*`, folded to the left. Generic over `operand`, so that
    /// each level inlines the next instead of calling through a pointer.
    fn chain(
        &mut self,
        sep: Token,
        op: BinOp,
        operand: impl Fn(&mut Self) -> Option<Expr>,
    ) -> Option<Expr> {
        let from = self.at;
        let mut l = operand(self)?;
        while self.eat(&sep) {
            let r = operand(self)?;
            l = mk(
                ExprKind::Binary(op, Box::new(l), Box::new(r)),
                self.since(from),
            );
        }
        Some(l)
    }

    fn not(&mut self) -> Option<Expr> {
        let mut nots = Vec::new();
        while let Some((Token::Not, span)) = self.tokens.get(self.at) {
            nots.push(*span);
            self.at += 1;
        }
        let inner = self.comparison()?;
        Some(nots.into_iter().rev().fold(inner, |inner, op| {
            let span = op.to(inner.span);
            mk(ExprKind::Not(Box::new(inner)), span)
        }))
    }

    fn comparison(&mut self) -> Option<Expr> {
        let from = self.at;
        let l = self.postfix()?;
        let op = match self.peek() {
            Some(Token::Eq) => BinOp::Cmp(CmpOp::Eq),
            Some(Token::Ne) => BinOp::Cmp(CmpOp::Ne),
            Some(Token::Lt) => BinOp::Cmp(CmpOp::Lt),
            Some(Token::Le) => BinOp::Cmp(CmpOp::Le),
            Some(Token::Gt) => BinOp::Cmp(CmpOp::Gt),
            Some(Token::Ge) => BinOp::Cmp(CmpOp::Ge),
            _ => return Some(l),
        };
        self.at += 1;
        let r = self.postfix()?;
        Some(mk(
            ExprKind::Binary(op, Box::new(l), Box::new(r)),
            self.since(from),
        ))
    }

    fn postfix(&mut self) -> Option<Expr> {
        let mut base = self.atom()?;
        while self.eat(&Token::Dot) {
            let (tok, span) = self.tokens.get(self.at)?;
            let segs = match tok {
                Token::Ident(s) => vec![(Segment::Name(s.to_string()), 0..s.len())],
                Token::Number(n) => index_segments(n)?,
                _ => return None,
            };
            self.at += 1;
            for (seg, r) in segs {
                let seg = Spanned::new(seg, span.slice(r));
                let span = base.span.to(seg.span);
                base = mk(ExprKind::Field(Box::new(base), seg), span);
            }
        }
        Some(base)
    }

    fn atom(&mut self) -> Option<Expr> {
        let (tok, span) = self.tokens.get(self.at)?;
        let (tok, span) = (tok.clone(), *span);
        self.at += 1;
        let lit = |l| Some(mk(ExprKind::Lit(l), span));
        match tok {
            Token::True => lit(Literal::Bool(true)),
            Token::False => lit(Literal::Bool(false)),
            Token::Null => lit(Literal::Null),
            Token::Number(n) => lit(Literal::Num(n.parse().unwrap_or(f64::NAN))),
            Token::Str(s) => lit(Literal::Str(unescape(s).ok()?)),
            Token::Ident(name) if self.peek() == Some(&Token::LParen) => {
                let from = self.at - 1;
                let name = Spanned::new(name.to_string(), span);
                let args = self.args()?;
                Some(mk(ExprKind::Call { name, args }, self.since(from)))
            }
            Token::Ident(name) => Some(mk(ExprKind::Var(name.to_string()), span)),
            Token::LParen => self.enclosed(Token::RParen),
            Token::Open => self.enclosed(Token::Close),
            _ => None,
        }
    }

    fn enclosed(&mut self, close: Token) -> Option<Expr> {
        let e = self.or()?;
        self.eat(&close).then_some(e)
    }

    /// `( )` or `( arg (, arg)* )`, the `(` not yet read.
    fn args(&mut self) -> Option<Vec<Arg>> {
        self.at += 1;
        let mut args = Vec::new();
        if self.eat(&Token::RParen) {
            return Some(args);
        }
        loop {
            args.push(self.arg()?);
            if self.eat(&Token::RParen) {
                return Some(args);
            }
            if !self.eat(&Token::Comma) {
                return None;
            }
        }
    }

    fn arg(&mut self) -> Option<Arg> {
        if let [(Token::Ident(name), span), (Token::Assign, _), ..] = &self.tokens[self.at..] {
            let name = Some(Spanned::new(name.to_string(), *span));
            self.at += 2;
            return Some(Arg {
                name,
                value: self.or()?,
            });
        }
        Some(Arg {
            name: None,
            value: self.or()?,
        })
    }
}
