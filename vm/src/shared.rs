//! Text handed to a host request without copying it.
//!
//! A sequence passes up to 16 KiB of accumulated context to every step. The context of
//! step n+1 is the context of step n with one more step at the end and perhaps the
//! oldest ones gone from the front, so every request sees a window of one buffer the
//! sequence appends to, after a short note of how many steps were left out.

use serde::{Serialize, Serializer};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// `head` followed by `body[range]`; cloning it is a reference count.
#[derive(Clone, Default)]
pub struct SharedText {
    head: Arc<str>,
    body: Arc<String>,
    range: Range<usize>,
}

impl SharedText {
    /// `head` then the bytes of `body` from `start` on (a character boundary).
    pub fn window(head: &str, body: Arc<String>, start: usize) -> SharedText {
        let range = start.min(body.len())..body.len();
        SharedText {
            head: head.into(),
            body,
            range,
        }
    }

    /// The text in its two pieces, in order.
    pub fn parts(&self) -> [&str; 2] {
        let body = self.body.get(self.range.clone()).unwrap_or_default();
        [&self.head, body]
    }

    pub fn len(&self) -> usize {
        self.head.len() + self.range.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn bytes(&self) -> impl Iterator<Item = u8> + '_ {
        let [a, b] = self.parts();
        a.bytes().chain(b.bytes())
    }

    pub fn chars(&self) -> impl Iterator<Item = char> + '_ {
        let [a, b] = self.parts();
        a.chars().chain(b.chars())
    }
}

impl From<String> for SharedText {
    fn from(text: String) -> SharedText {
        SharedText::window("", Arc::new(text), 0)
    }
}

impl From<&str> for SharedText {
    fn from(text: &str) -> SharedText {
        SharedText::from(text.to_string())
    }
}

impl fmt::Display for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b] = self.parts();
        f.write_str(a)?;
        f.write_str(b)
    }
}

impl fmt::Debug for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

impl PartialEq for SharedText {
    fn eq(&self, other: &SharedText) -> bool {
        self.len() == other.len() && self.bytes().eq(other.bytes())
    }
}

impl PartialEq<str> for SharedText {
    fn eq(&self, other: &str) -> bool {
        let [a, b] = self.parts();
        other.len() == self.len() && other.starts_with(a) && &other[a.len()..] == b
    }
}

impl Serialize for SharedText {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_reads_as_its_note_then_the_rest_of_the_buffer() {
        let body = Arc::new("Step 1: a\nStep 2: b\n".to_string());
        let t = SharedText::window("(1 earlier step left out)\n", body, 10);
        assert_eq!(t.to_string(), "(1 earlier step left out)\nStep 2: b\n");
        assert_eq!(t.len(), t.to_string().len());
        assert!(t == *"(1 earlier step left out)\nStep 2: b\n");
        assert_eq!(t, SharedText::from(t.to_string()));
        assert_eq!(serde_json::to_value(&t).unwrap(), t.to_string());
        assert_eq!(format!("{t:?}"), format!("{:?}", t.to_string()));
    }

    #[test]
    fn texts_differing_only_in_where_the_note_ends_are_equal() {
        let a = SharedText::window("ab", Arc::new("cd".into()), 0);
        let b = SharedText::window("a", Arc::new("bcd".into()), 0);
        assert_eq!(a, b);
        assert_ne!(a, SharedText::window("abc", Arc::new("e".into()), 0));
        assert!(SharedText::default().is_empty());
    }
}
