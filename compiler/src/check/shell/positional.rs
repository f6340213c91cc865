//! What a shell's own code does with its arguments: `sh -c CODE name {{x}}` hands the
//! value to CODE as `$1`, which CODE may quote as data (`echo "$1"`) or run
//! (`eval "$1"`, `$1 --help`). The code is literal text, so it is read as a command of
//! its own, with each reference to the parameter a hole.

use super::resolve::Verdict;
use super::{contexts, Piece, Why};
use std::cell::Cell;

/// How many shells' code strings may nest (`sh -c 'sh -c "..." _ "$1"' _ {{x}}`)
/// before the compiler stops reading them.
const MAX_NESTING: u32 = 4;

/// The longest code string read: every hole after it reads it again.
pub const MAX_CODE: usize = 16 << 10;

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
    let (pieces, unquoted) = references(code, p);
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

/// `code` with every reference to parameter `p` a hole (`$1`, `${1}`, and `$@`, `$*`
/// for any but `$0`); whether one stands outside double quotes.
fn references(code: &str, p: usize) -> (Vec<Piece<'_>>, bool) {
    let bytes = code.as_bytes();
    let (mut pieces, mut start, mut unquoted) = (Vec::new(), 0, false);
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
                if let Some(len) = reference(&code[i - 1..], p) {
                    pieces.push(Piece::Text(&code[start..i - 1]));
                    pieces.push(Piece::Hole);
                    unquoted |= !double;
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
    (pieces, unquoted)
}

/// The length of the reference to parameter `p` that `s` (starting at a `$`) begins.
fn reference(s: &str, p: usize) -> Option<usize> {
    let rest = &s[1..];
    let all = p > 0 && (rest.starts_with('@') || rest.starts_with('*'));
    if all {
        return Some(2);
    }
    if let Some(inner) = rest.strip_prefix('{') {
        let end = inner.find('}')?;
        let name = &inner[..end];
        let hit =
            name.parse::<usize>().is_ok_and(|n| n == p) || (p > 0 && (name == "@" || name == "*"));
        return hit.then_some(end + 3);
    }
    let digit = rest.bytes().next().filter(u8::is_ascii_digit)?;
    (usize::from(digit - b'0') == p).then_some(2)
}
