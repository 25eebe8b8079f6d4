//! Shape-and-dtype rules: from what is known of an operator's inputs (dtypes, sizes, constant
//! arguments), the dtypes and sizes of its tensor results, without running it. Written for the
//! pointwise, reduction, matrix-product and convolution families, using ferrojit-tensor's own
//! promotion and broadcasting functions so that a rule and its kernel cannot disagree on them;
//! the tests below run each kernel on sample inputs and compare.
//!
//! [`attach`] gives each listed overload its rule (and its in-place and `out=` forms the
//! derived rules); naming an overload that is not registered is a registration error.

use ferrojit_tensor::{broadcast_shapes, promote_types, wrap_dim, DType, ResultTypeState};

use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::{ArgumentFact, FuserCategory, ShapeRule, ShapeRuleFn, TensorFact};
use crate::registry::OperatorRegistry;

// ----- reading facts ---------------------------------------------------------------------

fn unknown_tensor() -> TensorFact {
    TensorFact {
        dtype: None,
        sizes: None,
        is_wrapped_number: false,
    }
}

/// The fact of a tensor argument, or of a Python number used as one (a wrapped number, as
/// the kernels make it: int → int64, float → float64, bool → bool).
fn tensor_fact(arguments: &[ArgumentFact], index: usize) -> TensorFact {
    match arguments.get(index) {
        Some(ArgumentFact::Tensor(fact)) => fact.clone(),
        Some(ArgumentFact::Constant(value)) => {
            let dtype = match value {
                IValue::Int(_) => Some(DType::Int64),
                IValue::Double(_) => Some(DType::Float64),
                IValue::Bool(_) => Some(DType::Bool),
                _ => None,
            };
            TensorFact {
                dtype,
                sizes: Some(Vec::new()),
                is_wrapped_number: true,
            }
        }
        _ => unknown_tensor(),
    }
}

fn constant(arguments: &[ArgumentFact], index: usize) -> Option<&IValue> {
    match arguments.get(index) {
        Some(ArgumentFact::Constant(value)) => Some(value),
        _ => None,
    }
}

fn constant_int(arguments: &[ArgumentFact], index: usize) -> Option<i64> {
    constant(arguments, index).and_then(|value| value.to_int().ok())
}

fn constant_bool(arguments: &[ArgumentFact], index: usize) -> Option<bool> {
    constant(arguments, index).and_then(|value| value.to_bool().ok())
}

fn constant_int_list(arguments: &[ArgumentFact], index: usize) -> Option<Vec<i64>> {
    match constant(arguments, index)? {
        IValue::Int(value) => Some(vec![*value]),
        other => other.to_int_vec().ok(),
    }
}

/// A `ScalarType? dtype` argument: `Some(None)` when it is known to be None.
fn constant_optional_dtype(arguments: &[ArgumentFact], index: usize) -> Option<Option<DType>> {
    match constant(arguments, index)? {
        IValue::None => Some(None),
        other => DType::from_scalar_type_index(other.to_int().ok()?)
            .ok()
            .map(Some),
    }
}

/// Whether the argument is known to be None (an absent `Tensor? bias`).
fn is_none(arguments: &[ArgumentFact], index: usize) -> bool {
    matches!(
        arguments.get(index),
        Some(ArgumentFact::Constant(IValue::None)) | None
    )
}

fn shape_error(message: String) -> RuntimeError {
    RuntimeError::Other(message)
}

fn to_usize(value: i64, what: &str) -> Result<usize> {
    usize::try_from(value).map_err(|_| shape_error(format!("{what} is negative: {value}")))
}

// ----- promotion and broadcasting ---------------------------------------------------------

/// `torch.result_type` over facts: dimensioned tensors, then zero-dim tensors, then wrapped
/// numbers, combined by ferrojit-tensor's [`ResultTypeState`]. `None` when a dtype is unknown,
/// or when an unknown rank would change the answer.
fn promoted_dtype(facts: &[&TensorFact]) -> Option<DType> {
    let unknown_rank: Vec<usize> = facts
        .iter()
        .enumerate()
        .filter(|(_, fact)| !fact.is_wrapped_number && fact.sizes.is_none())
        .map(|(index, _)| index)
        .collect();
    // Each tensor of unknown rank may be zero-dim or not: the dtype is known only if every
    // choice gives the same one.
    let choices = 1usize.checked_shl(u32::try_from(unknown_rank.len()).ok()?)?;
    let mut answer: Option<DType> = None;
    for choice in 0..choices {
        let mut state = ResultTypeState::default();
        for (index, fact) in facts.iter().enumerate() {
            let mut dtype = fact.dtype?;
            let slot = if fact.is_wrapped_number {
                // A Python float promotes as the default dtype, not as double.
                if dtype.is_floating_point() {
                    dtype = DType::default_float();
                }
                &mut state.wrapped_result
            } else {
                let zero_dim = match &fact.sizes {
                    Some(sizes) => sizes.is_empty(),
                    None => {
                        let bit = unknown_rank.iter().position(|&i| i == index)?;
                        choice & (1 << bit) != 0
                    }
                };
                if zero_dim {
                    &mut state.zero_result
                } else {
                    &mut state.dim_result
                }
            };
            *slot = Some(match *slot {
                Some(previous) => promote_types(previous, dtype),
                None => dtype,
            });
        }
        let result = state.result()?;
        match answer {
            Some(previous) if previous != result => return None,
            _ => answer = Some(result),
        }
    }
    answer
}

/// The broadcast sizes of the facts (`None` if any is unknown); fails as the kernel would.
fn broadcast_sizes(facts: &[&TensorFact]) -> Result<Option<Vec<usize>>> {
    let mut sizes: Vec<usize> = Vec::new();
    for fact in facts {
        let Some(next) = &fact.sizes else {
            return Ok(None);
        };
        sizes = broadcast_shapes(&sizes, next)?;
    }
    Ok(Some(sizes))
}

fn result(dtype: Option<DType>, sizes: Option<Vec<usize>>) -> Vec<TensorFact> {
    vec![TensorFact {
        dtype,
        sizes,
        is_wrapped_number: false,
    }]
}

/// Integral and bool dtypes become the default float (true division, `exp`, `mean`'s input).
fn to_float(dtype: DType) -> DType {
    if dtype.is_floating_point() {
        dtype
    } else {
        DType::default_float()
    }
}

// ----- pointwise --------------------------------------------------------------------------

/// Unary, keeping the input's dtype (`abs`, `relu`, `floor`, `hardtanh`, ...).
fn unary_same_dtype(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let input = tensor_fact(arguments, 0);
    Ok(result(input.dtype, input.sizes))
}

/// Unary, integral inputs computing in the default float (`exp`, `sqrt`, `sigmoid`, ...).
fn unary_float_result(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let input = tensor_fact(arguments, 0);
    Ok(result(input.dtype.map(to_float), input.sizes))
}

/// Unary predicates (`isnan`, `logical_not`): bool results.
fn unary_predicate(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let input = tensor_fact(arguments, 0);
    Ok(result(Some(DType::Bool), input.sizes))
}

/// Binary with broadcasting and type promotion (`add`, `mul`, `maximum`, `pow`, ...); the
/// first two arguments are the operands.
fn binary_promoting(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let (a, b) = (tensor_fact(arguments, 0), tensor_fact(arguments, 1));
    let sizes = broadcast_sizes(&[&a, &b])?;
    Ok(result(promoted_dtype(&[&a, &b]), sizes))
}

/// Binary whose integral result is the default float (`div` without rounding, `atan2`).
fn binary_float_result(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let (a, b) = (tensor_fact(arguments, 0), tensor_fact(arguments, 1));
    let sizes = broadcast_sizes(&[&a, &b])?;
    Ok(result(promoted_dtype(&[&a, &b]).map(to_float), sizes))
}

/// `div` with `rounding_mode` (argument 2): true division when it is None, promotion else.
fn divide_with_mode(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    match constant(arguments, 2) {
        Some(IValue::None) => binary_float_result(arguments),
        Some(_) => binary_promoting(arguments),
        None => {
            let mut results = binary_promoting(arguments)?;
            // Unknown mode: the dtype is known only where both answers agree.
            if let Some(fact) = results.first_mut() {
                if fact.dtype.is_some_and(|dtype| !dtype.is_floating_point()) {
                    fact.dtype = None;
                }
            }
            Ok(results)
        }
    }
}

/// Comparisons and logical operators: broadcast sizes, bool results.
fn comparison(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let (a, b) = (tensor_fact(arguments, 0), tensor_fact(arguments, 1));
    let sizes = broadcast_sizes(&[&a, &b])?;
    Ok(result(Some(DType::Bool), sizes))
}

// ----- reductions -------------------------------------------------------------------------

/// The sizes after reducing `dims` (every dimension when empty) of `sizes`.
fn reduced_sizes(sizes: &[usize], dims: &[i64], keepdim: bool) -> Result<Vec<usize>> {
    let mut reduced = vec![false; sizes.len()];
    if dims.is_empty() {
        reduced.iter_mut().for_each(|flag| *flag = true);
    }
    for &dim in dims {
        let index = wrap_dim(dim, sizes.len())?;
        if let Some(flag) = reduced.get_mut(index) {
            *flag = true;
        }
    }
    Ok(sizes
        .iter()
        .zip(&reduced)
        .filter_map(|(&size, &is_reduced)| match (is_reduced, keepdim) {
            (false, _) => Some(size),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect())
}

/// The result sizes of a reduction of argument 0 over the dims at `dims_index` (None or an
/// empty list: all) with the keepdim flag at `keepdim_index`.
fn reduction_sizes(
    arguments: &[ArgumentFact],
    dims_index: Option<usize>,
    keepdim_index: Option<usize>,
) -> Result<Option<Vec<usize>>> {
    let input = tensor_fact(arguments, 0);
    let Some(sizes) = input.sizes else {
        return Ok(None);
    };
    let dims = match dims_index {
        None => Vec::new(),
        Some(index) => match constant(arguments, index) {
            Some(IValue::None) => Vec::new(),
            Some(_) => match constant_int_list(arguments, index) {
                Some(dims) => dims,
                None => return Ok(None),
            },
            None => return Ok(None),
        },
    };
    let keepdim = match keepdim_index {
        None => false,
        Some(index) => match constant_bool(arguments, index) {
            Some(keepdim) => keepdim,
            None => return Ok(None),
        },
    };
    reduced_sizes(&sizes, &dims, keepdim).map(Some)
}

/// `sum`/`prod`'s dtype: the `dtype=` argument, else int64 for integral and bool inputs.
fn summing_dtype(arguments: &[ArgumentFact], dtype_index: usize) -> Option<DType> {
    match constant_optional_dtype(arguments, dtype_index)? {
        Some(dtype) => Some(dtype),
        None => tensor_fact(arguments, 0).dtype.map(|dtype| {
            if dtype.is_integral(true) {
                DType::Int64
            } else {
                dtype
            }
        }),
    }
}

/// `mean`'s dtype: the `dtype=` argument, else the input's.
fn keeping_dtype(arguments: &[ArgumentFact], dtype_index: usize) -> Option<DType> {
    match constant_optional_dtype(arguments, dtype_index)? {
        Some(dtype) => Some(dtype),
        None => tensor_fact(arguments, 0).dtype,
    }
}

/// `sum(Tensor self, *, ScalarType? dtype)` and `prod`.
fn sum_all(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    Ok(result(summing_dtype(arguments, 1), Some(Vec::new())))
}

/// `sum.dim_IntList(self, dim, keepdim, *, dtype)` and `prod.dim_int`.
fn sum_dims(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let sizes = reduction_sizes(arguments, Some(1), Some(2))?;
    Ok(result(summing_dtype(arguments, 3), sizes))
}

/// `mean(Tensor self, *, ScalarType? dtype)`.
fn mean_all(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    Ok(result(keeping_dtype(arguments, 1), Some(Vec::new())))
}

/// `mean.dim(self, dim, keepdim, *, dtype)`.
fn mean_dims(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let sizes = reduction_sizes(arguments, Some(1), Some(2))?;
    Ok(result(keeping_dtype(arguments, 3), sizes))
}

/// `amax(self, dim, keepdim)`, `logsumexp` without its float conversion: the input's dtype.
fn reduce_keeping_dtype(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let sizes = reduction_sizes(arguments, Some(1), Some(2))?;
    Ok(result(tensor_fact(arguments, 0).dtype, sizes))
}

/// `max(Tensor self)` and `min`: a zero-dim tensor of the input's dtype.
fn reduce_all_keeping_dtype(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    Ok(result(tensor_fact(arguments, 0).dtype, Some(Vec::new())))
}

/// `logsumexp(self, dim, keepdim)`: integral inputs give the default float.
fn logsumexp(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let sizes = reduction_sizes(arguments, Some(1), Some(2))?;
    Ok(result(tensor_fact(arguments, 0).dtype.map(to_float), sizes))
}

/// `max.dim(self, int dim, keepdim)` and `min.dim`: values and int64 indices.
fn max_min_dim(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let sizes = reduction_sizes(arguments, Some(1), Some(2))?;
    let values = tensor_fact(arguments, 0).dtype;
    Ok(vec![
        TensorFact {
            dtype: values,
            sizes: sizes.clone(),
            is_wrapped_number: false,
        },
        TensorFact {
            dtype: Some(DType::Int64),
            sizes,
            is_wrapped_number: false,
        },
    ])
}

/// `argmax(self, int? dim, keepdim)`: int64. With no dim, every dimension is reduced (kept
/// as size 1 with keepdim).
fn argmax(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let sizes = reduction_sizes(arguments, Some(1), Some(2))?;
    Ok(result(Some(DType::Int64), sizes))
}

/// `any.dim(self, int dim, keepdim)`, `all.dims`: bool (uint8 stays uint8, as in PyTorch).
fn any_all_dims(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let sizes = reduction_sizes(arguments, Some(1), Some(2))?;
    Ok(result(any_all_dtype(arguments), sizes))
}

/// `any(Tensor self)`, `all(Tensor self)`.
fn any_all(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    Ok(result(any_all_dtype(arguments), Some(Vec::new())))
}

fn any_all_dtype(arguments: &[ArgumentFact]) -> Option<DType> {
    tensor_fact(arguments, 0).dtype.map(|dtype| {
        if dtype == DType::UInt8 {
            DType::UInt8
        } else {
            DType::Bool
        }
    })
}

/// `std.dim(self, dim, unbiased, keepdim)`, `var.dim`: the dims at 1 and keepdim at 3.
fn variance_dims(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let sizes = reduction_sizes(arguments, Some(1), Some(3))?;
    Ok(result(tensor_fact(arguments, 0).dtype, sizes))
}

// ----- matrix products --------------------------------------------------------------------

fn matrix_dtype(facts: &[&TensorFact]) -> Option<DType> {
    // The products require equal dtypes (a mismatch is the kernel's error); the result has
    // that dtype.
    let first = facts.first()?.dtype?;
    facts
        .iter()
        .all(|fact| fact.dtype == Some(first))
        .then_some(first)
}

fn mismatch(what: &str, a: &[usize], b: &[usize]) -> RuntimeError {
    shape_error(format!(
        "{what}: shapes {a:?} and {b:?} cannot be multiplied"
    ))
}

/// `mm(self [n, k], mat2 [k, m]) -> [n, m]`.
fn mm(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let (a, b) = (tensor_fact(arguments, 0), tensor_fact(arguments, 1));
    let sizes = match (&a.sizes, &b.sizes) {
        (Some(x), Some(y)) => match (x.as_slice(), y.as_slice()) {
            (&[n, k], &[k2, m]) if k == k2 => Some(vec![n, m]),
            _ => return Err(mismatch("mm", x, y)),
        },
        _ => None,
    };
    Ok(result(matrix_dtype(&[&a, &b]), sizes))
}

/// `bmm(self [b, n, k], mat2 [b, k, m]) -> [b, n, m]`.
fn bmm(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let (a, b) = (tensor_fact(arguments, 0), tensor_fact(arguments, 1));
    let sizes = match (&a.sizes, &b.sizes) {
        (Some(x), Some(y)) => match (x.as_slice(), y.as_slice()) {
            (&[batch, n, k], &[batch2, k2, m]) if batch == batch2 && k == k2 => {
                Some(vec![batch, n, m])
            }
            _ => return Err(mismatch("bmm", x, y)),
        },
        _ => None,
    };
    Ok(result(matrix_dtype(&[&a, &b]), sizes))
}

/// `matmul`'s sizes: dot, matrix-vector, vector-matrix, matrix and batched products (batch
/// dimensions broadcast; a vector operand's dimension is dropped from the result).
fn matmul_sizes(x: &[usize], y: &[usize]) -> Result<Vec<usize>> {
    let fail = || mismatch("matmul", x, y);
    match (x.len(), y.len()) {
        (0, _) | (_, 0) => Err(shape_error(
            "both arguments to matmul need to be at least 1D".to_string(),
        )),
        (1, 1) => (x == y).then(Vec::new).ok_or_else(fail),
        _ => {
            // Treat a vector as a matrix (a row on the left, a column on the right), then
            // drop that dimension from the result.
            let left: Vec<usize> = if x.len() == 1 {
                vec![1, x[0]]
            } else {
                x.to_vec()
            };
            let right: Vec<usize> = if y.len() == 1 {
                vec![y[0], 1]
            } else {
                y.to_vec()
            };
            let (left_batch, left_matrix) = left.split_at(left.len() - 2);
            let (right_batch, right_matrix) = right.split_at(right.len() - 2);
            if left_matrix[1] != right_matrix[0] {
                return Err(fail());
            }
            let mut sizes = broadcast_shapes(left_batch, right_batch)?;
            if x.len() > 1 {
                sizes.push(left_matrix[0]);
            }
            if y.len() > 1 {
                sizes.push(right_matrix[1]);
            }
            Ok(sizes)
        }
    }
}

/// `matmul(self, other)`.
fn matmul(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let (a, b) = (tensor_fact(arguments, 0), tensor_fact(arguments, 1));
    let sizes = match (&a.sizes, &b.sizes) {
        (Some(x), Some(y)) => Some(matmul_sizes(x, y)?),
        _ => None,
    };
    Ok(result(matrix_dtype(&[&a, &b]), sizes))
}

/// `addmm(self, mat1 [n, k], mat2 [k, m]) -> [n, m]` (`self` broadcasts to it).
fn addmm(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let mut product = mm(&arguments[1.min(arguments.len())..])?;
    let bias = tensor_fact(arguments, 0);
    if let (Some(bias_sizes), Some(fact)) = (&bias.sizes, product.first_mut()) {
        if let Some(sizes) = &fact.sizes {
            if broadcast_shapes(bias_sizes, sizes)? != *sizes {
                return Err(mismatch("addmm", bias_sizes, sizes));
            }
        }
        fact.dtype = match (fact.dtype, bias.dtype) {
            (Some(product), Some(bias)) if product == bias => Some(product),
            _ => None,
        };
    }
    Ok(product)
}

/// `linear(input [..., in], weight [out, in] or [in], bias?)`.
fn linear(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let (input, weight) = (tensor_fact(arguments, 0), tensor_fact(arguments, 1));
    let sizes = match (&input.sizes, &weight.sizes) {
        (Some(x), Some(w)) => {
            let (features, outputs): (usize, Option<usize>) = match *w.as_slice() {
                [outputs, features] => (features, Some(outputs)),
                [features] => (features, None),
                _ => return Err(mismatch("linear", x, w)),
            };
            match x.split_last() {
                Some((&last, leading)) if last == features => {
                    let mut sizes = leading.to_vec();
                    sizes.extend(outputs);
                    Some(sizes)
                }
                _ => return Err(mismatch("linear", x, w)),
            }
        }
        _ => None,
    };
    let mut facts = vec![&input, &weight];
    let bias = tensor_fact(arguments, 2);
    if !is_none(arguments, 2) {
        facts.push(&bias);
    }
    Ok(result(matrix_dtype(&facts), sizes))
}

// ----- convolution ------------------------------------------------------------------------

/// A per-dimension convolution parameter: one value per spatial dimension, or one value for
/// all of them (`stride=[2]` on a 2-d convolution, as ATen expands it).
fn per_dimension(values: &[i64], spatial: usize, what: &str) -> Result<Vec<i64>> {
    match values.len() {
        1 => Ok(vec![values[0]; spatial]),
        n if n == spatial => Ok(values.to_vec()),
        n => Err(shape_error(format!(
            "expected {what} to be a single integer value or a list of {spatial} values to \
             match the convolution dimensions, but got {what}={values:?} ({n} values)"
        ))),
    }
}

/// How a convolution pads: explicit sizes, or `"same"`/`"valid"`.
enum ConvolutionPadding {
    Explicit(Vec<i64>),
    Same,
    Valid,
}

struct ConvolutionGeometry<'a> {
    input: &'a [usize],
    weight: &'a [usize],
    stride: &'a [i64],
    padding: ConvolutionPadding,
    dilation: &'a [i64],
    transposed: bool,
    output_padding: &'a [i64],
    groups: i64,
}

/// The output sizes of a convolution (batched `[N, C, *spatial]` or unbatched
/// `[C, *spatial]` input; weight `[out, in / groups, *kernel]`, or `[in, out / groups,
/// *kernel]` when transposed).
fn convolution_sizes(geometry: &ConvolutionGeometry) -> Result<Vec<usize>> {
    let weight = geometry.weight;
    if weight.len() < 3 {
        return Err(shape_error(format!(
            "convolution weight must have at least 3 dimensions, got {weight:?}"
        )));
    }
    let spatial = weight.len() - 2;
    let input = geometry.input;
    let batched = input.len() == spatial + 2;
    if !batched && input.len() != spatial + 1 {
        return Err(shape_error(format!(
            "expected a {}-d or {}-d input to the convolution, got {input:?}",
            spatial + 1,
            spatial + 2
        )));
    }
    let channels_at = usize::from(batched);
    let groups = to_usize(geometry.groups, "groups")?;
    if groups == 0 {
        return Err(shape_error(
            "non-positive groups is not supported".to_string(),
        ));
    }
    let in_channels = input[channels_at];
    let out_channels = if geometry.transposed {
        if weight[0] != in_channels {
            return Err(shape_error(format!(
                "transposed convolution of {input:?} with weight {weight:?}: channels differ"
            )));
        }
        weight[1] * groups
    } else {
        if weight[1] * groups != in_channels {
            return Err(shape_error(format!(
                "convolution of {input:?} with weight {weight:?} and groups={groups}: \
                 expected {} input channels",
                weight[1] * groups
            )));
        }
        weight[0]
    };
    let stride = per_dimension(geometry.stride, spatial, "stride")?;
    let dilation = per_dimension(geometry.dilation, spatial, "dilation")?;
    let mut sizes: Vec<usize> = input[..channels_at].to_vec();
    sizes.push(out_channels);
    for dim in 0..spatial {
        let length = i64::try_from(input[channels_at + 1 + dim]).unwrap_or(i64::MAX);
        let kernel = i64::try_from(weight[2 + dim]).unwrap_or(i64::MAX);
        let reach = dilation[dim].saturating_mul(kernel - 1);
        let output = if geometry.transposed {
            let padding = match &geometry.padding {
                ConvolutionPadding::Explicit(padding) => {
                    per_dimension(padding, spatial, "padding")?
                }
                _ => vec![0; spatial],
            };
            let output_padding = per_dimension(geometry.output_padding, spatial, "output_padding")?;
            (length - 1) * stride[dim] - 2 * padding[dim] + reach + output_padding[dim] + 1
        } else {
            match &geometry.padding {
                ConvolutionPadding::Same => length,
                ConvolutionPadding::Valid => (length - reach - 1) / stride[dim] + 1,
                ConvolutionPadding::Explicit(padding) => {
                    let padding = per_dimension(padding, spatial, "padding")?;
                    let padded = length + 2 * padding[dim];
                    if padded < reach + 1 {
                        return Err(shape_error(format!(
                            "calculated padded input size per channel: {padded}; kernel \
                             size can't be greater than actual input size"
                        )));
                    }
                    (padded - reach - 1) / stride[dim] + 1
                }
            }
        };
        sizes.push(to_usize(output, "convolution output size")?);
    }
    Ok(sizes)
}

/// The dtype of a convolution: input, weight (and bias) must agree.
fn convolution_dtype(arguments: &[ArgumentFact]) -> Option<DType> {
    let (input, weight) = (tensor_fact(arguments, 0), tensor_fact(arguments, 1));
    let bias = tensor_fact(arguments, 2);
    let mut facts = vec![&input, &weight];
    if !is_none(arguments, 2) {
        facts.push(&bias);
    }
    matrix_dtype(&facts)
}

/// `conv1d/2d/3d(input, weight, bias, stride, padding, dilation, groups)`, with padding a
/// list or (the `.padding` overloads) `"same"`/`"valid"`.
fn conv_nd(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let (input, weight) = (tensor_fact(arguments, 0), tensor_fact(arguments, 1));
    let padding = match constant(arguments, 4) {
        Some(text @ IValue::Str(_)) => match text.to_str()? {
            "same" => Some(ConvolutionPadding::Same),
            "valid" => Some(ConvolutionPadding::Valid),
            other => {
                return Err(shape_error(format!("Invalid padding string: '{other}'")));
            }
        },
        Some(_) => constant_int_list(arguments, 4).map(ConvolutionPadding::Explicit),
        None => None,
    };
    let sizes = match (
        &input.sizes,
        &weight.sizes,
        constant_int_list(arguments, 3),
        padding,
        constant_int_list(arguments, 5),
        constant_int(arguments, 6),
    ) {
        (Some(x), Some(w), Some(stride), Some(padding), Some(dilation), Some(groups)) => {
            Some(convolution_sizes(&ConvolutionGeometry {
                input: x,
                weight: w,
                stride: &stride,
                padding,
                dilation: &dilation,
                transposed: false,
                output_padding: &[0],
                groups,
            })?)
        }
        _ => None,
    };
    Ok(result(convolution_dtype(arguments), sizes))
}

/// `convolution`/`_convolution(input, weight, bias, stride, padding, dilation, transposed,
/// output_padding, groups, ...)`.
fn convolution(arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
    let (input, weight) = (tensor_fact(arguments, 0), tensor_fact(arguments, 1));
    let sizes = match (
        &input.sizes,
        &weight.sizes,
        constant_int_list(arguments, 3),
        constant_int_list(arguments, 4),
        constant_int_list(arguments, 5),
        constant_bool(arguments, 6),
        constant_int_list(arguments, 7),
        constant_int(arguments, 8),
    ) {
        (
            Some(x),
            Some(w),
            Some(stride),
            Some(padding),
            Some(dilation),
            Some(transposed),
            Some(output_padding),
            Some(groups),
        ) => Some(convolution_sizes(&ConvolutionGeometry {
            input: x,
            weight: w,
            stride: &stride,
            padding: ConvolutionPadding::Explicit(padding),
            dilation: &dilation,
            transposed,
            output_padding: &output_padding,
            groups,
        })?),
        _ => None,
    };
    Ok(result(convolution_dtype(arguments), sizes))
}

// ----- the table --------------------------------------------------------------------------

/// Unary operators whose result keeps the input's dtype.
const UNARY_SAME_DTYPE: &[&str] = &[
    "abs",
    "neg",
    "sign",
    "floor",
    "ceil",
    "round",
    "trunc",
    "frac",
    "relu",
    "relu6",
    "selu",
    "silu",
    "mish",
    "hardswish",
    "hardsigmoid",
    "bitwise_not",
    "leaky_relu",
    "elu",
    "celu",
    "gelu",
    "hardtanh",
    "softplus",
];

/// Unary operators whose integral inputs compute in the default float.
const UNARY_FLOAT_RESULT: &[&str] = &[
    "reciprocal",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "asinh",
    "acosh",
    "atanh",
    "sinh",
    "cosh",
    "tanh",
    "sigmoid",
    "erf",
    "erfc",
    "erfinv",
];

/// Unary predicates.
const UNARY_PREDICATE: &[&str] = &[
    "isnan",
    "isinf",
    "isfinite",
    "isposinf",
    "isneginf",
    "logical_not",
];

/// Binary operators that promote, by the overload names of their functional forms.
const BINARY_PROMOTING: &[&str] = &[
    "aten::add.Tensor",
    "aten::add.Scalar",
    "aten::sub.Tensor",
    "aten::sub.Scalar",
    "aten::rsub.Tensor",
    "aten::rsub.Scalar",
    "aten::mul.Tensor",
    "aten::mul.Scalar",
    "aten::floor_divide",
    "aten::floor_divide.Scalar",
    "aten::remainder.Tensor",
    "aten::remainder.Scalar",
    "aten::remainder.Scalar_Tensor",
    "aten::pow.Tensor_Tensor",
    "aten::pow.Tensor_Scalar",
    "aten::pow.Scalar",
    "aten::maximum",
    "aten::minimum",
    "aten::max.other",
    "aten::min.other",
    "aten::fmod.Tensor",
    "aten::fmod.Scalar",
    "aten::fmax",
    "aten::fmin",
    "aten::bitwise_and.Tensor",
    "aten::bitwise_and.Scalar",
    "aten::bitwise_or.Tensor",
    "aten::bitwise_or.Scalar",
    "aten::bitwise_xor.Tensor",
    "aten::bitwise_xor.Scalar",
];

/// Comparisons and logical operators.
const COMPARISONS: &[&str] = &[
    "aten::eq.Tensor",
    "aten::eq.Scalar",
    "aten::ne.Tensor",
    "aten::ne.Scalar",
    "aten::lt.Tensor",
    "aten::lt.Scalar",
    "aten::le.Tensor",
    "aten::le.Scalar",
    "aten::gt.Tensor",
    "aten::gt.Scalar",
    "aten::ge.Tensor",
    "aten::ge.Scalar",
    "aten::logical_and",
    "aten::logical_or",
    "aten::logical_xor",
];

/// Every functional overload with a rule and its fuser category.
fn functional_rules() -> Vec<(String, ShapeRuleFn, FuserCategory)> {
    use FuserCategory::{Contraction, Pointwise, Reduction};
    let mut rules: Vec<(String, ShapeRuleFn, FuserCategory)> = Vec::new();
    let unary: [(&[&str], ShapeRuleFn); 3] = [
        (UNARY_SAME_DTYPE, unary_same_dtype),
        (UNARY_FLOAT_RESULT, unary_float_result),
        (UNARY_PREDICATE, unary_predicate),
    ];
    for (names, rule) in unary {
        for name in names {
            rules.push((format!("aten::{name}"), rule, Pointwise));
        }
    }
    for name in BINARY_PROMOTING {
        rules.push((name.to_string(), binary_promoting, Pointwise));
    }
    for name in COMPARISONS {
        rules.push((name.to_string(), comparison, Pointwise));
    }
    let named: &[(&str, ShapeRuleFn, FuserCategory)] = &[
        ("aten::div.Tensor", binary_float_result, Pointwise),
        ("aten::div.Scalar", binary_float_result, Pointwise),
        ("aten::div.Tensor_mode", divide_with_mode, Pointwise),
        ("aten::div.Scalar_mode", divide_with_mode, Pointwise),
        ("aten::atan2", binary_float_result, Pointwise),
        ("aten::sum", sum_all, Reduction),
        ("aten::sum.dim_IntList", sum_dims, Reduction),
        ("aten::prod", sum_all, Reduction),
        ("aten::prod.dim_int", sum_dims, Reduction),
        ("aten::mean", mean_all, Reduction),
        ("aten::mean.dim", mean_dims, Reduction),
        ("aten::amax", reduce_keeping_dtype, Reduction),
        ("aten::amin", reduce_keeping_dtype, Reduction),
        ("aten::max", reduce_all_keeping_dtype, Reduction),
        ("aten::min", reduce_all_keeping_dtype, Reduction),
        ("aten::max.dim", max_min_dim, Reduction),
        ("aten::min.dim", max_min_dim, Reduction),
        ("aten::argmax", argmax, Reduction),
        ("aten::argmin", argmax, Reduction),
        ("aten::any", any_all, Reduction),
        ("aten::all", any_all, Reduction),
        ("aten::any.dim", any_all_dims, Reduction),
        ("aten::all.dim", any_all_dims, Reduction),
        ("aten::any.dims", any_all_dims, Reduction),
        ("aten::all.dims", any_all_dims, Reduction),
        ("aten::std.dim", variance_dims, Reduction),
        ("aten::var.dim", variance_dims, Reduction),
        ("aten::logsumexp", logsumexp, Reduction),
        ("aten::mm", mm, Contraction),
        ("aten::bmm", bmm, Contraction),
        ("aten::matmul", matmul, Contraction),
        ("aten::addmm", addmm, Contraction),
        ("aten::linear", linear, Contraction),
        ("aten::conv1d", conv_nd, Contraction),
        ("aten::conv2d", conv_nd, Contraction),
        ("aten::conv3d", conv_nd, Contraction),
        ("aten::conv1d.padding", conv_nd, Contraction),
        ("aten::conv2d.padding", conv_nd, Contraction),
        ("aten::conv3d.padding", conv_nd, Contraction),
        ("aten::convolution", convolution, Contraction),
        ("aten::_convolution", convolution, Contraction),
        ("aten::_convolution.deprecated", convolution, Contraction),
    ];
    rules.extend(
        named
            .iter()
            .map(|&(name, rule, category)| (name.to_string(), rule, category)),
    );
    rules
}

/// The in-place and `out=` forms of a functional overload that exist in the registry, by the
/// naming PyTorch uses (`add.Tensor` → `add_.Tensor`, `add.out`; `add.Scalar` →
/// `add.Scalar_out`; `abs` → `abs_`, `abs.out`).
fn variant_names(functional: &str) -> (Vec<String>, Vec<String>) {
    let (name, overload) = match functional.split_once('.') {
        Some((name, overload)) => (name, overload),
        None => (functional, ""),
    };
    let in_place = if overload.is_empty() {
        vec![format!("{name}_"), format!("{name}_.Tensor")]
    } else {
        vec![format!("{name}_.{overload}")]
    };
    let out = if overload.is_empty() || overload == "Tensor" {
        vec![
            format!("{name}.out"),
            format!(
                "{name}.{}_out",
                if overload.is_empty() {
                    "Tensor"
                } else {
                    overload
                }
            ),
        ]
    } else {
        vec![format!("{name}.{overload}_out")]
    };
    (in_place, out)
}

/// Gives every listed overload (and its in-place and `out=` forms, where registered with the
/// same arguments plus `out`) its shape rule and fuser category. Fails when a listed
/// functional overload is not registered.
pub fn attach(registry: &mut OperatorRegistry) -> Result<()> {
    for (full_name, rule, category) in functional_rules() {
        registry.set_shape_rule(&full_name, ShapeRule::Functional(rule))?;
        registry.set_fuser_category(&full_name, category)?;
        let Some(functional_arguments) = registry
            .lookup(&full_name)
            .map(|operator| operator.schema.arguments.len())
        else {
            continue;
        };
        let (in_place_names, out_names) = variant_names(&full_name);
        for variant in in_place_names {
            // Only a form with exactly the functional arguments is the in-place form.
            let matches = registry
                .lookup(&variant)
                .is_some_and(|operator| operator.schema.arguments.len() == functional_arguments);
            if matches {
                registry.set_shape_rule(&variant, ShapeRule::InPlace(rule))?;
                registry.set_fuser_category(&variant, category)?;
            }
        }
        for variant in out_names {
            let matches = registry.lookup(&variant).is_some_and(|operator| {
                operator.schema.arguments.len() == functional_arguments + 1
                    && operator
                        .schema
                        .arguments
                        .last()
                        .is_some_and(|argument| argument.name == "out")
            });
            if matches {
                registry.set_shape_rule(&variant, ShapeRule::Out(rule))?;
                registry.set_fuser_category(&variant, category)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
