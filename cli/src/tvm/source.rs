//! What `tvm` runs: a bundle file, or templates (a `*.xml` file or a directory of them)
//! compiled in memory exactly as `tvc compile` would, diagnostics printed as `tvc`
//! prints them. The same sources compile to the same bytes, so a journal or a batch
//! names XML as safely as a bundle.

use crate::output;
use std::path::{Path, PathBuf};
use tv_cli::color::{stderr_color, Color};
use tv_compiler::driver::{self, Compilation};
use tv_runtime::{files, journal};
use tv_vm::bundle::Bundle;

/// A program ready to run: its bundle, the SHA-256 of the bundle's bytes, the bytes.
pub struct Loaded {
    pub bundle: Bundle,
    pub hash: String,
    pub bytes: Vec<u8>,
}

/// Whether `path` names templates rather than a bundle.
pub fn is_source(path: &Path) -> bool {
    path.is_dir() || path.extension().is_some_and(|e| e == "xml")
}

/// The bundle at `path`, or the bundle of the templates there.
pub fn load(path: &Path) -> Result<Loaded, String> {
    if is_source(path) {
        return compile(&[path.to_path_buf()]).map(|(_, loaded)| loaded);
    }
    let bytes = files::read(path, files::PROGRAM).map_err(|e| format!("{} {e}", path.display()))?;
    let bundle = Bundle::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let hash = journal::sha256(&bytes);
    Ok(Loaded {
        bundle,
        hash,
        bytes,
    })
}

/// Checks and compiles the templates of `paths` as one program; warnings and errors go
/// to stderr as `tvc` writes them. With errors nothing is compiled.
pub fn compile(paths: &[PathBuf]) -> Result<(Compilation, Loaded), String> {
    let c = driver::check_paths(paths)?;
    let color = stderr_color(Color::Auto);
    output::say(&c.diags.render(&c.sources, color));
    let errors = |n: usize| match n {
        1 => "the templates have an error, so nothing was run".to_string(),
        n => format!("the templates have {n} errors, so nothing was run"),
    };
    if c.diags.has_errors() {
        return Err(errors(c.diags.error_count()));
    }
    let bundle = match driver::compile_timed(&c, &mut Default::default()) {
        Ok((_, bundle)) => bundle,
        Err(diags) => {
            output::say(&diags.render(&c.sources, color));
            return Err(errors(diags.error_count()));
        }
    };
    let bytes = driver::bundle_bytes(&bundle);
    // Read back as a bundle file is read, so that what runs is verified the same way.
    let bundle = Bundle::from_bytes(&bytes)
        .map_err(|e| format!("the compiled templates fail verification: {e}"))?;
    let hash = journal::sha256(&bytes);
    Ok((
        c,
        Loaded {
            bundle,
            hash,
            bytes,
        },
    ))
}
