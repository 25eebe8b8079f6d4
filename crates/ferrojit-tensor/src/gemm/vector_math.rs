//! Float32 activation functions (exp-based sigmoid and SiLU, erf and tanh GELU, hardswish,
//! relu) written as branch-free scalar code that the compiler vectorizes, and run over slices
//! under AVX-512 or AVX2+FMA when the CPU has them.
//!
//! Why scalar code and not intrinsics: every function below uses only IEEE-exact operations
//! (`mul_add`, `+`, `*`, `/`, comparisons, bit casts), so the compiler's vector loop gives the
//! very same bits as the portable loop, and the vector paths need no `unsafe` beyond the call
//! into a `#[target_feature]` function. The tests check both: bit-equality across paths, and
//! the error against a float64 reference (stated in `tests::accuracy_against_float64`).
//!
//! The polynomials were fitted (weighted least squares iterated towards minimax, relative
//! error) for this file; their fit error is far below float32's rounding, so the error left is
//! the float32 evaluation's.

use super::epilogue::Activation;

/// `exp(x)` for float32: `2^n * exp(r)` with `r = x - n ln 2` in `[-ln2/2, ln2/2]` and a
/// degree-6 polynomial for `exp(r)`. Exact `inf` above `ln(f32::MAX)`, `0` below -104,
/// subnormal results in between rounded once; NaN stays NaN.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split so that `n * LN2_HI` is exact for |n| < 2^12.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // 1.5 * 2^23: adding it rounds to an integer held in the low mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    const Q: [f32; 5] = [
        0.5,
        0.166_665_78,
        0.041_666_854,
        0.008_363_141,
        0.001_390_128_3,
    ];
    let clamped = if x < -104.0 {
        -104.0
    } else if x > 88.8 {
        88.8
    } else {
        x
    };
    let shifted = clamped.mul_add(LOG2E, ROUND);
    let n_float = shifted - ROUND;
    let n = (shifted.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    let r = n_float.mul_add(-LN2_HI, clamped);
    let r = n_float.mul_add(-LN2_LO, r);
    let q = Q[4].mul_add(r, Q[3]);
    let q = q.mul_add(r, Q[2]);
    let q = q.mul_add(r, Q[1]);
    let q = q.mul_add(r, Q[0]);
    let p = (r * r).mul_add(q, r) + 1.0;
    // n lies in [-150, 129]: two factors of 2^(n/2) each stay normal, so only the final
    // product can round (into a subnormal).
    let n_low = n >> 1;
    let n_high = n.wrapping_sub(n_low);
    let scale_low = f32::from_bits((n_low.wrapping_add(127) as u32) << 23);
    let scale_high = f32::from_bits((n_high.wrapping_add(127) as u32) << 23);
    let result = p * scale_low * scale_high;
    if x > std::f32::consts::LN_2 * 128.0 {
        f32::INFINITY
    } else {
        result
    }
}

/// `1 / (1 + exp(-x))`, as PyTorch's float kernel writes it.
#[inline(always)]
pub(crate) fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

/// `x / (1 + exp(-x))`, as PyTorch's float kernel writes it.
#[inline(always)]
pub(crate) fn silu(x: f32) -> f32 {
    x / (1.0 + exp(-x))
}

/// `0.5 x (1 + erf(x / sqrt 2))`. Near zero `erf` is an odd polynomial; elsewhere
/// `1 + erf(z)` is `erfc(-z)` (for negative z: no cancellation, so tiny outputs keep their
/// relative accuracy) or `2 - erfc(z)`, with `erfc(a) = exp(-a^2) R(a)` and `R` a polynomial
/// in `1 / (1 + a / 2)`. `a^2 = x^2 / 2` is carried as a two-float sum so that `exp` sees it
/// exactly. Both infinities give NaN, as PyTorch's CPU kernel does.
#[inline(always)]
pub(crate) fn gelu_erf(x: f32) -> f32 {
    const ERF_OVER_Z: [f32; 6] = [
        1.128_379_1,
        -0.376_126_2,
        0.112_833_77,
        -0.026_834_631,
        0.005_114_357,
        -0.000_674_958_7,
    ];
    const ERFC_R: [f32; 9] = [
        0.282_075_88,
        0.282_586_78,
        0.241_360_52,
        0.210_397_78,
        -0.046_645_503,
        0.309_299_1,
        -0.515_735_5,
        0.298_461_08,
        -0.061_790_51,
    ];
    let z = x * std::f32::consts::FRAC_1_SQRT_2;
    // Near zero: 1 + z P(z^2).
    let z2 = z * z;
    let mut poly = ERF_OVER_Z[5];
    for &c in ERF_OVER_Z[..5].iter().rev() {
        poly = poly.mul_add(z2, c);
    }
    let near_zero = z.mul_add(poly, 1.0);
    // Elsewhere: erfc(|z|) = exp(-z^2) R(|z|). Beyond |x| = 16 it is below float32's
    // smallest value, so clamping there changes nothing and keeps x^2 finite.
    let xc = if x < -16.0 {
        -16.0
    } else if x > 16.0 {
        16.0
    } else {
        x
    };
    let a = (xc * std::f32::consts::FRAC_1_SQRT_2).abs();
    let t = 1.0 / 0.5f32.mul_add(a, 1.0);
    let mut r = ERFC_R[8];
    for &c in ERFC_R[..8].iter().rev() {
        r = r.mul_add(t, c);
    }
    r *= t;
    let square = xc * xc;
    let square_low = xc.mul_add(xc, -square);
    // exp(-(hi + lo) / 2) = exp(-hi / 2) (1 - lo / 2) to float32 precision (|lo| < ulp(hi)).
    let e = exp(-0.5 * square) * (-0.5f32).mul_add(square_low, 1.0);
    let erfc = e * r;
    let away = if z > 0.0 { 2.0 - erfc } else { erfc };
    let one_plus_erf = if z > -0.5 && z < 0.75 {
        near_zero
    } else {
        away
    };
    let result = (0.5 * x) * one_plus_erf;
    if x.is_infinite() {
        f32::NAN
    } else {
        result
    }
}

/// `0.5 x (1 + tanh(u))` with `u = sqrt(2/pi) (x + 0.044715 x^3)`, written as
/// `x / (1 + exp(-2u))` (the same function: `1 + tanh(u) = 2 / (1 + exp(-2u))`), which has no
/// cancellation for negative x.
#[inline(always)]
pub(crate) fn gelu_tanh(x: f32) -> f32 {
    // -2 sqrt(2 / pi)
    const MINUS_TWO_SQRT_2_OVER_PI: f32 = -1.595_769_1;
    let u = (MINUS_TWO_SQRT_2_OVER_PI * x) * 0.044_715f32.mul_add(x * x, 1.0);
    x / (1.0 + exp(u))
}

/// `x * min(max(x + 3, 0), 6) / 6` in PyTorch's order of float32 operations.
#[inline(always)]
pub(crate) fn hardswish(x: f32) -> f32 {
    let shifted = x + 3.0;
    let low = if shifted < 0.0 { 0.0 } else { shifted };
    let clipped = if low > 6.0 { 6.0 } else { low };
    x * clipped / 6.0
}

/// `max(x, 0)` with NaN passed through (as `torch.relu`).
#[inline(always)]
pub(crate) fn relu(x: f32) -> f32 {
    if x < 0.0 {
        0.0
    } else {
        x
    }
}

/// The scalar form of `activation` (the vector loops call the same code).
#[inline(always)]
pub(crate) fn activate_one(activation: Activation, x: f32) -> f32 {
    match activation {
        Activation::Identity => x,
        Activation::Relu => relu(x),
        Activation::Gelu => gelu_erf(x),
        Activation::GeluTanh => gelu_tanh(x),
        Activation::Silu => silu(x),
        Activation::Sigmoid => sigmoid(x),
        Activation::Hardswish => hardswish(x),
    }
}

/// Applies `activation` to every value, with the activation chosen outside the loop so each
/// loop body is one function the compiler can vectorize.
#[inline(always)]
pub(crate) fn activate_slice_body(activation: Activation, values: &mut [f32]) {
    fn each(values: &mut [f32], f: impl Fn(f32) -> f32) {
        values.iter_mut().for_each(|v| *v = f(*v));
    }
    match activation {
        Activation::Identity => {}
        Activation::Relu => each(values, relu),
        Activation::Gelu => each(values, gelu_erf),
        Activation::GeluTanh => each(values, gelu_tanh),
        Activation::Silu => each(values, silu),
        Activation::Sigmoid => each(values, sigmoid),
        Activation::Hardswish => each(values, hardswish),
    }
}

/// The instruction set an epilogue loop is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VectorIsa {
    /// Whatever the build targets.
    Portable,
    /// AVX2 with fused multiply-add.
    Avx2Fma,
    /// AVX-512F.
    Avx512,
}

impl VectorIsa {
    /// Whether this CPU runs it.
    pub(crate) fn is_available(self) -> bool {
        match self {
            VectorIsa::Portable => true,
            VectorIsa::Avx2Fma => super::Kernel::Avx2Fma.is_available(),
            VectorIsa::Avx512 => super::Kernel::Avx512.is_available(),
        }
    }

    /// The one matching the GEMM kernel in use (so `FERROJIT_GEMM_KERNEL=avx2` also forces
    /// the AVX2 epilogue).
    pub(crate) fn best() -> VectorIsa {
        match super::Kernel::best() {
            super::Kernel::Avx512 => VectorIsa::Avx512,
            super::Kernel::Avx2Fma => VectorIsa::Avx2Fma,
            super::Kernel::Portable => VectorIsa::Portable,
        }
    }

    /// Runs `body` compiled for this instruction set (the body must be `#[inline(always)]`
    /// for the compiler to vectorize it with the set's registers).
    ///
    /// Panics when the CPU lacks the set (callers pick one that [`VectorIsa::is_available`]
    /// accepts).
    #[inline(always)]
    pub(crate) fn run<R>(self, body: impl FnOnce() -> R) -> R {
        match self {
            VectorIsa::Portable => body(),
            #[cfg(target_arch = "x86_64")]
            VectorIsa::Avx2Fma => {
                assert!(self.is_available(), "gemm epilogue: CPU lacks AVX2+FMA");
                // SAFETY: the only requirement of a `#[target_feature]` function is that the
                // CPU has the features, asserted just above; `body` is safe code.
                unsafe { x86::with_avx2(body) }
            }
            #[cfg(target_arch = "x86_64")]
            VectorIsa::Avx512 => {
                assert!(self.is_available(), "gemm epilogue: CPU lacks AVX-512F");
                // SAFETY: as above, the CPU has AVX-512F (asserted just above).
                unsafe { x86::with_avx512(body) }
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => body(),
        }
    }
}

/// Applies `activation` to every value with the vector loop for `isa`.
pub(crate) fn activate_slice(isa: VectorIsa, activation: Activation, values: &mut [f32]) {
    isa.run(|| activate_slice_body(activation, values));
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    /// Runs `body` with AVX2 and FMA enabled (inlined bodies are vectorized for them).
    ///
    /// # Safety
    /// The CPU supports AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn with_avx2<R>(body: impl FnOnce() -> R) -> R {
        body()
    }

    /// Runs `body` with AVX-512F enabled (inlined bodies are vectorized for it).
    ///
    /// # Safety
    /// The CPU supports AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn with_avx512<R>(body: impl FnOnce() -> R) -> R {
        body()
    }
}

#[cfg(test)]
#[path = "vector_math_tests.rs"]
mod tests;
