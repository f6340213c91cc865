//! Expressions, text with holes, and calls with arguments bound to positions.

use super::{Frame, Lowerer};
use crate::ast::{self, ArgValue, BinOp, ExprKind as A, Literal, Segment, TextPart};
use crate::check::Symbols;
use crate::ir::{Expr, ExprKind, Node, NodeKind};
use crate::source::Span;
use tv_stdlib::builtins::{self, Ret};
use tv_stdlib::types::Type;
use tv_vm::isa::{self, Quote};

impl<'a> Lowerer<'a> {
    /// A text template as one string expression.
    pub(super) fn text(&mut self, t: &ast::TextTemplate, frame: &mut Frame) -> Expr {
        let parts: Vec<(Expr, Option<Quote>)> = t
            .parts
            .iter()
            .map(|p| match p {
                TextPart::Lit(s, span) => (Expr::str(s.clone(), *span), None),
                TextPart::Expr(e) => (self.expr(e, frame), None),
            })
            .collect();
        concat(parts, t.span)
    }

    /// A script command: every hole quoted for the shell context it stands in (the
    /// checker has refused holes without one); the holes a leading `-` would make an
    /// option are listed to be checked, each value kept in a local (computed once).
    pub(super) fn command(&mut self, t: &ast::TextTemplate, frame: &mut Frame) -> Command {
        let holes = crate::check::shell::template_contexts(t).unwrap_or_default();
        let mut command = Command {
            text: Expr::str("", t.span),
            options: Vec::new(),
            lets: Vec::new(),
        };
        let mut n = 0;
        let mut parts = Vec::with_capacity(t.parts.len());
        for p in &t.parts {
            let (e, hole) = match p {
                TextPart::Lit(s, span) => {
                    parts.push((Expr::str(s.clone(), *span), None));
                    continue;
                }
                TextPart::Expr(e) => (e, holes.get(n).copied()),
            };
            n += 1;
            let mut value = self.expr(e, frame);
            // Bare-word quoting, and the check, are the safe defaults should a hole's
            // context be missing.
            if hole.is_none_or(|h| h.option) {
                if !matches!(value.kind, ExprKind::Local(_)) {
                    let local = frame.local("(script word)", value.ty.clone());
                    let (ty, span) = (value.ty.clone(), value.span);
                    command.lets.push((local, value));
                    value = Expr::new(ExprKind::Local(local), ty, span);
                }
                command.options.push((e.to_string(), value.clone()));
            }
            parts.push((value, Some(hole.map_or(Quote::Bare, |h| h.quote))));
        }
        command.text = concat(parts, t.span);
        command
    }

    pub(super) fn var(&mut self, name: &str, span: Span, frame: &mut Frame) -> Expr {
        match frame.lookup(name) {
            Some(l) => {
                let ty = frame
                    .locals
                    .get(l as usize)
                    .map_or(Type::Any, |(_, t)| t.clone());
                Expr::new(ExprKind::Local(l), ty, span)
            }
            None => Expr::new(ExprKind::Null, Type::Null, span),
        }
    }

    pub(super) fn expr(&mut self, e: &ast::Expr, frame: &mut Frame) -> Expr {
        let span = e.span;
        match &e.kind {
            A::Var(name) => self.var(name, span, frame),
            A::Field(base, seg) => {
                let base = Box::new(self.expr(base, frame));
                let ty = match (&base.ty, &seg.node) {
                    (Type::Array(item), Segment::Index(_)) => (**item).clone(),
                    _ => Type::Any,
                };
                let kind = match &seg.node {
                    Segment::Name(n) => ExprKind::Field(base, n.clone()),
                    Segment::Index(i) => ExprKind::Index(base, *i),
                };
                Expr::new(kind, ty, span)
            }
            A::Lit(l) => literal(l, span),
            A::Not(inner) => Expr::new(
                ExprKind::Not(Box::new(self.expr(inner, frame))),
                Type::Boolean,
                span,
            ),
            A::Binary(op, l, r) => {
                let (l, r) = (Box::new(self.expr(l, frame)), Box::new(self.expr(r, frame)));
                let kind = match op {
                    BinOp::And => ExprKind::And(l, r),
                    BinOp::Or => ExprKind::Or(l, r),
                    BinOp::Cmp(c) => ExprKind::Compare(compare_op(*c), l, r),
                };
                Expr::new(kind, Type::Boolean, span)
            }
            A::Call { name, args } => {
                let args: Vec<(Option<String>, Expr)> = args
                    .iter()
                    .map(|a| {
                        (
                            a.name.as_ref().map(|n| n.node.clone()),
                            self.expr(&a.value, frame),
                        )
                    })
                    .collect();
                self.call_expr(&name.node, args, span, frame)
            }
            A::Error => Expr::new(ExprKind::Null, Type::Null, span),
        }
    }

    fn call_expr(
        &mut self,
        name: &str,
        args: Vec<(Option<String>, Expr)>,
        span: Span,
        frame: &Frame,
    ) -> Expr {
        if let Some(&function) = self.ids.get(name) {
            let params = self.param_names(name);
            let bound = bind(&params, args, span);
            let bound = self.with_context(name, bound, frame, span);
            let ty = self.symbols.returns.get(name).cloned().unwrap_or(Type::Any);
            return Expr::new(ExprKind::Call(function, bound), ty, span);
        }
        // The checker has reported a name that is neither a template nor a built-in.
        let Some(id) = builtins::find(name) else {
            return Expr::new(ExprKind::Null, Type::Null, span);
        };
        let b = id.builtin();
        let params: Vec<&str> = b.params.iter().map(|p| p.name).collect();
        let mut bound = bind(&params, args, span);
        // Absent optional parameters at the end are not passed at all.
        while bound.len() > b.min_arity() && matches!(bound.last(), Some(e) if e.kind.is_absent()) {
            bound.pop();
        }
        let ty = match b.returns {
            Ret::Fixed(t) => t.to_type(),
            Ret::SameAsFirst => bound.first().map_or(Type::Any, |a| a.ty.clone()),
        };
        Expr::new(ExprKind::Builtin(id, bound), ty, span)
    }

    /// The parameter names of item `name`, borrowed from the symbols (which outlive
    /// the lowerer, so the names can be held while it is changed).
    fn param_names(&self, name: &str) -> Vec<&'a str> {
        let symbols: &'a Symbols = self.symbols;
        symbols
            .items
            .get(name)
            .map(|s| s.params.iter().map(|p| p.name.as_str()).collect())
            .unwrap_or_default()
    }

    /// `<call template>`: bare words resolved, `<arg>` text read as the parameter's type.
    pub(super) fn call_element(&mut self, c: &ast::Call, frame: &mut Frame) -> Node {
        let sig_types: Vec<Option<Type>> = self
            .symbols
            .items
            .get(&c.template.node)
            .map(|s| s.params.iter().map(|p| p.ty.clone()).collect())
            .unwrap_or_default();
        let params = self.param_names(&c.template.node);
        let args: Vec<(Option<String>, Expr)> = c
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let name = a.name.as_ref().map(|n| n.node.clone());
                let slot = name
                    .as_ref()
                    .and_then(|n| params.iter().position(|p| *p == n.as_str()))
                    .unwrap_or(i);
                let want = sig_types.get(slot).cloned().flatten().unwrap_or(Type::Any);
                (name, self.arg(&a.value, &want, frame, a.span))
            })
            .collect();
        let function = self.ids.get(&c.template.node).copied().unwrap_or(0);
        let bound = bind(&params, args, c.span);
        let bound = self.with_context(&c.template.node, bound, frame, c.span);
        Node {
            kind: NodeKind::Call {
                function,
                args: bound,
            },
            ty: self
                .symbols
                .returns
                .get(&c.template.node)
                .cloned()
                .unwrap_or(Type::Any),
            span: c.span,
        }
    }

    fn arg(&mut self, v: &ArgValue, want: &Type, frame: &mut Frame, span: Span) -> Expr {
        match v {
            ArgValue::Word(w) if self.symbols.word_vars.contains(&w.span) => {
                self.var(&w.node, w.span, frame)
            }
            ArgValue::Word(w) => typed_text(&w.node, want, w.span),
            ArgValue::Text(t) => match t.as_literal() {
                Some(lit) => typed_text(&lit, want, t.span),
                None => self.text(t, frame),
            },
            ArgValue::Body(b) => {
                let node = self.body(b, frame, false);
                let ty = node.ty.clone();
                Expr::new(ExprKind::Task(Box::new(node)), ty, span)
            }
        }
    }
}

impl ExprKind {
    fn is_absent(&self) -> bool {
        matches!(self, ExprKind::Null)
    }
}

/// Arguments in parameter order; a parameter given no argument gets `null`.
fn bind(params: &[&str], args: Vec<(Option<String>, Expr)>, span: Span) -> Vec<Expr> {
    let null = || Expr::new(ExprKind::Null, Type::Null, span);
    // Most calls pass their arguments in order, by position.
    if args.len() <= params.len() && args.iter().all(|(name, _)| name.is_none()) {
        let missing = params.len() - args.len();
        let mut out: Vec<Expr> = args.into_iter().map(|(_, e)| e).collect();
        out.extend(std::iter::repeat_with(null).take(missing));
        return out;
    }
    let mut out: Vec<Option<Expr>> = vec![None; params.len()];
    for (i, (name, e)) in args.into_iter().enumerate() {
        let slot = match name {
            Some(n) => params.iter().position(|p| *p == n),
            None => Some(i),
        };
        if let Some(slot) = slot.filter(|s| *s < out.len()) {
            out[slot] = Some(e);
        }
    }
    out.into_iter().map(|e| e.unwrap_or_else(null)).collect()
}

fn literal(l: &Literal, span: Span) -> Expr {
    match l {
        Literal::Str(s) => Expr::str(s.clone(), span),
        Literal::Num(n) => Expr::new(ExprKind::Num(*n), Type::Number, span),
        Literal::Bool(b) => Expr::new(ExprKind::Bool(*b), Type::Boolean, span),
        Literal::Null => Expr::new(ExprKind::Null, Type::Null, span),
    }
}

/// `<arg>` text as the value the parameter's type asks for (the checker agreed).
fn typed_text(text: &str, want: &Type, span: Span) -> Expr {
    let t = text.trim();
    match want {
        Type::Number => {
            if let Ok(n) = t.parse::<f64>() {
                return Expr::new(ExprKind::Num(n), Type::Number, span);
            }
        }
        Type::Boolean if t == "true" || t == "false" => {
            return Expr::new(ExprKind::Bool(t == "true"), Type::Boolean, span)
        }
        Type::Null if t == "null" => return Expr::new(ExprKind::Null, Type::Null, span),
        Type::Object | Type::Array(_) | Type::Record(_)
            if serde_json::from_str::<serde_json::Value>(t).is_ok() =>
        {
            return Expr::new(
                ExprKind::Builtin(builtins::PARSE_JSON, vec![Expr::str(t, span)]),
                want.clone(),
                span,
            );
        }
        _ => {}
    }
    Expr::str(text, span)
}

/// The machine's compare instruction for a comparison as written: the one place where
/// the syntax tree's operators meet the instruction set.
fn compare_op(c: ast::CmpOp) -> isa::CmpOp {
    match c {
        ast::CmpOp::Eq => isa::CmpOp::Eq,
        ast::CmpOp::Ne => isa::CmpOp::Ne,
        ast::CmpOp::Lt => isa::CmpOp::Lt,
        ast::CmpOp::Le => isa::CmpOp::Le,
        ast::CmpOp::Gt => isa::CmpOp::Gt,
        ast::CmpOp::Ge => isa::CmpOp::Ge,
    }
}

/// A script command, lowered.
pub(super) struct Command {
    pub text: Expr,
    /// The holes to check for a leading `-`: their expression, and their value.
    pub options: Vec<(String, Expr)>,
    /// The values computed before the command, to be checked and then quoted.
    pub lets: Vec<(crate::ir::Local, Expr)>,
}

/// Text parts as one string: a lone string part as it is.
fn concat(mut parts: Vec<(Expr, Option<Quote>)>, span: Span) -> Expr {
    match parts.as_slice() {
        [] => Expr::str("", span),
        [(only, None)] if only.ty == Type::String => parts.swap_remove(0).0,
        _ => Expr::new(ExprKind::Concat(parts), Type::String, span),
    }
}
