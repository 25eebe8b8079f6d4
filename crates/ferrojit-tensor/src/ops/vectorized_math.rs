//! Float32 exp, sigmoid, SiLU, tanh, hardswish and hardsigmoid evaluated over contiguous
//! slices with branch-free polynomial approximations, so that the compiler turns each loop
//! into vector instructions (the loops are compiled a second time for AVX2 + FMA and that
//! copy is picked at run time).
//!
//! The scalar float32 kernels computed these through double-precision `exp` from libm, one
//! element at a time. PyTorch's CPU kernels compute them in float32 with vectorized
//! approximations (Sleef's exp and tanh, within 1 ULP), using the same formulas as here:
//! `1 / (1 + exp(-x))`, `x / (1 + exp(-x))`, `x * min(max(x + 3, 0), 6) / 6`. The error
//! against PyTorch's own CPU results is measured on a dense grid of inputs (including
//! infinities, NaN and subnormals) by `tests/vectorized_math.rs` of this crate, from
//! values written by `tests/fixtures/vectorized_math/generate.py`.
//!
//! Float64 never comes here: it stays on the exact path.

/// A function of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VectorFunction {
    Exp,
    Sigmoid,
    Silu,
    Tanh,
    Hardswish,
    Hardsigmoid,
}

/// Multiply-add, fused (one rounding) when the caller is compiled with FMA.
#[inline(always)]
fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// `x` rounded to the nearest integer by adding and removing 1.5 * 2^23 (valid for
/// |x| < 2^22), and that integer: no call to `roundf` (which would stop vectorization on
/// CPUs without SSE4.1).
const ROUNDING_MAGIC: f32 = 12_582_912.0;

/// `exp(x)`: `x = n ln 2 + r` with |r| <= ln 2 / 2, a degree-7 polynomial for `exp(r)`
/// (Cephes' coefficients), and the scale by `2^n` in two halves so that results in the
/// subnormal range are rounded once.
#[inline(always)]
fn exp<const FMA: bool>(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in two: the high part has few bits, so `n * LN2_HIGH` is exact.
    const LN2_HIGH: f32 = 0.693_359_4;
    const LN2_LOW: f32 = -2.121_944_4e-4;
    // Above this exp overflows; below the other it rounds to zero.
    const OVERFLOW: f32 = 88.722_84;
    const UNDERFLOW: f32 = -103.972_08;
    let clamped = x.clamp(-104.0, 89.0);
    let t = madd::<FMA>(clamped, LOG2_E, ROUNDING_MAGIC);
    let n_float = t - ROUNDING_MAGIC;
    let n = (t.to_bits() as i32).wrapping_sub(ROUNDING_MAGIC.to_bits() as i32);
    let r = madd::<FMA>(n_float, -LN2_HIGH, clamped);
    let r = madd::<FMA>(n_float, -LN2_LOW, r);
    let mut p = 1.987_569_3e-4f32;
    p = madd::<FMA>(p, r, 1.398_2e-3);
    p = madd::<FMA>(p, r, 8.333_452e-3);
    p = madd::<FMA>(p, r, 4.166_579_6e-2);
    p = madd::<FMA>(p, r, 1.666_666_6e-1);
    p = madd::<FMA>(p, r, 0.5);
    let p = madd::<FMA>(p, r * r, r) + 1.0;
    // n lies in -150..=129, so each half's power of two is a normal float.
    let half = n >> 1;
    let scale_a = f32::from_bits(((half + 127) as u32) << 23);
    let scale_b = f32::from_bits(((n - half + 127) as u32) << 23);
    let value = p * scale_a * scale_b;
    let value = if x > OVERFLOW { f32::INFINITY } else { value };
    let value = if x < UNDERFLOW { 0.0 } else { value };
    if x.is_nan() {
        x
    } else {
        value
    }
}

/// `1 / (1 + exp(-x))`, PyTorch's formula.
#[inline(always)]
fn sigmoid<const FMA: bool>(x: f32) -> f32 {
    1.0 / (1.0 + exp::<FMA>(-x))
}

/// `x / (1 + exp(-x))`, PyTorch's formula (NaN at `-inf`, as PyTorch gives).
#[inline(always)]
fn silu<const FMA: bool>(x: f32) -> f32 {
    x / (1.0 + exp::<FMA>(-x))
}

/// `tanh(x)`: an odd polynomial below |x| = 0.625 (Cephes' coefficients), where
/// `1 - 2 / (exp(2|x|) + 1)` would lose bits to cancellation, and that formula above.
#[inline(always)]
fn tanh<const FMA: bool>(x: f32) -> f32 {
    let magnitude = x.abs();
    let z = x * x;
    let mut p = -5.704_988_7e-3f32;
    p = madd::<FMA>(p, z, 2.063_909e-2);
    p = madd::<FMA>(p, z, -5.373_971_5e-2);
    p = madd::<FMA>(p, z, 1.333_144_2e-1);
    p = madd::<FMA>(p, z, -3.333_328e-1);
    // The sign copied back: at x = -0 the sum `x * (p z) + x` is +0, and tanh(-0) is -0.
    let small = madd::<FMA>(p * z, x, x).copysign(x);
    let large = (1.0 - 2.0 / (exp::<FMA>(2.0 * magnitude) + 1.0)).copysign(x);
    if magnitude < 0.625 {
        small
    } else {
        large
    }
}

/// `min(max(x + 3, 0), 6)` with NaN kept (comparisons, not `f32::max`, which drops NaN).
#[inline(always)]
fn relu6_of_shifted(x: f32) -> f32 {
    let a = x + 3.0;
    let a = if a < 0.0 { 0.0 } else { a };
    if a > 6.0 {
        6.0
    } else {
        a
    }
}

#[inline(always)]
fn hardswish(x: f32) -> f32 {
    x * relu6_of_shifted(x) / 6.0
}

#[inline(always)]
fn hardsigmoid(x: f32) -> f32 {
    relu6_of_shifted(x) / 6.0
}

/// Applies `function` to every element, in loops the compiler vectorizes.
#[inline(always)]
fn apply_portable<const FMA: bool>(function: VectorFunction, values: &mut [f32]) {
    match function {
        VectorFunction::Exp => values.iter_mut().for_each(|v| *v = exp::<FMA>(*v)),
        VectorFunction::Sigmoid => values.iter_mut().for_each(|v| *v = sigmoid::<FMA>(*v)),
        VectorFunction::Silu => values.iter_mut().for_each(|v| *v = silu::<FMA>(*v)),
        VectorFunction::Tanh => values.iter_mut().for_each(|v| *v = tanh::<FMA>(*v)),
        VectorFunction::Hardswish => values.iter_mut().for_each(|v| *v = hardswish(*v)),
        VectorFunction::Hardsigmoid => values.iter_mut().for_each(|v| *v = hardsigmoid(*v)),
    }
}

/// [`apply_portable`] compiled for AVX2 + FMA.
///
/// # Safety
/// The CPU must have the AVX2 and FMA instructions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn apply_avx2(function: VectorFunction, values: &mut [f32]) {
    apply_portable::<true>(function, values);
}

/// Whether this CPU runs [`apply_avx2`] (detected once).
fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static DETECTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *DETECTED.get_or_init(|| {
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// `function` of every element of `values`, in place. The same input gives the same bits
/// whichever slice it arrives in (the fused epilogues and the unfused kernels agree).
pub(crate) fn apply(function: VectorFunction, values: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: AVX2 and FMA, the instructions `apply_avx2` is compiled for, were
        // detected on this CPU. It indexes nothing itself: it iterates over the slice.
        unsafe { apply_avx2(function, values) };
        return;
    }
    apply_portable::<false>(function, values);
}

/// `function` of one value, the same bits as [`apply`] gives for it.
pub(crate) fn apply_one(function: VectorFunction, x: f32) -> f32 {
    let mut value = [x];
    apply(function, &mut value);
    value[0]
}

/// [`apply`] over a long slice split across the intra-op threads.
pub(crate) fn apply_parallel(function: VectorFunction, values: &mut [f32]) {
    crate::ops::parallel::for_each_chunk_mut(values, |chunk| apply(function, chunk));
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [VectorFunction; 6] = [
        VectorFunction::Exp,
        VectorFunction::Sigmoid,
        VectorFunction::Silu,
        VectorFunction::Tanh,
        VectorFunction::Hardswish,
        VectorFunction::Hardsigmoid,
    ];

    /// The function in double precision, with exp's float32 overflow where the float32
    /// formula has it (PyTorch's sigmoid of -100 is 0, not 3.7e-44), and the largest error
    /// measured against it, in units in the last place.
    fn reference(function: VectorFunction, x: f64) -> (f64, u32) {
        let exp_f32 = |v: f64| f64::from(v.exp() as f32);
        match function {
            VectorFunction::Exp => (x.exp(), 1),
            VectorFunction::Sigmoid => (1.0 / (1.0 + exp_f32(-x)), 3),
            VectorFunction::Silu => (x / (1.0 + exp_f32(-x)), 3),
            VectorFunction::Tanh => (x.tanh(), 1),
            // Float32 products, as PyTorch's: `x * 6` overflows above 5.6e37.
            VectorFunction::Hardswish if x > 1e37 => (f64::from(x as f32 * 6.0) / 6.0, 2),
            VectorFunction::Hardswish => (x * (x + 3.0).clamp(0.0, 6.0) / 6.0, 2),
            VectorFunction::Hardsigmoid => ((x + 3.0).clamp(0.0, 6.0) / 6.0, 1),
        }
    }

    /// Distance in units in the last place between two float32 values (0 for two NaNs,
    /// and between +0 and -0).
    fn ulp_distance(a: f32, b: f32) -> u32 {
        if a.is_nan() || b.is_nan() {
            return if a.is_nan() && b.is_nan() {
                0
            } else {
                u32::MAX
            };
        }
        let ordered = |v: f32| {
            let bits = v.to_bits() as i32;
            if bits < 0 {
                i32::MIN.wrapping_sub(bits)
            } else {
                bits
            }
        };
        ordered(a).abs_diff(ordered(b))
    }

    #[test]
    fn both_compilations_stay_within_the_measured_error_of_the_double_precision_result() {
        // Every 4099th float32 bit pattern (both signs, all exponents) and a dense grid.
        let mut inputs: Vec<f32> = (0..u32::MAX / 4099)
            .map(|i| f32::from_bits(i * 4099))
            .collect();
        inputs.extend((-40_000..=40_000).map(|i| i as f32 * 5e-4));
        for function in ALL {
            let mut fused = inputs.clone();
            apply_portable::<true>(function, &mut fused);
            let mut unfused = inputs.clone();
            apply_portable::<false>(function, &mut unfused);
            let mut dispatched = inputs.clone();
            apply(function, &mut dispatched);
            for (i, &x) in inputs.iter().enumerate() {
                let (want, bound) = reference(function, f64::from(x));
                let want = want as f32;
                for (what, got) in [("fused", fused[i]), ("unfused", unfused[i])] {
                    assert!(
                        ulp_distance(got, want) <= bound,
                        "{function:?} ({what}) of {x:e} is {got:e}, expected {want:e}"
                    );
                }
                let same = dispatched[i].to_bits() == fused[i].to_bits()
                    || dispatched[i].to_bits() == unfused[i].to_bits();
                assert!(
                    same,
                    "{function:?} of {x:e}: dispatched is neither compilation"
                );
            }
            // One value at a time gives the bits of the slice.
            for (i, &x) in inputs.iter().enumerate().step_by(101) {
                assert_eq!(apply_one(function, x).to_bits(), dispatched[i].to_bits());
            }
        }
    }

    #[test]
    fn special_values() {
        let exp = |x| apply_one(VectorFunction::Exp, x);
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-0.0), 1.0);
        assert_eq!(exp(100.0), f32::INFINITY);
        assert_eq!(exp(-110.0), 0.0);
        assert!(exp(f32::NAN).is_nan());
        let sigmoid = |x| apply_one(VectorFunction::Sigmoid, x);
        assert_eq!(sigmoid(f32::INFINITY), 1.0);
        assert_eq!(sigmoid(f32::NEG_INFINITY), 0.0);
        assert!(sigmoid(f32::NAN).is_nan());
        let tanh = |x| apply_one(VectorFunction::Tanh, x);
        assert_eq!(tanh(f32::INFINITY), 1.0);
        assert_eq!(tanh(f32::NEG_INFINITY), -1.0);
        assert_eq!(tanh(-0.0).to_bits(), (-0.0f32).to_bits());
        assert!(tanh(f32::NAN).is_nan());
        assert!(apply_one(VectorFunction::Hardswish, f32::NAN).is_nan());
        assert!(apply_one(VectorFunction::Hardsigmoid, f32::NAN).is_nan());
        assert_eq!(apply_one(VectorFunction::Hardsigmoid, 10.0), 1.0);
        assert_eq!(apply_one(VectorFunction::Hardswish, -4.0), 0.0);
        // Subnormal results are rounded once.
        let tiny = exp(-100.0);
        assert!(tiny > 0.0 && tiny < f32::MIN_POSITIVE);
        assert!(ulp_distance(tiny, (-100f64).exp() as f32) <= 1);
    }
}
