//! Type promotion (`promote_types`, `result_type`) checked against PyTorch's documented behaviour.

use ferrojit_tensor::{promote_types, result_type, DType, Scalar, Tensor};

fn vec_of(dtype: DType) -> Tensor {
    Tensor::zeros(&[2], dtype).unwrap()
}

fn zero_dim(dtype: DType) -> Tensor {
    Tensor::scalar_tensor(Scalar::Int(1), dtype)
}

#[test]
fn promote_types_table() {
    use DType::*;
    assert_eq!(promote_types(UInt8, Int8), Int16);
    assert_eq!(promote_types(Int8, UInt8), Int16);
    assert_eq!(promote_types(UInt8, Int16), Int16);
    assert_eq!(promote_types(UInt8, Int64), Int64);
    assert_eq!(promote_types(Int32, Int64), Int64);
    assert_eq!(promote_types(Int16, Int8), Int16);
    assert_eq!(promote_types(Bool, UInt8), UInt8);
    assert_eq!(promote_types(Bool, Float64), Float64);
    assert_eq!(promote_types(Int64, Float32), Float32);
    assert_eq!(promote_types(Float32, Float64), Float64);
    assert_eq!(promote_types(Bool, Bool), Bool);
    for a in DType::ALL {
        for b in DType::ALL {
            assert_eq!(promote_types(a, b), promote_types(b, a));
        }
    }
}

#[test]
fn result_type_priorities() {
    // int64 tensor + Python float -> default dtype float32
    let r = result_type(&[
        &vec_of(DType::Int64),
        &Tensor::wrapped_scalar(Scalar::Float(1.5)),
    ]);
    assert_eq!(r, DType::Float32);
    // int32 tensor + Python int -> int32
    let r = result_type(&[
        &vec_of(DType::Int32),
        &Tensor::wrapped_scalar(Scalar::Int(3)),
    ]);
    assert_eq!(r, DType::Int32);
    // float32 tensor + 0-dim float64 tensor -> float32
    let r = result_type(&[&vec_of(DType::Float32), &zero_dim(DType::Float64)]);
    assert_eq!(r, DType::Float32);
    // int64 0-dim + float32 1-d -> float32
    let r = result_type(&[&zero_dim(DType::Int64), &vec_of(DType::Float32)]);
    assert_eq!(r, DType::Float32);
    // int64 1-d + float64 0-dim: higher category wins with the zero-dim's own type
    let r = result_type(&[&vec_of(DType::Int64), &zero_dim(DType::Float64)]);
    assert_eq!(r, DType::Float64);
    // uint8 tensor + Python int stays uint8; bool tensor + Python int -> int64
    let r = result_type(&[
        &vec_of(DType::UInt8),
        &Tensor::wrapped_scalar(Scalar::Int(1000)),
    ]);
    assert_eq!(r, DType::UInt8);
    let r = result_type(&[
        &vec_of(DType::Bool),
        &Tensor::wrapped_scalar(Scalar::Int(2)),
    ]);
    assert_eq!(r, DType::Int64);
    // 0-dim int32 + Python float -> float32 (wrapped float uses the default dtype)
    let r = result_type(&[
        &zero_dim(DType::Int32),
        &Tensor::wrapped_scalar(Scalar::Float(2.0)),
    ]);
    assert_eq!(r, DType::Float32);
    // two wrapped numbers: int + float -> float32
    let r = result_type(&[
        &Tensor::wrapped_scalar(Scalar::Int(1)),
        &Tensor::wrapped_scalar(Scalar::Float(2.0)),
    ]);
    assert_eq!(r, DType::Float32);
    // 0-dim float64 + 0-dim int: same priority, plain promotion
    let r = result_type(&[&zero_dim(DType::Float64), &zero_dim(DType::Int64)]);
    assert_eq!(r, DType::Float64);
    // dimensioned float16-free case: int8 + uint8 tensors -> int16
    let r = result_type(&[&vec_of(DType::Int8), &vec_of(DType::UInt8)]);
    assert_eq!(r, DType::Int16);
}

#[test]
fn binary_ops_follow_promotion() {
    let ints = Tensor::from_slice(&[1i64, 2], &[2]).unwrap();
    let r = ints
        .add(&Tensor::wrapped_scalar(Scalar::Float(0.5)), &Scalar::Int(1))
        .unwrap();
    assert_eq!(r.dtype(), DType::Float32);
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![1.5, 2.5]);

    let i32s = Tensor::from_slice(&[1i32, 2], &[2]).unwrap();
    let r = i32s.mul(&Tensor::wrapped_scalar(Scalar::Int(3))).unwrap();
    assert_eq!(r.dtype(), DType::Int32);
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![3, 6]);

    // True division of integers gives float32.
    let r = ints
        .div(&Tensor::wrapped_scalar(Scalar::Int(4)), None)
        .unwrap();
    assert_eq!(r.dtype(), DType::Float32);
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![0.25, 0.5]);

    // exp of int64 -> float32
    let r = ints.exp().unwrap();
    assert_eq!(r.dtype(), DType::Float32);

    // comparisons promote before comparing: 1 < 1.5 is true only in float
    let r = ints
        .lt(&Tensor::wrapped_scalar(Scalar::Float(1.5)))
        .unwrap();
    assert_eq!(r.dtype(), DType::Bool);
    assert_eq!(r.to_vec::<bool>().unwrap(), vec![true, false]);
}

#[test]
fn dtype_metadata() {
    assert_eq!(DType::Float32.name(), "float32");
    assert_eq!(DType::Float32.to_string(), "torch.float32");
    assert_eq!(
        DType::from_torch_storage_name("LongStorage").unwrap(),
        DType::Int64
    );
    assert_eq!(
        DType::from_torch_storage_name("CharStorage").unwrap(),
        DType::Int8
    );
    assert_eq!(
        DType::from_torch_storage_name("HalfStorage").unwrap(),
        DType::Float16
    );
    assert_eq!(
        DType::from_torch_storage_name("BFloat16Storage").unwrap(),
        DType::BFloat16
    );
    assert_eq!(
        DType::from_torch_storage_name("ComplexFloatStorage").unwrap(),
        DType::ComplexFloat
    );
    assert_eq!(DType::ComplexDouble.scalar_type_index(), 10);
    assert_eq!(DType::ComplexFloat.item_size(), 8);
    assert!(DType::from_torch_storage_name("ComplexHalfStorage").is_err());
    for d in DType::ALL {
        assert_eq!(
            DType::from_torch_storage_name(d.to_torch_storage_name()).unwrap(),
            d
        );
        assert_eq!(
            DType::from_scalar_type_index(d.scalar_type_index()).unwrap(),
            d
        );
    }
    assert_eq!(DType::from_scalar_type_index(0).unwrap(), DType::UInt8);
    assert_eq!(DType::from_scalar_type_index(6).unwrap(), DType::Float32);
    assert_eq!(DType::from_scalar_type_index(11).unwrap(), DType::Bool);
    assert_eq!(DType::from_scalar_type_index(5).unwrap(), DType::Float16);
    assert_eq!(DType::from_scalar_type_index(15).unwrap(), DType::BFloat16);
    // 8 is ComplexHalf, which ferrojit does not support.
    assert!(DType::from_scalar_type_index(8).is_err());
    assert_eq!(DType::Int16.item_size(), 2);
    assert!(DType::Bool.is_integral(true));
    assert!(!DType::Bool.is_integral(false));
}
