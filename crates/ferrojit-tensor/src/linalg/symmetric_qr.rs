//! Symmetric eigendecomposition as LAPACK's `syevd` computes it for small matrices:
//! Householder reduction to tridiagonal form (`sytd2`, from the lower or the upper
//! triangle), then the implicit QL/QR iteration with Wilkinson shifts (`steqr`), then
//! eigenvalues sorted ascending by selection sort. Eigenvectors are unique only up to sign,
//! and following these steps gives PyTorch's signs: the rotations are `lartg`'s in the
//! convention of the LAPACK inside PyTorch's MKL (checked against PyTorch for both
//! triangles, float32 and float64). Convergence thresholds are those of the input's
//! precision, so a float32 matrix takes the iterations `ssyevd` takes.

/// `lamch('E')` (half an ulp of 1) and `lamch('S')` for float32 (`single`) or float64.
fn machine_constants(single: bool) -> (f64, f64) {
    if single {
        (f32::EPSILON as f64 / 2.0, f32::MIN_POSITIVE as f64)
    } else {
        (f64::EPSILON / 2.0, f64::MIN_POSITIVE)
    }
}

/// The plane rotation `(c, s, r)` with `[c s; -s c] [f; g] = [r; 0]`: `r = hypot(f, g)`,
/// negated (with c and s) when `|f| > |g|` and f is negative.
fn rotation(f: f64, g: f64) -> (f64, f64, f64) {
    if g == 0.0 {
        return (1.0, 0.0, f);
    }
    if f == 0.0 {
        return (0.0, 1.0, g);
    }
    let r = f.hypot(g);
    let (c, s) = (f / r, g / r);
    if f.abs() > g.abs() && c < 0.0 {
        (-c, -s, -r)
    } else {
        (c, s, r)
    }
}

/// `laev2`: the eigenvalues `(rt1, rt2)` of `[[a, b], [b, c]]` (rt1 the larger in
/// magnitude) and `(cs, sn)`, the unit eigenvector of rt1.
fn eigen_2x2(a: f64, b: f64, c: f64) -> (f64, f64, f64, f64) {
    let sum = a + c;
    let difference = a - c;
    let abs_difference = difference.abs();
    let twice_b = b + b;
    let abs_twice_b = twice_b.abs();
    let (larger, smaller) = if a.abs() > c.abs() { (a, c) } else { (c, a) };
    let root = if abs_difference > abs_twice_b {
        abs_difference * (1.0 + (abs_twice_b / abs_difference).powi(2)).sqrt()
    } else if abs_difference < abs_twice_b {
        abs_twice_b * (1.0 + (abs_difference / abs_twice_b).powi(2)).sqrt()
    } else {
        abs_twice_b * 2f64.sqrt()
    };
    let (rt1, rt2, sign1) = if sum < 0.0 {
        let rt1 = 0.5 * (sum - root);
        (rt1, (larger / rt1) * smaller - (b / rt1) * b, -1)
    } else if sum > 0.0 {
        let rt1 = 0.5 * (sum + root);
        (rt1, (larger / rt1) * smaller - (b / rt1) * b, 1)
    } else {
        (0.5 * root, -0.5 * root, 1)
    };
    let (cs, sign2) = if difference >= 0.0 {
        (difference + root, 1)
    } else {
        (difference - root, -1)
    };
    let (mut cs1, mut sn1);
    if cs.abs() > abs_twice_b {
        let ct = -twice_b / cs;
        sn1 = 1.0 / (1.0 + ct * ct).sqrt();
        cs1 = ct * sn1;
    } else if abs_twice_b == 0.0 {
        cs1 = 1.0;
        sn1 = 0.0;
    } else {
        let tn = -cs / twice_b;
        cs1 = 1.0 / (1.0 + tn * tn).sqrt();
        sn1 = tn * cs1;
    }
    if sign1 == sign2 {
        let swapped = cs1;
        cs1 = -sn1;
        sn1 = swapped;
    }
    (rt1, rt2, cs1, sn1)
}

/// `sytd2`: `(diagonal, off-diagonal, Q)` with `A = Q T Q^T` for the symmetric matrix held
/// in the lower (or `upper`) triangle of the row-major `a`. Q is row-major `n x n`.
fn tridiagonalise(a: &[f64], n: usize, upper: bool) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut s = vec![0.0; n * n];
    for r in 0..n {
        for c in 0..n {
            let (i, j) = if (r >= c) != upper { (r, c) } else { (c, r) };
            s[r * n + c] = a[i * n + j];
        }
    }
    let mut q = vec![0.0; n * n];
    for i in 0..n {
        q[i * n + i] = 1.0;
    }
    let mut diagonal = vec![0.0; n];
    let mut off = vec![0.0; n.saturating_sub(1)];
    if n == 0 {
        return (diagonal, off, q);
    }
    // Reflector `step` acts on the index range `range`, with its 1 at `one` and the
    // Householder vector's other entries at the rest of the range.
    let steps: Vec<usize> = if upper {
        (0..n - 1).rev().collect()
    } else {
        (0..n - 1).collect()
    };
    for i in steps {
        let (one, others): (usize, Vec<usize>) = if upper {
            (i, (0..i).collect())
        } else {
            (i + 1, (i + 2..n).collect())
        };
        let column = if upper { i + 1 } else { i };
        let alpha = s[one * n + column];
        let x_norm = others
            .iter()
            .map(|&r| s[r * n + column].powi(2))
            .sum::<f64>()
            .sqrt();
        let mut w = vec![0.0; n];
        w[one] = 1.0;
        let (beta, tau) = if x_norm == 0.0 {
            (alpha, 0.0)
        } else {
            let beta = -alpha.hypot(x_norm).copysign(alpha);
            let scale = 1.0 / (alpha - beta);
            for &r in &others {
                w[r] = s[r * n + column] * scale;
            }
            (beta, (beta - alpha) / beta)
        };
        off[i] = beta;
        if tau != 0.0 {
            // S <- H S H with H = I - tau w w^T: with p = tau S w and
            // v = p - (tau / 2)(p . w) w, S <- S - w v^T - v w^T.
            let p: Vec<f64> = (0..n)
                .map(|r| tau * (0..n).map(|c| s[r * n + c] * w[c]).sum::<f64>())
                .collect();
            let dot: f64 = p.iter().zip(&w).map(|(x, y)| x * y).sum();
            let v: Vec<f64> = p
                .iter()
                .zip(&w)
                .map(|(x, y)| x - 0.5 * tau * dot * y)
                .collect();
            for (r, (w_r, v_r)) in w.iter().zip(&v).enumerate() {
                for (c, (w_c, v_c)) in w.iter().zip(&v).enumerate() {
                    s[r * n + c] -= w_r * v_c + v_r * w_c;
                }
            }
            // Q <- Q H.
            for r in 0..n {
                let sum: f64 = (0..n).map(|c| q[r * n + c] * w[c]).sum();
                for (c, w_c) in w.iter().enumerate() {
                    q[r * n + c] -= tau * sum * w_c;
                }
            }
        }
        // The reflected column is (beta, 0, ...): keep the tridiagonal exact.
        for &r in &others {
            s[r * n + column] = 0.0;
            s[column * n + r] = 0.0;
        }
        s[one * n + column] = beta;
        s[column * n + one] = beta;
    }
    for (i, d) in diagonal.iter_mut().enumerate() {
        *d = s[i * n + i];
    }
    (diagonal, off, q)
}

/// Applies the plane rotation `(c, s)` to columns `j` and `j + 1` of the row-major `z`, as
/// `lasr('R', 'V', ...)` does for one plane.
fn rotate_columns(z: &mut [f64], n: usize, j: usize, c: f64, s: f64) {
    for r in 0..n {
        let next = z[r * n + j + 1];
        let this = z[r * n + j];
        z[r * n + j + 1] = c * next - s * this;
        z[r * n + j] = s * next + c * this;
    }
}

/// `steqr` with `compz = 'I'`, then the ascending selection sort: eigenvalues of the
/// tridiagonal `(d, e)` and the row-major eigenvectors of T. `None` when the iteration does
/// not converge (LAPACK's info > 0).
fn tridiagonal_eigen(
    mut d: Vec<f64>,
    mut e: Vec<f64>,
    single: bool,
) -> Option<(Vec<f64>, Vec<f64>)> {
    let n = d.len();
    let mut z = vec![0.0; n * n];
    for i in 0..n {
        z[i * n + i] = 1.0;
    }
    if n <= 1 {
        return Some((d, z));
    }
    let (eps, safe_minimum) = machine_constants(single);
    let eps2 = eps * eps;
    let iteration_limit = 30 * n;
    let mut iterations = 0;
    let mut cosines = vec![0.0; n];
    let mut sines = vec![0.0; n];
    let mut start = 0;
    while start < n {
        if start > 0 {
            e[start - 1] = 0.0;
        }
        // Split where an off-diagonal entry is negligible.
        let mut m = n - 1;
        for k in start..n - 1 {
            let test = e[k].abs();
            if test == 0.0 {
                m = k;
                break;
            }
            if test <= d[k].abs().sqrt() * d[k + 1].abs().sqrt() * eps {
                e[k] = 0.0;
                m = k;
                break;
            }
        }
        let mut l = start;
        let saved_l = l;
        let mut end = m;
        let saved_end = end;
        start = m + 1;
        if end == l {
            continue;
        }
        let norm = (saved_l..=saved_end)
            .map(|k| d[k].abs())
            .chain((saved_l..saved_end).map(|k| e[k].abs()))
            .fold(0.0, f64::max);
        if norm == 0.0 {
            continue;
        }
        // QL when the bottom is the larger end, QR otherwise.
        if d[end].abs() < d[l].abs() {
            end = saved_l;
            l = saved_end;
        }
        if end > l {
            // QL iteration.
            loop {
                let mut m = end;
                if l != end {
                    for k in l..end {
                        if e[k].abs().powi(2) <= (eps2 * d[k].abs()) * d[k + 1].abs() + safe_minimum
                        {
                            m = k;
                            break;
                        }
                    }
                }
                if m < end {
                    e[m] = 0.0;
                }
                let mut p = d[l];
                if m == l {
                    // An eigenvalue converged.
                    d[l] = p;
                    l += 1;
                    if l <= end {
                        continue;
                    }
                    break;
                }
                if m == l + 1 {
                    let (rt1, rt2, c, s) = eigen_2x2(d[l], e[l], d[l + 1]);
                    rotate_columns(&mut z, n, l, c, s);
                    d[l] = rt1;
                    d[l + 1] = rt2;
                    e[l] = 0.0;
                    l += 2;
                    if l <= end {
                        continue;
                    }
                    break;
                }
                if iterations == iteration_limit {
                    return None;
                }
                iterations += 1;
                let mut g = (d[l + 1] - p) / (2.0 * e[l]);
                let mut r = g.hypot(1.0);
                g = d[m] - p + (e[l] / (g + r.copysign(g)));
                let (mut s, mut c) = (1.0, 1.0);
                p = 0.0;
                for i in (l..m).rev() {
                    let f = s * e[i];
                    let b = c * e[i];
                    (c, s, r) = rotation(g, f);
                    if i != m - 1 {
                        e[i + 1] = r;
                    }
                    g = d[i + 1] - p;
                    r = (d[i] - g) * s + 2.0 * c * b;
                    p = s * r;
                    d[i + 1] = g + p;
                    g = c * r - b;
                    cosines[i] = c;
                    sines[i] = -s;
                }
                // lasr backward over the planes m-1 down to l.
                for j in (l..m).rev() {
                    rotate_columns(&mut z, n, j, cosines[j], sines[j]);
                }
                d[l] -= p;
                e[l] = g;
            }
        } else {
            // QR iteration.
            loop {
                let mut m = end;
                if l != end {
                    let mut k = l;
                    while k > end {
                        if e[k - 1].abs().powi(2)
                            <= (eps2 * d[k].abs()) * d[k - 1].abs() + safe_minimum
                        {
                            m = k;
                            break;
                        }
                        k -= 1;
                    }
                }
                if m > end {
                    e[m - 1] = 0.0;
                }
                let mut p = d[l];
                if m == l {
                    d[l] = p;
                    if l == 0 || l - 1 < end {
                        break;
                    }
                    l -= 1;
                    continue;
                }
                if m + 1 == l {
                    let (rt1, rt2, c, s) = eigen_2x2(d[l - 1], e[l - 1], d[l]);
                    rotate_columns(&mut z, n, l - 1, c, s);
                    d[l - 1] = rt1;
                    d[l] = rt2;
                    e[l - 1] = 0.0;
                    if l < end + 2 {
                        break;
                    }
                    l -= 2;
                    continue;
                }
                if iterations == iteration_limit {
                    return None;
                }
                iterations += 1;
                let mut g = (d[l - 1] - p) / (2.0 * e[l - 1]);
                let mut r = g.hypot(1.0);
                g = d[m] - p + (e[l - 1] / (g + r.copysign(g)));
                let (mut s, mut c) = (1.0, 1.0);
                p = 0.0;
                for i in m..l {
                    let f = s * e[i];
                    let b = c * e[i];
                    (c, s, r) = rotation(g, f);
                    if i != m {
                        e[i - 1] = r;
                    }
                    g = d[i] - p;
                    r = (d[i + 1] - g) * s + 2.0 * c * b;
                    p = s * r;
                    d[i] = g + p;
                    g = c * r - b;
                    cosines[i] = c;
                    sines[i] = s;
                }
                // lasr forward over the planes m up to l-1.
                for j in m..l {
                    rotate_columns(&mut z, n, j, cosines[j], sines[j]);
                }
                d[l] -= p;
                e[l - 1] = g;
            }
        }
    }
    // Selection sort, ascending, swapping eigenvector columns along.
    for i in 0..n - 1 {
        let mut k = i;
        let mut p = d[i];
        for (j, &value) in d.iter().enumerate().skip(i + 1) {
            if value < p {
                k = j;
                p = value;
            }
        }
        if k != i {
            d[k] = d[i];
            d[i] = p;
            for r in 0..n {
                z.swap(r * n + i, r * n + k);
            }
        }
    }
    Some((d, z))
}

/// `(eigenvalues ascending, eigenvectors as the columns of a row-major n x n)` of the
/// symmetric matrix in the lower (`upper`: upper) triangle of `a`, as `syevd` returns them
/// (`single`: with float32's thresholds). `None` when the QL/QR iteration fails.
pub(crate) fn lapack_eigh(
    a: &[f64],
    n: usize,
    upper: bool,
    single: bool,
) -> Option<(Vec<f64>, Vec<f64>)> {
    let (d, e, q) = tridiagonalise(a, n, upper);
    let (values, z) = tridiagonal_eigen(d, e, single)?;
    // Eigenvectors of A: Q times those of T.
    let mut vectors = vec![0.0; n * n];
    for r in 0..n {
        for c in 0..n {
            vectors[r * n + c] = (0..n).map(|k| q[r * n + k] * z[k * n + c]).sum();
        }
    }
    Some((values, vectors))
}
