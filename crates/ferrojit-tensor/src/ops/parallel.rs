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

#[cfg(test)]
mod tests {
    use super::split_ranges;

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
