//! The shape functions of symbolic shape analysis: for each operator PyTorch registers one for
//! (`torch/jit/_shape_functions.py`, as `symbolic_shape_registry.cpp` maps them to schemas),
//! the output sizes computed from what is known of the inputs.
//!
//! PyTorch runs its TorchScript shape functions by partial evaluation: input facts are
//! substituted, then constant propagation, loop unrolling, list idioms and integer refinement
//! run until nothing changes, and an output is ranked only when it ends as a list built from
//! known parts. The functions here are written directly in Rust and follow what that partial
//! evaluation can and cannot decide:
//!
//! * a size is a constant, a symbol (a dimension that is unknown but the same wherever the
//!   symbol appears, and never negative), or an unknown integer;
//! * a comparison of a symbol with a negative constant, or `symbol >= 0`, is decided; other
//!   comparisons with symbols are not, and a value chosen by an undecided condition is
//!   unknown;
//! * an undecided condition that changes the length of the output (a dimension argument that
//!   is not a constant, a `keepdim` that is not, `len()` of a list of unknown length) leaves
//!   the output unranked.

/// One size or integer argument as the shape analysis sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymInt {
    /// A known value.
    Static(i64),
    /// An unknown size, equal to every other occurrence of the same symbol; never negative.
    Symbol(u64),
    /// An integer nothing is known of (it may even be negative).
    Unknown,
}

impl SymInt {
    fn known(self) -> Option<i64> {
        match self {
            SymInt::Static(value) => Some(value),
            _ => None,
        }
    }

    /// `self == -1`, as partial evaluation decides it (a symbol is never negative).
    fn is_minus_one(self) -> Option<bool> {
        match self {
            SymInt::Static(value) => Some(value == -1),
            SymInt::Symbol(_) => Some(false),
            SymInt::Unknown => None,
        }
    }

    /// `self >= 0`, as partial evaluation decides it.
    fn is_non_negative(self) -> Option<bool> {
        match self {
            SymInt::Static(value) => Some(value >= 0),
            SymInt::Symbol(_) => Some(true),
            SymInt::Unknown => None,
        }
    }
}

/// A sizes list: `None` is unranked.
pub type Shape = Option<Vec<SymInt>>;

/// One argument of the node, reduced to what a shape function can use.
#[derive(Clone, Debug, PartialEq)]
pub enum ShapeArgument {
    /// A tensor: its sizes when its rank is known.
    Tensor(Shape),
    /// A list of tensors whose elements are known (`prim::ListConstruct` nothing writes).
    TensorList(Option<Vec<Shape>>),
    Int(SymInt),
    /// A list of ints: `None` when not even its length is known.
    IntList(Option<Vec<SymInt>>),
    Float(Option<f64>),
    Bool(Option<bool>),
    /// The constant `None`.
    None,
    /// Anything else (a string, a device, a value the analysis does not follow).
    Other,
}

impl ShapeArgument {
    fn tensor(&self) -> Shape {
        match self {
            ShapeArgument::Tensor(shape) => shape.clone(),
            _ => None,
        }
    }

    fn int(&self) -> SymInt {
        match self {
            ShapeArgument::Int(value) => *value,
            _ => SymInt::Unknown,
        }
    }

    fn int_list(&self) -> Option<Vec<SymInt>> {
        match self {
            ShapeArgument::IntList(list) => list.clone(),
            _ => None,
        }
    }

    fn bool(&self) -> Option<bool> {
        match self {
            ShapeArgument::Bool(value) => *value,
            _ => None,
        }
    }

    /// A number (`Scalar`) argument, as a float, when constant.
    fn number(&self) -> Option<f64> {
        match self {
            ShapeArgument::Int(SymInt::Static(value)) => Some(*value as f64),
            ShapeArgument::Float(value) => *value,
            _ => None,
        }
    }

    fn is_none(&self) -> Option<bool> {
        match self {
            ShapeArgument::None => Some(true),
            ShapeArgument::Other => None,
            _ => Some(false),
        }
    }
}

/// The shape function registered for an operator, named after PyTorch's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeFunction {
    Unary,
    Broadcast,
    BroadcastThree,
    BroadcastOneThree,
    BroadcastInplace,
    ZeroDimTensor,
    AdaptiveAvgPool2d,
    ArangeEnd,
    ArangeStart,
    ArangeStartStep,
    SqueezeNoDim,
    Squeeze,
    SqueezeDims,
    Unsqueeze,
    Slice,
    Select,
    IndexSelect,
    Embedding,
    Mm,
    Dot,
    Mv,
    Matmul,
    Linear,
    MaxPool2d,
    MaxPool2dWithIndices,
    T,
    Transpose,
    Conv1d,
    Conv2d,
    Conv3d,
    ConvBackwards,
    ConvForwards,
    ConvForwardsUnderscore,
    ConvTranspose2dInput,
    BatchNorm,
    Flatten,
    Cat,
    Stack,
    Permute,
    Movedim,
    View,
    ExpandAs,
    Expand,
    SumMeanDim,
    MaxDim,
    Addmm,
    UpsampleNearest2d,
    Argmax,
    Bmm,
    ShapeAsTensor,
    Topk,
    NllLossForward,
    NativeLayerNorm,
    NativeBatchNorm,
    BatchNormWithUpdate,
    CrossEntropyLoss,
}

/// The shape function PyTorch 2.15 registers for the operator with this full schema name
/// (`aten::add.Tensor`), if any.
pub fn shape_function_for(full_name: &str) -> Option<ShapeFunction> {
    use ShapeFunction::*;
    let function = match full_name {
        "aten::__and__.Tensor"
        | "aten::__or__.Tensor"
        | "aten::__xor__.Tensor"
        | "aten::__lshift__.Tensor"
        | "aten::__rshift__.Tensor"
        | "aten::add.Tensor"
        | "aten::sub.Tensor"
        | "aten::mul.Tensor"
        | "aten::div.Tensor"
        | "aten::eq.Tensor"
        | "aten::ne.Tensor"
        | "aten::ge.Tensor"
        | "aten::gt.Tensor"
        | "aten::le.Tensor"
        | "aten::lt.Tensor"
        | "aten::atan2"
        | "aten::fmod.Tensor"
        | "aten::remainder.Tensor"
        | "aten::min.other"
        | "aten::max.other"
        | "aten::lerp.Scalar"
        | "aten::where.ScalarOther" => Broadcast,
        "aten::lerp.Tensor" | "aten::addcmul" | "aten::where.self" => BroadcastThree,
        "aten::where.ScalarSelf" => BroadcastOneThree,
        "aten::add_.Tensor"
        | "aten::sub_.Tensor"
        | "aten::mul_.Tensor"
        | "aten::div_.Tensor"
        | "aten::eq_.Tensor"
        | "aten::ne_.Tensor"
        | "aten::ge_.Tensor"
        | "aten::gt_.Tensor"
        | "aten::le_.Tensor"
        | "aten::lt_.Tensor"
        | "aten::atan2_"
        | "aten::fmod_.Tensor"
        | "aten::remainder_.Tensor"
        | "aten::lerp_.Scalar" => BroadcastInplace,
        "aten::__and__.Scalar"
        | "aten::__or__.Scalar"
        | "aten::__xor__.Scalar"
        | "aten::__lshift__.Scalar"
        | "aten::__rshift__.Scalar"
        | "aten::_autocast_to_full_precision"
        | "aten::_autocast_to_reduced_precision"
        | "aten::_cast_Float"
        | "aten::_no_grad_embedding_renorm_"
        | "aten::embedding_renorm_"
        | "aten::add.Scalar"
        | "aten::add_.Scalar"
        | "aten::sub.Scalar"
        | "aten::sub_.Scalar"
        | "aten::mul.Scalar"
        | "aten::mul_.Scalar"
        | "aten::div.Scalar"
        | "aten::div_.Scalar"
        | "aten::eq.Scalar"
        | "aten::eq_.Scalar"
        | "aten::ne.Scalar"
        | "aten::ne_.Scalar"
        | "aten::ge.Scalar"
        | "aten::ge_.Scalar"
        | "aten::gt.Scalar"
        | "aten::gt_.Scalar"
        | "aten::le.Scalar"
        | "aten::le_.Scalar"
        | "aten::lt.Scalar"
        | "aten::lt_.Scalar"
        | "aten::fmod.Scalar"
        | "aten::fmod_.Scalar"
        | "aten::pow.Tensor_Scalar"
        | "aten::pow_.Scalar"
        | "aten::rsub.Scalar"
        | "aten::where.Scalar"
        | "aten::clamp"
        | "aten::clamp_"
        | "aten::contiguous"
        | "aten::dequantize.self"
        | "aten::dropout"
        | "aten::elu"
        | "aten::elu_"
        | "aten::gelu"
        | "aten::gelu_"
        | "aten::hardshrink"
        | "aten::hardsigmoid"
        | "aten::hardsigmoid_"
        | "aten::hardswish"
        | "aten::hardswish_"
        | "aten::hardtanh"
        | "aten::hardtanh_"
        | "aten::isnan"
        | "aten::layer_norm"
        | "aten::leaky_relu"
        | "aten::leaky_relu_"
        | "aten::mish"
        | "aten::mish_"
        | "aten::quantize_per_tensor"
        | "aten::quantize_per_tensor.tensor_qparams"
        | "aten::relu"
        | "aten::relu_"
        | "aten::relu6"
        | "aten::relu6_"
        | "aten::silu"
        | "aten::silu_"
        | "aten::softmax.int"
        | "aten::softplus"
        | "aten::threshold"
        | "aten::threshold_"
        | "aten::to.device"
        | "aten::to.dtype"
        | "aten::to.dtype_layout"
        | "aten::to.prim_Device"
        | "aten::to.prim_dtype"
        | "aten::type_as"
        | "aten::zeros"
        | "aten::abs"
        | "aten::abs_"
        | "aten::acos"
        | "aten::acos_"
        | "aten::asin"
        | "aten::asin_"
        | "aten::atan"
        | "aten::atan_"
        | "aten::ceil"
        | "aten::ceil_"
        | "aten::cos"
        | "aten::cos_"
        | "aten::cosh"
        | "aten::cosh_"
        | "aten::erf"
        | "aten::erf_"
        | "aten::erfc"
        | "aten::erfc_"
        | "aten::exp"
        | "aten::exp_"
        | "aten::expm1"
        | "aten::expm1_"
        | "aten::floor"
        | "aten::floor_"
        | "aten::frac"
        | "aten::frac_"
        | "aten::lgamma"
        | "aten::lgamma_"
        | "aten::log"
        | "aten::log_"
        | "aten::log10"
        | "aten::log10_"
        | "aten::log1p"
        | "aten::log1p_"
        | "aten::log2"
        | "aten::log2_"
        | "aten::neg"
        | "aten::neg_"
        | "aten::reciprocal"
        | "aten::reciprocal_"
        | "aten::round"
        | "aten::round_"
        | "aten::rsqrt"
        | "aten::rsqrt_"
        | "aten::sigmoid"
        | "aten::sigmoid_"
        | "aten::sin"
        | "aten::sin_"
        | "aten::sinh"
        | "aten::sinh_"
        | "aten::sqrt"
        | "aten::sqrt_"
        | "aten::tan"
        | "aten::tan_"
        | "aten::tanh"
        | "aten::tanh_"
        | "aten::trunc"
        | "aten::trunc_" => Unary,
        "aten::mean" | "aten::sum" | "prim::NumToTensor.Scalar" | "prim::NumToTensor.bool" => {
            ZeroDimTensor
        }
        "aten::adaptive_avg_pool2d" => AdaptiveAvgPool2d,
        "aten::arange" => ArangeEnd,
        "aten::arange.start" => ArangeStart,
        "aten::arange.start_step" => ArangeStartStep,
        "aten::squeeze" => SqueezeNoDim,
        "aten::squeeze.dim" => Squeeze,
        "aten::squeeze.dims" => SqueezeDims,
        "aten::unsqueeze" => Unsqueeze,
        "aten::slice.Tensor" => Slice,
        "aten::select.int" => Select,
        "aten::index_select" => IndexSelect,
        "aten::embedding" => Embedding,
        "aten::mm" => Mm,
        "aten::dot" => Dot,
        "aten::mv" => Mv,
        "aten::matmul" => Matmul,
        "aten::linear" => Linear,
        "aten::max_pool2d" => MaxPool2d,
        "aten::max_pool2d_with_indices" => MaxPool2dWithIndices,
        "aten::t" => T,
        "aten::transpose.int" => Transpose,
        "aten::conv1d" => Conv1d,
        "aten::conv2d" => Conv2d,
        "aten::conv3d" => Conv3d,
        "aten::convolution_backward" => ConvBackwards,
        "aten::convolution" => ConvForwards,
        "aten::_convolution" => ConvForwardsUnderscore,
        "aten::conv_transpose2d.input" => ConvTranspose2dInput,
        "aten::batch_norm" => BatchNorm,
        "aten::flatten.using_ints" => Flatten,
        "aten::cat" => Cat,
        "aten::stack" => Stack,
        "aten::permute" => Permute,
        "aten::movedim.intlist" => Movedim,
        "aten::view" => View,
        "aten::expand_as" => ExpandAs,
        "aten::expand" => Expand,
        "aten::mean.dim" | "aten::sum.dim_IntList" => SumMeanDim,
        "aten::max.dim" => MaxDim,
        "aten::addmm" => Addmm,
        "aten::upsample_nearest2d.vec" => UpsampleNearest2d,
        "aten::argmax" => Argmax,
        "aten::bmm" => Bmm,
        "aten::_shape_as_tensor" => ShapeAsTensor,
        "aten::topk" => Topk,
        "aten::nll_loss_forward" => NllLossForward,
        "aten::native_layer_norm" => NativeLayerNorm,
        "aten::native_batch_norm"
        | "aten::_native_batch_norm_legit"
        | "aten::_native_batch_norm_legit.no_stats" => NativeBatchNorm,
        "aten::_batch_norm_with_update" => BatchNormWithUpdate,
        "aten::cross_entropy_loss" => CrossEntropyLoss,
        _ => return None,
    };
    Some(function)
}

/// The sizes of each output of a node whose operator has shape function `function`.
/// `arguments` are the node's inputs in schema order. An output the function cannot rank is
/// `None`; a size it cannot decide is [`SymInt::Unknown`].
pub fn apply(function: ShapeFunction, arguments: &[ShapeArgument]) -> Vec<Shape> {
    use ShapeFunction::*;
    let argument = |index: usize| {
        arguments
            .get(index)
            .cloned()
            .unwrap_or(ShapeArgument::Other)
    };
    let tensor = |index: usize| argument(index).tensor();
    let one = |shape: Shape| vec![shape];
    match function {
        Unary => one(match argument(0) {
            ShapeArgument::IntList(list) => list,
            other => other.tensor(),
        }),
        Broadcast => one(broadcast(&tensor(0), &tensor(1))),
        BroadcastThree => one(broadcast(&broadcast(&tensor(0), &tensor(1)), &tensor(2))),
        BroadcastOneThree => one(broadcast(&tensor(0), &tensor(2))),
        BroadcastInplace => one(tensor(0)),
        ZeroDimTensor => one(Some(Vec::new())),
        AdaptiveAvgPool2d => one(adaptive_avg_pool2d(&tensor(0), argument(1).int_list())),
        ArangeEnd => one(arange(Some(0.0), argument(0).number(), Some(1.0))),
        ArangeStart => one(arange(
            argument(0).number(),
            argument(1).number(),
            Some(1.0),
        )),
        ArangeStartStep => one(arange(
            argument(0).number(),
            argument(1).number(),
            argument(2).number(),
        )),
        SqueezeNoDim => one(squeeze_all(&tensor(0))),
        Squeeze => one(squeeze_dim(&tensor(0), argument(1).int())),
        SqueezeDims => one(squeeze_dims(&tensor(0), argument(1).int_list())),
        Unsqueeze => one(unsqueeze(&tensor(0), argument(1).int())),
        Slice => one(slice(
            &tensor(0),
            argument(1).int(),
            optional_int(&argument(2)),
            optional_int(&argument(3)),
            argument(4).int(),
        )),
        Select => one(select(&tensor(0), argument(1).int())),
        IndexSelect => one(index_select(&tensor(0), argument(1).int(), &tensor(2))),
        Embedding => one(embedding(&tensor(0), &tensor(1))),
        Mm => one(mm(&tensor(0), &tensor(1))),
        Dot => one(Some(Vec::new())),
        Mv => one(Some(vec![dim_at(&tensor(0), 0)])),
        Matmul => one(matmul(&tensor(0), &tensor(1))),
        Linear => one(matmul(&tensor(0), &transpose_2d(&tensor(1)))),
        MaxPool2d | MaxPool2dWithIndices => {
            let out = max_pool2d(
                &tensor(0),
                argument(1).int_list(),
                argument(2).int_list(),
                argument(3).int_list(),
                argument(4).int_list(),
                argument(5).bool(),
            );
            if function == MaxPool2d {
                one(out)
            } else {
                vec![out.clone(), out]
            }
        }
        T => one(transpose_2d(&tensor(0))),
        Transpose => one(transpose(&tensor(0), argument(1).int(), argument(2).int())),
        Conv1d | Conv2d | Conv3d => one(conv_output_size(
            &tensor(0),
            &tensor(1),
            argument(3).int_list(),
            argument(4).int_list(),
            argument(5).int_list(),
        )),
        ConvBackwards => vec![tensor(1), tensor(2), Some(vec![dim_at(&tensor(0), 1)])],
        ConvForwards | ConvForwardsUnderscore => one(conv_forwards(
            &tensor(0),
            &tensor(1),
            argument(3).int_list(),
            argument(4).int_list(),
            argument(5).int_list(),
            argument(6).bool(),
            argument(7).int_list(),
            argument(8).int(),
        )),
        ConvTranspose2dInput => one(conv_transpose2d(
            &tensor(0),
            &tensor(1),
            &argument(3),
            &argument(4),
            &argument(5),
            argument(6).int(),
            &argument(7),
        )),
        BatchNorm => one(tensor(0)),
        Flatten => one(flatten(&tensor(0), argument(1).int(), argument(2).int())),
        Cat => one(cat(&argument(0), argument(1).int())),
        Stack => one(stack(&argument(0), argument(1).int())),
        Permute => one(permute(&tensor(0), argument(1).int_list())),
        Movedim => one(movedim(
            &tensor(0),
            argument(1).int_list(),
            argument(2).int_list(),
        )),
        View => one(view(&tensor(0), argument(1).int_list())),
        ExpandAs => one(expand(&tensor(0), tensor(1))),
        Expand => one(expand(&tensor(0), argument(1).int_list())),
        SumMeanDim => one(sum_mean_dim(&tensor(0), &argument(1), argument(2).bool())),
        MaxDim => {
            let out = sum_mean_dim(
                &tensor(0),
                &ShapeArgument::IntList(Some(vec![argument(1).int()])),
                argument(2).bool(),
            );
            vec![out.clone(), out]
        }
        Addmm => one(broadcast(&tensor(0), &mm(&tensor(1), &tensor(2)))),
        UpsampleNearest2d => one(upsample_nearest2d(&tensor(0), &argument(1), &argument(2))),
        Argmax => one(match argument(1).is_none() {
            Some(true) => Some(Vec::new()),
            Some(false) => reduce_along_dim(&tensor(0), argument(1).int(), argument(2).bool()),
            None => None,
        }),
        Bmm => {
            let (a, b) = (tensor(0), tensor(1));
            one(Some(vec![dim_at(&a, 0), dim_at(&a, 1), dim_at(&b, 2)]))
        }
        ShapeAsTensor => one(Some(vec![match tensor(0) {
            Some(sizes) => SymInt::Static(sizes.len() as i64),
            None => SymInt::Unknown,
        }])),
        Topk => {
            let out = topk(&tensor(0), argument(1).int(), argument(2).int());
            vec![out.clone(), out]
        }
        NllLossForward => vec![
            nll_loss_reduction_shape(&tensor(0), argument(3).int()),
            Some(Vec::new()),
        ],
        CrossEntropyLoss => one(nll_loss_reduction_shape(&tensor(0), argument(3).int())),
        NativeLayerNorm => {
            let input = tensor(0);
            let reduction = match (&input, argument(1).int_list()) {
                (Some(sizes), Some(normalized)) if normalized.len() <= sizes.len() => {
                    let kept = sizes.len() - normalized.len();
                    let mut out = sizes[..kept].to_vec();
                    out.extend(vec![SymInt::Static(1); normalized.len()]);
                    Some(out)
                }
                _ => None,
            };
            vec![input, reduction.clone(), reduction]
        }
        NativeBatchNorm => {
            let input = tensor(0);
            let size = match argument(5).bool() {
                Some(true) => Some(vec![dim_at(&input, 1)]),
                Some(false) => Some(vec![SymInt::Static(0)]),
                None => None,
            };
            vec![input, size.clone(), size]
        }
        BatchNormWithUpdate => {
            let input = tensor(0);
            let size = Some(vec![dim_at(&input, 1)]);
            vec![input, size.clone(), size, Some(vec![SymInt::Static(0)])]
        }
    }
}

/// An optional int argument: `Some(None)` for the constant `None`.
fn optional_int(argument: &ShapeArgument) -> Option<Option<SymInt>> {
    match argument {
        ShapeArgument::None => Some(None),
        ShapeArgument::Int(value) => Some(Some(*value)),
        _ => None,
    }
}

/// `sizes[index]` (Python indexing, negative from the end) when the rank is known and the
/// index is in range; unknown otherwise.
fn dim_at(shape: &Shape, index: i64) -> SymInt {
    let Some(sizes) = shape else {
        return SymInt::Unknown;
    };
    let position = if index < 0 {
        index + sizes.len() as i64
    } else {
        index
    };
    usize::try_from(position)
        .ok()
        .and_then(|position| sizes.get(position).copied())
        .unwrap_or(SymInt::Unknown)
}

fn list_at(list: &Option<Vec<SymInt>>, index: usize) -> SymInt {
    list.as_ref()
        .and_then(|list| list.get(index).copied())
        .unwrap_or(SymInt::Unknown)
}

fn add(a: SymInt, b: SymInt) -> SymInt {
    match (a.known(), b.known()) {
        (Some(a), Some(b)) => a.checked_add(b).map_or(SymInt::Unknown, SymInt::Static),
        _ => SymInt::Unknown,
    }
}

fn sub(a: SymInt, b: SymInt) -> SymInt {
    match (a.known(), b.known()) {
        (Some(a), Some(b)) => a.checked_sub(b).map_or(SymInt::Unknown, SymInt::Static),
        _ => SymInt::Unknown,
    }
}

fn mul(a: SymInt, b: SymInt) -> SymInt {
    match (a.known(), b.known()) {
        (Some(a), Some(b)) => a.checked_mul(b).map_or(SymInt::Unknown, SymInt::Static),
        _ => SymInt::Unknown,
    }
}

/// Python's `a // b` (rounding towards negative infinity).
fn floor_div(a: SymInt, b: SymInt) -> SymInt {
    match (a.known(), b.known()) {
        (Some(a), Some(b)) if b != 0 => match a.checked_div(b) {
            // Truncating division rounds towards zero; Python rounds down.
            Some(quotient) if a % b != 0 && ((a < 0) != (b < 0)) => SymInt::Static(quotient - 1),
            Some(quotient) => SymInt::Static(quotient),
            None => SymInt::Unknown,
        },
        _ => SymInt::Unknown,
    }
}

/// The product of `sizes` (PyTorch's `numel`/`multiply_integers`).
fn product(sizes: &[SymInt]) -> SymInt {
    sizes
        .iter()
        .fold(SymInt::Static(1), |acc, &size| mul(acc, size))
}

/// `maybe_wrap_dim(dim, rank)`: the dimension counted from the front, when it is a constant
/// in range (a scalar counts as rank 1).
fn wrap_dim(dim: SymInt, rank: usize) -> Option<usize> {
    let dim = dim.known()?;
    let rank = rank.max(1) as i64;
    if dim < -rank || dim >= rank {
        return None;
    }
    Some(if dim < 0 { dim + rank } else { dim } as usize)
}

/// One output size of `broadcast(a, b)`: `sizeB if sizeA == 1 else sizeA`.
fn broadcast_size(a: SymInt, b: SymInt) -> SymInt {
    match a {
        SymInt::Static(1) => b,
        SymInt::Static(_) => a,
        // Equal symbols become the same value, so both branches give it.
        _ if a == b && a != SymInt::Unknown => a,
        _ => SymInt::Unknown,
    }
}

fn broadcast(a: &Shape, b: &Shape) -> Shape {
    let (a, b) = (a.as_ref()?, b.as_ref()?);
    let rank = a.len().max(b.len());
    let size = |sizes: &Vec<SymInt>, i: usize| {
        let offset = rank - i;
        if offset <= sizes.len() {
            sizes[sizes.len() - offset]
        } else {
            SymInt::Static(1)
        }
    };
    Some(
        (0..rank)
            .map(|i| broadcast_size(size(a, i), size(b, i)))
            .collect(),
    )
}

fn adaptive_avg_pool2d(input: &Shape, output_size: Option<Vec<SymInt>>) -> Shape {
    let input = input.as_ref()?;
    let output_size = output_size?;
    let mut out = input[..input.len().saturating_sub(2)].to_vec();
    out.extend(output_size);
    Some(out)
}

fn arange(start: Option<f64>, end: Option<f64>, step: Option<f64>) -> Shape {
    let length = match (start, end, step) {
        (Some(start), Some(end), Some(step)) if step != 0.0 => {
            let length = ((end - start) / step).ceil();
            if length.is_finite() {
                SymInt::Static(length as i64)
            } else {
                SymInt::Unknown
            }
        }
        _ => SymInt::Unknown,
    };
    Some(vec![length])
}

fn squeeze_all(input: &Shape) -> Shape {
    let mut out = Vec::new();
    for &size in input.as_ref()? {
        match size {
            SymInt::Static(1) => {}
            SymInt::Static(_) => out.push(size),
            // Whether the size is 1 is undecided, and so is the output's rank.
            _ => return None,
        }
    }
    Some(out)
}

fn squeeze_dim(input: &Shape, dim: SymInt) -> Shape {
    let sizes = input.as_ref()?;
    let dim = wrap_dim(dim, sizes.len())?;
    let mut out = Vec::new();
    for (index, &size) in sizes.iter().enumerate() {
        if index == dim {
            match size {
                SymInt::Static(1) => {}
                SymInt::Static(_) => out.push(size),
                _ => return None,
            }
        } else {
            out.push(size);
        }
    }
    Some(out)
}

fn squeeze_dims(input: &Shape, dims: Option<Vec<SymInt>>) -> Shape {
    let sizes = input.as_ref()?;
    let dims = dims?;
    if dims.is_empty() {
        // The function returns its input list itself, which is a list only when the sizes
        // were all constants.
        return sizes
            .iter()
            .all(|size| size.known().is_some())
            .then(|| sizes.clone());
    }
    for &dim in &dims {
        wrap_dim(dim, sizes.len())?;
    }
    // A size of 1 is kept only when its index is `not in` the dims, a test partial
    // evaluation leaves undecided; so is `size == 1` for a size that is not constant. Only
    // inputs without such sizes get a ranked output, which is then the input's sizes.
    if sizes
        .iter()
        .any(|size| !matches!(size, SymInt::Static(value) if *value != 1))
    {
        return None;
    }
    Some(sizes.clone())
}

fn unsqueeze(input: &Shape, dim: SymInt) -> Shape {
    let sizes = input.as_ref()?;
    let dim = wrap_dim(dim, sizes.len() + 1)?;
    let mut out = sizes.clone();
    out.insert(dim, SymInt::Static(1));
    Some(out)
}

fn slice(
    input: &Shape,
    dim: SymInt,
    start: Option<Option<SymInt>>,
    end: Option<Option<SymInt>>,
    step: SymInt,
) -> Shape {
    let sizes = input.as_ref()?;
    if sizes.is_empty() {
        return None;
    }
    let dim = wrap_dim(dim, sizes.len())?;
    let mut out = sizes.clone();
    out[dim] = slice_length(sizes[dim], start, end, step);
    Some(out)
}

/// The length `slice` gives a dimension of size `size`, when every part is a constant.
fn slice_length(
    size: SymInt,
    start: Option<Option<SymInt>>,
    end: Option<Option<SymInt>>,
    step: SymInt,
) -> SymInt {
    const MAX_INT: i64 = i64::MAX;
    let (Some(size), Some(step)) = (size.known(), step.known()) else {
        return SymInt::Unknown;
    };
    let start = match start {
        Some(None) => 0,
        Some(Some(SymInt::Static(value))) => value,
        _ => return SymInt::Unknown,
    };
    let end = match end {
        Some(None) => MAX_INT,
        Some(Some(SymInt::Static(value))) => value,
        _ => return SymInt::Unknown,
    };
    if step <= 0 {
        return SymInt::Unknown;
    }
    let mut start = if start == MAX_INT { 0 } else { start };
    let mut end = end;
    if start < 0 {
        start += size;
    }
    if end < 0 {
        end += size;
    }
    if start < 0 {
        start = 0;
    } else if start > size {
        start = size;
    }
    if end < start {
        end = start;
    } else if end >= size {
        end = size;
    }
    floor_div(SymInt::Static(end - start + step - 1), SymInt::Static(step))
}

fn select(input: &Shape, dim: SymInt) -> Shape {
    let sizes = input.as_ref()?;
    if sizes.is_empty() {
        return None;
    }
    let dim = wrap_dim(dim, sizes.len())?;
    let mut out = sizes.clone();
    out.remove(dim);
    Some(out)
}

fn index_select(input: &Shape, dim: SymInt, index: &Shape) -> Shape {
    let sizes = input.as_ref()?;
    let dim = wrap_dim(dim, sizes.len())?;
    let count = match index {
        Some(index) => product(index),
        None => SymInt::Unknown,
    };
    let mut out = sizes.clone();
    if dim < out.len() {
        out[dim] = count;
    }
    Some(out)
}

fn embedding(weight: &Shape, indices: &Shape) -> Shape {
    let indices = indices.as_ref()?;
    if indices.len() == 1 {
        return index_select(weight, SymInt::Static(0), &Some(indices.clone()));
    }
    let mut out = indices.clone();
    out.push(dim_at(weight, 1));
    Some(out)
}

fn mm(a: &Shape, b: &Shape) -> Shape {
    Some(vec![dim_at(a, 0), dim_at(b, 1)])
}

fn matmul(a: &Shape, b: &Shape) -> Shape {
    let (a, b) = (a.as_ref()?, b.as_ref()?);
    match (a.len(), b.len()) {
        (0, _) | (_, 0) => None,
        (1, 1) => Some(Vec::new()),
        (2, 1) => Some(vec![a[0]]),
        (1, 2) => Some(vec![b[1]]),
        (2, 2) => Some(vec![a[0], b[1]]),
        (rank_a, rank_b) => {
            let batch_a = Some(a[..rank_a.saturating_sub(2)].to_vec());
            let batch_b = Some(b[..rank_b.saturating_sub(2)].to_vec());
            let mut out = broadcast(&batch_a, &batch_b)?;
            if rank_a > 1 {
                out.push(a[rank_a - 2]);
            }
            if rank_b > 1 {
                out.push(b[rank_b - 1]);
            }
            Some(out)
        }
    }
}

/// PyTorch's `t`: a rank-2 shape reversed, ranks 0 and 1 kept.
fn transpose_2d(input: &Shape) -> Shape {
    let sizes = input.as_ref()?;
    match sizes.len() {
        0 | 1 => Some(sizes.clone()),
        2 => Some(vec![sizes[1], sizes[0]]),
        _ => None,
    }
}

fn transpose(input: &Shape, dim0: SymInt, dim1: SymInt) -> Shape {
    let sizes = input.as_ref()?;
    let dim0 = wrap_dim(dim0, sizes.len())?;
    let dim1 = wrap_dim(dim1, sizes.len())?;
    let mut out = sizes.clone();
    if dim0 < out.len() && dim1 < out.len() {
        out.swap(dim0, dim1);
    }
    Some(out)
}

/// `pooling_output_shape` for one spatial dimension.
fn pooling_output_size(
    input: SymInt,
    kernel: SymInt,
    pad: SymInt,
    stride: SymInt,
    dilation: SymInt,
    ceil_mode: Option<bool>,
) -> SymInt {
    let Some(ceil_mode) = ceil_mode else {
        return SymInt::Unknown;
    };
    let extra = if ceil_mode {
        sub(stride, SymInt::Static(1))
    } else {
        SymInt::Static(0)
    };
    let numerator = add(
        sub(
            sub(
                add(add(input, pad), pad),
                mul(dilation, sub(kernel, SymInt::Static(1))),
            ),
            SymInt::Static(1),
        ),
        extra,
    );
    let mut out = add(floor_div(numerator, stride), SymInt::Static(1));
    if ceil_mode {
        match (out.known(), stride.known(), input.known(), pad.known()) {
            (Some(o), Some(s), Some(i), Some(p)) => {
                if (o - 1) * s >= i + p {
                    out = SymInt::Static(o - 1);
                }
            }
            _ => out = SymInt::Unknown,
        }
    }
    out
}

fn max_pool2d(
    input: &Shape,
    kernel: Option<Vec<SymInt>>,
    stride: Option<Vec<SymInt>>,
    padding: Option<Vec<SymInt>>,
    dilation: Option<Vec<SymInt>>,
    ceil_mode: Option<bool>,
) -> Shape {
    let sizes = input.as_ref()?;
    if sizes.len() != 3 && sizes.len() != 4 {
        return None;
    }
    // A one-element list stands for both dimensions; a list of unknown length decides nothing.
    let pair = |list: &Option<Vec<SymInt>>| -> (SymInt, SymInt) {
        match list {
            Some(list) if list.len() == 1 => (list[0], list[0]),
            Some(list) => (
                list_at(&Some(list.clone()), 0),
                list_at(&Some(list.clone()), 1),
            ),
            None => (SymInt::Unknown, SymInt::Unknown),
        }
    };
    let (kernel_h, kernel_w) = pair(&kernel);
    let (stride_h, stride_w) = match &stride {
        Some(list) if list.is_empty() => (kernel_h, kernel_w),
        other => pair(other),
    };
    let (pad_h, pad_w) = pair(&padding);
    let (dilation_h, dilation_w) = pair(&dilation);
    let height = pooling_output_size(
        dim_at(input, -2),
        kernel_h,
        pad_h,
        stride_h,
        dilation_h,
        ceil_mode,
    );
    let width = pooling_output_size(
        dim_at(input, -1),
        kernel_w,
        pad_w,
        stride_w,
        dilation_w,
        ceil_mode,
    );
    if sizes.len() == 3 {
        Some(vec![dim_at(input, -3), height, width])
    } else {
        Some(vec![dim_at(input, -4), dim_at(input, -3), height, width])
    }
}

fn conv_output_size(
    input: &Shape,
    weight: &Shape,
    stride: Option<Vec<SymInt>>,
    padding: Option<Vec<SymInt>>,
    dilation: Option<Vec<SymInt>>,
) -> Shape {
    let sizes = input.as_ref()?;
    let mut out = vec![dim_at(input, 0), dim_at(weight, 0)];
    for d in 2..sizes.len() {
        let dilation_d = match &dilation {
            Some(list) if list.is_empty() => SymInt::Static(1),
            other => list_at(other, d - 2),
        };
        let kernel = add(
            mul(dilation_d, sub(dim_at(weight, d as i64), SymInt::Static(1))),
            SymInt::Static(1),
        );
        let padded = add(sizes[d], mul(SymInt::Static(2), list_at(&padding, d - 2)));
        out.push(add(
            floor_div(sub(padded, kernel), list_at(&stride, d - 2)),
            SymInt::Static(1),
        ));
    }
    Some(out)
}

#[allow(clippy::too_many_arguments)]
fn conv_forwards(
    input: &Shape,
    weight: &Shape,
    stride: Option<Vec<SymInt>>,
    padding: Option<Vec<SymInt>>,
    dilation: Option<Vec<SymInt>>,
    transposed: Option<bool>,
    output_padding: Option<Vec<SymInt>>,
    groups: SymInt,
) -> Shape {
    let sizes = input.as_ref()?;
    let transposed = transposed?;
    let mut out = vec![dim_at(input, 0)];
    if transposed {
        out.push(mul(dim_at(weight, 1), groups));
    } else {
        out.push(dim_at(weight, 0));
    }
    for d in 2..sizes.len() {
        let dilation_d = match &dilation {
            Some(list) if list.is_empty() => SymInt::Static(1),
            other => list_at(other, d - 2),
        };
        let output_padding_d = match &output_padding {
            Some(list) if list.is_empty() => SymInt::Static(0),
            other => list_at(other, d - 2),
        };
        let weight_d = dim_at(weight, d as i64);
        if transposed {
            out.push(transposed_size(
                sizes[d],
                list_at(&stride, d - 2),
                list_at(&padding, d - 2),
                mul(dilation_d, sub(weight_d, SymInt::Static(1))),
                output_padding_d,
            ));
        } else {
            let kernel = add(
                mul(dilation_d, sub(weight_d, SymInt::Static(1))),
                SymInt::Static(1),
            );
            let padded = add(sizes[d], mul(SymInt::Static(2), list_at(&padding, d - 2)));
            out.push(add(
                floor_div(sub(padded, kernel), list_at(&stride, d - 2)),
                SymInt::Static(1),
            ));
        }
    }
    Some(out)
}

/// `(input - 1) * stride - 2 * padding + kernel + output_padding + 1`.
fn transposed_size(
    input: SymInt,
    stride: SymInt,
    padding: SymInt,
    kernel: SymInt,
    output_padding: SymInt,
) -> SymInt {
    add(
        add(
            add(
                sub(
                    mul(sub(input, SymInt::Static(1)), stride),
                    mul(SymInt::Static(2), padding),
                ),
                kernel,
            ),
            output_padding,
        ),
        SymInt::Static(1),
    )
}

fn conv_transpose2d(
    input: &Shape,
    weight: &Shape,
    stride: &ShapeArgument,
    padding: &ShapeArgument,
    output_padding: &ShapeArgument,
    groups: SymInt,
    dilation: &ShapeArgument,
) -> Shape {
    let sizes = input.as_ref()?;
    let list_or = |argument: &ShapeArgument, default: i64| match argument {
        ShapeArgument::None => Some(vec![SymInt::Static(default); 2]),
        other => other.int_list(),
    };
    let stride = list_or(stride, 1);
    let padding = list_or(padding, 0);
    let output_padding = list_or(output_padding, 0);
    let dilation = list_or(dilation, 1);
    let mut out = vec![dim_at(input, 0), mul(dim_at(weight, 1), groups)];
    for d in 2..sizes.len() {
        let dilation_d = match &dilation {
            Some(list) if list.is_empty() => SymInt::Static(1),
            other => list_at(other, d - 2),
        };
        out.push(transposed_size(
            sizes[d],
            list_at(&stride, d - 2),
            list_at(&padding, d - 2),
            mul(dilation_d, sub(dim_at(weight, d as i64), SymInt::Static(1))),
            list_at(&output_padding, d - 2),
        ));
    }
    Some(out)
}

fn flatten(input: &Shape, start: SymInt, end: SymInt) -> Shape {
    let sizes = input.as_ref()?;
    let start = wrap_dim(start, sizes.len())?;
    let end = wrap_dim(end, sizes.len())?;
    if start > end {
        return None;
    }
    if sizes.is_empty() {
        return Some(vec![SymInt::Static(1)]);
    }
    if start == end {
        return Some(sizes.clone());
    }
    let mut out = sizes[..start].to_vec();
    out.push(product(&sizes[start..=end]));
    out.extend_from_slice(&sizes[end + 1..]);
    Some(out)
}

/// `numel(sizes) == 0 and len(sizes) == 1`: a legacy empty tensor that `cat` skips.
fn should_skip(sizes: &[SymInt]) -> Option<bool> {
    if sizes.len() != 1 {
        return Some(false);
    }
    sizes[0].known().map(|size| size == 0)
}

fn cat_shapes(tensors: &[Shape], dim: SymInt) -> Shape {
    let tensors: Vec<&Vec<SymInt>> = tensors
        .iter()
        .map(|shape| shape.as_ref())
        .collect::<Option<_>>()?;
    if tensors.iter().any(|sizes| sizes.is_empty()) {
        return None;
    }
    // legacy_cat_wrap_dim: the first tensor that is not a legacy empty one wraps `dim`.
    let mut wrapped = None;
    for sizes in &tensors {
        let legacy_empty = match (sizes.len(), sizes.first()) {
            (1, Some(size)) => size.known().map(|size| size == 0)?,
            _ => false,
        };
        if !legacy_empty && wrapped.is_none() {
            wrapped = Some(wrap_dim(dim, sizes.len())?);
        }
    }
    let dim = match wrapped {
        Some(dim) => dim,
        None => usize::try_from(dim.known()?).ok()?,
    };
    let mut last_kept = None;
    for sizes in &tensors {
        if !should_skip(sizes)? {
            last_kept = Some(*sizes);
        }
    }
    let Some(kept) = last_kept else {
        return Some(vec![SymInt::Static(0)]);
    };
    let mut cat_size = SymInt::Static(0);
    for sizes in &tensors {
        if !should_skip(sizes)? {
            cat_size = add(cat_size, sizes.get(dim).copied().unwrap_or(SymInt::Unknown));
        }
    }
    let mut out = kept.clone();
    if dim >= out.len() {
        return None;
    }
    out[dim] = cat_size;
    Some(out)
}

fn cat(tensors: &ShapeArgument, dim: SymInt) -> Shape {
    match tensors {
        ShapeArgument::TensorList(Some(tensors)) => cat_shapes(tensors, dim),
        _ => None,
    }
}

fn stack(tensors: &ShapeArgument, dim: SymInt) -> Shape {
    let ShapeArgument::TensorList(Some(tensors)) = tensors else {
        return None;
    };
    let unsqueezed: Vec<Shape> = tensors.iter().map(|shape| unsqueeze(shape, dim)).collect();
    cat_shapes(&unsqueezed, dim)
}

fn permute(input: &Shape, dims: Option<Vec<SymInt>>) -> Shape {
    let dims = dims?;
    let rank = dims.len();
    let mut out = Vec::with_capacity(rank);
    for &dim in &dims {
        let dim = wrap_dim(dim, rank)?;
        out.push(dim_at(input, dim as i64));
    }
    Some(out)
}

fn movedim(input: &Shape, source: Option<Vec<SymInt>>, destination: Option<Vec<SymInt>>) -> Shape {
    let sizes = input.as_ref()?;
    let rank = sizes.len();
    if rank <= 1 {
        return sizes
            .iter()
            .all(|size| size.known().is_some())
            .then(|| sizes.clone());
    }
    let (source, destination) = (source?, destination?);
    if source.len() != destination.len() {
        return None;
    }
    let source: Vec<usize> = source
        .iter()
        .map(|&dim| wrap_dim(dim, rank))
        .collect::<Option<_>>()?;
    let destination: Vec<usize> = destination
        .iter()
        .map(|&dim| wrap_dim(dim, rank))
        .collect::<Option<_>>()?;
    let mut order: Vec<Option<usize>> = vec![None; rank];
    let mut free_sources: Vec<bool> = vec![true; rank];
    let mut free_destinations: Vec<bool> = vec![true; rank];
    for (&src, &dst) in source.iter().zip(&destination) {
        order[dst] = Some(src);
        free_sources[src] = false;
        free_destinations[dst] = false;
    }
    let rest_sources: Vec<usize> = (0..rank).filter(|&i| free_sources[i]).collect();
    let rest_destinations: Vec<usize> = (0..rank).filter(|&i| free_destinations[i]).collect();
    for (&src, &dst) in rest_sources.iter().zip(&rest_destinations) {
        order[dst] = Some(src);
    }
    let order: Vec<SymInt> = order
        .into_iter()
        .map(|dim| dim.map(|dim| SymInt::Static(dim as i64)))
        .collect::<Option<_>>()?;
    permute(input, Some(order))
}

fn view(input: &Shape, sizes: Option<Vec<SymInt>>) -> Shape {
    let sizes = sizes?;
    let numel = match input {
        Some(input) => product(input),
        None => SymInt::Unknown,
    };
    let mut new_size = SymInt::Static(1);
    let mut inferred = None;
    for (index, &size) in sizes.iter().enumerate() {
        if size.is_minus_one()? {
            if inferred.is_some() {
                return None;
            }
            inferred = Some(index);
        } else if size.is_non_negative()? {
            new_size = mul(new_size, size);
        } else {
            return None;
        }
    }
    let mut out = sizes;
    if let Some(index) = inferred {
        out[index] = floor_div(numel, new_size);
    }
    Some(out)
}

/// One output size of `expand`, as partial evaluation decides it: a constant target is the
/// output whatever the input size (integer refinement makes both branches that constant),
/// and -1 keeps the input size.
fn expand_size(size: SymInt, target: SymInt) -> SymInt {
    if target.is_minus_one() == Some(true) {
        return size;
    }
    match (size, target) {
        (_, SymInt::Static(_)) => target,
        // `size != target` leads to a branch that raises unless the size is 1, so the
        // value that survives is the size itself.
        (SymInt::Static(value), _) if value != 1 => size,
        _ if size == target && size != SymInt::Unknown => size,
        _ => SymInt::Unknown,
    }
}

fn expand(input: &Shape, sizes: Option<Vec<SymInt>>) -> Shape {
    let sizes = sizes?;
    if sizes.is_empty() {
        return Some(sizes);
    }
    let rank = sizes.len();
    let mut out = Vec::with_capacity(rank);
    for (i, &target) in sizes.iter().enumerate() {
        let offset = rank - 1 - i;
        let size = match input {
            Some(input) if offset < input.len() => input[input.len() - 1 - offset],
            Some(_) => SymInt::Static(1),
            None => SymInt::Unknown,
        };
        out.push(expand_size(size, target));
    }
    Some(out)
}

fn sum_mean_dim(input: &Shape, dims: &ShapeArgument, keepdim: Option<bool>) -> Shape {
    let sizes = input.as_ref()?;
    let dims: Vec<SymInt> = match dims {
        ShapeArgument::None => Vec::new(),
        other => other.int_list()?,
    };
    let reduced: Vec<usize> = if dims.is_empty() {
        (0..sizes.len()).collect()
    } else {
        dims.iter()
            .map(|&dim| wrap_dim(dim, sizes.len()))
            .collect::<Option<_>>()?
    };
    let mut out = Vec::new();
    for (index, &size) in sizes.iter().enumerate() {
        if reduced.contains(&index) {
            if keepdim? {
                out.push(SymInt::Static(1));
            }
        } else {
            out.push(size);
        }
    }
    Some(out)
}

fn reduce_along_dim(input: &Shape, dim: SymInt, keepdim: Option<bool>) -> Shape {
    sum_mean_dim(input, &ShapeArgument::IntList(Some(vec![dim])), keepdim)
}

fn upsample_nearest2d(
    input: &Shape,
    output_size: &ShapeArgument,
    scale_factors: &ShapeArgument,
) -> Shape {
    let mut out = vec![dim_at(input, 0), dim_at(input, 1)];
    match (output_size, scale_factors) {
        (ShapeArgument::IntList(Some(sizes)), ShapeArgument::None) if sizes.len() == 2 => {
            out.extend_from_slice(sizes);
        }
        (ShapeArgument::None, ShapeArgument::Other) => {
            // Scale factors are floats the analysis does not follow.
            out.extend([SymInt::Unknown, SymInt::Unknown]);
        }
        _ => return None,
    }
    Some(out)
}

fn topk(input: &Shape, k: SymInt, dim: SymInt) -> Shape {
    let sizes = input.as_ref()?;
    if sizes.is_empty() {
        return Some(Vec::new());
    }
    let dim = wrap_dim(dim, sizes.len())?;
    let mut out = sizes.clone();
    out[dim] = k;
    Some(out)
}

fn nll_loss_reduction_shape(input: &Shape, reduction: SymInt) -> Shape {
    let sizes = input.as_ref()?;
    match reduction.known() {
        Some(0) if sizes.len() == 2 => Some(vec![sizes[0]]),
        Some(_) => Some(Vec::new()),
        None if sizes.len() != 2 => Some(Vec::new()),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(sizes: &[i64]) -> Shape {
        Some(sizes.iter().map(|&size| SymInt::Static(size)).collect())
    }

    #[test]
    fn broadcast_follows_the_left_operand_when_its_size_is_not_one() {
        let symbol = SymInt::Symbol(7);
        let left = Some(vec![symbol, SymInt::Static(3)]);
        assert_eq!(
            broadcast(&shape(&[2, 3]), &left),
            shape(&[2, 3]),
            "a constant 2 on the left decides the size"
        );
        assert_eq!(
            broadcast(&left, &shape(&[2, 3])),
            Some(vec![SymInt::Unknown, SymInt::Static(3)])
        );
        assert_eq!(broadcast(&left, &left), left);
    }

    #[test]
    fn python_floor_division() {
        assert_eq!(
            floor_div(SymInt::Static(-7), SymInt::Static(2)),
            SymInt::Static(-4)
        );
        assert_eq!(
            floor_div(SymInt::Static(7), SymInt::Static(2)),
            SymInt::Static(3)
        );
        assert_eq!(
            floor_div(SymInt::Static(7), SymInt::Static(0)),
            SymInt::Unknown
        );
    }

    #[test]
    fn view_infers_one_dimension() {
        let sizes = Some(vec![SymInt::Static(-1), SymInt::Static(4)]);
        assert_eq!(view(&shape(&[2, 3, 4]), sizes), shape(&[6, 4]));
        let two_inferred = Some(vec![SymInt::Static(-1), SymInt::Static(-1)]);
        assert_eq!(view(&shape(&[2, 3]), two_inferred), None);
        assert_eq!(view(&shape(&[2, 3]), Some(vec![SymInt::Unknown])), None);
    }

    #[test]
    fn pooling_with_ceil_mode() {
        let out = max_pool2d(
            &shape(&[1, 1, 5, 5]),
            Some(vec![SymInt::Static(2)]),
            Some(vec![SymInt::Static(2)]),
            Some(vec![SymInt::Static(0)]),
            Some(vec![SymInt::Static(1)]),
            Some(true),
        );
        assert_eq!(out, shape(&[1, 1, 3, 3]));
    }
}
