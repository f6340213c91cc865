//! Reading one command's options and operands, with what [`super::commands`] says of
//! them, up to the word in question: the verdict on a hole there, or whether the
//! command reads code from its input.

use super::commands::{
    code_var, joined_option, long_option, lookup, Operands, Spec, DATA, STDIN_FILES,
};
use super::verdict::{
    assignment, command_position, data, decided, option_name, shown, Arg, Found, Verdict,
};

pub(super) enum Scanned {
    /// The command runs another, whose name is the word `start`.
    Inner {
        start: usize,
        feeds: bool,
        replace: bool,
    },
    Found(Found),
}

/// What a command has read before the word in question.
#[derive(Default)]
struct State<'a> {
    operands: usize,
    first: Option<&'a str>,
    /// The first operand is all literal (a shell's code, to read).
    first_whole: bool,
    /// `--` ended the options.
    dashdash: bool,
    /// A `--` word came, wherever: a value after it is no option (the rule the
    /// README states, which a script's own argument parser follows too).
    dashes: bool,
    /// A code option came (`-c`, `-e`): the program is given.
    code: bool,
    /// The option after which every argument is code.
    rest: Option<String>,
    /// An option that puts the input into the command's arguments (`xargs -I`).
    replace: bool,
    /// Shell modes: `-c`, `-s`.
    c: bool,
    s: bool,
    /// Options seen (for `declare`).
    options: bool,
    /// An option's code is read from the input (`-f /dev/stdin`).
    stdin: bool,
}

/// The option the word being read is an argument of: its name, whether it is code,
/// and how many more words it takes after this one.
struct Pending {
    name: String,
    code: bool,
    more: u8,
}

/// Reads the command `name` (its word at `cmd`) up to the word `at`.
pub(super) fn scan(
    mut spec: &'static Spec,
    mut name: String,
    args: &[Arg],
    cmd: usize,
    at: usize,
) -> Scanned {
    if matches!(spec.operands, Operands::Find) {
        return find(args, cmd, at);
    }
    let mut st = State::default();
    let mut pending: Option<Pending> = None;
    for (j, a) in args.iter().enumerate().take(at).skip(cmd + 1) {
        st.dashes |= a.whole && a.text == "--";
        if let Some(p) = pending.take() {
            if spec.opts.module == Some(p.name.as_str()) && a.whole && !a.splits {
                // `python -m pip ...` runs the module `pip` with what follows.
                if lookup(a.text).is_some() {
                    return Scanned::Inner {
                        start: j,
                        feeds: false,
                        replace: false,
                    };
                }
            }
            // `awk -f /dev/stdin`: the program comes from the input.
            st.stdin |= p.code && STDIN_FILES.contains(&a.text);
            if p.more > 0 {
                pending = Some(Pending {
                    more: p.more - 1,
                    ..p
                });
            }
            continue;
        }
        if st.rest.is_some() {
            continue;
        }
        if optionish(spec, &st, a) {
            if a.splits || !a.whole {
                if positional(spec) {
                    return unknown(args, at, a, &name);
                }
                continue;
            }
            if a.text == "--" {
                st.dashdash = true;
                continue;
            }
            pending = option(spec, &mut st, a.text);
            continue;
        }
        if a.splits && positional(spec) {
            return unknown(args, at, a, &name);
        }
        let n = st.operands;
        st.operands += 1;
        if n == 0 {
            st.first = Some(a.text);
            st.first_whole = a.whole;
        }
        match &spec.operands {
            Operands::Command { before, .. } if n == *before => {
                return Scanned::Inner {
                    start: j,
                    feeds: spec.feeds,
                    replace: st.replace,
                };
            }
            Operands::Sub(_) if n == 0 && !a.whole => return unknown(args, at, a, &name),
            Operands::Sub(subs) if n == 0 => {
                let sub = subs.iter().find(|(s, _)| a.whole && *s == a.text);
                name = format!("{name} {}", a.text);
                spec = sub.map_or(&DATA, |(_, s)| *s);
                st = State::default();
            }
            _ => {}
        }
    }
    let reached = Reached {
        spec,
        name,
        st,
        pending,
    };
    Scanned::Found(match args.get(at) {
        Some(a) => Found::Hole(reached.hole(a)),
        None => Found::Stdin(reached.stdin()),
    })
}

/// Whether the word may be an option of the command here.
fn optionish(spec: &Spec, st: &State, a: &Arg) -> bool {
    if st.dashdash {
        return false;
    }
    let allowed = match spec.operands {
        // GNU tools take options among their operands.
        Operands::Data | Operands::Plain | Operands::Code(_) => true,
        Operands::Command { before, .. } => st.operands <= before,
        Operands::Remote(_) => st.operands <= 1,
        _ => st.operands == 0,
    };
    let shell = matches!(spec.operands, Operands::Shell);
    allowed && a.text.len() > 1 && (a.text.starts_with('-') || (shell && a.text.starts_with('+')))
}

/// Commands whose operands mean different things by their position: a word the
/// shell may split leaves the positions unknown.
fn positional(spec: &Spec) -> bool {
    !matches!(
        spec.operands,
        Operands::Data | Operands::Plain | Operands::Code(_) | Operands::Declare
    )
}

fn unknown(args: &[Arg], at: usize, a: &Arg, name: &str) -> Scanned {
    let why = format!(
        "after `{}`, which the shell may split or expand into several words, so the compiler \
         cannot tell what `{name}` reads there",
        shown(a)
    );
    Scanned::Found(decided(args, at, Verdict::Code(why), name))
}

/// Reads one whole option word; the option whose argument comes next, if any.
fn option(spec: &Spec, st: &mut State, text: &str) -> Option<Pending> {
    let o = &spec.opts;
    st.options = true;
    let takes = |opt: &str, st: &mut State| -> Option<(bool, u8)> {
        if o.replace.contains(&opt) {
            st.replace = true;
        }
        if o.rest.contains(&opt) {
            st.rest = Some(opt.to_string());
        }
        if o.code.contains(&opt) {
            st.code = true;
            Some((true, 0))
        } else if o.loads.contains(&opt) {
            Some((true, 0))
        } else if o.arg.contains(&opt) {
            Some((false, 0))
        } else if o.two.contains(&opt) {
            Some((false, 1))
        } else {
            None
        }
    };
    // A long option, or one the table names whole (`-TT`, `-cmd`).
    let (head, value) = match text.split_once('=') {
        Some((h, _)) => (h, true),
        None => (text, false),
    };
    let named = |h: &str| o.code.contains(&h) || o.loads.contains(&h) || o.arg.contains(&h);
    if head.starts_with("--") || named(head) {
        let head = long_option(o, head)?;
        let (code, more) = takes(head, st)?;
        return (!value).then(|| Pending {
            name: head.to_string(),
            code,
            more,
        });
    }
    // A cluster of letters: `-euo pipefail`, `-lne CODE`.
    let letters = &text[1..];
    let sign = &text[..1];
    for (k, c) in letters.char_indices() {
        let opt = format!("{sign}{c}");
        if matches!(spec.operands, Operands::Shell) && sign == "-" {
            st.c |= c == 'c';
            st.s |= c == 's';
        }
        if let Some((code, more)) = takes(&opt, st) {
            let attached = k + c.len_utf8() < letters.len();
            return (!attached).then_some(Pending {
                name: opt,
                code,
                more,
            });
        }
    }
    None
}

/// A command read up to the word in question.
struct Reached<'a> {
    spec: &'static Spec,
    name: String,
    st: State<'a>,
    pending: Option<Pending>,
}

impl Reached<'_> {
    fn hole(&self, a: &Arg) -> Verdict {
        let (st, name) = (&self.st, &self.name);
        if let Some(p) = &self.pending {
            return if p.code {
                Verdict::Code(format!(
                    "in the argument of `{}`, which `{name}` reads as code",
                    p.name
                ))
            } else {
                Verdict::Data { option: false }
            };
        }
        if let Some(rest) = &st.rest {
            return Verdict::Code(format!(
                "after `{rest}`, which makes `{name}` run its arguments as code"
            ));
        }
        let dashes = !a.text.is_empty() && a.text.chars().all(|c| c == '-');
        if dashes && !st.dashdash {
            return option_name();
        }
        if optionish(self.spec, st, a) {
            if let Some(v) = self.in_option(a.text) {
                return v;
            }
        }
        if self.spec.plus && a.text.starts_with('+') {
            return Verdict::Code(format!("in a `+` argument, which `{name}` runs as code"));
        }
        let n = st.operands;
        match &self.spec.operands {
            Operands::Data | Operands::Find => data(a, st.dashdash || st.dashes),
            Operands::Plain => Verdict::Data { option: false },
            Operands::Format if n == 0 => data(a, st.dashdash || st.dashes),
            Operands::Format => Verdict::Data { option: false },
            Operands::Program { text } if n == 0 && !st.code => Verdict::Code(if *text {
                format!("as the code `{name}` runs")
            } else {
                format!("as the program file `{name}` runs")
            }),
            Operands::Program { .. } => data(a, st.dashdash || st.dashes),
            Operands::Shell if n == 0 && !st.s => Verdict::Code(if st.c {
                format!("in the code `{name} -c` runs")
            } else {
                format!("as the script `{name}` runs")
            }),
            // `sh -c CODE name args`: what CODE does with `$0`, `$1`, ...
            Operands::Shell if st.c => match st.first.filter(|_| st.first_whole) {
                Some(code) => super::positional::verdict(code, n - 1, name),
                None => Verdict::Code(format!(
                    "as an argument of the code `{name} -c` runs, which is not written out, so \
                     the compiler cannot tell what it does with it"
                )),
            },
            Operands::Shell => data(a, st.dashdash || st.dashes),
            Operands::Command { before, .. } if n < *before => data(a, st.dashdash || st.dashes),
            Operands::Command { .. } => command_position(a),
            Operands::Code(why) => {
                Verdict::Code(format!("as an argument of `{name}`, which {why}"))
            }
            Operands::Remote(_) if n == 0 => data(a, st.dashdash || st.dashes),
            Operands::Remote(whose) => Verdict::Code((*whose).to_string()),
            Operands::Sub(_) => Verdict::Name(format!(
                "as the subcommand of `{name}`: the value would choose it"
            )),
            // `x=(); declare x='($(cmd))'`: bash reads a value that begins with `(` as
            // the elements of an array, and runs what they expand, when the variable is
            // one; `export` and `readonly` take it as text.
            Operands::Declare
                if a.text.ends_with('=')
                    && assignment(a).is_some()
                    && matches!(name.as_str(), "declare" | "typeset" | "local") =>
            {
                Verdict::Code(format!(
                    "as the start of a value `{name}` assigns, which bash evaluates as an \
                     array's elements (running what they expand) when the variable is an \
                     array: assign it first (`NAME={{{{...}}}}`), then `{name} NAME`"
                ))
            }
            Operands::Declare => match assignment(a) {
                Some(var) if !st.options && !code_var(var) => Verdict::Data { option: false },
                _ => Verdict::Code(format!(
                    "as an argument of `{name}`, which may evaluate it (an array subscript, an \
                     integer, a variable that runs code)"
                )),
            },
        }
    }

    /// A hole inside an option word (`-e{{x}}`, `--eval={{x}}`, `-{{x}}`): the
    /// verdict, or `None` when the word is no option here.
    fn in_option(&self, text: &str) -> Option<Verdict> {
        let o = &self.spec.opts;
        let name = &self.name;
        let code_of = |opt: &str| {
            Verdict::Code(format!(
                "in the argument of `{opt}`, which `{name}` reads as code"
            ))
        };
        if text.starts_with("--") {
            return Some(match text.split_once('=').map(|(h, _)| long_option(o, h)) {
                Some(Some(head)) if o.code.contains(&head) || o.loads.contains(&head) => {
                    code_of(head)
                }
                Some(_) => Verdict::Data { option: false },
                None => option_name(),
            });
        }
        if let Some(opt) = joined_option(o, text) {
            return Some(code_of(opt));
        }
        for c in text[1..].chars() {
            let opt = format!("-{c}");
            let opt = opt.as_str();
            if o.code.contains(&opt) || o.loads.contains(&opt) || o.rest.contains(&opt) {
                return Some(code_of(opt));
            }
            if o.arg.contains(&opt) || o.two.contains(&opt) {
                return Some(Verdict::Data { option: false });
            }
        }
        // Flags the table does not know: whether one takes the value as its argument
        // is for the operands' rule to say.
        None
    }

    /// Whether the command reads code from its input.
    fn stdin(&self) -> Option<String> {
        let st = &self.st;
        let from_input = |first: Option<&str>| first.is_some_and(|f| STDIN_FILES.contains(&f));
        let code = match &self.spec.operands {
            Operands::Shell => !st.c && (st.operands == 0 || st.s || from_input(st.first)),
            Operands::Program { text: false } => {
                !st.code && (st.operands == 0 || from_input(st.first))
            }
            Operands::Command { before, shell } => st.operands <= *before && *shell,
            Operands::Remote(_) => !st.code && st.operands <= 1,
            _ => self.spec.stdin && !st.code,
        };
        let shell = st.rest.is_some() && st.operands == 0;
        (code || shell || st.stdin).then(|| self.name.clone())
    }
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
