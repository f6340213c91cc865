//! Expressions: variables in scope, paths and comparisons (calls are in [`super::call`]).

use super::call::ArgInfo;
use super::scope::Scope;
use super::Checker;
use crate::ast::{BinOp, CmpOp, Expr, ExprKind, Literal, Segment, TextTemplate};
use crate::diag::Diagnostic;
use crate::source::Span;
use tv_stdlib::types::Type;

impl Checker<'_, '_> {
    pub(super) fn check_text(&mut self, t: &TextTemplate, scope: &Scope) {
        for e in t.exprs() {
            self.check_expr(e, scope);
        }
    }

    pub(super) fn check_test(&mut self, e: &Expr, scope: &Scope) {
        self.check_expr(e, scope);
    }

    pub(super) fn check_var(&mut self, name: &str, span: Span, scope: &Scope) -> Type {
        if let Some(b) = scope.lookup(name) {
            return b.ty.clone();
        }
        let help = match crate::ast::did_you_mean(name, &scope.names()) {
            Some(c) => format!("did you mean `{c}`?"),
            None => scope.declare_help(name),
        };
        let d = Diagnostic::error(span, format!("undeclared variable `{name}`"))
            .with_label("not in scope here")
            .with_help(help);
        self.diags.push(d);
        Type::Any
    }

    pub(super) fn check_expr(&mut self, e: &Expr, scope: &Scope) -> Type {
        match &e.kind {
            ExprKind::Var(name) => self.check_var(name, e.span, scope),
            ExprKind::Field(base, seg) => {
                let base_ty = self.check_expr(base, scope);
                self.field_type(&base_ty, seg.node.clone(), seg.span)
            }
            ExprKind::Lit(l) => literal_type(l),
            ExprKind::Call { name, args } => {
                let infos = args
                    .iter()
                    .map(|a| ArgInfo {
                        name: a.name.clone(),
                        span: a.value.span,
                        ty: self.check_expr(&a.value, scope),
                        text: None,
                        broken: a.value.kind == ExprKind::Error,
                    })
                    .collect();
                self.check_call(name, infos, e.span)
            }
            ExprKind::Not(inner) => {
                self.check_expr(inner, scope);
                Type::Boolean
            }
            ExprKind::Binary(op, l, r) => {
                let lt = self.check_expr(l, scope);
                let rt = self.check_expr(r, scope);
                if op.is_comparison() {
                    self.check_comparison(*op, &lt, &rt, e.span);
                    self.check_literal_comparison(*op, l, &lt, r, &rt, e.span);
                }
                Type::Boolean
            }
            ExprKind::Error => Type::Any,
        }
    }

    fn field_type(&mut self, base: &Type, seg: Segment, span: Span) -> Type {
        match (base, &seg) {
            (Type::Array(elem), Segment::Index(_)) => (**elem).clone(),
            (Type::Any | Type::Object, _) => Type::Any,
            (Type::Record(r), Segment::Name(n)) => match r.field(n) {
                // An optional field may also be absent (`null`), which comparisons allow.
                Some(f) => f.ty.clone(),
                None => {
                    self.diags.push(super::records::no_field(base, r, n, span));
                    Type::Any
                }
            },
            (Type::Record(r), Segment::Index(i)) => {
                self.diags.push(
                    Diagnostic::error(
                        span,
                        format!("`{i}` is an index, but the value is the record `{base}`"),
                    )
                    .with_help(format!(
                        "name one of its fields: {}",
                        super::records::field_list(r)
                    )),
                );
                Type::Any
            }
            (Type::Array(_), Segment::Name(n)) => {
                self.diags.push(
                    Diagnostic::error(
                        span,
                        format!("`{n}` is not an index: the value is an array"),
                    )
                    .with_help("index an array with a number, like `.0`"),
                );
                Type::Any
            }
            (t, _) => {
                self.diags.push(Diagnostic::error(
                    span,
                    format!("a `{t}` value has no fields"),
                ));
                Type::Any
            }
        }
    }

    fn check_comparison(&mut self, op: BinOp, l: &Type, r: &Type, span: Span) {
        if !l.is_known() || !r.is_known() {
            return;
        }
        let ordered = matches!(
            op,
            BinOp::Cmp(CmpOp::Lt | CmpOp::Le | CmpOp::Gt | CmpOp::Ge)
        );
        if ordered && !(l == r && matches!(l, Type::Number | Type::String)) {
            self.diags.push(
                Diagnostic::error(span, format!("`{}` compares `{l}` with `{r}`", op.as_str()))
                    .with_help("ordering comparisons take two numbers or two strings"),
            );
        } else if !ordered && l != r && *l != Type::Null && *r != Type::Null && !l.fits(r) {
            self.diags.push(
                Diagnostic::error(
                    span,
                    format!(
                        "`{}` compares `{l}` with `{r}`, which is never equal",
                        op.as_str()
                    ),
                )
                .with_help("compare values of the same type"),
            );
        }
    }
}

fn literal_type(l: &Literal) -> Type {
    match l {
        Literal::Str(_) => Type::String,
        Literal::Num(_) => Type::Number,
        Literal::Bool(_) => Type::Boolean,
        Literal::Null => Type::Null,
    }
}
