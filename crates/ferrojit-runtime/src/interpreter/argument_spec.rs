//! `ArgumentSpec`: what the graph executor specializes a plan on, computed from one call's
//! inputs (PyTorch's `ArgumentSpec`/`CompleteArgumentSpec`, with sizes and strides).
//!
//! Two calls with equal specs run the same specialized plan; a call whose spec differs from
//! every cached plan gets a new plan or, past the cache's limit, the general graph. Comparing
//! the whole spec at entry is the guard: every fact a plan was specialized on is checked before
//! the plan runs, so a plan never sees an input that breaks its assumptions.

use std::fmt;

use ferrojit_ir::{TensorRefinement, Type};
use ferrojit_tensor::DType;

use crate::ivalue::IValue;

/// What the executor knows about one input of a call.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum InputSpec {
    /// A tensor: every fact its type can state.
    Tensor {
        dtype: DType,
        sizes: Vec<usize>,
        strides: Vec<usize>,
        requires_grad: bool,
    },
    /// `None` given for an `Optional` input.
    Absent,
    /// Anything else (numbers, strings, lists, objects): plans are not specialized on it, as
    /// PyTorch specializes on tensors and on optionals' presence only.
    Unspecialized,
}

/// The specs of one call's inputs, in the graph's input order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ArgumentSpec {
    pub inputs: Vec<InputSpec>,
}

impl ArgumentSpec {
    /// The spec of `inputs`. A tensor is read through a snapshot, so a concurrent in-place
    /// change of its geometry yields either the old or the new geometry, never a mix.
    pub fn of(inputs: &[IValue]) -> ArgumentSpec {
        ArgumentSpec {
            inputs: inputs.iter().map(input_spec).collect(),
        }
    }

    /// The refined type the spec gives input `index`, when it gives one: a complete tensor
    /// type (`Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)`).
    pub fn refined_type(&self, index: usize) -> Option<Type> {
        match self.inputs.get(index)? {
            InputSpec::Tensor {
                dtype,
                sizes,
                strides,
                requires_grad,
            } => Some(Type::RefinedTensor(Box::new(TensorRefinement {
                scalar_type: Some(dtype.scalar_type_name().to_string()),
                sizes: Some(sizes.iter().map(|size| Some(*size as i64)).collect()),
                strides: Some(strides.iter().map(|stride| Some(*stride as i64)).collect()),
                requires_grad: Some(*requires_grad),
                device: Some("cpu".to_string()),
                undefined: None,
            }))),
            InputSpec::Absent | InputSpec::Unspecialized => None,
        }
    }
}

fn input_spec(value: &IValue) -> InputSpec {
    match value {
        IValue::Tensor(cell) => {
            let tensor = cell.get();
            InputSpec::Tensor {
                dtype: tensor.dtype(),
                sizes: tensor.sizes().to_vec(),
                strides: tensor.strides().to_vec(),
                requires_grad: cell.requires_grad(),
            }
        }
        IValue::None => InputSpec::Absent,
        _ => InputSpec::Unspecialized,
    }
}

impl fmt::Display for ArgumentSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, input) in self.inputs.iter().enumerate() {
            if index > 0 {
                write!(f, ", ")?;
            }
            match self.refined_type(index) {
                Some(ty) => write!(f, "{ty}")?,
                None if *input == InputSpec::Absent => write!(f, "None")?,
                None => write!(f, "_")?,
            }
        }
        Ok(())
    }
}
