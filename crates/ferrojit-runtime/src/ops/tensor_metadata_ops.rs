//! The operators that read or assert a tensor's metadata rather than compute on its values:
//! `alias`/`data`, `is_inference`, the symbolic-shape queries (`sym_size.int`, `sym_numel`,
//! ...), the runtime assertions an exported program carries (`_assert_scalar`,
//! `_assert_tensor_metadata`, `sym_constrain_range`), `_local_scalar_dense`, the reshape
//! helpers (`_reshape_alias`, `_reshape_from_tensor`), `_linalg_check_errors` and the
//! autocast casts, as TorchScript operators.

use std::sync::Arc;

use ferrojit_tensor::{DType, Scalar, Tensor};

use super::binding::typed;
use super::tensor_ops::{is_contiguous_as, MemoryFormatArgument};
use crate::error::{Result, RuntimeError};
use crate::ivalue::{Device, IValue};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

fn other(message: impl Into<String>) -> RuntimeError {
    RuntimeError::Other(message.into())
}

/// `alias` and `data`: a new tensor over the same storage with the same geometry (ferrojit
/// keeps no autograd history on a tensor, so `data`'s detaching has nothing to drop).
fn alias(input: Input) -> Result<Tensor> {
    let sizes: Vec<i64> = input.sizes().iter().map(|&s| s as i64).collect();
    let strides: Vec<i64> = input.strides().iter().map(|&s| s as i64).collect();
    Ok(input.as_strided(&sizes, &strides, Some(input.storage_offset() as i64))?)
}

/// ferrojit has no inference mode, so no tensor is an inference tensor.
fn is_inference(_input: Input) -> Result<bool> {
    Ok(false)
}

fn sym_size(input: Input, dim: i64) -> Result<i64> {
    Ok(input.size(dim)? as i64)
}

fn sym_stride(input: Input, dim: i64) -> Result<i64> {
    let dim = ferrojit_tensor::wrap_dim(dim, input.dim())?;
    Ok(input.strides()[dim] as i64)
}

fn sym_numel(input: Input) -> Result<i64> {
    Ok(input.numel() as i64)
}

fn sym_storage_offset(input: Input) -> Result<i64> {
    Ok(input.storage_offset() as i64)
}

fn sym_is_contiguous(input: Input, memory_format: MemoryFormatArgument) -> Result<bool> {
    is_contiguous_as(&input, memory_format.0)
}

/// `sym_constrain_range(_for_size)` on a concrete size: ATen checks it lies in
/// [min, max], an absent bound being the int64 limit.
fn sym_constrain_range(size: Scalar, min: Option<i64>, max: Option<i64>) -> Result<()> {
    let value = size.to_i64();
    let (low, high) = (min.unwrap_or(i64::MIN), max.unwrap_or(i64::MAX));
    if value < low || value > high {
        return Err(other(format!(
            "Invalid value range for {value} between [{low}, {high}]."
        )));
    }
    Ok(())
}

/// `sym_constrain_range_for_size`: a size is never negative, so the lower bound defaults to 0.
fn sym_constrain_range_for_size(size: Scalar, min: Option<i64>, max: Option<i64>) -> Result<()> {
    sym_constrain_range(size, Some(min.unwrap_or(0)), max)
}

/// `_assert_scalar`: fails with the message itself when the condition is false or zero.
fn assert_scalar(condition: Scalar, message: String) -> Result<()> {
    if condition.to_bool() {
        Ok(())
    } else {
        Err(other(message))
    }
}

/// `_functional_assert_scalar`: the assertion, then a copy of the dependency token.
fn functional_assert_scalar(condition: Scalar, message: String, token: Input) -> Result<Tensor> {
    assert_scalar(condition, message)?;
    Ok(token.clone_tensor())
}

/// `_make_dep_token`: a 0-d tensor of the requested dtype (default float32); ATen leaves it
/// uninitialized, ferrojit fills it with zero. Layout, device, pinning and memory format
/// have only their CPU values here.
fn make_dep_token(
    dtype: Option<DType>,
    _layout: IValue,
    _device: IValue,
    _pin_memory: IValue,
    _memory_format: IValue,
) -> Result<Tensor> {
    Ok(Tensor::zeros(&[], dtype.unwrap_or(DType::Float32))?)
}

fn format_list(values: &[i64]) -> String {
    let items: Vec<String> = values.iter().map(i64::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// `_assert_tensor_metadata`: each given property must be the tensor's (sizes, strides,
/// dtype; a device must be the CPU, a layout strided).
fn assert_tensor_metadata(
    input: Input,
    size: Option<Vec<i64>>,
    stride: Option<Vec<i64>>,
    dtype: Option<DType>,
    device: Option<Device>,
    layout: Option<i64>,
) -> Result<()> {
    let sizes: Vec<i64> = input.sizes().iter().map(|&s| s as i64).collect();
    if let Some(size) = size.filter(|size| *size != sizes) {
        return Err(other(format!(
            "Tensor sizes mismatch! Expected: {}, Got: {}",
            format_list(&size),
            format_list(&sizes)
        )));
    }
    let strides: Vec<i64> = input.strides().iter().map(|&s| s as i64).collect();
    if let Some(stride) = stride.filter(|stride| *stride != strides) {
        return Err(other(format!(
            "Tensor strides mismatch! Expected: {}, Got: {}",
            format_list(&stride),
            format_list(&strides)
        )));
    }
    if let Some(dtype) = dtype.filter(|&dtype| dtype != input.dtype()) {
        return Err(other(format!(
            "Tensor dtype mismatch! Expected: {}, Got: {}",
            dtype.scalar_type_name(),
            super::core_ops::cpp_type_name(input.dtype())
        )));
    }
    if let Some(device) = device.filter(|device| device.device_type != "cpu") {
        return Err(other(format!(
            "Tensor device mismatch! Expected: {device}, Got: cpu"
        )));
    }
    // c10::Layout 0 is `torch.strided`, the only layout of a ferrojit tensor.
    if let Some(layout) = layout.filter(|&layout| layout != 0) {
        return Err(other(format!(
            "Tensor layout mismatch! Expected: layout {layout}, Got: Strided"
        )));
    }
    Ok(())
}

/// `_local_scalar_dense` (what `item` calls): the one element as a number.
fn local_scalar_dense(input: Input) -> Result<Scalar> {
    if input.numel() == 0 {
        return Err(other("_local_scalar_dense: Empty tensor not supported"));
    }
    Ok(input.item()?)
}

/// `_reshape_alias`: a view with the given sizes and strides at the tensor's own offset.
fn reshape_alias(input: Input, size: Vec<i64>, stride: Vec<i64>) -> Result<Tensor> {
    Ok(input.as_strided(&size, &stride, Some(input.storage_offset() as i64))?)
}

/// `_reshape_from_tensor`: `reshape` to the sizes held by a 1-d int64 tensor.
fn reshape_from_tensor(input: Input, shape: Input) -> Result<Tensor> {
    if shape.dim() != 1 {
        return Err(other("Expected shape_tensor.dim() == 1 to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)"));
    }
    if shape.dtype() != DType::Int64 {
        return Err(other(format!(
            "expected scalar type Long but found {}",
            shape.dtype().scalar_type_name()
        )));
    }
    Ok(input.reshape(&shape.contiguous().to_i64_vec())?)
}

/// `_linalg_check_errors`: raises the error LAPACK's `info` code stands for in the named
/// function, naming the batch element when the codes are batched (`is_matrix` false).
fn linalg_check_errors(info: Input, api_name: String, is_matrix: bool) -> Result<()> {
    if info.dtype() != DType::Int32 {
        return Err(other(
            "infos.scalar_type() == kInt INTERNAL ASSERT FAILED: the info codes must be int32",
        ));
    }
    let codes = info.contiguous().to_i64_vec();
    let Some((batch, &code)) = codes.iter().enumerate().find(|(_, &code)| code != 0) else {
        return Ok(());
    };
    let batch = if is_matrix || info.dim() == 0 {
        String::new()
    } else {
        format!("(Batch element {batch}): ")
    };
    if code < 0 {
        return Err(other(format!(
            "{api_name}: Argument {} has illegal value. Most certainly there is a bug in the implementation calling the backend library.",
            -code
        )));
    }
    let detail = if api_name.contains("inv") {
        format!("The diagonal element {code} is zero, the inversion could not be completed because the input matrix is singular.")
    } else if api_name.contains("solve") {
        "The solver failed because the input matrix is singular.".to_string()
    } else if api_name.contains("cholesky") {
        format!("The factorization could not be completed because the input is not positive-definite (the leading minor of order {code} is not positive-definite).")
    } else if api_name.contains("svd") {
        format!("The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated singular values (error code: {code}).")
    } else if api_name.contains("eig") || api_name.contains("syevd") {
        format!("The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues (error code: {code}).")
    } else if api_name.contains("lstsq") {
        format!("The least squares solution could not be computed because the input matrix does not have full rank (error code: {code}).")
    } else if api_name.contains("lu_factor") {
        format!("U[{code},{code}] is zero and using it on lu_solve would result in a division by zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    } else {
        return Err(other(format!("{api_name}: Unknown error code: {code}.")));
    };
    // PyTorch raises torch.linalg.LinAlgError, which prints as its message alone.
    Err(other(format!("{api_name}: {batch}{detail}")))
}

/// `_autocast_to_full_precision`: with CPU autocast on, a reduced-precision floating tensor
/// becomes float32; anything else is the tensor itself.
fn autocast_to_full_precision(
    input: Input,
    _cuda_enabled: bool,
    cpu_enabled: bool,
) -> Result<Input> {
    let reduced = matches!(input.dtype(), DType::Float16 | DType::BFloat16);
    if cpu_enabled && reduced {
        return Ok(Arc::new(input.to_dtype(DType::Float32)));
    }
    Ok(input)
}

/// `_autocast_to_reduced_precision`: with CPU autocast on, a float32 tensor becomes
/// `cpu_dtype`; anything else (float64 included) is the tensor itself.
fn autocast_to_reduced_precision(
    input: Input,
    _cuda_enabled: bool,
    cpu_enabled: bool,
    _cuda_dtype: DType,
    cpu_dtype: DType,
) -> Result<Input> {
    if cpu_enabled && input.dtype() == DType::Float32 {
        return Ok(Arc::new(input.to_dtype(cpu_dtype)));
    }
    Ok(input)
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::alias(Tensor(a) self) -> Tensor(a)", alias),
        typed("aten::data(Tensor self) -> Tensor", alias),
        typed("aten::is_inference(Tensor self) -> bool", is_inference),
        typed("aten::sym_size.int(Tensor self, int dim) -> SymInt", sym_size),
        typed("aten::sym_stride.int(Tensor self, int dim) -> SymInt", sym_stride),
        typed("aten::sym_numel(Tensor self) -> SymInt", sym_numel),
        typed("aten::sym_storage_offset(Tensor self) -> SymInt", sym_storage_offset),
        typed("aten::sym_is_contiguous(Tensor self, MemoryFormat memory_format=0) -> SymBool", sym_is_contiguous),
        typed("aten::sym_constrain_range(Scalar size, *, int? min=None, int? max=None) -> ()", sym_constrain_range),
        typed("aten::sym_constrain_range_for_size(Scalar size, *, int? min=None, int? max=None) -> ()", sym_constrain_range_for_size),
        typed("aten::_assert_scalar(Scalar self, str assert_msg) -> ()", assert_scalar),
        typed("aten::_functional_assert_scalar(Scalar self, str assert_msg, Tensor dep_token) -> Tensor", functional_assert_scalar),
        typed("aten::_make_dep_token(*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", make_dep_token),
        typed("aten::_assert_tensor_metadata(Tensor a, SymInt[]? size=None, SymInt[]? stride=None, ScalarType? dtype=None, *, Device? device=None, Layout? layout=None) -> ()", assert_tensor_metadata),
        typed("aten::_local_scalar_dense(Tensor self) -> Scalar", local_scalar_dense),
        typed("aten::_reshape_alias(Tensor(a) self, SymInt[] size, SymInt[] stride) -> Tensor(a)", reshape_alias),
        typed("aten::_reshape_from_tensor(Tensor self, Tensor shape) -> Tensor", reshape_from_tensor),
        typed("aten::_linalg_check_errors(Tensor info, str api_name, *, bool is_matrix) -> ()", linalg_check_errors),
        typed("aten::_autocast_to_full_precision(Tensor(a) self, bool cuda_enabled, bool cpu_enabled) -> Tensor(a)", autocast_to_full_precision),
        typed("aten::_autocast_to_reduced_precision(Tensor(a) self, bool cuda_enabled, bool cpu_enabled, ScalarType cuda_dtype, ScalarType cpu_dtype) -> Tensor(a)", autocast_to_reduced_precision),
    ];
    declarations
}
