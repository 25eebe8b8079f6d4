//! Dtype propagation, PyTorch's `DtypePropagation` (`_jit_pass_propagate_dtype`): the scalar
//! type of each operator's tensor output, from the scalar types and ranks of its inputs.
//!
//! PyTorch runs each operator on meta tensors of shape `[1] * rank`, with every `int`
//! argument replaced by 1 and every `float` argument by 1.0, and takes the dtype of the
//! result. It infers nothing for a node with an argument of another type (a list, a bool,
//! `None`, a string), with a tensor input whose dtype or rank is unknown, or with several
//! outputs, and nothing when the operator fails on those arguments. Here the operators'
//! dtype rules (type promotion, comparisons give `Bool`, true division and float functions
//! give the default float type...) are written out for the operators listed in
//! [`result_dtype`]; other operators are left alone.
//!
//! Like PyTorch's pass, it refuses a graph with a loop, a call, an `If` with outputs or a
//! `prim` node with a tensor output ([`propagate_dtype`]); [`propagate_dtypes_where_possible`]
//! skips those instead, for the graph executor.

use ferrojit_ir::{BlockId, Graph, NodeId, Prim, TensorRefinement, Type};
use ferrojit_runtime::registry::OperatorRegistry;

use crate::alias_analysis::attach_registry_schemas;

/// Runs dtype propagation as PyTorch does, failing where PyTorch's pass fails.
pub fn propagate_dtype(graph: &mut Graph) -> Result<(), String> {
    attach_registry_schemas(graph, OperatorRegistry::global());
    let top = graph.top_block();
    propagate_in_block(graph, top, true)
}

/// Runs dtype propagation and skips, rather than refuses, what PyTorch's pass does not
/// handle (loops and the nodes in them, calls, `If` outputs, `prim` nodes).
pub fn propagate_dtypes_where_possible(graph: &mut Graph) {
    attach_registry_schemas(graph, OperatorRegistry::global());
    let top = graph.top_block();
    // Cannot fail: every refusal is turned into a skip when `strict` is false.
    let _ = propagate_in_block(graph, top, false);
}

fn propagate_in_block(graph: &mut Graph, block: BlockId, strict: bool) -> Result<(), String> {
    for node in graph.block_nodes(block) {
        let kind = graph.kind(node).clone();
        if kind.is_prim(Prim::If) {
            for branch in graph.node_blocks(node).to_vec() {
                propagate_in_block(graph, branch, strict)?;
            }
            if strict && !graph.node_outputs(node).is_empty() {
                return Err(
                    "propagate_dtype: the outputs of a prim::If are not merged (PyTorch's pass \
                     fails with 'Not implemented yet')"
                        .to_string(),
                );
            }
            continue;
        }
        if kind.is_prim(Prim::Loop)
            || kind.is_prim(Prim::CallMethod)
            || kind.is_prim(Prim::CallFunction)
            || !graph.node_blocks(node).is_empty()
        {
            if strict {
                return Err(format!(
                    "propagate_dtype: {} is not handled (loops, calls and nodes with blocks)",
                    kind.as_str()
                ));
            }
            continue;
        }
        let has_tensor_output = graph
            .node_outputs(node)
            .iter()
            .any(|&output| is_tensor_type(graph.value_type(output)));
        if !has_tensor_output || kind.is_prim(Prim::Constant) {
            continue;
        }
        if kind.namespace() != "aten" {
            if strict {
                return Err(format!(
                    "propagate_dtype: {} is not supported in dtype propagation",
                    kind.as_str()
                ));
            }
            continue;
        }
        if let Some(dtype) = infer_dtype(graph, node) {
            let output = graph.node_output(node, 0);
            let mut refinement = match graph.value_type(output) {
                Type::RefinedTensor(refinement) => refinement.as_ref().clone(),
                _ => TensorRefinement::default(),
            };
            refinement.scalar_type = Some(dtype.name().to_string());
            graph.set_value_type(output, Type::RefinedTensor(Box::new(refinement)));
        }
    }
    Ok(())
}

fn is_tensor_type(ty: &Type) -> bool {
    matches!(ty, Type::Tensor | Type::RefinedTensor(_))
}

/// A scalar type as PyTorch's type promotion sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    Bool,
    Byte,
    Char,
    Short,
    Int,
    Long,
    Half,
    BFloat16,
    Float,
    Double,
    ComplexHalf,
    ComplexFloat,
    ComplexDouble,
}

impl Dtype {
    /// The dtype PyTorch prints as `name` in a tensor type.
    pub fn from_name(name: &str) -> Option<Dtype> {
        Some(match name {
            "Bool" => Dtype::Bool,
            "Byte" => Dtype::Byte,
            "Char" => Dtype::Char,
            "Short" => Dtype::Short,
            "Int" => Dtype::Int,
            "Long" => Dtype::Long,
            "Half" => Dtype::Half,
            "BFloat16" => Dtype::BFloat16,
            "Float" => Dtype::Float,
            "Double" => Dtype::Double,
            "ComplexHalf" => Dtype::ComplexHalf,
            "ComplexFloat" => Dtype::ComplexFloat,
            "ComplexDouble" => Dtype::ComplexDouble,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Dtype::Bool => "Bool",
            Dtype::Byte => "Byte",
            Dtype::Char => "Char",
            Dtype::Short => "Short",
            Dtype::Int => "Int",
            Dtype::Long => "Long",
            Dtype::Half => "Half",
            Dtype::BFloat16 => "BFloat16",
            Dtype::Float => "Float",
            Dtype::Double => "Double",
            Dtype::ComplexHalf => "ComplexHalf",
            Dtype::ComplexFloat => "ComplexFloat",
            Dtype::ComplexDouble => "ComplexDouble",
        }
    }

    fn is_integral(self) -> bool {
        matches!(
            self,
            Dtype::Byte | Dtype::Char | Dtype::Short | Dtype::Int | Dtype::Long
        )
    }

    fn is_floating(self) -> bool {
        matches!(
            self,
            Dtype::Half | Dtype::BFloat16 | Dtype::Float | Dtype::Double
        )
    }

    fn is_complex(self) -> bool {
        matches!(
            self,
            Dtype::ComplexHalf | Dtype::ComplexFloat | Dtype::ComplexDouble
        )
    }

    /// The complex type with this floating type's precision.
    fn to_complex(self) -> Dtype {
        match self {
            Dtype::Half => Dtype::ComplexHalf,
            Dtype::Double => Dtype::ComplexDouble,
            Dtype::ComplexHalf | Dtype::ComplexFloat | Dtype::ComplexDouble => self,
            _ => Dtype::ComplexFloat,
        }
    }

    /// Byte width of an integral type; only compared within one signedness.
    fn integral_width(self) -> u8 {
        match self {
            Dtype::Byte | Dtype::Char => 1,
            Dtype::Short => 2,
            Dtype::Int => 4,
            _ => 8,
        }
    }
}

/// PyTorch's `promoteTypes`.
pub fn promote_types(a: Dtype, b: Dtype) -> Dtype {
    use Dtype::*;
    if a == b {
        return a;
    }
    match (a, b) {
        (Bool, other) | (other, Bool) => other,
        (Byte, Char) | (Char, Byte) => Short,
        _ if a.is_integral() && b.is_integral() => {
            if a.integral_width() >= b.integral_width() {
                a
            } else {
                b
            }
        }
        _ if a.is_integral() => b,
        _ if b.is_integral() => a,
        (Half, BFloat16) | (BFloat16, Half) => Float,
        _ if a.is_floating() && b.is_floating() => {
            let rank = |t: Dtype| match t {
                Half | BFloat16 => 0,
                Float => 1,
                _ => 2,
            };
            if rank(a) >= rank(b) {
                a
            } else {
                b
            }
        }
        _ => {
            // At least one complex type: the complex type wide enough for both.
            let width = |t: Dtype| match t {
                Half | BFloat16 | ComplexHalf => 0,
                Float | ComplexFloat => 1,
                _ => 2,
            };
            match width(a).max(width(b)) {
                0 if a != BFloat16 && b != BFloat16 => ComplexHalf,
                0 | 1 => ComplexFloat,
                _ => ComplexDouble,
            }
        }
    }
}

/// One input of a node as the meta run sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Operand {
    Tensor {
        dtype: Dtype,
        rank: usize,
    },
    /// An `int` argument (passed as 1).
    Int,
    /// A `float` argument (passed as 1.0).
    Float,
}

/// PyTorch's `result_type` over tensors and numbers: tensors with dimensions first, then
/// zero-dimensional tensors, then numbers, a later group counting only when it is of a
/// higher category (bool < integral < floating < complex).
fn result_type(operands: &[Operand]) -> Dtype {
    let mut dimensioned: Option<Dtype> = None;
    let mut zero_dim: Option<Dtype> = None;
    let mut wrapped: Option<Dtype> = None;
    let promote = |state: Option<Dtype>, dtype: Dtype| {
        Some(state.map_or(dtype, |current| promote_types(current, dtype)))
    };
    for operand in operands {
        match *operand {
            Operand::Tensor { dtype, rank } if rank > 0 => {
                dimensioned = promote(dimensioned, dtype)
            }
            Operand::Tensor { dtype, .. } => zero_dim = promote(zero_dim, dtype),
            // Numbers: an int is Long, a float the default dtype (Float).
            Operand::Int => wrapped = promote(wrapped, Dtype::Long),
            Operand::Float => wrapped = promote(wrapped, Dtype::Float),
        }
    }
    let lower = combine_categories(zero_dim, wrapped);
    combine_categories(dimensioned, lower).unwrap_or(Dtype::Float)
}

/// PyTorch's `combine_categories(higher, lower)`.
fn combine_categories(higher: Option<Dtype>, lower: Option<Dtype>) -> Option<Dtype> {
    let Some(higher) = higher else {
        return lower;
    };
    let Some(lower) = lower else {
        return Some(higher);
    };
    if higher.is_complex() {
        return Some(higher);
    }
    if lower.is_complex() {
        return Some(if higher.is_floating() {
            higher.to_complex()
        } else {
            lower
        });
    }
    if higher.is_floating() {
        return Some(higher);
    }
    if higher == Dtype::Bool || lower.is_floating() {
        return Some(promote_types(higher, lower));
    }
    Some(higher)
}

/// The operands of `node` when every input is a tensor with a known dtype and rank, an
/// `int` or a `float`; `None` when the meta run could not even be set up.
fn operands(graph: &Graph, node: NodeId) -> Option<Vec<Operand>> {
    graph
        .node_inputs(node)
        .iter()
        .map(|&input| match graph.value_type(input) {
            Type::RefinedTensor(refinement) => Some(Operand::Tensor {
                dtype: Dtype::from_name(refinement.scalar_type.as_deref()?)?,
                rank: refinement.sizes.as_ref()?.len(),
            }),
            Type::Int => Some(Operand::Int),
            Type::Float => Some(Operand::Float),
            _ => None,
        })
        .collect()
}

/// The dtype `node`'s single tensor output gets, when the node qualifies and its operator
/// has a rule here.
fn infer_dtype(graph: &Graph, node: NodeId) -> Option<Dtype> {
    let schema = graph.node(node).schema.clone()?;
    if !schema.returns.iter().any(|ret| is_tensor_type(&ret.ty)) {
        return None;
    }
    if graph.node_outputs(node).len() != 1 {
        return None;
    }
    let operands = operands(graph, node)?;
    result_dtype(&schema.full_name(), &operands)
}

/// Operators whose result is a float even for integral inputs (PyTorch's "int to float"
/// unary functions).
const FLOAT_FUNCTIONS: &[&str] = &[
    "aten::sin",
    "aten::cos",
    "aten::tan",
    "aten::asin",
    "aten::acos",
    "aten::atan",
    "aten::sinh",
    "aten::cosh",
    "aten::tanh",
    "aten::exp",
    "aten::exp2",
    "aten::expm1",
    "aten::log",
    "aten::log2",
    "aten::log10",
    "aten::log1p",
    "aten::sqrt",
    "aten::rsqrt",
    "aten::sigmoid",
    "aten::erf",
    "aten::erfc",
    "aten::reciprocal",
    "aten::lgamma",
    "aten::digamma",
];

/// Operators that keep their input's dtype and refuse `Bool`.
const SAME_DTYPE_NOT_BOOL: &[&str] = &[
    "aten::relu",
    "aten::relu6",
    "aten::neg",
    "aten::abs",
    "aten::sign",
];

/// Operators that keep their input's dtype for any dtype.
const SAME_DTYPE: &[&str] = &[
    "aten::floor",
    "aten::ceil",
    "aten::round",
    "aten::trunc",
    "aten::t",
    "aten::detach",
    "aten::alias",
    "aten::contiguous",
    "aten::expand_as",
    "aten::view_as",
    "aten::reshape_as",
];

/// Operators defined only for floating inputs, which keep their dtype.
const FLOAT_ONLY: &[&str] = &[
    "aten::silu",
    "aten::mish",
    "aten::hardsigmoid",
    "aten::hardswish",
    "aten::log_sigmoid",
];

/// Binary operators whose result is the promoted type of their first two operands.
const PROMOTING_BINARY: &[&str] = &[
    "aten::add.Tensor",
    "aten::add.Scalar",
    "aten::sub.Tensor",
    "aten::sub.Scalar",
    "aten::mul.Tensor",
    "aten::mul.Scalar",
    "aten::remainder.Tensor",
    "aten::remainder.Scalar",
    "aten::fmod.Tensor",
    "aten::fmod.Scalar",
    "aten::maximum",
    "aten::minimum",
    "aten::max.other",
    "aten::min.other",
    "aten::pow.Tensor_Tensor",
    "aten::pow.Tensor_Scalar",
    "aten::floor_divide",
    "aten::floor_divide.Scalar",
];

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
];

const BITWISE: &[&str] = &[
    "aten::__and__.Tensor",
    "aten::__and__.Scalar",
    "aten::__or__.Tensor",
    "aten::__or__.Scalar",
    "aten::__xor__.Tensor",
    "aten::__xor__.Scalar",
    "aten::bitwise_and.Tensor",
    "aten::bitwise_or.Tensor",
    "aten::bitwise_xor.Tensor",
];

/// The dtype of the result of operator `full_name` on `operands`, or `None` when the
/// operator has no rule here or would fail on the meta arguments PyTorch passes.
fn result_dtype(full_name: &str, operands: &[Operand]) -> Option<Dtype> {
    let tensor = |index: usize| match operands.get(index) {
        Some(Operand::Tensor { dtype, rank }) => Some((*dtype, *rank)),
        _ => None,
    };
    let name = full_name;
    if FLOAT_FUNCTIONS.contains(&name) {
        let (dtype, _) = tensor(0)?;
        return Some(if dtype.is_floating() || dtype.is_complex() {
            dtype
        } else {
            Dtype::Float
        });
    }
    if SAME_DTYPE_NOT_BOOL.contains(&name) {
        let (dtype, _) = tensor(0)?;
        return (dtype != Dtype::Bool).then_some(dtype);
    }
    if SAME_DTYPE.contains(&name) {
        return tensor(0).map(|(dtype, _)| dtype);
    }
    if FLOAT_ONLY.contains(&name) {
        let (dtype, _) = tensor(0)?;
        return dtype.is_floating().then_some(dtype);
    }
    if PROMOTING_BINARY.contains(&name) {
        let promoted = result_type(operands.get(..2)?);
        // add/sub take an `alpha` (passed as 1); subtraction refuses two bools.
        if name.starts_with("aten::sub") && promoted == Dtype::Bool {
            return None;
        }
        return Some(promoted);
    }
    if name == "aten::div.Tensor"
        || name == "aten::div.Scalar"
        || name == "aten::true_divide.Tensor"
    {
        let promoted = result_type(operands.get(..2)?);
        return Some(if promoted.is_integral() || promoted == Dtype::Bool {
            Dtype::Float
        } else {
            promoted
        });
    }
    if COMPARISONS.contains(&name) {
        operands.get(..2)?;
        return Some(Dtype::Bool);
    }
    if BITWISE.contains(&name) {
        let promoted = result_type(operands.get(..2)?);
        return (promoted.is_integral() || promoted == Dtype::Bool).then_some(promoted);
    }
    match name {
        "aten::where.self" => Some(result_type(operands.get(1..3)?)),
        "aten::type_as" => tensor(1).map(|(dtype, _)| dtype),
        // Dimension arguments are passed as 1, so the input needs that many dimensions.
        "aten::transpose.int" | "aten::squeeze.dim" | "aten::flatten.using_ints" => {
            let (dtype, rank) = tensor(0)?;
            (rank >= 2).then_some(dtype)
        }
        "aten::unsqueeze" => {
            let (dtype, rank) = tensor(0)?;
            (rank >= 1).then_some(dtype)
        }
        "aten::squeeze" => tensor(0).map(|(dtype, _)| dtype),
        "aten::index_select" => {
            let (dtype, rank) = tensor(0)?;
            let (index_dtype, index_rank) = tensor(2)?;
            (rank >= 2 && matches!(index_dtype, Dtype::Long | Dtype::Int) && index_rank <= 1)
                .then_some(dtype)
        }
        // The meta kernels of the matrix products keep the first operand's dtype.
        "aten::mm" | "aten::bmm" | "aten::matmul" | "aten::linear" | "aten::addmm" => {
            let (dtype, rank) = tensor(0)?;
            let (_, other_rank) = tensor(1)?;
            let ranks_fit = match name {
                "aten::mm" => rank == 2 && other_rank == 2,
                "aten::bmm" => rank == 3 && other_rank == 3,
                "aten::addmm" => tensor(2).is_some_and(|(_, r)| r == 2) && other_rank == 2,
                _ => rank >= 1 && other_rank >= 1,
            };
            ranks_fit.then_some(dtype)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(dtype: Dtype, rank: usize) -> Operand {
        Operand::Tensor { dtype, rank }
    }

    #[test]
    fn promotion_categories() {
        assert_eq!(promote_types(Dtype::Byte, Dtype::Char), Dtype::Short);
        assert_eq!(promote_types(Dtype::Long, Dtype::Half), Dtype::Half);
        assert_eq!(promote_types(Dtype::Half, Dtype::BFloat16), Dtype::Float);
        assert_eq!(
            promote_types(Dtype::Double, Dtype::ComplexFloat),
            Dtype::ComplexDouble
        );
    }

    #[test]
    fn zero_dim_and_numbers_count_only_in_a_higher_category() {
        let long = tensor(Dtype::Long, 2);
        assert_eq!(result_type(&[long, tensor(Dtype::Int, 0)]), Dtype::Long);
        assert_eq!(
            result_type(&[long, tensor(Dtype::Double, 0)]),
            Dtype::Double
        );
        assert_eq!(result_type(&[long, Operand::Float]), Dtype::Float);
        assert_eq!(
            result_type(&[tensor(Dtype::Bool, 1), Operand::Int]),
            Dtype::Long
        );
        assert_eq!(
            result_type(&[tensor(Dtype::Half, 1), Operand::Float]),
            Dtype::Half
        );
    }

    #[test]
    fn division_of_integers_is_float() {
        let long = tensor(Dtype::Long, 1);
        assert_eq!(
            result_dtype("aten::div.Tensor", &[long, long]),
            Some(Dtype::Float)
        );
        assert_eq!(result_dtype("aten::relu", &[tensor(Dtype::Bool, 1)]), None);
    }
}
