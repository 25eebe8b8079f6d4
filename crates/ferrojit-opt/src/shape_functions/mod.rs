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

mod nn;
mod registry;
mod sizes;
mod views;

pub use registry::shape_function_for;

use nn::*;
use sizes::*;
use views::*;

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

#[cfg(test)]
mod tests {
    use super::nn::*;
    use super::sizes::*;
    use super::views::*;
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
