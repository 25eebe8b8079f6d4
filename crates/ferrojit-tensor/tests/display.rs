//! Display output compared against strings printed by PyTorch 2.x (`print(tensor)`).

use ferrojit_tensor::{DType, Scalar, Tensor};

fn f32s(values: &[f32], sizes: &[usize]) -> Tensor {
    Tensor::from_slice(values, sizes).unwrap()
}

fn check(t: &Tensor, expected: &str) {
    assert_eq!(t.to_string(), expected);
}

#[test]
fn small_tensors_match_pytorch() {
    check(
        &f32s(&[1., 2., 3., 4.], &[2, 2]),
        "tensor([[1., 2.],\n        [3., 4.]])",
    );
    check(
        &Tensor::from_slice(&[1i64, 2], &[2]).unwrap(),
        "tensor([1, 2])",
    );
    check(
        &Tensor::from_slice(&[true, false], &[2]).unwrap(),
        "tensor([ True, False])",
    );
    check(&f32s(&[0.1, 2.5], &[2]), "tensor([0.1000, 2.5000])");
    check(
        &Tensor::from_slice(&[1.5f64, -2.25], &[2]).unwrap(),
        "tensor([ 1.5000, -2.2500], dtype=torch.float64)",
    );
    check(
        &Tensor::from_slice(&[1i32, -20, 300, 4], &[2, 2]).unwrap(),
        "tensor([[  1, -20],\n        [300,   4]], dtype=torch.int32)",
    );
    check(
        &Tensor::from_slice(&[1u8, 2], &[2]).unwrap(),
        "tensor([1, 2], dtype=torch.uint8)",
    );
    check(&f32s(&[-1.25, 10.5], &[2]), "tensor([-1.2500, 10.5000])");
}

#[test]
fn zero_dim_tensors_match_pytorch() {
    check(
        &Tensor::scalar_tensor(Scalar::Float(3.0), DType::Float32),
        "tensor(3.)",
    );
    check(
        &Tensor::scalar_tensor(Scalar::Int(7), DType::Int64),
        "tensor(7)",
    );
    check(
        &Tensor::scalar_tensor(Scalar::Bool(true), DType::Bool),
        "tensor(True)",
    );
    check(
        &Tensor::scalar_tensor(Scalar::Float(0.5), DType::Float64),
        "tensor(0.5000, dtype=torch.float64)",
    );
}

#[test]
fn special_values_and_scientific_mode_match_pytorch() {
    check(
        &f32s(&[1e-5, 1.0], &[2]),
        "tensor([1.0000e-05, 1.0000e+00])",
    );
    check(&f32s(&[1.0, 1e9], &[2]), "tensor([1.0000e+00, 1.0000e+09])");
    check(
        &f32s(&[f32::NAN, 1.5, f32::INFINITY, f32::NEG_INFINITY], &[4]),
        "tensor([   nan, 1.5000,    inf,   -inf])",
    );
    check(
        &Tensor::zeros(&[3], DType::Float32).unwrap(),
        "tensor([0., 0., 0.])",
    );
    check(&f32s(&[-0.0, 1.0], &[2]), "tensor([-0., 1.])");
}

#[test]
fn empty_tensors_match_pytorch() {
    check(&Tensor::zeros(&[0], DType::Float32).unwrap(), "tensor([])");
    check(
        &Tensor::zeros(&[0, 3], DType::Int64).unwrap(),
        "tensor([], size=(0, 3), dtype=torch.int64)",
    );
    check(
        &Tensor::zeros(&[0], DType::Bool).unwrap(),
        "tensor([], dtype=torch.bool)",
    );
}

#[test]
fn line_wrapping_and_nesting_match_pytorch() {
    let t = Tensor::arange(0.0, 30.0, 1.0, DType::Float32)
        .unwrap()
        .div(&Tensor::wrapped_scalar(Scalar::Int(7)), None)
        .unwrap();
    check(
        &t,
        "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n        \
1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n        \
2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n        \
3.8571, 4.0000, 4.1429])",
    );
    let t = Tensor::arange(0.0, 12.0, 1.0, DType::Int64)
        .unwrap()
        .reshape(&[2, 2, 3])
        .unwrap();
    check(
        &t,
        "tensor([[[ 0,  1,  2],\n         [ 3,  4,  5]],\n\n        [[ 6,  7,  8],\n         [ 9, 10, 11]]])",
    );
}

#[test]
fn summarized_tensors_match_pytorch() {
    let t = Tensor::arange(0.0, 2000.0, 1.0, DType::Int64)
        .unwrap()
        .reshape(&[2, 1000])
        .unwrap();
    check(
        &t,
        "tensor([[   0,    1,    2,  ...,  997,  998,  999],\n        [1000, 1001, 1002,  ..., 1997, 1998, 1999]])",
    );
    let t = Tensor::arange(0.0, 1001.0, 1.0, DType::Float32).unwrap();
    check(
        &t,
        "tensor([   0.,    1.,    2.,  ...,  998.,  999., 1000.])",
    );
    let t = Tensor::arange(0.0, 1200.0, 1.0, DType::Float32)
        .unwrap()
        .reshape(&[40, 30])
        .unwrap()
        .div(&Tensor::wrapped_scalar(Scalar::Int(3)), None)
        .unwrap();
    let expected = "tensor([[0.0000e+00, 3.3333e-01, 6.6667e-01,  ..., 9.0000e+00, 9.3333e+00,
         9.6667e+00],
        [1.0000e+01, 1.0333e+01, 1.0667e+01,  ..., 1.9000e+01, 1.9333e+01,
         1.9667e+01],
        [2.0000e+01, 2.0333e+01, 2.0667e+01,  ..., 2.9000e+01, 2.9333e+01,
         2.9667e+01],
        ...,
        [3.7000e+02, 3.7033e+02, 3.7067e+02,  ..., 3.7900e+02, 3.7933e+02,
         3.7967e+02],
        [3.8000e+02, 3.8033e+02, 3.8067e+02,  ..., 3.8900e+02, 3.8933e+02,
         3.8967e+02],
        [3.9000e+02, 3.9033e+02, 3.9067e+02,  ..., 3.9900e+02, 3.9933e+02,
         3.9967e+02]])";
    check(&t, expected);
}

#[test]
fn requires_grad_suffix_matches_pytorch() {
    // The flag belongs to the handle (the runtime's TensorCell), so the caller passes it.
    let t = Tensor::ones(&[2], DType::Float32).unwrap();
    assert_eq!(
        t.display_with_requires_grad(true).to_string(),
        "tensor([1., 1.], requires_grad=True)"
    );
    check(&t, "tensor([1., 1.])");
    let t = Tensor::from_slice(&[1.0f64, 2.0], &[1, 2]).unwrap();
    assert_eq!(
        t.display_with_requires_grad(true).to_string(),
        "tensor([[1., 2.]], dtype=torch.float64, requires_grad=True)",
    );
}
