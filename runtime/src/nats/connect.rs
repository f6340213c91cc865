//! How `tvm batch --nats` and `tvm worker` reach the server: its URL, the credentials
//! it asks for and its TLS, as one value that every command builds the same way.
//!
//! Secrets (a password, a token, a `.creds` file's seed) are never shown: a user and
//! password written in the URL (`nats://USER:PASSWORD@HOST`) are taken out of it before
//! the client library sees it, and every message names the URL without them.

use super::{NatsError, NatsKind};
use async_nats::ConnectOptions;
use percent_encoding::percent_decode_str;
use std::path::PathBuf;
use std::time::Duration;

/// Where the server is and how to prove who we are to it. Not `Debug`: it holds
/// secrets.
#[derive(Clone, Default)]
pub struct Connect {
    /// The server's URL as given, perhaps with a user and password in it.
    pub url: String,
    /// A `.creds` file (a user JWT and its NKey seed), as `nsc` writes it.
    pub creds: Option<PathBuf>,
    pub token: Option<String>,
    pub user: Option<String>,
    pub password: Option<String>,
    /// The certificate authority (PEM) that signed the server's certificate, when it is
    /// not one the system trusts.
    pub ca: Option<PathBuf>,
    /// A client certificate and its key (PEM), for a server that asks for one.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

/// The server's URLs without user or password, and what they carried.
struct Parsed {
    clean: String,
    user: Option<String>,
    password: Option<String>,
    tls: bool,
}

impl Connect {
    pub fn new(url: &str) -> Connect {
        Connect {
            url: url.to_string(),
            ..Connect::default()
        }
    }

    /// The URL as it may be shown: without a user or password.
    pub fn shown(&self) -> String {
        parse(&self.url).map_or_else(|_| "(a URL that cannot be read)".into(), |p| p.clean)
    }

    /// The client library's options, and the URLs to give it.
    pub(super) async fn options(&self) -> Result<(ConnectOptions, String), NatsError> {
        let parsed = parse(&self.url)?;
        let shown = &parsed.clean;
        let options = ConnectOptions::new()
            .name("tvm")
            .connection_timeout(Duration::from_secs(5));
        let options = self.auth(options, &parsed).await?;
        let tls = parsed.tls || self.ca.is_some() || self.cert.is_some();
        let mut options = options.require_tls(tls);
        if tls {
            // The client library builds its TLS settings with the process's provider.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        if let Some(ca) = &self.ca {
            readable(ca, "--nats-ca")?;
            options = options.add_root_certificates(ca.clone());
        }
        match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => {
                readable(cert, "--nats-cert")?;
                readable(key, "--nats-key")?;
                options = options.add_client_certificate(cert.clone(), key.clone());
            }
            (None, None) => {}
            _ => {
                return Err(unusable(format!(
                    "--nats {shown}: a client certificate needs both --nats-cert and --nats-key"
                )))
            }
        }
        Ok((options, parsed.clean))
    }

    /// Adds the one way of proving who we are that was given.
    async fn auth(
        &self,
        options: ConnectOptions,
        parsed: &Parsed,
    ) -> Result<ConnectOptions, NatsError> {
        let shown = &parsed.clean;
        let user = pick(&self.user, &parsed.user, "user", shown)?;
        let password = pick(&self.password, &parsed.password, "password", shown)?;
        // `nats://TOKEN@HOST`: a user with no password is a token, as other NATS
        // clients read it.
        let (user, token) = match (user, password.is_none(), &self.token) {
            (Some(t), true, None) if self.user.is_none() => (None, Some(t)),
            (u, _, t) => (u, t.clone()),
        };
        let ways = [self.creds.is_some(), token.is_some(), user.is_some()];
        if ways.iter().filter(|w| **w).count() > 1 {
            return Err(unusable(format!(
                "--nats {shown}: give one way to sign in: --nats-creds, a token or a user and password"
            )));
        }
        if let Some(creds) = &self.creds {
            readable(creds, "--nats-creds")?;
            return options.credentials_file(creds).await.map_err(|e| {
                unusable(format!(
                    "--nats-creds {}: not a NATS credentials file ({e})",
                    creds.display()
                ))
                .because(e)
            });
        }
        if let Some(token) = token {
            return Ok(options.token(token));
        }
        match (user, password) {
            (Some(u), Some(p)) => Ok(options.user_and_password(u, p)),
            (Some(_), None) => Err(unusable(format!(
                "--nats {shown}: a user needs a password (--nats-password, or $NATS_PASSWORD)"
            ))),
            (None, Some(_)) => Err(unusable(format!(
                "--nats {shown}: a password needs a user (--nats-user)"
            ))),
            (None, None) => Ok(options),
        }
    }
}

/// The value of a flag or of the URL, not both.
fn pick(
    flag: &Option<String>,
    in_url: &Option<String>,
    what: &str,
    shown: &str,
) -> Result<Option<String>, NatsError> {
    match (flag, in_url) {
        (Some(_), Some(_)) => Err(unusable(format!(
            "--nats {shown}: the {what} is given both in the URL and with --nats-{what}; give it once"
        ))),
        (Some(v), None) | (None, Some(v)) => Ok(Some(v.clone())),
        (None, None) => Ok(None),
    }
}

/// Checks that `path` is a regular file within [`files::NATS_FILE`] before the client
/// library, which reads it whole and would wait on a FIFO, is given it.
fn readable(path: &std::path::Path, flag: &str) -> Result<(), NatsError> {
    let file = crate::files::open(path)
        .map_err(|e| unusable(format!("{flag} {} {e}", path.display())).because(e))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > crate::files::NATS_FILE.max {
        return Err(unusable(format!(
            "{flag} {} {}",
            path.display(),
            crate::files::FileError::TooLarge(crate::files::NATS_FILE)
        )));
    }
    Ok(())
}

/// What this process was given to reach the server does not hold together.
fn unusable(message: String) -> NatsError {
    NatsError::new(NatsKind::Settings, message)
}

/// Reads `urls` (one, or several separated by commas, as NATS clients take them): each
/// without its user and password, and the user and password they carry.
fn parse(urls: &str) -> Result<Parsed, NatsError> {
    let mut parsed = Parsed {
        clean: String::new(),
        user: None,
        password: None,
        tls: false,
    };
    let mut clean = Vec::new();
    for one in urls.split(',').map(str::trim).filter(|u| !u.is_empty()) {
        let with_scheme = if one.contains("://") {
            one.to_string()
        } else {
            format!("nats://{one}")
        };
        let mut url = url::Url::parse(&with_scheme).map_err(|e| {
            // Shown without what precedes an `@`, which may be a password.
            let host = one.rsplit('@').next().unwrap_or_default();
            unusable(format!("--nats {host}: not a NATS server URL ({e})")).because(e)
        })?;
        if !matches!(url.scheme(), "nats" | "tls") {
            return Err(unusable(format!(
                "--nats {}: a NATS server URL starts with nats:// or tls://",
                url.host_str().unwrap_or_default()
            )));
        }
        parsed.tls |= url.scheme() == "tls";
        let decode = |s: &str| percent_decode_str(s).decode_utf8_lossy().into_owned();
        if !url.username().is_empty() {
            parsed.user = Some(decode(url.username()));
        }
        if let Some(p) = url.password() {
            parsed.password = Some(decode(p));
        }
        let _ = url.set_username("");
        let _ = url.set_password(None);
        clean.push(url.to_string());
    }
    if clean.is_empty() {
        return Err(unusable("--nats: the server's URL is empty".into()));
    }
    parsed.clean = clean.join(",");
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_and_password_in_the_url_are_taken_out_of_what_is_shown() {
        let c = Connect::new("nats://ann:s%40cret@127.0.0.1:4222");
        assert_eq!(c.shown(), "nats://127.0.0.1:4222");
        let p = parse(&c.url).expect("parse");
        assert_eq!(p.user.as_deref(), Some("ann"));
        assert_eq!(p.password.as_deref(), Some("s@cret"));
        assert!(!p.tls);
        let t = parse("tls://h:4222,u:p@other:4223").expect("parse");
        assert_eq!(t.clean, "tls://h:4222,nats://other:4223");
        assert!(t.tls);
        let bad = parse("nats://ann:s3cret@[::1").err().expect("refused");
        assert_eq!(bad.kind(), NatsKind::Settings);
        assert_eq!(
            bad.to_string(),
            "--nats [::1: not a NATS server URL (invalid IPv6 address)",
            "no password shown"
        );
    }
}
