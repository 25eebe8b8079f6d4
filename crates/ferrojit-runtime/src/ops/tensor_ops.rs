//! Tensor operators with native_functions.yaml schemas, calling ferrojit-tensor. Python
//! numbers used as tensors become wrapped numbers (PyTorch's promotion rules for scalars).

use ferrojit_ir::Type;
use ferrojit_tensor::{DType, Scalar, Tensor, TensorError};

use std::sync::Arc;

use super::binding::typed;
use super::{optional_dtype, pop_array, push, KernelTableEntry};
use crate::error::{Result, RuntimeError};
use crate::ivalue::{Device, IValue};
use crate::opdef::OperatorDeclaration;
use crate::registry::Stack;

/// `softmax` over `dim`, computed as `exp(x - max) / sum(exp(x - max), dim)`. The tensor
/// library has no softmax yet; subtracting the global maximum keeps it stable and gives
/// the same values as a per-row maximum.
fn softmax(stack: &mut Stack) -> Result<()> {
    let [a, dim, dtype] = pop_array::<3>(stack)?;
    let input = a.to_tensor()?;
    let input = match optional_dtype(&dtype)? {
        Some(dtype) => input.to_dtype(dtype),
        None => Tensor::clone(&input),
    };
    if !input.dtype().is_floating_point() {
        return Err(TensorError::NotImplementedForDType {
            op: "softmax_lastdim_kernel_impl",
            dtype: input.dtype(),
        }
        .into());
    }
    let dim = dim.to_int()?;
    if input.numel() == 0 {
        return push(stack, input.clone_tensor());
    }
    let maximum = input.max()?;
    let shifted = input.sub(&maximum, &Scalar::Int(1))?.exp()?;
    let total = shifted.sum_dim(&[dim], true, None)?;
    push(stack, shifted.div(&total, None)?)
}

// ----- linear algebra ------------------------------------------------------------------

type Input = Arc<Tensor>;

fn linear(input: Input, weight: Input, bias: Option<Input>) -> Result<Tensor> {
    Ok(input.linear(&weight, bias.as_deref())?)
}

fn addmm(input: Input, mat1: Input, mat2: Input, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    Ok(input.addmm(&mat1, &mat2, &beta, &alpha)?)
}

fn matmul(input: Input, other: Input) -> Result<Tensor> {
    Ok(input.matmul(&other)?)
}

fn mm(input: Input, mat2: Input) -> Result<Tensor> {
    Ok(input.mm(&mat2)?)
}

fn bmm(input: Input, mat2: Input) -> Result<Tensor> {
    Ok(input.bmm(&mat2)?)
}

fn dot(input: Input, other: Input) -> Result<Tensor> {
    Ok(input.dot(&other)?)
}

fn mv(input: Input, vector: Input) -> Result<Tensor> {
    Ok(input.mv(&vector)?)
}

// ----- views and shapes ----------------------------------------------------------------

fn transpose_2d(input: Input) -> Result<Tensor> {
    Ok(input.t()?)
}

fn transpose(input: Input, dim0: i64, dim1: i64) -> Result<Tensor> {
    Ok(input.transpose(dim0, dim1)?)
}

fn permute(input: Input, dims: Vec<i64>) -> Result<Tensor> {
    Ok(input.permute(&dims)?)
}

fn view(input: Input, size: Vec<i64>) -> Result<Tensor> {
    Ok(input.view(&size)?)
}

fn reshape(input: Input, shape: Vec<i64>) -> Result<Tensor> {
    Ok(input.reshape(&shape)?)
}

fn sizes_i64(tensor: &Tensor) -> Vec<i64> {
    tensor.sizes().iter().map(|&s| s as i64).collect()
}

fn view_as(input: Input, other: Input) -> Result<Tensor> {
    Ok(input.view(&sizes_i64(&other))?)
}

fn reshape_as(input: Input, other: Input) -> Result<Tensor> {
    Ok(input.reshape(&sizes_i64(&other))?)
}

/// `implicit` only matters to tracing; it is taken as it comes, unread.
fn expand(input: Input, size: Vec<i64>, _implicit: IValue) -> Result<Tensor> {
    Ok(input.expand(&size)?)
}

fn expand_as(input: Input, other: Input) -> Result<Tensor> {
    Ok(input.expand(&sizes_i64(&other))?)
}

fn flatten(input: Input, start_dim: i64, end_dim: i64) -> Result<Tensor> {
    Ok(input.flatten(start_dim, end_dim)?)
}

fn select(input: Input, dim: i64, index: i64) -> Result<Tensor> {
    Ok(input.select(dim, index)?)
}

fn slice(
    input: Input,
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    Ok(input.slice(dim, start, end, step)?)
}

fn narrow(input: Input, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    Ok(input.narrow(dim, start, length)?)
}

fn unsqueeze(input: Input, dim: i64) -> Result<Tensor> {
    Ok(input.unsqueeze(dim)?)
}

fn squeeze_dim(input: Input, dim: i64) -> Result<Tensor> {
    Ok(input.squeeze_dim(dim)?)
}

fn squeeze(input: Input) -> Result<Tensor> {
    Ok(input.squeeze())
}

/// `squeeze.dims`: removes each listed dim of size 1 (others are left, as in PyTorch).
fn squeeze_dims(input: Input, dims: Vec<i64>) -> Result<Tensor> {
    let mut result = Tensor::clone(&input);
    let mut wrapped = dims
        .into_iter()
        .map(|dim| ferrojit_tensor::wrap_dim(dim, result.dim()))
        .collect::<std::result::Result<Vec<usize>, _>>()?;
    wrapped.sort_unstable();
    wrapped.dedup();
    for dim in wrapped.into_iter().rev() {
        result = result.squeeze_dim(dim as i64)?;
    }
    Ok(result)
}

/// `resize_(size, memory_format)`: the in-place form hands the resized tensor to every handle
/// (see the registry's alias write-back).
fn resize(stack: &mut Stack) -> Result<()> {
    let [a, sizes, memory_format] = pop_array::<3>(stack)?;
    let format = super::core_ops::memory_format(&memory_format)?;
    let result = a.to_tensor()?.resized(&sizes.to_int_vec()?, format)?;
    push(stack, result)
}

/// `resize_as_(the_template, memory_format)`.
fn resize_as(stack: &mut Stack) -> Result<()> {
    let [a, template, memory_format] = pop_array::<3>(stack)?;
    let format = super::core_ops::memory_format(&memory_format)?;
    let sizes: Vec<i64> = template
        .to_tensor()?
        .sizes()
        .iter()
        .map(|&s| s as i64)
        .collect();
    let result = a.to_tensor()?.resized(&sizes, format)?;
    push(stack, result)
}

/// `set_(source)`: `self` becomes another handle on `source`'s storage and geometry.
fn set_to_tensor(stack: &mut Stack) -> Result<()> {
    let [a, source] = pop_array::<2>(stack)?;
    let (target, source) = (a.to_tensor()?, source.to_tensor()?);
    if target.dtype() != source.dtype() {
        return Err(RuntimeError::Other(format!(
            "Could not set tensor of type {} to a tensor of type {}",
            target.dtype().name(),
            source.dtype().name()
        )));
    }
    push(stack, Tensor::clone(&source))
}

/// `requires_grad_(requires_grad)`: only the flag; ferrojit records no gradients.
fn set_requires_grad(stack: &mut Stack) -> Result<()> {
    let [a, value] = pop_array::<2>(stack)?;
    let mut result = Tensor::clone(&*a.to_tensor()?);
    result.set_requires_grad(value.to_bool()?);
    push(stack, result)
}

/// `contiguous(memory_format)`: the tensor itself when it already is contiguous in that format,
/// else a copy laid out in it.
fn contiguous(stack: &mut Stack) -> Result<()> {
    use ferrojit_tensor::ops::views::MemoryFormat;
    let [a, memory_format] = pop_array::<2>(stack)?;
    let format = super::core_ops::memory_format(&memory_format)?;
    let tensor = a.to_tensor()?;
    match format {
        MemoryFormat::Contiguous => push(stack, tensor.contiguous()),
        MemoryFormat::Preserve => Err(RuntimeError::Other(
            "preserve memory format is unsupported by the contiguous operator".to_string(),
        )),
        _ if is_contiguous_as(&tensor, format)? => push(stack, a),
        _ => push(stack, tensor.clone_with_format(format)?),
    }
}

fn clone(input: Input, memory_format: IValue) -> Result<Tensor> {
    let format = super::core_ops::memory_format(&memory_format)?;
    Ok(input.clone_with_format(format)?)
}

fn detach(input: Input) -> Result<Tensor> {
    let mut result = Tensor::clone(&input);
    result.set_requires_grad(false);
    Ok(result)
}

// ----- reductions ----------------------------------------------------------------------

fn max_all(input: Input) -> Result<Tensor> {
    Ok(input.max()?)
}

fn min_all(input: Input) -> Result<Tensor> {
    Ok(input.min()?)
}

// ----- metadata and conversions ----------------------------------------------------------

fn size_int(stack: &mut Stack) -> Result<()> {
    let [a, dim] = pop_array::<2>(stack)?;
    let size = a.to_tensor()?.size(dim.to_int()?)?;
    push(stack, size as i64)
}

fn stride(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let strides: Vec<i64> = a.to_tensor()?.strides().iter().map(|&s| s as i64).collect();
    push(stack, IValue::int_list(&strides))
}

fn stride_int(stack: &mut Stack) -> Result<()> {
    let [a, dim] = pop_array::<2>(stack)?;
    let tensor = a.to_tensor()?;
    let dim = ferrojit_tensor::wrap_dim(dim.to_int()?, tensor.dim())?;
    push(stack, tensor.strides()[dim] as i64)
}

fn storage_offset(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, a.to_tensor()?.storage_offset() as i64)
}

fn element_size(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, a.to_tensor()?.dtype().item_size() as i64)
}

fn is_contiguous(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, a.to_tensor()?.is_contiguous())
}

/// `is_contiguous(memory_format=...)`: c10's test, which skips the strides of size-1 dims and
/// calls a tensor without elements contiguous.
fn is_contiguous_in_format(stack: &mut Stack) -> Result<()> {
    let [a, memory_format] = pop_array::<2>(stack)?;
    let format = super::core_ops::memory_format(&memory_format)?;
    push(stack, is_contiguous_as(&*a.to_tensor()?, format)?)
}

/// c10's contiguity test for a memory format: the strides of size-1 dims are skipped, and a
/// tensor without elements is contiguous.
fn is_contiguous_as(
    tensor: &Tensor,
    format: ferrojit_tensor::ops::views::MemoryFormat,
) -> Result<bool> {
    use ferrojit_tensor::ops::views::MemoryFormat;
    let (sizes, strides) = (tensor.sizes(), tensor.strides());
    let inner_to_outer: &[usize] = match format {
        MemoryFormat::Contiguous => return Ok(tensor.is_contiguous()),
        MemoryFormat::ChannelsLast if sizes.len() == 4 => &[1, 3, 2, 0],
        MemoryFormat::ChannelsLast3d if sizes.len() == 5 => &[1, 4, 3, 2, 0],
        MemoryFormat::ChannelsLast | MemoryFormat::ChannelsLast3d => return Ok(false),
        MemoryFormat::Preserve => {
            return Err(RuntimeError::Other(
                "is_contiguous: Tensor doesn't support memory format Preserve".to_string(),
            ))
        }
    };
    if tensor.numel() == 0 {
        return Ok(true);
    }
    let mut expected = 1usize;
    for &dim in inner_to_outer {
        if sizes[dim] != 1 {
            if strides[dim] != expected {
                return Ok(false);
            }
            expected = expected.saturating_mul(sizes[dim]);
        }
    }
    Ok(true)
}

fn size(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, IValue::int_list(&sizes_i64(&*a.to_tensor()?)))
}

fn dim(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, a.to_tensor()?.dim() as i64)
}

fn numel(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, a.to_tensor()?.numel() as i64)
}

fn len_tensor(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let tensor = a.to_tensor()?;
    match tensor.sizes().first() {
        Some(&first) => push(stack, first as i64),
        None => Err(RuntimeError::Other("len() of a 0-d tensor".to_string())),
    }
}

fn is_floating_point(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, a.to_tensor()?.dtype().is_floating_point())
}

fn to_dtype_impl(tensor: &Tensor, dtype: Option<DType>, copy: bool) -> Tensor {
    let target = dtype.unwrap_or(tensor.dtype());
    if copy && target == tensor.dtype() {
        tensor.clone_tensor()
    } else {
        tensor.to_dtype(target)
    }
}

fn check_cpu(device: &IValue) -> Result<()> {
    match device {
        IValue::None => Ok(()),
        IValue::Device(device) if device.device_type == "cpu" => Ok(()),
        IValue::Device(device) => Err(RuntimeError::Other(format!(
            "device '{device}' is not available: ferrojit runs on the CPU only"
        ))),
        other => Err(RuntimeError::type_mismatch(
            "Device",
            other.type_of().to_string(),
            "device argument",
        )),
    }
}

fn to_dtype(stack: &mut Stack) -> Result<()> {
    let [a, dtype, _non_blocking, copy, _memory_format] = pop_array::<5>(stack)?;
    let dtype = DType::from_scalar_type_index(dtype.to_int()?)?;
    let result = to_dtype_impl(&*a.to_tensor()?, Some(dtype), copy.to_bool()?);
    push(stack, result)
}

/// `aten::_cast_<Type>(self, non_blocking)`: `self.to(dtype)` (PyTorch ≤ 1.4 printed
/// `x.float()` and friends this way).
fn cast_to(stack: &mut Stack, dtype: DType) -> Result<()> {
    let [a, _non_blocking] = pop_array::<2>(stack)?;
    push(stack, to_dtype_impl(&*a.to_tensor()?, Some(dtype), false))
}

fn cast_byte(stack: &mut Stack) -> Result<()> {
    cast_to(stack, DType::UInt8)
}

fn cast_char(stack: &mut Stack) -> Result<()> {
    cast_to(stack, DType::Int8)
}

fn cast_short(stack: &mut Stack) -> Result<()> {
    cast_to(stack, DType::Int16)
}

fn cast_int(stack: &mut Stack) -> Result<()> {
    cast_to(stack, DType::Int32)
}

fn cast_long(stack: &mut Stack) -> Result<()> {
    cast_to(stack, DType::Int64)
}

fn cast_half(stack: &mut Stack) -> Result<()> {
    cast_to(stack, DType::Float16)
}

fn cast_float(stack: &mut Stack) -> Result<()> {
    cast_to(stack, DType::Float32)
}

fn cast_double(stack: &mut Stack) -> Result<()> {
    cast_to(stack, DType::Float64)
}

fn to_prim_dtype(stack: &mut Stack) -> Result<()> {
    let [a, dtype, _non_blocking, copy] = pop_array::<4>(stack)?;
    let result = to_dtype_impl(&*a.to_tensor()?, optional_dtype(&dtype)?, copy.to_bool()?);
    push(stack, result)
}

fn to_prim_device(stack: &mut Stack) -> Result<()> {
    let [a, device, dtype, _non_blocking, copy] = pop_array::<5>(stack)?;
    check_cpu(&device)?;
    let result = to_dtype_impl(&*a.to_tensor()?, optional_dtype(&dtype)?, copy.to_bool()?);
    push(stack, result)
}

fn to_device(stack: &mut Stack) -> Result<()> {
    let [a, device, dtype, _non_blocking, copy, _memory_format] = pop_array::<6>(stack)?;
    check_cpu(&device)?;
    let dtype = DType::from_scalar_type_index(dtype.to_int()?)?;
    let result = to_dtype_impl(&*a.to_tensor()?, Some(dtype), copy.to_bool()?);
    push(stack, result)
}

/// `x.to(other)`: `other`'s dtype (and device, always the CPU here).
fn to_other(stack: &mut Stack) -> Result<()> {
    let [a, other, _non_blocking, copy, _memory_format] = pop_array::<5>(stack)?;
    let dtype = other.to_tensor()?.dtype();
    let result = to_dtype_impl(&*a.to_tensor()?, Some(dtype), copy.to_bool()?);
    push(stack, result)
}

/// `x.to(dtype=..., device=...)` with keyword arguments.
fn to_dtype_layout(stack: &mut Stack) -> Result<()> {
    let [a, dtype, _layout, device, _pin_memory, _non_blocking, copy, _memory_format] =
        pop_array::<8>(stack)?;
    check_cpu(&device)?;
    let result = to_dtype_impl(&*a.to_tensor()?, optional_dtype(&dtype)?, copy.to_bool()?);
    push(stack, result)
}

fn item(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let value = a.to_tensor()?.item()?;
    push(stack, value)
}

fn int_tensor(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let value = a.to_tensor()?.item()?;
    push(stack, value.to_i64())
}

fn float_tensor(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let value = a.to_tensor()?.item()?;
    push(stack, value.to_f64())
}

fn bool_tensor(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let tensor = a.to_tensor()?;
    if tensor.numel() != 1 {
        let message = if tensor.numel() == 0 {
            "Boolean value of Tensor with no values is ambiguous"
        } else {
            "Boolean value of Tensor with more than one value is ambiguous"
        };
        return Err(RuntimeError::Other(message.to_string()));
    }
    push(stack, tensor.item()?.to_bool())
}

fn num_to_tensor(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let value = a.to_scalar()?;
    push(stack, Tensor::scalar_tensor(value, value.dtype()))
}

fn device(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    a.to_tensor()?;
    push(stack, Device::cpu())
}

fn dtype(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, a.to_tensor()?.dtype().scalar_type_index())
}

fn requires_grad(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, a.to_tensor()?.requires_grad())
}

/// `prim::is_cuda`, `is_sparse`, ...: false for every ferrojit tensor (dense, CPU).
fn false_for_tensor(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    a.to_tensor()?;
    push(stack, false)
}

// ----- factories -----------------------------------------------------------------------

fn sizes_from(value: &IValue) -> Result<Vec<usize>> {
    let sizes = value.to_int_vec()?;
    sizes
        .iter()
        .map(|&s| {
            usize::try_from(s).map_err(|_| {
                RuntimeError::Other(format!(
                    "Trying to create tensor with negative dimension {s}: {sizes:?}"
                ))
            })
        })
        .collect()
}

fn factory(stack: &mut Stack, fill: Scalar) -> Result<()> {
    let [size, dtype, _layout, device, _pin_memory] = pop_array::<5>(stack)?;
    check_cpu(&device)?;
    let dtype = optional_dtype(&dtype)?.unwrap_or(DType::default_float());
    let result = Tensor::full(&sizes_from(&size)?, fill, dtype)?;
    push(stack, result)
}

fn zeros(stack: &mut Stack) -> Result<()> {
    factory(stack, Scalar::Int(0))
}

fn ones(stack: &mut Stack) -> Result<()> {
    factory(stack, Scalar::Int(1))
}

fn full(stack: &mut Stack) -> Result<()> {
    let [size, fill, dtype, _layout, device, _pin_memory] = pop_array::<6>(stack)?;
    check_cpu(&device)?;
    let fill = fill.to_scalar()?;
    let dtype = optional_dtype(&dtype)?.unwrap_or(match fill {
        Scalar::Float(_) => DType::default_float(),
        other => other.dtype(),
    });
    let result = Tensor::full(&sizes_from(&size)?, fill, dtype)?;
    push(stack, result)
}

fn like_factory(stack: &mut Stack, fill: Scalar) -> Result<()> {
    let [a, dtype, _layout, device, _pin_memory, _memory_format] = pop_array::<6>(stack)?;
    check_cpu(&device)?;
    let tensor = a.to_tensor()?;
    let dtype = optional_dtype(&dtype)?.unwrap_or(tensor.dtype());
    push(stack, Tensor::full(tensor.sizes(), fill, dtype)?)
}

fn zeros_like(stack: &mut Stack) -> Result<()> {
    like_factory(stack, Scalar::Int(0))
}

fn ones_like(stack: &mut Stack) -> Result<()> {
    like_factory(stack, Scalar::Int(1))
}

fn arange_impl(start: Scalar, end: Scalar, step: Scalar, dtype: &IValue) -> Result<Tensor> {
    let inferred = if [start, end, step].iter().any(Scalar::is_floating_point) {
        DType::default_float()
    } else {
        DType::Int64
    };
    let dtype = optional_dtype(dtype)?.unwrap_or(inferred);
    Ok(Tensor::arange(
        start.to_f64(),
        end.to_f64(),
        step.to_f64(),
        dtype,
    )?)
}

fn arange(stack: &mut Stack) -> Result<()> {
    let [end, dtype, _layout, device, _pin_memory] = pop_array::<5>(stack)?;
    check_cpu(&device)?;
    let result = arange_impl(Scalar::Int(0), end.to_scalar()?, Scalar::Int(1), &dtype)?;
    push(stack, result)
}

fn arange_start(stack: &mut Stack) -> Result<()> {
    let [start, end, dtype, _layout, device, _pin_memory] = pop_array::<6>(stack)?;
    check_cpu(&device)?;
    let result = arange_impl(start.to_scalar()?, end.to_scalar()?, Scalar::Int(1), &dtype)?;
    push(stack, result)
}

fn arange_start_step(stack: &mut Stack) -> Result<()> {
    let [start, end, step, dtype, _layout, device, _pin_memory] = pop_array::<7>(stack)?;
    check_cpu(&device)?;
    let result = arange_impl(
        start.to_scalar()?,
        end.to_scalar()?,
        step.to_scalar()?,
        &dtype,
    )?;
    push(stack, result)
}

/// Flattens a (nested) list literal into scalars, recording its shape.
fn flatten_data(
    value: &IValue,
    depth: usize,
    shape: &mut Vec<usize>,
    out: &mut Vec<Scalar>,
) -> Result<()> {
    match value {
        IValue::List(list) => {
            let items = list.to_vec();
            if shape.len() == depth {
                shape.push(items.len());
            } else if shape.get(depth) != Some(&items.len()) {
                return Err(RuntimeError::ValueError(format!(
                    "expected sequence of length {} at dim {depth} (got {})",
                    shape.get(depth).copied().unwrap_or(0),
                    items.len()
                )));
            }
            for item in &items {
                flatten_data(item, depth + 1, shape, out)?;
            }
            Ok(())
        }
        other => {
            if shape.len() != depth {
                return Err(RuntimeError::ValueError(
                    "tensor(): nested lists must have a consistent depth".to_string(),
                ));
            }
            out.push(other.to_scalar()?);
            Ok(())
        }
    }
}

fn base_element_type(ty: &Type) -> &Type {
    match ty {
        Type::List(element) => base_element_type(element),
        other => other,
    }
}

fn tensor_from_list(stack: &mut Stack) -> Result<()> {
    let [data, dtype, device, _requires_grad] = pop_array::<4>(stack)?;
    check_cpu(&device)?;
    let mut shape = Vec::new();
    let mut values = Vec::new();
    flatten_data(&data, 0, &mut shape, &mut values)?;
    let inferred = match values.first() {
        Some(Scalar::Float(_)) => DType::default_float(),
        Some(Scalar::Int(_)) => DType::Int64,
        Some(Scalar::Bool(_)) => DType::Bool,
        None => match base_element_type(&data.type_of()) {
            Type::Int => DType::Int64,
            Type::Bool => DType::Bool,
            _ => DType::default_float(),
        },
    };
    let dtype = optional_dtype(&dtype)?.unwrap_or(inferred);
    let result = build_tensor(&values, &shape, dtype)?;
    push(stack, result)
}

fn build_tensor(values: &[Scalar], shape: &[usize], dtype: DType) -> Result<Tensor> {
    let tensor = if dtype.is_floating_point() {
        let data: Vec<f64> = values.iter().map(Scalar::to_f64).collect();
        Tensor::from_vec(data, shape)?
    } else if dtype == DType::Bool {
        let data: Vec<bool> = values.iter().map(Scalar::to_bool).collect();
        Tensor::from_vec(data, shape)?
    } else {
        let data: Vec<i64> = values.iter().map(Scalar::to_i64).collect();
        Tensor::from_vec(data, shape)?
    };
    Ok(tensor.to_dtype(dtype))
}

fn tensor_from_number(stack: &mut Stack) -> Result<()> {
    let [value, dtype, device, _requires_grad] = pop_array::<4>(stack)?;
    check_cpu(&device)?;
    let value = value.to_scalar()?;
    let inferred = match value {
        Scalar::Float(_) => DType::default_float(),
        other => other.dtype(),
    };
    let dtype = optional_dtype(&dtype)?.unwrap_or(inferred);
    push(stack, build_tensor(&[value], &[], dtype)?)
}

/// `as_tensor` of a list or a number: `tensor(...)` without the requires_grad argument.
fn as_tensor_from_data(stack: &mut Stack, build: fn(&mut Stack) -> Result<()>) -> Result<()> {
    stack.push(IValue::Bool(false));
    build(stack)
}

fn as_tensor_list(stack: &mut Stack) -> Result<()> {
    as_tensor_from_data(stack, tensor_from_list)
}

fn as_tensor_number(stack: &mut Stack) -> Result<()> {
    as_tensor_from_data(stack, tensor_from_number)
}

/// `as_tensor(Tensor data, dtype?, device?)`: the same tensor when nothing changes,
/// otherwise a converted copy.
fn as_tensor_tensor(stack: &mut Stack) -> Result<()> {
    let [data, dtype, device] = pop_array::<3>(stack)?;
    check_cpu(&device)?;
    let result = to_dtype_impl(&*data.to_tensor()?, optional_dtype(&dtype)?, false);
    push(stack, result)
}

fn unique_dim(stack: &mut Stack) -> Result<()> {
    let [a, dim, _sorted, _return_inverse, _return_counts] = pop_array::<5>(stack)?;
    let (values, inverse, counts) = a.to_tensor()?.unique_dim(dim.to_int()?)?;
    push(stack, values)?;
    push(stack, inverse)?;
    push(stack, counts)
}

fn cat(stack: &mut Stack) -> Result<()> {
    let [tensors, dim] = pop_array::<2>(stack)?;
    let result = ferrojit_tensor::cat(&tensors.to_tensor_vec()?, dim.to_int()?)?;
    push(stack, result)
}

fn stack_tensors(stack: &mut Stack) -> Result<()> {
    let [tensors, dim] = pop_array::<2>(stack)?;
    let result = ferrojit_tensor::stack(&tensors.to_tensor_vec()?, dim.to_int()?)?;
    push(stack, result)
}

// ----- in-place writes -------------------------------------------------------------------

fn copy_(stack: &mut Stack) -> Result<()> {
    let [a, src, _non_blocking] = pop_array::<3>(stack)?;
    a.to_tensor()?.copy_(&*src.to_tensor()?)?;
    push(stack, a)
}

fn fill_scalar_(stack: &mut Stack) -> Result<()> {
    let [a, value] = pop_array::<2>(stack)?;
    a.to_tensor()?.fill_(&value.to_scalar()?)?;
    push(stack, a)
}

fn fill_tensor_(stack: &mut Stack) -> Result<()> {
    let [a, value] = pop_array::<2>(stack)?;
    let value = value.to_tensor()?;
    if value.dim() != 0 {
        return Err(RuntimeError::Other(format!(
            "fill_ only supports 0-dimension value tensor but got tensor with {} dimensions.",
            value.dim()
        )));
    }
    a.to_tensor()?.fill_(&value.item()?)?;
    push(stack, a)
}

fn zero_(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    a.to_tensor()?.zero_()?;
    push(stack, a)
}

/// The typed operators of this file, registered right after [`TABLE`]: matrix products,
/// views and reductions. In-place geometry changes (`t_`, `unsqueeze_`) return the changed
/// tensor, and the registry's alias write-back makes it `self`'s tensor for every handle.
#[rustfmt::skip]
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", linear),
        typed("aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", addmm),
        typed("aten::matmul(Tensor self, Tensor other) -> Tensor", matmul),
        typed("aten::mm(Tensor self, Tensor mat2) -> Tensor", mm),
        typed("aten::bmm(Tensor self, Tensor mat2) -> Tensor", bmm),
        typed("aten::dot(Tensor self, Tensor tensor) -> Tensor", dot),
        typed("aten::mv(Tensor self, Tensor vec) -> Tensor", mv),
        typed("aten::t(Tensor(a) self) -> Tensor(a)", transpose_2d),
        typed("aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", transpose),
        typed("aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)", permute),
        typed("aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)", view),
        typed("aten::view_as(Tensor(a) self, Tensor other) -> Tensor(a)", view_as),
        typed("aten::reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)", reshape),
        typed("aten::reshape_as(Tensor(a) self, Tensor other) -> Tensor(a)", reshape_as),
        typed("aten::expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)", expand),
        typed("aten::expand_as(Tensor(a) self, Tensor other) -> Tensor(a)", expand_as),
        typed("aten::flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)", flatten),
        typed("aten::select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)", select),
        typed("aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)", slice),
        typed("aten::narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)", narrow),
        typed("aten::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", unsqueeze),
        typed("aten::squeeze(Tensor(a) self) -> Tensor(a)", squeeze),
        typed("aten::squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", squeeze_dim),
        typed("aten::squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)", squeeze_dims),
        typed("aten::swapdims(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", transpose),
        typed("aten::swapaxes(Tensor(a) self, int axis0, int axis1) -> Tensor(a)", transpose),
        typed("aten::t_(Tensor(a!) self) -> Tensor(a!)", transpose_2d),
        typed("aten::transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)", transpose),
        typed("aten::swapdims_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)", transpose),
        typed("aten::swapaxes_(Tensor(a!) self, int axis0, int axis1) -> Tensor(a!)", transpose),
        typed("aten::unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)", unsqueeze),
        typed("aten::squeeze_(Tensor(a!) self) -> Tensor(a!)", squeeze),
        typed("aten::squeeze_.dim(Tensor(a!) self, int dim) -> Tensor(a!)", squeeze_dim),
        typed("aten::squeeze_.dims(Tensor(a!) self, int[] dim) -> Tensor(a!)", squeeze_dims),
        typed("aten::detach_(Tensor(a!) self) -> Tensor(a!)", detach),
        typed("aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", clone),
        typed("aten::detach(Tensor(a) self) -> Tensor(a)", detach),
        typed("aten::max(Tensor self) -> Tensor", max_all),
        typed("aten::min(Tensor self) -> Tensor", min_all),
    ]
}

pub const TABLE: &[KernelTableEntry] = &[
    ("aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", softmax),
    ("aten::resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor(a!)", resize),
    ("aten::resize_as_(Tensor(a!) self, Tensor the_template, *, MemoryFormat? memory_format=None) -> Tensor(a!)", resize_as),
    ("aten::set_.source_Tensor(Tensor(a!) self, Tensor source) -> Tensor(a!)", set_to_tensor),
    ("aten::requires_grad_(Tensor(a!) self, bool requires_grad=True) -> Tensor(a!)", set_requires_grad),
    ("aten::contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)", contiguous),
    ("aten::size.int(Tensor self, int dim) -> int", size_int),
    ("aten::size(Tensor self) -> int[]", size),
    ("aten::stride(Tensor self) -> int[]", stride),
    ("aten::stride.int(Tensor self, int dim) -> int", stride_int),
    ("aten::storage_offset(Tensor self) -> int", storage_offset),
    ("aten::element_size(Tensor self) -> int", element_size),
    ("aten::is_contiguous(Tensor self) -> bool", is_contiguous),
    ("aten::is_contiguous.memory_format(Tensor self, MemoryFormat memory_format) -> bool", is_contiguous_in_format),
    ("aten::dim(Tensor self) -> int", dim),
    ("aten::numel(Tensor self) -> int", numel),
    ("aten::len.Tensor(Tensor t) -> int", len_tensor),
    ("aten::is_floating_point(Tensor self) -> bool", is_floating_point),
    ("aten::to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)", to_dtype),
    ("aten::to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)", to_device),
    ("aten::to.prim_Device(Tensor(a) self, Device? device, int? dtype=None, bool non_blocking=False, bool copy=False) -> Tensor(a|b)", to_prim_device),
    ("aten::to.prim_dtype(Tensor(a) self, int? dtype=None, bool non_blocking=False, bool copy=False) -> Tensor(a|b)", to_prim_dtype),
    ("aten::to.other(Tensor(a) self, Tensor other, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)", to_other),
    ("aten::to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)", to_dtype_layout),
    ("aten::_cast_Byte(Tensor self, bool non_blocking=False) -> Tensor", cast_byte),
    ("aten::_cast_Char(Tensor self, bool non_blocking=False) -> Tensor", cast_char),
    ("aten::_cast_Short(Tensor self, bool non_blocking=False) -> Tensor", cast_short),
    ("aten::_cast_Int(Tensor self, bool non_blocking=False) -> Tensor", cast_int),
    ("aten::_cast_Long(Tensor self, bool non_blocking=False) -> Tensor", cast_long),
    ("aten::_cast_Half(Tensor self, bool non_blocking=False) -> Tensor", cast_half),
    ("aten::_cast_Float(Tensor self, bool non_blocking=False) -> Tensor", cast_float),
    ("aten::_cast_Double(Tensor self, bool non_blocking=False) -> Tensor", cast_double),
    ("aten::item(Tensor self) -> Scalar", item),
    ("aten::Int.Tensor(Tensor a) -> int", int_tensor),
    ("aten::Float.Tensor(Tensor a) -> float", float_tensor),
    ("aten::Bool.Tensor(Tensor a) -> bool", bool_tensor),
    ("prim::NumToTensor.Scalar(Scalar a) -> Tensor", num_to_tensor),
    ("prim::device(Tensor a) -> Device", device),
    ("prim::dtype(Tensor a) -> int", dtype),
    ("prim::requires_grad(Tensor a) -> bool", requires_grad),
    ("prim::is_cuda(Tensor a) -> bool", false_for_tensor),
    ("prim::is_sparse(Tensor a) -> bool", false_for_tensor),
    ("prim::is_quantized(Tensor a) -> bool", false_for_tensor),
    ("prim::is_meta(Tensor a) -> bool", false_for_tensor),
    ("prim::is_mkldnn(Tensor a) -> bool", false_for_tensor),
    ("aten::zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", zeros),
    ("aten::ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", ones),
    ("aten::full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", full),
    ("aten::zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", zeros_like),
    ("aten::ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", ones_like),
    ("aten::arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", arange),
    ("aten::arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", arange_start),
    ("aten::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", arange_start_step),
    ("aten::tensor.float(float t, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False) -> Tensor", tensor_from_number),
    ("aten::tensor.int(int t, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False) -> Tensor", tensor_from_number),
    ("aten::tensor.bool(bool t, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False) -> Tensor", tensor_from_number),
    ("aten::tensor(t[] data, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False) -> Tensor", tensor_from_list),
    ("aten::unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)", unique_dim),
    ("aten::as_tensor(Tensor(a) data, *, ScalarType? dtype=None, Device? device=None) -> Tensor(a|b)", as_tensor_tensor),
    ("aten::as_tensor.float(float t, *, ScalarType? dtype=None, Device? device=None) -> Tensor", as_tensor_number),
    ("aten::as_tensor.int(int t, *, ScalarType? dtype=None, Device? device=None) -> Tensor", as_tensor_number),
    ("aten::as_tensor.bool(bool t, *, ScalarType? dtype=None, Device? device=None) -> Tensor", as_tensor_number),
    ("aten::as_tensor.list(t[] data, *, ScalarType? dtype=None, Device? device=None) -> Tensor", as_tensor_list),
    ("aten::cat(Tensor[] tensors, int dim=0) -> Tensor", cat),
    ("aten::stack(Tensor[] tensors, int dim=0) -> Tensor", stack_tensors),
    ("aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)", copy_),
    ("aten::fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)", fill_scalar_),
    ("aten::fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)", fill_tensor_),
    ("aten::zero_(Tensor(a!) self) -> Tensor(a!)", zero_),
];
