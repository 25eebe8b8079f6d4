//! Elementwise arithmetic, broadcasting, rounding modes, in-place dtype rules and reductions.

use ferrojit_tensor::{broadcast_shapes, DType, Scalar, Tensor, TensorError};

fn i64s(values: &[i64], sizes: &[usize]) -> Tensor {
    Tensor::from_slice(values, sizes).unwrap()
}

fn f32s(values: &[f32], sizes: &[usize]) -> Tensor {
    Tensor::from_slice(values, sizes).unwrap()
}

fn f64s(values: &[f64], sizes: &[usize]) -> Tensor {
    Tensor::from_slice(values, sizes).unwrap()
}

fn wrapped(v: impl Into<Scalar>) -> Tensor {
    Tensor::wrapped_scalar(v.into())
}

#[test]
fn broadcasting_shapes_and_error() {
    assert_eq!(
        broadcast_shapes(&[2, 1, 3], &[4, 1]).unwrap(),
        vec![2, 4, 3]
    );
    assert_eq!(broadcast_shapes(&[], &[5]).unwrap(), vec![5]);
    assert_eq!(broadcast_shapes(&[0, 1], &[3]).unwrap(), vec![0, 3]);
    let a = Tensor::zeros(&[2, 3], DType::Float32).unwrap();
    let b = Tensor::zeros(&[2, 4], DType::Float32).unwrap();
    let err = a.add(&b, &Scalar::Int(1)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"
    );
    // column [2,1] + row [3] -> [2,3]
    let col = f32s(&[10., 20.], &[2, 1]);
    let row = f32s(&[1., 2., 3.], &[3]);
    let r = col.add(&row, &Scalar::Int(1)).unwrap();
    assert_eq!(r.sizes(), &[2, 3]);
    assert_eq!(
        r.to_vec::<f32>().unwrap(),
        vec![11., 12., 13., 21., 22., 23.]
    );
}

#[test]
fn add_sub_with_alpha_and_checks() {
    let a = i64s(&[1, 2, 3], &[3]);
    let b = i64s(&[10, 20, 30], &[3]);
    let r = a.add(&b, &Scalar::Int(2)).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![21, 42, 63]);
    let r = a.sub(&b, &Scalar::Int(3)).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![-29, -58, -87]);
    assert_eq!(
        a.add(&b, &Scalar::Float(1.5)).unwrap_err().to_string(),
        "For integral input tensors, argument alpha must not be a floating point number."
    );
    assert_eq!(
        f32s(&[1.], &[1])
            .add(&f32s(&[1.], &[1]), &Scalar::Bool(true))
            .unwrap_err()
            .to_string(),
        "Boolean alpha only supported for Boolean results."
    );
    // int tensor + float tensor with float alpha is fine: result is float
    let r = a
        .add(&f32s(&[1., 1., 1.], &[3]), &Scalar::Float(1.5))
        .unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![2.5, 3.5, 4.5]);
    // bool + bool is logical or
    let t = Tensor::from_slice(&[true, false, false], &[3]).unwrap();
    let u = Tensor::from_slice(&[false, true, false], &[3]).unwrap();
    let r = t.add(&u, &Scalar::Int(1)).unwrap();
    assert_eq!(r.to_vec::<bool>().unwrap(), vec![true, true, false]);
    assert!(t
        .sub(&u, &Scalar::Int(1))
        .unwrap_err()
        .to_string()
        .starts_with("Subtraction, the `-` operator, with two bool tensors is not supported."));
    // integer overflow wraps like C++
    let big = i64s(&[i64::MAX], &[1]);
    let r = big.add(&wrapped(1i64), &Scalar::Int(1)).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![i64::MIN]);
}

#[test]
fn div_rounding_modes_with_negative_numbers() {
    let a = i64s(&[7, -7, 7, -7], &[4]);
    let b = i64s(&[2, 2, -2, -2], &[4]);
    let r = a.div(&b, None).unwrap();
    assert_eq!(r.dtype(), DType::Float32);
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![3.5, -3.5, -3.5, 3.5]);
    let r = a.div(&b, Some("trunc")).unwrap();
    assert_eq!(r.dtype(), DType::Int64);
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![3, -3, -3, 3]);
    let r = a.div(&b, Some("floor")).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![3, -4, -4, 3]);

    let af = f64s(&[7.5, -7.5, 7.5, -7.5, 1.0], &[5]);
    let bf = f64s(&[2.0, 2.0, -2.0, -2.0, 0.0], &[5]);
    let r = af.div(&bf, Some("trunc")).unwrap();
    assert_eq!(
        r.to_vec::<f64>().unwrap(),
        vec![3.0, -3.0, -3.0, 3.0, f64::INFINITY]
    );
    let r = af.div(&bf, Some("floor")).unwrap();
    assert_eq!(
        r.to_vec::<f64>().unwrap(),
        vec![3.0, -4.0, -4.0, 3.0, f64::INFINITY]
    );

    assert!(matches!(
        a.div(&i64s(&[1, 0, 1, 1], &[4]), Some("floor")),
        Err(TensorError::ZeroDivision)
    ));
    // true division of ints by zero is a float result, not an error
    let r = i64s(&[1, -1, 0], &[3]).div(&wrapped(0i64), None).unwrap();
    let v = r.to_vec::<f32>().unwrap();
    assert_eq!(v[0], f32::INFINITY);
    assert_eq!(v[1], f32::NEG_INFINITY);
    assert!(v[2].is_nan());
    assert!(a.div(&b, Some("round")).is_err());
}

#[test]
fn remainder_follows_python_sign_rules() {
    let a = i64s(&[7, -7, 7, -7, 6], &[5]);
    let b = i64s(&[3, 3, -3, -3, 3], &[5]);
    let r = a.remainder(&b).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![1, 2, -2, -1, 0]);
    let af = f64s(&[5.5, -5.5, 5.5, -5.5], &[4]);
    let bf = f64s(&[2.0, 2.0, -2.0, -2.0], &[4]);
    let r = af.remainder(&bf).unwrap();
    assert_eq!(r.to_vec::<f64>().unwrap(), vec![1.5, 0.5, -0.5, -1.5]);
    // int tensor % Python float -> float32
    let r = a.remainder(&wrapped(2.5)).unwrap();
    assert_eq!(r.dtype(), DType::Float32);
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![2.0, 0.5, 2.0, 0.5, 1.0]);
    assert!(matches!(
        a.remainder(&wrapped(0i64)),
        Err(TensorError::ZeroDivision)
    ));
}

#[test]
fn pow_maximum_minimum() {
    let a = i64s(&[2, 3, -2], &[3]);
    let r = a.pow(&wrapped(3i64)).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![8, 27, -8]);
    assert_eq!(
        a.pow(&wrapped(-1i64)).unwrap_err().to_string(),
        "Integers to negative integer powers are not allowed."
    );
    let r = i64s(&[-1, 2, 1], &[3])
        .pow(&i64s(&[-1, -2, -3], &[3]))
        .unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![-1, 0, 1]);
    let r = a.pow(&wrapped(0.5)).unwrap();
    assert_eq!(r.dtype(), DType::Float32);
    let r = f32s(&[4.0, 9.0], &[2]).pow(&wrapped(0.5)).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![2.0, 3.0]);

    let x = f32s(&[1.0, f32::NAN, 5.0], &[3]);
    let y = f32s(&[2.0, 0.0, -1.0], &[3]);
    let mx = x.maximum(&y).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(mx[0], 2.0);
    assert!(mx[1].is_nan());
    assert_eq!(mx[2], 5.0);
    let mn = x.minimum(&y).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(mn[0], 1.0);
    assert!(mn[1].is_nan());
    assert_eq!(mn[2], -1.0);
    let r = i64s(&[1, 5], &[2]).maximum(&f64s(&[2.5], &[1])).unwrap();
    assert_eq!(r.dtype(), DType::Float64);
    assert_eq!(r.to_vec::<f64>().unwrap(), vec![2.5, 5.0]);
}

#[test]
fn comparisons_return_bool() {
    let a = i64s(&[1, 2, 3], &[3]);
    let b = wrapped(2i64);
    assert_eq!(
        a.eq(&b).unwrap().to_vec::<bool>().unwrap(),
        vec![false, true, false]
    );
    assert_eq!(
        a.ne(&b).unwrap().to_vec::<bool>().unwrap(),
        vec![true, false, true]
    );
    assert_eq!(
        a.lt(&b).unwrap().to_vec::<bool>().unwrap(),
        vec![true, false, false]
    );
    assert_eq!(
        a.le(&b).unwrap().to_vec::<bool>().unwrap(),
        vec![true, true, false]
    );
    assert_eq!(
        a.gt(&b).unwrap().to_vec::<bool>().unwrap(),
        vec![false, false, true]
    );
    assert_eq!(
        a.ge(&b).unwrap().to_vec::<bool>().unwrap(),
        vec![false, true, true]
    );
    let nan = f32s(&[f32::NAN], &[1]);
    assert_eq!(nan.eq(&nan).unwrap().to_vec::<bool>().unwrap(), vec![false]);
    assert_eq!(nan.ne(&nan).unwrap().to_vec::<bool>().unwrap(), vec![true]);
}

#[test]
fn inplace_dtype_and_shape_rules() {
    let a = i64s(&[1, 2], &[2]);
    assert_eq!(
        a.add_(&f32s(&[1.0, 1.0], &[2]), &Scalar::Int(1))
            .unwrap_err()
            .to_string(),
        "result type Float can't be cast to the desired output type Long"
    );
    assert_eq!(
        a.div_(&wrapped(2i64), None).unwrap_err().to_string(),
        "result type Float can't be cast to the desired output type Long"
    );
    a.div_(&wrapped(2i64), Some("floor")).unwrap();
    assert_eq!(a.to_vec::<i64>().unwrap(), vec![0, 1]);
    // float tensor += int tensor is fine
    let f = f32s(&[0.5, 0.5], &[2]);
    f.add_(&i64s(&[1, 2], &[2]), &Scalar::Int(1)).unwrap();
    assert_eq!(f.to_vec::<f32>().unwrap(), vec![1.5, 2.5]);
    // float tensor *= 0-dim float64: stays float32
    f.mul_(&Tensor::scalar_tensor(Scalar::Float(2.0), DType::Float64))
        .unwrap();
    assert_eq!(f.dtype(), DType::Float32);
    assert_eq!(f.to_vec::<f32>().unwrap(), vec![3.0, 5.0]);
    f.sub_(&wrapped(1i64), &Scalar::Int(2)).unwrap();
    assert_eq!(f.to_vec::<f32>().unwrap(), vec![1.0, 3.0]);
    let small = f32s(&[1., 2., 3.], &[3]);
    assert_eq!(
        small
            .add_(
                &Tensor::zeros(&[2, 3], DType::Float32).unwrap(),
                &Scalar::Int(1)
            )
            .unwrap_err()
            .to_string(),
        "output with shape [3] doesn't match the broadcast shape [2, 3]"
    );
    // bool tensor cannot receive an int result
    let b = Tensor::from_slice(&[true], &[1]).unwrap();
    assert_eq!(
        b.add_(&wrapped(1i64), &Scalar::Int(1))
            .unwrap_err()
            .to_string(),
        "result type Long can't be cast to the desired output type Bool"
    );
    // fill_ and copy_ convert freely
    let i = i64s(&[0, 0], &[2]);
    i.fill_(&Scalar::Float(2.9)).unwrap();
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![2, 2]);
    i.copy_(&f64s(&[-1.7], &[1])).unwrap();
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![-1, -1]);
}

#[test]
fn unary_ops() {
    let x = f32s(&[-1.0, 0.0, 2.0], &[3]);
    assert_eq!(
        x.neg().unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, -0.0, -2.0]
    );
    assert_eq!(
        x.relu().unwrap().to_vec::<f32>().unwrap(),
        vec![0.0, 0.0, 2.0]
    );
    assert_eq!(
        x.abs().unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, 0.0, 2.0]
    );
    let i = i64s(&[-3, 4], &[2]);
    assert_eq!(i.relu().unwrap().to_vec::<i64>().unwrap(), vec![0, 4]);
    assert_eq!(i.abs().unwrap().to_vec::<i64>().unwrap(), vec![3, 4]);
    let e = i64s(&[0, 1], &[2]).exp().unwrap();
    assert_eq!(e.dtype(), DType::Float32);
    let ev = e.to_vec::<f32>().unwrap();
    assert_eq!(ev[0], 1.0);
    assert!((ev[1] - std::f32::consts::E).abs() < 1e-6);
    let s = f64s(&[0.0], &[1]).sigmoid().unwrap();
    assert_eq!(s.to_vec::<f64>().unwrap(), vec![0.5]);
    assert_eq!(
        f64s(&[4.0], &[1]).sqrt().unwrap().to_vec::<f64>().unwrap(),
        vec![2.0]
    );
    assert_eq!(
        f64s(&[1.0], &[1]).log().unwrap().to_vec::<f64>().unwrap(),
        vec![0.0]
    );
    assert_eq!(
        f64s(&[0.0], &[1]).tanh().unwrap().to_vec::<f64>().unwrap(),
        vec![0.0]
    );
    let b = Tensor::from_slice(&[true], &[1]).unwrap();
    assert!(b.neg().is_err());
}

#[test]
fn reductions() {
    let b = Tensor::from_slice(&[true, false, true, true], &[4]).unwrap();
    let s = b.sum(None).unwrap();
    assert_eq!(s.dtype(), DType::Int64);
    assert_eq!(s.dim(), 0);
    assert_eq!(s.item().unwrap(), Scalar::Int(3));
    let i32s = Tensor::from_slice(&[1i32, 2, 3], &[3]).unwrap();
    assert_eq!(i32s.sum(None).unwrap().dtype(), DType::Int64);
    assert_eq!(
        i32s.sum(Some(DType::Float64)).unwrap().item().unwrap(),
        Scalar::Float(6.0)
    );

    let x = f32s(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let s0 = x.sum_dim(&[0], false, None).unwrap();
    assert_eq!(s0.sizes(), &[3]);
    assert_eq!(s0.to_vec::<f32>().unwrap(), vec![5., 7., 9.]);
    let s1 = x.sum_dim(&[-1], true, None).unwrap();
    assert_eq!(s1.sizes(), &[2, 1]);
    assert_eq!(s1.to_vec::<f32>().unwrap(), vec![6., 15.]);
    let all = x.sum_dim(&[0, 1], false, None).unwrap();
    assert_eq!(all.item().unwrap(), Scalar::Float(21.0));
    assert_eq!(
        x.sum_dim(&[0, -2], false, None).unwrap_err().to_string(),
        "dim 0 appears multiple times in the list of dims"
    );
    // sum over a transposed view
    let st = x.t().unwrap().sum_dim(&[1], false, None).unwrap();
    assert_eq!(st.to_vec::<f32>().unwrap(), vec![5., 7., 9.]);

    let m = x.mean(None).unwrap();
    assert_eq!(m.item().unwrap(), Scalar::Float(3.5));
    let m1 = x.mean_dim(&[1], false, None).unwrap();
    assert_eq!(m1.to_vec::<f32>().unwrap(), vec![2., 5.]);
    assert_eq!(
        i64s(&[1, 2], &[2]).mean(None).unwrap_err().to_string(),
        "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"
    );
    let mi = i64s(&[1, 2], &[2]).mean(Some(DType::Float64)).unwrap();
    assert_eq!(mi.item().unwrap(), Scalar::Float(1.5));

    assert_eq!(x.max().unwrap().item().unwrap(), Scalar::Float(6.0));
    assert_eq!(x.min().unwrap().item().unwrap(), Scalar::Float(1.0));
    assert!(f32s(&[1.0, f32::NAN], &[2])
        .max()
        .unwrap()
        .to_vec::<f32>()
        .unwrap()[0]
        .is_nan());
    assert!(Tensor::zeros(&[0], DType::Float32).unwrap().max().is_err());
    // sum of an empty tensor is zero
    let e = Tensor::zeros(&[0, 3], DType::Float32).unwrap();
    assert_eq!(e.sum(None).unwrap().item().unwrap(), Scalar::Float(0.0));
    assert_eq!(
        e.sum_dim(&[0], false, None)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![0.0; 3]
    );
}

#[test]
fn conversions_and_items() {
    let x = f32s(&[-1.7, 2.5, 300.9], &[3]);
    assert_eq!(
        x.to_dtype(DType::Int64).to_vec::<i64>().unwrap(),
        vec![-1, 2, 300]
    );
    assert_eq!(
        x.to_dtype(DType::UInt8).to_vec::<u8>().unwrap(),
        vec![255, 2, 44]
    );
    assert_eq!(
        x.to_dtype(DType::Bool).to_vec::<bool>().unwrap(),
        vec![true, true, true]
    );
    assert!(x.to_vec::<f64>().is_err());
    assert_eq!(x.to_f64_vec()[1], 2.5);
    assert_eq!(
        x.item().unwrap_err().to_string(),
        "a Tensor with 3 elements cannot be converted to Scalar"
    );
    let c = x.clone_tensor();
    assert!(!c.shares_storage(&x));
    c.fill_(&Scalar::Int(0)).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap()[0], -1.7);
    assert!(Tensor::from_vec(vec![1.0f32, 2.0], &[3]).is_err());
    let full = Tensor::full(&[2], Scalar::Float(1.5), DType::Float64).unwrap();
    assert_eq!(full.to_vec::<f64>().unwrap(), vec![1.5, 1.5]);
    let w = Tensor::wrapped_scalar(Scalar::Float(1.0));
    assert!(w.is_wrapped_number());
    assert_eq!(w.dtype(), DType::Float64);
    assert_eq!(
        Tensor::wrapped_scalar(Scalar::Bool(true)).dtype(),
        DType::Bool
    );
}
