//! `tvc`: the template compiler's command line.

// Output goes through functions that handle a closed or full stream; the print macros
// panic on one.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

use clap::{Parser, Subcommand, ValueEnum};
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tv_cli::color::{stderr_color, Color};
use tv_cli::output::{print, say};
use tv_compiler::driver;
use tv_compiler::timings::Timings;

mod watch;

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
        /// Also print a stage's output: xml, ast, the typed IR, the bytecode listing, or the JSON Schemas of types.
        #[arg(long, value_enum)]
        emit: Option<Emit>,
        /// Colour the diagnostics (default: when stderr is a terminal).
        #[arg(long, value_enum, default_value_t = Color::Auto)]
        color: Color,
        /// Print how long each stage took, on stderr.
        #[arg(long)]
        timings: bool,
        /// Check again whenever a *.xml file under the paths changes, until interrupted.
        #[arg(long, conflicts_with_all = ["emit", "timings"])]
        watch: bool,
    },
    /// Compile templates into a bundle (nothing is written when there are errors).
    Compile {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The bundle file to write.
        #[arg(short, long, required_unless_present = "emit")]
        output: Option<PathBuf>,
        /// Print a stage's output: xml, ast, the typed IR, the bytecode listing, or the JSON Schemas of types.
        #[arg(long, value_enum)]
        emit: Option<Emit>,
        #[arg(long, value_enum, default_value_t = Color::Auto)]
        color: Color,
        /// Print how long each stage took, on stderr.
        #[arg(long)]
        timings: bool,
    },
    /// Print the XML Schema (XSD) of the template language, for XML editors.
    Schema,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Emit {
    Xml,
    Ast,
    Ir,
    Bytecode,
    /// The JSON Schema of each declared type and typed JSON output.
    Schemas,
}

fn main() -> ExitCode {
    driver::configure(driver::Options {
        threads: threads(std::env::var("TVC_THREADS").ok().as_deref()),
    });
    let cli = Cli::parse();
    match cli.command {
        Command::Check {
            paths,
            color,
            watch: true,
            ..
        } => watch::run(&paths, color),
        Command::Check {
            paths,
            emit,
            color,
            timings,
            watch: false,
        } => run(&paths, None, emit, color, timings),
        Command::Compile {
            paths,
            output,
            emit,
            color,
            timings,
        } => run(&paths, output.as_deref(), emit, color, timings),
        Command::Schema => match print(&tv_compiler::language::xsd()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => failed_output(e),
        },
    }
}

/// `TVC_THREADS`: the compiler's threads; a value that is not a number is ignored.
fn threads(var: Option<&str>) -> Option<usize> {
    var.and_then(|v| v.parse().ok())
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
    let code = build(paths, output, emit, color, &mut stages).unwrap_or_else(|code| code);
    if timings {
        say(&format!("tvc: timings\n{stages}"));
    }
    code
}

/// Checks, prints what was asked for, and writes the bundle when one is wanted; `Err`
/// when the output could not be written.
fn build(
    paths: &[PathBuf],
    output: Option<&Path>,
    emit: Option<Emit>,
    color: Color,
    stages: &mut Timings,
) -> Result<ExitCode, ExitCode> {
    // The process exits right after: freeing a large program node by node would only
    // delay the exit (tens of milliseconds for ten thousand templates), so it is not
    // freed; the system takes the memory back at once.
    // Without a stage to print, a large program's syntax trees need not be held whole:
    // its items are built again, a window at a time, to be checked and lowered.
    let checked = match emit {
        None => driver::check_paths_to_compile(paths, output.is_some()),
        Some(_) => driver::check_paths(paths),
    };
    let mut comp = ManuallyDrop::new(match checked {
        Ok(c) => c,
        Err(e) => {
            say(&format!("tvc: error: {e}\n"));
            return Ok(ExitCode::from(2));
        }
    });
    *stages = std::mem::take(&mut comp.timings);
    match emit {
        Some(Emit::Ast) => print(&tv_compiler::ast::dump_program(
            &comp.program,
            &comp.sources,
            &comp.symbols.word_vars,
        )),
        Some(Emit::Xml) => print(&tv_compiler::xml::dump_docs(
            &driver::xml_docs(&comp),
            &comp.sources,
        )),
        _ => Ok(()),
    }
    .map_err(failed_output)?;
    let color = stderr_color(color);
    say(&comp.diags.render(&comp.sources, color));
    let (e, w) = (comp.diags.error_count(), comp.diags.warning_count());
    if e > 0 {
        say(&format!(
            "tvc: {} and {}\n",
            plural(e, "error"),
            plural(w, "warning")
        ));
        return Ok(ExitCode::from(1));
    }
    if emit == Some(Emit::Schemas) {
        print(&tv_compiler::schemas::dump(&comp.program, &comp.sources)).map_err(failed_output)?;
    }
    let listing = matches!(emit, Some(Emit::Ir | Emit::Bytecode));
    if output.is_none() && !listing {
        return Ok(ExitCode::SUCCESS);
    }
    let compiled = if listing {
        driver::compile_consuming(&mut comp, stages).map(|(ir, bundle)| {
            let (ir, bundle) = (ManuallyDrop::new(ir), ManuallyDrop::new(bundle));
            let listed = match emit {
                Some(Emit::Ir) => print(&tv_compiler::ir::dump(&ir, &comp.sources)),
                _ => print(&tv_vm::disasm::disassemble(&bundle)),
            };
            let bytes =
                output.map(|_| stages.time("encode the bundle", || driver::bundle_bytes(&bundle)));
            (listed, bytes)
        })
    } else {
        // Nothing to list: the bundle is made a window of templates at a time, and is
        // never in memory whole beside the syntax trees or the IR.
        driver::compile_to_bytes(&mut comp, stages).map(|bytes| (Ok(()), Some(bytes)))
    };
    let bytes = match compiled {
        Ok((listed, bytes)) => {
            listed.map_err(failed_output)?;
            bytes
        }
        Err(diags) => {
            say(&diags.render(&comp.sources, color));
            say(&format!("tvc: {}\n", plural(diags.error_count(), "error")));
            return Ok(ExitCode::from(1));
        }
    };
    if let (Some(out), Some(bytes)) = (output, bytes) {
        // The machine reads the bundle back exactly so: a bundle it would refuse is a
        // bug of the compiler, reported here rather than written. The check decodes
        // one function at a time, as the bytes hold a large library's whole bundle.
        let verified = stages.time("verify the bundle", || tv_vm::bundle::verify_bytes(&bytes));
        if let Err(e) = verified {
            say(&format!(
                "tvc: error: the bundle for {} fails verification, so it is not written: {e}\n",
                out.display()
            ));
            return Ok(ExitCode::from(1));
        }
        let written = stages.time("write the bundle", || std::fs::write(out, &bytes));
        if let Err(e) = written {
            say(&format!(
                "tvc: error: cannot write {}: {e}\n",
                out.display()
            ));
            return Ok(ExitCode::from(2));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Any other failure to print (a full disk) ends `tvc` with a message.
fn failed_output(e: String) -> ExitCode {
    say(&format!("tvc: error: {e}\n"));
    ExitCode::from(2)
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::threads;

    #[test]
    fn tvc_threads_is_a_number_or_ignored() {
        assert_eq!(threads(Some("4")), Some(4));
        assert_eq!(threads(Some("many")), None);
        assert_eq!(threads(None), None);
    }
}
