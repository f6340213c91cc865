//! Ctrl-C during a run: the first stops the run at its next wait (the driver counts the
//! calls in flight as abandoned), so that its result, with what it spent, is printed;
//! a second quits at once.

use crate::output;

/// The exit code of a run that Ctrl-C stopped, as shells give a process SIGINT ended.
pub(crate) const EXIT: u8 = 130;

/// Sets `stop` at the first Ctrl-C; exits at the second.
pub(crate) async fn on_ctrl_c(stop: tokio::sync::watch::Sender<bool>) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    output::say(
        "tvm: interrupted: stopping the run; calls in flight are abandoned and counted \
         (Ctrl-C again quits at once)\n",
    );
    let _ = stop.send(true);
    if tokio::signal::ctrl_c().await.is_ok() {
        std::process::exit(i32::from(EXIT));
    }
}
