//! `tvc`: the template compiler's command line.

use clap::{Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use tv_compiler::driver;

#[derive(Parser)]
#[command(
    name = "tvc",
    version,
    about = "Compile XML task templates for the tvm virtual machine"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check templates (files, or every *.xml below a directory) as one program.
    Check {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Also print a stage's output: the XML tree or the syntax tree.
        #[arg(long, value_enum)]
        emit: Option<Emit>,
        /// Colour the diagnostics (default: when stderr is a terminal).
        #[arg(long, value_enum, default_value_t = Color::Auto)]
        color: Color,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Emit {
    Xml,
    Ast,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check { paths, emit, color } => check(&paths, emit, color),
    }
}

fn check(paths: &[PathBuf], emit: Option<Emit>, color: Color) -> ExitCode {
    let comp = match driver::check_paths(paths) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tvc: error: {e}");
            return ExitCode::from(2);
        }
    };
    match emit {
        Some(Emit::Ast) => print!(
            "{}",
            tv_compiler::ast::dump_program(&comp.program, &comp.sources, &comp.symbols.word_vars)
        ),
        Some(Emit::Xml) => print!("{}", tv_compiler::xml::dump_docs(&comp.xml, &comp.sources)),
        None => {}
    }
    let color = match color {
        Color::Auto => std::io::stderr().is_terminal(),
        Color::Always => true,
        Color::Never => false,
    };
    eprint!("{}", comp.diags.render(&comp.sources, color));
    let (e, w) = (comp.diags.error_count(), comp.diags.warning_count());
    if e > 0 {
        eprintln!("tvc: {} and {}", plural(e, "error"), plural(w, "warning"));
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}
