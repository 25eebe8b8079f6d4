//! Bessel functions J0, J1, Y0 and Y1 of the first and second kind as PyTorch's CPU kernels
//! compute them (`torch.special.bessel_j0` & co.): Moshier's Cephes rational approximations,
//! evaluated in the tensor's own precision. PyTorch's float64 results carry the
//! approximations' error (about 1e-8 near x = 5, more near the zeros), and its float32 results
//! are the same formulas rounded at every step in f32, so ferrojit evaluates the same
//! formulas in the same order in f32 and f64 rather than computing the true functions.
//!
//! On [0, 5] each function is a ratio of polynomials in x² (times x for J1 and Y1, with the
//! first zeros of J0 and J1 factored out, plus the 2/π log x J term for Y0 and Y1); above 5 it
//! is Hankel's form sqrt(2/(πx)) (P cos χ - Q sin χ) with P and Q ratios of polynomials in
//! 25/x². The coefficient tables are Cephes' published constants.

use std::ops::{Add, Div, Mul, Neg, Sub};

/// The arithmetic the approximations need, for f32 and f64.
pub trait BesselFloat:
    Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// A constant, rounded to this precision (as a C++ `T(double)` conversion rounds).
    fn constant(value: f64) -> Self;
    fn cos(self) -> Self;
    fn sin(self) -> Self;
    fn sqrt(self) -> Self;
    fn ln(self) -> Self;
    fn is_nan(self) -> bool;
}

impl BesselFloat for f64 {
    fn constant(value: f64) -> Self {
        value
    }
    fn cos(self) -> Self {
        f64::cos(self)
    }
    fn sin(self) -> Self {
        f64::sin(self)
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn ln(self) -> Self {
        f64::ln(self)
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
}

impl BesselFloat for f32 {
    fn constant(value: f64) -> Self {
        value as f32
    }
    fn cos(self) -> Self {
        f32::cos(self)
    }
    fn sin(self) -> Self {
        f32::sin(self)
    }
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    fn ln(self) -> Self {
        f32::ln(self)
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
}

/// Horner's rule from the highest coefficient down, starting from zero (the order PyTorch's
/// loops use, so that f32 results round identically).
fn horner<T: BesselFloat>(coefficients: &[f64], z: T) -> T {
    coefficients
        .iter()
        .fold(T::constant(0.0), |acc, &c| acc * z + T::constant(c))
}

/// sqrt(2/π).
const SQRT_TWO_OVER_PI: f64 = 0.797_884_560_802_865_4;
/// 2/π.
const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;
const QUARTER_PI: f64 = std::f64::consts::FRAC_PI_4;
const THREE_QUARTER_PI: f64 = 2.356194490192345;

/// Hankel's P and Q numerators and denominators of order 0 (in 25/x²).
const ORDER0_P_NUMERATOR: [f64; 7] = [
    0.0007969367292973471,
    0.08283523921074408,
    1.239533716464143,
    5.447250030587687,
    8.74716500199817,
    5.303240382353949,
    1.0,
];
const ORDER0_P_DENOMINATOR: [f64; 7] = [
    0.0009244088105588637,
    0.08562884743544745,
    1.2535274390105895,
    5.470977403304171,
    8.761908832370695,
    5.306052882353947,
    1.0,
];
const ORDER0_Q_NUMERATOR: [f64; 8] = [
    -0.011366383889846916,
    -1.2825271867050931,
    -19.553954425773597,
    -93.20601521237683,
    -177.68116798048806,
    -147.07750515495118,
    -51.41053267665993,
    -6.050143506007285,
];
const ORDER0_Q_DENOMINATOR: [f64; 7] = [
    64.3178256118178,
    856.4300259769806,
    3882.4018360540163,
    7240.467741956525,
    5930.727011873169,
    2062.0933166032783,
    242.0057402402914,
];

/// Order 1's.
const ORDER1_P_NUMERATOR: [f64; 7] = [
    0.0007621256162081731,
    0.07313970569409176,
    1.1271960812968493,
    5.112079511468076,
    8.424045901417724,
    5.214515986823615,
    1.0,
];
const ORDER1_P_DENOMINATOR: [f64; 7] = [
    0.0005713231280725487,
    0.06884559087544954,
    1.105142326340617,
    5.073863861286015,
    8.399855543276042,
    5.209828486823619,
    1.0,
];
const ORDER1_Q_NUMERATOR: [f64; 8] = [
    0.05108625947501766,
    4.982138729512334,
    75.82382841325453,
    366.7796093601508,
    710.8563049989261,
    597.4896124006136,
    211.68875710057213,
    25.207020585802372,
];
const ORDER1_Q_DENOMINATOR: [f64; 7] = [
    74.23732770356752,
    1056.4488603826283,
    4986.410583376536,
    9562.318924047562,
    7997.041604473507,
    2826.1927851763908,
    336.0936078106983,
];

/// J0 on [0, 5]: (x² - z1)(x² - z2) R(x²), z1 and z2 the squares of J0's first two zeros.
const J0_NUMERATOR: [f64; 4] = [
    -4794432209.782018,
    1956174919465.5657,
    -249248344360967.72,
    9708622510473064.0,
];
const J0_DENOMINATOR: [f64; 8] = [
    499.563147152651,
    173785.4016763747,
    48440965.83399621,
    11185553704.535683,
    2112775201154.892,
    310518229857422.56,
    3.1812195594320496e16,
    1.7108629408104315e18,
];
const J0_FIRST_ZERO_SQUARED: f64 = 5.783185962946784;
const J0_SECOND_ZERO_SQUARED: f64 = 30.471262343662087;

/// J1 on [0, 5]: x (x² - z1)(x² - z2) R(x²).
const J1_NUMERATOR: [f64; 4] = [
    -899971225.7055594,
    452228297998.19403,
    -72749424522181.83,
    3682957328638529.0,
];
const J1_DENOMINATOR: [f64; 8] = [
    620.8364781180543,
    256987.25675774884,
    83514679.14319493,
    22151159547.97925,
    4749141220799.914,
    784369607876235.9,
    8.952223361846274e16,
    5.322786203326801e18,
];
const J1_FIRST_ZERO_SQUARED: f64 = 14.681970642123893;
const J1_SECOND_ZERO_SQUARED: f64 = 49.2184563216946;

/// Y0 on (0, 5]: R(x²) + (2/π) ln x J0(x).
const Y0_NUMERATOR: [f64; 8] = [
    15592.436785523574,
    -14663929.59039716,
    5435264770.518765,
    -982136065717.9115,
    87590639439536.7,
    -3466283033847297.0,
    4.4273326857256984e16,
    -1.8495080043698668e16,
];
const Y0_DENOMINATOR: [f64; 7] = [
    1041.2835366425984,
    626107.330137135,
    268919633.39381415,
    86400248710.3935,
    20297961275010.555,
    3171577528429750.5,
    2.5059625617265306e17,
];

/// Y1 on (0, 5]: x R(x²) + (2/π)(ln x J1(x) - 1/x).
const Y1_NUMERATOR: [f64; 6] = [
    1263204747.9017804,
    -647355876379.1603,
    114509511541823.73,
    -8127702555013251.0,
    2.024394757135949e17,
    -7.788771962659501e17,
];
const Y1_DENOMINATOR: [f64; 8] = [
    594.3015923461282,
    235564.09294306856,
    73481194.44597217,
    18760131610.870617,
    3882312774962.3857,
    620557727146953.8,
    6.871410873553005e16,
    3.9727060811656064e18,
];

/// Hankel's form above 5: sqrt(2/π)/sqrt(x) (P cos χ ∓ (5/x) Q sin χ) for J, with sin and cos
/// exchanged and the sign flipped for Y. `w` is how PyTorch forms the polynomials' variable:
/// 25/x² for order 0, (5/x)² for order 1.
#[allow(clippy::too_many_arguments)]
fn hankel<T: BesselFloat>(
    x: T,
    w: T,
    p: (&[f64], &[f64]),
    q: (&[f64], &[f64]),
    phase: f64,
    second_kind: bool,
) -> T {
    let pp = horner(p.0, w);
    let pq = horner(p.1, w);
    let qp = horner(q.0, w);
    let qq = horner(q.1, w);
    let chi = x - T::constant(phase);
    let five_over_x = T::constant(5.0) / x;
    let combined = if second_kind {
        pp / pq * chi.sin() + five_over_x * (qp / qq) * chi.cos()
    } else {
        pp / pq * chi.cos() - five_over_x * (qp / qq) * chi.sin()
    };
    combined * T::constant(SQRT_TWO_OVER_PI) / x.sqrt()
}

/// 25/x², the order-0 variable.
fn order0_variable<T: BesselFloat>(x: T) -> T {
    T::constant(25.0) / (x * x)
}

/// (5/x)(5/x), the order-1 variable.
fn order1_variable<T: BesselFloat>(x: T) -> T {
    let five_over_x = T::constant(5.0) / x;
    five_over_x * five_over_x
}

/// Hankel's form for order 0 (J0, or Y0 with `second_kind`).
fn order0_hankel<T: BesselFloat>(x: T, second_kind: bool) -> T {
    hankel(
        x,
        order0_variable(x),
        (&ORDER0_P_NUMERATOR, &ORDER0_P_DENOMINATOR),
        (&ORDER0_Q_NUMERATOR, &ORDER0_Q_DENOMINATOR),
        QUARTER_PI,
        second_kind,
    )
}

/// Hankel's form for order 1 (J1, or Y1 with `second_kind`).
fn order1_hankel<T: BesselFloat>(x: T, second_kind: bool) -> T {
    hankel(
        x,
        order1_variable(x),
        (&ORDER1_P_NUMERATOR, &ORDER1_P_DENOMINATOR),
        (&ORDER1_Q_NUMERATOR, &ORDER1_Q_DENOMINATOR),
        THREE_QUARTER_PI,
        second_kind,
    )
}

/// J0(x), even.
pub fn j0<T: BesselFloat>(x: T) -> T {
    let zero = T::constant(0.0);
    let x = if x < zero { -x } else { x };
    if x <= T::constant(5.0) {
        if x < T::constant(1e-5) {
            return T::constant(1.0) - x * x / T::constant(4.0);
        }
        let z = x * x;
        let numerator = horner(&J0_NUMERATOR, z);
        let denominator = horner(&J0_DENOMINATOR, z);
        return (z - T::constant(J0_FIRST_ZERO_SQUARED))
            * (z - T::constant(J0_SECOND_ZERO_SQUARED))
            * numerator
            / denominator;
    }
    order0_hankel(x, false)
}

/// J1(x), odd.
pub fn j1<T: BesselFloat>(x: T) -> T {
    if x < T::constant(0.0) {
        return -j1(-x);
    }
    if x <= T::constant(5.0) {
        let z = x * x;
        let numerator = horner(&J1_NUMERATOR, z);
        let denominator = horner(&J1_DENOMINATOR, z);
        return numerator / denominator
            * x
            * (z - T::constant(J1_FIRST_ZERO_SQUARED))
            * (z - T::constant(J1_SECOND_ZERO_SQUARED));
    }
    order1_hankel(x, false)
}

/// Y0(x): -inf at 0, NaN below.
pub fn y0<T: BesselFloat>(x: T) -> T {
    let zero = T::constant(0.0);
    if x <= T::constant(5.0) {
        if x == zero {
            return T::constant(f64::NEG_INFINITY);
        }
        if x < zero {
            return T::constant(f64::NAN);
        }
        let z = x * x;
        let rational = horner(&Y0_NUMERATOR, z) / horner(&Y0_DENOMINATOR, z);
        return rational + T::constant(TWO_OVER_PI) * x.ln() * j0(x);
    }
    order0_hankel(x, true)
}

/// Y1(x): -inf at 0, NaN below.
pub fn y1<T: BesselFloat>(x: T) -> T {
    let zero = T::constant(0.0);
    if x <= T::constant(5.0) {
        if x == zero {
            return T::constant(f64::NEG_INFINITY);
        }
        if x < zero {
            return T::constant(f64::NAN);
        }
        let z = x * x;
        let rational = horner(&Y1_NUMERATOR, z) / horner(&Y1_DENOMINATOR, z);
        return x * rational + T::constant(TWO_OVER_PI) * (j1(x) * x.ln() - T::constant(1.0) / x);
    }
    order1_hankel(x, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// J_n(x) = Σ_k (-1)^k (x/2)^(2k+n) / (k! (k+n)!), summed far enough for small x.
    fn power_series(n: i32, x: f64) -> f64 {
        let mut term = (x / 2.0).powi(n) / (1..=n).map(f64::from).product::<f64>();
        let mut sum = term;
        for k in 1..20 {
            term *= -(x / 2.0).powi(2) / (f64::from(k) * f64::from(k + n));
            sum += term;
        }
        sum
    }

    #[test]
    fn small_arguments_follow_the_series() {
        // The rational forms agree with the power series to rounding where it converges fast.
        for x in [1e-3f64, 1e-2, 0.1, 1.0, 2.0] {
            assert!((j0(x) - power_series(0, x)).abs() < 1e-13, "j0({x})");
            assert!((j1(x) - power_series(1, x)).abs() < 1e-13, "j1({x})");
        }
    }

    #[test]
    fn special_values() {
        assert_eq!(y0(0.0f64), f64::NEG_INFINITY);
        assert!(y1(-1.0f32).is_nan());
        assert!(j0(f64::NAN).is_nan());
        assert_eq!(j1(-2.0f64), -j1(2.0f64));
    }
}
