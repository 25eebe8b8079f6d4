//! Bessel functions in f64. I_n and K_ν by integral representations whose trapezoid sums
//! converge exponentially (a periodic integrand for I_n, a double-exponentially decaying one for
//! K_ν), with Hankel's asymptotic series for large arguments: simple, and accurate to about
//! 1e-15. J_0, J_1, Y_0 and Y_1 use the rational approximations PyTorch's kernels use
//! ([`super::bessel_rational`]), whose own error PyTorch's results carry. Special values
//! follow PyTorch's `Math.h` (Y and K are -inf / +inf at 0 and NaN for negative arguments).

use std::f64::consts::PI;

/// J_0(x) as PyTorch computes it in f64 (see [`super::bessel_rational`]).
pub fn bessel_j0(x: f64) -> f64 {
    super::bessel_rational::j0(x)
}

/// J_1(x) as PyTorch computes it in f64.
pub fn bessel_j1(x: f64) -> f64 {
    super::bessel_rational::j1(x)
}

/// Y_0(x) as PyTorch computes it in f64: -inf at 0, NaN for negative x.
pub fn bessel_y0(x: f64) -> f64 {
    super::bessel_rational::y0(x)
}

/// Y_1(x) as PyTorch computes it in f64: -inf at 0, NaN for negative x.
pub fn bessel_y1(x: f64) -> f64 {
    super::bessel_rational::y1(x)
}

/// e^(-|x|) I_n(|x|) for n = 0, 1: (1/π) ∫_0^π e^(|x|(cos θ - 1)) cos(nθ) dθ by the trapezoid
/// rule on the full period for moderate |x|, Hankel's expansion for large |x|.
fn scaled_bessel_i(n: u32, a: f64) -> f64 {
    if a > 50.0 {
        // e^-x I_ν(x) ~ 1/sqrt(2πx) Σ (-1)^k a_k(ν) / x^k.
        let mu = 4.0 * (n * n) as f64;
        let mut sum = 1.0;
        let mut term = 1.0;
        for k in 1..200 {
            let odd = (2 * k - 1) as f64;
            term *= -(mu - odd * odd) / (k as f64 * 8.0 * a);
            sum += term;
            if term.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        return sum / (2.0 * PI * a).sqrt();
    }
    let points = 256;
    let step = 2.0 * PI / points as f64;
    let sum: f64 = (0..points)
        .map(|k| {
            let theta = k as f64 * step;
            (a * (theta.cos() - 1.0)).exp() * (n as f64 * theta).cos()
        })
        .sum();
    sum / points as f64
}

/// I_0(x).
pub fn i0(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a.is_infinite() {
        // PyTorch's Chebyshev kernel gives NaN at ±inf.
        return f64::NAN;
    }
    scaled_bessel_i(0, a) * a.exp()
}

/// e^(-|x|) I_0(x).
pub fn i0e(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.is_infinite() {
        return 0.0;
    }
    scaled_bessel_i(0, x.abs())
}

/// I_1(x) (odd).
pub fn i1(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a.is_infinite() {
        return f64::NAN;
    }
    if a == 0.0 {
        return x;
    }
    let value = scaled_bessel_i(1, a) * a.exp();
    if x < 0.0 {
        -value
    } else {
        value
    }
}

/// e^(-|x|) I_1(x) (odd).
pub fn i1e(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.is_infinite() || x == 0.0 {
        // 0 at 0 exactly (the trapezoid sum of cos θ leaves a rounding residue), signed 0 at ±inf.
        return if x.is_infinite() {
            0.0f64.copysign(x)
        } else {
            x
        };
    }
    let value = scaled_bessel_i(1, x.abs());
    if x < 0.0 {
        -value
    } else {
        value
    }
}

/// e^x K_ν(x) = ∫_0^∞ e^(-x (cosh t - 1)) cosh(νt) dt, by the trapezoid rule (the integrand is
/// even and analytic in a strip of half-width π/2, so step 0.1 is exact to f64).
fn scaled_bessel_k(nu: f64, x: f64) -> f64 {
    // The integrand's width is about 1/sqrt(x): keep several steps inside it.
    let step = 0.1f64.min(0.5 / x.sqrt());
    // Stop where the integrand is below 1e-18 of its start: x (cosh t - 1) - ν t > 42.
    let mut sum = 0.5;
    let mut k = 1;
    loop {
        let t = k as f64 * step;
        let term = (-x * (t.cosh() - 1.0)).exp() * (nu * t).cosh();
        sum += term;
        if term < 1e-18 * sum || k > 100_000 {
            break;
        }
        k += 1;
    }
    sum * step
}

/// K_0(x): +inf at 0, NaN for x < 0.
pub fn k0(x: f64) -> f64 {
    k_common(0.0, x, false)
}

/// K_1(x).
pub fn k1(x: f64) -> f64 {
    k_common(1.0, x, false)
}

/// e^x K_0(x).
pub fn k0e(x: f64) -> f64 {
    k_common(0.0, x, true)
}

/// e^x K_1(x).
pub fn k1e(x: f64) -> f64 {
    k_common(1.0, x, true)
}

fn k_common(nu: f64, x: f64, scaled: bool) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::INFINITY;
    }
    if x.is_infinite() {
        return 0.0;
    }
    let value = scaled_bessel_k(nu, x);
    if scaled {
        value
    } else {
        value * (-x).exp()
    }
}

/// sin(x) / x, 1 at 0.
pub fn spherical_bessel_j0(x: f64) -> f64 {
    if x.is_infinite() {
        return 0.0;
    }
    if x.abs() < 0.5 {
        // Taylor series: no cancellation in sin(x)/x's rounding near 0.
        let x2 = x * x;
        let mut term = 1.0;
        let mut sum = 1.0;
        for k in 1..12 {
            term *= -x2 / ((2 * k) as f64 * (2 * k + 1) as f64);
            sum += term;
        }
        return sum;
    }
    x.sin() / x
}

/// Airy's Ai(x): Maclaurin series on [-8, 2], Ai(x) = (1/π) sqrt(x/3) K_{1/3}(ζ) above,
/// the oscillating asymptotic series below (ζ = (2/3)|x|^(3/2)).
pub fn airy_ai(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.is_infinite() {
        // As PyTorch's kernel.
        return f64::NAN;
    }
    if x > 2.0 {
        let zeta = 2.0 / 3.0 * x.powf(1.5);
        if zeta > 745.0 {
            return 0.0;
        }
        return (x / 3.0).sqrt() / PI * scaled_bessel_k(1.0 / 3.0, zeta) * (-zeta).exp();
    }
    if x >= -8.0 {
        // Ai(x) = c1 f(x) - c2 g(x), f = Σ 3^k (1/3)_k x^3k / (3k)!, g = Σ 3^k (2/3)_k x^(3k+1) / (3k+1)!.
        let c1 = 0.355_028_053_887_817_2;
        let c2 = 0.258_819_403_792_806_8;
        let x3 = x * x * x;
        let (mut f, mut g) = (1.0, x);
        let (mut f_term, mut g_term) = (1.0, x);
        for k in 1..200 {
            let k3 = 3.0 * k as f64;
            f_term *= x3 / ((k3 - 1.0) * k3);
            g_term *= x3 / (k3 * (k3 + 1.0));
            f += f_term;
            g += g_term;
            if f_term.abs() < 1e-18 * f.abs().max(1e-300)
                && g_term.abs() < 1e-18 * g.abs().max(1e-300)
            {
                break;
            }
        }
        return c1 * f - c2 * g;
    }
    let z = -x;
    let zeta = 2.0 / 3.0 * z.powf(1.5);
    // u_k = (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k) u_{k-1}.
    let (mut p, mut q) = (1.0, 0.0);
    let mut u = 1.0;
    let mut power = 1.0;
    let mut previous = f64::INFINITY;
    for k in 1..60 {
        let kf = k as f64;
        u *= (6.0 * kf - 5.0) * (6.0 * kf - 3.0) * (6.0 * kf - 1.0)
            / ((2.0 * kf - 1.0) * 216.0 * kf);
        power /= zeta;
        let term = u * power;
        if term.abs() >= previous {
            break;
        }
        previous = term.abs();
        let sign = if (k / 2) % 2 == 0 { 1.0 } else { -1.0 };
        if k % 2 == 1 {
            q += sign * term;
        } else {
            p += sign * term;
        }
    }
    let angle = zeta + PI / 4.0;
    (angle.sin() * p - angle.cos() * q) / (PI.sqrt() * z.powf(0.25))
}
