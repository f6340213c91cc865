//! Text with `{{ }}` holes, and the expressions inside them, in `<case test>` and in
//! `<condition>`, as written.

use super::Ident;
use crate::source::{Span, Spanned};

/// Text with `{{ ... }}` holes.
#[derive(Clone, Debug, Default)]
pub struct TextTemplate {
    pub parts: Vec<TextPart>,
    pub span: Span,
}

impl TextTemplate {
    /// The literal text when there are no holes.
    pub fn as_literal(&self) -> Option<String> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                TextPart::Lit(s, _) => out.push_str(s),
                TextPart::Expr(_) => return None,
            }
        }
        Some(out)
    }

    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.parts.iter().filter_map(|p| match p {
            TextPart::Expr(e) => Some(e),
            TextPart::Lit(..) => None,
        })
    }
}

#[derive(Clone, Debug)]
pub enum TextPart {
    Lit(String, Span),
    Expr(Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Var(String),
    Field(Box<Expr>, Spanned<Segment>),
    Lit(Literal),
    Call {
        name: Ident,
        args: Vec<Arg>,
    },
    Not(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// A place where the parser recovered; the error is already reported.
    Error,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Segment {
    Name(String),
    Index(u64),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Str(String),
    Num(f64),
    Bool(bool),
    Null,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    pub name: Option<Ident>,
    pub value: Expr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Cmp(CmpOp),
    And,
    Or,
}

impl BinOp {
    pub fn as_str(self) -> &'static str {
        match self {
            BinOp::Cmp(c) => c.as_str(),
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Cmp(_))
    }
}

/// A comparison as written. The syntax tree has its own operators rather than the
/// machine's: lowering maps them to compare instructions in one place, so the machine's
/// instruction set can change without touching the parser or the checker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

impl Expr {
    /// Every variable the expression reads, in order, repeats included.
    pub fn variables<'a>(&'a self, out: &mut Vec<&'a str>) {
        match &self.kind {
            ExprKind::Var(v) => out.push(v),
            ExprKind::Field(e, _) | ExprKind::Not(e) => e.variables(out),
            ExprKind::Call { args, .. } => args.iter().for_each(|a| a.value.variables(out)),
            ExprKind::Binary(_, a, b) => {
                a.variables(out);
                b.variables(out);
            }
            ExprKind::Lit(_) | ExprKind::Error => {}
        }
    }
}
