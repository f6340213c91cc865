//! The positioned element tree the reader builds: elements, attributes and text nodes,
//! each with its span, text decoded together with the map back to file offsets.

use crate::source::Span;
use smallvec::SmallVec;
use std::borrow::Cow;

/// A document's tree, its names and most of its text borrowed from the source.
#[derive(Clone, Debug, Default)]
pub struct XmlDoc<'s> {
    pub root: Option<Element<'s>>,
    /// False when the reader stopped at a syntax error; later stages then stay quiet
    /// about what is missing, since it may simply not have been read.
    pub complete: bool,
}

#[derive(Clone, Debug)]
pub struct Element<'s> {
    pub name: Cow<'s, str>,
    pub name_span: Span,
    /// From `<` of the start tag to `>` of the end tag.
    pub span: Span,
    pub attrs: Vec<Attr<'s>>,
    pub children: Vec<Node<'s>>,
}

#[derive(Clone, Debug)]
pub struct Attr<'s> {
    pub name: Cow<'s, str>,
    pub name_span: Span,
    pub value: Text<'s>,
}

#[derive(Clone, Debug)]
pub enum Node<'s> {
    Element(Element<'s>),
    Text(Text<'s>),
}

/// Decoded character data and the way back to source offsets: a slice of the source
/// when it is one run without references, as most text is.
#[derive(Clone, Debug, Default)]
pub struct Text<'s> {
    pub value: Cow<'s, str>,
    pub map: OffsetMap,
    /// The raw source range (for a value: inside the quotes).
    pub span: Span,
}

/// Anchors `(decoded offset, source offset)`; between anchors the text was copied
/// byte for byte, so offsets move together.
#[derive(Clone, Debug, Default)]
pub struct OffsetMap {
    anchors: SmallVec<[(u32, u32); 2]>,
}

impl OffsetMap {
    pub(super) fn anchor(&mut self, decoded: usize, source: usize) {
        let a = (decoded as u32, source as u32);
        if self.anchors.last() != Some(&a) {
            self.anchors.push(a);
        }
    }

    /// The source offset of a decoded offset.
    pub fn source(&self, decoded: usize) -> usize {
        let d = decoded as u32;
        // Most text has no references: one anchor at its start maps all of it.
        if let [(0, src)] = self.anchors.as_slice() {
            return (src + d) as usize;
        }
        let i = self.anchors.partition_point(|&(dec, _)| dec <= d);
        match i.checked_sub(1).and_then(|i| self.anchors.get(i)) {
            Some(&(dec, src)) => (src + (d - dec)) as usize,
            None => decoded,
        }
    }
}

impl<'s> Text<'s> {
    /// Text whose first byte is at source offset `at` and whose bytes up to the
    /// next anchor are the source's.
    pub(super) fn new(value: Cow<'s, str>, at: usize, span: Span) -> Self {
        let mut map = OffsetMap::default();
        map.anchor(0, at);
        Text { value, map, span }
    }

    /// The source span of a byte range of the decoded value.
    pub fn span_of(&self, range: std::ops::Range<usize>) -> Span {
        let start = self.map.source(range.start);
        let end = if range.end > range.start {
            self.map.source(range.end - 1) + 1
        } else {
            start
        };
        Span::new(self.span.file, start..end.max(start))
    }

    pub fn trimmed(&self) -> &str {
        self.value.trim()
    }

    /// Span of the trimmed value, or of the whole node when it is blank.
    pub fn trimmed_span(&self) -> Span {
        let lead = self.value.len() - self.value.trim_start().len();
        let t = self.value.trim();
        if t.is_empty() {
            return self.span;
        }
        self.span_of(lead..lead + t.len())
    }

    pub(super) fn push_raw(&mut self, raw: &str, at: usize) {
        self.map.anchor(self.value.len(), at);
        self.value.to_mut().push_str(raw);
    }
}

impl<'s> Element<'s> {
    pub fn attr(&self, name: &str) -> Option<&Attr<'s>> {
        self.attrs.iter().find(|a| a.name == name)
    }

    pub fn elements(&self) -> impl Iterator<Item = &Element<'s>> {
        self.children.iter().filter_map(|n| match n {
            Node::Element(e) => Some(e),
            Node::Text(_) => None,
        })
    }

    /// All character data directly inside, concatenated: borrowed when it is a single
    /// node, as it nearly always is.
    pub fn text(&self) -> Cow<'_, Text<'s>> {
        let mut texts = self.children.iter().filter_map(|n| match n {
            Node::Text(t) => Some(t),
            Node::Element(_) => None,
        });
        let Some(first) = texts.next() else {
            let at = self.name_span.end as usize;
            return Cow::Owned(Text {
                span: Span::new(self.span.file, at..at),
                ..Text::default()
            });
        };
        let mut texts = texts.peekable();
        if texts.peek().is_none() {
            return Cow::Borrowed(first);
        }
        let mut out = first.clone();
        for t in texts {
            for &(dec, src) in &t.map.anchors {
                out.map.anchor(out.value.len() + dec as usize, src as usize);
            }
            out.value.to_mut().push_str(&t.value);
            out.span = out.span.to(t.span);
        }
        Cow::Owned(out)
    }

    /// Span of the start tag's name, the usual place to report "this element".
    pub fn head(&self) -> Span {
        self.name_span
    }
}

#[cfg(test)]
mod tests {
    use super::{Node, XmlDoc};
    use crate::diag::Diagnostics;
    use crate::source::FileId;

    fn read(src: &str) -> (XmlDoc<'_>, Diagnostics) {
        let mut diags = Diagnostics::new();
        let doc = super::super::parse(FileId(0), src, &mut diags);
        (doc, diags)
    }

    #[test]
    fn whitespace_beside_elements_is_dropped_and_whitespace_alone_in_an_element_is_kept() {
        let (doc, diags) = read("<a>\n  <b>  </b>\n  <c>x <d/> y</c>\n  <!-- note -->\n</a>");
        let a = doc.root.as_ref().expect("a root");
        assert!(a.children.iter().all(|n| matches!(n, Node::Element(_))));
        let names: Vec<&str> = a.elements().map(|e| e.name.as_ref()).collect();
        assert_eq!(names, ["b", "c"]);
        assert_eq!(
            a.elements().next().map(|b| b.text().value.clone()),
            Some("  ".into())
        );
        assert_eq!(
            a.elements().nth(1).map(|c| c.text().value.clone()),
            Some("x  y".into())
        );
        assert!(!diags.has_errors());
    }

    #[test]
    fn runs_references_and_cdata_of_one_node_join_and_map_back_to_the_file() {
        let src = "<a>x &lt; y<![CDATA[<z>]]>w &amp;</a>";
        let (doc, diags) = read(src);
        let a = doc.root.as_ref().expect("a root");
        let text = a.text();
        assert_eq!(text.value, "x < y<z>w &");
        for (needle, decoded_len) in [("y", 1), ("<z>", 3), ("w", 1), ("x", 1)] {
            let at = text.value.find(needle).expect("in the text");
            let span = text.span_of(at..at + decoded_len);
            assert_eq!(&src[span.start as usize..span.end as usize], needle);
        }
        // A decoded character maps onto its reference's first byte.
        let lt = text.value.find('<').expect("decoded");
        assert_eq!(
            text.span_of(lt..lt + 1).start as usize,
            src.find("&lt;").expect("written")
        );
        assert!(!diags.has_errors());
    }

    #[test]
    fn a_bad_reference_is_reported_before_the_syntax_error_that_follows_it() {
        let (_, diags) = read("<a>fish &chips; and peas <b></a>");
        let messages: Vec<&str> = diags.iter().map(|d| d.message.as_str()).collect();
        assert!(messages.len() >= 2, "{messages:?}");
        assert!(messages[0].contains("&chips;"), "{messages:?}");
    }

    #[test]
    fn a_streamed_library_hands_out_its_entries_and_keeps_no_layout_after_them() {
        let src = "<library>\n  <template name=\"a\"/>\n  <task name=\"b\"/>\n</library>\n";
        let mut diags = Diagnostics::new();
        let mut names = Vec::new();
        let doc = super::super::parse_streaming(FileId(0), src, &mut diags, &mut |el| {
            names.push(el.name.into_owned())
        });
        assert_eq!(names, ["template", "task"]);
        let root = doc.root.as_ref().expect("a root");
        assert_eq!(root.name, "library");
        assert!(root.children.is_empty(), "{:?}", root.children);
        assert!(doc.complete && !diags.has_errors());
    }
}
