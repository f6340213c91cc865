//! Conditionals over a finite type. A `cond` whose cases compare one value with strings
//! of its literal union (`output.severity == "high"`) and leave some of them out
//! completes empty when the value is one of those: that is warned about, naming the
//! strings, unless the cond says what happens then (`otherwise="fail"` or `"empty"`)
//! or ends with a case that always holds.

use super::nulls::path_text;
use super::scope::Scope;
use super::Checker;
use crate::ast::{BinOp, CmpOp, Cond, Expr, ExprKind, Literal, Segment};
use crate::diag::Diagnostic;
use tv_stdlib::types::Type;

impl Checker<'_, '_> {
    pub(super) fn check_cond(&mut self, cond: &Cond, scope: &Scope) {
        // What earlier cases took as null is not null in the later ones.
        let mut later = scope.clone();
        for case in &cond.cases {
            self.check_test(&case.test, scope);
            let mut inside = later.clone();
            super::nulls::shown_present(&case.test, &mut inside.present);
            self.check_body(&case.body, &inside, false);
            later.present.extend(super::nulls::shown_null(&case.test));
        }
        if cond.otherwise.is_none() {
            self.warn_missing_cases(cond, scope);
        }
    }

    fn warn_missing_cases(&mut self, cond: &Cond, scope: &Scope) {
        let Some((value, covered)) = compared_strings(cond) else {
            return;
        };
        let Some((Type::Literals(all), optional)) = path_type(value, scope) else {
            return;
        };
        let quote = |s: &str| serde_json::Value::from(s).to_string();
        let missing: Vec<String> = all
            .iter()
            .filter(|s| !covered.contains(&s.as_str()))
            .map(|s| quote(s))
            .collect();
        if missing.is_empty() && !optional {
            return;
        }
        let path = path_text(value).unwrap_or_default();
        let union = Type::Literals(all.clone());
        let (mut what, may) = (missing, "");
        let may = if optional {
            what.push("null".to_string());
            " that may be absent"
        } else {
            may
        };
        let what = match what.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        self.diags.push(
            Diagnostic::warning(
                cond.head,
                format!(
                    "this `<cond>` has no case for `{path}` = {what} (a `{union}`{may}): then no case runs and the cond completes with empty content"
                ),
            )
            .with_help("add a case for each, or a last `<case test=\"true\">`; or say what happens: `<cond otherwise=\"fail\">` fails the task (input_validation_failure, naming the value), `otherwise=\"empty\"` completes it empty"),
        );
    }
}

/// The value every case of `cond` compares with strings, and those strings, when each
/// case is such a comparison of the same value (`v == "a"`, `"a" == v`, or several
/// joined by `||`). `None` for any other cond: one with a case that always holds, or
/// that tests anything else, may cover every value.
pub(crate) fn compared_strings(cond: &Cond) -> Option<(&Expr, Vec<&str>)> {
    let mut value: Option<&Expr> = None;
    let mut strings = Vec::new();
    for case in &cond.cases {
        let mut work = vec![&case.test];
        while let Some(e) = work.pop() {
            match &e.kind {
                ExprKind::Binary(BinOp::Or, a, b) => work.extend([&**b, &**a]),
                ExprKind::Binary(BinOp::Cmp(CmpOp::Eq), a, b) => {
                    let (v, s) = match (&a.kind, &b.kind) {
                        (_, ExprKind::Lit(Literal::Str(s))) => (&**a, s),
                        (ExprKind::Lit(Literal::Str(s)), _) => (&**b, s),
                        _ => return None,
                    };
                    let key = path_text(v)?;
                    match value {
                        Some(seen) if path_text(seen)? != key => return None,
                        _ => value = Some(v),
                    }
                    strings.push(s.as_str());
                }
                _ => return None,
            }
        }
    }
    Some((value?, strings))
}

/// The type of a path as the checker knows it, without reporting anything (the tests
/// are checked, and reported, on their own), and whether an optional field or an
/// index on the way may make it `null`.
fn path_type(e: &Expr, scope: &Scope) -> Option<(Type, bool)> {
    match &e.kind {
        ExprKind::Var(v) => Some((scope.lookup(v)?.ty.clone(), false)),
        ExprKind::Field(base, seg) => {
            let (ty, optional) = path_type(base, scope)?;
            match (ty, &seg.node) {
                (Type::Record(r), Segment::Name(n)) => {
                    let f = r.field(n)?;
                    Some((f.ty.clone(), optional || f.optional))
                }
                (Type::Array(item), Segment::Index(_)) => Some((*item, true)),
                _ => None,
            }
        }
        _ => None,
    }
}
