//! The orthogonal polynomials of `torch.special`, evaluated for an integer degree `n` (PyTorch
//! truncates a floating `n` toward zero; a negative degree gives 0). Three-term recurrences,
//! with PyTorch's shortcuts: the values at x = ±1, and the trigonometric forms of the
//! Chebyshev polynomials for large degrees inside (-1, 1).

/// The eight polynomial families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Polynomial {
    ChebyshevT,
    ChebyshevU,
    ChebyshevV,
    ChebyshevW,
    ShiftedChebyshevT,
    ShiftedChebyshevU,
    ShiftedChebyshevV,
    ShiftedChebyshevW,
    HermiteH,
    HermiteHe,
    LaguerreL,
    LegendreP,
}

/// The polynomial of degree `n` at `x`.
pub fn evaluate(kind: Polynomial, x: f64, n: f64) -> f64 {
    if n.is_nan() {
        return f64::NAN;
    }
    let n = n.trunc() as i64;
    if n < 0 {
        return 0.0;
    }
    match kind {
        Polynomial::ChebyshevT => chebyshev_t(x, n),
        Polynomial::ChebyshevU => chebyshev_u(x, n),
        Polynomial::ChebyshevV => chebyshev_v(x, n),
        Polynomial::ChebyshevW => chebyshev_w(x, n),
        Polynomial::ShiftedChebyshevT => chebyshev_t(2.0 * x - 1.0, n),
        Polynomial::ShiftedChebyshevU => chebyshev_u(2.0 * x - 1.0, n),
        Polynomial::ShiftedChebyshevV => chebyshev_v(2.0 * x - 1.0, n),
        Polynomial::ShiftedChebyshevW => chebyshev_w(2.0 * x - 1.0, n),
        Polynomial::HermiteH => recurrence(n, 1.0, 2.0 * x, |k, p, q| 2.0 * x * q - 2.0 * k * p),
        Polynomial::HermiteHe => recurrence(n, 1.0, x, |k, p, q| x * q - k * p),
        Polynomial::LaguerreL => {
            if x == 0.0 {
                return 1.0;
            }
            recurrence(n, 1.0, 1.0 - x, |k, p, q| {
                ((2.0 * k + 1.0 - x) * q - k * p) / (k + 1.0)
            })
        }
        Polynomial::LegendreP => {
            if x.abs() == 1.0 {
                return if x > 0.0 || n % 2 == 0 { 1.0 } else { -1.0 };
            }
            recurrence(n, 1.0, x, |k, p, q| {
                ((2.0 * k + 1.0) * x * q - k * p) / (k + 1.0)
            })
        }
    }
}

/// p_n from p_0, p_1 and `next(k, p_{k-1}, p_k) = p_{k+1}`.
fn recurrence(n: i64, p0: f64, p1: f64, next: impl Fn(f64, f64, f64) -> f64) -> f64 {
    if n == 0 {
        return p0;
    }
    let (mut p, mut q) = (p0, p1);
    for k in 1..n {
        let r = next(k as f64, p, q);
        p = q;
        q = r;
    }
    q
}

fn chebyshev_t(x: f64, n: i64) -> f64 {
    if x.abs() == 1.0 {
        return if x > 0.0 || n % 2 == 0 { 1.0 } else { -1.0 };
    }
    if n > 6 && x.abs() < 1.0 {
        return (n as f64 * x.acos()).cos();
    }
    recurrence(n, 1.0, x, |_, p, q| 2.0 * x * q - p)
}

fn chebyshev_u(x: f64, n: i64) -> f64 {
    let degree = n as f64;
    if x.abs() == 1.0 {
        return if x > 0.0 || n % 2 == 0 {
            degree + 1.0
        } else {
            -(degree + 1.0)
        };
    }
    if n > 8 && x.abs() < 1.0 {
        let angle = x.acos();
        if angle.sin() != 0.0 {
            return ((degree + 1.0) * angle).sin() / angle.sin();
        }
        return (degree + 1.0) * ((degree + 1.0) * angle).cos() * x;
    }
    recurrence(n, 1.0, 2.0 * x, |_, p, q| 2.0 * x * q - p)
}

fn chebyshev_v(x: f64, n: i64) -> f64 {
    let degree = n as f64;
    if x.abs() == 1.0 {
        if x > 0.0 {
            return 1.0;
        }
        return if n % 2 == 0 {
            2.0 * degree + 1.0
        } else {
            -(2.0 * degree + 1.0)
        };
    }
    if n > 8 && x.abs() < 1.0 {
        let angle = x.acos();
        if (angle / 2.0).sin() != 1.0 {
            return ((degree + 0.5) * angle).cos() / (angle / 2.0).cos();
        }
        return if n % 2 == 0 {
            2.0 * degree + 1.0
        } else {
            -(2.0 * degree + 1.0)
        };
    }
    recurrence(n, 1.0, 2.0 * x - 1.0, |_, p, q| 2.0 * x * q - p)
}

fn chebyshev_w(x: f64, n: i64) -> f64 {
    let degree = n as f64;
    if x.abs() == 1.0 {
        if x > 0.0 {
            return 2.0 * degree + 1.0;
        }
        return if n % 2 == 0 { 1.0 } else { -1.0 };
    }
    if n > 8 && x.abs() < 1.0 {
        let angle = x.acos();
        if (angle / 2.0).cos() != 1.0 {
            return ((degree + 0.5) * angle).sin() / (angle / 2.0).sin();
        }
        if x > 0.0 {
            return 2.0 * degree + 1.0;
        }
        return if n % 2 == 0 { 1.0 } else { -1.0 };
    }
    recurrence(n, 1.0, 2.0 * x + 1.0, |_, p, q| 2.0 * x * q - p)
}
