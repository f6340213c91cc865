//! What the command a hole stands in makes of the hole's word: data, or code that a
//! shell or interpreter runs (`sh -c {{x}}`), or the choice of a program or an
//! option (`{{x}} arg`, `-{{x}}`). Also whether a command reads code from its input,
//! so that what is piped into it can be refused.
//!
//! A command is read as its words: assignments, its name, its options (with the
//! arguments [`super::commands`] says they take), its operands. A command that runs
//! another (`sudo`, `env`, `xargs`, `find -exec`) is followed into that one, in a
//! loop, so nesting costs no stack.

use super::commands::{code_var, lookup, Operands, Spec};
use super::scan::{scan, Scanned};
use std::collections::HashSet;

/// A word of a command, as far as it is known.
#[derive(Clone, Copy, Debug)]
pub(super) struct Arg<'a> {
    /// The literal text: all of it when `whole`, else what comes before the first
    /// part that is not literal (for the word holding a hole: before the hole).
    pub text: &'a str,
    pub whole: bool,
    /// The shell may make it several words, or none (an unquoted expansion or glob).
    pub splits: bool,
    /// It has an unquoted `{`: a brace expansion may make a later part a word.
    pub brace: bool,
}

/// What reads a hole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Data; `option`: a value starting with `-` would be read as an option.
    Data { option: bool },
    /// Code: where it stands, as a phrase ("in the code `sh -c` runs").
    Code(String),
    /// The value would choose the program or a subcommand ("as the name of the command").
    Name(String),
    /// The value would choose an option (`-{{x}}`).
    Option(String),
}

pub(super) fn option_name() -> Verdict {
    Verdict::Option("as part of an option's name: the value would choose the option".into())
}

/// What reads the last word of `args`, which holds a hole; `defined`: the functions
/// and aliases the script defines.
pub(super) fn hole(args: &[Arg], defined: &HashSet<String>) -> Verdict {
    match walk(args, args.len().saturating_sub(1), defined) {
        Found::Hole(v) => v,
        Found::Stdin(_) => Verdict::Data { option: true },
    }
}

/// The command (its name) when the command made of `args` reads code from its input.
pub(super) fn stdin(args: &[Arg], defined: &HashSet<String>) -> Option<String> {
    match walk(args, args.len(), defined) {
        Found::Stdin(who) => who,
        Found::Hole(_) => None,
    }
}

pub(super) enum Found {
    Hole(Verdict),
    Stdin(Option<String>),
}

/// Follows the commands of `args` to the word `at` (a hole's), or past the end
/// (`at == args.len()`: the input).
fn walk(args: &[Arg], at: usize, defined: &HashSet<String>) -> Found {
    let mut start = 0;
    // A command whose input becomes arguments of the command at `start` (xargs).
    let mut fed: Option<bool> = None;
    loop {
        // Assignments, and what only groups the command (`sudo -- { ...; }` is not
        // a command, but `! cmd` after a wrapper's operands reads as one).
        while start < at
            && (assignment(&args[start]).is_some()
                || (args[start].whole && matches!(args[start].text, "{" | "!")))
        {
            start += 1;
        }
        if start == at {
            return match args.get(at) {
                Some(a) => Found::Hole(command_position(a)),
                None => Found::Stdin(None),
            };
        }
        let word = &args[start];
        let shown = shown(word);
        if !word.whole || word.splits {
            let why = format!(
                "as an argument of `{shown}`, a command whose name is not written out, so the \
                 compiler cannot tell whether it runs its arguments"
            );
            return decided(args, at, Verdict::Code(why), &shown);
        }
        if defined.contains(word.text) {
            let why = format!(
                "as an argument of `{shown}`, a function or alias this script defines, whose \
                 body the compiler does not follow"
            );
            return decided(args, at, Verdict::Code(why), &shown);
        }
        let spec = lookup(word.text);
        let name = word
            .text
            .rsplit('/')
            .next()
            .unwrap_or(word.text)
            .to_string();
        if let (Some(replace), true) = (fed, at == args.len()) {
            // What xargs reads becomes more arguments of this command, or replaces a
            // placeholder in any of them.
            let mut more: Vec<Arg> = args[start..].to_vec();
            more.push(Arg {
                text: "",
                whole: false,
                splits: false,
                brace: false,
            });
            let code = !matches!(hole(&more, defined), Verdict::Data { .. })
                || (replace && spec.is_some_and(runs_code));
            return Found::Stdin(code.then_some(name));
        }
        let Some(spec) = spec else {
            return plain(args, start, at);
        };
        match scan(spec, name, args, start, at) {
            Scanned::Inner {
                start: inner,
                feeds,
                replace,
            } => {
                start = inner;
                fed = feeds.then_some(replace);
            }
            Scanned::Found(f) => return f,
        }
    }
}

/// A verdict reached before the word `at`: for the input, whether it is code.
pub(super) fn decided(args: &[Arg], at: usize, verdict: Verdict, who: &str) -> Found {
    if at < args.len() {
        Found::Hole(verdict)
    } else {
        let code = !matches!(verdict, Verdict::Data { .. });
        Found::Stdin(code.then(|| who.to_string()))
    }
}

/// A word as the message shows it.
pub(super) fn shown(a: &Arg) -> String {
    if a.whole {
        a.text.to_string()
    } else {
        format!("{}…", a.text)
    }
}

/// `NAME=` or `NAME+=` at the start of a word: the name.
pub(super) fn assignment<'a>(a: &Arg<'a>) -> Option<&'a str> {
    let end = a.text.find('=')?;
    let name = a.text[..end].strip_suffix('+').unwrap_or(&a.text[..end]);
    let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(name)
}

/// A hole in the word where a command's name stands.
pub(super) fn command_position(a: &Arg) -> Verdict {
    if let Some(name) = assignment(a) {
        return if code_var(name) {
            Verdict::Code(format!(
                "in the value of `{name}`, a variable that makes programs run or load code"
            ))
        } else {
            Verdict::Data { option: false }
        };
    }
    let subscript = a.text.split_once('[').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    });
    if subscript {
        return Verdict::Code(
            "in an array subscript, which bash evaluates as arithmetic (where `a[$(cmd)]` runs cmd)"
                .into(),
        );
    }
    Verdict::Name("as the name of the command to run: the value would choose the program".into())
}

/// An operand that is data: a value leading the word may be an option, unless `--`
/// ended the options; after nothing but dashes, the value would choose the option.
pub(super) fn data(a: &Arg, dashdash: bool) -> Verdict {
    if a.brace || a.text.is_empty() {
        return Verdict::Data { option: !dashdash };
    }
    if a.text.chars().all(|c| c == '-') && !dashdash {
        return option_name();
    }
    Verdict::Data { option: false }
}

/// A command the table does not know: its operands are data.
fn plain(args: &[Arg], cmd: usize, at: usize) -> Found {
    match args.get(at) {
        Some(a) => {
            let dashdash = args[cmd + 1..at].iter().any(|w| w.whole && w.text == "--");
            Found::Hole(data(a, dashdash))
        }
        None => Found::Stdin(None),
    }
}

/// Whether the command runs code it is given as arguments (what `xargs -I` puts in).
pub(super) fn runs_code(spec: &Spec) -> bool {
    matches!(
        spec.operands,
        Operands::Shell | Operands::Program { .. } | Operands::Code(_) | Operands::Remote(_)
    )
}

/// `find`: its expression, in which `-exec`, `-execdir`, `-ok` and `-okdir` start a
/// command that ends at a `;` or `+` word.
pub(super) fn find(args: &[Arg], cmd: usize, at: usize) -> Scanned {
    let mut j = cmd + 1;
    while j < at {
        let a = &args[j];
        if a.whole && matches!(a.text, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let end = (j + 1..at).find(|&k| {
                args[k].whole
                    && (args[k].text == ";"
                        || (args[k].text == "+" && args[k - 1].whole && args[k - 1].text == "{}"))
            });
            match end {
                Some(k) => j = k,
                None => {
                    return Scanned::Inner {
                        start: j + 1,
                        feeds: false,
                        replace: false,
                    }
                }
            }
        }
        j += 1;
    }
    Scanned::Found(match args.get(at) {
        Some(a) => Found::Hole(data(a, false)),
        None => Found::Stdin(None),
    })
}
