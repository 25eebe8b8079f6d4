//! Tests of the packed GEMM: every kernel this CPU has against an f64 reference, on shapes
//! around the tile and block sizes, with each epilogue, and the kernels' bounds checks. The
//! speed comparison with matrixmultiply is `examples/gemm_speed.rs`.

use super::*;

/// Deterministic values in [-1, 1) (a linear congruential generator).
fn values(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// `epilogue(a @ b)` in f64 with plain loops, a row-major `a` and `b`.
fn reference(a: &[f32], b: &[f32], m: usize, k: usize, n: usize, epi: &Epilogue) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0f64;
            for p in 0..k {
                acc += f64::from(a[i * k + p]) * f64::from(b[p * n + j]);
            }
            let ch = match epi.axis {
                ChannelAxis::Rows => i,
                ChannelAxis::Columns => j,
            };
            let mut v = acc as f32;
            if let Some(s) = epi.scale {
                v *= s[ch];
            }
            if let Some(b) = epi.shift {
                v += b[ch];
            }
            let r = epi.residual.map(|r| r.data[i * r.row_stride + j]);
            if let (Some(r), false) = (r, epi.residual_after_activation) {
                v += r;
            }
            v = epi.activation.apply(v);
            if let (Some(r), true) = (r, epi.residual_after_activation) {
                v += r;
            }
            out[i * n + j] = v;
        }
    }
    out
}

fn assert_close(got: &[f32], want: &[f32], k: usize, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    // Sums of k products of values below 1: allow float32 rounding growth with k.
    let tol = 1e-5 * (k as f32 + 1.0);
    for (idx, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: element {idx}: got {g}, want {w}"
        );
    }
}

const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (3, 5, 7),
    (8, 32, 17),
    (9, 33, 31),
    (13, 200, 70),
    (64, 300, 129),
    (37, 520, 600),
    (5, 0, 9),
];

#[test]
fn every_kernel_matches_the_reference_with_either_operand_packed() {
    for kernel in Kernel::available() {
        for &(m, k, n) in SHAPES {
            let a = values(m * k, 1);
            let b = values(k * n, 2);
            let want = reference(&a, &b, m, k, n, &Epilogue::NONE);
            let sa = StridedMatrix::row_major(&a, m, k).unwrap();
            let sb = StridedMatrix::row_major(&b, k, n).unwrap();
            let pa = PackedMatrix::pack(&sa, Side::Left, kernel);
            let pb = PackedMatrix::pack(&sb, Side::Right, kernel);
            for (name, lhs, rhs) in [
                ("packed B", Operand::Strided(sa), Operand::Packed(&pb)),
                ("packed A", Operand::Packed(&pa), Operand::Strided(sb)),
                ("both packed", Operand::Packed(&pa), Operand::Packed(&pb)),
            ] {
                let mut c = vec![f32::NAN; m * n];
                gemm(lhs, rhs, &mut c, &Epilogue::NONE).unwrap();
                assert_close(&c, &want, k, &format!("{kernel:?} {name} {m}x{k}x{n}"));
            }
        }
    }
}

#[test]
fn strided_operands_and_the_linear_weight_layout() {
    let (m, k, n) = (11, 45, 38);
    let x = values(m * k, 3);
    let w = values(n * k, 4); // out_features x in_features
    let mut wt = vec![0f32; k * n];
    for j in 0..n {
        for p in 0..k {
            wt[p * n + j] = w[j * k + p];
        }
    }
    let want = reference(&x, &wt, m, k, n, &Epilogue::NONE);
    for kernel in Kernel::available() {
        let packed = PackedMatrix::pack_linear_weight(&w, n, k, kernel).unwrap();
        let mut c = vec![0f32; m * n];
        let lhs = StridedMatrix::row_major(&x, m, k).unwrap();
        gemm(
            Operand::Strided(lhs),
            Operand::Packed(&packed),
            &mut c,
            &Epilogue::NONE,
        )
        .unwrap();
        assert_close(&c, &want, k, &format!("{kernel:?} linear"));
        // The transposed weight read through strides, packed on the fly.
        let rhs = StridedMatrix::new(&w, k, n, 1, k).unwrap();
        gemm(
            Operand::Strided(lhs),
            Operand::Strided(rhs),
            &mut c,
            &Epilogue::NONE,
        )
        .unwrap();
        assert_close(&c, &want, k, &format!("{kernel:?} strided weight"));
    }
}

#[test]
fn epilogues_match_the_reference() {
    let (m, k, n) = (19, 70, 45);
    let a = values(m * k, 5);
    let b = values(k * n, 6);
    let scale_rows = values(m, 7);
    let shift_rows = values(m, 8);
    let scale_cols = values(n, 9);
    let shift_cols = values(n, 10);
    let residual = values(m * (n + 3), 11);
    let activations = [
        Activation::Identity,
        Activation::Relu,
        Activation::Gelu,
        Activation::GeluTanh,
        Activation::Silu,
        Activation::Sigmoid,
        Activation::Hardswish,
    ];
    for kernel in Kernel::available() {
        let pb = PackedMatrix::pack(
            &StridedMatrix::row_major(&b, k, n).unwrap(),
            Side::Right,
            kernel,
        );
        for &activation in &activations {
            for (axis, scale, shift) in [
                (ChannelAxis::Columns, None, Some(&shift_cols[..])),
                (
                    ChannelAxis::Columns,
                    Some(&scale_cols[..]),
                    Some(&shift_cols[..]),
                ),
                (
                    ChannelAxis::Rows,
                    Some(&scale_rows[..]),
                    Some(&shift_rows[..]),
                ),
                (ChannelAxis::Rows, None, None),
            ] {
                for (res, after) in [(false, false), (true, false), (true, true)] {
                    let epi = Epilogue {
                        axis,
                        scale,
                        shift,
                        residual: res.then_some(Residual {
                            data: &residual,
                            row_stride: n + 3,
                        }),
                        residual_after_activation: after,
                        activation,
                    };
                    let want = reference(&a, &b, m, k, n, &epi);
                    let mut c = vec![0f32; m * n];
                    let lhs = StridedMatrix::row_major(&a, m, k).unwrap();
                    gemm(Operand::Strided(lhs), Operand::Packed(&pb), &mut c, &epi).unwrap();
                    assert_close(
                        &c,
                        &want,
                        k,
                        &format!(
                            "{kernel:?} {activation:?} {axis:?} scale={} res={res}/{after}",
                            scale.is_some()
                        ),
                    );
                }
            }
        }
    }
}

#[test]
fn the_epilogue_applies_once_even_with_zero_depth() {
    let bias = [1.0f32, -2.0, 3.0];
    let epi = Epilogue {
        shift: Some(&bias),
        activation: Activation::Relu,
        ..Epilogue::NONE
    };
    let a: Vec<f32> = Vec::new();
    let mut c = vec![f32::NAN; 6];
    let lhs = StridedMatrix::row_major(&a, 2, 0).unwrap();
    let rhs = StridedMatrix::row_major(&a, 0, 3).unwrap();
    gemm(Operand::Strided(lhs), Operand::Strided(rhs), &mut c, &epi).unwrap();
    assert_eq!(c, vec![1.0, 0.0, 3.0, 1.0, 0.0, 3.0]);
}

#[test]
fn bad_shapes_are_errors() {
    let a = values(6, 1);
    assert!(StridedMatrix::new(&a, 3, 3, 3, 1).is_err());
    let lhs = StridedMatrix::row_major(&a, 2, 3).unwrap();
    let rhs = StridedMatrix::row_major(&a, 2, 3).unwrap();
    let mut c = vec![0f32; 6];
    assert!(gemm(
        Operand::Strided(lhs),
        Operand::Strided(rhs),
        &mut c,
        &Epilogue::NONE
    )
    .is_err());
    let rhs = StridedMatrix::row_major(&a, 3, 2).unwrap();
    assert!(gemm(
        Operand::Strided(lhs),
        Operand::Strided(rhs),
        &mut c,
        &Epilogue::NONE
    )
    .is_err());
    let mut c = vec![0f32; 4];
    let short = [1.0f32];
    let epi = Epilogue {
        shift: Some(&short),
        ..Epilogue::NONE
    };
    assert!(gemm(Operand::Strided(lhs), Operand::Strided(rhs), &mut c, &epi).is_err());
    let epi = Epilogue {
        residual: Some(Residual {
            data: &short,
            row_stride: 2,
        }),
        ..Epilogue::NONE
    };
    assert!(gemm(Operand::Strided(lhs), Operand::Strided(rhs), &mut c, &epi).is_err());
    // A left operand where a right one belongs.
    let pa = PackedMatrix::pack(&lhs, Side::Left, Kernel::Portable);
    assert!(gemm(
        Operand::Strided(lhs),
        Operand::Packed(&pa),
        &mut c,
        &Epilogue::NONE
    )
    .is_err());
    assert!(Activation::from_name("swish").is_err());
    assert_eq!(
        Activation::from_name("gelu_tanh").unwrap(),
        Activation::GeluTanh
    );
}

/// The kernels refuse panels and tiles shorter than they read or write.
#[test]
fn kernels_check_their_bounds() {
    for kernel in Kernel::available() {
        let (mr, nr) = (kernel.mr(), kernel.nr());
        let kc = 4;
        let a = vec![1f32; kc * mr];
        let b = vec![1f32; kc * nr];
        let mut c = vec![0f32; mr * nr];
        kernel.tile(kc, &a, &b, &mut c, nr, false);
        assert!(c.iter().all(|&v| v == kc as f32), "{kernel:?}");
        let cases: [(usize, usize, usize, usize); 4] = [
            (kc * mr - 1, kc * nr, mr * nr, nr),
            (kc * mr, kc * nr - 1, mr * nr, nr),
            (kc * mr, kc * nr, mr * nr - 1, nr),
            (kc * mr, kc * nr, mr * nr, nr - 1),
        ];
        for (la, lb, lc, stride) in cases {
            let result = std::panic::catch_unwind(|| {
                let mut c = vec![0f32; lc];
                kernel.tile(kc, &a[..la], &b[..lb], &mut c, stride, false);
            });
            assert!(
                result.is_err(),
                "{kernel:?} accepted {la}/{lb}/{lc}/{stride}"
            );
        }
    }
}

fn tensor(values: Vec<f32>, sizes: &[usize]) -> crate::tensor::Tensor {
    crate::tensor::Tensor::from_values(values, sizes)
}

/// `linear_epilogue` on tensors against the unfused kernels (`linear`, `add`, `gelu`), and
/// its cache: the same weight is packed once, and an in-place write to the weight makes the
/// next call pack it again instead of using the stale copy.
#[test]
fn linear_epilogue_matches_the_unfused_kernels_and_repacks_after_a_write() {
    use crate::dtype::Scalar;
    use crate::ops::pointwise::UnaryOp;
    let (rows, k, n) = (2 * 5, 40, 24);
    let x = tensor(values(rows * k, 1), &[2, 5, k]);
    let w = tensor(values(n * k, 2), &[n, k]);
    let b = tensor(values(n, 3), &[n]);
    let r = tensor(values(rows * n, 4), &[2, 5, n]);
    let unfused = |w: &crate::tensor::Tensor| {
        crate::ops::linalg::linear(&x, w, Some(&b))
            .unwrap()
            .add(&r, &Scalar::Int(1))
            .unwrap()
            .unary(UnaryOp::Gelu(false))
            .unwrap()
    };
    let fused = |w: &crate::tensor::Tensor| {
        linear_epilogue(&x, w, Some(&b), Activation::Gelu, Some(&r), false).unwrap()
    };
    let close = |a: &crate::tensor::Tensor, b: &crate::tensor::Tensor| {
        assert_eq!(a.sizes(), b.sizes());
        assert_close(
            &a.to_vec::<f32>().unwrap(),
            &b.to_vec::<f32>().unwrap(),
            k,
            "linear_epilogue",
        );
    };
    close(&fused(&w), &unfused(&w));
    let first = packed_linear_weight(&w, Kernel::best()).unwrap();
    let again = packed_linear_weight(&w, Kernel::best()).unwrap();
    assert!(
        std::sync::Arc::ptr_eq(&first, &again),
        "the packed weight was not cached"
    );
    w.unary_(UnaryOp::Neg).unwrap();
    let after_write = packed_linear_weight(&w, Kernel::best()).unwrap();
    assert!(
        !std::sync::Arc::ptr_eq(&first, &after_write),
        "a stale packed weight was used"
    );
    close(&fused(&w), &unfused(&w));
    // A transposed (non-contiguous) weight view is packed from its strides.
    let wt = tensor(values(k * n, 5), &[k, n]).t().unwrap();
    close(&fused(&wt), &unfused(&wt));
    // Operands the kernel does not take are refused (the runtime runs them unfused).
    let r_broadcast = tensor(values(n, 6), &[n]);
    assert!(!linear_epilogue_supported(
        &x,
        &w,
        Some(&b),
        Some(&r_broadcast)
    ));
    assert!(linear_epilogue(
        &x,
        &w,
        Some(&b),
        Activation::Relu,
        Some(&r_broadcast),
        false
    )
    .is_err());
    let x64 = x.to_dtype(crate::dtype::DType::Float64);
    assert!(!linear_epilogue_supported(&x64, &w, None, None));
}
