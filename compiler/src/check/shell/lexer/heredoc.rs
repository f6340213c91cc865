//! Heredocs: the operator, its delimiter word (quoted or not, `<<-` stripping tabs),
//! and the body lines up to the delimiter, which the lexer skips.

use super::Lexer;

/// A heredoc whose body has not ended: its delimiter, and whether `<<-` strips tabs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Heredoc {
    delimiter: String,
    strip_tabs: bool,
}

/// Where a heredoc operator's delimiter word stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(super) enum Delimiter {
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

impl Lexer {
    pub(super) fn newline(&mut self) {
        if !self.heredocs.is_empty() {
            if self.stack.is_empty() {
                self.body = Some(String::new());
            } else {
                // A heredoc inside `$(...)`: its body could hold the `)`.
                self.lost = Some("after a heredoc inside an expansion");
            }
        }
    }

    pub(super) fn heredoc_operator(&mut self, strip_tabs: bool) {
        self.delimiter = Delimiter::Wanted { strip_tabs };
        self.delimiter_text.clear();
    }

    /// A character of (or before) a heredoc's delimiter word; false when the word has
    /// ended and `c` is read as code.
    pub(super) fn delimiter_char(&mut self, c: char) -> bool {
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
    pub(super) fn end_body_line(&mut self, line: &str) {
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
}
