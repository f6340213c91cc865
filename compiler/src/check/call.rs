//! Calls: known templates and functions, arity, named arguments and argument types,
//! for `{{f(x)}}` holes, `<call template>` elements and `<task ref>`.

use super::scope::Scope;
use super::Checker;
use crate::ast::{ArgValue, Call, Ident, Task};
use crate::diag::Diagnostic;
use crate::source::Span;
use std::borrow::Cow;
use tv_stdlib::builtins::{self, Ret, Ty};
use tv_stdlib::types::Type;

/// One argument as the binder sees it, whatever syntax it came from.
pub(super) struct ArgInfo {
    pub(super) name: Option<Ident>,
    pub(super) span: Span,
    pub(super) ty: Type,
    /// Set for `<arg>` text, which takes its meaning from the parameter's type.
    pub(super) text: Option<String>,
    /// The parser could not read this argument; it has reported why.
    pub(super) broken: bool,
}

/// One parameter as the binder sees it, borrowed from a signature where it can be.
struct Slot<'a> {
    name: &'a str,
    ty: Option<Want<'a>>,
    optional: bool,
}

/// What a parameter takes: a template's declared type, or a built-in's, which may be
/// a union of types.
enum Want<'a> {
    Type(Cow<'a, Type>),
    Builtin(Ty),
}

impl Want<'_> {
    fn accepts(&self, t: &Type) -> bool {
        match self {
            Want::Type(want) => t.fits(want),
            Want::Builtin(want) => want.accepts(t),
        }
    }

    /// The type `<arg>` text has when read for this parameter, if it reads as one.
    fn read_text(&self, text: &str) -> Option<Type> {
        match self {
            Want::Type(want) => text_as(text, want),
            Want::Builtin(want) => want
                .members()
                .iter()
                .find_map(|m| text_as(text, &m.to_type())),
        }
    }

    /// For messages: "`number`", or "`string`, `array` or `object`".
    fn describe(&self) -> String {
        match self {
            Want::Type(want) => format!("`{want}`"),
            Want::Builtin(want) => want.describe(),
        }
    }
}

impl std::fmt::Display for Want<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Want::Type(want) => write!(f, "{want}"),
            Want::Builtin(want) => write!(f, "{want}"),
        }
    }
}

impl Checker<'_, '_> {
    /// A `<call template>` element.
    pub(super) fn check_call_element(&mut self, call: &Call, scope: &Scope) {
        let infos = call
            .args
            .iter()
            .map(|a| {
                let (ty, text) = match &a.value {
                    ArgValue::Word(w) => match scope.lookup(&w.node) {
                        Some(b) => {
                            self.word_vars.insert(w.span);
                            (b.ty.clone(), None)
                        }
                        None => (Type::String, Some(w.node.clone())),
                    },
                    ArgValue::Text(t) => {
                        self.check_text(t, scope);
                        (Type::String, t.as_literal())
                    }
                    ArgValue::Body(b) => {
                        self.check_body(b, scope, false);
                        (self.infer_body(b), None)
                    }
                };
                ArgInfo {
                    name: a.name.clone(),
                    span: a.span,
                    ty,
                    text,
                    broken: false,
                }
            })
            .collect();
        if call.template.node.is_empty() {
            return;
        }
        self.check_call(&call.template, infos, call.span);
    }

    /// `<task ref="name">`: the referenced item runs with this task's inputs. `decl`:
    /// the task is an item's own, so its plain inputs are declarations.
    pub(super) fn check_ref(&mut self, r: &Ident, task: &Task, outer: &Scope, decl: bool) {
        // The tables are borrowed apart from the checker: diagnostics can be pushed
        // while a signature is held.
        let items = self.items;
        let Some(sig) = items.get(&r.node) else {
            self.unknown(r, false);
            return;
        };
        self.edge(r);
        for input in &task.inputs {
            if !sig.params.iter().any(|p| p.name == input.name.node) {
                self.diags.push(
                    Diagnostic::error(
                        input.name.span,
                        format!(
                            "{} `{}` has no parameter `{}`",
                            sig.kind.noun(),
                            r.node,
                            input.name.node
                        ),
                    )
                    .with_secondary(sig.def_span, "defined here"),
                );
            }
        }
        let mut missing = Vec::new();
        for p in &sig.params {
            match task.inputs.iter().find(|i| i.name.node == p.name) {
                None => missing.push(format!("`{}`", p.name)),
                Some(i) if decl && is_documentation(i, outer) => {
                    self.documented_only(i, r, sig);
                }
                Some(_) => {}
            }
        }
        self.ref_missing(r, sig, &missing);
    }

    /// A template's own task declares its plain inputs, but only `params` are passed
    /// in: such an input documents a name and gives the referenced item nothing.
    fn documented_only(&mut self, input: &crate::ast::Input, r: &Ident, sig: &super::Signature) {
        let name = &input.name.node;
        self.diags.push(
            Diagnostic::error(
                input.name.span,
                format!(
                    "input `{name}` of a template's own task is a declaration, not a value, so {} `{}` gets none for its parameter `{name}`",
                    sig.kind.noun(),
                    r.node
                ),
            )
            .with_secondary(sig.def_span, "defined here")
            .with_help(format!(
                "add `{name}` to the template's params=\"...\" so that callers pass it, or give the value with from=\"variable\" or a nested task"
            )),
        );
    }

    /// Every parameter of a referenced item needs an `<input>` of its name: a
    /// reference passes nothing else, and a parameter left out would run as null.
    fn ref_missing(&mut self, r: &Ident, sig: &super::Signature, missing: &[String]) {
        let Some(first) = missing.first() else {
            return;
        };
        let (noun, list) = match missing.len() {
            1 => ("parameter", first.clone()),
            _ => ("parameters", missing.join(", ")),
        };
        let name = first.trim_matches('`');
        self.diags.push(
            Diagnostic::error(
                r.span,
                format!(
                    "{} `{}` is referenced without a value for its {noun} {list}",
                    sig.kind.noun(),
                    r.node
                ),
            )
            .with_label(format!("missing {list}"))
            .with_secondary(sig.def_span, "defined here")
            .with_help(format!(
                "give each one an input of this task: <input name=\"{name}\" from=\"variable\"/>, <input name=\"{name}\">value</input>, or an empty <input name=\"{name}\"/> to pass on the variable of that name"
            )),
        );
    }

    pub(super) fn check_call(&mut self, name: &Ident, args: Vec<ArgInfo>, span: Span) -> Type {
        let items = self.items;
        if let Some(sig) = items.get(&name.node) {
            self.edge(name);
            let params: Vec<Slot> = sig
                .params
                .iter()
                .map(|p| Slot {
                    name: &p.name,
                    ty: p.ty.as_ref().map(|t| Want::Type(Cow::Borrowed(t))),
                    optional: false,
                })
                .collect();
            let noun = sig.kind.noun();
            self.bind_args(name, noun, &params, &args, span, Some(sig.def_span));
            return self.returns.get(&name.node).cloned().unwrap_or(Type::Any);
        }
        let Some(b) = builtins::lookup(&name.node) else {
            self.unknown(name, true);
            return Type::Any;
        };
        let params: Vec<Slot> = b
            .params
            .iter()
            .map(|p| Slot {
                name: p.name,
                ty: Some(Want::Builtin(p.ty)),
                optional: p.optional,
            })
            .collect();
        self.bind_args(name, "function", &params, &args, span, None);
        match b.returns {
            Ret::Fixed(t) => t.to_type(),
            Ret::SameAsFirst => args.first().map_or(Type::Any, |a| a.ty.clone()),
        }
    }

    /// Reports a call or reference to a name that is neither an item nor (when
    /// `builtins_too`) a built-in.
    fn unknown(&mut self, name: &Ident, builtins_too: bool) {
        let items: Vec<&str> = self.items.keys().map(String::as_str).collect();
        let functions: Vec<&str> = if builtins_too {
            builtins::BUILTINS.iter().map(|b| b.name).collect()
        } else {
            Vec::new()
        };
        let what = if builtins_too {
            "template or function"
        } else {
            "template"
        };
        let mut d = Diagnostic::error(name.span, format!("unknown {what} `{}`", name.node));
        if let Some(c) = crate::ast::did_you_mean_preferring(&name.node, &items, &functions) {
            d = d.with_help(format!("did you mean `{c}`?"));
        } else {
            d = d.with_help("define it with <template name=\"...\" params=\"...\"> in one of the program's files");
        }
        self.diags.push(d);
    }

    fn edge(&mut self, callee: &Ident) {
        self.item_calls.push((callee.node.clone(), callee.span));
    }

    /// Matches arguments to parameters: positional first, then by name.
    fn bind_args(
        &mut self,
        callee: &Ident,
        noun: &str,
        params: &[Slot],
        args: &[ArgInfo],
        span: Span,
        def: Option<Span>,
    ) {
        let with_def = |d: Diagnostic| match def {
            Some(s) => d.with_secondary(s, "defined here"),
            None => d,
        };
        if args.iter().any(|a| a.broken) || !self.args_in_order(args) {
            return;
        }
        let mut filled: Vec<Option<Span>> = vec![None; params.len()];
        let positional = args.iter().filter(|a| a.name.is_none()).count();
        // A misnamed argument was probably meant for the missing parameter.
        let mut misnamed = false;
        for (i, arg) in args.iter().enumerate() {
            let slot = match &arg.name {
                None if i < params.len() => i,
                None => {
                    if i == params.len() {
                        let d = Diagnostic::error(
                            arg.span,
                            format!(
                                "{noun} `{}` takes {} but {} given",
                                callee.node,
                                count(params.len()),
                                were(positional)
                            ),
                        )
                        .with_label("unexpected argument")
                        .with_help(signature_help(&callee.node, params));
                        self.diags.push(with_def(d));
                    }
                    continue;
                }
                Some(n) => match params.iter().position(|p| p.name == n.node) {
                    Some(p) => p,
                    None => {
                        let names: Vec<&str> = params.iter().map(|p| p.name).collect();
                        let mut d = Diagnostic::error(
                            n.span,
                            format!(
                                "{noun} `{}` has no parameter named `{}`",
                                callee.node, n.node
                            ),
                        );
                        d = match crate::ast::did_you_mean(&n.node, &names) {
                            Some(c) => d.with_help(format!("did you mean `{c}`?")),
                            None => d.with_help(signature_help(&callee.node, params)),
                        };
                        self.diags.push(with_def(d));
                        misnamed = true;
                        continue;
                    }
                },
            };
            if let Some(prev) = filled[slot] {
                let how = if slot < positional {
                    "by position and by name"
                } else {
                    "twice"
                };
                self.diags.push(
                    Diagnostic::error(
                        arg.span,
                        format!("argument `{}` is given {how}", params[slot].name),
                    )
                    .with_secondary(prev, "first given here"),
                );
                continue;
            }
            filled[slot] = Some(arg.span);
            if let Some(want) = &params[slot].ty {
                self.check_arg_type(arg, params[slot].name, want);
            }
        }
        let missing: Vec<&str> = params
            .iter()
            .zip(&filled)
            .filter(|(p, f)| f.is_none() && !p.optional)
            .map(|(p, _)| p.name)
            .collect();
        if !missing.is_empty() && !misnamed {
            let list = missing
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ");
            let msg = if args.len() < params.iter().filter(|p| !p.optional).count() {
                format!(
                    "{noun} `{}` takes {} but {} given",
                    callee.node,
                    count(params.len()),
                    were(args.len())
                )
            } else {
                format!("{noun} `{}` is missing the argument {list}", callee.node)
            };
            let d = Diagnostic::error(span, msg)
                .with_label(format!("missing {list}"))
                .with_help(signature_help(&callee.node, params));
            self.diags.push(with_def(d));
        }
    }

    /// Positional arguments first, each name once.
    fn args_in_order(&mut self, args: &[ArgInfo]) -> bool {
        let mut named: Vec<&Ident> = Vec::new();
        for a in args {
            match &a.name {
                None if !named.is_empty() => {
                    self.diags.push(
                        Diagnostic::error(
                            a.span,
                            "a positional argument cannot follow a named one",
                        )
                        .with_help("put positional arguments first, or name this one too"),
                    );
                    return false;
                }
                None => {}
                Some(n) => {
                    if let Some(prev) = named.iter().find(|p| p.node == n.node) {
                        self.diags.push(
                            Diagnostic::error(
                                n.span,
                                format!("named argument `{}` is given twice", n.node),
                            )
                            .with_secondary(prev.span, "first given here"),
                        );
                        return false;
                    }
                    named.push(n);
                }
            }
        }
        true
    }

    fn check_arg_type(&mut self, arg: &ArgInfo, param: &str, want: &Want) {
        let ty = match &arg.text {
            // `<arg>` text is read as the parameter's type when it can be.
            Some(text) => want.read_text(text.trim()).unwrap_or(Type::String),
            None => arg.ty.clone(),
        };
        if want.accepts(&ty) {
            return;
        }
        let found = match &arg.text {
            Some(t) => format!("the text `{}`", t.trim()),
            None => format!("a `{ty}`"),
        };
        self.diags.push(
            Diagnostic::error(
                arg.span,
                format!(
                    "parameter `{param}` expects {}, but the argument is {found}",
                    want.describe()
                ),
            )
            .with_label(format!("expected {}", want.describe())),
        );
    }
}

/// Whether a declared input of an item's own task passes nothing: in a template's
/// task only `params` are passed in, so a plain input there gives a value only when a
/// parameter of its name does. (A named task's plain inputs are its parameters.)
fn is_documentation(input: &crate::ast::Input, outer: &Scope) -> bool {
    crate::ast::is_parameter(input)
        && matches!(outer.owner, super::scope::Owner::Template(_))
        && outer.lookup(&input.name.node).is_none()
}

/// The type `<arg>` text has when read as `want`, if it reads as one.
fn text_as(text: &str, want: &Type) -> Option<Type> {
    match want {
        Type::Number => text.parse::<f64>().ok().map(|_| Type::Number),
        Type::Boolean => matches!(text, "true" | "false").then_some(Type::Boolean),
        Type::Null => (text == "null").then_some(Type::Null),
        // JSON that is a value of the type reads as one; other text stays text.
        Type::Object | Type::Array(_) | Type::Record(_) => {
            serde_json::from_str::<serde_json::Value>(text)
                .ok()
                .filter(|v| want.admits(v))
                .map(|_| want.clone())
        }
        // A word is one string: it fits the union only if it is one of its strings.
        Type::Literals(_) => Some(Type::Literals(std::sync::Arc::new(vec![text.to_string()]))),
        _ => None,
    }
}

fn were(n: usize) -> String {
    match n {
        1 => "1 was".into(),
        n => format!("{n} were"),
    }
}

fn count(n: usize) -> String {
    match n {
        1 => "1 argument".into(),
        n => format!("{n} arguments"),
    }
}

fn signature_help(name: &str, params: &[Slot]) -> String {
    let ps: Vec<String> = params
        .iter()
        .map(|p| {
            let (n, q) = (p.name, if p.optional { "?" } else { "" });
            match &p.ty {
                Some(t) => format!("{n}{q}: {t}"),
                None => format!("{n}{q}"),
            }
        })
        .collect();
    format!("the signature is {name}({})", ps.join(", "))
}
