//! Float32 exp, sigmoid, SiLU, tanh, hardswish and hardsigmoid (the vectorized slice
//! kernels) against PyTorch's CPU results on a dense grid of inputs with infinities, NaN,
//! subnormals and the overflow edges, written by tests/fixtures/vectorized_math/generate.py.
//! The bounds are the largest errors measured (AVX2 + FMA and portable builds), in units in
//! the last place; PyTorch's own kernels (Sleef) are within 1 ULP of exp and tanh.

use ferrojit_tensor::gemm::{Activation, ChannelAxis, Epilogue};
use ferrojit_tensor::ops::pointwise::UnaryOp;
use ferrojit_tensor::{DType, Tensor};

fn fixture(name: &str) -> Vec<f32> {
    let path = format!(
        "{}/../../tests/fixtures/vectorized_math/{name}.f32",
        env!("CARGO_MANIFEST_DIR")
    );
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Distance in units in the last place (0 for two NaNs and between the two zeros; the
/// largest value when only one is NaN).
fn ulp_distance(a: f32, b: f32) -> u32 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u32::MAX
        };
    }
    let ordered = |v: f32| {
        let bits = v.to_bits() as i32;
        if bits < 0 {
            i32::MIN.wrapping_sub(bits)
        } else {
            bits
        }
    };
    ordered(a).abs_diff(ordered(b))
}

fn values(t: &Tensor) -> Vec<f32> {
    assert_eq!(t.dtype(), DType::Float32);
    t.to_vec::<f32>().unwrap()
}

/// The largest distance from PyTorch's results, and the input where it occurs.
fn worst(got: &[f32], want: &[f32], inputs: &[f32]) -> (u32, f32) {
    assert_eq!(got.len(), want.len());
    got.iter()
        .zip(want)
        .zip(inputs)
        .map(|((&g, &w), &x)| (ulp_distance(g, w), x))
        .fold((0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
}

#[test]
fn float32_activations_match_pytorch_within_the_measured_bounds() {
    let inputs = fixture("inputs");
    let x = Tensor::from_slice(&inputs, &[inputs.len()]).unwrap();
    let cases: [(&str, UnaryOp, u32); 6] = [
        ("exp", UnaryOp::Exp, 1),
        ("sigmoid", UnaryOp::Sigmoid, 3),
        ("silu", UnaryOp::Silu, 2),
        ("tanh", UnaryOp::Tanh, 1),
        ("hardswish", UnaryOp::Hardswish, 0),
        ("hardsigmoid", UnaryOp::Hardsigmoid, 0),
    ];
    for (name, op, bound) in cases {
        let want = fixture(name);
        let got = values(&x.unary(op).unwrap());
        let (distance, at) = worst(&got, &want, &inputs);
        assert!(
            distance <= bound,
            "{name}: {distance} ULP from PyTorch at {at:e} (bound {bound})"
        );
        // The in-place form gives the same bits.
        let in_place = x.clone_tensor();
        in_place.unary_(op).unwrap();
        let same = values(&in_place)
            .iter()
            .zip(&got)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{name}: in-place result differs");
    }
    // The Tensor methods take the same kernels.
    for (name, got) in [
        ("exp", x.exp().unwrap()),
        ("sigmoid", x.sigmoid().unwrap()),
        ("tanh", x.tanh().unwrap()),
    ] {
        let (distance, at) = worst(&values(&got), &fixture(name), &inputs);
        assert!(
            distance <= 3,
            "{name}: {distance} ULP from PyTorch at {at:e}"
        );
    }
}

#[test]
fn a_fused_epilogue_activation_gives_the_unfused_bits() {
    let inputs = fixture("inputs");
    let x = Tensor::from_slice(&inputs, &[inputs.len()]).unwrap();
    for (activation, op) in [
        (Activation::Silu, UnaryOp::Silu),
        (Activation::Sigmoid, UnaryOp::Sigmoid),
        (Activation::Hardswish, UnaryOp::Hardswish),
    ] {
        let unfused = values(&x.unary(op).unwrap());
        let epilogue = Epilogue {
            axis: ChannelAxis::Rows,
            activation,
            ..Epilogue::NONE
        };
        // Rows of 37 (not a multiple of any vector width), the last one short.
        let cols = 37;
        let mut tile = inputs.clone();
        let rows = tile.len() / cols;
        epilogue.apply_tile(&mut tile, cols, 0, rows, 0, cols);
        for (i, (&f, &u)) in tile.iter().zip(&unfused).take(rows * cols).enumerate() {
            assert_eq!(
                f.to_bits(),
                u.to_bits(),
                "{activation:?} at {i}: {f} vs {u}"
            );
        }
        for &v in &inputs[..] {
            let scalar = activation.apply(v);
            let unfused_one = values(&Tensor::from_slice(&[v], &[1]).unwrap().unary(op).unwrap());
            assert_eq!(
                scalar.to_bits(),
                unfused_one[0].to_bits(),
                "{activation:?} of {v}"
            );
        }
    }
}

#[test]
fn float64_stays_on_the_exact_path() {
    let x = Tensor::from_slice(&[0.5f64, -3.25, 20.0], &[3]).unwrap();
    let got = x.unary(UnaryOp::Silu).unwrap().to_vec::<f64>().unwrap();
    for (&g, &v) in got.iter().zip(&[0.5f64, -3.25, 20.0]) {
        let want = v / (1.0 + (-v).exp());
        assert!((g - want).abs() <= 1e-15 * want.abs(), "{g} vs {want}");
    }
}
