//! Fused multiply-add over slices (`x * a + b`, rounded once as `f32::mul_add` is), using
//! the CPU's FMA instruction when it has one.
//!
//! Without `-C target-feature=+fma`, `f32::mul_add` is a call into libm per element. The
//! kernels here are compiled a second time with the FMA feature enabled and picked at run
//! time, so the loop becomes vector FMA instructions; the results are the same bits either
//! way, since a fused multiply-add has one correctly rounded result.

/// `out[i] = x[i] * alpha + beta` with one rounding, for equal-length slices.
pub(crate) fn affine_f32(x: &[f32], alpha: f32, beta: f32, out: &mut [f32]) {
    assert_eq!(
        x.len(),
        out.len(),
        "affine_f32: slices of different lengths"
    );
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: `affine_f32_fma` only needs the AVX and FMA instructions it is compiled
        // for, and both were detected on this CPU just above. It indexes nothing itself: the
        // portable loop it inlines zips the two slices, whose lengths are asserted equal.
        unsafe { affine_f32_fma(x, alpha, beta, out) };
        return;
    }
    affine_f32_portable(x, alpha, beta, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,fma")]
unsafe fn affine_f32_fma(x: &[f32], alpha: f32, beta: f32, out: &mut [f32]) {
    affine_f32_portable(x, alpha, beta, out);
}

#[inline(always)]
fn affine_f32_portable(x: &[f32], alpha: f32, beta: f32, out: &mut [f32]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = v.mul_add(alpha, beta);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dispatched kernel (FMA instructions where the CPU has them) gives the bits of the
    /// scalar `mul_add` for every length around the vector widths, including empty slices,
    /// and for values where fusing changes the result.
    #[test]
    fn dispatched_affine_matches_scalar_mul_add() {
        let alpha = 1.0f32 + f32::EPSILON;
        let beta = -1.0f32;
        for len in [0usize, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100] {
            let x: Vec<f32> = (0..len)
                .map(|i| 1.0 + (i as f32) * f32::EPSILON - 0.5 * (i % 3) as f32)
                .collect();
            let mut out = vec![f32::NAN; len];
            affine_f32(&x, alpha, beta, &mut out);
            for (i, (&o, &v)) in out.iter().zip(&x).enumerate() {
                assert_eq!(
                    o.to_bits(),
                    v.mul_add(alpha, beta).to_bits(),
                    "len {len}, index {i}"
                );
            }
        }
        // The unfused product would round 1 + 2^-23 squared to 1 + 2^-22 and give 2^-22;
        // the fused result keeps the 2^-46 term.
        let mut one = [0.0f32];
        affine_f32(&[alpha], alpha, beta, &mut one);
        assert_eq!(one[0], 2.0f32.powi(-22) + 2.0f32.powi(-46));
    }

    #[test]
    #[should_panic(expected = "slices of different lengths")]
    fn affine_refuses_slices_of_different_lengths() {
        affine_f32(&[1.0, 2.0], 1.0, 0.0, &mut [0.0]);
    }
}
