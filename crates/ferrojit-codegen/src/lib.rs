//! ferrojit-codegen: compiles a pointwise fusion group (`prim::FusionGroup`'s subgraph) to
//! native code with Cranelift, caches the kernels and runs them on tensors.
//!
//! # Contract
//! [`GroupCache::run_group`] takes a group key, the group's subgraph (tensor inputs only;
//! every scalar argument a `prim::Constant` inside it) and the input tensors. It returns
//! `Ok(None)` when the group holds an operator, dtype or layout this crate cannot compile (the
//! caller then runs the subgraph in the interpreter); the answer is remembered so lowering is
//! not retried. Otherwise it compiles once per (group key, input dtypes, input layouts),
//! allocates contiguous outputs of the broadcast shape and runs the kernel.
//!
//! Supported: f32 data inputs (plus bool inputs used only as `where` conditions), outputs
//! f32 of the full broadcast shape; add/sub (with alpha), mul, div, neg, abs, relu, sqrt,
//! rsqrt, reciprocal, minimum, maximum, clamp/clamp_min/clamp_max, pow with a scalar
//! exponent, exp, log, tanh, sigmoid, silu, erf, gelu (none and tanh), where, and the casts
//! that are the identity on f32 (`to(float32)`, `type_as`, `contiguous`, `clone`).
//! A group may end with one trailing reduction, `softmax` or `log_softmax` over the last
//! dimension (dtype None) of a value the group computes; it must be a group output, with the
//! full broadcast shape. Such a kernel walks whole rows: the pointwise chain over a row,
//! then an out-of-line row kernel (`row_reduction.rs`: max, exp(x - max) and its sum, then
//! the scale) on that row while it is in L1; rows are split across the intra-op threads.
//! Not supported (answered `Ok(None)`): f64 and other dtypes, other reductions (sum/mean),
//! a reduction over another dim, outputs smaller than the broadcast shape, and math
//! functions applied to constants.
//!
//! # Shape classes
//! * **flat**: every input is contiguous with the output's shape, or has one element (a 0-dim
//!   or size-1 broadcast scalar, loaded once and splat). One loop over the elements.
//! * **strided**: any other broadcast or non-contiguous input is first copied into a
//!   contiguous tensor of the output's shape (`expand` + `contiguous` from ferrojit-tensor),
//!   then the flat kernel runs. The kernel is the same; only the extra copy differs.
//!
//! # Generated code
//! One function per group walks its element range in blocks of 256: inline arithmetic runs
//! in f32x4 loops (Cranelift's widest vector type on x86-64) with a scalar tail, values held
//! in registers. Large tensors (at least ferrojit-tensor's `PARALLEL_THRESHOLD` elements) are
//! split across the intra-op pool (rayon, as ferrojit-tensor uses), one range per thread.
//!
//! # Transcendentals
//! Cranelift has no vector exp/log/tanh, so the generated code calls `extern "C"` Rust
//! kernels (registered as JIT symbols) over each block, see `math.rs`. This was chosen over
//! emitting the polynomials in Cranelift IR: the Rust kernels are vectorized by LLVM (wider
//! than Cranelift's f32x4 where the build allows), are testable as plain functions, and one
//! call per 256 elements costs little. exp, log, tanh, sigmoid and silu are f32 polynomials;
//! erf, GELU and general `pow` compute in f64 and round once (accurate, slower).
//!
//! Worst ULP error against PyTorch 2.15's f32 CPU results over 21k inputs (edge values,
//! subnormals, the whole exponent range), asserted in `tests/math_accuracy.rs`:
//! exp 1, log 1, tanh 1, sigmoid 2, silu 2, erf 1, gelu 4, gelu(tanh) 2, pow 1, sqrt 1
//! (ferrojit's is correctly rounded; torch's is not always), rsqrt 0, reciprocal 0.
//! For GELU below x = -1 PyTorch's f32 `1 + erf`/`1 + tanh` cancels and ferrojit (in f64)
//! is the accurate one; there the test bounds the absolute difference (1e-6) instead.
//! gelu(+inf) is NaN, as in PyTorch.
//!
//! `examples/pointwise_speed.rs` (1M f32, 1 thread, release): `sigmoid(x*w+b)*x+x` fused
//! 3.6-4.1 ms against 22.5 ms for ferrojit-tensor's kernels op by op; with relu in place of
//! sigmoid 0.77 ms against 16-17 ms. The IR-polynomial alternative was not measured.

pub mod backend;
pub mod compile;
pub mod launch;
pub mod math;
pub mod program;
pub mod row_reduction;

pub use backend::{shared_backend, shared_cranelift_backend, CraneliftFusionBackend};
pub use compile::{CompiledKernel, InputLayout};
pub use launch::{CacheStats, GroupCache};
pub use math::MathFunction;
pub use program::{lower, Program, RowReduction, Step, Unsupported};
pub use row_reduction::RowReductionKind;

/// Errors from running a group. Unsupported groups are not errors (`Ok(None)`).
#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    /// Cranelift rejected the generated function or the host.
    #[error("code generation failed: {0}")]
    Compile(String),
    /// The group's inputs do not fit together.
    #[error("fusion group {group_key:#x}: {message}")]
    Input { group_key: u64, message: String },
    #[error(transparent)]
    Tensor(#[from] ferrojit_tensor::TensorError),
}
