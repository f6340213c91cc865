//! What `tvm` runs: a bundle file, or templates (a `*.xml` file or a directory of them)
//! compiled in memory exactly as `tvc compile` would, diagnostics printed as `tvc`
//! prints them. The same sources compile to the same bytes, so a journal or a batch
//! names XML as safely as a bundle.

use crate::output;
use std::path::{Path, PathBuf};
use tv_cli::color::{stderr_color, Color};
use tv_compiler::driver::{self, Compilation};
use tv_runtime::files;
use tv_runtime::sha256_hex;
use tv_vm::bundle::{Bundle, BundleError, Verified};

/// A program ready to run: its verified bundle and the bundle's bytes.
pub(crate) struct Loaded {
    pub bundle: Verified,
    pub bytes: Vec<u8>,
}

impl Loaded {
    /// The SHA-256 of the bundle's bytes, which names the program in journals, batches
    /// and `tvm info`. Computed when asked for: a run without a journal needs none.
    pub(crate) fn hash(&self) -> String {
        sha256_hex(&self.bytes)
    }
}

/// Whether `path` names templates rather than a bundle.
pub(crate) fn is_source(path: &Path) -> bool {
    path.is_dir() || path.extension().is_some_and(|e| e == "xml")
}

/// The bundle at `path`, or the bundle of the templates there.
pub(crate) fn load(path: &Path) -> Result<Loaded, String> {
    if is_source(path) {
        return compile(&[path.to_path_buf()]).map(|(_, loaded)| loaded);
    }
    let bytes = files::read(path, files::PROGRAM).map_err(|e| format!("{} {e}", path.display()))?;
    let bundle = Bundle::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Loaded { bundle, bytes })
}

/// Checks and compiles the templates of `paths` as one program; warnings and errors go
/// to stderr as `tvc` writes them. With errors nothing is compiled.
pub(crate) fn compile(paths: &[PathBuf]) -> Result<(Compilation, Loaded), String> {
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
    // The bytes are what a bundle file of these templates would hold: their hash names
    // the program in journals and batches (`Loaded::hash`). What runs is the bundle itself, verified as
    // a bundle file is when it is read (decoding the bytes again would give the same).
    let bytes = driver::bundle_bytes(&bundle);
    let bundle = Verified::new(bundle).map_err(|e| {
        let e = BundleError::Invalid(e);
        format!("the compiled templates fail verification: {e}")
    })?;
    Ok((c, Loaded { bundle, bytes }))
}
