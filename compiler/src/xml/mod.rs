//! Stage 1: XML text to a positioned element tree.
//!
//! quick-xml does the tokenising; this module keeps, for every element, attribute and
//! text node, where it came from. Text is stored decoded (entities resolved) together
//! with an [`OffsetMap`], so an expression found inside decoded text can still be
//! reported at its exact place in the file. A malformed document yields the part that
//! was read before the fault plus one diagnostic; it never panics.

use crate::diag::{Diagnostic, Diagnostics};
use crate::source::{FileId, Span};
use quick_xml::events::Event;
use quick_xml::Reader;
use std::borrow::Cow;

mod dump;
mod errors;
mod tree;

pub use dump::dump_docs;
use errors::{decode_entity, describe_error, AS_TEXT};
pub use tree::{Attr, Element, Node, OffsetMap, Text, XmlDoc};

/// Elements nested deeper than this are reported and skipped, so no later recursive
/// pass can exhaust the stack on hostile input.
pub(crate) const MAX_DEPTH: usize = 200;

struct Open<'a> {
    el: Element<'a>,
    start: usize,
    /// Whether a child element has closed in it, kept or handed out as a streamed
    /// entry: text after it lies beside elements.
    has_elements: bool,
}

/// Reads one document. Every problem becomes a diagnostic.
pub fn parse<'a>(file: FileId, src: &'a str, diags: &mut Diagnostics) -> XmlDoc<'a> {
    parse_with(file, src, diags, None)
}

/// [`parse`], handing each entry of a `<library>` root to `entries` as soon as it is
/// read, so that later stages can start on it while the rest of the file is read. The
/// entries are not kept in the tree: the root comes back without them.
pub(crate) fn parse_streaming<'a, 'd>(
    file: FileId,
    src: &'a str,
    diags: &'d mut Diagnostics,
    entries: &'d mut dyn FnMut(Element<'a>),
) -> XmlDoc<'a> {
    parse_with(file, src, diags, Some(entries))
}

fn parse_with<'a, 'd>(
    file: FileId,
    src: &'a str,
    diags: &'d mut Diagnostics,
    entries: Option<&'d mut dyn FnMut(Element<'a>)>,
) -> XmlDoc<'a> {
    let mut r = Builder {
        file,
        src,
        stack: Vec::new(),
        root: None,
        skipped: 0,
        truncated: false,
        malformed: false,
        diags,
        text: None,
        pending: None,
        entries,
        halted: false,
    };
    // A cut subtree leaves its parent looking incomplete; say so rather than report it.
    let complete = r.run() && !r.truncated && !r.malformed;
    XmlDoc {
        root: r.root,
        complete,
    }
}

struct Builder<'a, 'd> {
    file: FileId,
    src: &'a str,
    stack: Vec<Open<'a>>,
    root: Option<Element<'a>>,
    /// Depth inside a subtree that is too deep to keep.
    skipped: usize,
    truncated: bool,
    /// A well-formedness error the reader stepped over.
    malformed: bool,
    diags: &'d mut Diagnostics,
    text: Option<Text<'a>>,
    /// Character data read but not yet copied into `text`, which is empty meanwhile: a
    /// node's only run so far, most often the layout between elements, which is then
    /// dropped without a copy.
    pending: Option<(&'a str, usize)>,
    /// Where the entries of a `<library>` root go when the caller streams them.
    entries: Option<&'d mut dyn FnMut(Element<'a>)>,
    /// A fault after which nothing more is read (reported already).
    halted: bool,
}

impl<'a> Builder<'a, '_> {
    fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.file, start..end)
    }

    fn run(&mut self) -> bool {
        let mut reader = Reader::from_str(self.src);
        let cfg = reader.config_mut();
        cfg.check_end_names = true;
        cfg.check_comments = false;
        cfg.expand_empty_elements = false;
        // The reader skips a byte-order mark and counts its positions from after it.
        let skip = self.bom_len();
        loop {
            let before = reader.buffer_position() as usize + skip;
            let event = reader.read_event();
            let after = reader.buffer_position() as usize + skip;
            match event {
                Ok(Event::Eof) => return self.finish(),
                Ok(ev) => {
                    self.event(ev, before, after);
                    if self.halted {
                        self.take_pending();
                        self.close_all(before);
                        return false;
                    }
                }
                Err(e) => {
                    let at = reader.error_position() as usize + skip;
                    // What the text read so far has to say comes first, as it is first.
                    self.take_pending();
                    self.syntax_error(&e, at);
                    self.close_all(at);
                    return false;
                }
            }
        }
    }

    fn event(&mut self, ev: Event<'a>, before: usize, after: usize) {
        match ev {
            Event::Start(e) => {
                self.flush_text(true);
                self.open(&e, before, after);
            }
            Event::Empty(e) => {
                self.flush_text(true);
                self.open(&e, before, after);
                self.close(after);
            }
            Event::End(_) => {
                self.flush_text(false);
                self.close(after);
            }
            Event::Text(t) => {
                let raw = t.into_inner();
                // The reader may skip a byte-order mark: trust where the text really is.
                let at = self.offset_of(&raw).unwrap_or(before);
                match raw {
                    Cow::Borrowed(raw) => self.add_text(raw, at),
                    Cow::Owned(raw) => self.add_copied(&raw, at, true),
                }
            }
            Event::CData(t) => {
                let raw = t.into_inner();
                // `<![CDATA[` is 9 bytes; the content follows it verbatim.
                self.add_copied(&raw, before + 9, false);
            }
            Event::GeneralRef(r) => {
                let raw = r.into_inner();
                self.add_entity(&raw, before);
            }
            Event::Decl(_) if before > self.bom_len() => {
                self.diags.push(
                    Diagnostic::error(
                        self.span(before, after),
                        "the XML declaration must come first in the file",
                    )
                    .with_help("move `<?xml ...?>` to the very start, or remove it"),
                );
            }
            Event::Comment(_) => self.comment(before, after),
            Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
            Event::Eof => {}
        }
    }

    /// XML 1.0 (§2.5) forbids `--` inside a comment, and so a comment ending `--->`:
    /// other XML tools refuse such a file, so `tvc` does too, at the hyphens.
    fn comment(&mut self, before: usize, after: usize) {
        // `<!--` and `-->` are 4 and 3 bytes.
        let start = before + 4;
        let body = self.src.get(start..after.saturating_sub(3)).unwrap_or("");
        let (at, message) = if let Some(i) = memchr::memmem::find(body.as_bytes(), b"--") {
            (
                start + i,
                "`--` inside a comment: XML does not allow two hyphens in a row there",
            )
        } else if body.ends_with('-') {
            (
                start + body.len() - 1,
                "a comment ends `--->`: XML does not allow a hyphen right before the closing `-->`",
            )
        } else {
            return;
        };
        self.diags.push(
            Diagnostic::error(self.span(at, at + 2), message)
                .with_help("write the hyphens apart (`- -`) or as a dash (`—`), or close the comment with `-->` before them"),
        );
    }

    fn open(&mut self, e: &quick_xml::events::BytesStart<'a>, before: usize, after: usize) {
        if self.skipped > 0 || self.stack.len() >= MAX_DEPTH {
            if self.skipped == 0 && !self.truncated {
                self.truncated = true;
                self.diags.push(
                    Diagnostic::error(
                        self.span(before, after),
                        format!("elements are nested more than {MAX_DEPTH} levels deep"),
                    )
                    .with_help("split the template into function templates and call them"),
                );
            }
            self.skipped += 1;
            return;
        }
        if self.stack.is_empty() && self.root.is_some() {
            self.diags.error(
                self.span(before, after),
                "a document has exactly one root element; this is a second one",
            );
        }
        let name = self.borrow(e.name().as_ref());
        if !name.starts_with(|c: char| c.is_alphabetic() || c == '_' || c == ':') {
            // `3 < 5`: no tag name can start so, so this `<` was meant as text, and
            // everything after it would be read as a tag; only this is reported.
            self.diags.push(
                Diagnostic::error(self.char_at(before), "a `<` in text starts a tag")
                    .with_help(AS_TEXT),
            );
            self.halted = true;
            return;
        }
        let name_start = before + 1;
        let el = Element {
            name_span: self.span(name_start, name_start + name.len()),
            name,
            span: self.span(before, after),
            attrs: self.attrs(e, before, after),
            children: Vec::new(),
        };
        self.stack.push(Open {
            el,
            start: before,
            has_elements: false,
        });
    }

    fn attrs(
        &mut self,
        e: &quick_xml::events::BytesStart<'a>,
        before: usize,
        after: usize,
    ) -> Vec<Attr<'a>> {
        let mut out: Vec<Attr<'a>> = Vec::new();
        // Duplicates are found below, where both places can be shown: by name, in a
        // hash map, as an element may have any number of attributes.
        let mut seen: rustc_hash::FxHashMap<Cow<'a, str>, usize> = Default::default();
        for a in e.attributes().with_checks(false) {
            let a = match a {
                Ok(a) => a,
                Err(err) => {
                    let tag = e.name().as_ref().to_string();
                    self.attr_error(&err, &tag, before, after);
                    break;
                }
            };
            let key = self.borrow(a.key.as_ref());
            let value_at = self.offset_of(&a.value).unwrap_or(before);
            if let Some(lt) = a.value.find('<') {
                self.diags.push(
                    Diagnostic::error(
                        self.span(value_at + lt, value_at + lt + 1),
                        "`<` cannot appear in an attribute value",
                    )
                    .with_help("write it as `&lt;`"),
                );
            }
            let key_at = self.offset_of(a.key.as_ref()).unwrap_or(before);
            let span = self.span(value_at, value_at + a.value.len());
            let text = if a.value.contains('&') {
                let mut text = Text::new(Cow::Borrowed(""), value_at, span);
                self.decode_into(&mut text, &a.value, value_at);
                text
            } else {
                Text::new(self.borrow(&a.value), value_at, span)
            };
            let attr = Attr {
                name_span: self.span(key_at, key_at + key.len()),
                name: key,
                value: text,
            };
            if let Some(&prev) = seen.get(&attr.name) {
                self.diags.push(
                    Diagnostic::error(
                        attr.name_span,
                        format!("attribute `{}` is given twice", attr.name),
                    )
                    .with_secondary(out[prev].name_span, "first given here"),
                );
                continue;
            }
            seen.insert(attr.name.clone(), out.len());
            out.push(attr);
        }
        out
    }

    fn attr_error(
        &mut self,
        err: &quick_xml::events::attributes::AttrError,
        tag: &str,
        before: usize,
        after: usize,
    ) {
        use quick_xml::events::attributes::AttrError as A;
        let (pos, msg) = match *err {
            A::ExpectedEq(p) => (
                p,
                "malformed XML: an attribute needs `=` and a quoted value",
            ),
            A::ExpectedValue(p) => (
                p,
                "malformed XML: an attribute is missing its value after `=`",
            ),
            A::UnquotedValue(p) => (
                p,
                "malformed XML: an attribute value must be quoted with `\"` or `'`",
            ),
            A::ExpectedQuote(p, _) => (
                p,
                "malformed XML: an attribute value is missing its closing quote",
            ),
            A::Duplicated(p, _) => (p, "malformed XML: an attribute is given twice"),
        };
        let mut d = Diagnostic::error(self.char_at((before + pos).min(after)), msg);
        // A `<` meant as text makes a tag of what follows it (`x<y and z`).
        if !crate::language::is_element(tag) {
            d = d
                .with_secondary(self.char_at(before), format!("`<{tag}` starts a tag"))
                .with_help(format!("if this `<` is text, not a tag: {AS_TEXT}"));
        }
        self.diags.push(d);
        self.malformed = true;
    }

    /// The span of the one character at (or just before) a byte offset.
    fn char_at(&self, at: usize) -> Span {
        let mut at = at.min(self.src.len());
        while !self.src.is_char_boundary(at) {
            at -= 1;
        }
        let len = self.src[at..].chars().next().map_or(0, char::len_utf8);
        self.span(at, at + len)
    }

    fn bom_len(&self) -> usize {
        if self.src.starts_with('\u{feff}') {
            3
        } else {
            0
        }
    }

    /// `s` as a slice of the source when it is one, as quick-xml's names and values
    /// are; else a copy.
    fn borrow(&self, s: &str) -> Cow<'a, str> {
        let src = self.src;
        match self
            .offset_of(s)
            .and_then(|off| src.get(off..off + s.len()))
        {
            Some(slice) => Cow::Borrowed(slice),
            None => Cow::Owned(s.to_string()),
        }
    }

    /// Where a slice borrowed from the source starts in it.
    fn offset_of(&self, s: &str) -> Option<usize> {
        let off = (s.as_ptr() as usize).wrapping_sub(self.src.as_ptr() as usize);
        (off <= self.src.len() && self.src.as_bytes()[off..].starts_with(s.as_bytes()))
            .then_some(off)
    }

    fn close(&mut self, after: usize) {
        if self.skipped > 0 {
            self.skipped -= 1;
            return;
        }
        let Some(Open { mut el, start, .. }) = self.stack.pop() else {
            return;
        };
        el.span = self.span(start, after);
        let streamed = self.stack.len() == 1 && self.entries.is_some();
        match self.stack.last_mut() {
            Some(parent) if streamed && parent.el.name == "library" => {
                parent.has_elements = true;
                if let Some(hand) = self.entries.as_mut() {
                    hand(el);
                }
            }
            Some(parent) => {
                parent.has_elements = true;
                parent.el.children.push(Node::Element(el));
            }
            None => {
                if self.root.is_none() {
                    self.root = Some(el);
                }
            }
        }
    }

    fn close_all(&mut self, at: usize) {
        self.flush_text(false);
        self.skipped = 0;
        while !self.stack.is_empty() {
            self.close(at);
        }
    }

    fn finish(&mut self) -> bool {
        self.flush_text(false);
        if let Some(open) = self.stack.last() {
            self.diags.push(
                Diagnostic::error(
                    open.el.name_span,
                    format!("element `<{}>` is never closed", open.el.name),
                )
                .with_help(format!("add `</{}>`", open.el.name)),
            );
            self.close_all(self.src.len());
            return false;
        }
        true
    }

    /// Character data borrowed from the source, which waits unread while it is the
    /// only run of the node.
    fn add_text(&mut self, raw: &'a str, at: usize) {
        if self.skipped > 0 {
            return;
        }
        if self.text.is_none() && self.pending.is_none() {
            self.pending = Some((raw, at));
            return;
        }
        self.take_pending();
        self.append_text(raw, at, true);
    }

    /// Character data that is not a slice of the source, or not to be decoded.
    fn add_copied(&mut self, raw: &str, at: usize, escaped: bool) {
        if self.skipped > 0 {
            return;
        }
        self.take_pending();
        self.append_text(raw, at, escaped);
    }

    /// Makes the pending run the node's text: still borrowed when it is the first run
    /// and has no references.
    fn take_pending(&mut self) {
        let Some((raw, at)) = self.pending.take() else {
            return;
        };
        if self.text.is_none() && !self.stack.is_empty() && !raw.contains('&') {
            self.text = Some(Text::new(
                Cow::Borrowed(raw),
                at,
                self.span(at, at + raw.len()),
            ));
        } else {
            self.append_text(raw, at, true);
        }
    }

    fn append_text(&mut self, raw: &str, at: usize, escaped: bool) {
        if self.stack.is_empty() {
            if !raw.trim().is_empty() {
                let lead = raw.len() - raw.trim_start().len();
                self.diags.error(
                    self.span(at + lead, at + raw.trim_end().len()),
                    "text outside the root element",
                );
            }
            return;
        }
        let mut text = self.text.take().unwrap_or_else(|| Text {
            span: self.span(at, at),
            ..Text::default()
        });
        if escaped {
            self.decode_into(&mut text, raw, at);
        } else {
            text.push_raw(raw, at);
        }
        text.span = text.span.to(self.span(at, at + raw.len()));
        self.text = Some(text);
    }

    fn add_entity(&mut self, name: &str, before: usize) {
        let raw = format!("&{name};");
        self.add_copied(&raw, before, true);
    }

    /// Ends the pending text node; `before_element` when a child element follows.
    /// Whitespace beside elements only lays the file out and is not kept: before a child
    /// element, or after one (streamed entries count, though the tree does not keep
    /// them).
    fn flush_text(&mut self, before_element: bool) {
        let beside_elements =
            before_element || self.stack.last().is_some_and(|open| open.has_elements);
        let is_layout = |s: &str| s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
        if let Some((raw, _)) = self.pending {
            if beside_elements && is_layout(raw) {
                self.pending = None;
                return;
            }
        }
        self.take_pending();
        let Some(t) = self.text.take() else {
            return;
        };
        let Some(open) = self.stack.last_mut() else {
            return;
        };
        if !(beside_elements && is_layout(&t.value)) {
            open.el.children.push(Node::Text(t));
        }
    }

    /// Decodes entity and character references of `raw` (which starts at source
    /// offset `at`) onto the end of `text`.
    fn decode_into(&mut self, text: &mut Text, raw: &str, at: usize) {
        let mut rest = raw;
        let mut pos = at;
        while let Some(amp) = rest.find('&') {
            text.push_raw(&rest[..amp], pos);
            pos += amp;
            rest = &rest[amp..];
            let Some(semi) = rest.find(';').filter(|&s| s <= 12) else {
                self.diags.push(
                    Diagnostic::error(self.span(pos, pos + 1), "`&` does not start a reference")
                        .with_help("write a literal ampersand as `&amp;`"),
                );
                text.push_raw("&", pos);
                pos += 1;
                rest = &rest[1..];
                continue;
            };
            let name = &rest[1..semi];
            let decoded = decode_entity(name);
            let mut buf = String::new();
            match decoded {
                Some(c) => buf.push(c),
                None => {
                    self.diags.push(
                        Diagnostic::error(
                            self.span(pos, pos + semi + 1),
                            format!("unknown entity `&{name};`"),
                        )
                        .with_help("XML knows &lt; &gt; &amp; &quot; &apos; and &#N; / &#xN;"),
                    );
                    buf = format!("&{name};");
                }
            }
            // The decoded character maps onto the reference's first byte.
            text.map.anchor(text.value.len(), pos);
            text.value.to_mut().push_str(&buf);
            pos += semi + 1;
            rest = &rest[semi + 1..];
            text.map.anchor(text.value.len(), pos);
        }
        text.push_raw(rest, pos);
    }

    fn syntax_error(&mut self, e: &quick_xml::Error, at: usize) {
        use quick_xml::errors::IllFormedError as I;
        let mut d = Diagnostic::error(self.char_at(at), describe_error(e));
        match e {
            quick_xml::Error::IllFormed(I::UnclosedReference) => d = d.with_help(AS_TEXT),
            // The element closed wrongly may be text that a `<` made a tag of
            // (`List<String>`).
            quick_xml::Error::IllFormed(I::MismatchedEndTag { expected, .. })
                if !crate::language::is_element(expected) =>
            {
                if let Some(open) = self.stack.last() {
                    d = d
                        .with_secondary(
                            self.char_at(open.start),
                            format!("`<{expected}>` opens here"),
                        )
                        .with_help(format!("if this `<` is text, not a tag: {AS_TEXT}"));
                }
            }
            _ => {}
        }
        self.diags.push(d);
    }
}
