//! Dtype rules for the graph executor's propagation ([`super::propagate_dtypes_where_possible`])
//! where PyTorch's meta run gives up: it refuses every node with a list, bool, None, string
//! or dtype argument, so `view(x, [2, 3])`, `linear(x, w, None)`, `softmax(x, 1, None)` or
//! `conv2d(...)` stay untyped in PyTorch's pass. The executor wants their dtypes (fusion
//! needs complete types), and they follow from what the operators do, not from a meta run:
//!
//! - the operator's own shape-and-dtype rule in the runtime registry, where it has one
//!   (pointwise, reductions, matrix products, convolutions, and their in-place and `out=`
//!   forms: the same rules the kernels are tested against);
//! - an in-place operator (`x.add_(y)`, `x.masked_fill_(m, v)`) returns `self`, and an `out=`
//!   form returns `out`: the result has that tensor's dtype;
//! - operators that move, view, normalize, pool or pick from their first tensor keep its
//!   dtype ([`KEEPS_FIRST_DTYPE`]);
//! - a few read a dtype argument or their inputs' types ([`dtype_from_arguments`]).
//!
//! None of these run in [`super::propagate_dtype`], which stays PyTorch's pass.

use ferrojit_ir::{Graph, NodeId, Prim, Type, ValueId};
use ferrojit_runtime::opdef::{ArgumentFact, TensorFact};
use ferrojit_runtime::registry::OperatorRegistry;
use ferrojit_runtime::IValue;
use ferrojit_tensor::DType;

use super::{promote_types, Dtype};
use crate::constant_insertion::constant_value;

/// Operators whose tensor result has the dtype of their first tensor argument whatever
/// their other arguments: views and copies, padding, pooling, normalization, dropout,
/// indexing and reordering.
const KEEPS_FIRST_DTYPE: &[&str] = &[
    "aten::view",
    "aten::reshape",
    "aten::permute",
    "aten::expand",
    "aten::broadcast_to",
    "aten::repeat",
    "aten::flatten.using_ints",
    "aten::unflatten.int",
    "aten::unsqueeze",
    "aten::squeeze",
    "aten::squeeze.dim",
    "aten::squeeze.dims",
    "aten::transpose.int",
    "aten::t",
    "aten::select.int",
    "aten::slice.Tensor",
    "aten::narrow",
    "aten::contiguous",
    "aten::clone",
    "aten::detach",
    "aten::alias",
    "aten::ravel",
    "aten::flip",
    "aten::roll",
    "aten::rot90",
    "aten::tile",
    "aten::unfold",
    "aten::diff",
    "aten::pad",
    "aten::constant_pad_nd",
    "aten::reflection_pad1d",
    "aten::reflection_pad2d",
    "aten::replication_pad1d",
    "aten::replication_pad2d",
    "aten::dropout",
    "aten::feature_dropout",
    "aten::alpha_dropout",
    "aten::gelu",
    "aten::hardtanh",
    "aten::leaky_relu",
    "aten::elu",
    "aten::threshold",
    // layer_norm, softmax and log_softmax are left to the fuser's type refinement
    // (`fuser/type_refinement.rs`), which reruns the peephole when it types them.
    "aten::group_norm",
    "aten::batch_norm",
    "aten::instance_norm",
    "aten::max_pool1d",
    "aten::max_pool2d",
    "aten::max_pool3d",
    "aten::avg_pool1d",
    "aten::avg_pool2d",
    "aten::avg_pool3d",
    "aten::adaptive_avg_pool1d",
    "aten::adaptive_avg_pool2d",
    "aten::adaptive_avg_pool3d",
    "aten::adaptive_max_pool1d",
    "aten::adaptive_max_pool2d",
    "aten::upsample_nearest1d.vec",
    "aten::upsample_nearest2d.vec",
    "aten::upsample_nearest3d.vec",
    "aten::upsample_bilinear2d.vec",
    "aten::upsample_linear1d.vec",
    "aten::upsample_bicubic2d.vec",
    "aten::pixel_shuffle",
    "aten::pixel_unshuffle",
    "aten::masked_fill.Scalar",
    "aten::masked_fill.Tensor",
    "aten::index_select",
    "aten::gather",
    "aten::take_along_dim",
    "aten::index.Tensor",
    "aten::index_add",
    "aten::scatter.src",
    "aten::scatter.value",
    "aten::scatter_add",
    "aten::embedding",
    "aten::scaled_dot_product_attention",
    "aten::tril",
    "aten::triu",
    "aten::atleast_1d",
    "aten::atleast_2d",
    "aten::atleast_3d",
    "aten::flipud",
    "aten::fliplr",
];

/// Creation operators whose `ScalarType? dtype` argument is at this position; None gives
/// the default dtype (Float).
const CREATION_DTYPE_ARGUMENT: &[(&str, usize)] = &[
    ("aten::zeros", 1),
    ("aten::ones", 1),
    ("aten::empty.memory_format", 1),
    ("aten::rand", 1),
    ("aten::randn", 1),
    ("aten::rand.generator", 2),
    ("aten::randn.generator", 2),
];

/// `*_like` operators: the `dtype` argument at this position, or the input's dtype.
const LIKE_DTYPE_ARGUMENT: &[(&str, usize)] = &[
    ("aten::zeros_like", 1),
    ("aten::ones_like", 1),
    ("aten::empty_like", 1),
    ("aten::rand_like", 1),
    ("aten::randn_like", 1),
    ("aten::full_like", 2),
];

pub(super) fn to_dtype(dtype: DType) -> Option<Dtype> {
    Dtype::from_name(dtype.scalar_type_name())
}

fn to_tensor_dtype(dtype: Dtype) -> Option<DType> {
    DType::ALL
        .into_iter()
        .find(|candidate| candidate.scalar_type_name() == dtype.name())
}

/// The dtype a tensor-typed value is known to have.
fn value_dtype(graph: &Graph, value: ValueId) -> Option<Dtype> {
    match graph.value_type(value) {
        Type::RefinedTensor(refinement) => Dtype::from_name(refinement.scalar_type.as_deref()?),
        _ => None,
    }
}

fn is_tensor(ty: &Type) -> bool {
    matches!(ty, Type::Tensor | Type::RefinedTensor(_))
}

/// A `ScalarType` argument known as a constant: `Some(None)` when it is None.
fn constant_dtype(graph: &Graph, value: ValueId) -> Option<Option<Dtype>> {
    match constant_value(graph, value)? {
        IValue::None => Some(None),
        IValue::Int(index) => Some(Some(to_dtype(DType::from_scalar_type_index(index).ok()?)?)),
        _ => None,
    }
}

/// What the runtime's shape rules are told of one argument.
fn argument_fact(graph: &Graph, value: ValueId) -> ArgumentFact {
    let ty = graph.value_type(value);
    if is_tensor(ty) {
        let (dtype, sizes) = match ty {
            Type::RefinedTensor(refinement) => {
                let dtype = value_dtype(graph, value).and_then(to_tensor_dtype);
                let sizes = refinement.sizes.as_ref().and_then(|sizes| {
                    sizes
                        .iter()
                        .map(|size| size.and_then(|s| usize::try_from(s).ok()))
                        .collect::<Option<Vec<usize>>>()
                });
                (dtype, sizes)
            }
            _ => (None, None),
        };
        return ArgumentFact::Tensor(TensorFact {
            dtype,
            sizes,
            is_wrapped_number: false,
        });
    }
    match constant_value(graph, value) {
        Some(constant) => ArgumentFact::Constant(constant),
        None => ArgumentFact::Unknown,
    }
}

/// The dtypes of the tensor outputs of `node` from the runtime's shape rule of its operator.
fn registry_rule_dtypes(graph: &Graph, node: NodeId, full_name: &str) -> Option<Vec<Dtype>> {
    let operator = OperatorRegistry::global().lookup(full_name)?;
    let rule = operator.shape_rule?;
    let facts: Vec<ArgumentFact> = graph
        .node_inputs(node)
        .iter()
        .map(|&input| argument_fact(graph, input))
        .collect();
    let results = rule.apply(&facts).ok()?;
    results
        .iter()
        .map(|fact| fact.dtype.and_then(to_dtype))
        .collect()
}

/// The dtype of each tensor output of `node` that the rules here give, in output order
/// (`None` for an output they do not type).
pub(super) fn executor_dtypes(graph: &Graph, node: NodeId) -> Vec<Option<Dtype>> {
    let tensor_outputs: Vec<ValueId> = graph
        .node_outputs(node)
        .iter()
        .copied()
        .filter(|&output| is_tensor(graph.value_type(output)))
        .collect();
    let Some(schema) = graph.node(node).schema.clone() else {
        return vec![None; tensor_outputs.len()];
    };
    let full_name = schema.full_name();
    if let Some(dtypes) = registry_rule_dtypes(graph, node, &full_name) {
        if dtypes.len() == tensor_outputs.len() {
            return dtypes.into_iter().map(Some).collect();
        }
    }
    if tensor_outputs.len() != 1 {
        return vec![None; tensor_outputs.len()];
    }
    vec![single_output_dtype(graph, node, &schema, &full_name)]
}

fn single_output_dtype(
    graph: &Graph,
    node: NodeId,
    schema: &ferrojit_ir::schema::FunctionSchema,
    full_name: &str,
) -> Option<Dtype> {
    let inputs = graph.node_inputs(node).to_vec();
    // In place or `out=`: the result is the argument it aliases and writes.
    if let Some(written) = schema
        .returns
        .first()
        .and_then(|ret| ret.alias_info.as_ref())
    {
        if written.is_write {
            let position = schema.arguments.iter().position(|argument| {
                argument
                    .alias_info
                    .as_ref()
                    .is_some_and(|alias| alias.is_write && alias.before_sets == written.before_sets)
            })?;
            return value_dtype(graph, *inputs.get(position)?);
        }
    }
    let first_tensor = inputs
        .iter()
        .copied()
        .find(|&input| is_tensor(graph.value_type(input)));
    if KEEPS_FIRST_DTYPE.contains(&full_name) {
        return value_dtype(graph, first_tensor?);
    }
    dtype_from_arguments(graph, &inputs, full_name)
}

/// Rules that read a dtype argument or the types of the inputs.
fn dtype_from_arguments(graph: &Graph, inputs: &[ValueId], full_name: &str) -> Option<Dtype> {
    if let Some(&(_, position)) = CREATION_DTYPE_ARGUMENT
        .iter()
        .find(|(n, _)| *n == full_name)
    {
        return constant_dtype(graph, *inputs.get(position)?)?.or(Some(Dtype::Float));
    }
    if let Some(&(_, position)) = LIKE_DTYPE_ARGUMENT.iter().find(|(n, _)| *n == full_name) {
        return match constant_dtype(graph, *inputs.get(position)?)? {
            Some(dtype) => Some(dtype),
            None => value_dtype(graph, *inputs.first()?),
        };
    }
    match full_name {
        // to(dtype, non_blocking, copy, memory_format) and to(device, dtype, ...).
        "aten::to.dtype" => constant_dtype(graph, *inputs.get(1)?)?,
        "aten::to.device" | "aten::to.dtype_layout" => {
            let position = if full_name == "aten::to.device" { 2 } else { 1 };
            match constant_dtype(graph, *inputs.get(position)?)? {
                Some(dtype) => Some(dtype),
                None => value_dtype(graph, *inputs.first()?),
            }
        }
        "aten::type_as" | "aten::to.other" | "aten::expand_as" | "aten::view_as"
        | "aten::reshape_as" => {
            let index = usize::from(matches!(full_name, "aten::type_as" | "aten::to.other"));
            value_dtype(graph, *inputs.get(index)?)
        }
        // cat/stack of a list built here: the promoted type of its tensors.
        "aten::cat" | "aten::stack" | "aten::concat" | "aten::hstack" | "aten::vstack" => {
            let list = graph.producer(*inputs.first()?)?;
            if !graph.kind(list).is_prim(Prim::ListConstruct) {
                return None;
            }
            let mut promoted: Option<Dtype> = None;
            for &item in graph.node_inputs(list) {
                let dtype = value_dtype(graph, item)?;
                promoted = Some(promoted.map_or(dtype, |p| promote_types(p, dtype)));
            }
            promoted
        }
        // full(size, fill, dtype): without a dtype, the fill value's type decides.
        "aten::full" => match constant_dtype(graph, *inputs.get(2)?)? {
            Some(dtype) => Some(dtype),
            None => match graph.value_type(*inputs.get(1)?) {
                Type::Int => Some(Dtype::Long),
                Type::Float => Some(Dtype::Float),
                Type::Bool => Some(Dtype::Bool),
                _ => None,
            },
        },
        // arange(end) / arange(start, end) / arange(start, end, step), then the dtype.
        "aten::arange" | "aten::arange.start" | "aten::arange.start_step" => {
            let numbers = match full_name {
                "aten::arange" => 1,
                "aten::arange.start" => 2,
                _ => 3,
            };
            if let Some(Some(dtype)) = inputs.get(numbers).and_then(|&v| constant_dtype(graph, v)) {
                return Some(dtype);
            }
            let mut all_int = true;
            for &number in inputs.get(..numbers)? {
                match graph.value_type(number) {
                    Type::Int => {}
                    Type::Float => all_int = false,
                    _ => return None,
                }
            }
            Some(if all_int { Dtype::Long } else { Dtype::Float })
        }
        "aten::tensor.int" | "aten::scalar_tensor" | "aten::tensor.float" => {
            if let Some(Some(dtype)) = inputs.get(1).and_then(|&v| constant_dtype(graph, v)) {
                return Some(dtype);
            }
            match graph.value_type(*inputs.first()?) {
                Type::Int if full_name == "aten::tensor.int" => Some(Dtype::Long),
                Type::Float | Type::Int => Some(Dtype::Float),
                _ => None,
            }
        }
        _ => None,
    }
}
