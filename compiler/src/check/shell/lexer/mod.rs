//! The lexer proper: it follows, character by character, what changes how the shell
//! reads a character (quotes, escapes, expansions, comments, heredocs), and hands what
//! it reads at the top level to the word layer.

use super::verdict::Verdict;
use super::words::Words;
use super::{Hole, Quote, Why};
use heredoc::{Delimiter, Heredoc};

mod heredoc;

/// A construct that changes how the characters inside it are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Frame {
    /// `"..."`
    Double,
    /// `'...'`
    Single,
    /// `$'...'` (bash): backslashes are escapes, so a value could end it.
    Ansi,
    /// `$"..."` (bash): translated, then read again.
    Locale,
    /// `$(...)` or `$((...))`, with the depth of plain parentheses inside.
    Command(u32),
    /// `` `...` ``
    Backtick,
    /// `${...}`
    Param,
}

/// The lexer's whole state; two lexers in equal states read what follows alike.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Lexer {
    /// Open constructs, innermost last, each with the number of holes before it.
    stack: Vec<(Frame, usize)>,
    holes: usize,
    /// Inside a word (so `#` does not start a comment).
    word: bool,
    /// The plain characters of the current word, to notice `case` inside `$(...)`.
    token: String,
    comment: bool,
    /// The previous character was a backslash that escapes the next one.
    escape: bool,
    /// The previous character was a `$` that may start an expansion.
    dollar: bool,
    /// How many `<` came just before.
    less: u8,
    delimiter: Delimiter,
    delimiter_text: String,
    /// Heredocs whose bodies start at the next newline, or have started.
    heredocs: Vec<Heredoc>,
    /// Reading heredoc bodies: the current line so far.
    body: Option<String>,
    /// Set once the text holds something this lexer cannot follow; every later hole
    /// is refused with this reason.
    lost: Option<&'static str>,
    /// The words and commands read at the top level.
    pub(super) words: Words,
    /// How many expansions (`$(`, `` ` ``, `${`, `$'`, `$"`) and comments were opened;
    /// a value spliced into the text must open none.
    pub opened: usize,
}

impl Lexer {
    /// Reads literal text.
    pub fn text(&mut self, text: &str) {
        text.chars().for_each(|c| self.char(c));
    }

    /// A hole: how its value goes in, or why it cannot stand here.
    pub fn hole(&mut self) -> Result<Hole, (Why, String)> {
        self.holes += 1;
        self.refusal().map_err(|r| (Why::Quoting, r.to_string()))?;
        if self.top().is_none() {
            // The value continues the current word, as its quoted text would.
            self.word = true;
            self.less = 0;
            self.token.push('\0');
        }
        let quote = match self.top() {
            None => Quote::Bare,
            Some(Frame::Double) => Quote::Double,
            Some(Frame::Single) => Quote::Single,
            Some(_) => return Err((Why::Quoting, "inside an expansion".into())),
        };
        match self.words.hole(self.holes - 1) {
            Verdict::Data { option } => Ok(Hole { quote, option }),
            Verdict::Code(reason) => Err((Why::Code, reason)),
            Verdict::Name(reason) => Err((Why::Name, reason)),
            Verdict::Option(reason) => Err((Why::Option, reason)),
        }
    }

    /// The end of the command: the last command ends (and what is piped into a
    /// command that reads code from its input is refused, in `words.late`).
    pub fn finish(&mut self) {
        self.words.finish();
    }

    /// At the top level, outside every quote and expansion.
    fn at_top(&self) -> bool {
        self.stack.is_empty()
    }

    /// Directly inside the author's quotes at the top level.
    fn in_top_quote(&self) -> bool {
        matches!(self.stack.as_slice(), [(Frame::Double | Frame::Single, _)])
    }

    /// The first hole opened under a construct that is still open at the end.
    pub fn unclosed(&self) -> Option<usize> {
        self.stack.first().map(|&(_, holes)| holes)
    }

    /// Whether `other` reads what follows as this lexer does: everything but the
    /// count of holes, the letters of the current word, and state nothing reads.
    pub fn same_shape(&self, other: &Lexer) -> bool {
        let frames = |l: &Lexer| l.stack.iter().map(|&(f, _)| f).collect::<Vec<_>>();
        // Inside quotes the word flag waits unread: closing a quote sets it.
        let code = |l: &Lexer| matches!(l.top(), None | Some(Frame::Command(_)));
        let rest = |l: &Lexer| {
            (
                code(l) && l.word,
                l.comment,
                l.escape,
                l.dollar,
                l.less,
                l.delimiter,
                l.heredocs.clone(),
                l.body.is_some(),
                l.lost,
                l.opened,
            )
        };
        frames(self) == frames(other) && rest(self) == rest(other)
    }

    fn top(&self) -> Option<Frame> {
        self.stack.last().map(|&(f, _)| f)
    }

    /// Why a hole cannot stand here, checking the most specific reasons first.
    fn refusal(&self) -> Result<(), &'static str> {
        let why = if let Some(why) = self.lost {
            why
        } else if self.body.is_some() {
            "inside a heredoc"
        } else if self.comment {
            "inside a comment"
        } else if self.delimiter != Delimiter::None || self.less == 2 {
            "as a heredoc delimiter"
        } else if self.escape {
            // `\'value'` would escape the quote that should open the value.
            "right after a backslash"
        } else if self.dollar {
            // `$'value'` is bash's escape-reading quote; `"$value"` could start `$(`.
            "right after `$`"
        } else {
            // The innermost construct that is not a quote: inside `$(...)`, even a
            // quoted hole is in a command the words of this one do not show.
            let mut frames = self.stack.iter().rev().map(|&(f, _)| f);
            match frames.find(|f| !matches!(f, Frame::Double | Frame::Single)) {
                None | Some(Frame::Double | Frame::Single) => return Ok(()),
                Some(Frame::Ansi) => "inside `$'...'`",
                Some(Frame::Locale) => "inside `$\"...\"`",
                Some(Frame::Command(_)) => "inside `$(...)`",
                Some(Frame::Backtick) => "inside backticks",
                Some(Frame::Param) => "inside `${...}`",
            }
        };
        Err(why)
    }

    fn push(&mut self, frame: Frame) {
        if !matches!(frame, Frame::Double | Frame::Single) {
            self.opened += 1;
        }
        self.stack.push((frame, self.holes));
        if !matches!(frame, Frame::Double | Frame::Single) {
            // The inside of an expansion starts with a fresh word.
            self.word = false;
            self.token.clear();
        }
    }

    fn pop(&mut self) {
        self.stack.pop();
        // `"a"b` is one word: what follows a closed construct continues it.
        self.word = true;
        self.token.push('\0');
    }

    fn char(&mut self, c: char) {
        if let Some(line) = &mut self.body {
            if c == '\n' {
                let line = std::mem::take(line);
                self.end_body_line(&line);
            } else {
                line.push(c);
            }
            return;
        }
        if self.escape {
            self.escape = false;
            if matches!(self.top(), None | Some(Frame::Command(_))) {
                self.word_char(c);
            }
            if self.at_top() && c != '\n' {
                self.words.literal(c, true);
            } else if self.in_top_quote() {
                // Inside `"..."` a backslash keeps its meaning only before these.
                match c {
                    '$' | '`' | '"' | '\\' => self.words.literal(c, true),
                    '\n' => {}
                    _ => {
                        self.words.literal('\\', true);
                        self.words.literal(c, true);
                    }
                }
            }
            return;
        }
        match self.top() {
            None | Some(Frame::Command(_)) => self.code(c),
            Some(Frame::Double | Frame::Locale) => self.double(c),
            Some(Frame::Single) => {
                if c == '\'' {
                    self.pop();
                } else if self.in_top_quote() {
                    self.words.literal(c, true);
                }
            }
            Some(Frame::Ansi) => self.escaping(c, '\''),
            Some(Frame::Backtick) => self.escaping(c, '`'),
            Some(Frame::Param) => self.param(c),
        }
    }

    /// `$'...'` and backticks: a backslash escapes, `close` ends the construct.
    fn escaping(&mut self, c: char, close: char) {
        match c {
            '\\' => self.escape = true,
            c if c == close => self.pop(),
            _ => {}
        }
    }

    /// After a `$`: the expansion it starts, if any. True when `c` was taken.
    fn after_dollar(&mut self, c: char, quoted: bool) -> bool {
        self.dollar = false;
        let frame = match c {
            '(' => Frame::Command(0),
            '{' => Frame::Param,
            '\'' if !quoted => Frame::Ansi,
            '"' if !quoted => Frame::Locale,
            '[' => {
                // bash's old arithmetic expands what is inside as if in double quotes:
                // a single-quoted `$(...)` there runs.
                self.lost =
                    Some("after `$[`, bash arithmetic, where even quotes do not stop `$(...)`");
                return false;
            }
            _ => return false,
        };
        self.push(frame);
        true
    }

    /// Top-level text and the inside of `$(...)`.
    fn code(&mut self, c: char) {
        let top = self.at_top();
        if self.comment {
            if c == '\n' {
                self.comment = false;
                if top {
                    self.words.operator(c);
                }
                self.newline();
            }
            return;
        }
        if self.dollar && self.after_dollar(c, false) {
            return;
        }
        let less = std::mem::take(&mut self.less);
        if less == 2 && c != '<' {
            // `<<` (not `<<<`): a heredoc, whose delimiter word comes next.
            self.heredoc_operator(c == '-');
            if c == '-' {
                return;
            }
        }
        if self.delimiter != Delimiter::None && self.delimiter_char(c) {
            return;
        }
        if top {
            self.top_level(c);
        }
        match c {
            '\\' => self.escape = true,
            '$' => {
                self.dollar = true;
                self.word = true;
            }
            '\'' => self.push(Frame::Single),
            '"' => self.push(Frame::Double),
            '`' => self.push(Frame::Backtick),
            '#' if !self.word => {
                self.comment = true;
                self.opened += 1;
            }
            '\n' => {
                self.end_word();
                self.newline();
            }
            '<' => {
                self.end_word();
                self.less = less.saturating_add(1);
            }
            ' ' | '\t' | ';' | '&' | '|' | '>' => self.end_word(),
            '(' | ')' => self.paren(c),
            _ => self.word_char(c),
        }
    }

    /// A character of code at the top level, for the words and commands: read before
    /// the lexer's own state changes (a `#` starts a comment only outside a word).
    fn top_level(&mut self, c: char) {
        match c {
            '\\' => {}
            '$' | '`' => self.words.expansion(false),
            '\'' | '"' => self.words.quote(),
            '#' if !self.word => {}
            ' ' | '\t' => self.words.blank(),
            '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => self.words.operator(c),
            _ => self.words.literal(c, false),
        }
    }

    fn word_char(&mut self, c: char) {
        self.word = true;
        self.token.push(c);
    }

    /// A word ends. Inside `$(...)`, `case` patterns end in an unmatched `)`, which
    /// this lexer would read as the end of the substitution.
    fn end_word(&mut self) {
        if self.token == "case" && matches!(self.top(), Some(Frame::Command(_))) {
            self.lost = Some("after a `case` inside `$(...)`");
        }
        self.word = false;
        self.token.clear();
    }

    fn paren(&mut self, c: char) {
        self.end_word();
        if let Some((Frame::Command(depth), _)) = self.stack.last_mut() {
            match (c, *depth) {
                (')', 0) => self.pop(),
                (')', _) => *depth -= 1,
                _ => *depth += 1,
            }
        }
    }
    /// Inside `"..."` (and `$"..."`): only `\`, `$`, `` ` `` and the closing `"` count.
    fn double(&mut self, c: char) {
        let quoted = self.in_top_quote();
        if self.escape_or_expansion(c) {
            if quoted && matches!(c, '$' | '`') {
                self.words.expansion(true);
            }
        } else if c == '"' {
            self.pop();
        } else if quoted {
            self.words.literal(c, true);
        }
    }

    /// `\`, `$` and a backtick start the same things inside `"..."` and `${...}`;
    /// whether `c` was one of them (or ended a `$` that was).
    fn escape_or_expansion(&mut self, c: char) -> bool {
        if self.dollar && self.after_dollar(c, true) {
            return true;
        }
        match c {
            '\\' => self.escape = true,
            '$' => self.dollar = true,
            '`' => self.push(Frame::Backtick),
            _ => return false,
        }
        true
    }

    /// Inside `${...}`: nested expansions and escapes count; quotes inside it are read
    /// differently by different shells, so this lexer stops trusting itself there.
    fn param(&mut self, c: char) {
        if self.escape_or_expansion(c) {
            return;
        }
        match c {
            '}' => self.pop(),
            '\'' | '"' => self.lost = Some("after a quote inside `${...}`"),
            _ => {}
        }
    }
}
