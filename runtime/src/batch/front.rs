//! The local batch as `tvm batch` runs it: the inputs file read once to count and hash
//! its rows, the results file refused where it is the inputs, the state folder
//! (`OUT.state/` unless named) opened for the batch's start mode, and the rows run
//! until they end or the batch is stopped. What is printed, and the exit codes, are the
//! front end's.

use super::{run_until, Batch, Lines, Start, State, Summary, MAX_ROW_BYTES};
use crate::files;
use crate::host::AsyncHost;
use crate::journal::Header;
use crate::observe::Progress;
use std::fs::File;
use std::future::Future;
use std::io::{BufReader, BufWriter};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use tv_vm::bundle::Verified;
use tv_vm::limits::Limits;

/// The inputs of a batch: a regular file (`/dev/zero` has no end, a FIFO may never
/// give one), read line by line, each line within `MAX_ROW_BYTES`.
pub fn open_inputs(inputs: &Path) -> Result<File, String> {
    files::open(inputs).map_err(|e| format!("--inputs {} {e}", inputs.display()))
}

/// The rows of a batch's inputs, for the progress line, and a hash of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Survey {
    /// Lines that are not blank.
    pub rows: u64,
    pub sha256: String,
}

/// The rows of the inputs (lines that are not blank), and a hash of them, so that a
/// batch is resumed only over the rows it began with; read through once, line by line,
/// as the batch reads them.
pub fn survey(inputs: &Path) -> Result<Survey, String> {
    let file = open_inputs(inputs)?;
    let (mut rows, mut hash) = (0, crate::digest::Sha256Hex::new());
    for line in Lines::new(BufReader::new(file), MAX_ROW_BYTES) {
        let (_, line) = line.map_err(|e| format!("--inputs {}: {e}", inputs.display()))?;
        let text = line.unwrap_or_else(|why| why);
        if !text.trim().is_empty() {
            rows += 1;
            hash.update(text.as_bytes());
            hash.update(b"\n");
        }
    }
    Ok(Survey {
        rows,
        sha256: hash.hex(),
    })
}

/// Refuses `--out` naming the inputs, by any path (a link, a hard link: the same file
/// by device and inode), before either is touched: opening the results would empty them.
pub fn distinct(inputs: &Path, out: &Path) -> Result<(), String> {
    let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    match id(out) {
        Some(o) if id(inputs) == Some(o) => Err(format!(
            "--out {} is the inputs file {} (the same file by another name): the results \
             would overwrite the rows",
            out.display(),
            inputs.display()
        )),
        _ => Ok(()),
    }
}

/// The state folder of a batch writing `out`: `state` when named, else `OUT.state`.
pub(crate) fn state_dir(out: &Path, state: Option<&Path>) -> PathBuf {
    state.map_or_else(
        || {
            let mut d = out.as_os_str().to_os_string();
            d.push(".state");
            PathBuf::from(d)
        },
        Path::to_path_buf,
    )
}

/// How the batch treats the rows an earlier run finished: `--retry-failed` runs the
/// failed ones again, `--rerun` every one, neither goes on where it stopped.
pub fn start(retry_failed: bool, rerun: bool) -> Start {
    match (retry_failed, rerun) {
        (true, _) => Start::RetryFailed,
        (_, true) => Start::Rerun,
        _ => Start::Continue,
    }
}

/// A local batch's files: its rows, its results and its state folder.
#[derive(Clone, Debug)]
pub struct LocalBatch {
    pub inputs: PathBuf,
    pub out: PathBuf,
    pub state: PathBuf,
    pub start: Start,
}

/// A batch whose state is open, ready to run its rows.
pub struct Opened {
    pub state: State,
    /// The results file, open at its end.
    out: File,
    /// The rows of the inputs, and the hash they are known by.
    pub survey: Survey,
}

impl LocalBatch {
    /// The batch of `inputs` into `out`, its state in `state` (else `OUT.state`).
    pub fn new(inputs: PathBuf, out: PathBuf, state: Option<PathBuf>, start: Start) -> Self {
        let state = state_dir(&out, state.as_deref());
        LocalBatch {
            inputs,
            out,
            state,
            start,
        }
    }

    /// The files the batch writes, which are never a row's context.
    pub fn own_files(&self) -> [PathBuf; 2] {
        [self.out.clone(), self.state.clone()]
    }

    /// Opens the state folder for rows run as `header` says (no arguments): refused
    /// when the folder is the inputs' or holds them, and as [`State::open`] refuses.
    pub fn open(&self, header: Header) -> Result<Opened, String> {
        super::apart_from_state(&self.state, &[("--inputs", &self.inputs)])?;
        let survey = survey(&self.inputs)?;
        let (state, out) = State::open(&self.state, header, &survey.sha256, &self.out, self.start)?;
        Ok(Opened { state, out, survey })
    }
}

/// What a batch runs each row with.
pub struct Rows<'a, H> {
    pub bundle: &'a Verified,
    pub entry: u32,
    pub host: &'a H,
    pub limits: &'a Limits,
    /// Rows at once.
    pub concurrency: usize,
    pub progress: Option<&'a Progress>,
}

impl Opened {
    /// Whether every row finished in an earlier run: (completed, failed) then.
    pub fn all_done(&self) -> Option<(u64, u64)> {
        let (completed, failed) = self.state.earlier();
        (completed + failed >= self.survey.rows).then_some((completed, failed))
    }

    /// Runs the rows of `inputs` (the batch's inputs, opened) that are not done, until
    /// they end or `stop` is ready; the results file and the state are closed after.
    pub async fn run<H: AsyncHost>(
        self,
        rows: Rows<'_, H>,
        inputs: File,
        stop: impl Future<Output = ()>,
    ) -> Result<Summary, String> {
        let Opened { state, out, .. } = self;
        let mut out = BufWriter::new(out);
        let batch = Batch {
            bundle: rows.bundle,
            function: rows.entry,
            host: rows.host,
            limits: rows.limits,
            concurrency: rows.concurrency,
            state: Some(&state),
            progress: rows.progress,
        };
        let summary = run_until(&batch, BufReader::new(inputs), &mut out, stop).await;
        drop(out);
        state.close();
        summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tv_test_support::temp::TempDir;

    #[test]
    fn the_survey_counts_rows_that_are_not_blank_and_hashes_them() {
        let dir = TempDir::new("front-survey");
        dir.write("a.jsonl", "{\"x\": 1}\n\n  \n{\"x\": 2}");
        dir.write("b.jsonl", "{\"x\": 1}\n{\"x\": 2}\n");
        let a = survey(&dir.path().join("a.jsonl")).expect("surveyed");
        let b = survey(&dir.path().join("b.jsonl")).expect("surveyed");
        assert_eq!(a.rows, 2);
        assert_eq!(a, b, "blank lines are no rows");
        let missing = dir.path().join("none.jsonl");
        let e = survey(&missing).unwrap_err();
        assert!(
            e.starts_with(&format!("--inputs {} ", missing.display())),
            "{e}"
        );
    }

    #[test]
    fn the_results_may_not_be_the_inputs_by_any_name() {
        let dir = TempDir::new("front-distinct");
        dir.write("rows.jsonl", "{}\n");
        let rows = dir.path().join("rows.jsonl");
        let link = dir.path().join("link.jsonl");
        std::fs::hard_link(&rows, &link).expect("a hard link");
        assert_eq!(
            distinct(&rows, &link).unwrap_err(),
            format!(
                "--out {} is the inputs file {} (the same file by another name): the results \
                 would overwrite the rows",
                link.display(),
                rows.display()
            )
        );
        assert_eq!(distinct(&rows, &dir.path().join("out.jsonl")), Ok(()));
    }

    #[test]
    fn the_state_folder_is_beside_the_results_unless_named_and_the_flags_choose_the_start() {
        let out = Path::new("runs/out.jsonl");
        assert_eq!(state_dir(out, None), Path::new("runs/out.jsonl.state"));
        assert_eq!(state_dir(out, Some(Path::new("s"))), Path::new("s"));
        assert_eq!(start(false, false), Start::Continue);
        assert_eq!(start(true, false), Start::RetryFailed);
        assert_eq!(start(false, true), Start::Rerun);
        let b = LocalBatch::new("in".into(), out.into(), None, Start::Continue);
        assert_eq!(
            b.own_files(),
            [out.into(), PathBuf::from("runs/out.jsonl.state")]
        );
    }
}
