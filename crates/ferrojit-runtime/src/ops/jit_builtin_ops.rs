//! TorchScript's own builtins that are not ATen native functions: the tensor properties
//! (`x.T`, `x.mT`, `x.H`, `x.mH`, `x.data`, `x.is_cpu`, `x.layout`, `x.itemsize`, ...), the
//! `.a` spellings of the matrix views, `cpu()`, the list form of `split`, the scalar forms
//! of `copy_`, shape helpers (`broadcast_shapes`, `Size`, `sym_size`), autocast queries, and
//! the legacy `__interpolate`/`__upsample*` operators that archives written by PyTorch 1.x
//! still call. PyTorch registers these in torch/csrc/jit/runtime/register_prim_ops*.cpp.

use std::collections::BTreeSet;
use std::sync::Arc;

use ferrojit_tensor::ops::nn::pool;
use ferrojit_tensor::ops::nn::resample::{upsample, InterpolateMode};
use ferrojit_tensor::{DType, Scalar, Tensor};

use super::binding::{typed, typed_in_place};
use crate::error::{Result, RuntimeError};
use crate::ivalue::{Device, IValue};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// The deprecation warnings already printed: PyTorch gives each once per process
/// (`TORCH_WARN_ONCE`), so a loop over 0-D tensors does not flood stderr.
static WARNED: std::sync::Mutex<BTreeSet<String>> = std::sync::Mutex::new(BTreeSet::new());

/// Writes the deprecation text PyTorch gives for these views to stderr, once per process;
/// says whether it printed.
fn deprecation_warning(message: &str) -> bool {
    // A poisoned lock only means another thread panicked while inserting; the set is fine.
    let mut warned = WARNED.lock().unwrap_or_else(|poison| poison.into_inner());
    let first = warned.insert(message.to_string());
    if first {
        eprintln!("UserWarning: {message}");
    }
    first
}

/// `x.T` (`aten::numpy_T`): every dimension reversed.
fn numpy_transpose(input: Input) -> Result<Tensor> {
    let rank = input.dim();
    if rank == 0 {
        deprecation_warning(
            "Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.",
        );
    } else if rank != 2 {
        deprecation_warning(
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is \
             deprecated and it will throw an error in a future release. Consider `x.mT` to \
             transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to \
             reverse the dimensions of a tensor.",
        );
    }
    let reversed: Vec<i64> = (0..rank as i64).rev().collect();
    Ok(input.permute(&reversed)?)
}

/// The conjugate of a complex tensor (a real tensor is its own conjugate).
fn conjugated(tensor: Tensor) -> Result<Tensor> {
    if tensor.dtype().is_complex() {
        Ok(tensor.conj()?)
    } else {
        Ok(tensor)
    }
}

/// `x.H` (`aten::matrix_H`): the conjugate transpose of a matrix.
fn matrix_conjugate_transpose(input: Input) -> Result<Tensor> {
    match input.dim() {
        0 => {
            deprecation_warning("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().");
            conjugated(Tensor::clone(&input))
        }
        2 => conjugated(input.transpose(0, 1)?),
        rank => {
            let hint = if rank > 2 {
                " For batches of matrices, consider using tensor.mH"
            } else {
                ""
            };
            Err(RuntimeError::Other(format!(
                "tensor.H is only supported on matrices (2-D tensors). Got {rank}-D tensor.{hint}"
            )))
        }
    }
}

/// The matrix views of batches (`mT`, `mH`, `adjoint`): 0-D is a deprecated identity, 1-D an
/// error naming the view as PyTorch does.
fn batched_matrix_view(input: &Tensor, spelling: &str, conjugate: bool) -> Result<Tensor> {
    match input.dim() {
        0 => {
            let advice = if conjugate {
                "Consider using x.conj()."
            } else {
                "This function is the identity in these cases."
            };
            let subject = if spelling == "adjoint()" {
                "adjoint()".to_string()
            } else {
                format!("Tensor.{spelling}")
            };
            deprecation_warning(&format!("{subject} is deprecated on 0-D tensors. {advice}"));
            let same = input.clone();
            if conjugate {
                conjugated(same)
            } else {
                Ok(same)
            }
        }
        1 => Err(RuntimeError::Other(format!(
            "tensor.{spelling} is only supported on matrices or batches of matrices. Got 1-D tensor."
        ))),
        _ => {
            let transposed = input.transpose(-2, -1)?;
            if conjugate {
                conjugated(transposed)
            } else {
                Ok(transposed)
            }
        }
    }
}

fn matrix_transpose(input: Input) -> Result<Tensor> {
    batched_matrix_view(&input, "mT", false)
}

fn matrix_adjoint(input: Input) -> Result<Tensor> {
    batched_matrix_view(&input, "mH", true)
}

fn adjoint(input: Input) -> Result<Tensor> {
    batched_matrix_view(&input, "adjoint()", true)
}

/// `x.data`: the same tensor, detached from autograd (a new handle that does not require
/// grad), as `detach` gives.
fn tensor_data(input: Input) -> Result<Tensor> {
    Ok(Tensor::clone(&input))
}

/// `x.is_cpu`: every ferrojit tensor lives in host memory.
fn always_true(_input: Input) -> Result<bool> {
    Ok(true)
}

/// `x.is_xpu`, `x.is_mps`, ...: devices ferrojit never holds tensors on.
fn always_false(_input: Input) -> Result<bool> {
    Ok(false)
}

/// `x.layout`: `torch.strided` (0), the only layout ferrojit tensors have.
fn strided_layout(_input: Input) -> Result<i64> {
    Ok(0)
}

/// `x.name`: ferrojit has no named tensors, so every name is None.
fn tensor_name(_input: Input) -> Result<IValue> {
    Ok(IValue::None)
}

fn item_size(input: Input) -> Result<i64> {
    Ok(input.dtype().item_size() as i64)
}

/// `x.nbytes`: the elements' bytes (not the storage's), as PyTorch's `numel * itemsize`.
fn byte_count(input: Input) -> Result<i64> {
    Ok((input.numel() * input.dtype().item_size()) as i64)
}

fn device_index(device: Device) -> Result<IValue> {
    Ok(match device.index {
        Some(index) => IValue::Int(index),
        None => IValue::None,
    })
}

/// `torch.device(type, index)`.
fn device_with_index(device_type: String, index: i64) -> Result<IValue> {
    let device = Device::parse(&device_type)?;
    if device.index.is_some() {
        return Err(RuntimeError::Other(format!(
            "type (string) must not include an index because index was passed explicitly: {device_type}"
        )));
    }
    if index < 0 {
        return Err(RuntimeError::Other(format!(
            "Device index must not be negative, got {index}"
        )));
    }
    Ok(IValue::from(Device {
        device_type: device.device_type,
        index: Some(index),
    }))
}

/// `x.cpu()`: the tensor itself (the very handle), since it is already in host memory.
fn to_cpu(input: IValue) -> Result<IValue> {
    Ok(input)
}

/// `to(non_blocking, copy)` with neither dtype nor device: the tensor itself unless a copy
/// is asked for.
fn to_same(input: IValue, _non_blocking: bool, copy: bool) -> Result<IValue> {
    if copy {
        let tensor = input.to_tensor()?;
        return Ok(IValue::from(tensor.clone_tensor()));
    }
    Ok(input)
}

/// The list form `aten::split(self, split_sizes, dim)` that TorchScript registers besides
/// `split.sizes`.
fn split_by_sizes(input: Input, split_sizes: Vec<i64>, dim: i64) -> Result<Vec<Tensor>> {
    Ok(input.split_with_sizes(&split_sizes, dim)?)
}

fn is_scripting() -> Result<bool> {
    Ok(true)
}

/// `has_torch_function(...)`: no TorchScript value overrides `__torch_function__`.
fn has_torch_function(stack: &mut crate::registry::Stack) -> Result<()> {
    super::pop_varargs(stack)?;
    stack.push(IValue::Bool(false));
    Ok(())
}

/// `torch.broadcast_shapes(a, b)` over sizes as given (PyTorch's `infer_size`, which
/// names the sizes as written, negative ones included).
fn broadcast_shapes(a: Vec<i64>, b: Vec<i64>) -> Result<Vec<i64>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0i64; rank];
    for (position, slot) in out.iter_mut().enumerate().rev() {
        let from_end = rank - 1 - position;
        let size_a = if from_end < a.len() {
            a[a.len() - 1 - from_end]
        } else {
            1
        };
        let size_b = if from_end < b.len() {
            b[b.len() - 1 - from_end]
        } else {
            1
        };
        *slot = if size_a == size_b || size_b == 1 {
            size_a
        } else if size_a == 1 {
            size_b
        } else {
            // PyTorch's builtin calls `infer_size(b, a)`, so its message names `b` first.
            return Err(RuntimeError::Other(format!(
                "The size of tensor a ({size_b}) must match the size of tensor b ({size_a}) at \
                 non-singleton dimension {position}"
            )));
        };
    }
    Ok(out)
}

/// `torch.Size(sizes)`: TorchScript's `Size` is a list of ints.
fn size_list(sizes: Vec<i64>) -> Result<Vec<i64>> {
    Ok(sizes)
}

fn symbolic_sizes(input: Input) -> Result<Vec<i64>> {
    Ok(input.sizes().iter().map(|&size| size as i64).collect())
}

fn symbolic_strides(input: Input) -> Result<Vec<i64>> {
    Ok(input
        .strides()
        .iter()
        .map(|&stride| stride as i64)
        .collect())
}

/// `aten::is_non_overlapping_and_dense`: the elements fill a contiguous block with no
/// element seen twice, in some order of the dimensions (c10's test: sort the dimensions by
/// stride, then each stride must be the product of the sizes inside it).
fn is_non_overlapping_and_dense(input: Input) -> Result<bool> {
    let sizes = input.sizes();
    let strides = input.strides();
    if sizes.len() == 1 {
        return Ok(sizes[0] < 2 || strides[0] == 1);
    }
    // Dimensions of size 0 or 1 say nothing about the layout: they sort last and are skipped.
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&dim| (sizes[dim] < 2, strides[dim]));
    let mut expected = 1usize;
    for dim in order {
        if sizes[dim] < 2 {
            continue;
        }
        if strides[dim] != expected {
            return Ok(false);
        }
        expected = expected.saturating_mul(sizes[dim]);
    }
    Ok(true)
}

/// `aten::is_strides_like_format(self, memory_format)`: the strides order the dimensions as
/// the format does (channels-last: C innermost), whatever the sizes.
fn is_strides_like_format(input: Input, memory_format: i64) -> Result<bool> {
    let sizes = input.sizes();
    let strides = input.strides();
    // 0 contiguous, 1 preserve, 2 channels_last, 3 channels_last_3d (c10::MemoryFormat).
    let inner_to_outer: &[usize] = match (memory_format, sizes.len()) {
        (2, 4) => &[1, 3, 2, 0],
        (3, 5) => &[1, 4, 3, 2, 0],
        (2, _) | (3, _) | (0, _) | (1, _) => return Ok(false),
        (other, _) => {
            return Err(RuntimeError::Other(format!(
                "unknown memory format {other}"
            )))
        }
    };
    // c10's is_channels_last_strides_{2d,3d}_s4: walking inner to outer, the strides must not
    // decrease, and a size-1 dimension must not be the only thing that orders two strides.
    let mut minimum = 0usize;
    if strides[1] == 0 {
        return Ok(false);
    }
    for &dim in inner_to_outer {
        if sizes[dim] == 0 {
            return Ok(false);
        }
        if strides[dim] < minimum {
            return Ok(false);
        }
        if dim == 0 && minimum == strides[1] {
            return Ok(false);
        }
        minimum = strides[dim];
        if sizes[dim] > 1 {
            minimum = minimum.saturating_mul(sizes[dim]);
        }
    }
    Ok(true)
}

/// `torch.get_autocast_dtype(device_type)`: autocast's default lower precision per device
/// (bfloat16 on the CPU, float16 elsewhere), as a ScalarType number.
fn get_autocast_dtype(device_type: String) -> Result<i64> {
    let device = Device::parse(&device_type)?;
    let dtype = if device.device_type == "cpu" {
        DType::BFloat16
    } else {
        DType::Float16
    };
    Ok(dtype.scalar_type_index())
}

/// ferrojit never runs under autocast.
fn is_autocast_cpu_enabled() -> Result<bool> {
    Ok(false)
}

/// PyTorch's `copy_` broadcasts the source to the target's shape through TensorIterator,
/// whose refusal names the two sizes as `a` (the target) and `b` (the source).
pub(crate) fn check_copy_broadcast(target: &Tensor, source: &Tensor) -> Result<()> {
    let (target_sizes, source_sizes) = (target.sizes(), source.sizes());
    let rank = target_sizes.len().max(source_sizes.len());
    for position in (0..rank).rev() {
        let from_end = rank - 1 - position;
        let size_a = target_sizes
            .len()
            .checked_sub(from_end + 1)
            .map_or(1, |index| target_sizes[index]);
        let size_b = source_sizes
            .len()
            .checked_sub(from_end + 1)
            .map_or(1, |index| source_sizes[index]);
        if size_a != size_b && size_a != 1 && size_b != 1 {
            return Err(RuntimeError::Other(format!(
                "The size of tensor a ({size_a}) must match the size of tensor b ({size_b}) at \
                 non-singleton dimension {position}"
            )));
        }
    }
    Ok(())
}

fn copy_from_tensor(target: Input, source: Input) -> Result<Tensor> {
    check_copy_broadcast(&target, &source)?;
    Ok(target.copy_(&source)?)
}

/// `copy_.int` / `copy_.float`: every element becomes the number (converted to the
/// target's dtype, as `fill_`).
fn copy_from_int(target: Input, value: i64) -> Result<Tensor> {
    Ok(target.fill_(&Scalar::Int(value))?)
}

fn copy_from_float(target: Input, value: f64) -> Result<Tensor> {
    Ok(target.fill_(&Scalar::Float(value))?)
}

fn index_put_impl(
    input: Input,
    indices: Vec<Tensor>,
    values: Input,
    accumulate: bool,
    _unsafe: bool,
) -> Result<Tensor> {
    let indices: Vec<Option<Tensor>> = indices.into_iter().map(Some).collect();
    Ok(input.index_put_(&indices, &values, accumulate)?)
}

/// The size argument of the legacy interpolation operators: one int for every spatial
/// dimension, or a list.
enum LegacySize {
    Absent,
    Each(i64),
    List(Vec<i64>),
}

impl LegacySize {
    fn read(value: &IValue) -> Result<LegacySize> {
        Ok(match value {
            IValue::None => LegacySize::Absent,
            IValue::Int(size) => LegacySize::Each(*size),
            other => LegacySize::List(other.to_int_vec()?),
        })
    }
}

/// The scale argument: one number for every spatial dimension, or a list (ints in the
/// `__upsample*` forms, floats in `__interpolate`).
enum LegacyScale {
    Absent,
    Each(f64),
    List(Vec<f64>),
}

impl LegacyScale {
    fn read(value: &IValue) -> Result<LegacyScale> {
        Ok(match value {
            IValue::None => LegacyScale::Absent,
            IValue::Int(scale) => LegacyScale::Each(*scale as f64),
            IValue::Double(scale) => LegacyScale::Each(*scale),
            other => match other.to_int_vec() {
                Ok(ints) => LegacyScale::List(ints.iter().map(|&s| s as f64).collect()),
                Err(_) => LegacyScale::List(other.to_double_vec()?),
            },
        })
    }

    fn per_dimension(&self, spatial: usize) -> Result<Option<Vec<f64>>> {
        match self {
            LegacyScale::Absent => Ok(None),
            LegacyScale::Each(scale) => Ok(Some(vec![*scale; spatial])),
            LegacyScale::List(scales) if scales.len() == spatial => Ok(Some(scales.clone())),
            // PyTorch reads past the end of a short list (undefined behaviour); refuse it.
            LegacyScale::List(scales) => Err(RuntimeError::Other(format!(
                "scale_factor shape must match input shape. Input is {spatial}D, scale_factor \
                 size is {}",
                scales.len()
            ))),
        }
    }
}

/// The output size of the legacy operators (PyTorch's `_output_size`): the size as given,
/// else `floor(input size * scale)` per spatial dimension.
fn legacy_output_size(
    input: &Tensor,
    spatial: usize,
    size: &LegacySize,
    scales: &Option<Vec<f64>>,
) -> Result<Vec<i64>> {
    match size {
        LegacySize::Each(size) => return Ok(vec![*size; spatial]),
        LegacySize::List(sizes) => {
            if sizes.len() != spatial {
                return Err(RuntimeError::Other(format!(
                    "It is expected output_size equals to {spatial}, but got size {}",
                    sizes.len()
                )));
            }
            return Ok(sizes.clone());
        }
        LegacySize::Absent => {}
    }
    let Some(scales) = scales else {
        return Err(RuntimeError::Other(
            "either size or scale_factor should be defined".to_string(),
        ));
    };
    Ok((0..spatial)
        .map(|k| (input.sizes()[k + 2] as f64 * scales[k]).floor() as i64)
        .collect())
}

fn non_negative_sizes(sizes: &[i64]) -> Result<Vec<usize>> {
    sizes
        .iter()
        .map(|&size| {
            usize::try_from(size).map_err(|_| {
                RuntimeError::Other(format!("output size must not be negative, got {sizes:?}"))
            })
        })
        .collect()
}

/// PyTorch 1.x's `interpolate` as a TorchScript builtin: picks the upsampling kernel (or
/// adaptive average pooling for `area`) from the mode and the input's rank.
fn legacy_interpolate(
    input: &Tensor,
    size: &LegacySize,
    scale: &LegacyScale,
    mode: &str,
    align_corners: Option<bool>,
    recompute_scale_factor: Option<bool>,
    antialias: bool,
) -> Result<Tensor> {
    let align_corners = if mode == "nearest" || mode == "area" {
        if align_corners.is_some() {
            return Err(RuntimeError::Other(
                "align_corners option can only be set with the interpolating modes: linear | \
                 bilinear | bicubic | trilinear"
                    .to_string(),
            ));
        }
        false
    } else {
        align_corners.unwrap_or(false)
    };
    if antialias {
        return Err(RuntimeError::Other(
            "Antialias is not yet supported".to_string(),
        ));
    }
    let rank = input.dim();
    let unsupported = || {
        RuntimeError::Other(format!(
            "Input Error: Only 3D, 4D and 5D input Tensors supported (got {rank}D) for the \
             modes: nearest | linear | bilinear | trilinear (got {mode}) "
        ))
    };
    let wrong_rank = |needs: usize, name: &str| {
        RuntimeError::Other(format!(
            "Got {rank}D input, but {name} mode needs {needs}D input"
        ))
    };
    if !(3..=5).contains(&rank) {
        return Err(unsupported());
    }
    let spatial = rank - 2;
    let kernel_mode = match (mode, rank) {
        ("nearest", _) | ("area", _) => InterpolateMode::Nearest,
        ("linear", 3) | ("bilinear", 4) | ("trilinear", 5) => InterpolateMode::Linear,
        ("bicubic", 4) => InterpolateMode::Cubic,
        ("linear", _) => return Err(wrong_rank(3, "linear")),
        ("bilinear", _) => return Err(wrong_rank(4, "bilinear")),
        ("bicubic", _) => return Err(wrong_rank(4, "bicubic")),
        ("trilinear", _) => return Err(wrong_rank(5, "trilinear")),
        _ => return Err(unsupported()),
    };
    let scales = scale.per_dimension(spatial)?;
    let output_size = legacy_output_size(input, spatial, size, &scales)?;
    if mode == "area" {
        return Ok(pool::adaptive_pool(input, spatial, &output_size, false)?.0);
    }
    // A scale reaches the kernel only when the caller asked not to recompute it (PyTorch
    // passes -1, "no scale", otherwise); with it the kernel maps pixels by the scale itself.
    let kernel_scales: Vec<Option<f64>> = match (&scales, recompute_scale_factor) {
        (Some(scales), Some(false)) => scales.iter().map(|&s| Some(s)).collect(),
        _ => vec![None; spatial],
    };
    let output_size = non_negative_sizes(&output_size)?;
    Ok(upsample(
        input,
        &output_size,
        &kernel_scales,
        kernel_mode,
        align_corners,
    )?)
}

fn optional_bool(value: &IValue) -> Result<Option<bool>> {
    match value {
        IValue::None => Ok(None),
        other => Ok(Some(other.to_bool()?)),
    }
}

/// `aten::__interpolate(input, size, scale_factor, mode, align_corners,
/// recompute_scale_factor, antialias)`, every overload.
fn interpolate_builtin(
    input: Input,
    size: IValue,
    scale_factor: IValue,
    mode: String,
    align_corners: IValue,
    recompute_scale_factor: IValue,
    antialias: bool,
) -> Result<Tensor> {
    legacy_interpolate(
        &input,
        &LegacySize::read(&size)?,
        &LegacyScale::read(&scale_factor)?,
        &mode,
        optional_bool(&align_corners)?,
        optional_bool(&recompute_scale_factor)?,
        antialias,
    )
}

/// `aten::__upsample_nearest(input, size, scale_factor)`.
fn upsample_nearest_builtin(input: Input, size: IValue, scale_factor: IValue) -> Result<Tensor> {
    legacy_interpolate(
        &input,
        &LegacySize::read(&size)?,
        &LegacyScale::read(&scale_factor)?,
        "nearest",
        None,
        None,
        false,
    )
}

/// `aten::__upsample(input, size, scale_factor, mode, align_corners)`.
fn upsample_builtin(
    input: Input,
    size: IValue,
    scale_factor: IValue,
    mode: String,
    align_corners: IValue,
) -> Result<Tensor> {
    legacy_interpolate(
        &input,
        &LegacySize::read(&size)?,
        &LegacyScale::read(&scale_factor)?,
        &mode,
        optional_bool(&align_corners)?,
        None,
        false,
    )
}

/// `aten::__upsample_bilinear(input, size, scale_factor)`: bilinear with corners aligned,
/// as `F.upsample_bilinear` always was.
fn upsample_bilinear_builtin(input: Input, size: IValue, scale_factor: IValue) -> Result<Tensor> {
    legacy_interpolate(
        &input,
        &LegacySize::read(&size)?,
        &LegacyScale::read(&scale_factor)?,
        "bilinear",
        Some(true),
        None,
        false,
    )
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        // Tensor properties.
        typed("aten::numpy_T(Tensor(a) self) -> Tensor(a)", numpy_transpose),
        typed("aten::numpy_T.a(Tensor(a) self) -> Tensor(a)", numpy_transpose),
        typed("aten::matrix_H(Tensor(a) self) -> Tensor(a)", matrix_conjugate_transpose),
        typed("aten::matrix_H.a(Tensor(a) self) -> Tensor(a)", matrix_conjugate_transpose),
        typed("aten::mT(Tensor(a) self) -> Tensor(a)", matrix_transpose),
        typed("aten::mT.a(Tensor(a) self) -> Tensor(a)", matrix_transpose),
        typed("aten::mH(Tensor(a) self) -> Tensor(a)", matrix_adjoint),
        typed("aten::mH.a(Tensor(a) self) -> Tensor(a)", matrix_adjoint),
        typed("aten::adjoint(Tensor(a) self) -> Tensor(a)", adjoint),
        typed("prim::data(Tensor(a) a) -> Tensor(a)", tensor_data),
        typed("prim::is_cpu(Tensor a) -> bool", always_true),
        typed("prim::is_xpu(Tensor a) -> bool", always_false),
        typed("prim::is_mps(Tensor a) -> bool", always_false),
        typed("prim::is_ipu(Tensor a) -> bool", always_false),
        typed("prim::is_maia(Tensor a) -> bool", always_false),
        typed("prim::is_mtia(Tensor a) -> bool", always_false),
        typed("prim::is_xla(Tensor a) -> bool", always_false),
        typed("prim::is_vulkan(Tensor a) -> bool", always_false),
        typed("prim::is_sparse_csr(Tensor a) -> bool", always_false),
        typed("prim::layout(Tensor a) -> Layout", strided_layout),
        typed("prim::name(Tensor a) -> str?", tensor_name),
        typed("prim::itemsize(Tensor a) -> int", item_size),
        typed("prim::nbytes(Tensor a) -> int", byte_count),
        typed("prim::index(Device self) -> int?", device_index),
        typed("aten::device.with_index(str type, int index) -> Device", device_with_index),
        // Conversions and splits.
        typed("aten::cpu(Tensor(a) self) -> Tensor(b|a)", to_cpu),
        typed("aten::to.prim_other(Tensor(a) self, bool non_blocking=False, bool copy=False) -> Tensor(b|a)", to_same),
        typed("aten::split(Tensor(a -> *) self, int[] split_sizes, int dim=0) -> Tensor(a)[]", split_by_sizes),
        typed_in_place("aten::copy_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", copy_from_tensor),
        typed_in_place("aten::copy_.int(Tensor(a!) self, int other) -> Tensor(a!)", copy_from_int),
        typed_in_place("aten::copy_.float(Tensor(a!) self, float other) -> Tensor(a!)", copy_from_float),
        typed_in_place("aten::_index_put_impl_.hacked_twin(Tensor(a!) self, Tensor[] indices, Tensor values, bool accumulate=False, bool unsafe=False) -> Tensor(a!)", index_put_impl),
        // Shapes and queries.
        typed("aten::is_scripting() -> bool", is_scripting),
        OperatorDeclaration::stack("aten::has_torch_function(...) -> bool", has_torch_function),
        typed("aten::broadcast_shapes(int[] a, int[] b) -> int[]", broadcast_shapes),
        typed("aten::Size(int[] sizes) -> int[]", size_list),
        typed("aten::sym_size(Tensor self) -> SymInt[]", symbolic_sizes),
        typed("aten::sym_stride(Tensor self) -> SymInt[]", symbolic_strides),
        typed("aten::is_non_overlapping_and_dense(Tensor self) -> bool", is_non_overlapping_and_dense),
        typed("aten::is_strides_like_format(Tensor self, MemoryFormat memory_format) -> bool", is_strides_like_format),
        typed("aten::get_autocast_dtype(str device_type) -> ScalarType", get_autocast_dtype),
        typed("aten::is_autocast_cpu_enabled() -> bool", is_autocast_cpu_enabled),
        // PyTorch 1.x's interpolation builtins.
        typed("aten::__interpolate(Tensor input, int? size=None, float? scale_factor=None, str mode=\"nearest\", bool? align_corners=None, bool? recompute_scale_factor=None, bool antialias=False) -> Tensor", interpolate_builtin),
        typed("aten::__interpolate.size_list(Tensor input, int[]? size=None, float? scale_factor=None, str mode=\"nearest\", bool? align_corners=None, bool? recompute_scale_factor=None, bool antialias=False) -> Tensor", interpolate_builtin),
        typed("aten::__interpolate.scale_list(Tensor input, int? size=None, float[]? scale_factor=None, str mode=\"nearest\", bool? align_corners=None, bool? recompute_scale_factor=None, bool antialias=False) -> Tensor", interpolate_builtin),
        typed("aten::__interpolate.size_list_scale_list(Tensor input, int[]? size=None, float[]? scale_factor=None, str mode=\"nearest\", bool? align_corners=None, bool? recompute_scale_factor=None, bool antialias=False) -> Tensor", interpolate_builtin),
        typed("aten::__upsample_nearest(Tensor input, int? size=None, int? scale_factor=None) -> Tensor", upsample_nearest_builtin),
        typed("aten::__upsample_nearest.size_list(Tensor input, int[]? size=None, int? scale_factor=None) -> Tensor", upsample_nearest_builtin),
        typed("aten::__upsample(Tensor input, int? size=None, int? scale_factor=None, str mode=\"nearest\", bool? align_corners=None) -> Tensor", upsample_builtin),
        typed("aten::__upsample.size_list(Tensor input, int[]? size=None, int? scale_factor=None, str mode=\"nearest\", bool? align_corners=None) -> Tensor", upsample_builtin),
        typed("aten::__upsample_bilinear(Tensor input, int? size=None, int? scale_factor=None) -> Tensor", upsample_bilinear_builtin),
        typed("aten::__upsample_bilinear.size_list(Tensor input, int[]? size=None, int? scale_factor=None) -> Tensor", upsample_bilinear_builtin),
        typed("aten::__upsample_bilinear.scale_list(Tensor input, int? size=None, int[]? scale_factor=None) -> Tensor", upsample_bilinear_builtin),
        typed("aten::__upsample_bilinear.size_list_scale_list(Tensor input, int[]? size=None, int[]? scale_factor=None) -> Tensor", upsample_bilinear_builtin),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deprecation_warning_prints_once_per_process() {
        let message = "a warning only this test gives";
        assert!(deprecation_warning(message));
        assert!(!deprecation_warning(message));
        assert!(deprecation_warning("another warning only this test gives"));
    }
}
