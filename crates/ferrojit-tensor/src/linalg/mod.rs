//! `torch.linalg` on f32/f64 tensors with leading batch dimensions: LU-based inverse,
//! determinants and solves, Cholesky, LDL^T, QR, SVD, symmetric and general
//! eigendecomposition, triangular solves, least squares, norms, matrix functions (exp,
//! polar, symmetric square root) and products.
//!
//! Each matrix is factored in f64 (f32 inputs too, so f32 results are at least as accurate as
//! LAPACK's f32 ones) with plain, unblocked algorithms written here. Where PyTorch's result
//! depends on LAPACK's choices, the choices match: `getrf`'s pivots and `info`, `potrf`'s
//! failing minor, `geqrf`'s Householder signs, `sytrf`'s pivots, `geev`'s eigenvalue order
//! and eigenvector signs (`eig.rs`). SVD and `eigh` are not unique in sign; their convention
//! is in `svd.rs` and `eigh.rs`. `matrix_exp` alone computes float32 in f32, to reproduce
//! PyTorch's rounding (`matrix_exp.rs`). Complex inputs get a typed error for now.

mod batch;
mod cholesky;
mod eig;
mod eigh;
mod functions;
mod ldl;
mod lu;
mod matrix_exp;
mod norms;
mod products;
mod qr;
mod spectral;
mod svd;
mod symmetric_qr;
mod triangular;

pub use cholesky::{cholesky, cholesky_ex};
pub use eig::{eig, eigvals};
pub use eigh::{eigh, eigvalsh};
pub use functions::{
    check_square_for_cond, cond_by_inverse, lstsq, tensorinv, tensorsolve, CondOrder,
};
pub use ldl::{ldl_factor, ldl_factor_ex, ldl_solve};
pub use lu::{
    det, inv, inv_ex, logdet, lu, lu_factor, lu_factor_ex, lu_solve, slogdet, solve, solve_ex,
};
pub use matrix_exp::matrix_exp;
pub use norms::{matrix_norm, matrix_norm_str, vector_norm};
pub use products::{cross, matrix_power, multi_dot, vecdot};
pub use qr::{geqrf, householder_product, ormqr, qr};
pub use spectral::{matrix_sqrth, polar};
pub use svd::{
    cond_2, matrix_rank, pinv, pinv_tensor_tolerances, pinv_with_tolerances, svd, svdvals,
};
pub use triangular::{solve_triangular, triangular_solve};
