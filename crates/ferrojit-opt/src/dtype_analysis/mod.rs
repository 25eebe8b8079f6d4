//! Dtype propagation, PyTorch's `DtypePropagation` (`_jit_pass_propagate_dtype`): the scalar
//! type of each operator's tensor output, from the scalar types and ranks of its inputs.
//!
//! PyTorch runs each operator on meta tensors of shape `[1] * rank`, with every `int`
//! argument replaced by 1 and every `float` argument by 1.0, and takes the dtype of the
//! result. It infers nothing for a node with an argument of another type (a list, a bool,
//! `None`, a string), with a tensor input whose dtype or rank is unknown, or with several
//! outputs, and nothing when the operator fails on those arguments. Here the operators'
//! dtype rules (type promotion, comparisons give `Bool`, true division and float functions
//! give the default float type...) are written out, with the meta run's refusals, for the
//! operators of [`meta_rules`]; other operators are left alone.
//!
//! Like PyTorch's pass, it refuses a graph with a loop, a call, an `If` with outputs or a
//! `prim` node with a tensor output ([`propagate_dtype`]); [`propagate_dtypes_where_possible`]
//! skips those instead, for the graph executor, and also types what the meta run cannot
//! take (list, bool, None or dtype arguments) by the rules of [`executor_rules`].

use ferrojit_ir::{BlockId, Graph, NodeId, Prim, TensorRefinement, Type};
use ferrojit_runtime::registry::OperatorRegistry;

use crate::alias_analysis::attach_registry_schemas;

mod executor_rules;
mod meta_rules;

use meta_rules::result_dtype;

/// How much of the pass runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// PyTorch's pass: its rules, and its refusals as errors.
    Strict,
    /// PyTorch's rules, skipping what the pass refuses.
    MetaRules,
    /// Also the executor's rules ([`executor_rules`]).
    Executor,
}

/// Runs dtype propagation as PyTorch does, failing where PyTorch's pass fails.
pub fn propagate_dtype(graph: &mut Graph) -> Result<(), String> {
    attach_registry_schemas(graph, OperatorRegistry::global());
    let top = graph.top_block();
    propagate_in_block(graph, top, Mode::Strict)
}

/// Runs dtype propagation and skips, rather than refuses, what PyTorch's pass does not
/// handle (loops and the nodes in them, calls, `If` outputs, `prim` nodes); where PyTorch's
/// meta run gives no dtype, the executor's rules ([`executor_rules`]) may.
pub fn propagate_dtypes_where_possible(graph: &mut Graph) {
    attach_registry_schemas(graph, OperatorRegistry::global());
    let top = graph.top_block();
    // Cannot fail: every refusal is turned into a skip outside `Mode::Strict`.
    let _ = propagate_in_block(graph, top, Mode::Executor);
}

/// [`propagate_dtypes_where_possible`] with PyTorch's rules only: what PyTorch's own
/// analysis can know of a graph (the coverage measurement compares the two).
pub fn propagate_meta_dtypes_where_possible(graph: &mut Graph) {
    attach_registry_schemas(graph, OperatorRegistry::global());
    let top = graph.top_block();
    let _ = propagate_in_block(graph, top, Mode::MetaRules);
}

fn propagate_in_block(graph: &mut Graph, block: BlockId, mode: Mode) -> Result<(), String> {
    let strict = mode == Mode::Strict;
    for node in graph.block_nodes(block) {
        let kind = graph.kind(node).clone();
        if kind.is_prim(Prim::If) {
            for branch in graph.node_blocks(node).to_vec() {
                propagate_in_block(graph, branch, mode)?;
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
            set_dtype(graph, output, dtype);
        } else if mode == Mode::Executor {
            let tensor_outputs: Vec<_> = graph
                .node_outputs(node)
                .iter()
                .copied()
                .filter(|&output| is_tensor_type(graph.value_type(output)))
                .collect();
            let dtypes = executor_rules::executor_dtypes(graph, node);
            for (output, dtype) in tensor_outputs.into_iter().zip(dtypes) {
                if let Some(dtype) = dtype {
                    set_dtype(graph, output, dtype);
                }
            }
        }
    }
    Ok(())
}

/// Gives `output` the scalar type `dtype`, keeping what else its type knows.
fn set_dtype(graph: &mut Graph, output: ferrojit_ir::ValueId, dtype: Dtype) {
    let mut refinement = match graph.value_type(output) {
        Type::RefinedTensor(refinement) => refinement.as_ref().clone(),
        _ => TensorRefinement::default(),
    };
    refinement.scalar_type = Some(dtype.name().to_string());
    graph.set_value_type(output, Type::RefinedTensor(Box::new(refinement)));
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
        assert_eq!(result_dtype("aten::neg", &[tensor(Dtype::Bool, 1)]), None);
        // The meta kernel of relu takes a Bool (PyTorch's pass gives Bool).
        assert_eq!(
            result_dtype("aten::relu", &[tensor(Dtype::Bool, 1)]),
            Some(Dtype::Bool)
        );
    }
}
