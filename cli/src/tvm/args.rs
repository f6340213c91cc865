//! The arguments of `tvm batch`, with and without `--nats`, and how `tvm batch --nats`
//! and `tvm worker` sign in to a NATS server: shared by the local batch's front end
//! (`batch.rs`) and the NATS one (`nats.rs`), which the command's dispatcher chooses
//! between, so that neither imports the other.

use super::options::{HostArgs, LimitArgs};
use clap::Args;
use std::path::PathBuf;
use tv_cli::env;
use tv_runtime::nats::Connect;

#[derive(Args)]
pub(crate) struct BatchArgs {
    /// The bundle (not needed with --nats --collect or --status).
    pub bundle: Option<PathBuf>,
    /// The entry point; may be left out when the bundle has only one.
    #[arg(long)]
    pub entry: Option<String>,
    /// The rows: one JSON object of arguments per line, or `{"id": ..., "args": {...}}`.
    #[arg(long, value_name = "FILE")]
    pub inputs: Option<PathBuf>,
    /// Where each row's result goes, one line `{"index", "id", "status", "result"}` per
    /// row, written as the row ends (with --nats: by --collect).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Where the batch keeps what lets the same command, run again after a crash or
    /// Ctrl-C, skip the rows that finished and resume the others (default: OUT.state/).
    #[arg(long, value_name = "DIR", conflicts_with = "nats")]
    pub state: Option<PathBuf>,
    /// Run again the rows whose lines in --out say they failed (their lines are
    /// replaced); the calls they had finished are answered from their journals.
    #[arg(long, conflicts_with_all = ["nats", "rerun"])]
    pub retry_failed: bool,
    /// Run every row again, though --out holds their results; the earlier results are
    /// kept as OUT.previous.
    #[arg(long, conflicts_with = "nats")]
    pub rerun: bool,
    #[command(flatten)]
    pub nats: NatsArgs,
    #[command(flatten)]
    pub host: HostArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(Args)]
pub(crate) struct NatsArgs {
    /// Spread the batch over `tvm worker`s through this NATS server (with JetStream on):
    /// the rows are published, the workers run them, --collect writes the results.
    #[arg(long, value_name = "URL")]
    pub nats: Option<String>,
    /// The batch's name in the server (default: made from the bundle, the entry point,
    /// the rows and the settings, so the same batch published again has the same name).
    #[arg(long = "batch", value_name = "NAME", requires = "nats")]
    pub name: Option<String>,
    /// Write the results the server holds to --out, in the order of the rows.
    #[arg(long, requires = "nats", conflicts_with = "status")]
    pub collect: bool,
    /// Say how far the batch has come.
    #[arg(long, requires = "nats")]
    pub status: bool,
    /// With --collect: wait until every row has its result.
    #[arg(long, requires = "collect")]
    pub wait: bool,
    /// A row handed to workers this many times without a result (each stopped or fell
    /// silent while running it) ends as a failed row (default 3).
    #[arg(long, value_name = "N", requires = "nats", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_deliveries: Option<u64>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// How to sign in to the NATS server and check who it is: `tvm batch --nats` and
/// `tvm worker` take the same flags, and the environment variables the `nats` tool reads.
/// The variables are read with every other one, at start (`tv_cli::env`), not by clap:
/// the help's `[env: ...]` is written out, so it never shows a value.
#[derive(Args, Clone)]
pub(crate) struct ConnectArgs {
    /// A NATS credentials file (a user JWT and its seed, as `nsc` writes them) [env: NATS_CREDS=]
    #[arg(long, value_name = "FILE")]
    pub nats_creds: Option<PathBuf>,
    /// The token the server asks for (better in $NATS_TOKEN: a flag shows in `ps`).
    #[arg(long, value_name = "TOKEN")]
    pub nats_token: Option<String>,
    /// The user to sign in as (or `nats://USER:PASSWORD@HOST` in the URL) [env: NATS_USER=]
    #[arg(long, value_name = "USER")]
    pub nats_user: Option<String>,
    /// The user's password (better in $NATS_PASSWORD: a flag shows in `ps`).
    #[arg(long, value_name = "PASSWORD")]
    pub nats_password: Option<String>,
    /// The CA certificate (PEM) that signed the server's, for TLS with a private CA;
    /// with it (or a tls:// URL) the connection must be TLS [env: NATS_CA=]
    #[arg(long, value_name = "FILE")]
    pub nats_ca: Option<PathBuf>,
    /// A client certificate (PEM), for a server that verifies its clients; with --nats-key [env: NATS_CERT=]
    #[arg(long, value_name = "FILE")]
    pub nats_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM) [env: NATS_KEY=]
    #[arg(long, value_name = "FILE")]
    pub nats_key: Option<PathBuf>,
}

impl ConnectArgs {
    /// The connection to `url`: these flags, else the environment's `NATS_*`.
    pub(crate) fn to(&self, url: &str) -> Connect {
        let flags = Connect {
            url: url.to_string(),
            creds: self.nats_creds.clone(),
            token: self.nats_token.clone(),
            user: self.nats_user.clone(),
            password: self.nats_password.clone(),
            ca: self.nats_ca.clone(),
            cert: self.nats_cert.clone(),
            key: self.nats_key.clone(),
        };
        flags.or_environment(env::environment())
    }
}

/// A path a mode of `tvm batch` needs.
pub(crate) fn needed<'a>(given: &'a Option<PathBuf>, what: &str) -> Result<&'a PathBuf, String> {
    given
        .as_ref()
        .ok_or_else(|| format!("tvm batch needs {what}"))
}
