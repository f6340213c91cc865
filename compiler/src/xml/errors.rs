//! Entity references and the reader's errors, in words a template author understands.

pub(super) fn decode_entity(name: &str) -> Option<char> {
    match name {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => {
            let num = name.strip_prefix('#')?;
            let code = match num.strip_prefix('x').or_else(|| num.strip_prefix('X')) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => num.parse().ok()?,
            };
            char::from_u32(code).filter(|&c| c != '\0')
        }
    }
}

/// What to write instead of a raw `<` or `&` meant as text.
pub(super) const AS_TEXT: &str = "write `&lt;` for a `<` and `&amp;` for a `&` meant as text, or put the whole text in `<![CDATA[ ... ]]>`, where both are taken as written";

pub(super) fn describe_error(e: &quick_xml::Error) -> String {
    use quick_xml::errors::{IllFormedError as I, SyntaxError as S};
    match e {
        quick_xml::Error::Syntax(s) => match s {
            S::UnclosedTag => "malformed XML: a tag is not closed with `>`".into(),
            S::UnclosedComment => "malformed XML: a comment is not closed with `-->`".into(),
            S::UnclosedCData => "malformed XML: a CDATA section is not closed with `]]>`".into(),
            S::UnclosedDoubleQuotedAttributeValue | S::UnclosedSingleQuotedAttributeValue => {
                "malformed XML: an attribute value is missing its closing quote".into()
            }
            other => format!("malformed XML: {other}"),
        },
        quick_xml::Error::IllFormed(i) => match i {
            I::MismatchedEndTag { expected, found } => {
                format!("malformed XML: `</{found}>` closes `<{expected}>`")
            }
            I::UnmatchedEndTag(name) => {
                format!("malformed XML: `</{name}>` closes no open element")
            }
            I::MissingEndTag(name) => format!("element `<{name}>` is never closed"),
            I::UnclosedReference => {
                "a `&` starts an entity reference (`&amp;`, `&lt;`, ...), and this one is not closed with `;`".into()
            }
            other => format!("malformed XML: {other}"),
        },
        other => format!("malformed XML: {other}"),
    }
}
