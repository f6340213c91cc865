//! API keys out of `tvm`'s environment block before anything runs (DESIGN §18), and
//! the NATS token and password with them ([`SECRET_VARS`]: "keys" below).
//!
//! `/proc/PID/environ` shows the environment a process was started with, whatever it
//! changes later, and root reads it of any process: marking the process non-dumpable
//! stops other users only, so a script run as root would find the keys there. So when
//! a key is in the environment, `tvm` starts itself again with `exec` (the same
//! process: its pid, parent, exit code and signals stay as they were) without the key
//! variables, and hands the keys over on a pipe whose descriptor is named in
//! [`FD_VAR`]. The new image reads them and closes the descriptor before anything
//! else, so no script inherits it and nothing is left in the pipe.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::CommandExt;
use tv_runtime::config::env::SECRET_VARS;

/// The variable naming the descriptor the keys come on; set by `tvm` for itself only.
const FD_VAR: &str = "TVM_KEYS_FD";

/// The most the keys may take together when they are read back.
const MAX_BYTES: u64 = 64 << 10;

/// The keys (variable, value) this process holds: those handed over by the `tvm` it
/// replaced, when it is the second image. When keys are in the environment, this does
/// not return: the process goes on as a new image without them (an error says why it
/// could not).
pub(crate) fn take() -> Result<Vec<(String, String)>, String> {
    let mut keys = received()?;
    let mut found = Vec::new();
    for name in SECRET_VARS {
        let Some(value) = std::env::var_os(name) else {
            continue;
        };
        let value = value
            .into_string()
            .map_err(|_| format!("{name} in the environment is not text (UTF-8)"))?;
        if !value.trim().is_empty() {
            found.push((name.to_string(), value));
        }
    }
    if found.is_empty() {
        return Ok(keys);
    }
    keys.retain(|(name, _)| !found.iter().any(|(n, _)| n == name));
    keys.extend(found);
    let e = reexec(&keys);
    if e.kind() == std::io::ErrorKind::NotFound {
        // No /proc: nothing can read an environment block through it either.
        for name in SECRET_VARS {
            std::env::remove_var(name);
        }
        return Ok(keys);
    }
    Err(format!(
        "cannot start tvm again without the API keys in its environment (where scripts \
         run as root could read them): {e}"
    ))
}

/// Writes the keys into a pipe and replaces this process with `tvm` again, without the
/// key variables and with the pipe's reading end open across the exec. Returns only on
/// failure.
fn reexec(keys: &[(String, String)]) -> std::io::Error {
    let run = || -> std::io::Result<std::convert::Infallible> {
        let (reader, mut writer) = std::io::pipe()?;
        // Nobody reads before the exec: a write that does not fit must fail, not wait.
        nix::fcntl::fcntl(
            &writer,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        )?;
        writer.write_all(&encode(keys)).map_err(|e| {
            std::io::Error::new(e.kind(), format!("the keys do not fit in a pipe: {e}"))
        })?;
        drop(writer);
        // Pipes are opened close-on-exec; this end must reach the new image.
        nix::fcntl::fcntl(
            &reader,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
        )?;
        let mut args = std::env::args_os();
        let mut cmd = std::process::Command::new("/proc/self/exe");
        if let Some(name) = args.next() {
            cmd.arg0(name);
        }
        cmd.args(args);
        for name in SECRET_VARS {
            cmd.env_remove(name);
        }
        cmd.env(FD_VAR, reader.as_raw_fd().to_string());
        Err(cmd.exec())
    };
    match run() {
        Err(e) => e,
        Ok(never) => match never {},
    }
}

/// The keys the `tvm` this process replaced handed over, if it did; the descriptor is
/// closed and [`FD_VAR`] removed whatever happens.
fn received() -> Result<Vec<(String, String)>, String> {
    let Some(given) = std::env::var_os(FD_VAR) else {
        return Ok(Vec::new());
    };
    std::env::remove_var(FD_VAR);
    let fd = given
        .to_str()
        .and_then(|s| s.parse::<i32>().ok())
        .filter(|fd| *fd > 2)
        .ok_or_else(|| format!("{FD_VAR} does not name a descriptor"))?;
    // Opened again through /proc, which needs no unsafe code, then the inherited
    // descriptor is closed: the pipe stays readable through the new one.
    let opened = std::fs::File::open(format!("/proc/self/fd/{fd}"));
    let _ = nix::unistd::close(fd);
    let file = opened.map_err(|e| format!("cannot read the keys handed over: {e}"))?;
    let is_pipe = file.metadata().is_ok_and(|m| m.file_type().is_fifo());
    if !is_pipe {
        return Err(format!("{FD_VAR} does not name a pipe"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the keys handed over: {e}"))?;
    decode(&bytes).ok_or_else(|| "the keys handed over are damaged".to_string())
}

/// `NAME\0VALUE\0` for each key: no environment variable holds a NUL.
fn encode(keys: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in keys {
        for part in [name, value] {
            out.extend_from_slice(part.as_bytes());
            out.push(0);
        }
    }
    out
}

/// The keys of [`encode`]; `None` when the bytes are not its output (too long, cut, or
/// naming another variable).
fn decode(bytes: &[u8]) -> Option<Vec<(String, String)>> {
    if bytes.len() as u64 > MAX_BYTES {
        return None;
    }
    let parts: Vec<&[u8]> = bytes.strip_suffix(&[0])?.split(|b| *b == 0).collect();
    parts
        .chunks(2)
        .map(|pair| match pair {
            [name, value] => {
                let name = std::str::from_utf8(name).ok()?;
                SECRET_VARS.contains(&name).then_some(())?;
                Some((name.to_string(), String::from_utf8(value.to_vec()).ok()?))
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_back_as_they_were_handed_over_and_nothing_else_is_taken() {
        let keys = vec![
            ("OPENAI_API_KEY".to_string(), "sk-a b=c$d".to_string()),
            ("ANTHROPIC_API_KEY".to_string(), "sk-ant-é".to_string()),
        ];
        assert_eq!(decode(&encode(&keys)), Some(keys));
        assert_eq!(decode(b""), None);
        assert_eq!(decode(b"OPENAI_API_KEY\0sk"), None);
        assert_eq!(decode(b"PATH\0/bin\0"), None);
        assert_eq!(decode(b"OPENAI_API_KEY\0"), None);
    }
}
