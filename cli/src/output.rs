//! Writing to stdout and stderr without panicking: `tvm run ... | head -1` closes the
//! pipe before the result is written, and a full disk refuses it.

use std::io::{ErrorKind, Write};

/// Prints to stdout. A reader that went away is no error: the rest is not printed and
/// the exit code stays what it would have been. Any other failure (a full disk) is an
/// error of its own.
pub fn print(text: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => Err(format!("cannot write the output: {e}")),
        _ => Ok(()),
    }
}

/// Prints to stderr; a closed or full stderr loses the message, never the run.
pub fn say(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}
