//! `torch.linalg` on f32/f64 tensors with leading batch dimensions: LU-based inverse,
//! determinants and solves, Cholesky, QR, SVD and symmetric eigendecomposition, triangular
//! solves, least squares, norms, matrix functions and products.
//!
//! Each matrix is factored in f64 (f32 inputs too, so f32 results are at least as accurate as
//! LAPACK's f32 ones) with plain, unblocked algorithms written here. Where PyTorch's result
//! depends on LAPACK's choices, the choices match: `getrf`'s pivots and `info`, `potrf`'s
//! failing minor, `geqrf`'s Householder signs. SVD and `eigh` are not unique in sign; their
//! convention is in `svd.rs` and `eigh.rs`. Complex inputs get a typed error for now.

mod batch;
mod cholesky;
mod eigh;
mod functions;
mod lu;
mod norms;
mod products;
mod qr;
mod svd;
mod triangular;

pub use cholesky::{cholesky, cholesky_ex};
pub use eigh::{eigh, eigvalsh};
pub use functions::{
    check_square_for_cond, cond_by_inverse, lstsq, matrix_exp, tensorinv, tensorsolve, CondOrder,
};
pub use lu::{
    det, inv, inv_ex, logdet, lu, lu_factor, lu_factor_ex, lu_solve, slogdet, solve, solve_ex,
};
pub use norms::{matrix_norm, matrix_norm_str, vector_norm};
pub use products::{cross, matrix_power, multi_dot, vecdot};
pub use qr::{geqrf, householder_product, qr};
pub use svd::{
    cond_2, matrix_rank, pinv, pinv_tensor_tolerances, pinv_with_tolerances, svd, svdvals,
};
pub use triangular::{solve_triangular, triangular_solve};
