//! The shell lexer's decisions on commands written with `{}` for each hole.

use super::shell::{contexts, Lexer, Piece, Quote, Refusal};

fn pieces(command: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    for (i, text) in command.split("{}").enumerate() {
        if i > 0 {
            out.push(Piece::Hole);
        }
        out.push(Piece::Text(text));
    }
    out
}

fn quotes(command: &str) -> Vec<Quote> {
    contexts(&pieces(command))
        .unwrap_or_else(|r| panic!("{command:?} refused: {r:?}"))
        .into_iter()
        .map(|h| h.quote)
        .collect()
}

fn refusal(command: &str) -> Refusal {
    match contexts(&pieces(command)) {
        Ok(q) => panic!("{command:?} accepted as {q:?}"),
        Err(r) => r,
    }
}

#[test]
fn holes_in_bare_words_double_quotes_and_single_quotes_get_their_context() {
    use Quote::*;
    let cases: &[(&str, &[Quote])] = &[
        ("wc -l {}", &[Bare]),
        ("echo \"label {}\"", &[Double]),
        ("echo 'label {} end'", &[Single]),
        (
            "echo pre{}post x={} \"{}\"'{}'",
            &[Bare, Bare, Double, Single],
        ),
        ("echo \"it's {}\" '\"{}\"'", &[Double, Single]),
        ("echo \"$(date) {}\" `date` {}", &[Double, Bare]),
        ("echo $(echo \")\") {}", &[Bare]),
        ("echo \"${HOME:-x}\" {} ${#x}", &[Bare]),
        ("a#b {}", &[Bare]),
        ("echo $# {}", &[Bare]),
        ("# a comment\necho {}", &[Bare]),
        ("cat <<EOF\nbody $(x)\nEOF\necho {}", &[Bare]),
        ("cat <<-'E F'\n\tbody\n\tE F\necho \"{}\"", &[Double]),
        ("cat <<< {}", &[Bare]),
        ("echo \\\\{}", &[Bare]),
        ("echo \"\\\\{}\"", &[Double]),
        ("echo $((1 + 2)) {}", &[Bare]),
        ("echo '\\' {}", &[Bare]),
    ];
    for (command, expected) in cases {
        assert_eq!(quotes(command), *expected, "{command:?}");
    }
}

#[test]
fn holes_the_compiler_cannot_quote_safely_are_refused_with_their_place() {
    let cases = [
        ("cat <<EOF\n{}\nEOF", "inside a heredoc"),
        ("cat <<{}\nx", "as a heredoc delimiter"),
        ("echo $(cat {})", "inside `$(...)`"),
        ("echo \"$(cat {})\"", "inside `$(...)`"),
        ("echo `cat {}`", "inside backticks"),
        ("echo ${x:-{}}", "inside `${...}`"),
        ("echo hi # {}", "inside a comment"),
        ("echo $'{}'", "inside `$'...'`"),
        ("echo $\"{}\"", "inside `$\"...\"`"),
        ("echo ${}", "right after `$`"),
        ("echo \"${}\"", "right after `$`"),
        ("echo \\{}", "right after a backslash"),
        ("echo \"\\{}\"", "right after a backslash"),
        (
            "echo \"{}",
            "after a quote or expansion that is never closed",
        ),
        (
            "echo '{} x",
            "after a quote or expansion that is never closed",
        ),
        (
            "echo $(case a in a) x;; esac) {}",
            "after a `case` inside `$(...)`",
        ),
        ("echo ${x-'a'} {}", "after a quote inside `${...}`"),
    ];
    for (command, reason) in cases {
        assert_eq!(refusal(command).reason, reason, "{command:?}");
    }
}

#[test]
fn the_first_refused_hole_is_the_one_reported() {
    let r = refusal("echo {} \"{}\" $(x {}) {}");
    assert_eq!(r.hole, 2);
}

#[test]
fn a_quote_left_open_after_the_last_hole_does_not_refuse_it() {
    assert_eq!(quotes("echo {} \"unclosed"), [Quote::Bare]);
}

#[test]
fn a_quoted_value_leaves_the_lexer_as_a_hole_leaves_it() {
    let values = [
        "",
        "a'b",
        "x $(touch P)",
        "`id`",
        "\\",
        "\"",
        "#c\n<<E\n${x}",
    ];
    for (command, quote) in [
        ("echo a{}b", Quote::Bare),
        ("echo \"a{}b\"", Quote::Double),
        ("echo 'a{}b'", Quote::Single),
    ] {
        let (before, after) = command.split_once("{}").unwrap_or_default();
        for value in values {
            let (mut hole, mut spliced) = (Lexer::default(), Lexer::default());
            hole.text(before);
            spliced.text(before);
            assert_eq!(hole.hole().map(|h| h.quote), Ok(quote));
            spliced.text(&tv_vm::shell_quote_in(value, quote));
            assert!(hole.same_shape(&spliced), "{command:?} with {value:?}");
            hole.text(after);
            spliced.text(after);
            assert!(hole.same_shape(&spliced), "{command:?} with {value:?}");
        }
    }
}

#[test]
fn a_command_longer_than_the_compiler_follows_refuses_its_later_holes() {
    use super::shell::MAX_WORDS;
    let long = format!("echo {}{{}}", "w ".repeat(MAX_WORDS));
    let r = refusal(&long);
    let reason = format!(
        "in a command of more than {MAX_WORDS} words or holes, more than the compiler follows"
    );
    assert_eq!(r.reason, reason);
    let within = format!("echo {}{{}}", "w ".repeat(MAX_WORDS - 2));
    assert_eq!(quotes(&within), [Quote::Bare]);
    // Holes in one word count too.
    let holes = format!("echo {}", "{}".repeat(MAX_WORDS + 1));
    let r = refusal(&holes);
    assert_eq!((r.hole, r.reason.as_str()), (MAX_WORDS, reason.as_str()));
}

#[test]
fn groups_nested_deeper_than_the_compiler_follows_refuse_their_holes() {
    use super::shell::MAX_NESTING;
    let deep = |n: usize| format!("{}cat {{}}{}", "( ".repeat(n), " )".repeat(n));
    assert_eq!(quotes(&deep(MAX_NESTING - 1)), [Quote::Bare]);
    let r = refusal(&deep(MAX_NESTING));
    assert!(
        r.reason
            .contains(&format!("nested more than {MAX_NESTING} deep")),
        "{r:?}"
    );
}

#[test]
fn a_shells_code_string_longer_than_the_compiler_reads_refuses_the_values_after_it() {
    use super::shell::MAX_CODE;
    let code = |len: usize| format!("sh -c 'echo \"$1\" {}' _ {{}}", "x".repeat(len));
    assert_eq!(quotes(&code(MAX_CODE - 20)), [Quote::Bare]);
    let r = refusal(&code(MAX_CODE));
    assert!(
        r.reason.contains(&format!("more than {MAX_CODE} bytes")),
        "{r:?}"
    );
}

#[test]
fn a_value_leading_a_word_is_checked_for_a_leading_dash_unless_a_dashdash_came() {
    let option = |command: &str| -> Vec<bool> {
        contexts(&pieces(command))
            .unwrap_or_else(|r| panic!("{command:?} refused: {r:?}"))
            .iter()
            .map(|h| h.option)
            .collect()
    };
    assert_eq!(
        option("git log {} \"{}\" '{}' x{} --a={}"),
        [true, true, true, false, false]
    );
    assert_eq!(option("git log -- {} \"{}\""), [false, false]);
    // A `--` of `sudo` ends sudo's options, not those of the command it runs.
    assert_eq!(option("sudo -- git log {}; git log -- x {}"), [true, false]);
    // A redirection's target is a file, not an argument.
    assert_eq!(option("cat > {} < {}"), [false, false]);
}

#[test]
fn shells_code_strings_are_followed_a_few_levels_deep_and_no_deeper() {
    // `sh -c 'sh -c '\''echo "$1"'\'' _ "$1"' _ {}`, `levels` shells around `echo`.
    let nested = |levels: usize| {
        let mut code = "echo \"$1\"".to_string();
        for _ in 1..levels {
            code = format!("sh -c '{}' _ \"$1\"", code.replace('\'', r"'\''"));
        }
        format!("sh -c '{}' _ {{}}", code.replace('\'', r"'\''"))
    };
    assert_eq!(quotes(&nested(4)), [Quote::Bare]);
    let r = refusal(&nested(5));
    assert!(r.reason.contains("nested more than 4 shells deep"), "{r:?}");
}
