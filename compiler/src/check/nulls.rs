//! Holes that may splice `null` into a prompt. A value spliced into text is written as
//! JSON when it is not a string, so a `null` reaches the model as the word "null":
//! `{{findings.0.note}}` of an empty list, an optional field left out, or
//! `{{evaluation_feedback}}` before the first evaluation. The rule is narrow, so that
//! it does not drown a template in warnings: only a hole of prompt text (a task's
//! `<system>`, `<instructions>` and `<description>`, never a test or an argument) whose
//! whole expression is such a path is warned about, once; `default(path, "...")` is
//! the fix the warning names, and it silences it.

use super::scope::Scope;
use super::Checker;
use crate::ast::{Expr, ExprKind, Segment, TextTemplate};
use crate::diag::Diagnostic;
use tv_stdlib::types::Type;

impl Checker<'_, '_> {
    pub(super) fn warn_null_holes(&mut self, text: &TextTemplate, scope: &Scope) {
        for e in text.exprs() {
            let Some(why) = null_reason(e, scope) else {
                continue;
            };
            let path = path_text(e).unwrap_or_default();
            self.diags.push(
                Diagnostic::warning(
                    e.span,
                    format!("`{path}` is null {why}: a null is written into the prompt as the word \"null\""),
                )
                .with_help(format!(
                    "say what the prompt reads then: {{{{default({path}, \"...\")}}}}"
                )),
            );
        }
    }
}

/// Why the path `e` may be `null`, when the checker knows it may: a variable not yet
/// produced where it is read, an index into an array, an optional record field. `None`
/// for anything else, a path into a value of unknown type included.
fn null_reason(e: &Expr, scope: &Scope) -> Option<String> {
    let mut segments = Vec::new();
    let mut at = e;
    let var = loop {
        match &at.kind {
            ExprKind::Field(base, seg) => {
                segments.push(&seg.node);
                at = base;
            }
            ExprKind::Var(v) => break v,
            _ => return None,
        }
    };
    let binding = scope.lookup(var)?;
    let present = |path: &str| scope.present.iter().any(|p| p == path);
    if let Some(why) = binding.null.filter(|_| !present(var)) {
        return Some(why.to_string());
    }
    let (mut ty, mut path) = (binding.ty.clone(), var.clone());
    for seg in segments.into_iter().rev() {
        let within = path.clone();
        match seg {
            Segment::Name(n) => path = format!("{path}.{n}"),
            Segment::Index(i) => path = format!("{path}.{i}"),
        }
        ty = match (ty, seg) {
            (Type::Array(item), Segment::Index(i)) => {
                if !present(&path) {
                    return Some(format!("when `{within}` has no item {i}"));
                }
                *item
            }
            (Type::Record(r), Segment::Name(n)) => {
                let f = r.field(n)?;
                if f.optional && !present(&path) {
                    return Some(format!(
                        "when `{within}` leaves out its optional field `{n}`"
                    ));
                }
                f.ty.clone()
            }
            _ => return None,
        };
    }
    None
}

/// The paths a case's test shows are not null where its body runs: each of its
/// `&&`-joined parts that is `p != null`, `p == "text"` (either way round) or `p`
/// alone (a truthy value is not null).
pub(super) fn shown_present(test: &Expr, out: &mut Vec<String>) {
    use crate::ast::{BinOp, CmpOp, Literal};
    let path = path_text;
    match &test.kind {
        ExprKind::Binary(BinOp::And, a, b) => {
            shown_present(a, out);
            shown_present(b, out);
        }
        ExprKind::Binary(BinOp::Cmp(op), a, b) => {
            let (p, other) = match (path(a), path(b)) {
                (Some(p), None) => (p, b),
                (None, Some(p)) => (p, a),
                _ => return,
            };
            let shown = match (op, &other.kind) {
                (CmpOp::Ne, ExprKind::Lit(Literal::Null)) => true,
                (CmpOp::Eq, ExprKind::Lit(Literal::Null)) => false,
                (CmpOp::Eq, ExprKind::Lit(_)) => true,
                _ => false,
            };
            if shown {
                out.push(p);
            }
        }
        _ => out.extend(path(test)),
    }
}

/// The path a case's test shows is null (`p == null`, `!p`), so that it is not null
/// in the cases after it.
pub(super) fn shown_null(test: &Expr) -> Option<String> {
    use crate::ast::{BinOp, CmpOp, Literal};
    let path = path_text;
    match &test.kind {
        ExprKind::Not(inner) => path(inner),
        ExprKind::Binary(BinOp::Cmp(CmpOp::Eq), a, b) => match (&a.kind, &b.kind) {
            (_, ExprKind::Lit(Literal::Null)) => path(a),
            (ExprKind::Lit(Literal::Null), _) => path(b),
            _ => None,
        },
        _ => None,
    }
}

/// A variable or a path into one (`output.findings.0.severity`), as written; `None`
/// for any other expression.
pub(crate) fn path_text(e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Var(v) => Some(v.clone()),
        ExprKind::Field(base, seg) => {
            let base = path_text(base)?;
            Some(match &seg.node {
                Segment::Name(n) => format!("{base}.{n}"),
                Segment::Index(i) => format!("{base}.{i}"),
            })
        }
        _ => None,
    }
}
