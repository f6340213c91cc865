//! Any script command (literal text with holes) and any values: the compiler's shell
//! lexer never panics, and whenever it accepts a command, splicing every value quoted
//! for its hole's context leaves the lexer in the state the hole left it, after the
//! value and after each later piece: no value changes the shape of the command.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tv_compiler::{contexts, Lexer, Piece};
use tv_vm::shell_quote_in;

#[derive(Arbitrary, Debug)]
enum Part {
    Text(String),
    Hole,
}

#[derive(Arbitrary, Debug)]
struct Input {
    command: Vec<Part>,
    values: Vec<String>,
}

fuzz_target!(|input: Input| {
    let pieces: Vec<Piece> = input
        .command
        .iter()
        .map(|p| match p {
            Part::Text(t) => Piece::Text(t),
            Part::Hole => Piece::Hole,
        })
        .collect();
    let Ok(quotes) = contexts(&pieces) else {
        return;
    };
    let (mut holes, mut spliced) = (Lexer::default(), Lexer::default());
    let mut values = input.values.iter().cycle();
    for piece in &pieces {
        match piece {
            Piece::Text(t) => {
                holes.text(t);
                spliced.text(t);
            }
            Piece::Hole => {
                let hole = holes.hole().expect("an accepted command's hole has a context");
                assert!(quotes.contains(&hole));
                let value = values.next().map_or("", String::as_str);
                spliced.text(&shell_quote_in(value, hole.quote));
            }
        }
        assert!(
            holes.same_shape(&spliced),
            "a value changed the command's shape: {pieces:?} {quotes:?}\n{holes:?}\n{spliced:?}"
        );
    }
});
