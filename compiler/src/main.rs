//! `tvc`: the template compiler's command line.

use clap::{Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tv_compiler::driver;
use tv_compiler::timings::Timings;

/// mimalloc, as in every binary of the workspace (see the workspace manifest).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        /// Also print a stage's output: xml, ast, the typed IR or the bytecode listing.
        #[arg(long, value_enum)]
        emit: Option<Emit>,
        /// Colour the diagnostics (default: when stderr is a terminal).
        #[arg(long, value_enum, default_value_t = Color::Auto)]
        color: Color,
        /// Print how long each stage took, on stderr.
        #[arg(long)]
        timings: bool,
    },
    /// Compile templates into a bundle (nothing is written when there are errors).
    Compile {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The bundle file to write.
        #[arg(short, long, required_unless_present = "emit")]
        output: Option<PathBuf>,
        /// Print a stage's output: xml, ast, the typed IR or the bytecode listing.
        #[arg(long, value_enum)]
        emit: Option<Emit>,
        #[arg(long, value_enum, default_value_t = Color::Auto)]
        color: Color,
        /// Print how long each stage took, on stderr.
        #[arg(long)]
        timings: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Emit {
    Xml,
    Ast,
    Ir,
    Bytecode,
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
        Command::Check {
            paths,
            emit,
            color,
            timings,
        } => run(&paths, None, emit, color, timings),
        Command::Compile {
            paths,
            output,
            emit,
            color,
            timings,
        } => run(&paths, output.as_deref(), emit, color, timings),
    }
}

/// [`build`], then the time each stage took when asked for.
fn run(
    paths: &[PathBuf],
    output: Option<&Path>,
    emit: Option<Emit>,
    color: Color,
    timings: bool,
) -> ExitCode {
    let mut stages = Timings::default();
    let code = build(paths, output, emit, color, &mut stages);
    if timings {
        eprint!("tvc: timings\n{stages}");
    }
    code
}

/// Checks, prints what was asked for, and writes the bundle when one is wanted.
fn build(
    paths: &[PathBuf],
    output: Option<&Path>,
    emit: Option<Emit>,
    color: Color,
    stages: &mut Timings,
) -> ExitCode {
    // The process exits right after: freeing a large program node by node would only
    // delay the exit (tens of milliseconds for ten thousand templates), so it is not
    // freed; the system takes the memory back at once.
    let mut comp = ManuallyDrop::new(match driver::check_paths(paths) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tvc: error: {e}");
            return ExitCode::from(2);
        }
    });
    *stages = std::mem::take(&mut comp.timings);
    match emit {
        Some(Emit::Ast) => print!(
            "{}",
            tv_compiler::ast::dump_program(&comp.program, &comp.sources, &comp.symbols.word_vars)
        ),
        Some(Emit::Xml) => print!(
            "{}",
            tv_compiler::xml::dump_docs(&driver::xml_docs(&comp), &comp.sources)
        ),
        _ => {}
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
    if output.is_none() && !matches!(emit, Some(Emit::Ir | Emit::Bytecode)) {
        return ExitCode::SUCCESS;
    }
    let Some((ir, bundle)) = driver::compile_timed(&comp, stages) else {
        return ExitCode::from(1);
    };
    let (ir, bundle) = (ManuallyDrop::new(ir), ManuallyDrop::new(bundle));
    match emit {
        Some(Emit::Ir) => print!("{}", tv_compiler::ir::dump(&ir, &comp.sources)),
        Some(Emit::Bytecode) => print!("{}", tv_vm::disasm::disassemble(&bundle)),
        _ => {}
    }
    if let Some(out) = output {
        let written = stages.time("write the bundle", || {
            std::fs::write(out, driver::bundle_bytes(&bundle))
        });
        if let Err(e) = written {
            eprintln!("tvc: error: cannot write {}: {e}", out.display());
            return ExitCode::from(2);
        }
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
