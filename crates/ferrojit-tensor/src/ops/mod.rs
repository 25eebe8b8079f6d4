//! Tensor operations, grouped by kind. Most are inherent methods on `Tensor`.

pub mod arrange;
pub mod binary;
pub mod complex;
pub mod creation;
pub mod cxx_order;
pub mod fft;
pub(crate) mod fused;
pub mod histogram;
pub mod index_reduce;
pub mod indexing;
pub mod join;
pub mod linalg;
pub mod misc_pointwise;
pub mod nn;
pub mod parallel;
pub mod pointwise;
pub mod products;
pub mod random;
pub mod reduce;
pub mod search;
pub mod set_membership;
pub mod special;
pub mod statistics;
pub mod ternary;
pub mod unary;
pub mod views;
