//! Records and string-literal unions in expressions (DESIGN §13): unknown fields, and
//! comparisons with a string that a union never holds.

use super::Checker;
use crate::ast::{BinOp, CmpOp, Expr, ExprKind, Literal};
use crate::diag::Diagnostic;
use crate::source::Span;
use tv_stdlib::types::{Record, Type};

/// "`Review` has no field `aproved`", with a suggestion and the record's fields.
pub(super) fn no_field(base: &Type, r: &Record, name: &str, span: Span) -> Diagnostic {
    let d = Diagnostic::error(span, format!("`{base}` has no field `{name}`"));
    let fields = field_list(r);
    match crate::ast::did_you_mean(name, &r.field_names()) {
        Some(c) => d.with_help(format!("did you mean `{c}`? Its fields are {fields}")),
        None => d.with_help(format!("its fields are {fields}")),
    }
}

/// A record's fields as a message lists them: "`approved`, `findings`, `severity?`".
pub(super) fn field_list(r: &Record) -> String {
    if r.fields.is_empty() {
        return "none".to_string();
    }
    r.fields
        .iter()
        .map(|f| format!("`{}{}`", f.name, if f.optional { "?" } else { "" }))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Checker<'_, '_> {
    /// `output.severity == "medium"` where `severity` is `"low"|"high"` is never true
    /// (or, with `!=`, always): most likely a misspelt string.
    pub(super) fn check_literal_comparison(
        &mut self,
        op: BinOp,
        l: &Expr,
        lt: &Type,
        r: &Expr,
        rt: &Type,
        span: Span,
    ) {
        if !matches!(op, BinOp::Cmp(CmpOp::Eq | CmpOp::Ne)) {
            return;
        }
        let (allowed, s, at) = match (lt, &r.kind, rt, &l.kind) {
            (Type::Literals(ls), ExprKind::Lit(Literal::Str(s)), _, _) => (ls, s, r.span),
            (_, _, Type::Literals(ls), ExprKind::Lit(Literal::Str(s))) => (ls, s, l.span),
            _ => return,
        };
        if allowed.iter().any(|a| a == s) {
            return;
        }
        let quoted = serde_json::Value::from(s.as_str());
        let union = if matches!(lt, Type::Literals(_)) {
            lt
        } else {
            rt
        };
        let always = if op == BinOp::Cmp(CmpOp::Eq) {
            "never true"
        } else {
            "always true"
        };
        let list = allowed
            .iter()
            .map(|a| serde_json::Value::from(a.as_str()).to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let mut d = Diagnostic::error(
            span,
            format!(
                "`{}` compares `{union}` with {quoted}, which is never equal: the comparison is {always}",
                op.as_str()
            ),
        )
        .with_secondary(at, format!("{quoted} is not one of the strings allowed"));
        let close: Vec<&str> = allowed.iter().map(String::as_str).collect();
        d = match crate::ast::did_you_mean(s, &close) {
            Some(c) => d.with_help(format!(
                "did you mean {}? The value is one of {list}",
                serde_json::Value::from(c)
            )),
            None => d.with_help(format!("the value is one of {list}")),
        };
        self.diags.push(d);
    }
}

impl Checker<'_, '_> {
    /// An evaluator's reply is read as an `EvaluationResult`: a schema it states must
    /// be one (a wider record is one too).
    pub(super) fn check_evaluator(&mut self, evaluator: &crate::ast::Body) {
        let crate::ast::Body::Task(t) = evaluator else {
            return;
        };
        let Some(schema) = t.output_format.as_deref().and_then(|f| f.schema.as_ref()) else {
            return;
        };
        let want = Type::evaluation_result();
        if schema.node.fits(&want) {
            return;
        }
        let expanded = match &want {
            Type::Record(r) => tv_stdlib::types::Expanded(r).to_string(),
            other => other.to_string(),
        };
        self.diags.push(
            Diagnostic::error(
                schema.span,
                format!(
                    "an evaluator's output must be an `EvaluationResult`, but its schema is `{}`",
                    schema.node
                ),
            )
            .with_help(format!(
                "the loop reads the evaluator's reply as {expanded}: write schema=\"EvaluationResult\", a record with those fields, or leave the output format out"
            )),
        );
    }
}
