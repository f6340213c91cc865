//! `<test>` elements of a `<library>`: a workflow's tests, written beside it as data
//! (DESIGN §17). They are checked with the program and run by `tvm test`; they never
//! reach the bundle.

use super::build::Builder;
use super::schema;
use super::Ident;
use crate::diag::Diagnostic;
use crate::language::{self, ElementId as E, Status, Words};
use crate::source::{Span, Spanned};
use crate::xml::Element;

/// One test: an entry point, its arguments, the replies that stand in for the model,
/// and what the result must show.
#[derive(Clone, Debug)]
pub struct TestCase {
    pub name: Spanned<String>,
    pub entry: Ident,
    pub args: Vec<TestArg>,
    pub replies: Vec<Reply>,
    /// Cassettes answering what no `<reply>` matches, in order, by path relative to
    /// the test's file.
    pub cassettes: Vec<Spanned<String>>,
    pub expects: Vec<Expect>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct TestArg {
    pub name: Ident,
    pub value: TestValue,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum TestValue {
    /// The element's text, trimmed; read as JSON for parameters typed other than string.
    Text(String),
    /// `file="..."`: a file's text, verbatim, by path relative to the test's file.
    File(Spanned<String>),
}

/// `<reply match="...">text</reply>`: the reply to the first request whose text holds
/// `match` (every request when it is absent).
#[derive(Clone, Debug)]
pub struct Reply {
    pub matches: Option<String>,
    pub text: String,
    pub span: Span,
}

/// `<expect .../>`: one check of the result.
#[derive(Clone, Debug)]
pub struct Expect {
    pub check: Check,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Check {
    /// The result's status (`COMPLETE`, `FAILED`, `CONTINUATION`).
    Status(String),
    /// The value at a path of the result equals the text (read as JSON when it is JSON).
    Equals { path: String, value: String },
    /// The value at a path holds the text: a substring of a string, an element of an
    /// array, a key of an object.
    Contains { path: String, value: String },
    /// The path leads to a value (not `null`).
    Exists { path: String },
}

impl Builder<'_> {
    pub(super) fn test_case(&mut self, el: &Element) -> Option<TestCase> {
        schema::check_attrs(el, E::Test, self.diags);
        schema::no_text(el, self.diags);
        let (Some(name), Some(entry)) = (el.attr("name"), el.attr("entry")) else {
            self.diags.push(
                Diagnostic::error(el.head(), "a `<test>` needs a `name` and an `entry`")
                    .with_help("<test name=\"what it shows\" entry=\"template_or_task\">"),
            );
            return None;
        };
        let name = Spanned::new(name.value.trimmed().to_string(), name.value.trimmed_span());
        if name.node.is_empty() {
            self.diags.error(name.span, "a test's name cannot be empty");
        }
        let mut test = TestCase {
            name,
            entry: self.ident_attr(&entry.value, "entry point"),
            args: Vec::new(),
            replies: Vec::new(),
            cassettes: Vec::new(),
            expects: Vec::new(),
            span: el.span,
        };
        let entry = language::element(E::Test);
        for child in el.elements() {
            match entry.child(&child.name) {
                Some(E::TestArg) => test.args.extend(self.test_arg(child)),
                Some(E::Reply) => test.replies.push(self.reply(child)),
                Some(E::Cassette) => test.cassettes.extend(self.cassette(child)),
                Some(E::Expect) => test.expects.extend(self.expect(child)),
                _ => schema::unknown_element(child, entry.name, entry.children(), self.diags),
            }
        }
        Some(test)
    }

    fn test_arg(&mut self, el: &Element) -> Option<TestArg> {
        schema::check_attrs(el, E::TestArg, self.diags);
        schema::no_elements(el, self.diags);
        let Some(name) = el.attr("name") else {
            self.diags
                .error(el.head(), "an `<arg>` of a test needs a `name`");
            return None;
        };
        let name = self.ident_attr(&name.value, "argument name");
        let text = el.text();
        let value = match el.attr("file") {
            Some(file) => {
                if !text.trimmed().is_empty() {
                    self.diags.error(
                        text.trimmed_span(),
                        "an `<arg>` with `file` takes its value from the file, so it holds no text",
                    );
                }
                TestValue::File(self.relative_path(&file.value))
            }
            None => TestValue::Text(text.trimmed().to_string()),
        };
        Some(TestArg {
            name,
            value,
            span: el.span,
        })
    }

    fn reply(&mut self, el: &Element) -> Reply {
        schema::check_attrs(el, E::Reply, self.diags);
        schema::no_elements(el, self.diags);
        let matches = el.attr("match").map(|m| m.value.value.to_string());
        if matches.as_deref() == Some("") {
            self.diags.push(
                Diagnostic::error(el.head(), "an empty `match` matches every request")
                    .with_help("leave `match` out to answer every request"),
            );
        }
        Reply {
            matches,
            text: el.text().trimmed().to_string(),
            span: el.span,
        }
    }

    fn cassette(&mut self, el: &Element) -> Option<Spanned<String>> {
        schema::check_attrs(el, E::Cassette, self.diags);
        schema::no_elements(el, self.diags);
        schema::no_text(el, self.diags);
        match el.attr("path") {
            Some(p) => Some(self.relative_path(&p.value)),
            None => {
                self.diags.error(el.head(), "a `<cassette>` needs a `path`");
                None
            }
        }
    }

    /// A path a test names: relative, below the test's own folder, so that a test set
    /// runs the same from any clone and reads nothing else.
    fn relative_path(&mut self, text: &crate::xml::Text) -> Spanned<String> {
        let path = Spanned::new(text.trimmed().to_string(), text.trimmed_span());
        let p = std::path::Path::new(&path.node);
        let escapes = p.components().any(|c| {
            !matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
        if path.node.is_empty() || escapes {
            self.diags.push(
                Diagnostic::error(
                    path.span,
                    format!("`{}` is not a path below the test's folder", path.node),
                )
                .with_help("a test reads files by relative paths without `..`, from the folder of its file"),
            );
        }
        path
    }

    fn expect(&mut self, el: &Element) -> Option<Expect> {
        schema::check_attrs(el, E::Expect, self.diags);
        schema::no_elements(el, self.diags);
        schema::no_text(el, self.diags);
        let attr = |n: &str| el.attr(n).map(|a| a.value.value.to_string());
        let check = match (
            attr("status"),
            attr("path"),
            attr("equals"),
            attr("contains"),
        ) {
            (Some(status), None, None, None) => {
                if Status::parse(&status).is_none() {
                    let span = el.attr("status").map_or(el.head(), |a| a.value.span);
                    let statuses: Vec<&str> = Status::LIST.names().collect();
                    self.diags.push(
                        Diagnostic::error(span, format!("`{status}` is not a result status"))
                            .with_help(format!("a status is one of {}", statuses.join(", "))),
                    );
                }
                Check::Status(status)
            }
            (None, Some(path), Some(value), None) => Check::Equals { path, value },
            (None, Some(path), None, Some(value)) => Check::Contains { path, value },
            (None, Some(path), None, None) => Check::Exists { path },
            _ => {
                self.diags.push(
                    Diagnostic::error(el.head(), "an `<expect>` checks one thing")
                        .with_help("write status=\"...\", or a path with at most one of equals=\"...\" and contains=\"...\""),
                );
                return None;
            }
        };
        if let Check::Equals { path, .. } | Check::Contains { path, .. } | Check::Exists { path } =
            &check
        {
            if path.trim().is_empty() || path.split('.').any(str::is_empty) {
                let span = el.attr("path").map_or(el.head(), |a| a.value.span);
                self.diags.push(
                    Diagnostic::error(span, format!("`{path}` is not a path into the result"))
                        .with_help(
                            "a path is keys and indexes joined by dots: `parsedContent.findings.0`",
                        ),
                );
            }
        }
        Some(Expect {
            check,
            span: el.span,
        })
    }
}
