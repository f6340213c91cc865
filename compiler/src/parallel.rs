//! Independent per-item work (building, checking, lowering one template) spread over
//! the machine's cores. Results come back in input order, so the output of a parallel
//! run is the output of a sequential one: same trees, same diagnostics, same bundle.

use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::thread;

/// Work below this many items per extra thread stays on the calling thread: starting
/// a thread costs more than a few small templates do.
pub const MIN_ITEMS_PER_WORKER: usize = 64;

/// Worker threads get the stack the main thread has, so that a deeply nested template
/// fails or succeeds the same way whichever thread reads it.
const WORKER_STACK: usize = 8 << 20;

/// How many threads the compiler uses: the machine's parallelism, or `TVC_THREADS`.
pub fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::env::var("TVC_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .or_else(|| thread::available_parallelism().ok().map(|n| n.get()))
            .unwrap_or(1)
            .max(1)
    })
}

/// Splits `items` into contiguous chunks of at least `min_per_worker` items, runs `f`
/// on each (the first on this thread) and returns the chunks' results in order. A
/// panic in a worker is re-raised here.
pub fn map_chunks<T, R>(items: &[T], min_per_worker: usize, f: impl Fn(&[T]) -> R + Sync) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    let workers = threads().min(items.len() / min_per_worker.max(1)).max(1);
    if workers == 1 {
        return vec![f(items)];
    }
    let size = items.len().div_ceil(workers);
    let mut chunks = items.chunks(size);
    let first = chunks.next().unwrap_or(&[]);
    let f = &f;
    thread::scope(|s| {
        let spawned: Vec<_> = chunks
            .map(|chunk| {
                let handle = thread::Builder::new()
                    .stack_size(WORKER_STACK)
                    .spawn_scoped(s, move || f(chunk));
                (chunk, handle)
            })
            .collect();
        let mut out = vec![f(first)];
        for (chunk, handle) in spawned {
            out.push(match handle {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                // No thread to be had: the work is still done, here.
                Err(_) => f(chunk),
            });
        }
        out
    })
}

/// Runs `produce` on a second thread while this thread hands what it yields, in order,
/// to `consume`: two stages overlap instead of taking turns. Without a second thread,
/// the same calls happen on this one.
pub fn pipeline<T, R, P>(produce: P, mut consume: impl FnMut(T)) -> R
where
    T: Send,
    R: Send,
    P: FnOnce(&mut dyn FnMut(T)) -> R + Send,
{
    if threads() < 2 {
        return produce(&mut consume);
    }
    // Items travel in batches: a hand-over per item would wake the other thread tens
    // of thousands of times, which costs more than the overlap saves.
    const BATCH: usize = 64;
    let (tx, rx) = mpsc::sync_channel::<Vec<T>>(16);
    let slot = Mutex::new(Some(produce));
    let take = || slot.lock().ok().and_then(|mut p| p.take());
    thread::scope(|s| {
        let producer = thread::Builder::new()
            .stack_size(WORKER_STACK)
            .spawn_scoped(s, || {
                let tx = tx;
                let mut batch = Vec::with_capacity(BATCH);
                let out = take().map(|p| {
                    p(&mut |t| {
                        batch.push(t);
                        if batch.len() == BATCH {
                            let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                            drop(tx.send(full));
                        }
                    })
                });
                drop(tx.send(batch));
                out
            });
        match producer {
            Ok(handle) => {
                rx.iter().flatten().for_each(&mut consume);
                match handle.join() {
                    Ok(Some(r)) => r,
                    Ok(None) => unreachable!("the producer runs exactly once"),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            Err(_) => match take() {
                Some(p) => p(&mut consume),
                None => unreachable!("a producer that never started was not taken"),
            },
        }
    })
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
    fn a_pipeline_consumes_everything_produced_in_order() {
        let mut seen = Vec::new();
        let total = pipeline(
            |emit| {
                (0..10_000u32).for_each(&mut *emit);
                10_000
            },
            |n| seen.push(n),
        );
        assert_eq!(total, 10_000);
        assert_eq!(seen, (0..10_000).collect::<Vec<_>>());
    }

    #[test]
    fn small_inputs_stay_on_the_calling_thread() {
        let here = thread::current().id();
        let items = [1, 2, 3];
        let ids = map_chunks(&items, MIN_ITEMS_PER_WORKER, |_| thread::current().id());
        assert_eq!(ids, vec![here]);
    }
}
