//! SHA-256 in lowercase hex: what names a bundle, a batch's rows, a journal's requests,
//! a cassette's entries and the reply cache's keys. These strings are stored in files
//! that outlive a run (journals, cassettes, cache folders, NATS records), so their form
//! never changes: 64 lowercase hex digits.

use sha2::{Digest, Sha256};
use std::io;

/// The SHA-256 of `bytes`, in lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let mut hash = Sha256Hex::new();
    hash.update(bytes);
    hash.hex()
}

/// A SHA-256 fed in parts: lines as they are read, or JSON written straight into it
/// (`io::Write`), so that the text hashed is never built whole.
#[derive(Clone, Default)]
pub(crate) struct Sha256Hex(Sha256);

impl Sha256Hex {
    pub(crate) fn new() -> Sha256Hex {
        Sha256Hex::default()
    }

    pub(crate) fn update(&mut self, bytes: impl AsRef<[u8]>) {
        self.0.update(bytes.as_ref());
    }

    /// The hash of what was fed, as bytes.
    pub(crate) fn bytes(self) -> [u8; 32] {
        self.0.finalize().into()
    }

    /// The hash of what was fed, in lowercase hex.
    pub(crate) fn hex(self) -> String {
        hex(&self.bytes())
    }
}

impl io::Write for Sha256Hex {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hex_is_the_one_sha256sum_prints() {
        // printf 'abc' | sha256sum; printf '' | sha256sum
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn every_byte_is_the_two_lowercase_digits_format_writes() {
        let all: Vec<u8> = (0..=255).collect();
        let formatted: String = all.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&all), formatted);
    }

    #[test]
    fn a_hash_fed_in_parts_or_written_into_is_the_hash_of_the_whole() {
        let mut parts = Sha256Hex::new();
        parts.update("a");
        parts.update(b"bc");
        let mut written = Sha256Hex::new();
        serde_json::to_writer(&mut written, &"abc").expect("a string serializes");
        assert_eq!(parts.hex(), sha256_hex(b"abc"));
        assert_eq!(written.hex(), sha256_hex(b"\"abc\""));
    }
}
