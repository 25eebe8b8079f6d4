//! Bessel functions in f64. Integral representations whose trapezoid sums converge
//! exponentially (periodic integrands for J_n and I_n, a double-exponentially decaying one for
//! K_ν), Hankel's asymptotic series for large arguments, and Neumann's series for Y_0 / Y_1:
//! simple, and accurate to about 1e-15 absolute. Special values follow PyTorch's `Math.h`
//! (Y and K are -inf / +inf at 0 and NaN for negative arguments).

use std::f64::consts::PI;

/// Euler-Mascheroni constant.
const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

/// Where Hankel's expansion takes over from the integrals.
const ASYMPTOTIC_FROM: f64 = 25.0;

/// J_n(x) for integer n >= 0 and |x| <= ASYMPTOTIC_FROM-ish: (1/2π) ∮ cos(nθ - x sin θ) dθ by the
/// trapezoid rule on the full period.
fn bessel_j_integral(n: u32, x: f64) -> f64 {
    let points = 64 + 2 * (x.abs() as usize + n as usize);
    let step = 2.0 * PI / points as f64;
    let sum: f64 = (0..points)
        .map(|k| {
            let theta = k as f64 * step;
            (n as f64 * theta - x * theta.sin()).cos()
        })
        .sum();
    sum / points as f64
}

/// Hankel's expansion: (P, Q) of order `nu` at x (large).
fn hankel_pq(nu: f64, x: f64) -> (f64, f64) {
    let mu = 4.0 * nu * nu;
    let (mut p, mut q) = (1.0, 0.0);
    let mut term = 1.0;
    let mut previous = f64::INFINITY;
    for k in 1..200 {
        let odd = (2 * k - 1) as f64;
        term *= (mu - odd * odd) / (k as f64 * 8.0 * x);
        if term.abs() >= previous || term == 0.0 {
            break;
        }
        previous = term.abs();
        // Terms alternate between Q (odd k) and P (even k), each with sign (-1)^floor(k/2).
        let sign = if (k / 2) % 2 == 0 { 1.0 } else { -1.0 };
        if k % 2 == 1 {
            q += sign * term;
        } else {
            p += sign * term;
        }
        if term.abs() < 1e-17 {
            break;
        }
    }
    (p, q)
}

fn hankel_j(nu: f64, x: f64) -> f64 {
    let (p, q) = hankel_pq(nu, x);
    let chi = x - (nu / 2.0 + 0.25) * PI;
    (2.0 / (PI * x)).sqrt() * (p * chi.cos() - q * chi.sin())
}

fn hankel_y(nu: f64, x: f64) -> f64 {
    let (p, q) = hankel_pq(nu, x);
    let chi = x - (nu / 2.0 + 0.25) * PI;
    (2.0 / (PI * x)).sqrt() * (p * chi.sin() + q * chi.cos())
}

/// J_0(x).
pub fn bessel_j0(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a.is_infinite() {
        // PyTorch's kernels give NaN at ±inf.
        return f64::NAN;
    }
    if a > ASYMPTOTIC_FROM {
        hankel_j(0.0, a)
    } else {
        bessel_j_integral(0, a)
    }
}

/// J_1(x) (odd).
pub fn bessel_j1(x: f64) -> f64 {
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
    let value = if a > ASYMPTOTIC_FROM {
        hankel_j(1.0, a)
    } else {
        bessel_j_integral(1, a)
    };
    if x < 0.0 {
        -value
    } else {
        value
    }
}

/// How many even orders Neumann's series needs at x (J_m(x) is negligible for m > x + 40).
fn neumann_terms(x: f64) -> u32 {
    (x as u32 + 40) / 2 + 1
}

/// Y_0(x) = (2/π)(ln(x/2) + γ) J_0(x) - (4/π) Σ_{k>=1} (-1)^k J_2k(x) / k.
pub fn bessel_y0(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_infinite() {
        return f64::NAN;
    }
    if x > ASYMPTOTIC_FROM {
        return hankel_y(0.0, x);
    }
    let mut series = 0.0;
    for k in 1..=neumann_terms(x) {
        let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
        series += sign * bessel_j_integral(2 * k, x) / k as f64;
    }
    2.0 / PI * ((x / 2.0).ln() + EULER_GAMMA) * bessel_j_integral(0, x) - 4.0 / PI * series
}

/// Y_1(x) = -Y_0'(x), from the derivative of Y_0's Neumann series.
pub fn bessel_y1(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_infinite() {
        return f64::NAN;
    }
    if x > ASYMPTOTIC_FROM {
        return hankel_y(1.0, x);
    }
    let mut series = 0.0;
    for k in 1..=neumann_terms(x) {
        let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
        series +=
            sign * (bessel_j_integral(2 * k - 1, x) - bessel_j_integral(2 * k + 1, x)) / k as f64;
    }
    -2.0 / (PI * x) * bessel_j_integral(0, x)
        + 2.0 / PI * ((x / 2.0).ln() + EULER_GAMMA) * bessel_j_integral(1, x)
        + 2.0 / PI * series
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
