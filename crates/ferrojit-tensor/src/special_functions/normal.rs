//! The scaled complementary error function and the normal distribution's functions: `erfcx`,
//! `ndtr`, `log_ndtr` and `ndtri`, in f64.

use std::f64::consts::{FRAC_1_SQRT_2, PI};

use crate::ops::special::{erf, erfc};

/// exp(x²) erfc(x), without the overflow and underflow of that product.
pub fn erfcx(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < 0.0 {
        if x < -26.7 {
            return f64::INFINITY;
        }
        // erfc(-y) = 2 - erfc(y).
        return 2.0 * (x * x).exp() - erfcx(-x);
    }
    if x < 2.0 {
        return (x * x).exp() * erfc(x);
    }
    if x > 1e8 {
        return 1.0 / (PI.sqrt() * x);
    }
    // erfc(x) e^(x²) = (1/√π) / (x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...))))), evaluated
    // from the tail; 100 levels are plenty for x >= 2.
    let mut tail = x;
    for k in (1..=100).rev() {
        tail = x + (k as f64 / 2.0) / tail;
    }
    1.0 / (PI.sqrt() * tail)
}

/// The standard normal CDF Φ(x) = (1 + erf(x/√2)) / 2, the form PyTorch evaluates (so the far
/// left tail rounds to 0 from about x = -8.3, as in PyTorch, rather than keeping erfc's
/// relative accuracy there).
pub fn ndtr(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    0.5 * (1.0 + erf(x * FRAC_1_SQRT_2))
}

/// ln Φ(x), accurate in the far left tail through `erfcx`.
pub fn log_ndtr(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let t = x * FRAC_1_SQRT_2;
    if x < -1.0 {
        (erfcx(-t) / 2.0).ln() - t * t
    } else {
        (-erfc(t) / 2.0).ln_1p()
    }
}

/// Φ⁻¹(p): -inf at 0, +inf at 1, NaN outside [0, 1]. Newton's method on ln Φ (left half) from
/// the tail asymptote, which converges to full precision in a few steps.
pub fn ndtri(p: f64) -> f64 {
    if p.is_nan() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    if p > 0.5 {
        return -ndtri_left(1.0 - p, p);
    }
    ndtri_left(p, 1.0 - p)
}

/// Φ⁻¹(p) for p <= 1/2 (`complement` = 1 - p, exact where the caller has it).
fn ndtri_left(p: f64, complement: f64) -> f64 {
    if p == 0.5 && complement == 0.5 {
        return 0.0;
    }
    let log_p = p.ln();
    // Start: x ≈ -sqrt(-2 ln p) corrected, fine in the tail and in the middle.
    let mut x = if p < 0.3 {
        let t = (-2.0 * log_p).sqrt();
        -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
            / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t))
    } else {
        // Near the middle, Φ(x) ≈ 1/2 + x/√(2π).
        (p - 0.5) * (2.0 * PI).sqrt()
    };
    for _ in 0..50 {
        // Newton on g(x) = ln Φ(x) - ln p: g' = φ(x) / Φ(x).
        let log_cdf = log_ndtr(x);
        let log_density = -0.5 * x * x - 0.5 * (2.0 * PI).ln();
        let step = (log_cdf - log_p) / (log_density - log_cdf).exp();
        x -= step;
        if step.abs() <= 1e-16 * x.abs().max(1e-300) {
            break;
        }
    }
    x
}
