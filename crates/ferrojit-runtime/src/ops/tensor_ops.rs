//! Tensor operators with native_functions.yaml schemas, calling ferrojit-tensor, as typed
//! kernels: matrix products, views and geometry changes, metadata, conversions, factories and
//! in-place writes. Python numbers used as tensors become wrapped numbers (PyTorch's
//! promotion rules for scalars).

use ferrojit_ir::Type;
use ferrojit_tensor::ops::views::MemoryFormat;
use ferrojit_tensor::{DType, Scalar, Tensor, TensorError};

use std::sync::Arc;

use super::binding::{out_from_functional, typed, typed_in_place, CpuDevice, FromArgument};
use crate::error::{Result, RuntimeError};
use crate::ivalue::{Device, IValue, TensorCell};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// An argument the kernel takes as it comes and never reads: a layout (ferrojit has only the
/// strided one), `pin_memory` (no pinned memory on the CPU), `non_blocking` (every copy is
/// synchronous), or a flag whose every value gives the same result here.
type Unread = IValue;

/// A `MemoryFormat` or `MemoryFormat?` argument (a c10::MemoryFormat index; None is
/// `preserve_format`), read as `core_ops::memory_format` reads it.
// Local to this file because binding.rs has no MemoryFormat conversion; it could be hoisted.
pub(super) struct MemoryFormatArgument(pub(super) MemoryFormat);

impl FromArgument for MemoryFormatArgument {
    fn from_argument(value: &IValue) -> Result<Self> {
        super::core_ops::memory_format(value).map(MemoryFormatArgument)
    }
}

/// A tensor argument as its handle (the cell every copy of the value shares), for the
/// operators that read or write what belongs to the handle rather than to the tensor value:
/// its autograd metadata (`requires_grad_`, `detach_`, `prim::requires_grad`).
// Local to this file because binding.rs has no handle conversion; it could be hoisted there.
struct TensorHandle {
    value: IValue,
    cell: Arc<TensorCell>,
}

impl FromArgument for TensorHandle {
    fn from_argument(value: &IValue) -> Result<Self> {
        let cell = Arc::clone(value.to_tensor_cell()?);
        Ok(TensorHandle {
            value: value.clone(),
            cell,
        })
    }
}

/// `softmax` over `dim`, computed as `exp(x - max) / sum(exp(x - max), dim)`. The tensor
/// library has no softmax yet; subtracting the global maximum keeps it stable and gives
/// the same values as a per-row maximum.
fn softmax(input: Input, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    let input = match dtype {
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
    if input.numel() == 0 {
        return Ok(input.clone_tensor());
    }
    let maximum = input.max()?;
    let shifted = input.sub(&maximum, &Scalar::Int(1))?.exp()?;
    let total = shifted.sum_dim(&[dim], true, None)?;
    Ok(shifted.div(&total, None)?)
}

// ----- linear algebra ------------------------------------------------------------------

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

/// `resize_(size, memory_format)`: returns the resized tensor, which the registry's alias
/// write-back makes `self`'s for every handle.
fn resize(input: Input, size: Vec<i64>, memory_format: MemoryFormatArgument) -> Result<Tensor> {
    Ok(input.resized(&size, memory_format.0)?)
}

/// `resize_as_(the_template, memory_format)`.
fn resize_as(input: Input, template: Input, memory_format: MemoryFormatArgument) -> Result<Tensor> {
    Ok(input.resized(&sizes_i64(&template), memory_format.0)?)
}

/// `set_(source)`: `self` becomes another handle on `source`'s storage and geometry.
fn set_to_tensor(target: Input, source: Input) -> Result<Tensor> {
    if target.dtype() != source.dtype() {
        return Err(RuntimeError::Other(format!(
            "Could not set tensor of type {} to a tensor of type {}",
            target.dtype().name(),
            source.dtype().name()
        )));
    }
    Ok(Tensor::clone(&source))
}

/// `requires_grad_(requires_grad)`: only the flag, on the handle, so every handle sees it and
/// an in-place operator that later replaces the handle's tensor keeps it. A computed tensor
/// (one with a `grad_fn`) cannot stop requiring grad, as in PyTorch.
fn set_requires_grad(input: TensorHandle, requires_grad: bool) -> Result<IValue> {
    if !requires_grad && !input.cell.autograd().is_leaf() {
        return Err(RuntimeError::Other(
            "you can only change requires_grad flags of leaf variables. If you want to use a \
             computed variable in a subgraph that doesn't require differentiation use \
             var_no_grad = var.detach()."
                .to_string(),
        ));
    }
    input.cell.set_requires_grad(requires_grad);
    Ok(input.value)
}

/// `contiguous(memory_format)`: the tensor itself (the very handle, as PyTorch returns `self`)
/// when it already is contiguous in that format, else a copy laid out in it.
fn contiguous(input_value: IValue, memory_format: MemoryFormatArgument) -> Result<IValue> {
    let tensor = input_value.to_tensor()?;
    match memory_format.0 {
        MemoryFormat::Contiguous => Ok(IValue::from(tensor.contiguous())),
        MemoryFormat::Preserve => Err(RuntimeError::Other(
            "preserve memory format is unsupported by the contiguous operator".to_string(),
        )),
        format if is_contiguous_as(&tensor, format)? => Ok(input_value),
        format => Ok(IValue::from(tensor.clone_with_format(format)?)),
    }
}

fn clone(input: Input, memory_format: MemoryFormatArgument) -> Result<Tensor> {
    Ok(input.clone_with_format(memory_format.0)?)
}

/// `detach`: a new handle on the same tensor, which (being new) does not require grad.
fn detach(input: Input) -> Result<Tensor> {
    Ok(Tensor::clone(&input))
}

/// `detach_`: the handle itself stops requiring grad and becomes a leaf.
fn detach_in_place(input: TensorHandle) -> Result<IValue> {
    input.cell.autograd().set_grad_fn(None);
    input.cell.set_requires_grad(false);
    Ok(input.value)
}

// ----- reductions ----------------------------------------------------------------------

fn max_all(input: Input) -> Result<Tensor> {
    Ok(input.max()?)
}

fn min_all(input: Input) -> Result<Tensor> {
    Ok(input.min()?)
}

// ----- metadata and conversions ----------------------------------------------------------

fn size_int(input: Input, dim: i64) -> Result<i64> {
    Ok(input.size(dim)? as i64)
}

fn size(input: Input) -> Result<Vec<i64>> {
    Ok(sizes_i64(&input))
}

fn stride(input: Input) -> Result<Vec<i64>> {
    Ok(input.strides().iter().map(|&s| s as i64).collect())
}

fn stride_int(input: Input, dim: i64) -> Result<i64> {
    let dim = ferrojit_tensor::wrap_dim(dim, input.dim())?;
    Ok(input.strides()[dim] as i64)
}

fn storage_offset(input: Input) -> Result<i64> {
    Ok(input.storage_offset() as i64)
}

fn element_size(input: Input) -> Result<i64> {
    Ok(input.dtype().item_size() as i64)
}

fn is_contiguous(input: Input) -> Result<bool> {
    Ok(input.is_contiguous())
}

/// `is_contiguous(memory_format=...)`: c10's test, which skips the strides of size-1 dims and
/// calls a tensor without elements contiguous.
fn is_contiguous_in_format(input: Input, memory_format: MemoryFormatArgument) -> Result<bool> {
    is_contiguous_as(&input, memory_format.0)
}

/// c10's contiguity test for a memory format: the strides of size-1 dims are skipped, and a
/// tensor without elements is contiguous.
pub(super) fn is_contiguous_as(tensor: &Tensor, format: MemoryFormat) -> Result<bool> {
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

fn dim(input: Input) -> Result<i64> {
    Ok(input.dim() as i64)
}

fn numel(input: Input) -> Result<i64> {
    Ok(input.numel() as i64)
}

fn len_tensor(input: Input) -> Result<i64> {
    match input.sizes().first() {
        Some(&first) => Ok(first as i64),
        None => Err(RuntimeError::Other("len() of a 0-d tensor".to_string())),
    }
}

fn is_floating_point(input: Input) -> Result<bool> {
    Ok(input.dtype().is_floating_point())
}

fn to_dtype_impl(tensor: &Tensor, dtype: Option<DType>, copy: bool) -> Tensor {
    let target = dtype.unwrap_or(tensor.dtype());
    if copy && target == tensor.dtype() {
        tensor.clone_tensor()
    } else {
        tensor.to_dtype(target)
    }
}

fn to_dtype(
    input: Input,
    dtype: DType,
    _non_blocking: Unread,
    copy: bool,
    _memory_format: Unread,
) -> Result<Tensor> {
    Ok(to_dtype_impl(&input, Some(dtype), copy))
}

/// `aten::_cast_<Type>(self, non_blocking)`: `self.to(dtype)` (PyTorch ≤ 1.4 printed
/// `x.float()` and friends this way).
fn cast_to(dtype: DType) -> impl Fn(Input, Unread) -> Result<Tensor> + Send + Sync + 'static {
    move |input: Input, _non_blocking: Unread| Ok(to_dtype_impl(&input, Some(dtype), false))
}

fn to_prim_dtype(
    input: Input,
    dtype: Option<DType>,
    _non_blocking: Unread,
    copy: bool,
) -> Result<Tensor> {
    Ok(to_dtype_impl(&input, dtype, copy))
}

fn to_prim_device(
    input: Input,
    _device: CpuDevice,
    dtype: Option<DType>,
    _non_blocking: Unread,
    copy: bool,
) -> Result<Tensor> {
    Ok(to_dtype_impl(&input, dtype, copy))
}

fn to_device(
    input: Input,
    _device: CpuDevice,
    dtype: DType,
    _non_blocking: Unread,
    copy: bool,
    _memory_format: Unread,
) -> Result<Tensor> {
    Ok(to_dtype_impl(&input, Some(dtype), copy))
}

/// `x.to(other)`: `other`'s dtype (and device, always the CPU here).
fn to_other(
    input: Input,
    other: Input,
    _non_blocking: Unread,
    copy: bool,
    _memory_format: Unread,
) -> Result<Tensor> {
    Ok(to_dtype_impl(&input, Some(other.dtype()), copy))
}

/// `x.to(dtype=..., device=...)` with keyword arguments.
#[allow(clippy::too_many_arguments)] // the schema's eight arguments, in order
fn to_dtype_layout(
    input: Input,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
    _non_blocking: Unread,
    copy: bool,
    _memory_format: Unread,
) -> Result<Tensor> {
    Ok(to_dtype_impl(&input, dtype, copy))
}

fn item(input: Input) -> Result<Scalar> {
    Ok(input.item()?)
}

fn int_tensor(input: Input) -> Result<i64> {
    Ok(input.item()?.to_i64())
}

fn float_tensor(input: Input) -> Result<f64> {
    Ok(input.item()?.to_f64())
}

fn bool_tensor(input: Input) -> Result<bool> {
    if input.numel() != 1 {
        let message = if input.numel() == 0 {
            "Boolean value of Tensor with no values is ambiguous"
        } else {
            "Boolean value of Tensor with more than one value is ambiguous"
        };
        return Err(RuntimeError::Other(message.to_string()));
    }
    Ok(input.item()?.to_bool())
}

/// A complex number gives a complex128 tensor, as c10's `scalar_to_tensor`.
fn num_to_tensor(value: IValue) -> Result<Tensor> {
    if let IValue::Complex(number) = value {
        return Ok(Tensor::from_vec(vec![number], &[])?);
    }
    let value = value.to_scalar()?;
    Ok(Tensor::scalar_tensor(value, value.dtype()))
}

fn device(_input: Input) -> Result<IValue> {
    Ok(IValue::from(Device::cpu()))
}

fn dtype(input: Input) -> Result<i64> {
    Ok(input.dtype().scalar_type_index())
}

fn requires_grad(input: TensorHandle) -> Result<bool> {
    Ok(input.cell.requires_grad())
}

/// `prim::is_cuda`, `is_sparse`, ...: false for every ferrojit tensor (dense, CPU).
fn false_for_tensor(_input: Input) -> Result<bool> {
    Ok(false)
}

// ----- factories -----------------------------------------------------------------------

fn sizes_from(sizes: &[i64]) -> Result<Vec<usize>> {
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

/// `zeros` and `ones`: a tensor of `size` filled with `fill`, of the default float dtype
/// unless one is given.
fn factory(
    fill: Scalar,
) -> impl Fn(Vec<i64>, Option<DType>, Unread, CpuDevice, Unread) -> Result<Tensor> + Send + Sync + 'static
{
    move |size: Vec<i64>,
          dtype: Option<DType>,
          _layout: Unread,
          _device: CpuDevice,
          _pin_memory: Unread| {
        let dtype = dtype.unwrap_or(DType::default_float());
        Ok(Tensor::full(&sizes_from(&size)?, fill, dtype)?)
    }
}

fn full(
    size: Vec<i64>,
    fill: Scalar,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    let dtype = dtype.unwrap_or(match fill {
        Scalar::Float(_) => DType::default_float(),
        other => other.dtype(),
    });
    Ok(Tensor::full(&sizes_from(&size)?, fill, dtype)?)
}

/// `zeros_like` and `ones_like`: `input`'s sizes and (unless one is given) dtype.
fn like_factory(
    fill: Scalar,
) -> impl Fn(Input, Option<DType>, Unread, CpuDevice, Unread, Unread) -> Result<Tensor>
       + Send
       + Sync
       + 'static {
    move |input: Input,
          dtype: Option<DType>,
          _layout: Unread,
          _device: CpuDevice,
          _pin_memory: Unread,
          _memory_format: Unread| {
        let dtype = dtype.unwrap_or(input.dtype());
        Ok(Tensor::full(input.sizes(), fill, dtype)?)
    }
}

fn arange_impl(start: Scalar, end: Scalar, step: Scalar, dtype: Option<DType>) -> Result<Tensor> {
    let inferred = if [start, end, step].iter().any(Scalar::is_floating_point) {
        DType::default_float()
    } else {
        DType::Int64
    };
    let dtype = dtype.unwrap_or(inferred);
    Ok(Tensor::arange(
        start.to_f64(),
        end.to_f64(),
        step.to_f64(),
        dtype,
    )?)
}

fn arange(
    end: Scalar,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    arange_impl(Scalar::Int(0), end, Scalar::Int(1), dtype)
}

fn arange_start(
    start: Scalar,
    end: Scalar,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    arange_impl(start, end, Scalar::Int(1), dtype)
}

fn arange_start_step(
    start: Scalar,
    end: Scalar,
    step: Scalar,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    arange_impl(start, end, step, dtype)
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

/// `tensor(t[] data, ...)` and `as_tensor.list`: a (nested) list literal as a tensor of the
/// dtype of its first element (or, when empty, of its element type) unless one is given.
fn tensor_from_list_impl(data: &IValue, dtype: Option<DType>) -> Result<Tensor> {
    let mut shape = Vec::new();
    let mut values = Vec::new();
    flatten_data(data, 0, &mut shape, &mut values)?;
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
    build_tensor(&values, &shape, dtype.unwrap_or(inferred))
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

/// `tensor.float`/`.int`/`.bool` and `as_tensor` of a number: a 0-d tensor of the number's
/// dtype (a Python float takes the default float dtype) unless one is given.
fn tensor_from_number_impl(value: Scalar, dtype: Option<DType>) -> Result<Tensor> {
    let inferred = match value {
        Scalar::Float(_) => DType::default_float(),
        other => other.dtype(),
    };
    build_tensor(&[value], &[], dtype.unwrap_or(inferred))
}

/// `requires_grad` is not read: ferrojit records no gradients.
fn tensor_from_list(
    data: IValue,
    dtype: Option<DType>,
    _device: CpuDevice,
    _requires_grad: Unread,
) -> Result<Tensor> {
    tensor_from_list_impl(&data, dtype)
}

/// `requires_grad` is not read: ferrojit records no gradients.
fn tensor_from_number(
    value: Scalar,
    dtype: Option<DType>,
    _device: CpuDevice,
    _requires_grad: Unread,
) -> Result<Tensor> {
    tensor_from_number_impl(value, dtype)
}

fn as_tensor_list(data: IValue, dtype: Option<DType>, _device: CpuDevice) -> Result<Tensor> {
    tensor_from_list_impl(&data, dtype)
}

fn as_tensor_number(value: Scalar, dtype: Option<DType>, _device: CpuDevice) -> Result<Tensor> {
    tensor_from_number_impl(value, dtype)
}

/// `as_tensor(Tensor data, dtype?, device?)`: the same tensor when nothing changes,
/// otherwise a converted copy.
fn as_tensor_tensor(data: Input, dtype: Option<DType>, _device: CpuDevice) -> Result<Tensor> {
    Ok(to_dtype_impl(&data, dtype, false))
}

/// `unique_dim`: the sorted unique slices, with the inverse and the counts always computed;
/// the three flags are not read.
fn unique_dim(
    input: Input,
    dim: i64,
    _sorted: Unread,
    _return_inverse: Unread,
    _return_counts: Unread,
) -> Result<(Tensor, Tensor, Tensor)> {
    Ok(input.unique_dim(dim)?)
}

fn cat(tensors: Vec<Tensor>, dim: i64) -> Result<Tensor> {
    Ok(ferrojit_tensor::cat(&tensors, dim)?)
}

fn stack_tensors(tensors: Vec<Tensor>, dim: i64) -> Result<Tensor> {
    Ok(ferrojit_tensor::stack(&tensors, dim)?)
}

// ----- in-place writes -------------------------------------------------------------------
// These have no functional form here to derive them from (`copy_`, `fill_`, `zero_` write
// `self`'s existing storage, as ATen's do), so they bind the tensor library's in-place
// kernels with `typed_in_place`.

fn copy_(target: Input, source: Input, _non_blocking: Unread) -> Result<Tensor> {
    super::jit_builtin_ops::check_copy_broadcast(&target, &source)?;
    Ok(target.copy_(&source)?)
}

fn fill_scalar_(target: Input, value: Scalar) -> Result<Tensor> {
    Ok(target.fill_(&value)?)
}

fn fill_tensor_(target: Input, value: Input) -> Result<Tensor> {
    if value.dim() != 0 {
        return Err(RuntimeError::Other(format!(
            "fill_ only supports 0-dimension value tensor but got tensor with {} dimensions.",
            value.dim()
        )));
    }
    Ok(target.fill_(&value.item()?)?)
}

/// `fill.Scalar`: a copy of `self` (its dtype and shape) holding `value` everywhere.
fn fill_scalar(input: Input, value: Scalar) -> Result<Tensor> {
    let copy = input.clone_tensor();
    copy.fill_(&value)?;
    Ok(copy)
}

/// `fill.Tensor`: as `fill.Scalar`, from a 0-dimensional tensor.
fn fill_tensor(input: Input, value: Input) -> Result<Tensor> {
    let copy = Arc::new(input.clone_tensor());
    fill_tensor_(copy.clone(), value)?;
    Ok(Arc::unwrap_or_clone(copy))
}

/// `select_scatter`: a copy of `self` whose `index`-th slice along `dim` is `src`, which must
/// have the slice's shape exactly.
fn select_scatter(input: Input, src: Input, dim: i64, index: i64) -> Result<Tensor> {
    let copy = input.clone_tensor();
    let slice = copy.select(dim, index)?;
    if slice.sizes() != src.sizes() {
        let text = |sizes: &[usize]| {
            sizes
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(RuntimeError::Other(format!(
            "expected src to have a size equal to the slice of self. src size = [{}], slice size = [{}]",
            text(src.sizes()),
            text(slice.sizes())
        )));
    }
    slice.copy_(&src)?;
    Ok(copy)
}

fn zero_(target: Input) -> Result<Tensor> {
    Ok(target.zero_()?)
}

/// Every operator of this file, in declaration order (the former stack-adapter table first,
/// then the matrix products, views and reductions, as they were registered before). In-place
/// geometry changes (`t_`, `unsqueeze_`, `resize_`, `set_`) return the changed tensor, and the
/// registry's alias write-back makes it `self`'s tensor for every handle.
#[rustfmt::skip]
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", softmax),
        typed("aten::resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor(a!)", resize),
        typed("aten::resize_as_(Tensor(a!) self, Tensor the_template, *, MemoryFormat? memory_format=None) -> Tensor(a!)", resize_as),
        typed("aten::set_.source_Tensor(Tensor(a!) self, Tensor source) -> Tensor(a!)", set_to_tensor),
        typed("aten::requires_grad_(Tensor(a!) self, bool requires_grad=True) -> Tensor(a!)", set_requires_grad),
        typed("aten::contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)", contiguous),
        typed("aten::size.int(Tensor self, int dim) -> int", size_int),
        typed("aten::size(Tensor self) -> int[]", size),
        typed("aten::stride(Tensor self) -> int[]", stride),
        typed("aten::stride.int(Tensor self, int dim) -> int", stride_int),
        typed("aten::storage_offset(Tensor self) -> int", storage_offset),
        typed("aten::element_size(Tensor self) -> int", element_size),
        typed("aten::is_contiguous(Tensor self) -> bool", is_contiguous),
        typed("aten::is_contiguous.memory_format(Tensor self, MemoryFormat memory_format) -> bool", is_contiguous_in_format),
        typed("aten::dim(Tensor self) -> int", dim),
        typed("aten::numel(Tensor self) -> int", numel),
        typed("aten::len.Tensor(Tensor t) -> int", len_tensor),
        typed("aten::is_floating_point(Tensor self) -> bool", is_floating_point),
        typed("aten::to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)", to_dtype),
        typed("aten::to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)", to_device),
        typed("aten::to.prim_Device(Tensor(a) self, Device? device, int? dtype=None, bool non_blocking=False, bool copy=False) -> Tensor(a|b)", to_prim_device),
        typed("aten::to.prim_dtype(Tensor(a) self, int? dtype=None, bool non_blocking=False, bool copy=False) -> Tensor(a|b)", to_prim_dtype),
        typed("aten::to.other(Tensor(a) self, Tensor other, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)", to_other),
        typed("aten::to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)", to_dtype_layout),
        typed("aten::_cast_Byte(Tensor self, bool non_blocking=False) -> Tensor", cast_to(DType::UInt8)),
        typed("aten::_cast_Char(Tensor self, bool non_blocking=False) -> Tensor", cast_to(DType::Int8)),
        typed("aten::_cast_Short(Tensor self, bool non_blocking=False) -> Tensor", cast_to(DType::Int16)),
        typed("aten::_cast_Int(Tensor self, bool non_blocking=False) -> Tensor", cast_to(DType::Int32)),
        typed("aten::_cast_Long(Tensor self, bool non_blocking=False) -> Tensor", cast_to(DType::Int64)),
        typed("aten::_cast_Half(Tensor self, bool non_blocking=False) -> Tensor", cast_to(DType::Float16)),
        typed("aten::_cast_Float(Tensor self, bool non_blocking=False) -> Tensor", cast_to(DType::Float32)),
        typed("aten::_cast_Double(Tensor self, bool non_blocking=False) -> Tensor", cast_to(DType::Float64)),
        typed("aten::item(Tensor self) -> Scalar", item),
        typed("aten::Int.Tensor(Tensor a) -> int", int_tensor),
        typed("aten::Float.Tensor(Tensor a) -> float", float_tensor),
        typed("aten::Bool.Tensor(Tensor a) -> bool", bool_tensor),
        typed("prim::NumToTensor.Scalar(Scalar a) -> Tensor", num_to_tensor),
        typed("prim::device(Tensor a) -> Device", device),
        typed("prim::dtype(Tensor a) -> int", dtype),
        typed("prim::requires_grad(Tensor a) -> bool", requires_grad),
        typed("prim::is_cuda(Tensor a) -> bool", false_for_tensor),
        typed("prim::is_sparse(Tensor a) -> bool", false_for_tensor),
        typed("prim::is_quantized(Tensor a) -> bool", false_for_tensor),
        typed("prim::is_meta(Tensor a) -> bool", false_for_tensor),
        typed("prim::is_mkldnn(Tensor a) -> bool", false_for_tensor),
        typed("aten::zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", factory(Scalar::Int(0))),
        typed("aten::ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", factory(Scalar::Int(1))),
        typed("aten::full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", full),
        typed("aten::zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", like_factory(Scalar::Int(0))),
        typed("aten::ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", like_factory(Scalar::Int(1))),
        typed("aten::arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", arange),
        typed("aten::arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", arange_start),
        typed("aten::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", arange_start_step),
        typed("aten::tensor.float(float t, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False) -> Tensor", tensor_from_number),
        typed("aten::tensor.int(int t, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False) -> Tensor", tensor_from_number),
        typed("aten::tensor.bool(bool t, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False) -> Tensor", tensor_from_number),
        typed("aten::tensor(t[] data, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False) -> Tensor", tensor_from_list),
        typed("aten::unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)", unique_dim),
        typed("aten::as_tensor(Tensor(a) data, *, ScalarType? dtype=None, Device? device=None) -> Tensor(a|b)", as_tensor_tensor),
        typed("aten::as_tensor.float(float t, *, ScalarType? dtype=None, Device? device=None) -> Tensor", as_tensor_number),
        typed("aten::as_tensor.int(int t, *, ScalarType? dtype=None, Device? device=None) -> Tensor", as_tensor_number),
        typed("aten::as_tensor.bool(bool t, *, ScalarType? dtype=None, Device? device=None) -> Tensor", as_tensor_number),
        typed("aten::as_tensor.list(t[] data, *, ScalarType? dtype=None, Device? device=None) -> Tensor", as_tensor_list),
        typed("aten::cat(Tensor[] tensors, int dim=0) -> Tensor", cat),
        typed("aten::stack(Tensor[] tensors, int dim=0) -> Tensor", stack_tensors),
        typed_in_place("aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)", copy_),
        typed_in_place("aten::fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)", fill_scalar_),
        typed_in_place("aten::fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)", fill_tensor_),
        typed("aten::fill.Scalar(Tensor self, Scalar value) -> Tensor", fill_scalar),
        out_from_functional("aten::fill.Scalar_out(Tensor self, Scalar value, *, Tensor(a!) out) -> Tensor(a!)", fill_scalar),
        typed("aten::fill.Tensor(Tensor self, Tensor value) -> Tensor", fill_tensor),
        out_from_functional("aten::fill.Tensor_out(Tensor self, Tensor value, *, Tensor(a!) out) -> Tensor(a!)", fill_tensor),
        typed("aten::select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor", select_scatter),
        out_from_functional("aten::select_scatter.out(Tensor self, Tensor src, int dim, SymInt index, *, Tensor(a!) out) -> Tensor(a!)", select_scatter),
        typed_in_place("aten::zero_(Tensor(a!) self) -> Tensor(a!)", zero_),
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
        typed("aten::detach_(Tensor(a!) self) -> Tensor(a!)", detach_in_place),
        typed("aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", clone),
        typed("aten::detach(Tensor(a) self) -> Tensor(a)", detach),
        typed("aten::max(Tensor self) -> Tensor", max_all),
        typed("aten::min(Tensor self) -> Tensor", min_all),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autograd::GradModeGuard;
    use crate::registry::{OperatorRegistry, Stack};

    /// Runs one builtin operator and returns its single result.
    fn call(registry: &OperatorRegistry, full_name: &str, arguments: Vec<IValue>) -> IValue {
        let operator = registry.lookup(full_name).expect("a builtin operator");
        let mut stack: Stack = arguments;
        (operator.kernel)(&mut stack).expect("the operator runs");
        assert_eq!(stack.len(), 1);
        stack.remove(0)
    }

    fn requires_grad_of(registry: &OperatorRegistry, value: &IValue) -> bool {
        matches!(
            call(registry, "prim::requires_grad", vec![value.clone()]),
            IValue::Bool(true)
        )
    }

    #[test]
    fn requires_grad_stays_with_the_handle_through_in_place_ops() {
        let registry = OperatorRegistry::try_with_builtins().unwrap();
        let x = IValue::from(Tensor::ones(&[2, 3], DType::Float32).unwrap());
        let other_handle = x.clone();
        let returned = call(
            &registry,
            "aten::requires_grad_",
            vec![x.clone(), IValue::Bool(true)],
        );
        assert!(requires_grad_of(&registry, &returned));
        {
            // PyTorch allows in-place ops on a leaf that requires grad only without grad mode.
            let _no_grad = GradModeGuard::new(false);
            // `unsqueeze_` replaces the handle's tensor; `mul_` writes into it.
            call(
                &registry,
                "aten::unsqueeze_",
                vec![x.clone(), IValue::Int(0)],
            );
            call(
                &registry,
                "aten::mul_.Scalar",
                vec![x.clone(), IValue::Int(2)],
            );
        }
        assert_eq!(other_handle.to_tensor().unwrap().sizes(), &[1, 2, 3]);
        assert!(requires_grad_of(&registry, &other_handle));
        assert!(other_handle.to_string().ends_with("requires_grad=True)"));

        // `detach` is a new handle that does not require grad; `x` still does.
        let detached = call(&registry, "aten::detach", vec![x.clone()]);
        assert!(!requires_grad_of(&registry, &detached));
        assert!(requires_grad_of(&registry, &x));
        // `detach_` clears the flag of the handle itself, for every copy of it.
        call(&registry, "aten::detach_", vec![x.clone()]);
        assert!(!requires_grad_of(&registry, &other_handle));
        assert!(!other_handle.to_string().contains("requires_grad"));
    }
}
