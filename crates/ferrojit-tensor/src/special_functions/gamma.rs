//! The gamma family in f64: `lgamma`, `digamma`, `trigamma`, `polygamma`, the Hurwitz `zeta`,
//! `multigammaln`, and the regularized incomplete gamma functions. Each is computed by a
//! shift to large arguments by recurrence and an asymptotic (Stirling / Euler-Maclaurin)
//! series there, which is accurate to a few units in the last place; the special values
//! (poles, negative integers, infinities) follow PyTorch's `Math.h`.

use std::f64::consts::PI;

/// Bernoulli numbers B_2, B_4, ..., B_24.
const BERNOULLI: [f64; 12] = [
    1.0 / 6.0,
    -1.0 / 30.0,
    1.0 / 42.0,
    -1.0 / 30.0,
    5.0 / 66.0,
    -691.0 / 2730.0,
    7.0 / 6.0,
    -3617.0 / 510.0,
    43867.0 / 798.0,
    -174611.0 / 330.0,
    854513.0 / 138.0,
    -236364091.0 / 2730.0,
];

/// ln|Γ(x)|, with +inf at the poles (0 and the negative integers).
pub fn lgamma(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.is_infinite() {
        return f64::INFINITY;
    }
    if x <= 0.0 && x == x.floor() {
        return f64::INFINITY;
    }
    if x == 1.0 || x == 2.0 {
        return 0.0;
    }
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1-x) = π / sin(πx).
        let s = (PI * x).sin().abs();
        return (PI / s).ln() - lgamma(1.0 - x);
    }
    // Shift to x >= 15, where Stirling's series with the terms below is exact to f64.
    let mut shift = 0.0;
    let mut y = x;
    let mut product = 1.0;
    while y < 15.0 {
        product *= y;
        y += 1.0;
        if product > 1e280 {
            shift += product.ln();
            product = 1.0;
        }
    }
    shift += product.ln();
    let mut series = 0.0;
    let inverse_square = 1.0 / (y * y);
    let mut power = 1.0 / y;
    for (k, b) in BERNOULLI.iter().enumerate().take(8) {
        let n = 2.0 * (k as f64 + 1.0);
        series += b / (n * (n - 1.0)) * power;
        power *= inverse_square;
    }
    (y - 0.5) * y.ln() - y + 0.5 * (2.0 * PI).ln() + series - shift
}

/// ψ(x), the digamma function: -inf·sign at 0 as PyTorch (`copysign(inf, -x)`), NaN at the
/// negative integers.
pub fn digamma(x: f64) -> f64 {
    if x == 0.0 {
        return f64::INFINITY.copysign(-x);
    }
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x < 0.0 {
        if x == x.floor() {
            return f64::NAN;
        }
        // ψ(1-x) - ψ(x) = π cot(πx); PyTorch reduces the angle with the fractional part.
        let fraction = x - x.trunc();
        return digamma(1.0 - x) - PI / (PI * fraction).tan();
    }
    let mut result = 0.0;
    let mut y = x;
    while y < 10.0 {
        result -= 1.0 / y;
        y += 1.0;
    }
    let inverse_square = 1.0 / (y * y);
    let mut power = inverse_square;
    let mut series = 0.0;
    for (k, b) in BERNOULLI.iter().enumerate().take(8) {
        let n = 2.0 * (k as f64 + 1.0);
        series += b / n * power;
        power *= inverse_square;
    }
    result + y.ln() - 0.5 / y - series
}

/// The Hurwitz zeta function ζ(x, q) = Σ (k + q)^-x (Euler-Maclaurin), with PyTorch's special
/// values: +inf at x = 1, NaN for x < 1, +inf at non-positive integer q, NaN at other
/// negative q unless x is an integer.
pub fn zeta(x: f64, q: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    if x < 1.0 || x.is_nan() || q.is_nan() {
        return f64::NAN;
    }
    if q <= 0.0 {
        if q == q.floor() {
            return f64::INFINITY;
        }
        if x != x.floor() {
            return f64::NAN;
        }
    }
    // Direct sum of the first terms, then the Euler-Maclaurin tail at a = q + N.
    let terms = 12;
    let mut sum = 0.0;
    let mut a = q;
    for _ in 0..terms {
        let term = a.powf(-x);
        sum += term;
        if term.abs() < sum.abs() * 1e-17 {
            return sum;
        }
        a += 1.0;
    }
    sum += a.powf(1.0 - x) / (x - 1.0) + 0.5 * a.powf(-x);
    // Σ B_2j / (2j)! · x (x+1) ... (x+2j-2) · a^(-x-2j+1).
    let mut rising = x;
    let mut factorial = 2.0;
    let mut power = a.powf(-x - 1.0);
    for (j, b) in BERNOULLI.iter().enumerate() {
        let term = b / factorial * rising * power;
        sum += term;
        if term.abs() < sum.abs() * 1e-17 {
            break;
        }
        let k = 2.0 * (j as f64 + 1.0);
        rising *= (x + k - 1.0) * (x + k);
        factorial *= (k + 1.0) * (k + 2.0);
        power /= a * a;
    }
    sum
}

/// ψ'(x), the trigamma function, computed as PyTorch computes it (reflection below 1/2, six
/// recurrence steps, then a short asymptotic series), so results agree to the rounding, poles
/// included (where sin(πx) is not exactly zero the value is huge but finite, as in PyTorch).
pub fn trigamma(x: f64) -> f64 {
    let mut sign = 1.0;
    let mut result = 0.0;
    let mut y = x;
    if y < 0.5 {
        sign = -1.0;
        let sin_pi_x = (PI * y).sin();
        result -= PI * PI / (sin_pi_x * sin_pi_x);
        y = 1.0 - y;
    }
    for _ in 0..6 {
        result += 1.0 / (y * y);
        y += 1.0;
    }
    let inverse_square = 1.0 / (y * y);
    result += (1.0
        + 1.0 / (2.0 * y)
        + inverse_square
            * (1.0 / 6.0 - inverse_square * (1.0 / 30.0 - inverse_square * (1.0 / 42.0))))
        / y;
    sign * result
}

/// ψ⁽ⁿ⁾(x): digamma for n = 0, trigamma for n = 1, else (-1)^(n+1) n! ζ(n+1, x).
pub fn polygamma(n: i64, x: f64) -> f64 {
    match n {
        0 => digamma(x),
        1 => trigamma(x),
        _ => {
            let factorial: f64 = (1..=n).map(|k| k as f64).product();
            let sign = if n % 2 == 0 { -1.0 } else { 1.0 };
            sign * factorial * zeta(n as f64 + 1.0, x)
        }
    }
}

/// The multivariate log-gamma ln Γ_p(x) = p(p-1)/4 ln π + Σ_{j<p} ln Γ(x - j/2).
pub fn multigammaln(x: f64, p: i64) -> f64 {
    let p_float = p as f64;
    let mut sum = p_float * (p_float - 1.0) / 4.0 * PI.ln();
    for j in 0..p {
        sum += lgamma(x - j as f64 / 2.0);
    }
    sum
}

/// The regularized lower incomplete gamma function P(a, x).
pub fn gammainc(a: f64, x: f64) -> f64 {
    if a.is_nan() || x.is_nan() || a < 0.0 || x < 0.0 {
        return f64::NAN;
    }
    if a == 0.0 {
        return if x > 0.0 { 1.0 } else { f64::NAN };
    }
    if x == 0.0 {
        return 0.0;
    }
    if a.is_infinite() {
        return if x.is_infinite() { f64::NAN } else { 0.0 };
    }
    if x.is_infinite() {
        return 1.0;
    }
    if x < a + 1.0 {
        lower_series(a, x)
    } else {
        1.0 - upper_fraction(a, x)
    }
}

/// The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).
pub fn gammaincc(a: f64, x: f64) -> f64 {
    if a.is_nan() || x.is_nan() || a < 0.0 || x < 0.0 {
        return f64::NAN;
    }
    if a == 0.0 {
        return if x > 0.0 { 0.0 } else { f64::NAN };
    }
    if x == 0.0 {
        return 1.0;
    }
    if a.is_infinite() {
        return if x.is_infinite() { f64::NAN } else { 1.0 };
    }
    if x.is_infinite() {
        return 0.0;
    }
    if x < a + 1.0 {
        1.0 - lower_series(a, x)
    } else {
        upper_fraction(a, x)
    }
}

/// P(a, x) by its power series (converges fast for x < a + 1).
fn lower_series(a: f64, x: f64) -> f64 {
    let mut term = 1.0 / a;
    let mut sum = term;
    let mut denominator = a;
    for _ in 0..10_000 {
        denominator += 1.0;
        term *= x / denominator;
        sum += term;
        if term.abs() < sum.abs() * 1e-17 {
            break;
        }
    }
    sum * (a * x.ln() - x - lgamma(a)).exp()
}

/// Q(a, x) by its continued fraction (modified Lentz; converges fast for x > a + 1).
fn upper_fraction(a: f64, x: f64) -> f64 {
    let tiny = 1e-300;
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / tiny;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..10_000 {
        let an = -(i as f64) * (i as f64 - a);
        b += 2.0;
        d = an * d + b;
        if d.abs() < tiny {
            d = tiny;
        }
        c = b + an / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (a * x.ln() - x - lgamma(a)).exp() * h
}
