//! Matrix products: `mm`, `bmm`, `matmul`, `addmm` and `linear`. Float32 products of two or
//! more rows use the packed GEMM of `crate::gemm` (the right operand packed once and cached);
//! other float products the matrixmultiply crate, one-row products the GEMV of `gemv.rs`;
//! integer types a plain triple loop.

mod gemv;

use crate::dtype::{DType, Scalar};
use crate::element::Arith;
use crate::error::{format_shape, Result, TensorError};
use crate::macros::dispatch_dtype;
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

/// Element types that can be multiplied as matrices.
pub(crate) trait GemmElement: Arith {
    /// `out[b] = a[b] (n x k) @ b[b] (k x m)` for `batch` row-major contiguous matrices.
    fn batched_gemm(
        a: &[Self],
        b: &[Self],
        batch: usize,
        n: usize,
        k: usize,
        m: usize,
    ) -> Vec<Self>;

    /// The same product read straight from strided operands (see [`batched_product`]), for
    /// types with a strided kernel; `None` means "gather the operands first".
    fn strided_product(
        _a: &Tensor,
        _b: &Tensor,
        _batch: usize,
        _n: usize,
        _k: usize,
        _m: usize,
    ) -> Option<Vec<Self>> {
        None
    }
}

fn naive_batched_gemm<T: Arith>(
    a: &[T],
    b: &[T],
    batch: usize,
    n: usize,
    k: usize,
    m: usize,
) -> Vec<T> {
    let mut out = vec![T::zero(); batch * n * m];
    for bi in 0..batch {
        let a_mat = &a[bi * n * k..(bi + 1) * n * k];
        let b_mat = &b[bi * k * m..(bi + 1) * k * m];
        let out_mat = &mut out[bi * n * m..(bi + 1) * n * m];
        for i in 0..n {
            for p in 0..k {
                let x = a_mat[i * k + p];
                for j in 0..m {
                    out_mat[i * m + j] = out_mat[i * m + j].add(x.mul(b_mat[p * m + j]));
                }
            }
        }
    }
    out
}

macro_rules! impl_gemm_naive {
    ($($t:ty),*) => {$(
        impl GemmElement for $t {
            fn batched_gemm(a: &[Self], b: &[Self], batch: usize, n: usize, k: usize, m: usize) -> Vec<Self> {
                naive_batched_gemm(a, b, batch, n, k, m)
            }
        }
    )*};
}
impl_gemm_naive!(
    bool,
    u8,
    i8,
    i16,
    i32,
    i64,
    half::f16,
    half::bf16,
    crate::complex::Complex64,
    crate::complex::Complex128
);

/// Float element types with a fast (matrixmultiply) GEMM, split across the global pool.
pub(crate) trait FloatGemm:
    Copy
    + Send
    + Sync
    + PartialEq
    + std::ops::Add<Output = Self>
    + std::ops::Mul<Output = Self>
    + 'static
{
    const ZERO: Self;
    const ONE: Self;
    /// The raw single-threaded kernel: `c = a @ b + beta * c` (row stride of c is `n`).
    ///
    /// # Safety
    /// The caller guarantees that every address formed from the sizes and strides lies inside
    /// the given pointers' allocations and that `c` does not alias `a` or `b`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn raw_gemm(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        a_rs: isize,
        a_cs: isize,
        b: *const Self,
        b_rs: isize,
        b_cs: isize,
        beta: Self,
        c: *mut Self,
        c_rs: isize,
    );

    /// `self * b + c` rounded once; only called where the CPU has a fused multiply-add.
    fn fused_multiply_add(self, b: Self, c: Self) -> Self;
}

macro_rules! impl_float_gemm {
    ($t:ty, $gemm:path) => {
        impl FloatGemm for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            unsafe fn raw_gemm(
                m: usize,
                k: usize,
                n: usize,
                a: *const Self,
                a_rs: isize,
                a_cs: isize,
                b: *const Self,
                b_rs: isize,
                b_cs: isize,
                beta: Self,
                c: *mut Self,
                c_rs: isize,
            ) {
                // SAFETY: forwarded from the caller's contract above.
                unsafe { $gemm(m, k, n, 1.0, a, a_rs, a_cs, b, b_rs, b_cs, beta, c, c_rs, 1) }
            }

            #[inline(always)]
            fn fused_multiply_add(self, b: Self, c: Self) -> Self {
                self.mul_add(b, c)
            }
        }
    };
}
impl_float_gemm!(f32, matrixmultiply::sgemm);
impl_float_gemm!(f64, matrixmultiply::dgemm);

/// Whether a strided `rows x cols` matrix stays inside a slice of `len` elements.
fn strided_fits(len: usize, rows: usize, cols: usize, rs: usize, cs: usize) -> bool {
    if rows == 0 || cols == 0 {
        return true;
    }
    (rows - 1)
        .checked_mul(rs)
        .and_then(|r| (cols - 1).checked_mul(cs).and_then(|c| r.checked_add(c)))
        .is_some_and(|last| last < len)
}

/// `c = a @ b + beta * c` for an `m x k` matrix `a` and a `k x n` matrix `b` given by slices and
/// (row, column) strides, and a row-major contiguous `m x n` matrix `c`. Large products are
/// split across the global pool.
#[allow(clippy::too_many_arguments)]
pub(crate) fn strided_gemm<T: FloatGemm>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    a_strides: (usize, usize),
    b: &[T],
    b_strides: (usize, usize),
    beta: T,
    c: &mut [T],
) -> Result<()> {
    let work = m.saturating_mul(n).saturating_mul(k.max(1));
    let threads = if work >= crate::ops::parallel::PARALLEL_THRESHOLD {
        crate::ops::parallel::num_threads()
    } else {
        1
    };
    gemm_on_threads(m, k, n, a, a_strides, b, b_strides, beta, c, threads)
}

/// A raw output pointer handed to pool tasks that each write a disjoint set of its elements.
struct SharedOut<T>(*mut T);

// SAFETY: the pointer is only dereferenced by `gemm_on_threads`, whose tasks write disjoint
// column blocks of one exclusively borrowed slice; `T: Send` values may be written from any thread.
unsafe impl<T: Send> Send for SharedOut<T> {}
// SAFETY: as above; no task reads or writes another task's elements.
unsafe impl<T: Send> Sync for SharedOut<T> {}

impl<T> SharedOut<T> {
    /// A method (not a field access) so closures capture the whole `Sync` wrapper.
    fn ptr(&self) -> *mut T {
        self.0
    }
}

/// [`strided_gemm`] on up to `threads` pool threads. A wide `c` is split by columns (each task
/// packs only its part of `b`, the large operand), a tall one by rows. Every element of `c` is
/// computed by the same kernel over the same `k` order either way, so results do not depend
/// on the split.
#[allow(clippy::too_many_arguments)]
fn gemm_on_threads<T: FloatGemm>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    (a_rs, a_cs): (usize, usize),
    b: &[T],
    (b_rs, b_cs): (usize, usize),
    beta: T,
    c: &mut [T],
    threads: usize,
) -> Result<()> {
    let fits = strided_fits(a.len(), m, k, a_rs, a_cs)
        && strided_fits(b.len(), k, n, b_rs, b_cs)
        && m.checked_mul(n).is_some_and(|mn| mn <= c.len());
    if !fits {
        return Err(TensorError::InvalidArgument(
            "internal error: GEMM operands do not match their sizes".to_string(),
        ));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    let c = &mut c[..m * n];
    if m == 1 {
        // One row reads each element of `b` once: packing it would cost as much as the product.
        gemv::row_times_matrix(k, n, a, a_cs, b, (b_rs, b_cs), beta, c, threads);
        return Ok(());
    }
    use rayon::prelude::*;
    if threads > 1 && n > m && n >= 32 {
        // Column blocks, rounded to a multiple of 16 (a whole number of kernel tiles).
        let cols_per_block = n.div_ceil(threads).div_ceil(16) * 16;
        let blocks = n.div_ceil(cols_per_block);
        let out = SharedOut(c.as_mut_ptr());
        (0..blocks).into_par_iter().for_each(|block| {
            let col_start = block * cols_per_block;
            let cols = cols_per_block.min(n - col_start);
            // SAFETY: `strided_fits` checked that all of `a` (m x k) and `b` (k x n) lie inside
            // their slices; columns col_start..col_start+cols of `b` start at col_start * b_cs,
            // inside that extent. `c` is an exclusive borrow of m * n elements held for the
            // whole parallel loop; this task writes rows 0..m, columns col_start..+cols of it
            // (row stride n), which no other task touches, and nothing reads `c` meanwhile.
            unsafe {
                T::raw_gemm(
                    m,
                    k,
                    cols,
                    a.as_ptr(),
                    a_rs as isize,
                    a_cs as isize,
                    b.as_ptr().add(col_start * b_cs),
                    b_rs as isize,
                    b_cs as isize,
                    beta,
                    out.ptr().add(col_start),
                    n as isize,
                )
            }
        });
        return Ok(());
    }
    let run_block = |row_start: usize, rows: usize, c_block: &mut [T]| {
        // SAFETY: `strided_fits` checked that rows 0..m of `a` (so rows row_start..row_start+rows,
        // whose first element is at row_start * a_rs) and all of `b` lie inside their slices;
        // `c_block` holds exactly `rows * n` elements with row stride n. `c_block` is an exclusive
        // borrow distinct from the shared input slices, so nothing aliases.
        unsafe {
            T::raw_gemm(
                rows,
                k,
                n,
                a.as_ptr().add(row_start * a_rs),
                a_rs as isize,
                a_cs as isize,
                b.as_ptr(),
                b_rs as isize,
                b_cs as isize,
                beta,
                c_block.as_mut_ptr(),
                n as isize,
            )
        }
    };
    let threads = threads.min(m);
    if threads <= 1 {
        run_block(0, m, c);
        return Ok(());
    }
    let rows_per_block = m.div_ceil(threads);
    c.par_chunks_mut(rows_per_block * n)
        .enumerate()
        .for_each(|(block, c_block)| {
            let rows = c_block.len() / n;
            run_block(block * rows_per_block, rows, c_block);
        });
    Ok(())
}

/// Where each matrix of a stacked GEMM operand starts in its storage, and its (row, column)
/// strides.
struct MatrixStack {
    offsets: Vec<usize>,
    strides: (usize, usize),
}

/// The matrices of `t` viewed as `batch` stacked `rows x cols` matrices: the last two dims are
/// the matrix, the leading dims (any strides, broadcast included) the stack. A 1-D `t` is one
/// row (`rows == 1`) or one column (`cols == 1`). `None` when the shape does not fit.
fn matrix_stack(t: &Tensor, batch: usize, rows: usize, cols: usize) -> Option<MatrixStack> {
    let (sizes, strides) = (t.sizes(), t.strides());
    let d = sizes.len();
    if d >= 2 {
        let lead = &sizes[..d - 2];
        if sizes[d - 2] != rows || sizes[d - 1] != cols || lead.iter().product::<usize>() != batch {
            return None;
        }
        let offsets =
            crate::tensor::StridedOffsets::new(lead, &strides[..d - 2], t.storage_offset())
                .collect();
        Some(MatrixStack {
            offsets,
            strides: (strides[d - 2], strides[d - 1]),
        })
    } else if d == 1 && batch == 1 && sizes[0] == rows * cols {
        // The unused stride of a single row or column never enters an address.
        let strides = if rows == 1 {
            (0, strides[0])
        } else if cols == 1 {
            (strides[0], 0)
        } else {
            return None;
        };
        Some(MatrixStack {
            offsets: vec![t.storage_offset()],
            strides,
        })
    } else {
        None
    }
}

/// Stacked float products read straight from the operands' storages with their strides (no
/// gathered copies). `None` when a layout cannot be described as stacked strided matrices.
fn strided_batched_product<T: FloatGemm + crate::element::Element>(
    a: &Tensor,
    b: &Tensor,
    batch: usize,
    n: usize,
    k: usize,
    m: usize,
) -> Option<Vec<T>> {
    let mut out = vec![T::ZERO; batch * n * m];
    if out.is_empty() || k == 0 {
        // Zero-size operands may carry any offset, so their storage is never read.
        return Some(out);
    }
    let stack_a = matrix_stack(a, batch, n, k)?;
    let stack_b = matrix_stack(b, batch, k, m)?;
    let guard_a = a.storage().read();
    // Both operands often view one storage (q and k of one projection): lock it once.
    let guard_b = if a.shares_storage(b) {
        None
    } else {
        Some(b.storage().read())
    };
    let src_a = T::slice_of(&guard_a)?;
    let src_b = match &guard_b {
        Some(guard) => T::slice_of(guard)?,
        None => src_a,
    };
    let threads = crate::ops::parallel::num_threads();
    let work = batch.saturating_mul(n).saturating_mul(m).saturating_mul(k);
    let per_matrix = |index: usize, c: &mut [T], threads: usize| -> Result<()> {
        let a_mat = src_a.get(stack_a.offsets[index]..).unwrap_or(&[]);
        let b_mat = src_b.get(stack_b.offsets[index]..).unwrap_or(&[]);
        gemm_on_threads(
            n,
            k,
            m,
            a_mat,
            stack_a.strides,
            b_mat,
            stack_b.strides,
            T::ZERO,
            c,
            threads,
        )
    };
    let size = n * m;
    let ok = if work < crate::ops::parallel::PARALLEL_THRESHOLD || threads <= 1 {
        out.chunks_mut(size)
            .enumerate()
            .all(|(i, c)| per_matrix(i, c, 1).is_ok())
    } else if batch.is_multiple_of(threads) || batch >= 4 * threads {
        // Enough matrices to keep every thread busy with whole products.
        use rayon::prelude::*;
        out.par_chunks_mut(size)
            .enumerate()
            .all(|(i, c)| per_matrix(i, c, 1).is_ok())
    } else {
        out.chunks_mut(size)
            .enumerate()
            .all(|(i, c)| per_matrix(i, c, threads).is_ok())
    };
    ok.then_some(out)
}

macro_rules! impl_gemm_float {
    ($t:ty) => {
        impl GemmElement for $t {
            fn batched_gemm(
                a: &[Self],
                b: &[Self],
                batch: usize,
                n: usize,
                k: usize,
                m: usize,
            ) -> Vec<Self> {
                let mut out = vec![0.0; batch * n * m];
                if n == 0 || m == 0 || k == 0 {
                    return out;
                }
                let (sa, sb, so) = (n * k, k * m, n * m);
                for bi in 0..batch {
                    let (Some(a_mat), Some(b_mat)) =
                        (a.get(bi * sa..(bi + 1) * sa), b.get(bi * sb..(bi + 1) * sb))
                    else {
                        return out;
                    };
                    let out_mat = &mut out[bi * so..(bi + 1) * so];
                    // Sizes match by construction, so this cannot fail.
                    let _ = strided_gemm(n, k, m, a_mat, (k, 1), b_mat, (m, 1), 0.0, out_mat);
                }
                out
            }

            fn strided_product(
                a: &Tensor,
                b: &Tensor,
                batch: usize,
                n: usize,
                k: usize,
                m: usize,
            ) -> Option<Vec<Self>> {
                strided_batched_product::<Self>(a, b, batch, n, k, m)
            }
        }
    };
}
impl_gemm_float!(f32);
impl_gemm_float!(f64);

/// Lower-case C++ type names PyTorch prints in dtype mismatch messages of matrix products.
fn cpp_type_name(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        DType::UInt8 => "unsigned char",
        DType::Int8 => "signed char",
        DType::Int16 => "short int",
        DType::Int32 => "int",
        DType::Int64 => "long int",
        DType::Float16 => "c10::Half",
        DType::BFloat16 => "c10::BFloat16",
        DType::Float32 => "float",
        DType::Float64 => "double",
        DType::ComplexFloat => "c10::complex<float>",
        DType::ComplexDouble => "c10::complex<double>",
    }
}

fn check_same_dtype(a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() != b.dtype() {
        return Err(TensorError::InvalidArgument(format!(
            "expected m1 and m2 to have the same dtype, but got: {} != {}",
            cpp_type_name(a.dtype()),
            cpp_type_name(b.dtype())
        )));
    }
    if a.dtype() == DType::Bool {
        return Err(TensorError::NotImplementedForDType {
            op: "addmm_impl_cpu_",
            dtype: DType::Bool,
        });
    }
    Ok(())
}

/// Multiplies `batch` stacked matrices; `a` and `b` must already have shapes
/// `[batch..., n, k]` and `[batch..., k, m]` (any strides), or be 1-D rows/columns.
fn batched_product(a: &Tensor, b: &Tensor, batch: usize, n: usize, k: usize, m: usize) -> Tensor {
    dispatch_dtype!(a.dtype(), T => {
        Tensor::from_values(batched_product_values::<T>(a, b, batch, n, k, m), &[batch, n, m])
    })
}

/// The elements of [`batched_product`] in logical order.
fn batched_product_values<T: GemmElement>(
    a: &Tensor,
    b: &Tensor,
    batch: usize,
    n: usize,
    k: usize,
    m: usize,
) -> Vec<T> {
    if let Some(out) = T::strided_product(a, b, batch, n, k, m) {
        return out;
    }
    let av = a.gather::<T>();
    let bv = b.gather::<T>();
    T::batched_gemm(&av, &bv, batch, n, k, m)
}

impl Tensor {
    fn mm_impl(&self, mat2: &Tensor, op: &'static str) -> Result<Tensor> {
        if self.dim() != 2 {
            return Err(TensorError::InvalidArgument(format!(
                "{op}: self must be a matrix, got {}-D tensor",
                self.dim()
            )));
        }
        if mat2.dim() != 2 {
            return Err(TensorError::InvalidArgument(format!(
                "{op}: mat2 must be a matrix, got {}-D tensor",
                mat2.dim()
            )));
        }
        let (n, k) = (self.sizes()[0], self.sizes()[1]);
        let (k2, m) = (mat2.sizes()[0], mat2.sizes()[1]);
        if k != k2 {
            return Err(TensorError::MatmulShape {
                op,
                rows_a: n,
                cols_a: k,
                rows_b: k2,
                cols_b: m,
            });
        }
        check_same_dtype(self, mat2)?;
        if packed_product_applies(self, mat2) {
            return packed_linear(self, mat2, None);
        }
        batched_product(self, mat2, 1, n, k, m).reshape_usize(&[n, m])
    }

    /// Matrix product of two 2-D tensors of the same dtype.
    pub fn mm(&self, mat2: &Tensor) -> Result<Tensor> {
        self.mm_impl(mat2, "mm")
    }

    /// Batched matrix product of two 3-D tensors with equal batch size.
    pub fn bmm(&self, mat2: &Tensor) -> Result<Tensor> {
        if self.dim() != 3 {
            return Err(TensorError::InvalidArgument(format!(
                "batch1 must be a 3D tensor, got {}-D tensor",
                self.dim()
            )));
        }
        if mat2.dim() != 3 {
            return Err(TensorError::InvalidArgument(format!(
                "batch2 must be a 3D tensor, got {}-D tensor",
                mat2.dim()
            )));
        }
        let (batch, n, k) = (self.sizes()[0], self.sizes()[1], self.sizes()[2]);
        if mat2.sizes()[0] != batch || mat2.sizes()[1] != k {
            return Err(TensorError::InvalidArgument(format!(
                "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
                batch,
                k,
                mat2.sizes()[0],
                mat2.sizes()[1]
            )));
        }
        check_same_dtype(self, mat2)?;
        let m = mat2.sizes()[2];
        Ok(batched_product(self, mat2, batch, n, k, m))
    }

    /// Dot product of two 1-D tensors.
    pub fn dot(&self, other: &Tensor) -> Result<Tensor> {
        if self.dim() != 1 || other.dim() != 1 {
            return Err(TensorError::InvalidArgument(format!(
                "1D tensors expected, but got {}D and {}D tensors",
                self.dim(),
                other.dim()
            )));
        }
        if self.dtype() != other.dtype() {
            return Err(TensorError::InvalidArgument(format!(
                "dot : expected both vectors to have same dtype, but found {} and {}",
                self.dtype().scalar_type_name(),
                other.dtype().scalar_type_name()
            )));
        }
        let (k, k2) = (self.sizes()[0], other.sizes()[0]);
        if k != k2 {
            return Err(TensorError::InvalidArgument(format!(
                "inconsistent tensor size, expected tensor [{k}] and src [{k2}] to have the same number of elements, but got {k} and {k2} elements respectively"
            )));
        }
        check_same_dtype(self, other)?;
        batched_product(self, other, 1, 1, k, 1).reshape_usize(&[])
    }

    /// Matrix-vector product.
    pub fn mv(&self, vec: &Tensor) -> Result<Tensor> {
        if self.dim() != 2 || vec.dim() != 1 {
            return Err(TensorError::InvalidArgument(format!(
                "vector + matrix @ vector expected, got 1, {}, {}",
                self.dim(),
                vec.dim()
            )));
        }
        let (n, k) = (self.sizes()[0], self.sizes()[1]);
        if vec.sizes()[0] != k {
            return Err(TensorError::InvalidArgument(format!(
                "size mismatch, got input ({}), mat ({}x{}), vec ({})",
                n,
                n,
                k,
                vec.sizes()[0]
            )));
        }
        check_same_dtype(self, vec)?;
        batched_product(self, vec, 1, n, k, 1).reshape_usize(&[n])
    }

    /// `torch.matmul` with PyTorch's rules for 1-D, 2-D and batched (broadcast) operands.
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        let (d1, d2) = (self.dim(), other.dim());
        if d1 == 0 || d2 == 0 {
            return Err(TensorError::InvalidArgument(format!(
                "both arguments to matmul need to be at least 1D, but they are {d1}D and {d2}D"
            )));
        }
        match (d1, d2) {
            (1, 1) => self.dot(other),
            (2, 1) => self.mv(other),
            (1, 2) => self.unsqueeze(0)?.mm(other)?.squeeze_dim(0),
            (2, 2) => self.mm(other),
            (_, 1) => {
                // Fold the batch dims of `self` into rows: one matrix-vector product.
                let k = self.sizes()[d1 - 1];
                let lead = &self.sizes()[..d1 - 1];
                let rows: usize = lead.iter().product();
                let folded = self.reshape_usize(&[rows, k])?;
                folded.mv(other)?.reshape_usize(lead)
            }
            (_, 2) => {
                let k = self.sizes()[d1 - 1];
                let lead = &self.sizes()[..d1 - 1];
                let rows: usize = lead.iter().product();
                let folded = self.reshape_usize(&[rows, k])?;
                let product = folded.mm(other)?;
                let mut out_sizes = lead.to_vec();
                out_sizes.push(other.sizes()[1]);
                product.reshape_usize(&out_sizes)
            }
            _ => self.batched_matmul(other),
        }
    }

    fn batched_matmul(&self, other: &Tensor) -> Result<Tensor> {
        let (d1, d2) = (self.dim(), other.dim());
        let (s1, s2) = (self.sizes(), other.sizes());
        let n = if d1 > 1 { s1[d1 - 2] } else { 1 };
        let k = s1[d1 - 1];
        let (k2, m) = if d2 > 1 {
            (s2[d2 - 2], s2[d2 - 1])
        } else {
            (s2[0], 1)
        };
        let batch1 = &s1[..d1.saturating_sub(2)];
        let batch2 = &s2[..d2.saturating_sub(2)];
        let batch_shape = broadcast_shapes(batch1, batch2)?;
        let batch: usize = batch_shape.iter().product();
        if k != k2 {
            return Err(TensorError::InvalidArgument(format!(
                "Expected size for first two dimensions of batch2 tensor to be: [{batch}, {k}] but got: [{batch}, {k2}]."
            )));
        }
        check_same_dtype(self, other)?;
        let mut shape1 = batch_shape.clone();
        shape1.extend([n, k]);
        let mut shape2 = batch_shape.clone();
        shape2.extend([k, m]);
        let t1 = if d1 == 1 {
            self.unsqueeze(0)?
        } else {
            self.clone()
        };
        let t2 = if d2 == 1 {
            other.unsqueeze(1)?
        } else {
            other.clone()
        };
        let a = t1.broadcast_to(&shape1)?;
        let b = t2.broadcast_to(&shape2)?;
        let product = batched_product(&a, &b, batch, n, k, m);
        let mut out_sizes = batch_shape;
        if d1 > 1 {
            out_sizes.push(n);
        }
        if d2 > 1 {
            out_sizes.push(m);
        }
        product.reshape_usize(&out_sizes)
    }

    /// `beta * self + alpha * (mat1 @ mat2)` where `self` broadcasts to the product's shape.
    pub fn addmm(
        &self,
        mat1: &Tensor,
        mat2: &Tensor,
        beta: &Scalar,
        alpha: &Scalar,
    ) -> Result<Tensor> {
        if mat1.dim() != 2 {
            return Err(TensorError::InvalidArgument(format!(
                "addmm: mat1 must be a matrix, got {}-D tensor",
                mat1.dim()
            )));
        }
        if mat2.dim() != 2 {
            return Err(TensorError::InvalidArgument(format!(
                "addmm: mat2 must be a matrix, got {}-D tensor",
                mat2.dim()
            )));
        }
        let (n, m) = (mat1.sizes()[0], mat2.sizes()[1]);
        if mat1.sizes()[1] != mat2.sizes()[0] {
            return Err(TensorError::MatmulShape {
                op: "addmm",
                rows_a: n,
                cols_a: mat1.sizes()[1],
                rows_b: mat2.sizes()[0],
                cols_b: m,
            });
        }
        let bias = self.broadcast_to(&[n, m])?;
        if self.dtype() != mat2.dtype() || mat1.dtype() != mat2.dtype() {
            let other = if self.dtype() != mat2.dtype() {
                self.dtype()
            } else {
                mat1.dtype()
            };
            return Err(TensorError::InvalidArgument(format!(
                "self and mat2 must have the same dtype, but got {} and {}",
                other.scalar_type_name(),
                mat2.dtype().scalar_type_name()
            )));
        }
        // The dtype checks of `mm`; the product stays a plain vector, combined in place.
        check_same_dtype(mat1, mat2)?;
        let k = mat1.sizes()[1];
        if packed_product_applies(mat1, mat2) {
            let unit = |s: &Scalar| s.to_f64() == 1.0;
            if unit(beta) && unit(alpha) && self.sizes() == [m] {
                // `linear` as torch.export writes it: the bias added on each output tile.
                return packed_linear(mat1, mat2, Some(self));
            }
            let product = packed_linear(mat1, mat2, None)?.to_vec::<f32>()?;
            return Ok(addmm_combine::<f32>(&bias, product, beta, alpha, &[n, m]));
        }
        dispatch_dtype!(self.dtype(), T => {
            let product = batched_product_values::<T>(mat1, mat2, 1, n, k, m);
            Ok(addmm_combine::<T>(&bias, product, beta, alpha, &[n, m]))
        })
    }

    /// `self @ weight.T + bias` for any number of leading dims of `self`.
    pub fn linear(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        linear(self, weight, bias)
    }
}

/// Whether `mat1 @ mat2` (2-D, dtypes checked) runs as the packed float32 GEMM: two or more
/// rows and no empty dim. The right operand is packed once and cached on its storage and
/// generation, so a weight is packed on first use only, and a tensor that is written is
/// repacked (never answered from a stale copy). One row goes to the GEMV, which reads the
/// matrix in place.
fn packed_product_applies(mat1: &Tensor, mat2: &Tensor) -> bool {
    mat1.dtype() == DType::Float32
        && mat2.dtype() == DType::Float32
        && mat1.sizes()[0] >= 2
        && mat1.sizes()[1] > 0
        && mat2.sizes()[1] > 0
}

/// `mat1 @ mat2 (+ bias)` through [`crate::gemm::linear_epilogue`], which takes the weight as
/// `mat2.T`.
fn packed_linear(mat1: &Tensor, mat2: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    crate::gemm::linear_epilogue(
        mat1,
        &mat2.t()?,
        bias,
        crate::gemm::Activation::Identity,
        None,
        false,
    )
}

fn addmm_combine<T: Arith>(
    bias: &Tensor,
    mut product: Vec<T>,
    beta: &Scalar,
    alpha: &Scalar,
    shape: &[usize],
) -> Tensor {
    let alpha_t = T::from_scalar(alpha);
    if beta.is_zero() {
        // beta == 0 ignores the bias entirely (NaN/inf in it must not propagate).
        for p in &mut product {
            *p = alpha_t.mul(*p);
        }
        return Tensor::from_values(product, shape);
    }
    let beta_t = T::from_scalar(beta);
    let combine = |p: &mut T, b: T| *p = beta_t.mul(b).add(alpha_t.mul(*p));
    let done = product.len() == bias.numel() && {
        let guard = bias.storage().read();
        match T::slice_of(&guard) {
            // Walk the (broadcast) bias row by row in logical order, the product's order.
            Some(src) => {
                let mut pos = 0;
                crate::tensor::for_each_row(
                    bias.sizes(),
                    bias.strides(),
                    bias.storage_offset(),
                    |start, len, stride| {
                        let out = &mut product[pos..pos + len];
                        if stride == 1 {
                            for (p, &b) in out.iter_mut().zip(&src[start..start + len]) {
                                combine(p, b);
                            }
                        } else {
                            for (j, p) in out.iter_mut().enumerate() {
                                combine(p, src[start + j * stride]);
                            }
                        }
                        pos += len;
                    },
                );
                true
            }
            None => false,
        }
    };
    if !done {
        for (p, b) in product.iter_mut().zip(bias.gather::<T>()) {
            combine(p, b);
        }
    }
    Tensor::from_values(product, shape)
}

/// `torch.nn.functional.linear`: `input @ weight.T + bias`.
pub fn linear(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    if weight.dim() != 2 {
        return Err(TensorError::InvalidArgument(format!(
            "linear(): weight must be 2-D, got shape {}",
            format_shape(weight.sizes())
        )));
    }
    if crate::gemm::linear_epilogue_supported(input, weight, bias, None)
        && input.numel() > 0
        && weight.numel() > 0
    {
        // Two or more float32 rows: the packed GEMM, the weight packed once and cached, the
        // bias added on each output tile. (One row goes to the GEMV through `addmm`/`matmul`.)
        return crate::gemm::linear_epilogue(
            input,
            weight,
            bias,
            crate::gemm::Activation::Identity,
            None,
            false,
        );
    }
    let weight_t = weight.t()?;
    match bias {
        Some(b) if input.dim() >= 1 => {
            let k = input.sizes()[input.dim() - 1];
            let lead = &input.sizes()[..input.dim() - 1];
            let rows: usize = lead.iter().product();
            let folded = input.reshape_usize(&[rows, k])?;
            let out = b.addmm(&folded, &weight_t, &Scalar::Int(1), &Scalar::Int(1))?;
            let mut out_sizes = lead.to_vec();
            out_sizes.push(weight.sizes()[0]);
            out.reshape_usize(&out_sizes)
        }
        _ => {
            let out = input.matmul(&weight_t)?;
            match bias {
                Some(b) => out.add(b, &Scalar::Int(1)),
                None => Ok(out),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{naive_batched_gemm, GemmElement};

    /// The packing-free one-row product (GEMV) against a float64 loop, for every layout of the
    /// right operand it handles (contiguous columns as a linear weight is passed, contiguous
    /// rows, both strides > 1 either way round), a strided row, lengths around its 16 lanes
    /// and 4-column groups, products large enough to be split across threads, one thread and
    /// three, and beta 0 and 1. Every index the kernel forms is checked by the slices, so a
    /// wrong bound fails here as a panic.
    #[test]
    fn one_row_product_matches_a_float64_loop() {
        for &(k, n) in &[
            (1, 1),
            (7, 3),
            (8, 8),
            (9, 5),
            (15, 4),
            (16, 7),
            (17, 9),
            (32, 128),
            (33, 17),
            (200, 3),
            (301, 517),
            (768, 1030),
        ] {
            let a: Vec<f32> = (0..2 * k)
                .map(|i| ((i * 37 % 11) as f32 - 5.0) * 0.25)
                .collect();
            // Room for strides of 2 in both directions.
            let b: Vec<f32> = (0..2 * k * n)
                .map(|i| ((i * 13 % 7) as f32 - 3.0) * 0.5)
                .collect();
            let layouts = [(n, 1), (1, k), (2 * n, 2), (2, 2 * k)];
            for (b_rs, b_cs) in layouts {
                for a_cs in [1, 2] {
                    for beta in [0.0f32, 1.0] {
                        let start: Vec<f32> = (0..n).map(|j| j as f32 * 0.5).collect();
                        for threads in [1, 3] {
                            let mut fast = start.clone();
                            super::gemv::row_times_matrix(
                                k,
                                n,
                                &a,
                                a_cs,
                                &b,
                                (b_rs, b_cs),
                                beta,
                                &mut fast,
                                threads,
                            );
                            for (j, &got) in fast.iter().enumerate() {
                                let terms = (0..k).map(|p| {
                                    f64::from(a[p * a_cs]) * f64::from(b[p * b_rs + j * b_cs])
                                });
                                let magnitude: f64 = terms.clone().map(f64::abs).sum();
                                let expected =
                                    terms.sum::<f64>() + f64::from(beta) * f64::from(start[j]);
                                assert!(
                                    (f64::from(got) - expected).abs()
                                        <= 1e-6 * (magnitude + expected.abs()) + 1e-6,
                                    "k={k} n={n} strides=({b_rs}, {b_cs}) a_cs={a_cs} \
                                     beta={beta} threads={threads} j={j}: {got} vs {expected}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// Exercises the unsafe matrixmultiply call on shapes around its block sizes,
    /// degenerate dims and several batches, comparing with the plain loop.
    #[test]
    fn float_gemm_matches_naive_loop() {
        let shapes = [
            (1, 1, 1, 1),
            (1, 0, 3, 2),
            (2, 3, 0, 4),
            (3, 1, 7, 1),
            (2, 5, 4, 3),
            (1, 70, 130, 50),
        ];
        for (batch, n, k, m) in shapes {
            let a: Vec<f64> = (0..batch * n * k)
                .map(|i| ((i * 13) % 17) as f64 - 8.0)
                .collect();
            let b: Vec<f64> = (0..batch * k * m)
                .map(|i| ((i * 7) % 11) as f64 - 5.0)
                .collect();
            let fast = <f64 as GemmElement>::batched_gemm(&a, &b, batch, n, k, m);
            assert_eq!(fast, naive_batched_gemm(&a, &b, batch, n, k, m));
            let a32: Vec<f32> = a.iter().map(|&x| x as f32).collect();
            let b32: Vec<f32> = b.iter().map(|&x| x as f32).collect();
            let fast32 = <f32 as GemmElement>::batched_gemm(&a32, &b32, batch, n, k, m);
            assert_eq!(fast32, naive_batched_gemm(&a32, &b32, batch, n, k, m));
        }
    }
}
