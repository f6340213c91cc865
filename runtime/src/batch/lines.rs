//! The inputs of a batch, line by line, each line read no further than a cap: a file
//! from elsewhere may hold one line of gigabytes, and reading it whole would take all
//! the memory there is (DESIGN §18).

use std::io::{self, BufRead, Read};

/// Bytes one input line may have, as `--arg NAME=@FILE` may.
pub(crate) const MAX_ROW_BYTES: usize = 64 << 20;

/// One line of the inputs: its text, or why it cannot be a row.
pub(super) type Line = Result<String, String>;

/// The lines of `reader` with their numbers (from 1), each at most `cap` bytes.
pub struct Lines<R> {
    reader: R,
    cap: usize,
    number: u64,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R, cap: usize) -> Lines<R> {
        Lines {
            reader,
            cap,
            number: 0,
        }
    }

    /// Throws away the rest of a line that passed the cap.
    fn skip_line(&mut self) -> io::Result<()> {
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(());
            }
            match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.reader.consume(i + 1);
                    return Ok(());
                }
                None => {
                    let n = buf.len();
                    self.reader.consume(n);
                }
            }
        }
    }
}

impl<R: BufRead> Iterator for Lines<R> {
    type Item = io::Result<(u64, Line)>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut bytes = Vec::new();
        let limit = self.cap as u64 + 1;
        match self
            .reader
            .by_ref()
            .take(limit)
            .read_until(b'\n', &mut bytes)
        {
            Ok(0) => return None,
            Ok(_) => {}
            Err(e) => return Some(Err(e)),
        }
        self.number += 1;
        let ended = bytes.last() == Some(&b'\n');
        if ended {
            bytes.pop();
            if bytes.last() == Some(&b'\r') {
                bytes.pop();
            }
        }
        let line = if bytes.len() > self.cap {
            if let Err(e) = self.skip_line() {
                return Some(Err(e));
            }
            Err(format!(
                "line {}: longer than {} bytes",
                self.number, self.cap
            ))
        } else {
            String::from_utf8(bytes).map_err(|_| format!("line {}: not UTF-8", self.number))
        };
        Some(Ok((self.number, line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_past_the_cap_is_refused_without_being_read_and_the_next_one_is_read() {
        let text = format!("{{\"a\":1}}\r\n{}\n{{\"b\":2}}\n\u{fffd}", "x".repeat(100));
        let mut bytes = text.into_bytes();
        bytes.extend([b'\n', 0xff, b'\n']);
        let lines: Vec<(u64, Line)> = Lines::new(&bytes[..], 16).map(|l| l.unwrap()).collect();
        assert_eq!(lines[0], (1, Ok("{\"a\":1}".to_string())));
        assert_eq!(
            lines[1],
            (2, Err("line 2: longer than 16 bytes".to_string()))
        );
        assert_eq!(lines[2], (3, Ok("{\"b\":2}".to_string())));
        assert_eq!(lines[3], (4, Ok("\u{fffd}".to_string())));
        assert_eq!(lines[4], (5, Err("line 5: not UTF-8".to_string())));
        assert_eq!(lines.len(), 5);
    }
}
