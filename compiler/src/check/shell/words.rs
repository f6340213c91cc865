//! The words and simple commands of a script command, as far as the compiler follows
//! them to tell what reads each hole: the lexer (`super`) feeds it the characters it
//! reads at the top level (outside `$(...)` and the like), and this layer groups them
//! into words, commands, pipelines, groups and process substitutions; `resolve` then
//! says what the command a hole stands in makes of its word.
//!
//! Some holes are refused only later: a hole whose output is piped into `sh` (or a
//! command's `<` input that is its script) is found out when that command ends.

use super::resolve;
use super::verdict::Verdict;
use super::word::{keep, Command, Target, Word, MAX_WORDS};
use std::collections::HashSet;

/// Groups and substitutions that may nest before the compiler stops following them:
/// a hole looks out through every one it is in.
pub(crate) const MAX_NESTING: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Top,
    /// `( ... )`
    Subshell,
    /// `{ ...; }`
    Brace,
    /// `<( ... )`: a file the outer command reads.
    ProcIn,
    /// `>( ... )`: a file the outer command writes, this one's input.
    ProcOut,
    /// `(( ... ))`, with the depth of parentheses inside and whether one `)` of the
    /// closing two came.
    Arith {
        depth: u32,
        closing: bool,
    },
}

/// A list of commands: the whole text, or a group or substitution inside it. Each
/// list of holes keeps its first (see [`keep`]).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Level {
    kind: Kind,
    command: Command,
    /// Holes of the earlier commands of the current pipeline: what they print, the
    /// current command reads.
    pipeline: Option<usize>,
    /// Holes of the current command.
    stage: Option<usize>,
    /// Every hole of this level: what a group prints, the next command of the outer
    /// pipeline reads.
    all: Option<usize>,
}

impl Level {
    fn new(kind: Kind) -> Level {
        Level {
            kind,
            command: Command::default(),
            pipeline: None,
            stage: None,
            all: None,
        }
    }
}

/// Operators, longest first: the characters of one run are read greedily.
const OPERATORS: &[&str] = &[
    ";;&", "&>>", "<<<", ";;", ";&", "&&", "&>", "||", "|&", "<<", "<>", "<&", "<(", ">>", ">&",
    ">|", ">(", "((", "))", ";", "&", "|", "<", ">", "(", ")", "\n",
];

/// The first hole refused once what reads it is known, and where it stands.
pub(super) type Late = Option<(usize, String)>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Words {
    /// Open levels, innermost last; the first is the whole text.
    levels: Vec<Level>,
    /// Operator characters not read yet.
    ops: String,
    pub late: Late,
    /// Functions and aliases the command defines: what they do with their arguments
    /// is for their bodies to say, which the compiler does not follow.
    defined: HashSet<String>,
    /// Groups and substitutions nested deeper than [`MAX_NESTING`] were opened.
    deep: bool,
    /// An alias whose name is not written out was defined: any later command may be one.
    aliased: bool,
}

impl Default for Words {
    fn default() -> Self {
        Words {
            levels: vec![Level::new(Kind::Top)],
            ops: String::new(),
            late: None,
            defined: HashSet::new(),
            deep: false,
            aliased: false,
        }
    }
}

impl Words {
    fn level(&mut self) -> &mut Level {
        if self.levels.is_empty() {
            self.levels.push(Level::new(Kind::Top));
        }
        let last = self.levels.len() - 1;
        &mut self.levels[last]
    }

    fn in_arith(&self) -> bool {
        matches!(self.levels.last(), Some(l) if matches!(l.kind, Kind::Arith { .. }))
    }

    /// The word being read, begun if need be.
    fn word(&mut self) -> Option<&mut Word> {
        self.flush();
        if self.in_arith() {
            return None;
        }
        Some(self.level().command.word.get_or_insert_with(Word::new))
    }

    /// A character of a word; `quoted`: inside quotes or after a backslash.
    pub(super) fn literal(&mut self, c: char, quoted: bool) {
        if let Some(w) = self.word() {
            w.push(c, quoted);
        }
    }

    /// A quote opens: a word begins, even if nothing is inside.
    pub(super) fn quote(&mut self) {
        if let Some(w) = self.word() {
            w.quoted = true;
        }
    }

    /// An expansion (`$x`, `$(...)`, a backtick) in the word; unquoted, it may split.
    pub(super) fn expansion(&mut self, quoted: bool) {
        if let Some(w) = self.word() {
            w.opaque(!quoted);
        }
    }

    /// A space or tab.
    pub(super) fn blank(&mut self) {
        self.flush();
        self.end_word();
    }

    /// One of `\n ; & | < > ( )` outside quotes.
    pub(super) fn operator(&mut self, c: char) {
        if self.ops.is_empty() && matches!(c, '<' | '>') {
            // `2>` and `{fd}>` name a descriptor, not a word of the command.
            let level = self.level();
            if let Some(w) = &level.command.word {
                let number = !w.text.is_empty() && w.text.bytes().all(|b| b.is_ascii_digit());
                let named = w.text.starts_with('{') && w.text.ends_with('}');
                if w.whole && !w.quoted && (number || named) {
                    level.command.word = None;
                }
            }
        }
        self.end_word();
        self.ops.push(c);
    }

    /// The end of the text: every open command ends.
    pub(super) fn finish(&mut self) {
        self.flush();
        while self.levels.len() > 1 {
            self.close();
        }
        self.end_command();
    }

    /// A hole at the top level or inside the author's quotes there: what reads it.
    pub(super) fn hole(&mut self, hole: usize) -> Verdict {
        self.flush();
        self.level();
        let Some(level) = self.levels.last_mut() else {
            return Verdict::Data { option: true };
        };
        keep(&mut level.all, Some(hole));
        keep(&mut level.stage, Some(hole));
        if matches!(level.kind, Kind::Arith { .. }) {
            return Verdict::Code(
                "inside `((...))`, which bash evaluates as arithmetic (where `a[$(cmd)]` runs cmd)"
                    .into(),
            );
        }
        let command = &mut level.command;
        let word = command.word.get_or_insert_with(Word::new);
        keep(&mut word.holes, Some(hole));
        command.holes += 1;
        let verdict = if self.deep {
            Verdict::Code(format!(
                "inside groups or substitutions nested more than {MAX_NESTING} deep, more than \
                 the compiler follows"
            ))
        } else if self.aliased {
            Verdict::Code(
                "after an `alias` whose name is not written out, which may make any command \
                 run its arguments as code"
                    .into(),
            )
        } else if command.long || command.holes > MAX_WORDS {
            Verdict::Code(format!(
                "in a command of more than {MAX_WORDS} words or holes, more than the compiler \
                 follows"
            ))
        } else if command.target.is_some() {
            // A file to read or write, or the input: data (a script read from the
            // input is found out when the command ends).
            Verdict::Data { option: false }
        } else {
            resolve::hole(&command.args(), &self.defined)
        };
        if let Some(w) = &mut level.command.word {
            w.opaque(false);
        }
        match verdict {
            Verdict::Data { .. } => match self.substitution() {
                Some(outer) => outer,
                None => verdict,
            },
            refused => refused,
        }
    }

    /// How the commands around the process substitutions this hole is in read them:
    /// the first that reads one as code.
    fn substitution(&self) -> Option<Verdict> {
        for (i, level) in self.levels.iter().enumerate().skip(1).rev() {
            if !matches!(level.kind, Kind::ProcIn | Kind::ProcOut) {
                continue;
            }
            let outer = &self.levels[i - 1].command;
            if outer.target.is_some() {
                continue;
            }
            let verdict = resolve::hole(&outer.args(), &self.defined);
            if let Verdict::Code(why) | Verdict::Name(why) | Verdict::Option(why) = verdict {
                return Some(Verdict::Code(format!(
                    "inside a process substitution, a file that stands {why}"
                )));
            }
        }
        None
    }

    fn flush(&mut self) {
        if self.ops.is_empty() {
            return;
        }
        let ops = std::mem::take(&mut self.ops);
        let mut rest = ops.as_str();
        while let Some(op) = OPERATORS.iter().find(|op| rest.starts_with(**op)) {
            rest = &rest[op.len()..];
            self.token(op);
        }
    }

    fn token(&mut self, op: &str) {
        if let Some(Level {
            kind: Kind::Arith { depth, closing },
            ..
        }) = self.levels.last_mut()
        {
            for c in op.chars() {
                match (c, *depth, *closing) {
                    ('(', ..) => *depth += 1,
                    (')', 0, true) => {
                        self.levels.pop();
                        return;
                    }
                    (')', 0, false) => *closing = true,
                    (')', ..) => *depth -= 1,
                    _ => {}
                }
            }
            return;
        }
        match op {
            ";" | ";;" | ";&" | ";;&" | "&" | "&&" | "||" | "\n" => self.separator(),
            "|" | "|&" => self.pipe(),
            "<" | "<>" | "<<<" => self.level().command.target = Some(Target::Input),
            ">" | ">>" | ">|" | "&>" | "&>>" | "<&" | ">&" => {
                self.level().command.target = Some(Target::Other)
            }
            // The heredoc's delimiter and body never reach this layer.
            "<<" => {}
            "<(" | ">(" => {
                let w = self.level().command.word.get_or_insert_with(Word::new);
                w.opaque(false);
                let kind = if op == "<(" {
                    Kind::ProcIn
                } else {
                    Kind::ProcOut
                };
                self.open(kind);
            }
            "((" if self.level().command.is_empty() => {
                self.open(Kind::Arith {
                    depth: 0,
                    closing: false,
                });
            }
            "((" => (0..2).for_each(|_| self.token("(")),
            "))" => (0..2).for_each(|_| self.token(")")),
            "(" => {
                let command = &mut self.level().command;
                if command.is_empty() {
                    self.open(Kind::Subshell);
                } else {
                    command.function = true;
                    if let Some(w) = command.word.as_ref().or(command.words.last()) {
                        let name = w.text.clone();
                        self.defined.insert(name);
                    }
                }
            }
            ")" => {
                let level = self.level();
                if level.command.function {
                    // `name()`: the body, a group, follows as a command of its own.
                    level.command.function = false;
                    self.separator();
                } else if matches!(level.kind, Kind::Top | Kind::Brace) {
                    // A `case` pattern's end.
                    self.separator();
                } else {
                    self.close();
                }
            }
            _ => {}
        }
    }

    /// The current word ends.
    fn end_word(&mut self) {
        if self.in_arith() {
            return;
        }
        let command = &mut self.level().command;
        let Some(word) = command.word.take() else {
            return;
        };
        if let Some(target) = command.target.take() {
            if target == Target::Input {
                keep(&mut command.input, word.holes);
            }
            return;
        }
        if command.words.is_empty() && word.whole && !word.quoted {
            match word.text.as_str() {
                "{" => {
                    self.open(Kind::Brace);
                    return;
                }
                "}" => {
                    if self.level().kind == Kind::Brace {
                        self.close();
                    }
                    return;
                }
                "!" | "if" | "then" | "else" | "elif" | "fi" | "do" | "done" | "while"
                | "until" | "esac" => return,
                _ => {}
            }
        }
        if command.words.len() >= MAX_WORDS {
            command.long = true;
        } else {
            command.words.push(word);
        }
    }

    fn separator(&mut self) {
        self.end_command();
        let level = self.level();
        level.pipeline = None;
        level.stage = None;
    }

    fn pipe(&mut self) {
        self.end_command();
        let level = self.level();
        let stage = level.stage.take();
        keep(&mut level.pipeline, stage);
    }

    /// A group or substitution opens, unless too many are open already.
    fn open(&mut self, kind: Kind) {
        if self.levels.len() >= MAX_NESTING {
            self.deep = true;
            return;
        }
        self.levels.push(Level::new(kind));
    }

    /// The innermost group or substitution closes; its holes join the outer command.
    fn close(&mut self) {
        self.end_command();
        if self.levels.len() < 2 {
            return;
        }
        let Some(inner) = self.levels.pop() else {
            return;
        };
        let outer = self.level();
        keep(&mut outer.stage, inner.all);
        keep(&mut outer.all, inner.all);
        if matches!(inner.kind, Kind::ProcIn | Kind::ProcOut) {
            let w = outer.command.word.get_or_insert_with(Word::new);
            keep(&mut w.holes, inner.all);
        }
    }

    /// Names that `function NAME` and `alias NAME=...` define.
    fn definitions(&mut self, words: &[Word]) {
        let Some(first) = words.first().filter(|w| w.whole) else {
            return;
        };
        match first.text.as_str() {
            "function" => self.defined.extend(words.get(1).map(|w| w.text.clone())),
            // `hash -p /bin/sh ls`: `ls` now runs the shell.
            "hash" if words.get(1).is_some_and(|w| w.text == "-p") => {
                self.defined.extend(words.get(3).map(|w| w.text.clone()));
            }
            "alias" => {
                for w in &words[1..] {
                    match w.text.split_once('=') {
                        Some((name, _)) if !name.is_empty() => {
                            self.defined.insert(name.into());
                        }
                        _ => self.aliased |= !w.whole,
                    }
                }
            }
            _ => {}
        }
    }

    /// The current command ends: if it reads code from its input, the holes that flow
    /// into that input are refused.
    fn end_command(&mut self) {
        self.end_word();
        if self.in_arith() {
            return;
        }
        let command = std::mem::take(&mut self.level().command);
        if command.words.is_empty() && command.input.is_none() {
            return;
        }
        self.definitions(&command.words);
        let Some(who) = resolve::stdin(&command.args(), &self.defined) else {
            return;
        };
        let mut piped = None;
        // What flows in: the earlier commands of this pipeline, and of each group
        // around it; through a `>(...)`, the command that writes into it.
        for i in (0..self.levels.len()).rev() {
            let level = &mut self.levels[i];
            keep(&mut piped, level.pipeline.take());
            match level.kind {
                Kind::Subshell | Kind::Brace => {}
                Kind::ProcOut if i > 0 => {
                    let outer = &mut self.levels[i - 1];
                    keep(&mut piped, outer.stage.take());
                }
                _ => break,
            }
        }
        // Each is refused once: the lists are emptied as they are refused.
        let refused = [
            (
                command.input,
                format!("in the input of `{who}`, which reads it as code"),
            ),
            (
                piped,
                format!("in what is piped into `{who}`, which reads its input as code"),
            ),
        ];
        for (hole, why) in refused {
            if let Some(h) = hole {
                if self.late.as_ref().is_none_or(|(first, _)| h < *first) {
                    self.late = Some((h, why));
                }
            }
        }
    }
}
