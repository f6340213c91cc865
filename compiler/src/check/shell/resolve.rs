//! What the command a hole stands in makes of the hole's word: data, or code that a
//! shell or interpreter runs (`sh -c {{x}}`), or the choice of a program or an
//! option (`{{x}} arg`, `-{{x}}`). Also whether a command reads code from its input,
//! so that what is piped into it can be refused.
//!
//! A command is read as its words: assignments, its name, its options (with the
//! arguments [`super::commands`] says they take), its operands. A command that runs
//! another (`sudo`, `env`, `xargs`, `find -exec`) is followed into that one, in a
//! loop, so nesting costs no stack.

use super::commands::{lookup, Operands, Spec};
use super::scan::{scan, Scanned};
use super::verdict::{assignment, command_position, data, decided, shown, Arg, Found, Verdict};
use std::collections::HashSet;

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
