//! Tensor operations, grouped by kind. Most are inherent methods on `Tensor`.

pub mod binary;
pub mod join;
pub mod linalg;
pub mod reduce;
pub mod unary;
pub mod views;
