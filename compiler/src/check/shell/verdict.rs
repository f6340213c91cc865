//! The words of a command as the checker knows them ([`Arg`]), what reads a hole among
//! them ([`Verdict`]), and the small judgements every command reader shares: where a
//! command's name stands, an assignment, an operand that is data.

use super::commands::code_var;

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
pub(super) enum Verdict {
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

/// What following a command's words to the word in question found: the verdict on a
/// hole there, or, past the end, whether the command reads code from its input.
pub(super) enum Found {
    Hole(Verdict),
    Stdin(Option<String>),
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
