//! Derivative formulas, one per operator overload, after PyTorch's
//! `tools/autograd/derivatives.yaml` (read for semantics, written afresh). Each formula gets
//! the call's saved arguments and the gradients of its outputs and returns one gradient per
//! argument; it computes them by calling operators through [`crate::call`], so that a
//! backward run with `create_graph=True` is itself recorded.

/// A formula table from `(operator, node name, formula, saved arguments)` rows.
macro_rules! formula_table {
    ($(($operator:literal, $node:literal, $apply:expr, $saves:expr)),* $(,)?) => {
        pub(super) const FORMULAS: &[(&str, Formula)] = &[
            $(($operator, Formula { name: $node, saves: $saves, apply: $apply }),)*
        ];
    };
}

mod activations_extra;
mod antialias_resample;
mod attention;
mod backward_kernels;
mod binary;
mod complex_parts;
mod composite_losses;
mod composition;
mod convolution;
mod convolution_double;
mod ctc_loss;
mod dispatched;
mod distances;
mod dropout_family;
mod eigen;
mod einsum;
mod embedding_bag;
mod fft;
mod fft_forward;
mod fractional_max_pool;
mod gated_activations;
mod grid_sample;
mod grid_sample_recorded;
mod in_place;
mod indexing;
mod linalg;
mod linalg_decompositions;
mod linear;
mod log_cumulative;
mod losses;
mod lu;
mod margin_losses;
mod nn;
mod normalization;
mod orthogonal_factors;
mod pointwise;
mod pooling;
mod products;
mod random;
mod reduction;
mod resample;
mod selections;
mod shape;
mod short_time_fourier;
mod special;
mod splits;
mod statistics;
mod strided_scatter;
mod support;
mod trapezoid;
mod unary_math;
mod unpooling;
mod variants;
mod views;

use std::collections::HashMap;
use std::sync::OnceLock;

use ferrojit_runtime::{IValue, Result, RuntimeError};

use crate::node::TensorMeta;

/// One operator's derivative.
pub struct Formula {
    /// The `grad_fn` name PyTorch prints (`MulBackward0`).
    pub name: &'static str,
    /// The tensor arguments the formula reads (the rest are not kept alive).
    pub saves: &'static [usize],
    pub apply: fn(&FormulaInput) -> Result<Gradients>,
}

/// One gradient per argument (a tensor list's is a list); `None` where none flows.
pub type Gradients = Vec<Option<IValue>>;

/// What a formula reads.
pub struct FormulaInput<'a> {
    /// The call's arguments; tensors the formula does not save are `None`.
    pub arguments: &'a [IValue],
    /// Per output: the gradient reaching it (zeros where none did). A returned tensor list
    /// counts one output per element.
    pub grads: &'a [Option<IValue>],
    /// Per argument: whether any of its tensors needs a gradient.
    pub needed: &'a [bool],
    pub input_meta: &'a [Vec<Option<TensorMeta>>],
}

fn missing(what: &str) -> RuntimeError {
    RuntimeError::Other(format!("autograd formula: missing {what}"))
}

impl FormulaInput<'_> {
    /// The gradient of output `index`.
    pub fn grad(&self, index: usize) -> Result<&IValue> {
        self.grads
            .get(index)
            .and_then(Option::as_ref)
            .ok_or_else(|| missing("output gradient"))
    }

    pub fn argument(&self, index: usize) -> Result<&IValue> {
        self.arguments.get(index).ok_or_else(|| missing("argument"))
    }

    pub fn needs(&self, index: usize) -> bool {
        self.needed.get(index).copied().unwrap_or(false)
    }

    /// The sizes tensor argument `index` had.
    pub fn sizes(&self, index: usize) -> Result<Vec<usize>> {
        self.input_meta
            .get(index)
            .and_then(|metas| metas.first())
            .and_then(Option::as_ref)
            .map(|meta| meta.sizes.clone())
            .ok_or_else(|| missing("input shape"))
    }

    pub fn dtype(&self, index: usize) -> Result<ferrojit_tensor::DType> {
        self.input_meta
            .get(index)
            .and_then(|metas| metas.first())
            .and_then(Option::as_ref)
            .map(|meta| meta.dtype)
            .ok_or_else(|| missing("input dtype"))
    }

    pub fn int(&self, index: usize) -> Result<i64> {
        self.argument(index)?.to_int()
    }

    /// A number argument (int or float) as f64.
    pub fn number(&self, index: usize) -> Result<f64> {
        match self.argument(index)? {
            IValue::Int(value) => Ok(*value as f64),
            IValue::Bool(value) => Ok(f64::from(u8::from(*value))),
            other => other.to_double(),
        }
    }

    pub fn ints(&self, index: usize) -> Result<Vec<i64>> {
        self.argument(index)?.to_int_vec()
    }

    /// An empty gradient list for this call.
    pub fn none(&self) -> Gradients {
        vec![None; self.arguments.len()]
    }
}

/// Every family's formula table.
fn families() -> [&'static [(&'static str, Formula)]; 51] {
    [
        pointwise::FORMULAS,
        reduction::FORMULAS,
        shape::FORMULAS,
        linear::FORMULAS,
        nn::FORMULAS,
        unary_math::FORMULAS,
        statistics::FORMULAS,
        binary::FORMULAS,
        products::FORMULAS,
        indexing::FORMULAS,
        splits::FORMULAS,
        views::FORMULAS,
        special::FORMULAS,
        linalg::FORMULAS,
        activations_extra::FORMULAS,
        pooling::FORMULAS,
        resample::FORMULAS,
        normalization::FORMULAS,
        distances::FORMULAS,
        convolution::FORMULAS,
        losses::FORMULAS,
        fft::FORMULAS,
        linalg_decompositions::FORMULAS,
        variants::FORMULAS,
        grid_sample::FORMULAS,
        selections::FORMULAS,
        embedding_bag::FORMULAS,
        lu::FORMULAS,
        trapezoid::FORMULAS,
        gated_activations::FORMULAS,
        unpooling::FORMULAS,
        log_cumulative::FORMULAS,
        strided_scatter::FORMULAS,
        margin_losses::FORMULAS,
        composite_losses::FORMULAS,
        convolution_double::FORMULAS,
        orthogonal_factors::FORMULAS,
        backward_kernels::FORMULAS,
        einsum::FORMULAS,
        random::FORMULAS,
        short_time_fourier::FORMULAS,
        complex_parts::FORMULAS,
        fft_forward::FORMULAS,
        eigen::FORMULAS,
        antialias_resample::FORMULAS,
        ctc_loss::FORMULAS,
        fractional_max_pool::FORMULAS,
        dispatched::FORMULAS,
        in_place::FORMULAS,
        dropout_family::FORMULAS,
        attention::FORMULAS,
    ]
}

fn table() -> &'static HashMap<&'static str, &'static Formula> {
    static TABLE: OnceLock<HashMap<&'static str, &'static Formula>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = HashMap::new();
        for formulas in families() {
            for (name, formula) in formulas {
                table.insert(*name, formula);
            }
        }
        table
    })
}

/// The formula of an operator overload (`aten::mul.Tensor`), if ferrojit has one.
pub fn formula_for(full_name: &str) -> Option<&'static Formula> {
    table().get(full_name).copied()
}

/// The operators with a formula.
pub fn differentiable_operators() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = table().keys().copied().collect();
    names.sort_unstable();
    names
}

/// PyTorch's node name for an operator without a formula (`aten::foo_bar` → `FooBarBackward0`).
pub fn default_name(qualified_name: &str) -> String {
    let base = qualified_name.rsplit("::").next().unwrap_or(qualified_name);
    let mut name = String::new();
    for part in base.split('_').filter(|part| !part.is_empty()) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            name.extend(first.to_uppercase());
            name.push_str(chars.as_str());
        }
    }
    name.push_str("Backward0");
    name
}

/// Normalizes a possibly negative dimension against `rank`.
pub fn wrap_dim(dim: i64, rank: usize) -> usize {
    let rank = rank.max(1) as i64;
    (if dim < 0 { dim + rank } else { dim }).clamp(0, rank - 1) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_names_follow_pytorch() {
        assert_eq!(default_name("aten::index_put"), "IndexPutBackward0");
        assert_eq!(default_name("aten::relu"), "ReluBackward0");
    }

    #[test]
    fn each_operator_has_one_formula() {
        let mut seen = std::collections::HashSet::new();
        let repeated: Vec<&str> = families()
            .iter()
            .flat_map(|family| family.iter().map(|(name, _)| *name))
            .filter(|name| !seen.insert(*name))
            .collect();
        assert!(repeated.is_empty(), "two formulas for {repeated:?}");
    }

    #[test]
    fn negative_dims_wrap() {
        assert_eq!(wrap_dim(-1, 3), 2);
        assert_eq!(wrap_dim(1, 3), 1);
    }
}
