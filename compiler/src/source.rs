//! Source files, spans and line/column positions.
//!
//! A [`Span`] is a file id plus a byte range. Every syntax node carries one, and the
//! diagnostics turn it into `path:line:col` only when they are printed, so spans stay
//! cheap to copy and to compare.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

/// Index of a file in a [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A byte range inside one source file.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, range: Range<usize>) -> Self {
        Span {
            file,
            start: saturate(range.start),
            end: saturate(range.end.max(range.start)),
        }
    }

    pub fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }

    /// The smallest span covering both; spans of different files keep `self`.
    pub fn to(self, other: Span) -> Span {
        if self.file != other.file {
            return self;
        }
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// A sub-range given relative to the start of this span.
    pub fn slice(self, range: Range<usize>) -> Span {
        let base = self.start as usize;
        Span::new(self.file, base + range.start..base + range.end)
    }
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}..{}", self.file.0, self.start, self.end)
    }
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Where [`SourceFile::line_col_from`] last was: a 0-based line, and the byte offset
/// and 0-based character column of a place on it.
#[derive(Clone, Copy, Debug, Default)]
pub struct LineCursor {
    valid: bool,
    line: usize,
    offset: usize,
    col: usize,
}

impl LineCursor {
    /// The offset the cursor was last moved to, if it was.
    pub fn offset(&self) -> Option<usize> {
        self.valid.then_some(self.offset)
    }
}

/// One loaded file: its display path, the name a bundle records, its text and where its
/// lines start.
#[derive(Debug)]
pub struct SourceFile {
    /// The path as the user wrote it (or as a directory walk found it): diagnostics
    /// print it.
    pub path: PathBuf,
    /// The name the bundle's source map records: the same whatever the spelling of the
    /// path or the working directory (see [`crate::driver::bundle_names`]).
    pub name: String,
    pub text: String,
    /// A standard template, linked in by the compiler rather than given by the user.
    pub std: bool,
    line_starts: Vec<usize>,
    /// Columns are byte counts in an all-ASCII text, so nothing needs counting.
    ascii: bool,
    /// Characters before each line start, counted the first time a character offset
    /// is asked for (only diagnostics ask, and only of a text that is not ASCII).
    line_chars: std::sync::OnceLock<Vec<usize>>,
}

impl SourceFile {
    pub fn new(path: PathBuf, text: String) -> Self {
        let line_starts = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1))
            .collect();
        SourceFile {
            name: path.display().to_string(),
            path,
            ascii: text.is_ascii(),
            text,
            std: false,
            line_starts,
            line_chars: std::sync::OnceLock::new(),
        }
    }

    /// The character offset of a byte offset (rounded down to a character boundary).
    pub fn char_offset(&self, offset: usize) -> usize {
        let mut offset = offset.min(self.text.len());
        if self.ascii {
            return offset;
        }
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line_of(offset, None);
        let before = self.line_chars.get_or_init(|| {
            let mut total = 0;
            let mut out = Vec::with_capacity(self.line_starts.len());
            for pair in self.line_starts.windows(2) {
                out.push(total);
                total += self.text[pair[0]..pair[1]].chars().count();
            }
            out.push(total);
            out
        });
        let start = self.line_starts[line];
        before[line] + self.text[start..offset].chars().count()
    }

    /// 1-based line and column of a byte offset; columns count characters.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.line_of(offset, None);
        let start = self.line_starts[line];
        let col = self.chars_in(start..offset).unwrap_or(offset - start);
        (line + 1, col + 1)
    }

    /// [`SourceFile::line_col`] for offsets met mostly near one another, as code
    /// generation meets a function's spans: the line is looked for just after the
    /// cursor's first, and on the cursor's line the column is counted from the cursor
    /// (forwards or back) instead of from the line's start.
    pub fn line_col_from(&self, cursor: &mut LineCursor, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line_end = self.line_starts.get(cursor.line + 1).copied();
        let on_line = cursor.valid
            && self
                .line_starts
                .get(cursor.line)
                .is_some_and(|&s| s <= offset)
            && line_end.is_none_or(|end| offset < end);
        if !on_line {
            let line = self.line_of(offset, cursor.valid.then_some(cursor.line));
            *cursor = LineCursor {
                valid: true,
                line,
                offset: self.line_starts[line],
                col: 0,
            };
        }
        let moved = if offset >= cursor.offset {
            self.chars_in(cursor.offset..offset).map(|n| cursor.col + n)
        } else {
            self.chars_in(offset..cursor.offset)
                .and_then(|n| cursor.col.checked_sub(n))
        };
        let start = self.line_starts[cursor.line];
        cursor.col = moved.unwrap_or_else(|| {
            // Not on a character boundary: count from the line's start, as `line_col`.
            self.chars_in(start..offset).unwrap_or(offset - start)
        });
        cursor.offset = offset;
        (cursor.line + 1, cursor.col + 1)
    }

    /// The 0-based line holding `offset`, looked for first in the few lines after
    /// line `near`, where code generation's next offset usually is.
    fn line_of(&self, offset: usize, near: Option<usize>) -> usize {
        if let Some(from) = near.filter(|&l| self.line_starts.get(l).is_some_and(|&s| s <= offset))
        {
            let ahead = &self.line_starts[from + 1..];
            let window = &ahead[..ahead.len().min(8)];
            let k = window.partition_point(|&s| s <= offset);
            if k < window.len() {
                return from + k;
            }
        }
        // The first line starts at 0, so at least one start is at or before `offset`.
        self.line_starts.partition_point(|&s| s <= offset) - 1
    }

    /// Characters in a byte range of the text (`None` if it does not fall on character
    /// boundaries).
    fn chars_in(&self, range: std::ops::Range<usize>) -> Option<usize> {
        let s = self.text.get(range)?;
        Some(if self.ascii {
            s.len()
        } else {
            s.chars().count()
        })
    }

    /// The file stem, used to name a root `<task>` that has no `name`.
    pub fn stem(&self) -> String {
        self.path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Every file of one program.
#[derive(Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, path: impl Into<PathBuf>, text: impl Into<String>) -> FileId {
        let id = FileId(saturate(self.files.len()));
        self.files.push(SourceFile::new(path.into(), text.into()));
        id
    }

    /// Adds a standard template's source.
    pub fn add_std(&mut self, path: &str, text: &str) -> FileId {
        let id = self.add(path, text);
        self.files[id.0 as usize].std = true;
        id
    }

    /// Records `name` as the bundle's name of file `id`.
    pub fn set_name(&mut self, id: FileId, name: String) {
        self.files[id.0 as usize].name = name;
    }

    pub fn get(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    pub fn files(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, f)| (FileId(saturate(i)), f))
    }

    /// `path:line:col` of the start of a span.
    pub fn location(&self, span: Span) -> String {
        let file = self.get(span.file);
        let (line, col) = file.line_col(span.start as usize);
        format!("{}:{}:{}", file.path.display(), line, col)
    }
}

/// A value with the span it was read from.
#[derive(Clone, Debug, PartialEq)]
pub struct Spanned<T> {
    pub node: T,
    pub span: Span,
}

impl<T> Spanned<T> {
    pub fn new(node: T, span: Span) -> Self {
        Spanned { node, span }
    }

    /// The same place, holding `f` of what it held.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Spanned<U> {
        Spanned::new(f(self.node), self.span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn character_offsets_count_every_character_before_the_byte() {
        let f = SourceFile::new("a.xml".into(), "é\nçd\nx".into());
        let bytes: Vec<usize> = (0..=f.text.len()).collect();
        let chars: Vec<usize> = bytes.iter().map(|&b| f.char_offset(b)).collect();
        // é and ç take two bytes; an offset inside one rounds down to its start.
        assert_eq!(chars, [0, 0, 1, 2, 2, 3, 4, 5, 6]);
        assert_eq!(f.char_offset(1000), 6);
        let ascii = SourceFile::new("b.xml".into(), "ab\ncd".into());
        assert_eq!(ascii.char_offset(4), 4);
    }

    #[test]
    fn line_and_column_count_characters_from_one() {
        let f = SourceFile::new("a.xml".into(), "ab\nçd\n".into());
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(3), (2, 1));
        assert_eq!(f.line_col(5), (2, 2));
        assert_eq!(f.line_col(100), (3, 1));
        let mut cursor = LineCursor::default();
        for offset in [0, 1, 3, 5, 4, 100, 0, 5] {
            assert_eq!(
                f.line_col_from(&mut cursor, offset),
                f.line_col(offset),
                "{offset}"
            );
        }
    }

    #[test]
    fn an_all_ascii_file_gives_the_same_columns_as_one_with_other_characters() {
        let ascii = SourceFile::new("a.xml".into(), "ab\ncd x\n".into());
        let other = SourceFile::new("b.xml".into(), "ab\nçd x\n".into());
        let mut cursors = (LineCursor::default(), LineCursor::default());
        // `x` is the fourth character of line 2 in both files, one byte further in `other`.
        assert_eq!(ascii.line_col(6), (2, 4));
        assert_eq!(other.line_col(7), (2, 4));
        assert_eq!(ascii.line_col_from(&mut cursors.0, 6), (2, 4));
        assert_eq!(other.line_col_from(&mut cursors.1, 7), (2, 4));
        assert_eq!(ascii.line_col_from(&mut cursors.0, 3), (2, 1));
        assert_eq!(other.line_col_from(&mut cursors.1, 3), (2, 1));
    }

    /// Line and column counted the slow way, character by character.
    fn counted(text: &str, offset: usize) -> (usize, usize) {
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }

    #[test]
    fn the_cursor_finds_lines_far_ahead_and_behind_in_ascii_and_other_text() {
        for unit in ["ab{{x}}\n", "é{{ü}}\n\n"] {
            let text = unit.repeat(40);
            let f = SourceFile::new("a.xml".into(), text.clone());
            let boundaries: Vec<usize> = (0..=text.len())
                .filter(|&i| text.is_char_boundary(i))
                .collect();
            let mut cursor = LineCursor::default();
            // Steps of 1, 5, 23 and 61 places, wrapping: near and far, ahead and behind.
            for step in [1, 5, 23, 61] {
                for k in 0..boundaries.len() {
                    let offset = boundaries[(k * step) % boundaries.len()];
                    let want = counted(&text, offset);
                    assert_eq!(f.line_col(offset), want, "{offset}");
                    assert_eq!(f.line_col_from(&mut cursor, offset), want, "{offset}");
                }
            }
        }
    }

    #[test]
    fn the_cursor_agrees_with_a_fresh_count_moving_either_way_along_a_line() {
        let text = "<a>é{{x}} ü {{f(y, \"ß\")}}\n  {{z}} done\n";
        let f = SourceFile::new("a.xml".into(), text.into());
        let mut cursor = LineCursor::default();
        let mut offsets: Vec<usize> = (0..=text.len()).collect();
        // Forwards, backwards, and zig-zag, as code generation meets spans.
        offsets.extend((0..=text.len()).rev());
        offsets.extend((0..=text.len()).map(|i| (i * 7) % (text.len() + 1)));
        for offset in offsets {
            assert_eq!(
                f.line_col_from(&mut cursor, offset),
                f.line_col(offset),
                "{offset}"
            );
        }
    }
}
