//! PyTorch's `result_type`: dtype promotion across operands with the priority
//! dimensioned tensors > zero-dim tensors > wrapped numbers.

use crate::dtype::{promote_types, DType};
use crate::tensor::Tensor;

/// Promotion state over the three operand priority classes (c10 ResultTypeState).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResultTypeState {
    pub dim_result: Option<DType>,
    pub zero_result: Option<DType>,
    pub wrapped_result: Option<DType>,
}

fn promote_optional(a: Option<DType>, b: DType) -> Option<DType> {
    Some(match a {
        None => b,
        Some(a) => promote_types(a, b),
    })
}

impl ResultTypeState {
    /// Adds one tensor operand.
    pub fn update(&mut self, tensor: &Tensor) {
        let mut current = tensor.dtype();
        if tensor.is_wrapped_number() {
            // A Python float promotes as the default dtype, not as double.
            if current.is_floating_point() {
                current = DType::default_float();
            }
            // A Python complex promotes as the default complex dtype (complex64).
            if current.is_complex() {
                current = DType::ComplexFloat;
            }
            self.wrapped_result = promote_optional(self.wrapped_result, current);
        } else if tensor.dim() > 0 {
            self.dim_result = promote_optional(self.dim_result, current);
        } else {
            self.zero_result = promote_optional(self.zero_result, current);
        }
    }

    /// The final dtype; `None` only when no operand was added.
    pub fn result(&self) -> Option<DType> {
        combine_categories(
            self.dim_result,
            combine_categories(self.zero_result, self.wrapped_result),
        )
    }
}

/// A lower-priority type only matters when it is of a higher category (bool < integral < floating).
fn combine_categories(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    let Some(h) = higher else {
        return lower;
    };
    let Some(l) = lower else {
        return Some(h);
    };
    // c10's combine_categories: complex beats everything; a lower complex type over a
    // higher floating type keeps the floating type's width (float32 tensor + complex128
    // 0-dim tensor gives complex64).
    if h.is_complex() {
        return Some(h);
    }
    if l.is_complex() {
        return Some(h.to_complex().unwrap_or(l));
    }
    if h.is_floating_point() {
        return Some(h);
    }
    if h == DType::Bool || l.is_floating_point() {
        return Some(promote_types(h, l));
    }
    Some(h)
}

/// `torch.result_type` over any number of operands (wrapped numbers respected).
/// An empty list gives the default float dtype.
pub fn result_type(tensors: &[&Tensor]) -> DType {
    let mut state = ResultTypeState::default();
    for t in tensors {
        state.update(t);
    }
    state.result().unwrap_or(DType::default_float())
}
