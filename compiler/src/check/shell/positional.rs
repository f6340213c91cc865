//! What a shell's own code does with its arguments: `sh -c CODE name {{x}}` hands the
//! value to CODE as `$1`, which CODE may quote as data (`echo "$1"`) or run
//! (`eval "$1"`, `$1 --help`). The code is literal text, so it is read as a command of
//! its own, with each reference to the parameter a hole.

use super::verdict::Verdict;
use super::{contexts, Piece, Why};
use std::cell::Cell;

/// How many shells' code strings may nest (`sh -c 'sh -c "..." _ "$1"' _ {{x}}`)
/// before the compiler stops reading them.
const MAX_NESTING: u32 = 4;

/// The longest code string read: every hole after it reads it again.
pub(crate) const MAX_CODE: usize = 16 << 10;

thread_local! {
    static NESTING: Cell<u32> = const { Cell::new(0) };
}

/// The verdict on a value that `code`, run by `name -c`, receives as parameter `p`
/// (`$0` for the first argument after the code).
pub(super) fn verdict(code: &str, p: usize, name: &str) -> Verdict {
    let param = format!("${p}");
    if code.len() > MAX_CODE {
        return Verdict::Code(format!(
            "as `{param}` of a code string of more than {MAX_CODE} bytes, more than the \
             compiler reads"
        ));
    }
    let (pieces, unquoted, indirect) = references(code, p);
    if indirect {
        return Verdict::Code(format!(
            "as `{param}` of the code `{name} -c` runs, which reads it as the name of a \
             variable (`${{!N}}`), whose array subscript bash evaluates"
        ));
    }
    if pieces.iter().all(|piece| matches!(piece, Piece::Text(_))) {
        return Verdict::Data { option: false };
    }
    if unquoted {
        return Verdict::Code(format!(
            "as `{param}` of the code `{name} -c` runs, which does not quote it: that shell \
             splits it into words and expands its globs (write \"{param}\")"
        ));
    }
    let depth = NESTING.with(|n| n.get());
    if depth >= MAX_NESTING {
        return Verdict::Code(format!(
            "as `{param}` of code nested more than {MAX_NESTING} shells deep, more than the \
             compiler follows"
        ));
    }
    NESTING.with(|n| n.set(depth + 1));
    let read = contexts(&pieces);
    NESTING.with(|n| n.set(depth));
    match read {
        Ok(holes) => Verdict::Data {
            option: holes.iter().any(|h| h.option),
        },
        Err(r) => {
            let why = format!(
                "as `{param}` of the code `{name} -c` runs, where it stands {}",
                r.reason
            );
            match r.why {
                Why::Quoting | Why::Code => Verdict::Code(why),
                Why::Name | Why::Option => Verdict::Name(why),
            }
        }
    }
}

/// `code` with every reference to parameter `p` a hole (`$1`, `${1}`, `${1:-x}`,
/// `${1%.txt}`, and `$@`, `$*` for any but `$0`); whether one stands outside double
/// quotes; whether one is indirect (`${!1}`). Code that moves its parameters (`shift`,
/// `set`) may refer to the value by any number, so then every positional parameter but
/// `$0` is taken for it.
fn references(code: &str, p: usize) -> (Vec<Piece<'_>>, bool, bool) {
    let any = p > 0 && moves_parameters(code);
    let bytes = code.as_bytes();
    let (mut pieces, mut start, mut unquoted, mut indirect) = (Vec::new(), 0, false, false);
    let (mut single, mut double) = (false, false);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        match b {
            b'\'' if !double => single = !single,
            _ if single => {}
            b'\\' => i += 1,
            b'"' => double = !double,
            b'$' => {
                if let Some((len, through)) = reference(&code[i - 1..], p, any) {
                    pieces.push(Piece::Text(&code[start..i - 1]));
                    pieces.push(Piece::Hole);
                    unquoted |= !double;
                    indirect |= through;
                    i += len - 1;
                    start = i;
                } else if bytes.get(i) == Some(&b'$') {
                    i += 1;
                }
            }
            _ => {}
        }
    }
    pieces.push(Piece::Text(&code[start.min(code.len())..]));
    (pieces, unquoted, indirect)
}

/// Whether `code` runs `shift` or `set`, which give the parameters other numbers.
fn moves_parameters(code: &str) -> bool {
    code.split(|c: char| c.is_ascii_whitespace() || ";|&(){}`'\"".contains(c))
        .any(|w| w == "shift" || w == "set")
}

/// The length of the reference to parameter `p` (`any`: to any parameter but `$0`)
/// that `s` (starting at a `$`) begins, and whether it is indirect (`${!1}`). A
/// `${...}` reference is the whole expansion, operators and words included
/// (`${1:-none}`, `${1%.txt}`): what it gives is made of the value; its length
/// (`${#1}`) is a number, not a reference.
fn reference(s: &str, p: usize, any: bool) -> Option<(usize, bool)> {
    let rest = &s[1..];
    let is = |name: &str| match name.parse::<usize>() {
        Ok(n) => n == p || (any && n > 0),
        Err(_) => p > 0 && (name == "@" || name == "*"),
    };
    let all = p > 0 && (rest.starts_with('@') || rest.starts_with('*'));
    if all {
        return Some((2, false));
    }
    if let Some(inner) = rest.strip_prefix('{') {
        let end = closing_brace(inner);
        let body = &inner[..end];
        let (indirect, body) = match body.strip_prefix('!') {
            Some(b) => (true, b),
            None => (false, body),
        };
        if body.starts_with('#') && body.len() > 1 {
            return None;
        }
        let name_len = match body.as_bytes().first() {
            Some(b'@' | b'*') => 1,
            _ => body.bytes().take_while(u8::is_ascii_digit).count(),
        };
        let hit = name_len > 0 && is(&body[..name_len]);
        // Past the end of the text when the brace is never closed: the rest is in it.
        return hit.then_some(((end + 3).min(s.len()), indirect));
    }
    rest.bytes().next().filter(u8::is_ascii_digit)?;
    is(&rest[..1]).then_some((2, false))
}

/// Where the `}` that closes a `${` ends `inner` (the text after the `{`), counting the
/// `${` nested in it; the length of `inner` when none does.
fn closing_brace(inner: &str) -> usize {
    let bytes = inner.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'$' if bytes.get(i + 1) == Some(&b'{') => {
                depth += 1;
                i += 1;
            }
            b'}' if depth == 0 => return i,
            b'}' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}
