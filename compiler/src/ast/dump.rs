//! `tvc check --emit ast`: the syntax tree as an indented listing with `line:col`.
//! Expressions print in one canonical spelling, so the listing shows how each one
//! was read (and which `<arg>` words became variables).

use super::*;
use crate::source::{SourceFile, SourceMap};
use rustc_hash::FxHashSet as HashSet;
use std::fmt::{self, Write as _};

/// `word_vars`: the bare `<arg>` words the checker resolved to variables.
pub fn dump_program(program: &Program, sources: &SourceMap, word_vars: &HashSet<Span>) -> String {
    let mut out = String::new();
    for m in program.modules.iter().filter(|m| !m.std) {
        let file = sources.get(m.file);
        let _ = writeln!(out, "== {}", file.path.display());
        let mut d = Dumper {
            file,
            word_vars,
            out: &mut out,
        };
        for (name, ty) in program.types.iter().filter(|(n, _)| n.span.file == m.file) {
            let written = match ty {
                Type::Record(r) => tv_stdlib::types::Expanded(r).to_string(),
                other => other.to_string(),
            };
            d.line(0, format_args!("type {} = {written}", name.node), name.span);
        }
        for item in &m.items {
            d.item(item);
        }
        for test in &m.tests {
            d.test(test);
        }
    }
    out
}

struct Dumper<'a> {
    file: &'a SourceFile,
    word_vars: &'a HashSet<Span>,
    out: &'a mut String,
}

impl Dumper<'_> {
    fn pos(&self, s: Span) -> String {
        let (l, c) = self.file.line_col(s.start as usize);
        format!("{l}:{c}")
    }

    fn line(&mut self, depth: usize, text: impl fmt::Display, span: Span) {
        let pos = self.pos(span);
        let _ = writeln!(self.out, "{}{text} @{pos}", "  ".repeat(depth));
    }

    /// The sampling attributes of `<model>` that were written, each at its place.
    fn model_settings(&mut self, m: &ModelSettings, d: usize) {
        fn shown<T: fmt::Display>(v: &Option<Spanned<T>>) -> Option<(String, Span)> {
            v.as_ref().map(|v| (v.node.to_string(), v.span))
        }
        let stop = m.stop.as_ref().map(|v| match &v.node[..] {
            [one] => (format!("{one:?}"), v.span),
            several => (format!("{several:?}"), v.span),
        });
        for (label, value) in [
            ("temperature", shown(&m.temperature)),
            ("max_tokens", shown(&m.max_tokens)),
            ("top_p", shown(&m.top_p)),
            ("seed", shown(&m.seed)),
            ("stop", stop),
        ] {
            if let Some((v, span)) = value {
                self.line(d, format_args!("model {label}={v}"), span);
            }
        }
    }

    fn item(&mut self, item: &Item) {
        match item {
            Item::Template(t) => {
                let params: Vec<String> = t
                    .params
                    .iter()
                    .map(|p| match &p.ty {
                        Some(ty) => format!("{}: {}", p.name.node, ty.node),
                        None => p.name.node.clone(),
                    })
                    .collect();
                let ret = t
                    .returns
                    .as_ref()
                    .map_or(String::new(), |r| format!(" -> {}", r.node));
                self.line(
                    0,
                    format_args!("template {}({}){ret}", t.name.node, params.join(", ")),
                    t.name.span,
                );
                self.body(&t.body, 1);
            }
            Item::Task(t) => {
                let how = if t.explicit_name {
                    ""
                } else {
                    " (named after its file)"
                };
                self.line(0, format_args!("task {}{how}", t.name.node), t.name.span);
                self.task(&t.task, 1);
            }
        }
    }

    fn test(&mut self, t: &TestCase) {
        let head = format!("test {:?} runs {}", t.name.node, t.entry.node);
        self.line(0, head, t.name.span);
        for a in &t.args {
            let value = match &a.value {
                TestValue::Text(text) => format!("{text:?}"),
                TestValue::File(path) => format!("file {:?}", path.node),
            };
            self.line(1, format_args!("arg {} = {value}", a.name.node), a.span);
        }
        for r in &t.replies {
            let when = r
                .matches
                .as_ref()
                .map_or("any request".to_string(), |m| format!("{m:?}"));
            self.line(1, format_args!("reply to {when}: {:?}", r.text), r.span);
        }
        for c in &t.cassettes {
            self.line(1, format_args!("cassette {:?}", c.node), c.span);
        }
        for e in &t.expects {
            let what = match &e.check {
                Check::Status(s) => format!("status {s}"),
                Check::Equals { path, value } => format!("{path} equals {value:?}"),
                Check::Contains { path, value } => format!("{path} contains {value:?}"),
                Check::Exists { path } => format!("{path} exists"),
            };
            self.line(1, format_args!("expect {what}"), e.span);
        }
    }

    fn body(&mut self, b: &Body, depth: usize) {
        match b {
            Body::Task(t) => self.task(t, depth),
            Body::Call(c) => {
                self.line(
                    depth,
                    format_args!("call {}", c.template.node),
                    c.template.span,
                );
                for a in &c.args {
                    let name = a
                        .name
                        .as_ref()
                        .map_or(String::new(), |n| format!("{}=", n.node));
                    match &a.value {
                        ArgValue::Word(w) if self.word_vars.contains(&w.span) => {
                            self.line(depth + 1, format_args!("arg {name}var {}", w.node), w.span)
                        }
                        ArgValue::Word(w) => {
                            self.line(depth + 1, format_args!("arg {name}{:?}", w.node), w.span)
                        }
                        ArgValue::Text(t) => self.line(
                            depth + 1,
                            format_args!("arg {name}{}", TextDisplay(t)),
                            a.span,
                        ),
                        ArgValue::Body(b) => {
                            self.line(depth + 1, format_args!("arg {name}"), a.span);
                            self.body(b, depth + 2);
                        }
                    }
                }
            }
            Body::Cond(c) => {
                match &c.otherwise {
                    Some(o) => self.line(
                        depth,
                        format_args!("cond otherwise={}", o.node.as_str()),
                        c.span,
                    ),
                    None => self.line(depth, "cond", c.span),
                }
                for case in &c.cases {
                    self.line(
                        depth + 1,
                        format_args!("case {}", case.test),
                        case.test.span,
                    );
                    self.body(&case.body, depth + 2);
                }
            }
            Body::Missing(s) => self.line(depth, "<missing>", *s),
        }
    }

    fn task(&mut self, t: &Task, depth: usize) {
        let mut head = format!("task {}", t.kind.node.as_str());
        if let Some(s) = &t.subtype {
            let _ = write!(head, " subtype={}", s.node);
        }
        if let Some(r) = &t.reference {
            let _ = write!(head, " ref={}", r.node);
        }
        if let Some(e) = &t.over {
            let _ = write!(head, " over={e}");
        }
        if let Some(n) = &t.item_name {
            let _ = write!(head, " as={}", n.node);
        }
        if let Some(c) = &t.concurrency {
            let _ = write!(head, " concurrency={}", c.node);
        }
        self.line(depth, head, t.span);
        let d = depth + 1;
        for (label, text) in [
            ("description", t.description.as_ref()),
            ("instructions", t.instructions.as_ref()),
            ("system", t.system.as_ref()),
            ("criteria", t.criteria.as_deref()),
            ("initial_value", t.initial_value.as_deref()),
        ] {
            if let Some(text) = text {
                self.line(d, format_args!("{label} {}", TextDisplay(text)), text.span);
            }
        }
        for (label, word) in [
            ("model", t.model.as_ref()),
            ("provider", t.provider.as_deref()),
            ("output_slot", t.output_slot.as_deref()),
            ("input_source", t.input_source.as_deref()),
        ] {
            if let Some(w) = word {
                self.line(d, format_args!("{label} {}", w.node), w.span);
            }
        }
        if let Some(f) = &t.output_format {
            let schema = f
                .schema
                .as_ref()
                .map_or(String::new(), |s| format!(" schema={}", s.node));
            let retries = f
                .retries
                .as_ref()
                .map_or(String::new(), |r| format!(" retries={}", r.node));
            self.line(
                d,
                format_args!("output_format {:?}{schema}{retries}", f.kind.node),
                f.span,
            );
        }
        if let Some(c) = &t.context {
            let parts = [
                c.inherit_context
                    .as_ref()
                    .map(|v| format!("inherit_context={:?}", v.node)),
                c.accumulate_data
                    .as_ref()
                    .map(|v| format!("accumulate_data={}", v.node)),
                c.accumulation_format
                    .as_ref()
                    .map(|v| format!("accumulation_format={:?}", v.node)),
                c.fresh_context
                    .as_ref()
                    .map(|v| format!("fresh_context={:?}", v.node)),
            ];
            let parts: Vec<String> = parts.into_iter().flatten().collect();
            self.line(
                d,
                format_args!("context_management {}", parts.join(" ")),
                c.span,
            );
        }
        if let Some(fp) = &t.file_paths {
            match &fp.node {
                FilePaths::Literal(ps) => {
                    let ps: Vec<String> = ps.iter().map(|p| TextDisplay(p).to_string()).collect();
                    self.line(
                        d,
                        format_args!("file_paths literal [{}]", ps.join(", ")),
                        fp.span,
                    )
                }
                FilePaths::Command(c) => self.line(
                    d,
                    format_args!("file_paths command {}", TextDisplay(c)),
                    fp.span,
                ),
                FilePaths::Description(c) => self.line(
                    d,
                    format_args!("file_paths description {}", TextDisplay(c)),
                    fp.span,
                ),
            }
        }
        for (label, flag) in [
            ("manual_xml", &t.manual_xml),
            ("disable_reparsing", &t.disable_reparsing),
        ] {
            if let Some(f) = flag {
                self.line(d, format_args!("{label} {}", f.node), f.span);
            }
        }
        if let Some(m) = &t.max_iterations {
            self.line(d, format_args!("max_iterations {}", m.node), m.span);
        }
        if let Some(a) = &t.on_max_iterations {
            let what = if a.node { "accept" } else { "fail" };
            self.line(d, format_args!("on_max_iterations {what}"), a.span);
        }
        if let Some(e) = &t.subtasks {
            let what = if e.node { "enabled" } else { "disabled" };
            self.line(d, format_args!("subtasks {what}"), e.span);
        }
        self.model_settings(t.model_settings(), d);
        self.inputs("input", &t.inputs, d);
        for r in &t.context_relevance {
            self.line(
                d,
                format_args!(
                    "context_relevance {} include={}",
                    r.name.node, r.include.node
                ),
                r.name.span,
            );
        }
        if let Some(ca) = &t.context_assembly {
            for (label, text) in [
                ("primary", &ca.primary),
                ("secondary", &ca.secondary),
                ("excluded", &ca.excluded),
            ] {
                if let Some(text) = text {
                    self.line(
                        d,
                        format_args!("context_assembly {label} {}", TextDisplay(text)),
                        text.span,
                    );
                }
            }
        }
        if let Some(steps) = &t.steps {
            self.line(d, "steps", steps.span);
            for s in &steps.node {
                self.body(s, d + 1);
            }
        }
        for (label, slot) in t.slots() {
            if let Some(b) = slot {
                self.line(d, label, b.span());
                self.body(b, d + 1);
            }
        }
        if let Some(s) = &t.script {
            let timeout = s
                .timeout
                .as_ref()
                .map_or(String::new(), |t| format!(" timeout={}", t.node));
            let cmd = s
                .command
                .as_ref()
                .map_or("<none>".to_string(), |c| TextDisplay(c).to_string());
            self.line(d, format_args!("script_execution {cmd}{timeout}"), s.span);
            self.inputs("script input", &s.inputs, d + 1);
        }
        if let Some(e) = &t.termination {
            self.line(d, format_args!("termination_condition {e}"), e.span);
        }
    }

    fn inputs(&mut self, label: &str, inputs: &[Input], depth: usize) {
        for i in inputs {
            let from = i
                .from
                .as_ref()
                .map_or(String::new(), |f| format!(" from={}", f.node));
            let typed =
                i.ty.as_ref()
                    .map_or(String::new(), |t| format!(": {}", t.node));
            let from = format!("{typed}{from}");
            match &i.value {
                InputValue::Empty => self.line(
                    depth,
                    format_args!("{label} {}{from}", i.name.node),
                    i.name.span,
                ),
                InputValue::Text(t) => self.line(
                    depth,
                    format_args!("{label} {}{from} = {}", i.name.node, TextDisplay(t)),
                    i.name.span,
                ),
                InputValue::Body(b) => {
                    self.line(
                        depth,
                        format_args!("{label} {}{from} =", i.name.node),
                        i.name.span,
                    );
                    self.body(b, depth + 1);
                }
            }
        }
    }
}

/// A text template as `"literal" {{expr}} "literal"`.
struct TextDisplay<'a>(&'a TextTemplate);

impl fmt::Display for TextDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for p in &self.0.parts {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            match p {
                TextPart::Lit(s, _) => write!(f, "{s:?}")?,
                TextPart::Expr(e) => write!(f, "{{{{{e}}}}}")?,
            }
        }
        if first {
            f.write_str("\"\"")?;
        }
        Ok(())
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ExprKind::Var(v) => f.write_str(v),
            ExprKind::Field(base, seg) => match &seg.node {
                Segment::Name(n) => write!(f, "{base}.{n}"),
                Segment::Index(i) => write!(f, "{base}.{i}"),
            },
            ExprKind::Lit(l) => match l {
                Literal::Str(s) => write!(f, "{s:?}"),
                Literal::Num(n) => write!(f, "{n}"),
                Literal::Bool(b) => write!(f, "{b}"),
                Literal::Null => f.write_str("null"),
            },
            ExprKind::Call { name, args } => {
                write!(f, "{}(", name.node)?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    if let Some(n) = &a.name {
                        write!(f, "{}=", n.node)?;
                    }
                    write!(f, "{}", a.value)?;
                }
                f.write_str(")")
            }
            ExprKind::Not(e) => write!(f, "!({e})"),
            ExprKind::Binary(op, l, r) => write!(f, "({l} {} {r})", op.as_str()),
            ExprKind::Error => f.write_str("<error>"),
        }
    }
}
