//! `ArgumentSpec`: what the graph executor specializes a plan on, computed from one call's
//! inputs (PyTorch's `ArgumentSpec`/`CompleteArgumentSpec`, with sizes and strides).
//!
//! Two calls with equal specs run the same specialized plan; a call whose spec differs from
//! every cached plan gets a new plan or, past the cache's limit, the general graph. Comparing
//! the whole spec at entry is the guard: every fact a plan was specialized on is checked before
//! the plan runs, so a plan never sees an input that breaks its assumptions.

use std::fmt;
use std::sync::Arc;

use ferrojit_ir::{TensorRefinement, Type};
use ferrojit_tensor::DType;

use crate::ivalue::IValue;
use crate::object::Object;

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
    /// An object (a module, `self`): whether a tensor among its attributes, or its
    /// submodules', requires grad while gradients are recorded. The graph reaches such
    /// parameters through `prim::GetAttr`, so this bit stands in for their `requires_grad`:
    /// a plan built with differentiable graphs is not reused once the parameters are frozen
    /// or grad mode is off, nor the reverse.
    Object { parameters_require_grad: bool },
    /// Anything else (numbers, strings, lists, objects): plans are not specialized on it, as
    /// PyTorch specializes on tensors and on optionals' presence only.
    Unspecialized,
}

/// The specs of one call's inputs, in the graph's input order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ArgumentSpec {
    pub inputs: Vec<InputSpec>,
    /// Whether the call may record a gradient (PyTorch's `needsGradient`): grad mode is on
    /// and a tensor input requires grad, or a module input's parameters do. A call under
    /// `no_grad` gets the plan of a call that records nothing (fused, no differentiable
    /// graphs), while its tensors' types keep their own `requires_grad`, which the fused
    /// groups' type checks compare.
    pub needs_gradient: bool,
}

impl ArgumentSpec {
    /// The spec of `inputs`. A tensor is read through a snapshot, so a concurrent in-place
    /// change of its geometry yields either the old or the new geometry, never a mix.
    pub fn of(inputs: &[IValue]) -> ArgumentSpec {
        let grad_enabled = crate::autograd::is_grad_enabled();
        let inputs: Vec<InputSpec> = inputs
            .iter()
            .map(|input| input_spec(input, grad_enabled))
            .collect();
        let needs_gradient = grad_enabled
            && inputs.iter().any(|input| {
                matches!(
                    input,
                    InputSpec::Tensor {
                        requires_grad: true,
                        ..
                    } | InputSpec::Object {
                        parameters_require_grad: true
                    }
                )
            });
        ArgumentSpec {
            inputs,
            needs_gradient,
        }
    }

    /// Whether some gradient may be recorded through the call (see the field).
    pub fn needs_gradient(&self) -> bool {
        self.needs_gradient
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
            InputSpec::Absent | InputSpec::Object { .. } | InputSpec::Unspecialized => None,
        }
    }
}

fn input_spec(value: &IValue, grad_enabled: bool) -> InputSpec {
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
        IValue::Object(object) => InputSpec::Object {
            // Without the autograd crate's recording hook nothing can record, so the walk
            // over the module tree is skipped for inference runs.
            parameters_require_grad: grad_enabled
                && crate::autograd::operator_hook().is_some()
                && any_attribute_requires_grad(object),
        },
        _ => InputSpec::Unspecialized,
    }
}

/// Submodule nesting deeper than this is not walked (a guard against cyclic objects; real
/// module trees are a few levels deep).
const MAX_MODULE_DEPTH: usize = 32;

/// Whether a tensor attribute of `object`, or of an object reachable through its
/// attributes, requires grad. Stops at the first one found.
fn any_attribute_requires_grad(object: &Arc<Object>) -> bool {
    let mut pending = vec![(Arc::clone(object), 0usize)];
    let mut visited: Vec<*const Object> = Vec::new();
    while let Some((object, depth)) = pending.pop() {
        if visited.contains(&Arc::as_ptr(&object)) {
            continue;
        }
        visited.push(Arc::as_ptr(&object));
        let mut index = 0;
        while let Some(slot) = object.get_slot(index) {
            index += 1;
            match slot {
                IValue::Tensor(cell) if cell.requires_grad() => return true,
                IValue::Object(child) if depth < MAX_MODULE_DEPTH => {
                    pending.push((child, depth + 1));
                }
                _ => {}
            }
        }
    }
    false
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
