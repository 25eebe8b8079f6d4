//! The floating-point element types the kernels are written over (f32 and f64), so each
//! kernel computes in the input's own precision as torchvision's `scalar_t` kernels do.

use std::ops::{Add, AddAssign, Div, Mul, Sub};

use ferrojit_tensor::Element;

pub trait Real:
    Element
    + Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + AddAssign
{
    const ZERO: Self;
    const ONE: Self;
    /// `-FLT_MAX`, the start value of roi_pool's max for every element type.
    const LOWEST_FLOAT: Self;
}

impl Real for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    const LOWEST_FLOAT: f32 = -f32::MAX;
}

impl Real for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    const LOWEST_FLOAT: f64 = -(f32::MAX as f64);
}
