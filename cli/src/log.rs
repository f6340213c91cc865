//! The libraries' warnings and notices (`tracing` events) printed as `tvm` has always
//! printed them: one line each on stderr, `tvm: warning: ...` for a warning of a run and
//! `tvm worker: ...` for a worker's, above the progress line when there is one. Only
//! the product's own events are printed: those of the crates it uses (HTTP, TLS, NATS
//! clients) are their business, not the user's.
//!
//! Written by hand rather than with `tracing-subscriber`, whose filters and formatters
//! the binary would carry for these few lines.

use std::fmt::{self, Write as _};
use std::sync::Mutex;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};
use tv_runtime::observe::Above;

/// Where lines go while a progress line is shown.
static ABOVE: Mutex<Option<Above>> = Mutex::new(None);

/// Prints the libraries' events from now on, those at `most` and more severe.
pub fn install(most: Level) {
    // A second installation (a test calling the binary's functions) keeps the first.
    let _ = tracing::subscriber::set_global_default(Lines { most });
}

/// Lines are printed above `progress` (`None`: as they come) from now on.
pub fn above(progress: Option<Above>) {
    if let Ok(mut above) = ABOVE.lock() {
        *above = progress;
    }
}

struct Lines {
    most: Level,
}

/// The prefix a library's event is printed with, when it is printed at all.
fn prefix(target: &str) -> Option<&'static str> {
    if target.starts_with("tv_runtime::nats") {
        Some("tvm worker")
    } else if target.starts_with("tv_") {
        Some("tvm")
    } else {
        None
    }
}

/// An event's message, its other fields left out.
#[derive(Default)]
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        }
    }
}

impl Subscriber for Lines {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.is_event() && *metadata.level() <= self.most && prefix(metadata.target()).is_some()
    }

    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        let Some(prefix) = prefix(meta.target()) else {
            return;
        };
        let mut message = Message::default();
        event.record(&mut message);
        let line = match *meta.level() {
            Level::WARN => format!("{prefix}: warning: {}", message.0),
            _ => format!("{prefix}: {}", message.0),
        };
        match ABOVE.lock().ok().as_deref().and_then(Option::as_ref) {
            Some(above) => above.say(&line),
            None => tv_runtime::observe::say(&line),
        }
    }

    // No spans are kept: the libraries open none, and an event needs none to print.
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

#[cfg(test)]
mod tests {
    use super::prefix;

    #[test]
    fn only_the_products_own_events_are_printed_each_with_the_prefix_of_its_part() {
        assert_eq!(prefix("tv_runtime::host::run"), Some("tvm"));
        assert_eq!(prefix("tv_runtime::nats::worker"), Some("tvm worker"));
        assert_eq!(prefix("async_nats::connector"), None);
        assert_eq!(prefix("hyper_util::client"), None);
    }
}
