//! A small POSIX shell lexer for script commands: it decides, for every `{{...}}` hole
//! of a `<command>`, the quoting context the hole stands in, so the machine can quote
//! the value for exactly that context (DESIGN §18).
//!
//! Only the literal text around the holes is lexed; a hole is a word part whose value
//! is unknown. The lexer does not parse the shell grammar: it follows just what changes
//! how a character is read (quotes, escapes, expansions, comments, heredocs). Wherever
//! it cannot be sure what the shell would make of a value, it refuses the hole, and the
//! author passes the value in the environment instead.
//!
//! The lexer is fed text in pieces, so the fuzz target can lex a command with its
//! values spliced in and check that no value changed the lexer's state.

pub use tv_vm::isa::Quote;

/// A piece of a command: literal text, or a hole whose value is unknown.
#[derive(Clone, Copy, Debug)]
pub enum Piece<'a> {
    Text(&'a str),
    Hole,
}

/// Why hole number `hole` (counting from 0) cannot be quoted safely.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub hole: usize,
    /// Where the hole stands, as a phrase: "inside a heredoc".
    pub reason: &'static str,
}

/// The quoting context of every hole of a command template.
pub fn template_contexts(t: &crate::ast::TextTemplate) -> Result<Vec<Quote>, Refusal> {
    let pieces: Vec<Piece> = t
        .parts
        .iter()
        .map(|p| match p {
            crate::ast::TextPart::Lit(s, _) => Piece::Text(s),
            crate::ast::TextPart::Expr(_) => Piece::Hole,
        })
        .collect();
    contexts(&pieces)
}

/// The quoting context of every hole of a command, or the first hole that has none.
pub fn contexts(pieces: &[Piece]) -> Result<Vec<Quote>, Refusal> {
    let mut lexer = Lexer::default();
    let mut quotes = Vec::new();
    for piece in pieces {
        match piece {
            Piece::Text(t) => lexer.text(t),
            Piece::Hole => {
                let hole = quotes.len();
                quotes.push(lexer.hole().map_err(|reason| Refusal { hole, reason })?);
            }
        }
    }
    match lexer.unclosed() {
        Some(hole) if hole < quotes.len() => Err(Refusal {
            hole,
            reason: "after a quote or expansion that is never closed",
        }),
        _ => Ok(quotes),
    }
}

/// A construct that changes how the characters inside it are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
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

/// A heredoc whose body has not ended: its delimiter, and whether `<<-` strips tabs.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Heredoc {
    delimiter: String,
    strip_tabs: bool,
}

/// Where a heredoc operator's delimiter word stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
enum Delimiter {
    /// No `<<` is waiting for its word.
    #[default]
    None,
    /// After `<<` (or `<<-`), before the word.
    Wanted { strip_tabs: bool },
    /// Inside the word, and inside a quote of it (`Some('"')`) or not.
    Reading {
        strip_tabs: bool,
        quote: Option<char>,
    },
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
    /// How many expansions (`$(`, `` ` ``, `${`, `$'`, `$"`) and comments were opened;
    /// a value spliced into the text must open none.
    pub opened: usize,
}

impl Lexer {
    /// Reads literal text.
    pub fn text(&mut self, text: &str) {
        text.chars().for_each(|c| self.char(c));
    }

    /// A hole: the context its value stands in, or why there is none.
    pub fn hole(&mut self) -> Result<Quote, &'static str> {
        self.holes += 1;
        self.refusal()?;
        if self.top().is_none() {
            // The value continues the current word, as its quoted text would.
            self.word = true;
            self.less = 0;
            self.token.push('\0');
        }
        Ok(match self.top() {
            None => Quote::Bare,
            Some(Frame::Double) => Quote::Double,
            Some(Frame::Single) => Quote::Single,
            Some(_) => return Err("inside an expansion"),
        })
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
            match self.top() {
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
            return;
        }
        match self.top() {
            None | Some(Frame::Command(_)) => self.code(c),
            Some(Frame::Double | Frame::Locale) => self.double(c),
            Some(Frame::Single) => {
                if c == '\'' {
                    self.pop();
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
            _ => return false,
        };
        self.push(frame);
        true
    }

    /// Top-level text and the inside of `$(...)`.
    fn code(&mut self, c: char) {
        if self.comment {
            if c == '\n' {
                self.comment = false;
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

    fn newline(&mut self) {
        if !self.heredocs.is_empty() {
            if self.stack.is_empty() {
                self.body = Some(String::new());
            } else {
                // A heredoc inside `$(...)`: its body could hold the `)`.
                self.lost = Some("after a heredoc inside an expansion");
            }
        }
    }

    fn heredoc_operator(&mut self, strip_tabs: bool) {
        self.delimiter = Delimiter::Wanted { strip_tabs };
        self.delimiter_text.clear();
    }

    /// A character of (or before) a heredoc's delimiter word; false when the word has
    /// ended and `c` is read as code.
    fn delimiter_char(&mut self, c: char) -> bool {
        match self.delimiter {
            Delimiter::None => false,
            Delimiter::Wanted { .. } if c == ' ' || c == '\t' => true,
            Delimiter::Wanted { strip_tabs } => {
                self.delimiter = Delimiter::Reading {
                    strip_tabs,
                    quote: None,
                };
                self.delimiter_char(c)
            }
            Delimiter::Reading { strip_tabs, quote } => match (quote, c) {
                (Some(q), c) if c == q => self.quote_delimiter(strip_tabs, None),
                (Some(_), c) => self.delimiter_push(c),
                (None, '\'' | '"') => self.quote_delimiter(strip_tabs, Some(c)),
                (None, '\\') => true,
                (None, ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')') => {
                    self.heredocs.push(Heredoc {
                        delimiter: std::mem::take(&mut self.delimiter_text),
                        strip_tabs,
                    });
                    self.delimiter = Delimiter::None;
                    false
                }
                (None, c) => self.delimiter_push(c),
            },
        }
    }

    fn quote_delimiter(&mut self, strip_tabs: bool, quote: Option<char>) -> bool {
        self.delimiter = Delimiter::Reading { strip_tabs, quote };
        true
    }

    fn delimiter_push(&mut self, c: char) -> bool {
        self.delimiter_text.push(c);
        true
    }

    /// A line of heredoc bodies ended: the delimiter line ends the first body.
    fn end_body_line(&mut self, line: &str) {
        let Some(first) = self.heredocs.first() else {
            self.body = None;
            return;
        };
        let line = if first.strip_tabs {
            line.trim_start_matches('\t')
        } else {
            line
        };
        if line == first.delimiter {
            self.heredocs.remove(0);
            if self.heredocs.is_empty() {
                self.body = None;
                self.word = false;
            }
        }
    }

    /// Inside `"..."` (and `$"..."`): only `\`, `$`, `` ` `` and the closing `"` count.
    fn double(&mut self, c: char) {
        if !self.escape_or_expansion(c) && c == '"' {
            self.pop();
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
