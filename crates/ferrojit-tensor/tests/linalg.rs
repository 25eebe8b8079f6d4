//! Matrix products checked against naive reference loops, plus cat/stack.

use ferrojit_tensor::{cat, linear, stack, DType, Scalar, Tensor};

/// Deterministic small values (exact in f32/f64 arithmetic).
fn seq(n: usize, offset: i64) -> Vec<f64> {
    (0..n)
        .map(|i| ((i as i64 * 7 + offset) % 11 - 5) as f64)
        .collect()
}

fn tensor(sizes: &[usize], offset: i64, dtype: DType) -> Tensor {
    let n: usize = sizes.iter().product();
    Tensor::from_vec(seq(n, offset), sizes)
        .unwrap()
        .to_dtype(dtype)
}

/// Reference matmul on contiguous row-major data: [batch, n, k] x [batch, k, m].
fn naive(a: &[f64], b: &[f64], batch: usize, n: usize, k: usize, m: usize) -> Vec<f64> {
    let mut out = vec![0.0; batch * n * m];
    for bi in 0..batch {
        for i in 0..n {
            for j in 0..m {
                let mut acc = 0.0;
                for p in 0..k {
                    acc += a[bi * n * k + i * k + p] * b[bi * k * m + p * m + j];
                }
                out[bi * n * m + i * m + j] = acc;
            }
        }
    }
    out
}

#[test]
fn matmul_1d_and_2d_combinations() {
    for dtype in [DType::Float32, DType::Float64, DType::Int64, DType::Int32] {
        let v3 = tensor(&[3], 1, dtype);
        let w3 = tensor(&[3], 4, dtype);
        let a23 = tensor(&[2, 3], 2, dtype);
        let b34 = tensor(&[3, 4], 5, dtype);

        let dot = v3.matmul(&w3).unwrap();
        assert_eq!(dot.dim(), 0);
        assert_eq!(dot.dtype(), dtype);
        assert_eq!(
            dot.to_f64_vec(),
            naive(&v3.to_f64_vec(), &w3.to_f64_vec(), 1, 1, 3, 1)
        );

        let mm = a23.matmul(&b34).unwrap();
        assert_eq!(mm.sizes(), &[2, 4]);
        assert_eq!(
            mm.to_f64_vec(),
            naive(&a23.to_f64_vec(), &b34.to_f64_vec(), 1, 2, 3, 4)
        );

        let mv = a23.matmul(&v3).unwrap();
        assert_eq!(mv.sizes(), &[2]);
        assert_eq!(
            mv.to_f64_vec(),
            naive(&a23.to_f64_vec(), &v3.to_f64_vec(), 1, 2, 3, 1)
        );

        let vm = v3.matmul(&b34).unwrap();
        assert_eq!(vm.sizes(), &[4]);
        assert_eq!(
            vm.to_f64_vec(),
            naive(&v3.to_f64_vec(), &b34.to_f64_vec(), 1, 1, 3, 4)
        );

        // Non-contiguous operands (transposed views).
        let a32 = tensor(&[3, 2], 3, dtype);
        let at = a32.t().unwrap();
        let r = at.matmul(&b34).unwrap();
        let at_data = at.contiguous().to_f64_vec();
        assert_eq!(
            r.to_f64_vec(),
            naive(&at_data, &b34.to_f64_vec(), 1, 2, 3, 4)
        );
    }
}

#[test]
fn matmul_batched_with_broadcasting() {
    let dtype = DType::Float32;
    // [2,2,3] x [3,4]: folded
    let a = tensor(&[2, 2, 3], 1, dtype);
    let b = tensor(&[3, 4], 2, dtype);
    let r = a.matmul(&b).unwrap();
    assert_eq!(r.sizes(), &[2, 2, 4]);
    let b_rep: Vec<f64> = [b.to_f64_vec(), b.to_f64_vec()].concat();
    assert_eq!(r.to_f64_vec(), naive(&a.to_f64_vec(), &b_rep, 2, 2, 3, 4));

    // [2,2,3] x [3]: folded matrix-vector
    let v = tensor(&[3], 3, dtype);
    let r = a.matmul(&v).unwrap();
    assert_eq!(r.sizes(), &[2, 2]);
    assert_eq!(
        r.to_f64_vec(),
        naive(&a.to_f64_vec(), &v.to_f64_vec(), 1, 4, 3, 1)
    );

    // [3] x [2,3,4]: vector broadcast over the batch
    let b3 = tensor(&[2, 3, 4], 4, dtype);
    let r = v.matmul(&b3).unwrap();
    assert_eq!(r.sizes(), &[2, 4]);
    let v_rep: Vec<f64> = [v.to_f64_vec(), v.to_f64_vec()].concat();
    assert_eq!(r.to_f64_vec(), naive(&v_rep, &b3.to_f64_vec(), 2, 1, 3, 4));

    // [2,3] x [2,3,4]
    let m = tensor(&[2, 3], 5, dtype);
    let r = m.matmul(&b3).unwrap();
    assert_eq!(r.sizes(), &[2, 2, 4]);
    let m_rep: Vec<f64> = [m.to_f64_vec(), m.to_f64_vec()].concat();
    assert_eq!(r.to_f64_vec(), naive(&m_rep, &b3.to_f64_vec(), 2, 2, 3, 4));

    // [3,1,2,3] x [2,3,4] -> [3,2,2,4] with batch broadcasting
    let a4 = tensor(&[3, 1, 2, 3], 6, dtype);
    let r = a4.matmul(&b3).unwrap();
    assert_eq!(r.sizes(), &[3, 2, 2, 4]);
    let av = a4.to_f64_vec();
    let bv = b3.to_f64_vec();
    let mut a_exp = Vec::new();
    let mut b_exp = Vec::new();
    for i in 0..3 {
        for j in 0..2 {
            a_exp.extend_from_slice(&av[i * 6..(i + 1) * 6]);
            b_exp.extend_from_slice(&bv[j * 12..(j + 1) * 12]);
        }
    }
    assert_eq!(r.to_f64_vec(), naive(&a_exp, &b_exp, 6, 2, 3, 4));

    // [2,2,3] x [2,3,1] (bmm path, int64)
    let ai = tensor(&[2, 2, 3], 7, DType::Int64);
    let bi = tensor(&[2, 3, 1], 8, DType::Int64);
    let r = ai.matmul(&bi).unwrap();
    assert_eq!(r.sizes(), &[2, 2, 1]);
    assert_eq!(r.dtype(), DType::Int64);
    assert_eq!(
        r.to_f64_vec(),
        naive(&ai.to_f64_vec(), &bi.to_f64_vec(), 2, 2, 3, 1)
    );
    let r = ai.bmm(&bi).unwrap();
    assert_eq!(
        r.to_f64_vec(),
        naive(&ai.to_f64_vec(), &bi.to_f64_vec(), 2, 2, 3, 1)
    );
}

#[test]
fn matmul_errors() {
    let a = Tensor::zeros(&[2, 3], DType::Float32).unwrap();
    let b = Tensor::zeros(&[4, 5], DType::Float32).unwrap();
    assert_eq!(
        a.mm(&b).unwrap_err().to_string(),
        "mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
    );
    assert_eq!(
        a.matmul(&b).unwrap_err().to_string(),
        "mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
    );
    let d = Tensor::zeros(&[3, 2], DType::Float64).unwrap();
    assert_eq!(
        a.mm(&d).unwrap_err().to_string(),
        "expected m1 and m2 to have the same dtype, but got: float != double"
    );
    let v3 = Tensor::zeros(&[3], DType::Float32).unwrap();
    let v4 = Tensor::zeros(&[4], DType::Float32).unwrap();
    assert_eq!(
        v3.matmul(&v4).unwrap_err().to_string(),
        "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got 3 and 4 elements respectively"
    );
    assert_eq!(
        a.matmul(&v4).unwrap_err().to_string(),
        "size mismatch, got input (2), mat (2x3), vec (4)"
    );
    let s = Tensor::scalar_tensor(Scalar::Float(1.0), DType::Float32);
    assert_eq!(
        s.matmul(&v3).unwrap_err().to_string(),
        "both arguments to matmul need to be at least 1D, but they are 0D and 1D"
    );
    let b1 = Tensor::zeros(&[2, 2, 3], DType::Float32).unwrap();
    let b2 = Tensor::zeros(&[2, 4, 5], DType::Float32).unwrap();
    assert_eq!(
        b1.matmul(&b2).unwrap_err().to_string(),
        "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."
    );
    let bools = Tensor::zeros(&[2, 2], DType::Bool).unwrap();
    assert_eq!(
        bools.mm(&bools).unwrap_err().to_string(),
        "\"addmm_impl_cpu_\" not implemented for 'Bool'"
    );
    // empty inner dimension gives zeros
    let e1 = Tensor::zeros(&[2, 0], DType::Float32).unwrap();
    let e2 = Tensor::zeros(&[0, 3], DType::Float32).unwrap();
    assert_eq!(e1.mm(&e2).unwrap().to_f64_vec(), vec![0.0; 6]);
}

#[test]
fn addmm_and_linear() {
    let bias = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let m1 = Tensor::from_slice(&[1.0f32, 2., 3., 4.], &[2, 2]).unwrap();
    let m2 = Tensor::from_slice(&[1.0f32, 0., 0., 1.], &[2, 2]).unwrap();
    let r = bias
        .addmm(&m1, &m2, &Scalar::Int(2), &Scalar::Float(0.5))
        .unwrap();
    // 2*bias + 0.5*m1
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![2.5, 5.0, 3.5, 6.0]);
    let nan_bias = Tensor::from_slice(&[f32::NAN, 1.0], &[2]).unwrap();
    let r = nan_bias
        .addmm(&m1, &m2, &Scalar::Int(0), &Scalar::Int(1))
        .unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![1., 2., 3., 4.]);
    assert_eq!(
        bias.addmm(
            &m1,
            &Tensor::zeros(&[3, 2], DType::Float32).unwrap(),
            &Scalar::Int(1),
            &Scalar::Int(1)
        )
        .unwrap_err()
        .to_string(),
        "addmm: mat1 and mat2 shapes cannot be multiplied (2x2 and 3x2)"
    );

    // linear over a 3-D input: [2,2,3] @ W[4,3]^T + b[4]
    let input = tensor(&[2, 2, 3], 1, DType::Float32);
    let weight = tensor(&[4, 3], 2, DType::Float32);
    let b = tensor(&[4], 3, DType::Float32);
    let r = linear(&input, &weight, Some(&b)).unwrap();
    assert_eq!(r.sizes(), &[2, 2, 4]);
    let wt = weight.t().unwrap().contiguous().to_f64_vec();
    let mut expected = naive(&input.to_f64_vec(), &wt, 1, 4, 3, 4);
    let bv = b.to_f64_vec();
    for (i, e) in expected.iter_mut().enumerate() {
        *e += bv[i % 4];
    }
    assert_eq!(r.to_f64_vec(), expected);
    let r1 = input.linear(&weight, None).unwrap();
    assert_eq!(r1.to_f64_vec(), naive(&input.to_f64_vec(), &wt, 1, 4, 3, 4));
    let v = tensor(&[3], 4, DType::Float32);
    let rv = linear(&v, &weight, Some(&b)).unwrap();
    assert_eq!(rv.sizes(), &[4]);
    let bad_weight = Tensor::zeros(&[4, 5], DType::Float32).unwrap();
    assert_eq!(
        linear(&input, &bad_weight, Some(&b))
            .unwrap_err()
            .to_string(),
        "addmm: mat1 and mat2 shapes cannot be multiplied (4x3 and 5x4)"
    );
}

#[test]
fn cat_and_stack() {
    let a = Tensor::from_slice(&[1i64, 2, 3, 4], &[2, 2]).unwrap();
    let b = Tensor::from_slice(&[5.0f64, 6.0], &[1, 2]).unwrap();
    let r = cat(&[a.clone(), b.clone()], 0).unwrap();
    assert_eq!(r.dtype(), DType::Float64);
    assert_eq!(r.sizes(), &[3, 2]);
    assert_eq!(r.to_vec::<f64>().unwrap(), vec![1., 2., 3., 4., 5., 6.]);
    let r = cat(&[a.clone(), a.clone()], -1).unwrap();
    assert_eq!(r.sizes(), &[2, 4]);
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![1, 2, 1, 2, 3, 4, 3, 4]);
    // legacy empty 1-D tensors are skipped
    let e = Tensor::zeros(&[0], DType::Int64).unwrap();
    assert_eq!(cat(&[a.clone(), e], 0).unwrap().sizes(), &[2, 2]);
    assert_eq!(
        cat(&[a.clone(), Tensor::zeros(&[3, 3], DType::Int64).unwrap()], 0)
            .unwrap_err()
            .to_string(),
        "Sizes of tensors must match except in dimension 0. Expected size 2 but got size 3 for tensor number 1 in the list."
    );
    assert_eq!(
        cat(&[], 0).unwrap_err().to_string(),
        "torch.cat(): expected a non-empty list of Tensors"
    );
    let s = stack(&[a.clone(), a.clone()], 1).unwrap();
    assert_eq!(s.sizes(), &[2, 2, 2]);
    assert_eq!(s.to_vec::<i64>().unwrap(), vec![1, 2, 1, 2, 3, 4, 3, 4]);
    let s = stack(&[a.clone(), a.clone()], -1).unwrap();
    assert_eq!(s.sizes(), &[2, 2, 2]);
    assert_eq!(s.to_vec::<i64>().unwrap(), vec![1, 1, 2, 2, 3, 3, 4, 4]);
    assert_eq!(
        stack(&[a.clone(), b], 0).unwrap_err().to_string(),
        "stack expects each tensor to be equal size, but got [2, 2] at entry 0 and [1, 2] at entry 1"
    );
    let scalars = [
        Tensor::scalar_tensor(Scalar::Int(1), DType::Int64),
        Tensor::scalar_tensor(Scalar::Int(2), DType::Int64),
    ];
    assert_eq!(
        stack(&scalars, 0).unwrap().to_vec::<i64>().unwrap(),
        vec![1, 2]
    );
    assert!(cat(&scalars, 0).is_err());
}

/// Pseudo-random values in [-1, 1) (a fixed linear congruential sequence), so that sums are
/// not exact and a wrong summation shows.
fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// The values of `t` in logical order as float64.
fn values64(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::Float64)
        .contiguous()
        .to_vec::<f64>()
        .unwrap()
}

/// `got` against a float64 reference, relative to the size of the terms summed.
fn assert_close(got: &Tensor, expected: &[f64], k: usize, what: &str) {
    let got = values64(got);
    assert_eq!(got.len(), expected.len(), "{what}: element count");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!(
            (g - e).abs() <= 2e-6 * (k as f64).sqrt().max(1.0) * (1.0 + e.abs()),
            "{what}: element {i}: {g} vs {e}"
        );
    }
}

/// One-row products (the GEMV) through `linear`, `matmul` and `addmm` against float64 loops:
/// sizes that are not multiples of the lane width or the column group, products large enough
/// to be split across threads, a strided row, a weight that is a column slice of a wider
/// matrix (its rows `2K` apart), a `[K, N]` right operand and its transpose, and batch dims.
#[test]
fn one_row_products_match_float64_loops() {
    for &(k, n) in &[(1, 1), (5, 3), (17, 9), (63, 130), (300, 517), (768, 1031)] {
        let wide = Tensor::from_vec(noise(n * 2 * k, 1), &[n, 2 * k]).unwrap();
        // Weight [N, K] whose rows are 2K apart.
        let weight = wide.narrow(1, 0, k as i64).unwrap();
        let w = values64(&weight);
        let bias = Tensor::from_vec(noise(n, 2), &[n]).unwrap();
        let b = values64(&bias);
        // A row read at stride 2.
        let x_wide = Tensor::from_vec(noise(2 * k, 3), &[1, 2 * k]).unwrap();
        let x = x_wide.slice(1, None, None, 2).unwrap();
        let xv = values64(&x);
        let dot = |j: usize| (0..k).map(|p| xv[p] * w[j * k + p]).sum::<f64>();

        let expected: Vec<f64> = (0..n).map(|j| dot(j) + b[j]).collect();
        let out = linear(&x, &weight, Some(&bias)).unwrap();
        assert_eq!(out.sizes(), &[1, n]);
        assert_close(&out, &expected, k, &format!("linear k={k} n={n}"));

        // No bias, batch dims in front of the row: [2, 1, K] @ W.T.
        let x3 = Tensor::from_vec(noise(2 * k, 4), &[2, 1, k]).unwrap();
        let x3v = values64(&x3);
        let out = x3.matmul(&weight.t().unwrap()).unwrap();
        assert_eq!(out.sizes(), &[2, 1, n]);
        let expected: Vec<f64> = (0..2)
            .flat_map(|r| {
                let (x3v, w) = (&x3v, &w);
                (0..n).map(move |j| (0..k).map(|p| x3v[r * k + p] * w[j * k + p]).sum::<f64>())
            })
            .collect();
        assert_close(&out, &expected, k, &format!("batched matmul k={k} n={n}"));

        // A contiguous [K, N] right operand (rows of the matrix contiguous).
        let right = Tensor::from_vec(noise(k * n, 5), &[k, n]).unwrap();
        let r = values64(&right);
        let out = x.matmul(&right).unwrap();
        let expected: Vec<f64> = (0..n)
            .map(|j| (0..k).map(|p| xv[p] * r[p * n + j]).sum::<f64>())
            .collect();
        assert_close(
            &out,
            &expected,
            k,
            &format!("row-layout matmul k={k} n={n}"),
        );

        // addmm with beta and alpha that are not 1 and a broadcast [1, N] bias.
        let bias_row = bias.reshape(&[1, n as i64]).unwrap();
        let out = bias_row
            .addmm(&x, &right, &Scalar::Float(0.5), &Scalar::Int(2))
            .unwrap();
        let expected: Vec<f64> = (0..n)
            .map(|j| 0.5 * b[j] + 2.0 * (0..k).map(|p| xv[p] * r[p * n + j]).sum::<f64>())
            .collect();
        assert_close(&out, &expected, k, &format!("addmm k={k} n={n}"));
    }
}

/// Products of several rows through the packed GEMM (the right operand packed once and
/// cached) against float64 loops, for `linear` with batch dims, `mm`, `addmm` as torch.export
/// writes `linear` and with other coefficients; then the weight is written in place and the
/// next product must see the new values, not the cached packing.
#[test]
fn packed_products_match_float64_loops_and_see_weight_writes() {
    for &(m, k, n) in &[(2, 3, 5), (7, 17, 33), (64, 100, 70)] {
        let weight = Tensor::from_vec(noise(n * k, 11), &[n, k]).unwrap();
        let bias = Tensor::from_vec(noise(n, 12), &[n]).unwrap();
        let x = Tensor::from_vec(noise(m * k, 13), &[1, m, k]).unwrap();
        let (xv, b) = (values64(&x), values64(&bias));
        let expect = |w: &[f64], with_bias: bool| -> Vec<f64> {
            let (xv, b) = (&xv, &b);
            (0..m)
                .flat_map(|i| {
                    (0..n).map(move |j| {
                        (0..k).map(|p| xv[i * k + p] * w[j * k + p]).sum::<f64>()
                            + if with_bias { b[j] } else { 0.0 }
                    })
                })
                .collect()
        };
        let w = values64(&weight);
        let out = linear(&x, &weight, Some(&bias)).unwrap();
        assert_eq!(out.sizes(), &[1, m, n]);
        assert_close(&out, &expect(&w, true), k, "linear");
        let x2 = x.reshape(&[m as i64, k as i64]).unwrap();
        let out = x2.mm(&weight.t().unwrap()).unwrap();
        assert_close(&out, &expect(&w, false), k, "mm");
        let out = bias
            .addmm(&x2, &weight.t().unwrap(), &Scalar::Int(1), &Scalar::Int(1))
            .unwrap();
        assert_close(&out, &expect(&w, true), k, "addmm");
        let out = bias
            .addmm(
                &x2,
                &weight.t().unwrap(),
                &Scalar::Int(0),
                &Scalar::Float(-1.5),
            )
            .unwrap();
        let scaled: Vec<f64> = expect(&w, false).iter().map(|v| -1.5 * v).collect();
        assert_close(&out, &scaled, k, "addmm beta 0");

        weight
            .add_(
                &Tensor::from_vec(vec![1.0f32], &[1]).unwrap(),
                &Scalar::Int(1),
            )
            .unwrap();
        let w = values64(&weight);
        let out = linear(&x, &weight, Some(&bias)).unwrap();
        assert_close(
            &out,
            &expect(&w, true),
            k,
            "linear after the weight was written",
        );
    }
}

/// `_native_multi_head_attention` in float32 (projections through the packed GEMM, or the
/// GEMV for one query row) against the same call in float64 (matrixmultiply), with one and
/// several rows per batch.
#[test]
fn attention_with_packed_projections_matches_float64() {
    use ferrojit_tensor::ops::nn::transformer::{native_multi_head_attention, AttentionWeights};
    let e = 24;
    let qkv_weight = Tensor::from_vec(noise(3 * e * e, 21), &[3 * e, e]).unwrap();
    let qkv_bias = Tensor::from_vec(noise(3 * e, 22), &[3 * e]).unwrap();
    let proj_weight = Tensor::from_vec(noise(e * e, 23), &[e, e]).unwrap();
    let proj_bias = Tensor::from_vec(noise(e, 24), &[e]).unwrap();
    let f64_of = |t: &Tensor| t.to_dtype(DType::Float64);
    let weights64 = [&qkv_weight, &qkv_bias, &proj_weight, &proj_bias].map(f64_of);
    for &(batch, length) in &[(1, 1), (2, 5)] {
        let x = Tensor::from_vec(noise(batch * length * e, 25), &[batch, length, e]).unwrap();
        let weights = AttentionWeights {
            qkv_weight: &qkv_weight,
            qkv_bias: &qkv_bias,
            proj_weight: &proj_weight,
            proj_bias: &proj_bias,
        };
        let (out, _) =
            native_multi_head_attention(&x, &x, &x, e as i64, 4, &weights, None, false, true, None)
                .unwrap();
        let x64 = f64_of(&x);
        let weights = AttentionWeights {
            qkv_weight: &weights64[0],
            qkv_bias: &weights64[1],
            proj_weight: &weights64[2],
            proj_bias: &weights64[3],
        };
        let (reference, _) = native_multi_head_attention(
            &x64, &x64, &x64, e as i64, 4, &weights, None, false, true, None,
        )
        .unwrap();
        assert_eq!(out.dtype(), DType::Float32);
        assert_close(&out, &values64(&reference), e, "attention");
    }
}
