//! Independent per-item work (building, checking, lowering one template) spread over
//! the machine's cores. Results come back in input order, so the output of a parallel
//! run is the output of a sequential one: same trees, same diagnostics, same bundle.

use rayon::prelude::*;
use std::sync::{Mutex, OnceLock, PoisonError};

/// Work below this many items per extra thread stays on the calling thread: handing
/// work over costs more than a few small templates do.
pub(crate) const MIN_ITEMS_PER_WORKER: usize = 64;

/// Worker threads get the stack a main thread has, so that a deeply nested template
/// fails or succeeds the same way whichever thread reads it.
const WORKER_STACK: usize = 8 << 20;

static THREADS: OnceLock<usize> = OnceLock::new();

/// How many threads the compiler uses: the number the driver's options set
/// ([`set_threads`]), else the machine's parallelism.
pub(crate) fn threads() -> usize {
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

/// Sets the number of threads, at least 1; taken only before the first compilation of
/// the process, whose workers are kept (see [`pool`]). Whether it was taken.
pub(crate) fn set_threads(n: usize) -> bool {
    THREADS.set(n.max(1)).is_ok()
}

/// The compiler's own workers, started on first use and kept: a thread keeps the
/// memory it freed, so the next compilation in the process reuses it instead of
/// faulting in fresh pages. `None` when no thread could be started.
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads())
            .stack_size(WORKER_STACK)
            .thread_name(|i| format!("tvc-worker-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Splits `items` into contiguous chunks of at least `min_per_worker` items, runs `f`
/// on each on the workers and returns the chunks' results in order. A panic in a
/// worker is re-raised here.
pub(crate) fn map_chunks<'t, T, R>(
    items: &'t [T],
    min_per_worker: usize,
    f: impl Fn(&'t [T]) -> R + Sync,
) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    // A few chunks per thread, so that a thread the machine slows down does not hold
    // up the others at the end of the stage.
    let chunks = (threads() * CHUNKS_PER_THREAD).min(items.len() / min_per_worker.max(1));
    match pool() {
        Some(pool) if threads() > 1 && chunks > 1 => {
            let size = items.len().div_ceil(chunks);
            pool.install(|| items.par_chunks(size).map(&f).collect())
        }
        _ => vec![f(items)],
    }
}

/// How many chunks [`map_chunks`] makes per thread when there are items enough.
const CHUNKS_PER_THREAD: usize = 4;

/// Runs `f` on every item, on the workers when there are several items.
pub(crate) fn each_mut<T: Send>(items: &mut [T], f: impl Fn(&mut T) + Sync) {
    match pool() {
        Some(pool) if threads() > 1 && items.len() > 1 => {
            pool.install(|| items.par_iter_mut().for_each(&f))
        }
        _ => items.iter_mut().for_each(f),
    }
}

/// Runs `main` on this thread; what it emits is gathered in batches, and each batch
/// goes to `work` on a worker while `main` goes on (a stage that streams into the next
/// one). Returns what `main` returned and each batch's result, in emission order.
pub(crate) fn stream<T, R, M>(
    main: impl FnOnce(&mut dyn FnMut(T)) -> M,
    work: impl Fn(Vec<T>) -> R + Sync,
) -> (M, Vec<R>)
where
    T: Send,
    R: Send,
{
    const BATCH: usize = MIN_ITEMS_PER_WORKER;
    let Some(pool) = pool().filter(|_| threads() > 1) else {
        let (mut out, mut batch) = (Vec::new(), Vec::new());
        let m = main(&mut |t| batch.push(t));
        if !batch.is_empty() {
            out.push(work(batch));
        }
        return (m, out);
    };
    let done = Mutex::new(Vec::new());
    let (work, finished) = (&work, &done);
    let (m, last) = pool.in_place_scope(|s| {
        let (mut batch, mut spawned) = (Vec::with_capacity(BATCH), 0);
        let m = main(&mut |t| {
            batch.push(t);
            if batch.len() == BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                let k = spawned;
                spawned += 1;
                s.spawn(move |_| {
                    let r = work(full);
                    finished
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push((k, r));
                });
            }
        });
        // The tail is small: this thread does it while the workers finish.
        let last = (!batch.is_empty()).then(|| (spawned, work(batch)));
        (m, last)
    });
    let mut out = done.into_inner().unwrap_or_else(PoisonError::into_inner);
    out.extend(last);
    out.sort_by_key(|(k, _)| *k);
    (m, out.into_iter().map(|(_, r)| r).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_results_come_back_in_input_order() {
        let items: Vec<u32> = (0..1000).collect();
        let sums = map_chunks(&items, MIN_ITEMS_PER_WORKER, |c| c.to_vec());
        assert_eq!(sums.concat(), items);
    }

    #[test]
    fn every_item_is_changed_once() {
        let mut items: Vec<u32> = (0..1000).collect();
        each_mut(&mut items, |x| *x *= 2);
        assert_eq!(items, (0..1000).map(|x| x * 2).collect::<Vec<_>>());
    }

    #[test]
    fn streamed_batches_come_back_in_emission_order() {
        let (count, batches) = stream(
            |emit| {
                (0..1000u32).for_each(&mut *emit);
                1000
            },
            |batch| batch,
        );
        assert_eq!(count, 1000);
        assert_eq!(batches.concat(), (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn small_inputs_stay_on_the_calling_thread() {
        let here = std::thread::current().id();
        let items = [1, 2, 3];
        let ids = map_chunks(&items, MIN_ITEMS_PER_WORKER, |_| {
            std::thread::current().id()
        });
        assert_eq!(ids, vec![here]);
    }
}
