//! Views share storage: geometry checks and in-place writes visible through every alias.

use ferrojit_tensor::{DType, Scalar, Storage, Tensor, TensorError};

fn base_2x3() -> Tensor {
    Tensor::from_slice(&[0.0f32, 1., 2., 3., 4., 5.], &[2, 3]).unwrap()
}

#[test]
fn inplace_through_transposed_view_is_visible_in_base() {
    let base = base_2x3();
    let t = base.t().unwrap();
    assert_eq!(t.sizes(), &[3, 2]);
    assert_eq!(t.strides(), &[1, 3]);
    assert!(!t.is_contiguous());
    let addend = Tensor::from_slice(&[10.0f32, 20., 30., 40., 50., 60.], &[3, 2]).unwrap();
    t.add_(&addend, &Scalar::Int(1)).unwrap();
    // t[i][j] = base[j][i]; so base[j][i] += addend[i][j]
    assert_eq!(
        base.to_vec::<f32>().unwrap(),
        vec![10., 31., 52., 23., 44., 65.]
    );
    assert!(t.shares_storage(&base));
}

#[test]
fn inplace_through_slice_and_select_views() {
    let base = base_2x3();
    let col = base.slice(1, Some(1), None, 1).unwrap(); // columns 1..3
    col.mul_(&Tensor::wrapped_scalar(Scalar::Int(2))).unwrap();
    assert_eq!(base.to_vec::<f32>().unwrap(), vec![0., 2., 4., 3., 8., 10.]);
    let row = base.select(0, -1).unwrap();
    row.fill_(&Scalar::Float(7.0)).unwrap();
    assert_eq!(base.to_vec::<f32>().unwrap(), vec![0., 2., 4., 7., 7., 7.]);
    let every_other = base.view(&[-1]).unwrap().slice(0, None, None, 2).unwrap();
    assert_eq!(every_other.to_vec::<f32>().unwrap(), vec![0., 4., 7.]);
    every_other.zero_().unwrap();
    assert_eq!(base.to_vec::<f32>().unwrap(), vec![0., 2., 0., 7., 0., 7.]);
    // copy_ broadcasts and casts
    let src = Tensor::from_slice(&[1i64, 2, 3], &[3]).unwrap();
    base.copy_(&src).unwrap();
    assert_eq!(base.to_vec::<f32>().unwrap(), vec![1., 2., 3., 1., 2., 3.]);
    // relu_ through a view
    let neg = Tensor::from_slice(&[-1.0f32, 2., -3., 4.], &[4]).unwrap();
    neg.slice(0, Some(0), Some(3), 1).unwrap().relu_().unwrap();
    assert_eq!(neg.to_vec::<f32>().unwrap(), vec![0., 2., 0., 4.]);
}

#[test]
fn self_aliasing_inplace_reads_before_writing() {
    let x = Tensor::from_slice(&[1i64, 2, 3, 4], &[2, 2]).unwrap();
    let xt = x.t().unwrap();
    x.add_(&xt, &Scalar::Int(1)).unwrap();
    // x + x^T computed from the original values
    assert_eq!(x.to_vec::<i64>().unwrap(), vec![2, 5, 5, 8]);
}

#[test]
fn view_and_reshape() {
    let base = base_2x3();
    let v = base.view(&[3, -1]).unwrap();
    assert_eq!(v.sizes(), &[3, 2]);
    assert!(v.shares_storage(&base));
    let t = base.t().unwrap();
    let err = t.view(&[6]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."
    );
    let r = t.reshape(&[6]).unwrap();
    assert!(!r.shares_storage(&base));
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![0., 3., 1., 4., 2., 5.]);
    // Viewing a transposed tensor by splitting a dimension is allowed.
    let split = t.view(&[3, 2, 1]).unwrap();
    assert!(split.shares_storage(&base));
    assert_eq!(
        base.view(&[2, 5]).unwrap_err().to_string(),
        "shape '[2, 5]' is invalid for input of size 6"
    );
    assert_eq!(
        base.view(&[-1, -1]).unwrap_err().to_string(),
        "only one dimension can be inferred"
    );
}

#[test]
fn permute_unsqueeze_squeeze_expand_flatten_narrow() {
    let x = Tensor::arange(0.0, 24.0, 1.0, DType::Int64)
        .unwrap()
        .reshape(&[2, 3, 4])
        .unwrap();
    let p = x.permute(&[2, 0, 1]).unwrap();
    assert_eq!(p.sizes(), &[4, 2, 3]);
    assert_eq!(p.strides(), &[1, 12, 4]);
    // p[1][1][2] = x[1][2][1] = 12 + 8 + 1
    let v = p
        .select(0, 1)
        .unwrap()
        .select(0, 1)
        .unwrap()
        .select(0, 2)
        .unwrap();
    assert_eq!(v.item().unwrap(), Scalar::Int(21));

    let u = x.unsqueeze(-1).unwrap();
    assert_eq!(u.sizes(), &[2, 3, 4, 1]);
    assert_eq!(u.squeeze_dim(3).unwrap().sizes(), &[2, 3, 4]);
    assert_eq!(u.squeeze_dim(0).unwrap().sizes(), &[2, 3, 4, 1]);
    assert_eq!(x.unsqueeze(1).unwrap().sizes(), &[2, 1, 3, 4]);
    assert_eq!(u.unsqueeze(0).unwrap().squeeze().sizes(), &[2, 3, 4]);

    let row = Tensor::from_slice(&[1i64, 2, 3], &[3]).unwrap();
    let e = row.expand(&[2, -1]).unwrap();
    assert_eq!(e.strides(), &[0, 1]);
    assert_eq!(e.to_vec::<i64>().unwrap(), vec![1, 2, 3, 1, 2, 3]);
    assert_eq!(
        row.expand(&[2, 4]).unwrap_err().to_string(),
        "The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1.  Target sizes: [2, 4].  Tensor sizes: [3]"
    );
    // Writing into an expanded view is rejected (several elements share a location).
    assert!(e
        .add_(&Tensor::wrapped_scalar(Scalar::Int(1)), &Scalar::Int(1))
        .is_err());

    let f = x.flatten(1, -1).unwrap();
    assert_eq!(f.sizes(), &[2, 12]);
    assert_eq!(x.flatten(0, -1).unwrap().sizes(), &[24]);
    let s = Tensor::scalar_tensor(Scalar::Int(5), DType::Int64);
    assert_eq!(s.flatten(0, -1).unwrap().sizes(), &[1]);

    let n = x.narrow(2, 1, 2).unwrap();
    assert_eq!(n.sizes(), &[2, 3, 2]);
    assert_eq!(n.to_vec::<i64>().unwrap()[..4], [1, 2, 5, 6]);
    assert_eq!(
        row.narrow(0, 2, 3).unwrap_err().to_string(),
        "start (2) + length (3) exceeds dimension size (3)."
    );
}

#[test]
fn slice_clamps_like_python() {
    let x = Tensor::arange(0.0, 10.0, 1.0, DType::Int64).unwrap();
    let s = x.slice(0, Some(-3), None, 1).unwrap();
    assert_eq!(s.to_vec::<i64>().unwrap(), vec![7, 8, 9]);
    let s = x.slice(0, Some(2), Some(100), 3).unwrap();
    assert_eq!(s.to_vec::<i64>().unwrap(), vec![2, 5, 8]);
    let s = x.slice(0, Some(-100), Some(2), 1).unwrap();
    assert_eq!(s.to_vec::<i64>().unwrap(), vec![0, 1]);
    let s = x.slice(0, Some(6), Some(3), 1).unwrap();
    assert_eq!(s.numel(), 0);
    let s = x.slice(0, Some(1), Some(-1), 4).unwrap();
    assert_eq!(s.to_vec::<i64>().unwrap(), vec![1, 5]);
    assert!(x.slice(0, None, None, 0).is_err());
    assert!(x.slice(0, None, None, -1).is_err());
}

#[test]
fn dim_and_index_errors() {
    let x = Tensor::zeros(&[3, 2], DType::Float32).unwrap();
    assert_eq!(
        x.transpose(0, 2).unwrap_err().to_string(),
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
    );
    assert!(matches!(
        x.select(0, 5),
        Err(TensorError::IndexOutOfRange {
            index: 5,
            dim: 0,
            ..
        })
    ));
    assert_eq!(
        x.select(0, 5).unwrap_err().to_string(),
        "select(): index 5 out of range for tensor of size [3, 2] at dimension 0"
    );
    assert_eq!(x.select(0, -3).unwrap().sizes(), &[2]);
    assert!(x.select(0, -4).is_err());
    let s = Tensor::scalar_tensor(Scalar::Int(1), DType::Int64);
    assert_eq!(
        s.unsqueeze(2).unwrap_err().to_string(),
        "Dimension out of range (expected to be in range of [-1, 0], but got 2)"
    );
    assert_eq!(
        Tensor::zeros(&[2, 3, 4], DType::Float32)
            .unwrap()
            .t()
            .unwrap_err()
            .to_string(),
        "t() expects a tensor with <= 2 dimensions, but self is 3D"
    );
}

#[test]
fn from_storage_validates_bounds() {
    let storage = Storage::from_vec(vec![1.0f32, 2., 3., 4.]);
    let t = Tensor::from_storage(storage.clone(), 1, vec![3], vec![1]).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![2., 3., 4.]);
    let t = Tensor::from_storage(storage.clone(), 0, vec![2, 2], vec![1, 2]).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![1., 3., 2., 4.]);
    assert!(matches!(
        Tensor::from_storage(storage.clone(), 2, vec![3], vec![1]),
        Err(TensorError::StorageOutOfBounds { .. })
    ));
    assert!(Tensor::from_storage(storage.clone(), 0, vec![2], vec![usize::MAX]).is_err());
    assert!(Tensor::from_storage(storage.clone(), usize::MAX, vec![1], vec![1]).is_err());
    assert!(Tensor::from_storage(storage.clone(), 0, vec![usize::MAX, 2], vec![1, 1]).is_err());
    assert!(Tensor::from_storage(storage.clone(), 0, vec![2], vec![1, 1]).is_err());
    // Zero-size tensors are always valid.
    let empty = Tensor::from_storage(storage.clone(), 100, vec![0, 5], vec![5, 1]).unwrap();
    assert_eq!(empty.numel(), 0);
    assert_eq!(empty.to_vec::<f32>().unwrap(), Vec::<f32>::new());
    empty.fill_(&Scalar::Int(1)).unwrap();
    assert_eq!(empty.sum(None).unwrap().item().unwrap(), Scalar::Float(0.0));
    assert_eq!(empty.clone_tensor().sizes(), &[0, 5]);
    assert_eq!(empty.to_string(), "tensor([], size=(0, 5))");
    // Two tensors over one storage alias.
    let a = Tensor::from_storage(storage.clone(), 0, vec![4], vec![1]).unwrap();
    let b = Tensor::from_storage(storage, 2, vec![2], vec![1]).unwrap();
    b.fill_(&Scalar::Int(9)).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![1., 2., 9., 9.]);
    assert!(Storage::ptr_eq(a.storage(), b.storage()));
}

#[test]
fn storage_bytes_roundtrip() {
    let le = [1u8, 0, 0, 0, 0, 0, 128, 63]; // int32 1, float32 bits of 1.0 in the second word
    let s = Storage::from_bytes(DType::Int32, &le, true).unwrap();
    assert_eq!(s.to_vec::<i32>().unwrap(), vec![1, 0x3f80_0000]);
    assert_eq!(s.to_le_bytes(), le.to_vec());
    let s = Storage::from_bytes(DType::Float32, &le, true).unwrap();
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![1.4e-45, 1.0]);
    let be = [0u8, 0, 0, 1, 63, 128, 0, 0];
    let s = Storage::from_bytes(DType::Int32, &be, false).unwrap();
    assert_eq!(s.to_vec::<i32>().unwrap(), vec![1, 0x3f80_0000]);
    let s = Storage::from_bytes(DType::Int16, &[1, 2], false).unwrap();
    assert_eq!(s.to_vec::<i16>().unwrap(), vec![0x0102]);
    assert!(matches!(
        Storage::from_bytes(DType::Int64, &[0; 12], true),
        Err(TensorError::ByteLengthNotMultiple {
            len: 12,
            item_size: 8,
            ..
        })
    ));
    let s = Storage::from_bytes(DType::Bool, &[0, 1, 0], true).unwrap();
    assert_eq!(s.to_vec::<bool>().unwrap(), vec![false, true, false]);
    assert_eq!(s.len_elements(), 3);
    assert_eq!(s.dtype(), DType::Bool);
    let s = Storage::from_bytes(DType::Float64, &2.5f64.to_be_bytes(), false).unwrap();
    assert_eq!(s.to_vec::<f64>().unwrap(), vec![2.5]);
}

#[test]
fn huge_arguments_give_errors_not_panics() {
    let x = Tensor::arange(0.0, 10.0, 1.0, DType::Int64).unwrap();
    let s = x.slice(0, Some(3), None, i64::MAX).unwrap();
    assert_eq!(s.to_vec::<i64>().unwrap(), vec![3]);
    let s = x.slice(0, Some(i64::MIN), Some(i64::MAX), 1).unwrap();
    assert_eq!(s.numel(), 10);
    assert!(x.narrow(0, 1, i64::MAX).is_err());
    let one = Tensor::zeros(&[1], DType::Float32).unwrap();
    assert!(one.expand(&[i64::MAX, i64::MAX]).is_err());
    assert!(Tensor::zeros(&[usize::MAX / 2, 4], DType::Float32).is_err());
    assert!(Tensor::zeros(&[usize::MAX / 8 + 1], DType::Float64).is_err());
    assert!(Tensor::arange(0.0, 1e30, 1.0, DType::Float32).is_err());
    assert!(x.view(&[-1, 0]).is_err());
    assert!(x.reshape(&[-2, 5]).is_err());
    assert!(x.permute(&[0, 0]).is_err());
}
