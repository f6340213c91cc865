//! The pieces a command is built of: its words, as far as their text is known, and
//! the command being read.

use super::verdict::Arg;

/// Words (and holes) one simple command may have before the compiler stops following
/// it: every hole looks back over its command's words, so this bounds the work.
pub(crate) const MAX_WORDS: usize = 4096;

/// The first of the holes kept in `slot` and `hole`: only the first hole refused is
/// reported, and all the holes of one list are refused for one reason, so the first
/// is all a list needs to keep.
pub(super) fn keep(slot: &mut Option<usize>, hole: Option<usize>) {
    if let Some(h) = hole {
        *slot = Some(slot.map_or(h, |s| s.min(h)));
    }
}

/// One word: its text once quotes are removed, for as long as all of it is literal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Word {
    /// The literal text, up to the first hole or expansion.
    pub(super) text: String,
    /// Whether the whole word is literal (`text` is all of it).
    pub(super) whole: bool,
    /// An unquoted expansion, glob or brace expansion: the shell may make it several
    /// words, or none.
    pub(super) splits: bool,
    /// An unquoted `{` (a brace expansion may make a later part a word of its own).
    pub(super) brace: bool,
    /// An unquoted `[` (a `]` after it makes a glob).
    pub(super) bracket: bool,
    /// Some of it was quoted (`"if"` is no reserved word, `"2">x` no descriptor).
    pub(super) quoted: bool,
    /// The first hole in it.
    pub(super) holes: Option<usize>,
}

impl Word {
    pub(super) fn new() -> Word {
        Word {
            text: String::new(),
            whole: true,
            splits: false,
            brace: false,
            bracket: false,
            quoted: false,
            holes: None,
        }
    }

    pub(super) fn push(&mut self, c: char, quoted: bool) {
        self.quoted |= quoted;
        if !quoted {
            match c {
                '*' | '?' => self.splits = true,
                '[' => self.bracket = true,
                ']' if self.bracket => self.splits = true,
                '{' => self.brace = true,
                ',' if self.brace => self.splits = true,
                '.' if self.brace && self.text.ends_with('.') => self.splits = true,
                _ => {}
            }
        }
        if self.whole {
            self.text.push(c);
        }
    }

    /// A part whose text is not known (a hole, an expansion).
    pub(super) fn opaque(&mut self, splits: bool) {
        self.whole = false;
        self.splits |= splits;
    }

    pub(super) fn arg(&self) -> Arg<'_> {
        Arg {
            text: &self.text,
            whole: self.whole,
            splits: self.splits,
            brace: self.brace,
        }
    }
}

/// What a redirection's target word is to its command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Target {
    /// `<`, `<>`, `<<<`: the command's standard input.
    Input,
    /// Anything else (`>`, `2>&1`).
    Other,
}

/// One simple command being read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Command {
    /// Its words, redirections and reserved words left out.
    pub(super) words: Vec<Word>,
    /// The word being read.
    pub(super) word: Option<Word>,
    /// The word being read, or the next one, is a redirection's target.
    pub(super) target: Option<Target>,
    /// Holes in its standard input (`< {{f}}`, `<<< {{v}}`).
    pub(super) input: Option<usize>,
    /// `name()`: the `)` to come closes no subshell.
    pub(super) function: bool,
    /// It has more than [`MAX_WORDS`] words.
    pub(super) long: bool,
    /// Holes in it.
    pub(super) holes: usize,
}

impl Command {
    pub(super) fn is_empty(&self) -> bool {
        self.words.is_empty() && self.word.is_none() && self.target.is_none()
    }

    /// The command's words so far, the one being read last.
    pub(super) fn args(&self) -> Vec<Arg<'_>> {
        self.words.iter().chain(&self.word).map(Word::arg).collect()
    }
}
