//! The transcendental kernels the generated code calls: `extern "C"` functions over a chunk
//! of f32 values, registered as JIT symbols.
//!
//! Cranelift has no vector `exp`, `log` or `tanh`, so the generated loop hands each
//! transcendental step to one of these functions, a block of elements at a time (see
//! `compile.rs`). The cheap, hot functions (exp, sigmoid, silu, tanh, log) are branch-free
//! f32 polynomials that LLVM vectorizes; erf, GELU and `pow` with a general exponent compute
//! in f64 (scalar) and round once, trading speed for accuracy. Measured accuracy against
//! PyTorch is asserted in `tests/math_accuracy.rs`.

use ferrojit_tensor::ops::special::{erf_fast, gelu_fast};

/// Which out-of-line math function a call step runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MathFunction {
    Exp,
    Log,
    Tanh,
    Sigmoid,
    Silu,
    Erf,
    /// GELU with the exact erf form.
    Gelu,
    /// GELU with the tanh approximation.
    GeluTanh,
    /// `x ** exponent` for an exponent without an exact inline form.
    Pow(f32),
}

/// The C signature every math kernel shares: read `len` values at `source`, write `len`
/// values at `destination`, `parameter` is the exponent for `pow` and ignored otherwise.
pub type MathKernel = unsafe extern "C" fn(*const f32, *mut f32, usize, f32);

impl MathFunction {
    /// The JIT symbol name the kernel is registered under.
    pub fn symbol(&self) -> &'static str {
        match self {
            MathFunction::Exp => "ferrojit_codegen_exp_f32",
            MathFunction::Log => "ferrojit_codegen_log_f32",
            MathFunction::Tanh => "ferrojit_codegen_tanh_f32",
            MathFunction::Sigmoid => "ferrojit_codegen_sigmoid_f32",
            MathFunction::Silu => "ferrojit_codegen_silu_f32",
            MathFunction::Erf => "ferrojit_codegen_erf_f32",
            MathFunction::Gelu => "ferrojit_codegen_gelu_f32",
            MathFunction::GeluTanh => "ferrojit_codegen_gelu_tanh_f32",
            MathFunction::Pow(_) => "ferrojit_codegen_pow_f32",
        }
    }

    /// The value passed as the kernel's `parameter` argument.
    pub fn parameter(&self) -> f32 {
        match self {
            MathFunction::Pow(exponent) => *exponent,
            _ => 0.0,
        }
    }

    /// The kernel's address.
    pub fn kernel(&self) -> MathKernel {
        match self {
            MathFunction::Exp => exp_kernel,
            MathFunction::Log => log_kernel,
            MathFunction::Tanh => tanh_kernel,
            MathFunction::Sigmoid => sigmoid_kernel,
            MathFunction::Silu => silu_kernel,
            MathFunction::Erf => erf_kernel,
            MathFunction::Gelu => gelu_kernel,
            MathFunction::GeluTanh => gelu_tanh_kernel,
            MathFunction::Pow(_) => pow_kernel,
        }
    }

    /// Every distinct kernel (one entry per symbol), for registering with the JIT.
    pub fn all() -> [MathFunction; 9] {
        [
            MathFunction::Exp,
            MathFunction::Log,
            MathFunction::Tanh,
            MathFunction::Sigmoid,
            MathFunction::Silu,
            MathFunction::Erf,
            MathFunction::Gelu,
            MathFunction::GeluTanh,
            MathFunction::Pow(0.0),
        ]
    }

    /// Applies the function to one value (the same code the kernel runs per element).
    pub fn apply(&self, x: f32) -> f32 {
        match self {
            MathFunction::Exp => exp_f32(x),
            MathFunction::Log => log_f32(x),
            MathFunction::Tanh => tanh_f32(x),
            MathFunction::Sigmoid => sigmoid_f32(x),
            MathFunction::Silu => silu_f32(x),
            MathFunction::Erf => erf_fast(f64::from(x)) as f32,
            MathFunction::Gelu => gelu_f32(x),
            MathFunction::GeluTanh => gelu_tanh_f64(f64::from(x)) as f32,
            MathFunction::Pow(exponent) => pow_f32(x, *exponent),
        }
    }
}

/// Rounds to the nearest integer (ties to even) without SSE4.1: adding 1.5 * 2^23 pushes the
/// fraction bits out of the mantissa. Valid for |v| < 2^22, which the callers guarantee.
#[inline(always)]
fn round_to_integer(v: f32) -> f32 {
    const SHIFTER: f32 = 12_582_912.0;
    (v + SHIFTER) - SHIFTER
}

/// `2^n` for an integer `n` in [-126, 127], built from its exponent bits.
#[inline(always)]
fn power_of_two(n: i32) -> f32 {
    f32::from_bits(((n + 127) as u32) << 23)
}

/// e^x in f32: range reduction by ln 2 (split in a high part exact in f32 and a low
/// correction), a degree-6 minimax polynomial on [-ln2/2, ln2/2] (Cephes' expf
/// coefficients) and a scale by 2^n done in two halves so that subnormal results round once.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    const LN2_HIGH: f32 = 0.693_359_4;
    const LN2_LOW: f32 = -2.121_944_4e-4;
    // Below -104 the result rounds to 0, above 89 to infinity; clamping keeps n in range.
    // `clamp` keeps NaN, which then flows through every step.
    let clamped = x.clamp(-104.0, 89.0);
    let n = round_to_integer(clamped * LOG2_E);
    let r = clamped - n * LN2_HIGH - n * LN2_LOW;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let y = p * r * r + r + 1.0;
    let n = n as i32;
    let half = n >> 1;
    y * power_of_two(half) * power_of_two(n - half)
}

/// ln x in f32: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), a degree-9 polynomial for
/// ln(1 + f) (Cephes' logf coefficients) and e * ln 2 added in two parts.
#[inline(always)]
pub fn log_f32(x: f32) -> f32 {
    const SQRT_HALF: f32 = std::f32::consts::FRAC_1_SQRT_2;
    // Subnormal inputs are scaled into the normal range first.
    let subnormal = x < f32::MIN_POSITIVE;
    let scaled = if subnormal { x * 8_388_608.0 } else { x };
    let bits = scaled.to_bits();
    let mut exponent = ((bits >> 23) & 0xff) as i32 - 126 - if subnormal { 23 } else { 0 };
    let mut m = f32::from_bits((bits & 0x007f_ffff) | 0x3f00_0000);
    if m < SQRT_HALF {
        exponent -= 1;
        m = m + m - 1.0;
    } else {
        m -= 1.0;
    }
    let z = m * m;
    let mut y = 7.037_683_6e-2_f32;
    y = y * m - 1.151_461e-1;
    y = y * m + 1.167_699_9e-1;
    y = y * m - 1.242_014_1e-1;
    y = y * m + 1.424_932_3e-1;
    y = y * m - 1.666_805_8e-1;
    y = y * m + 2.000_071_4e-1;
    y = y * m - 2.499_999_4e-1;
    y = y * m + 3.333_333e-1;
    y = y * m * z;
    let e = exponent as f32;
    y += e * -2.121_944_4e-4;
    y += -0.5 * z;
    let result = m + y + e * 0.693_359_4;
    if x.is_nan() || x < 0.0 {
        f32::NAN
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        f32::INFINITY
    } else {
        result
    }
}

/// tanh in f32: an odd polynomial below 0.625 (Cephes' tanhf), `1 - 2 / (e^{2|x|} + 1)`
/// above, with the sign put back.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let a = x.abs();
    let s = x * x;
    let small =
        ((((-5.704_988_7e-3 * s + 2.063_909e-2) * s - 5.373_971_6e-2) * s + 1.333_144_2e-1) * s
            - 3.333_328e-1)
            * s
            * x
            + x;
    let large = (1.0 - 2.0 / (exp_f32(a + a) + 1.0)).copysign(x);
    if a < 0.625 {
        small
    } else {
        large
    }
}

/// `1 / (1 + e^-x)`, PyTorch's vectorized form.
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-x))
}

/// `x / (1 + e^-x)`, PyTorch's vectorized form.
#[inline(always)]
pub fn silu_f32(x: f32) -> f32 {
    x / (1.0 + exp_f32(-x))
}

/// Exact GELU in f64, rounded once. At +inf PyTorch's kernel answers NaN (its
/// `x * (1 + erf)` form meets inf * 0 on the way), and so does this one.
fn gelu_f32(x: f32) -> f32 {
    if x == f32::INFINITY {
        f32::NAN
    } else {
        gelu_fast(f64::from(x)) as f32
    }
}

/// GELU's tanh approximation in f64, rounded once by the caller.
fn gelu_tanh_f64(x: f64) -> f64 {
    const BETA: f64 = 0.797_884_560_802_865_4; // sqrt(2 / pi)
    const KAPPA: f64 = 0.044_715;
    let inner = BETA * (x + KAPPA * x * x * x);
    0.5 * x * (1.0 + inner.tanh())
}

/// `x ** exponent` in f64, rounded once.
fn pow_f32(x: f32, exponent: f32) -> f32 {
    f64::from(x).powf(f64::from(exponent)) as f32
}

/// Runs `function` over one chunk.
///
/// # Safety
/// `source` must be valid for reading `len` f32 values and `destination` for writing `len`
/// f32 values; the two ranges may be the same range but must not partly overlap.
#[inline(always)]
unsafe fn map_chunk(
    source: *const f32,
    destination: *mut f32,
    len: usize,
    function: impl Fn(f32) -> f32,
) {
    // Eight values at a time through a local array: with no possible aliasing inside the
    // array, LLVM vectorizes `function` (the raw-pointer loop alone stayed scalar).
    const WIDTH: usize = 8;
    let mut start = 0;
    while start + WIDTH <= len {
        let mut lanes = [0.0f32; WIDTH];
        for (k, lane) in lanes.iter_mut().enumerate() {
            // SAFETY: start + k < start + WIDTH <= len, within the caller's `len` values.
            *lane = unsafe { *source.add(start + k) };
        }
        for lane in lanes.iter_mut() {
            *lane = function(*lane);
        }
        for (k, lane) in lanes.iter().enumerate() {
            // SAFETY: as above; all eight reads happened before these writes, so an
            // in-place call is correct.
            unsafe { *destination.add(start + k) = *lane };
        }
        start += WIDTH;
    }
    for i in start..len {
        // SAFETY: i < len, and the caller guarantees both ranges hold `len` values; reading
        // element i before writing element i keeps an in-place call correct.
        unsafe { *destination.add(i) = function(*source.add(i)) };
    }
}

macro_rules! math_kernel {
    ($name:ident, |$x:ident, $p:ident| $body:expr) => {
        /// A generated-code entry point; see [`MathKernel`] for the contract.
        ///
        /// # Safety
        /// `source` must be valid for reading `len` f32 values and `destination` for writing
        /// `len` f32 values (the same range, or disjoint ranges).
        pub unsafe extern "C" fn $name(
            source: *const f32,
            destination: *mut f32,
            len: usize,
            parameter: f32,
        ) {
            let $p = parameter;
            // SAFETY: forwarded from this function's own contract.
            unsafe { map_chunk(source, destination, len, |$x| $body) }
        }
    };
}

math_kernel!(exp_kernel, |x, _p| exp_f32(x));
math_kernel!(log_kernel, |x, _p| log_f32(x));
math_kernel!(tanh_kernel, |x, _p| tanh_f32(x));
math_kernel!(sigmoid_kernel, |x, _p| sigmoid_f32(x));
math_kernel!(silu_kernel, |x, _p| silu_f32(x));
math_kernel!(erf_kernel, |x, _p| erf_fast(f64::from(x)) as f32);
math_kernel!(gelu_kernel, |x, _p| gelu_f32(x));
math_kernel!(gelu_tanh_kernel, |x, _p| gelu_tanh_f64(f64::from(x)) as f32);
math_kernel!(pow_kernel, |x, p| pow_f32(x, p));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_write_exactly_len_values_in_place_or_apart() {
        let source: Vec<f32> = (0..19).map(|i| i as f32 * 0.37 - 3.0).collect();
        for function in MathFunction::all() {
            // One guard value past the range: the kernel must leave it alone.
            let mut destination = vec![f32::MAX; source.len() + 1];
            // SAFETY: source holds 19 values and destination 20; the kernel is told 19.
            unsafe {
                (function.kernel())(
                    source.as_ptr(),
                    destination.as_mut_ptr(),
                    source.len(),
                    function.parameter(),
                )
            };
            assert_eq!(destination[source.len()], f32::MAX, "{function:?} overran");
            let mut in_place = source.clone();
            // SAFETY: the same 19-value buffer is read and written, element by element.
            unsafe {
                (function.kernel())(
                    in_place.as_ptr(),
                    in_place.as_mut_ptr(),
                    in_place.len(),
                    function.parameter(),
                )
            };
            for (i, &x) in source.iter().enumerate() {
                let want = function.apply(x);
                assert!(
                    destination[i].to_bits() == want.to_bits()
                        || (want.is_nan() && destination[i].is_nan()),
                    "{function:?}({x})"
                );
                assert_eq!(
                    in_place[i].to_bits(),
                    destination[i].to_bits(),
                    "{function:?} in place"
                );
            }
        }
    }

    #[test]
    fn zero_length_calls_touch_nothing() {
        for function in MathFunction::all() {
            let dangling = std::ptr::NonNull::<f32>::dangling().as_ptr();
            // SAFETY: with len 0 the kernel dereferences neither pointer.
            unsafe { (function.kernel())(dangling, dangling, 0, 1.0) };
        }
    }

    #[test]
    fn exp_and_log_special_values() {
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert!(exp_f32(f32::NAN).is_nan());
        assert!(exp_f32(-100.0) > 0.0, "subnormal results are kept");
        assert_eq!(log_f32(1.0), 0.0);
        assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
        assert!(log_f32(-1.0).is_nan());
        assert_eq!(log_f32(f32::INFINITY), f32::INFINITY);
        let tiny = f32::from_bits(1); // the smallest subnormal
        assert!((log_f32(tiny) - (-103.278_93)).abs() < 1e-4);
    }
}
