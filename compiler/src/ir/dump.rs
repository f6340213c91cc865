//! `tvc compile --emit ir`: the typed IR as an indented listing; every node shows its
//! type and `line:col`.

use super::*;
use crate::source::SourceMap;
use std::fmt::Write as _;

pub fn dump(p: &Program, sources: &SourceMap) -> String {
    let mut d = Dumper {
        sources,
        out: String::new(),
    };
    for (i, t) in p.tasks.iter().enumerate() {
        let described = tv_vm::disasm::describe_task(t);
        // How often a reply is asked again, when it is not the default of 1.
        let retries = if t.retries != 1 && !described.contains("retries=") {
            format!(" retries={}", t.retries)
        } else {
            String::new()
        };
        let _ = writeln!(d.out, "task{i} {described}{retries}");
    }
    for (i, f) in p.functions.iter().enumerate() {
        let params: Vec<String> = f.params.iter().map(|(n, t)| format!("{n}: {t}")).collect();
        let ret = f
            .returns
            .as_ref()
            .map_or(format!("{} (inferred)", f.yields), |t| t.to_string());
        let _ = writeln!(
            d.out,
            "\nfn{i} {}({}) -> {ret} @{}",
            f.name,
            params.join(", "),
            d.pos(f.span)
        );
        let locals: Vec<String> = f
            .locals
            .iter()
            .enumerate()
            .map(|(i, (n, t))| format!("%{i} {n}: {t}"))
            .collect();
        let _ = writeln!(d.out, "  locals {}", locals.join(", "));
        d.node(&f.body, 1);
    }
    d.out
}

struct Dumper<'a> {
    sources: &'a SourceMap,
    out: String,
}

impl Dumper<'_> {
    fn pos(&self, s: Span) -> String {
        let (l, c) = self.sources.get(s.file).line_col(s.start as usize);
        format!("{l}:{c}")
    }

    fn line(&mut self, depth: usize, text: String, ty: &Type, span: Span) {
        let pos = self.pos(span);
        let _ = writeln!(self.out, "{}{text} : {ty} @{pos}", "  ".repeat(depth));
    }

    /// An iteration over a run-time list: the list, then the body started per item.
    fn each(&mut self, e: &Each, d: usize) {
        self.labelled("over", &e.list, d);
        let concurrency = match e.concurrency {
            0 => "the run's".to_string(),
            n => n.to_string(),
        };
        let _ = writeln!(
            self.out,
            "{}each item in %{} index in %{}, {concurrency} at once: body fn{}({})",
            "  ".repeat(d),
            e.item,
            e.index,
            e.function,
            self.args(&e.args)
        );
    }

    fn node(&mut self, n: &Node, d: usize) {
        match &n.kind {
            NodeKind::Atomic {
                task,
                system,
                prompt,
                context,
                query,
            } => {
                self.line(d, format!("atomic task{task}"), &n.ty, n.span);
                self.labelled("system", system, d + 1);
                self.labelled("prompt", prompt, d + 1);
                self.labelled("context", context, d + 1);
                if let Some(q) = query {
                    self.labelled("query", q, d + 1);
                }
            }
            NodeKind::Finish { task, body } => {
                self.line(d, format!("finish task{task}"), &n.ty, n.span);
                self.node(body, d + 1);
            }
            NodeKind::Script {
                task,
                command,
                inputs,
                options,
            } => {
                self.line(d, format!("script task{task}"), &n.ty, n.span);
                for (hole, e) in options {
                    self.labelled(&format!("no option {{{{{hole}}}}}"), e, d + 1);
                }
                self.labelled("command", command, d + 1);
                for (name, e) in inputs {
                    self.labelled(&format!("input {name}"), e, d + 1);
                }
            }
            NodeKind::Sequence(s) => {
                let h = format!("sequence output=%{} results=%{}", s.output, s.results);
                self.line(d, h, &n.ty, n.span);
                for (step, slot) in s.steps.iter().zip(&s.slots) {
                    self.node(step, d + 1);
                    if let Some(l) = slot {
                        let _ = writeln!(self.out, "{}-> slot %{l}", "  ".repeat(d + 1));
                    }
                }
            }
            NodeKind::Reduce(r) => {
                let h = format!(
                    "reduce current_input=%{} current_result=%{} accumulator=%{}",
                    r.current_input, r.current_result, r.accumulator
                );
                self.line(d, h, &n.ty, n.span);
                for item in &r.items {
                    self.labelled("item", item, d + 1);
                }
                self.labelled("initial", &r.initial, d + 1);
                match &r.over {
                    Some(o) => {
                        let pad = "  ".repeat(d + 1);
                        let _ = writeln!(self.out, "{pad}items in %{}", o.items);
                        self.each(&o.inner, d + 1);
                        let _ = writeln!(self.out, "{pad}inner results in %{}", o.inner_results);
                    }
                    None => self.sub("inner", &r.inner, d + 1),
                }
                if let Some((calls, results)) = &r.inner_branches {
                    let _ = writeln!(
                        self.out,
                        "{}inner tasks run first as branches into %{results}:",
                        "  ".repeat(d + 1)
                    );
                    for (f, args) in calls {
                        let _ = writeln!(
                            self.out,
                            "{}branch fn{f}({})",
                            "  ".repeat(d + 2),
                            self.args(args)
                        );
                    }
                }
                self.sub("reduction", &r.reduction, d + 1);
            }
            NodeKind::Map(each) => {
                self.line(d, "map".into(), &n.ty, n.span);
                self.each(each, d + 1);
            }
            NodeKind::Loop(l) => {
                self.line(
                    d,
                    format!(
                        "loop max_iterations={}{} iteration=%{}{}",
                        l.max_iterations,
                        if l.accept_exhausted { " accept" } else { "" },
                        l.iteration,
                        l.history
                            .map_or(String::new(), |h| format!(" history=%{h}"))
                    ),
                    &n.ty,
                    n.span,
                );
                self.sub("director", &l.director, d + 1);
                if let Some(s) = &l.script {
                    self.sub("script", s, d + 1);
                }
                self.sub("evaluator", &l.evaluator, d + 1);
                if let Some(t) = &l.termination {
                    self.labelled("until", t, d + 1);
                }
            }
            NodeKind::Cond { cases, otherwise } => {
                self.line(d, "cond".into(), &n.ty, n.span);
                for (test, body) in cases {
                    self.labelled("case", test, d + 1);
                    self.node(body, d + 2);
                }
                if let crate::ir::Otherwise::Fail { path, value } = otherwise {
                    self.labelled(&format!("otherwise fail {path:?}"), value, d + 1);
                }
            }
            NodeKind::Call { function, args } => {
                self.line(d, format!("call fn{function}"), &n.ty, n.span);
                for (i, a) in args.iter().enumerate() {
                    self.labelled(&format!("arg{i}"), a, d + 1);
                }
            }
            NodeKind::Let { bindings, body } => {
                for (local, value) in bindings {
                    self.labelled(&format!("let %{local}"), value, d);
                }
                self.node(body, d);
            }
            NodeKind::Gather {
                calls,
                results,
                body,
            } => {
                self.line(d, format!("gather into %{results}"), &Type::Any, n.span);
                for (f, args) in calls {
                    let _ = writeln!(
                        self.out,
                        "{}branch fn{f}({})",
                        "  ".repeat(d + 1),
                        self.args(args)
                    );
                }
                self.node(body, d);
            }
            NodeKind::Complete(e) => self.labelled("complete", e, d),
        }
    }

    fn sub(&mut self, label: &str, n: &Node, d: usize) {
        let _ = writeln!(self.out, "{}{label}:", "  ".repeat(d));
        self.node(n, d + 1);
    }

    fn labelled(&mut self, label: &str, e: &Expr, d: usize) {
        let text = format!("{label} = {}", self.expr(e));
        self.line(d, text, &e.ty, e.span);
        self.nested(e, d + 1);
    }

    /// Nested tasks inside an expression, listed below it.
    fn nested(&mut self, e: &Expr, d: usize) {
        match &e.kind {
            ExprKind::Task(n) => self.node(n, d),
            ExprKind::Concat(parts) => parts.iter().for_each(|(p, _)| self.nested(p, d)),
            ExprKind::Builtin(_, args) | ExprKind::Call(_, args) => {
                args.iter().for_each(|a| self.nested(a, d))
            }
            _ => {}
        }
    }

    fn expr(&self, e: &Expr) -> String {
        match &e.kind {
            ExprKind::Null => "null".into(),
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Num(n) => n.to_string(),
            ExprKind::Str(s) => format!("{s:?}"),
            ExprKind::Local(l) => format!("%{l}"),
            ExprKind::Field(b, n) => format!("{}.{n}", self.expr(b)),
            ExprKind::Index(b, i) => format!("{}[{i}]", self.expr(b)),
            ExprKind::Not(x) => format!("!{}", self.expr(x)),
            ExprKind::Compare(op, a, b) => {
                format!("({} {} {})", self.expr(a), op.as_str(), self.expr(b))
            }
            ExprKind::And(a, b) => format!("({} && {})", self.expr(a), self.expr(b)),
            ExprKind::Or(a, b) => format!("({} || {})", self.expr(a), self.expr(b)),
            ExprKind::Concat(parts) => {
                let ps: Vec<String> = parts
                    .iter()
                    .map(|(p, q)| match q {
                        Some(q) => format!("shell:{}({})", q.as_str(), self.expr(p)),
                        None => self.expr(p),
                    })
                    .collect();
                format!("concat({})", ps.join(", "))
            }
            ExprKind::Builtin(id, args) => {
                format!("{}({})", id.builtin().name, self.args(args))
            }
            ExprKind::Call(f, args) => format!("value(fn{f}({}))", self.args(args)),
            ExprKind::Task(_) => "value(task below)".into(),
            ExprKind::Accumulated(l, full) => format!("accumulated(%{l}, full={full})"),
            ExprKind::Gathered(l, i) => format!("value(%{l}[{i}])"),
        }
    }

    fn args(&self, args: &[Expr]) -> String {
        args.iter()
            .map(|a| self.expr(a))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
