//! General (non-symmetric) real eigendecomposition: `torch.linalg.eig` and `eigvals`.
//!
//! PyTorch's CPU result comes from LAPACK's `geev`, and neither the order of the eigenvalues
//! nor the sign of a real eigenvector is fixed by the mathematics, so this follows `geev`'s
//! steps: balancing by powers of two (with the permutations that isolate eigenvalues),
//! Householder reduction to Hessenberg form, the double-shift Francis QR iteration with
//! LAPACK's deflation test and shifts, the standardised 2x2 blocks of the real Schur form,
//! back-substitution for the eigenvectors of the quasi-triangular factor, and `geev`'s
//! normalisation (unit 2-norm; a complex vector rotated so its largest entry is real).
//!
//! The arithmetic is f64 for every input, but the convergence thresholds are those of the
//! input's precision: a float32 input deflates when `sgeev` would, which is what keeps the
//! iteration count, and with it the eigenvector signs, the same as PyTorch's float32 result.

use rustfft::num_complex::Complex;

use super::batch::{read_square, Matrices};
use crate::complex::{Complex128, Complex64};
use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::tensor::Tensor;

/// LAPACK's machine constants for the input's precision: `lamch('P')` (epsilon times the
/// base) and `lamch('S')` (the smallest normal number).
#[derive(Clone, Copy)]
struct Precision {
    ulp: f64,
    safe_minimum: f64,
}

impl Precision {
    fn of(dtype: DType) -> Precision {
        match dtype {
            DType::Float32 | DType::ComplexFloat => Precision {
                ulp: f32::EPSILON as f64,
                safe_minimum: f32::MIN_POSITIVE as f64,
            },
            _ => Precision {
                ulp: f64::EPSILON,
                safe_minimum: f64::MIN_POSITIVE,
            },
        }
    }
}

/// A row-major square matrix with (row, column) indexing.
struct Square {
    n: usize,
    values: Vec<f64>,
}

impl Square {
    fn at(&self, r: usize, c: usize) -> f64 {
        self.values[r * self.n + c]
    }

    fn set(&mut self, r: usize, c: usize, value: f64) {
        self.values[r * self.n + c] = value;
    }

    fn identity(n: usize) -> Square {
        let mut values = vec![0.0; n * n];
        for i in 0..n {
            values[i * n + i] = 1.0;
        }
        Square { n, values }
    }

    fn swap_rows(&mut self, a: usize, b: usize, columns: std::ops::Range<usize>) {
        for c in columns {
            self.values.swap(a * self.n + c, b * self.n + c);
        }
    }

    fn swap_columns(&mut self, a: usize, b: usize, rows: std::ops::Range<usize>) {
        for r in rows {
            self.values.swap(r * self.n + a, r * self.n + b);
        }
    }
}

/// The balancing `gebal('B')` found: rows/columns `low..=high` are the part still coupled,
/// `permutation[i]` the row swapped with `i` when an eigenvalue was isolated (outside
/// `low..=high`), `scale[i]` the power of two row `i` was divided by (inside it).
struct Balance {
    low: usize,
    high: usize,
    permutation: Vec<usize>,
    scale: Vec<f64>,
}

/// Balances `a` in place as LAPACK's `gebal` with job 'B' does.
// `i` indexes a's rows and columns as well as `scale`.
#[allow(clippy::needless_range_loop)]
fn balance(a: &mut Square, precision: Precision) -> Balance {
    let n = a.n;
    let mut permutation: Vec<usize> = (0..n).collect();
    let mut scale = vec![1.0; n];
    let (mut low, mut high) = (0usize, n - 1);
    // Rows whose off-diagonal entries (in columns 0..=high) are all zero hold an isolated
    // eigenvalue: move them to the bottom, searching again from the bottom after every swap.
    loop {
        let found = (0..=high)
            .rev()
            .find(|&i| (0..=high).all(|j| j == i || a.at(i, j) == 0.0));
        let Some(i) = found else { break };
        permutation[high] = i;
        if i != high {
            a.swap_columns(i, high, 0..high + 1);
            a.swap_rows(i, high, low..n);
        }
        if high == 0 {
            return Balance {
                low: 0,
                high: 0,
                permutation,
                scale,
            };
        }
        high -= 1;
    }
    // Columns whose off-diagonal entries (in rows low..=high) are all zero: move them left.
    loop {
        let found = (low..=high).find(|&j| (low..=high).all(|i| i == j || a.at(i, j) == 0.0));
        let Some(j) = found else { break };
        permutation[low] = j;
        if j != low {
            a.swap_columns(j, low, 0..high + 1);
            a.swap_rows(j, low, low..n);
        }
        low += 1;
    }
    // Scale rows and columns low..=high by powers of two until their 2-norms are close.
    let small1 = precision.safe_minimum / precision.ulp;
    let large1 = 1.0 / small1;
    let small2 = small1 * 2.0;
    let large2 = 1.0 / small2;
    let mut changed = true;
    while changed {
        changed = false;
        for i in low..=high {
            let mut c = (low..=high).map(|r| a.at(r, i).powi(2)).sum::<f64>().sqrt();
            let mut r = (low..=high).map(|k| a.at(i, k).powi(2)).sum::<f64>().sqrt();
            let mut column_max = (0..=high).map(|k| a.at(k, i).abs()).fold(0.0, f64::max);
            let mut row_max = (low..n).map(|k| a.at(i, k).abs()).fold(0.0, f64::max);
            if c == 0.0 || r == 0.0 {
                continue;
            }
            let mut g = r / 2.0;
            let mut f: f64 = 1.0;
            let s = c + r;
            while c < g && f.max(c).max(column_max) < large2 && r.min(g).min(row_max) > small2 {
                f *= 2.0;
                c *= 2.0;
                column_max *= 2.0;
                r /= 2.0;
                g /= 2.0;
                row_max /= 2.0;
            }
            g = c / 2.0;
            while g >= r && r.max(row_max) < large2 && f.min(c).min(g).min(column_max) > small2 {
                f /= 2.0;
                c /= 2.0;
                g /= 2.0;
                column_max /= 2.0;
                r *= 2.0;
                row_max *= 2.0;
            }
            if c + r >= 0.95 * s {
                continue;
            }
            if f < 1.0 && scale[i] < 1.0 && f * scale[i] <= small1 {
                continue;
            }
            if f > 1.0 && scale[i] > 1.0 && scale[i] >= large1 / f {
                continue;
            }
            scale[i] *= f;
            changed = true;
            for k in low..n {
                let value = a.at(i, k) / f;
                a.set(i, k, value);
            }
            for k in 0..=high {
                let value = a.at(k, i) * f;
                a.set(k, i, value);
            }
        }
    }
    Balance {
        low,
        high,
        permutation,
        scale,
    }
}

/// LAPACK's `larfg`: the reflector `I - tau [1; v] [1; v]^T` that maps `(alpha, x)` to
/// `(beta, 0)`. Returns `(beta, tau)` and overwrites `x` with `v`; `tau` is 0 (no
/// reflection) when `x` is already zero.
fn householder(alpha: f64, x: &mut [f64]) -> (f64, f64) {
    let x_norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
    if x_norm == 0.0 {
        return (alpha, 0.0);
    }
    let beta = -alpha.hypot(x_norm).copysign(alpha);
    let tau = (beta - alpha) / beta;
    let scale = 1.0 / (alpha - beta);
    for v in x.iter_mut() {
        *v *= scale;
    }
    (beta, tau)
}

/// Applies `I - tau w w^T` (w = `[1; v]`, acting on rows/columns `start..start + w.len()`)
/// to the rows of `a` from the left, over `columns`.
fn reflect_rows(
    a: &mut Square,
    start: usize,
    w: &[f64],
    tau: f64,
    columns: std::ops::Range<usize>,
) {
    for c in columns {
        let sum: f64 = w
            .iter()
            .enumerate()
            .map(|(k, wk)| wk * a.at(start + k, c))
            .sum();
        for (k, wk) in w.iter().enumerate() {
            let value = a.at(start + k, c) - tau * sum * wk;
            a.set(start + k, c, value);
        }
    }
}

/// Applies `I - tau w w^T` to the columns `start..start + w.len()` of `a` from the right,
/// over `rows`.
fn reflect_columns(
    a: &mut Square,
    start: usize,
    w: &[f64],
    tau: f64,
    rows: std::ops::Range<usize>,
) {
    for r in rows {
        let sum: f64 = w
            .iter()
            .enumerate()
            .map(|(k, wk)| wk * a.at(r, start + k))
            .sum();
        for (k, wk) in w.iter().enumerate() {
            let value = a.at(r, start + k) - tau * sum * wk;
            a.set(r, start + k, value);
        }
    }
}

/// Reduces `a` (balanced, coupled in `low..=high`) to upper Hessenberg form as `gehd2`
/// does; returns the orthogonal `Q` with `A = Q H Q^T`.
fn hessenberg(a: &mut Square, low: usize, high: usize) -> Square {
    let n = a.n;
    let mut q = Square::identity(n);
    // Reflector i zeroes column i below row i + 1; the last column (i = high - 1) has
    // nothing below its subdiagonal.
    for i in low..high.saturating_sub(1) {
        let mut x: Vec<f64> = (i + 2..=high).map(|r| a.at(r, i)).collect();
        let (beta, tau) = householder(a.at(i + 1, i), &mut x);
        a.set(i + 1, i, beta);
        for r in i + 2..=high {
            a.set(r, i, 0.0);
        }
        let mut w = vec![1.0];
        w.extend_from_slice(&x);
        reflect_columns(a, i + 1, &w, tau, 0..high + 1);
        reflect_rows(a, i + 1, &w, tau, i + 1..n);
        reflect_columns(&mut q, i + 1, &w, tau, 0..n);
    }
    q
}

/// `lanv2`: the standardised real Schur form of the 2x2 block `[[a, b], [c, d]]` and the
/// rotation `(cs, sn)` that gives it. Returns `((a, b, c, d), (cs, sn))`; `c` is zero when
/// the eigenvalues are real, else `a == d` and `b * c < 0`.
fn standardise_2x2(
    mut a: f64,
    mut b: f64,
    mut c: f64,
    mut d: f64,
    ulp: f64,
) -> ((f64, f64, f64, f64), (f64, f64)) {
    let (mut cs, mut sn);
    if c == 0.0 || (b != 0.0 && a - d == 0.0 && b.signum() != c.signum()) {
        // Already standard: upper triangular, or equal diagonal with b * c < 0.
        cs = 1.0;
        sn = 0.0;
    } else if b == 0.0 {
        // Swap rows and columns.
        cs = 0.0;
        sn = 1.0;
        std::mem::swap(&mut a, &mut d);
        b = -c;
        c = 0.0;
    } else {
        let temp = a - d;
        let mut p = 0.5 * temp;
        let bc_max = b.abs().max(c.abs());
        let bc_mis = b.abs().min(c.abs()) * b.signum() * c.signum();
        let scale = p.abs().max(bc_max);
        let mut z = (p / scale) * p + (bc_max / scale) * bc_mis;
        if z >= 4.0 * ulp {
            // Real eigenvalues.
            z = p + (scale.sqrt() * z.sqrt()).copysign(p);
            a = d + z;
            d -= (bc_max / z) * bc_mis;
            let tau = c.hypot(z);
            cs = z / tau;
            sn = c / tau;
            b -= c;
            c = 0.0;
        } else {
            // Complex (or nearly equal real) eigenvalues: make the diagonal equal.
            let sigma = b + c;
            let tau = sigma.hypot(temp);
            cs = (0.5 * (1.0 + sigma.abs() / tau)).sqrt();
            sn = -(p / (tau * cs)) * sigma.signum();
            let aa = a * cs + b * sn;
            let bb = -a * sn + b * cs;
            let cc = c * cs + d * sn;
            let dd = -c * sn + d * cs;
            a = aa * cs + cc * sn;
            b = bb * cs + dd * sn;
            c = -aa * sn + cc * cs;
            d = -bb * sn + dd * cs;
            let mean = 0.5 * (a + d);
            a = mean;
            d = mean;
            if c != 0.0 {
                if b != 0.0 {
                    if b.signum() == c.signum() {
                        // Real eigenvalues after all: reduce to upper triangular.
                        let sab = b.abs().sqrt();
                        let sac = c.abs().sqrt();
                        p = (sab * sac).copysign(c);
                        let tau = 1.0 / (b + c).abs().sqrt();
                        a = mean + p;
                        d = mean - p;
                        b -= c;
                        c = 0.0;
                        let cs1 = sab * tau;
                        let sn1 = sac * tau;
                        let rotated = cs * cs1 - sn * sn1;
                        sn = cs * sn1 + sn * cs1;
                        cs = rotated;
                    }
                } else {
                    b = -c;
                    c = 0.0;
                    let rotated = cs;
                    cs = -sn;
                    sn = rotated;
                }
            }
        }
    }
    ((a, b, c, d), (cs, sn))
}

/// The real Schur form's eigenvalues as `(real, imaginary)` pairs.
type Eigenvalues = Vec<(f64, f64)>;

/// `lahqr` with Schur vectors wanted: reduces the Hessenberg `h` (coupled in `low..=high`)
/// to real Schur form, accumulating the transformations into `z`. Fails when the iteration
/// does not converge (LAPACK's `info > 0`).
fn schur(
    h: &mut Square,
    z: &mut Square,
    low: usize,
    high: usize,
    precision: Precision,
) -> Option<Eigenvalues> {
    let n = h.n;
    let mut values = vec![(0.0, 0.0); n];
    for (i, value) in values.iter_mut().enumerate() {
        if i < low || i > high {
            *value = (h.at(i, i), 0.0);
        }
    }
    if low == high {
        values[low] = (h.at(low, low), 0.0);
        return Some(values);
    }
    // Clear what lies below the first subdiagonal.
    for j in low..high.saturating_sub(2) {
        h.set(j + 2, j, 0.0);
        h.set(j + 3, j, 0.0);
    }
    if low + 2 <= high {
        h.set(high, high - 2, 0.0);
    }
    let ulp = precision.ulp;
    let small = precision.safe_minimum * ((high - low + 1) as f64 / ulp);
    let iteration_limit = 30 * (high - low + 1).max(10);
    // Iterations since the last deflation; every 6th uses an exceptional shift.
    let mut since_deflation = 0usize;
    let mut i = high as isize;
    while i >= low as isize {
        let iu = i as usize;
        let mut l = low;
        let mut converged = false;
        for _ in 0..=iteration_limit {
            // Look for a negligible subdiagonal entry (Ahues and Tisseur's test).
            let mut k = iu;
            while k > l {
                let sub = h.at(k, k - 1).abs();
                if sub <= small {
                    break;
                }
                let mut test = h.at(k - 1, k - 1).abs() + h.at(k, k).abs();
                if test == 0.0 {
                    if k >= low + 2 {
                        test += h.at(k - 1, k - 2).abs();
                    }
                    if k < high {
                        test += h.at(k + 1, k).abs();
                    }
                }
                if sub <= ulp * test {
                    let above = h.at(k - 1, k).abs();
                    let ab = sub.max(above);
                    let ba = sub.min(above);
                    let difference = (h.at(k - 1, k - 1) - h.at(k, k)).abs();
                    let aa = h.at(k, k).abs().max(difference);
                    let bb = h.at(k, k).abs().min(difference);
                    let s = aa + ab;
                    if ba * (ab / s) <= small.max(ulp * (bb * (aa / s))) {
                        break;
                    }
                }
                k -= 1;
            }
            l = k;
            if l > low {
                h.set(l, l - 1, 0.0);
            }
            if l + 1 >= iu {
                converged = true;
                break;
            }
            since_deflation += 1;
            let (h11, h12, h21, h22);
            if since_deflation.is_multiple_of(12) {
                let s = h.at(iu, iu - 1).abs() + h.at(iu - 1, iu - 2).abs();
                h11 = 0.75 * s + h.at(iu, iu);
                h12 = -0.4375 * s;
                h21 = s;
                h22 = h11;
            } else if since_deflation.is_multiple_of(6) {
                let s = h.at(l + 1, l).abs() + h.at(l + 2, l + 1).abs();
                h11 = 0.75 * s + h.at(l, l);
                h12 = -0.4375 * s;
                h21 = s;
                h22 = h11;
            } else {
                h11 = h.at(iu - 1, iu - 1);
                h21 = h.at(iu, iu - 1);
                h12 = h.at(iu - 1, iu);
                h22 = h.at(iu, iu);
            }
            // The shifts: the eigenvalues of the trailing 2x2 (one of them twice if real).
            let s = h11.abs() + h12.abs() + h21.abs() + h22.abs();
            let (shift1_re, shift1_im, shift2_re, shift2_im);
            if s == 0.0 {
                (shift1_re, shift1_im, shift2_re, shift2_im) = (0.0, 0.0, 0.0, 0.0);
            } else {
                let (a11, a21, a12, a22) = (h11 / s, h21 / s, h12 / s, h22 / s);
                let trace = (a11 + a22) / 2.0;
                let det = (a11 - trace) * (a22 - trace) - a12 * a21;
                let root = det.abs().sqrt();
                if det >= 0.0 {
                    shift1_re = trace * s;
                    shift2_re = shift1_re;
                    shift1_im = root * s;
                    shift2_im = -shift1_im;
                } else {
                    let (r1, r2) = (trace + root, trace - root);
                    let chosen = if (r1 - a22).abs() <= (r2 - a22).abs() {
                        r1 * s
                    } else {
                        r2 * s
                    };
                    shift1_re = chosen;
                    shift2_re = chosen;
                    shift1_im = 0.0;
                    shift2_im = 0.0;
                }
            }
            // Look for two consecutive small subdiagonal entries to start the sweep at m.
            let mut m = iu - 2;
            let mut v = [0.0f64; 3];
            loop {
                let h21s = h.at(m + 1, m);
                let s = (h.at(m, m) - shift2_re).abs() + shift2_im.abs() + h21s.abs();
                let h21s = h21s / s;
                v[0] = h21s * h.at(m, m + 1)
                    + (h.at(m, m) - shift1_re) * ((h.at(m, m) - shift2_re) / s)
                    - shift1_im * (shift2_im / s);
                v[1] = h21s * (h.at(m, m) + h.at(m + 1, m + 1) - shift1_re - shift2_re);
                v[2] = h21s * h.at(m + 2, m + 1);
                let s = v[0].abs() + v[1].abs() + v[2].abs();
                for x in v.iter_mut() {
                    *x /= s;
                }
                if m == l {
                    break;
                }
                let left = h.at(m, m - 1).abs() * (v[1].abs() + v[2].abs());
                let right = ulp
                    * v[0].abs()
                    * (h.at(m - 1, m - 1).abs() + h.at(m, m).abs() + h.at(m + 1, m + 1).abs());
                if left <= right {
                    break;
                }
                m -= 1;
            }
            // The double-shift sweep: chase the bulge from m down to iu.
            for k in m..iu {
                let order = 3.min(iu - k + 1);
                if k > m {
                    for (r, x) in v.iter_mut().enumerate().take(order) {
                        *x = h.at(k + r, k - 1);
                    }
                }
                let (beta, tau) = householder(v[0], &mut v[1..order]);
                v[0] = beta;
                if k > m {
                    h.set(k, k - 1, beta);
                    h.set(k + 1, k - 1, 0.0);
                    if k + 1 < iu {
                        h.set(k + 2, k - 1, 0.0);
                    }
                } else if m > l {
                    let value = h.at(k, k - 1) * (1.0 - tau);
                    h.set(k, k - 1, value);
                }
                let mut w = vec![1.0];
                w.extend_from_slice(&v[1..order]);
                reflect_rows(h, k, &w, tau, k..n);
                let last_row = (k + 3).min(iu);
                reflect_columns(h, k, &w, tau, 0..last_row + 1);
                reflect_columns(z, k, &w, tau, 0..n);
            }
        }
        if !converged {
            return None;
        }
        if l == iu {
            values[iu] = (h.at(iu, iu), 0.0);
        } else {
            // A 2x2 block split off: standardise it and rotate the rest of H and Z to match.
            let ((a, b, c, d), (cs, sn)) = standardise_2x2(
                h.at(iu - 1, iu - 1),
                h.at(iu - 1, iu),
                h.at(iu, iu - 1),
                h.at(iu, iu),
                ulp,
            );
            h.set(iu - 1, iu - 1, a);
            h.set(iu - 1, iu, b);
            h.set(iu, iu - 1, c);
            h.set(iu, iu, d);
            let imaginary = if c == 0.0 {
                0.0
            } else {
                b.abs().sqrt() * c.abs().sqrt()
            };
            values[iu - 1] = (a, imaginary);
            values[iu] = (d, -imaginary);
            for col in iu + 1..n {
                let (x, y) = (h.at(iu - 1, col), h.at(iu, col));
                h.set(iu - 1, col, cs * x + sn * y);
                h.set(iu, col, cs * y - sn * x);
            }
            for row in 0..iu - 1 {
                let (x, y) = (h.at(row, iu - 1), h.at(row, iu));
                h.set(row, iu - 1, cs * x + sn * y);
                h.set(row, iu, cs * y - sn * x);
            }
            for row in 0..n {
                let (x, y) = (z.at(row, iu - 1), z.at(row, iu));
                z.set(row, iu - 1, cs * x + sn * y);
                z.set(row, iu, cs * y - sn * x);
            }
        }
        since_deflation = 0;
        i = l as isize - 1;
    }
    Some(values)
}

/// Solves `(T[..top, ..top] - lambda) y = rhs` upward through the quasi-triangular `t`
/// (1x1 and 2x2 diagonal blocks), writing `y` into `x[..top]`. A pivot smaller than
/// `smallest` is raised to it, as `trevc` does for (nearly) repeated eigenvalues.
fn back_substitute(
    t: &Square,
    x: &mut [Complex<f64>],
    top: usize,
    lambda: Complex<f64>,
    smallest: f64,
) {
    let mut rhs: Vec<Complex<f64>> = (0..top)
        .map(|r| -(top..t.n).map(|c| x[c] * t.at(r, c)).sum::<Complex<f64>>())
        .collect();
    let mut k = top;
    while k > 0 {
        let j = k - 1;
        if j > 0 && t.at(j, j - 1) != 0.0 {
            // A 2x2 block in rows/columns j-1, j: Cramer's rule on the complex system.
            let a11 = Complex::new(t.at(j - 1, j - 1), 0.0) - lambda;
            let a12 = Complex::new(t.at(j - 1, j), 0.0);
            let a21 = Complex::new(t.at(j, j - 1), 0.0);
            let a22 = Complex::new(t.at(j, j), 0.0) - lambda;
            let mut det = a11 * a22 - a12 * a21;
            if det.norm() < smallest {
                det = Complex::new(smallest, 0.0);
            }
            let y1 = (rhs[j - 1] * a22 - a12 * rhs[j]) / det;
            let y2 = (a11 * rhs[j] - a21 * rhs[j - 1]) / det;
            x[j - 1] = y1;
            x[j] = y2;
            for (r, value) in rhs.iter_mut().enumerate().take(j - 1) {
                *value -= y1 * t.at(r, j - 1) + y2 * t.at(r, j);
            }
            k -= 2;
        } else {
            let mut pivot = Complex::new(t.at(j, j), 0.0) - lambda;
            if pivot.norm() < smallest {
                pivot = Complex::new(smallest, 0.0);
            }
            let y = rhs[j] / pivot;
            x[j] = y;
            for (r, value) in rhs.iter_mut().enumerate().take(j) {
                *value -= y * t.at(r, j);
            }
            k -= 1;
        }
    }
}

/// The eigenvectors of the quasi-triangular `t` (as `trevc` sets them up: a real
/// eigenvalue's vector has 1 at its own row; a pair's first vector has 1 at the row of
/// the larger off-diagonal entry), mapped back by `q` and the balancing, then normalised
/// as `geev` does. Columns of a row-major `n x n` complex matrix.
fn eigenvectors(
    t: &Square,
    q: &Square,
    values: &[(f64, f64)],
    balancing: &Balance,
    precision: Precision,
) -> Vec<Complex<f64>> {
    let n = t.n;
    let small_number = precision.safe_minimum * (n as f64 / precision.ulp);
    let mut vectors = vec![Complex::new(0.0, 0.0); n * n];
    let mut j = n;
    while j > 0 {
        let column = j - 1;
        let pair = column > 0 && t.at(column, column - 1) != 0.0;
        let mut x = vec![Complex::new(0.0, 0.0); n];
        let (first, lambda) = if pair {
            let first = column - 1;
            let (re, im) = values[first];
            let im = im.abs();
            if t.at(first, column).abs() >= t.at(column, first).abs() {
                x[first] = Complex::new(1.0, 0.0);
                x[column] = Complex::new(0.0, im / t.at(first, column));
            } else {
                x[first] = Complex::new(-im / t.at(column, first), 0.0);
                x[column] = Complex::new(0.0, 1.0);
            }
            (first, Complex::new(re, im))
        } else {
            x[column] = Complex::new(1.0, 0.0);
            (column, Complex::new(values[column].0, 0.0))
        };
        let smallest = (precision.ulp * (lambda.re.abs() + lambda.im.abs())).max(small_number);
        back_substitute(t, &mut x, first, lambda, smallest);
        // Back to the balanced matrix's coordinates (Q x), then undo the scaling.
        let mut v: Vec<Complex<f64>> = (0..n)
            .map(|r| (0..n).map(|c| x[c] * q.at(r, c)).sum::<Complex<f64>>())
            .collect();
        for (r, value) in v.iter_mut().enumerate() {
            *value *= balancing.scale[r];
        }
        undo_permutation(&mut v, balancing);
        normalise(&mut v, pair);
        for (r, value) in v.iter().enumerate() {
            vectors[r * n + first] = *value;
            if pair {
                vectors[r * n + column] = value.conj();
            }
        }
        j = first;
    }
    vectors
}

/// `gebak`'s permutation step on one vector: the swaps of the isolated rows, undone.
fn undo_permutation(v: &mut [Complex<f64>], balancing: &Balance) {
    let n = v.len();
    let order = (0..balancing.low).rev().chain(balancing.high + 1..n);
    for i in order {
        let k = balancing.permutation[i];
        if k != i {
            v.swap(i, k);
        }
    }
}

/// `geev`'s normalisation: unit 2-norm; a complex vector is then multiplied by the phase
/// that turns its entry of largest modulus, `f + i g`, real. The phase is that of the plane
/// rotation `lartg(f, g)` (in the convention of the LAPACK that PyTorch's MKL ships, checked
/// against PyTorch): the entry becomes `sign(f) |f + i g|` when `|f| > |g|`, else
/// `|f + i g|`, or `g` itself when `f` is zero.
fn normalise(v: &mut [Complex<f64>], complex: bool) {
    let norm = v.iter().map(|x| x.norm_sqr()).sum::<f64>().sqrt();
    if norm > 0.0 {
        for x in v.iter_mut() {
            *x /= norm;
        }
    }
    if !complex {
        for x in v.iter_mut() {
            x.im = 0.0;
        }
        return;
    }
    let mut largest = 0;
    for (k, x) in v.iter().enumerate() {
        if x.norm_sqr() > v[largest].norm_sqr() {
            largest = k;
        }
    }
    let pivot = v[largest];
    let (f, g) = (pivot.re, pivot.im);
    if g == 0.0 {
        return;
    }
    let modulus = f.hypot(g);
    let r = if f == 0.0 {
        g
    } else if f.abs() > g.abs() {
        modulus.copysign(f)
    } else {
        modulus
    };
    let phase = pivot.conj() / r;
    for x in v.iter_mut() {
        *x *= phase;
    }
    v[largest].im = 0.0;
}

/// Eigenvalues and row-major eigenvectors, as complex numbers.
type EigenPairs = (Vec<Complex<f64>>, Vec<Complex<f64>>);

/// Eigenvalues and (when `want_vectors`) eigenvectors of one real `n x n` matrix, or the
/// index LAPACK reports when the QR iteration does not converge.
fn eig_of(
    matrix: &[f64],
    n: usize,
    precision: Precision,
    want_vectors: bool,
) -> std::result::Result<EigenPairs, usize> {
    if n == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut a = Square {
        n,
        values: matrix.to_vec(),
    };
    let balancing = balance(&mut a, precision);
    let mut q = hessenberg(&mut a, balancing.low, balancing.high);
    let values = schur(&mut a, &mut q, balancing.low, balancing.high, precision).ok_or(n)?;
    let eigenvalues: Vec<Complex<f64>> = values
        .iter()
        .map(|&(re, im)| Complex::new(re, im))
        .collect();
    let vectors = if want_vectors {
        eigenvectors(&a, &q, &values, &balancing, precision)
    } else {
        Vec::new()
    };
    Ok((eigenvalues, vectors))
}

/// A complex tensor (complex64 for float32 input, complex128 for float64) from values.
fn complex_tensor(values: Vec<Complex<f64>>, sizes: &[usize], dtype: DType) -> Result<Tensor> {
    match dtype {
        DType::Float32 => Tensor::from_vec(
            values
                .into_iter()
                .map(|z| Complex64::new(z.re as f32, z.im as f32))
                .collect::<Vec<_>>(),
            sizes,
        ),
        _ => Tensor::from_vec(
            values
                .into_iter()
                .map(|z| Complex128::new(z.re, z.im))
                .collect::<Vec<_>>(),
            sizes,
        ),
    }
}

fn check_finite(op: &str, matrices: &Matrices) -> Result<()> {
    if matrices.values.iter().any(|v| !v.is_finite()) {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: input tensor should not contain infs or NaNs."
        )));
    }
    Ok(())
}

fn decompose(op: &str, a: &Tensor, want_vectors: bool) -> Result<(Tensor, Option<Tensor>)> {
    let matrices = read_square(op, "A", a)?;
    // PyTorch names the function with its module here.
    check_finite(&format!("torch.{op}"), &matrices)?;
    let n = matrices.rows;
    let precision = Precision::of(matrices.dtype);
    let (mut values, mut vectors) = (Vec::new(), Vec::new());
    for index in 0..matrices.count() {
        let (w, v) = eig_of(matrices.matrix(index), n, precision, want_vectors).map_err(|info| {
            TensorError::InvalidArgument(format!(
                "{op}: {}The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues (error code: {info}).",
                super::batch::batch_prefix(!matrices.batch_sizes.is_empty(), index)
            ))
        })?;
        values.extend(w);
        vectors.extend(v);
    }
    let values = complex_tensor(values, &matrices.sizes_with(&[n]), matrices.dtype)?;
    let vectors = if want_vectors {
        Some(complex_tensor(vectors, a.sizes(), matrices.dtype)?)
    } else {
        None
    };
    Ok((values, vectors))
}

/// `torch.linalg.eig(A)`: complex `(eigenvalues, eigenvectors)` of real square matrices, in
/// LAPACK `geev`'s order and normalisation.
pub fn eig(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let (values, vectors) = decompose("linalg.eig", a, true)?;
    let vectors = vectors.expect("eigenvectors were requested");
    Ok((values, vectors))
}

/// `torch.linalg.eigvals(A)`: the eigenvalues `eig` returns, without the vectors.
pub fn eigvals(a: &Tensor) -> Result<Tensor> {
    Ok(decompose("linalg.eigvals", a, false)?.0)
}
