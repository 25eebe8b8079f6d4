//! The cache of packed constant operands (a linear layer's or a convolution's weight),
//! shared by `linear_epilogue` and the packed convolution.
//!
//! Entries are keyed on the weight's storage (the very buffer, held so its address cannot
//! be reused), its generation (bumped by every write, so an in-place update of the weight is
//! never answered from a stale copy), its view (offset, sizes, strides), the kernel and how
//! it was laid out. Entries whose storage nobody else holds any more are dropped; the total
//! is bounded.

use std::sync::{Arc, Mutex};

use super::{Kernel, PackedMatrix};
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Result, TensorError};
use crate::storage::Storage;
use crate::tensor::Tensor;

/// Packed bytes the cache keeps at most (older entries go first).
const CACHE_BYTES: usize = 1 << 30;

/// How a weight was turned into packed operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PackLayout {
    /// `weight.T` as the right operand of `input @ weight.T` (one matrix).
    LinearRight,
    /// One left operand per group, `out_channels / groups x (in_channels / groups * kernel
    /// elements)`, for `weight @ columns`.
    ConvLeft { groups: usize },
    /// Sixteen left operands, `out_channels x in_channels` each: the Winograd F(2x2, 3x3)
    /// transform `G g G^T` of every 3x3 filter, one operand per transformed tap.
    WinogradLeft,
}

struct CacheEntry {
    storage: Storage,
    generation: u64,
    offset: usize,
    sizes: Vec<usize>,
    strides: Vec<usize>,
    kernel: Kernel,
    layout: PackLayout,
    packed: Arc<Vec<PackedMatrix>>,
}

static CACHE: Mutex<Vec<CacheEntry>> = Mutex::new(Vec::new());

/// The float32 `weight` packed by `pack` (given the storage's values from the view's offset
/// on), from the cache when its values have not changed since it was packed with the same
/// kernel and layout.
pub(crate) fn cached_packing(
    weight: &Tensor,
    kernel: Kernel,
    layout: PackLayout,
    pack: impl FnOnce(&[f32]) -> Result<Vec<PackedMatrix>>,
) -> Result<Arc<Vec<PackedMatrix>>> {
    let storage = weight.storage();
    let guard = storage.read();
    // Read under the read lock: writers bump it while holding the write lock.
    let generation = storage.generation();
    let matches = |e: &CacheEntry| {
        Storage::ptr_eq(&e.storage, storage)
            && e.generation == generation
            && e.offset == weight.storage_offset()
            && e.sizes == weight.sizes()
            && e.strides == weight.strides()
            && e.kernel == kernel
            && e.layout == layout
    };
    {
        let cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = cache.iter().find(|e| matches(e)) {
            return Ok(Arc::clone(&entry.packed));
        }
    }
    let values = f32::slice_of(&guard).ok_or(TensorError::TypeMismatch {
        expected: DType::Float32,
        actual: weight.dtype(),
    })?;
    let data = values.get(weight.storage_offset()..).unwrap_or(&[]);
    let packed = Arc::new(pack(data)?);
    drop(guard);
    let bytes = |p: &[PackedMatrix]| p.iter().map(PackedMatrix::byte_len).sum::<usize>();
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    // Drop entries whose weights are gone (the cache's handle is the only one left) or stale.
    cache.retain(|e| e.storage.handle_count() > 1 && e.storage.generation() == e.generation);
    let mut total: usize = cache.iter().map(|e| bytes(&e.packed)).sum();
    let size = bytes(&packed);
    while total + size > CACHE_BYTES && !cache.is_empty() {
        total -= bytes(&cache.remove(0).packed);
    }
    if size <= CACHE_BYTES {
        cache.push(CacheEntry {
            storage: storage.clone(),
            generation,
            offset: weight.storage_offset(),
            sizes: weight.sizes().to_vec(),
            strides: weight.strides().to_vec(),
            kernel,
            layout,
            packed: Arc::clone(&packed),
        });
    }
    Ok(packed)
}

/// Number of packed weights cached now (for tests).
pub fn cached_weight_count() -> usize {
    CACHE.lock().unwrap_or_else(|p| p.into_inner()).len()
}
