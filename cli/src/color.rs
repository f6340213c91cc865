//! Whether diagnostics are coloured: `--color`, `NO_COLOR` and the terminal.

use clap::ValueEnum;
use std::io::IsTerminal;

/// `--color`: when diagnostics are coloured.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

/// Whether diagnostics printed to this process's stderr are coloured.
pub fn stderr_color(choice: Color) -> bool {
    use_color(
        choice,
        crate::env::no_color().as_deref(),
        std::io::stderr().is_terminal(),
    )
}

/// Whether diagnostics are coloured: `--color auto` colours a terminal unless
/// `NO_COLOR` is set to anything but the empty string (https://no-color.org); an
/// explicit `always` or `never` wins over both.
pub(crate) fn use_color(
    choice: Color,
    no_color: Option<&std::ffi::OsStr>,
    is_terminal: bool,
) -> bool {
    match choice {
        Color::Auto => tv_compiler::diag::color_by_default(no_color, is_terminal),
        Color::Always => true,
        Color::Never => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn no_color_turns_automatic_colour_off_even_on_a_terminal() {
        assert!(use_color(Color::Auto, None, true));
        assert!(!use_color(Color::Auto, Some(OsStr::new("1")), true));
        assert!(!use_color(Color::Auto, Some(OsStr::new("false")), true));
        assert!(!use_color(Color::Auto, None, false));
    }

    #[test]
    fn an_empty_no_color_is_as_if_it_were_unset() {
        assert!(use_color(Color::Auto, Some(OsStr::new("")), true));
    }

    #[test]
    fn an_explicit_choice_wins_over_no_color_and_the_terminal() {
        assert!(use_color(Color::Always, Some(OsStr::new("1")), false));
        assert!(!use_color(Color::Never, None, true));
    }
}
