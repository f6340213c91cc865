//! Quoting values for the shell contexts of a script command (DESIGN §18): the
//! `ShellQuote` instructions use it, and `tvc`'s tests check their contexts with it.

use crate::isa::Quote;

/// POSIX single quoting: no value can end the quote and inject a command.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `s` quoted for where it stands in a command (DESIGN §18): as a quoted word of its
/// own, as text inside the author's `"..."`, or as text inside the author's `'...'`.
/// In each case the shell reads back exactly `s`, and nothing of it as code.
pub fn shell_quote_in(s: &str, quote: Quote) -> String {
    match quote {
        Quote::Bare => shell_quote(s),
        // Inside double quotes only these four keep a meaning, and a backslash takes
        // it away; a newline is plain text there.
        Quote::Double => {
            let mut out = String::with_capacity(s.len() + 8);
            for c in s.chars() {
                if matches!(c, '\\' | '"' | '$' | '`') {
                    out.push('\\');
                }
                out.push(c);
            }
            out
        }
        // Close the author's quote, write an escaped `'`, open it again.
        Quote::Single => s.replace('\'', r"'\''"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_context_gets_its_own_escapes() {
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote_in(r#"a"$b`\"#, Quote::Double), r#"a\"\$b\`\\"#);
        assert_eq!(shell_quote_in("it's", Quote::Single), r"it'\''s");
    }
}
