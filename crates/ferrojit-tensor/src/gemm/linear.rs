//! `linear` followed by an epilogue, on float32 tensors, with the weight packed once and
//! cached: the kernel behind the runtime's `ferrojit::linear_epilogue`.
//!
//! The cache is keyed on the weight's storage (the very buffer, held so its address cannot be
//! reused), its generation (bumped by every write, so an in-place update of the weight is
//! never answered from a stale copy), its view (offset, sizes, strides) and the kernel.
//! Entries whose storage nobody else holds any more are dropped; the total is bounded.

use std::sync::{Arc, Mutex};

use super::{
    gemm, Activation, ChannelAxis, Epilogue, Kernel, Operand, PackedMatrix, Residual, StridedMatrix,
};
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Result, TensorError};
use crate::storage::Storage;
use crate::tensor::Tensor;

/// Packed bytes the cache keeps at most (older entries go first).
const CACHE_BYTES: usize = 1 << 30;

struct CacheEntry {
    storage: Storage,
    generation: u64,
    offset: usize,
    sizes: Vec<usize>,
    strides: Vec<usize>,
    kernel: Kernel,
    packed: Arc<PackedMatrix>,
}

static CACHE: Mutex<Vec<CacheEntry>> = Mutex::new(Vec::new());

/// The weight (`out_features x in_features`, float32, any strides) packed for `kernel`, from
/// the cache when its values have not changed since it was packed.
pub fn packed_linear_weight(weight: &Tensor, kernel: Kernel) -> Result<Arc<PackedMatrix>> {
    if weight.dim() != 2 || weight.dtype() != DType::Float32 {
        return Err(TensorError::InvalidArgument(format!(
            "linear_epilogue: weight must be a 2-D float tensor, got {}-D {}",
            weight.dim(),
            weight.dtype().scalar_type_name()
        )));
    }
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
    let (n, k) = (weight.sizes()[0], weight.sizes()[1]);
    let (rs, cs) = (weight.strides()[0], weight.strides()[1]);
    let data = values.get(weight.storage_offset()..).unwrap_or(&[]);
    // weight.T: k x n, element (p, j) = weight[j, p].
    let src = StridedMatrix::new(data, k, n, cs, rs)?;
    let packed = Arc::new(PackedMatrix::pack(&src, super::Side::Right, kernel));
    drop(guard);
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    // Drop entries whose weights are gone (the cache's handle is the only one left) or stale.
    cache.retain(|e| e.storage.handle_count() > 1 && e.storage.generation() == e.generation);
    let mut total: usize = cache.iter().map(|e| e.packed.byte_len()).sum();
    while total + packed.byte_len() > CACHE_BYTES && !cache.is_empty() {
        total -= cache.remove(0).packed.byte_len();
    }
    if packed.byte_len() <= CACHE_BYTES {
        cache.push(CacheEntry {
            storage: storage.clone(),
            generation,
            offset: weight.storage_offset(),
            sizes: weight.sizes().to_vec(),
            strides: weight.strides().to_vec(),
            kernel,
            packed: Arc::clone(&packed),
        });
    }
    Ok(packed)
}

/// Number of packed weights cached now (for tests).
pub fn cached_weight_count() -> usize {
    CACHE.lock().unwrap_or_else(|p| p.into_inner()).len()
}

/// Whether [`linear_epilogue`] computes these operands itself; otherwise the caller runs the
/// unfused operators. All must be float32; the input at least 1-D with `in_features` last
/// and at least two rows;
/// the bias 1-D of `out_features`; the residual exactly the output's shape.
pub fn linear_epilogue_supported(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    residual: Option<&Tensor>,
) -> bool {
    let f32_ = |t: &Tensor| t.dtype() == DType::Float32;
    if !f32_(input) || !f32_(weight) || weight.dim() != 2 || input.dim() == 0 {
        return false;
    }
    let (n, k) = (weight.sizes()[0], weight.sizes()[1]);
    if input.sizes()[input.dim() - 1] != k {
        return false;
    }
    // One row is a matrix-vector product: packing buys nothing, and the unfused kernel sums
    // it in another order (see `ops::linalg`'s row product).
    let rows: usize = input.sizes()[..input.dim() - 1].iter().product();
    if rows < 2 {
        return false;
    }
    if let Some(b) = bias {
        if !f32_(b) || b.sizes() != [n] {
            return false;
        }
    }
    if let Some(r) = residual {
        let mut out = input.sizes().to_vec();
        *out.last_mut().expect("input is at least 1-D") = n;
        if !f32_(r) || r.sizes() != out.as_slice() {
            return false;
        }
    }
    true
}

/// `act(input @ weight.T + bias + residual)` (or `act(...) + residual`) for operands that
/// [`linear_epilogue_supported`] accepts, with the weight packed once and cached.
pub fn linear_epilogue(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    activation: Activation,
    residual: Option<&Tensor>,
    residual_after_activation: bool,
) -> Result<Tensor> {
    if !linear_epilogue_supported(input, weight, bias, residual) {
        return Err(TensorError::InvalidArgument(format!(
            "linear_epilogue: unsupported operands (input {:?} {}, weight {:?} {})",
            input.sizes(),
            input.dtype().scalar_type_name(),
            weight.sizes(),
            weight.dtype().scalar_type_name()
        )));
    }
    let (n, k) = (weight.sizes()[0], weight.sizes()[1]);
    let mut out_sizes = input.sizes().to_vec();
    *out_sizes.last_mut().expect("input is at least 1-D") = n;
    let m: usize = input.sizes()[..input.dim() - 1].iter().product();
    let packed = packed_linear_weight(weight, Kernel::best())?;
    let x = input.contiguous();
    let x_values = x.to_vec::<f32>()?;
    let bias_values = bias.map(|b| b.contiguous().to_vec::<f32>()).transpose()?;
    let residual_values = residual
        .map(|r| r.contiguous().to_vec::<f32>())
        .transpose()?;
    let epilogue = Epilogue {
        axis: ChannelAxis::Columns,
        scale: None,
        shift: bias_values.as_deref(),
        residual: residual_values.as_deref().map(|data| Residual {
            data,
            row_stride: n,
        }),
        residual_after_activation,
        activation,
    };
    let mut out = vec![0f32; m * n];
    let lhs = StridedMatrix::row_major(&x_values, m, k)?;
    gemm(
        Operand::Strided(lhs),
        Operand::Packed(&packed),
        &mut out,
        &epilogue,
    )?;
    Ok(Tensor::from_values(out, &out_sizes))
}
