//! Code generation a window of functions at a time, for `tvc compile`
//! ([`crate::driver::compile_to_bytes`]): each window's functions are generated,
//! their constants pooled in function order, and encoded at once, so the bundle is
//! never held decoded whole; only its encoded functions, its constants and its
//! tasks are kept until the end. The bytes are those of [`super::generate`]'s bundle.

use super::{function, too_many, Scratch, NUMBERED};
use crate::diag::Diagnostic;
use crate::ir;
use crate::source::SourceMap;
use std::sync::Arc;
use tv_vm::bundle::{Bundle, Entry, TaskMeta};

/// The bundle so far.
#[derive(Default)]
pub(crate) struct Writer {
    pool: super::Pool,
    /// The encoded functions, in order.
    pieces: Vec<Vec<u8>>,
    /// Functions generated and not yet encoded.
    pending: Vec<tv_vm::bundle::Function>,
    /// The encoded tasks, in order, and how many.
    tasks: Vec<Vec<u8>>,
    task_count: u64,
    functions: u64,
    /// Counts too large for their operands.
    errors: Vec<Diagnostic>,
    /// The span of the first function, and of the first past what the bytecode
    /// numbers.
    first: Option<crate::source::Span>,
    past: Option<crate::source::Span>,
}

impl Writer {
    /// Generates and encodes the next `functions`, in order.
    pub(crate) fn add(&mut self, functions: &[ir::Function], sources: &SourceMap) {
        let parts = crate::parallel::map_chunks(
            functions,
            crate::parallel::MIN_ITEMS_PER_WORKER,
            |chunk| {
                let mut scratch = Scratch::default();
                chunk
                    .iter()
                    .map(|f| function(f, sources, &mut scratch))
                    .collect::<Vec<_>>()
            },
        );
        let mut done = Vec::with_capacity(functions.len());
        for ((mut f, uses, errs), source) in parts.into_iter().flatten().zip(functions) {
            let fitted = self.pool.fits();
            self.pool.take(uses, &mut f.code);
            if fitted && !self.pool.fits() {
                self.errors
                    .push(too_many("constants in one program", source.span));
            }
            self.first.get_or_insert(source.span);
            if self.functions + done.len() as u64 == NUMBERED as u64 {
                self.past = Some(source.span);
            }
            self.errors.extend(errs);
            done.push(f);
        }
        self.functions += done.len() as u64;
        self.pending = done;
    }

    /// Encodes the functions [`Writer::add`] generated last, and frees them.
    pub(crate) fn encode(&mut self) {
        self.pieces.extend(crate::parallel::map_chunks(
            &self.pending,
            crate::parallel::MIN_ITEMS_PER_WORKER,
            Bundle::encode_functions,
        ));
        self.pending = Vec::new();
    }

    /// Encodes the next `tasks`, in order.
    pub(crate) fn add_tasks(&mut self, tasks: &[Arc<TaskMeta>]) {
        self.task_count += tasks.len() as u64;
        self.tasks.extend(crate::parallel::map_chunks(
            tasks,
            crate::parallel::MIN_ITEMS_PER_WORKER,
            tv_vm::bundle::encode_tasks,
        ));
    }

    /// The bundle's bytes, or an error for each count that does not fit its operand.
    pub(crate) fn finish(
        mut self,
        entries: &[Entry],
        sources: &SourceMap,
    ) -> Result<Vec<u8>, Vec<Diagnostic>> {
        self.encode();
        if let Some(span) = self.past {
            self.errors.push(too_many(
                "templates and branch functions in one program",
                span,
            ));
        }
        if let (true, Some(span)) = (self.task_count > NUMBERED as u64, self.first) {
            self.errors.push(too_many("tasks in one program", span));
        }
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        Ok(tv_vm::bundle::assemble(
            &super::compiler_version(),
            &self.pool.items,
            (self.functions, self.pieces),
            (self.task_count, self.tasks),
            entries,
            &super::file_names(sources),
        ))
    }
}
