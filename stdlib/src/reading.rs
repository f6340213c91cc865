//! Reading a model's reply as JSON, leniently (DESIGN §13): the whole reply, else the
//! first fenced block labelled `json` or unlabelled, else the first JSON object or array
//! inside prose that stands on lines of its own (nothing but white space before it on
//! its first line and after it on its last) and is not empty. Each of these is read as
//! JSON, or else as JSON with trailing commas and `//` comments, which models often
//! write. Nothing else is guessed: `See note [3]`, `the type string[]` or `no data {}
//! here` are prose, and a typed task asks again.

use serde_json::Value;

/// How many `{` or `[` that open a line of prose are tried as the start of a JSON
/// value: each try reads to the end of the text at worst, so the bound keeps a reply
/// full of brackets linear.
const MAX_STARTS: usize = 32;

/// Parses model output as JSON, leniently. The error is the whole text's own, which
/// says best where it departs from JSON.
pub fn parse_json_text(text: &str) -> Result<Value, String> {
    let whole_error = match read(text) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    if let Some(v) = fenced_json(text).and_then(|body| read(body).ok()) {
        return Ok(v);
    }
    in_prose(text).ok_or(whole_error)
}

/// JSON, or else JSON without its trailing commas and `//` comments.
fn read(text: &str) -> Result<Value, String> {
    match serde_json::from_str(text) {
        Ok(v) => Ok(v),
        Err(e) => match tidied(text) {
            Some(t) => serde_json::from_str(&t).map_err(|_| e.to_string()),
            None => Err(e.to_string()),
        },
    }
}

/// The text without `//` comments (to the end of their line) and commas that only a
/// `}` or `]` follows; `None` when it has neither. Strings are left as they are.
fn tidied(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i = string_end(bytes, i);
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                out.push_str(&text[copied..i]);
                let end = text[i..].find('\n').map_or(text.len(), |n| i + n);
                i = end;
                copied = end;
                changed = true;
                continue;
            }
            b',' if closes_next(&bytes[i + 1..]) => {
                out.push_str(&text[copied..i]);
                copied = i + 1;
                changed = true;
            }
            _ => {}
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    changed.then_some(out)
}

/// Where the JSON string that opens at `bytes[open]` (a `"`) ends: just past its
/// closing quote, or the end of the text when it is never closed.
fn string_end(bytes: &[u8], open: usize) -> usize {
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Whether, past white space and `//` comments, a `}` or `]` comes next.
fn closes_next(mut rest: &[u8]) -> bool {
    loop {
        let skipped = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
        rest = &rest[skipped..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            rest = &rest[end..];
            continue;
        }
        return matches!(rest.first(), Some(b'}' | b']'));
    }
}

/// The first `{...}` or `[...]` inside prose that stands on lines of its own, is not
/// empty and reads as JSON.
fn in_prose(text: &str) -> Option<Value> {
    let bytes = text.as_bytes();
    for start in line_starts(text).take(MAX_STARTS) {
        let Some(len) = balanced_end(&bytes[start..]) else {
            continue;
        };
        let end = start + len;
        if !ends_its_line(&bytes[end..]) {
            continue;
        }
        match read(&text[start..end]) {
            Ok(v) if !is_empty(&v) => return Some(v),
            _ => {}
        }
    }
    None
}

/// Where a `{` or `[` opens a line: only white space before it on its line. One pass
/// over the text, so a line of a million brackets costs no more than its length.
fn line_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    let mut offset = 0;
    text.split_inclusive('\n').filter_map(move |line| {
        let at = offset;
        offset += line.len();
        let indent = line.len()
            - line
                .trim_start_matches(|c: char| c.is_ascii_whitespace())
                .len();
        matches!(line.as_bytes().get(indent), Some(b'{' | b'[')).then_some(at + indent)
    })
}

/// Whether only white space follows on the line (or to the end of the text).
fn ends_its_line(rest: &[u8]) -> bool {
    rest.iter()
        .take_while(|&&b| b != b'\n')
        .all(u8::is_ascii_whitespace)
}

/// `{}` and `[]` say nothing: in prose they are more likely an example than an answer.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// The length of the bracketed value at the start of `bytes`, counting brackets
/// outside strings; `None` when it is never closed.
fn balanced_end(bytes: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i = string_end(bytes, i);
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The body of the first ``` block whose label is `json` or empty. An unclosed fence runs
/// to the end (a reply cut off by the token limit). All slicing is next to ASCII "```"
/// or '\n', so it stays on character boundaries.
fn fenced_json(text: &str) -> Option<&str> {
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let close = after.find("```");
        let inner = close.map_or(after, |end| &after[..end]);
        let (label, body) = split_label(inner);
        if label.is_empty() || label.eq_ignore_ascii_case("json") {
            return Some(body);
        }
        rest = &after[close? + 3..];
    }
    None
}

/// Splits a fence's inside into its info string and body. The first line is a label
/// only when it looks like one (`json`, `python`), so "```{\"a\": 1}```" is a body.
fn split_label(inner: &str) -> (&str, &str) {
    let (first, body) = match inner.find('\n') {
        Some(nl) => (inner[..nl].trim(), &inner[nl + 1..]),
        // One line: nothing after a label, so it is all body ("```1```").
        None => return ("", inner),
    };
    let is_label = first
        .chars()
        .all(|ch| ch.is_alphanumeric() || matches!(ch, '-' | '_' | '+' | '.'));
    if is_label {
        (first, body)
    } else {
        ("", inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_is_the_whole_texts_own() {
        let e = parse_json_text("approved: yes").unwrap_err();
        assert!(e.contains("line 1 column 1"), "{e}");
    }

    // Which replies read as what is data: tests/fixtures/replies.json, run through the
    // machine by the suite's `reask` tests.

    #[test]
    fn a_reply_full_of_brackets_is_read_in_linear_time() {
        let text = "[".repeat(200_000);
        assert!(parse_json_text(&text).is_err());
        let text = format!("{} {{\"a\": 1}}", "{ x ".repeat(100_000));
        assert!(parse_json_text(&text).is_err());
        // Every line opens a bracket that never closes: past the starts tried, the
        // value on the last line is not found.
        let text = format!("{}{{\"a\": 1}}\n", "{ x\n".repeat(100_000));
        assert!(
            parse_json_text(&text).is_err(),
            "past the starts tried, nothing is found"
        );
        let text = format!("{}{{\"a\": 1}}\n", "{ x\n".repeat(MAX_STARTS - 1));
        assert!(parse_json_text(&text).is_ok(), "within the starts tried");
    }
}
