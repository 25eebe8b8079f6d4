//! The one global worker pool (rayon) used by the heavy kernels (GEMM, convolution, large
//! element loops), with a configurable thread count.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Requested thread count; 0 means "not configured yet".
static CONFIGURED_THREADS: AtomicUsize = AtomicUsize::new(0);

/// Work below this many multiply-adds (or elements) runs on the calling thread: handing it to
/// the pool costs more than it saves.
pub const PARALLEL_THRESHOLD: usize = 1 << 15;

/// Sets the number of worker threads. Takes effect only before the pool is first used (the pool
/// is built once); returns whether the setting was applied.
pub fn set_num_threads(threads: usize) -> bool {
    let threads = threads.max(1);
    let applied = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .is_ok();
    if applied {
        CONFIGURED_THREADS.store(threads, Ordering::Relaxed);
    }
    applied
}

/// The number of threads kernels split work across. The pool is sized from
/// `FERROJIT_NUM_THREADS` when set, otherwise from rayon's default (the number of cores).
pub fn num_threads() -> usize {
    let configured = CONFIGURED_THREADS.load(Ordering::Relaxed);
    if configured > 0 {
        return configured;
    }
    if let Some(threads) = std::env::var("FERROJIT_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        set_num_threads(threads);
    }
    rayon::current_num_threads()
}

/// Splits `0..len` into at most `parts` contiguous ranges of near-equal length.
pub fn split_ranges(len: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    let parts = parts.clamp(1, len.max(1));
    let base = len / parts;
    let extra = len % parts;
    let mut ranges = Vec::with_capacity(parts);
    let mut start = 0;
    for p in 0..parts {
        let size = base + usize::from(p < extra);
        ranges.push(start..start + size);
        start += size;
    }
    ranges
}

/// Runs `f` over `values` split into one contiguous chunk per thread when there are enough
/// elements to pay for the hand-off, otherwise over all of it on the calling thread.
pub(crate) fn for_each_chunk_mut<T: Send>(values: &mut [T], f: impl Fn(&mut [T]) + Sync) {
    if !parallel_worthwhile(values.len()) {
        f(values);
        return;
    }
    let threads = num_threads();
    use rayon::prelude::*;
    values
        .par_chunks_mut(values.len().div_ceil(threads))
        .for_each(&f);
}

/// Whether a loop over `len` elements is worth splitting across the pool.
fn parallel_worthwhile(len: usize) -> bool {
    len >= PARALLEL_THRESHOLD && num_threads() > 1
}

/// `values.iter().map(f).collect()`, split across the pool for long inputs (same results: each
/// output depends on one input only).
pub(crate) fn map_collect<T: Sync, R: Send>(
    values: &[T],
    f: impl Fn(&T) -> R + Sync + Send,
) -> Vec<R> {
    if parallel_worthwhile(values.len()) {
        use rayon::prelude::*;
        values.par_iter().map(f).collect()
    } else {
        values.iter().map(f).collect()
    }
}

/// `f` over pairs of equally long slices, collected in order; split like [`map_collect`].
pub(crate) fn zip_map_collect<T: Sync + Copy, R: Send>(
    a: &[T],
    b: &[T],
    f: impl Fn(T, T) -> R + Sync + Send,
) -> Vec<R> {
    if parallel_worthwhile(a.len()) {
        use rayon::prelude::*;
        a.par_iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
    } else {
        a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::{for_each_chunk_mut, map_collect, split_ranges, zip_map_collect};

    #[test]
    fn parallel_maps_keep_order() {
        for len in [0, 3, super::PARALLEL_THRESHOLD * 2 + 1] {
            let a: Vec<u64> = (0..len as u64).collect();
            let b: Vec<u64> = a.iter().map(|x| x * 3).collect();
            assert_eq!(map_collect(&a, |x| x * 3), b);
            let sums: Vec<u64> = a.iter().map(|x| x * 4).collect();
            assert_eq!(zip_map_collect(&a, &b, |x, y| x + y), sums);
        }
    }

    #[test]
    fn chunked_loop_visits_every_element_once() {
        for len in [0, 1, 5, super::PARALLEL_THRESHOLD + 3] {
            let mut values = vec![1u32; len];
            for_each_chunk_mut(&mut values, |chunk| chunk.iter_mut().for_each(|v| *v += 1));
            assert!(values.iter().all(|&v| v == 2));
        }
    }

    #[test]
    fn ranges_cover_everything_once() {
        for len in 0..20 {
            for parts in 1..6 {
                let ranges = split_ranges(len, parts);
                let total: usize = ranges.iter().map(|r| r.len()).sum();
                assert_eq!(total, len);
                for pair in ranges.windows(2) {
                    assert_eq!(pair[0].end, pair[1].start);
                }
            }
        }
    }
}
