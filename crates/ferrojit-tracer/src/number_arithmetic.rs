//! Arithmetic on traced sizes. PyTorch's tracer hands Python code a size as a 0-dim tensor
//! posing as an int, so `x.size(0) * 2` records `aten::mul(%n, {2})` on tensors, not the
//! `aten::mul.int` TorchScript source compiles to. This module turns each number operator
//! of the source into the tensor operator Python's arithmetic would have called.

use ferrojit_ir::ValueId;
use ferrojit_runtime::IValue;

use crate::error::Result;
use crate::tracing_state::{Trace, Traced, TracingState};
use crate::warnings::{python_dataflow, Conversion};

/// Whether any input is (or holds) a traced number.
pub fn has_traced_number(inputs: &[Traced]) -> bool {
    inputs
        .iter()
        .any(|input| matches!(input.trace, Trace::Number(_)))
}

/// Records the number operator `name` (`aten::add`, unqualified overload) applied to
/// `inputs`, whose kernel returned `output`; returns the output with its trace.
pub fn record_number_operator(
    state: &mut TracingState,
    name: &str,
    inputs: &[Traced],
    output: IValue,
) -> Result<Traced> {
    let short = name.strip_prefix("aten::").unwrap_or(name);
    match short {
        // Python compares the size tensors, then branches on a tensor: data-dependent.
        "lt" | "gt" | "le" | "ge" | "eq" | "ne" => {
            state.warn(python_dataflow(Conversion::Boolean));
            return Ok(Traced::constant(output));
        }
        "Int" => {
            state.warn(python_dataflow(Conversion::Integer));
            return Ok(Traced::constant(output));
        }
        "Float" => {
            state.warn(python_dataflow(Conversion::Float));
            return Ok(Traced::constant(output));
        }
        "Bool" => {
            state.warn(python_dataflow(Conversion::Boolean));
            return Ok(Traced::constant(output));
        }
        _ => {}
    }
    let result = match (short, inputs) {
        ("neg", [a]) => {
            let a = operand(state, a)?;
            Some(state.record("aten::neg", &[a])?)
        }
        ("add", [a, b]) => {
            let (first, second) = commuted(state, a, b)?;
            let alpha = state.constant(&IValue::Int(1), &ferrojit_ir::Type::Int)?;
            Some(state.record("aten::add.Tensor", &[first, second, alpha])?)
        }
        ("sub", [a, b]) => {
            let alpha = state.constant(&IValue::Int(1), &ferrojit_ir::Type::Int)?;
            if matches!(a.trace, Trace::Number(_)) {
                let (a, b) = (operand(state, a)?, operand(state, b)?);
                Some(state.record("aten::sub.Tensor", &[a, b, alpha])?)
            } else {
                // `3 - n`: Python calls `n.__rsub__(3)`.
                let (b, a) = (operand(state, b)?, operand(state, a)?);
                Some(state.record("aten::rsub.Tensor", &[b, a, alpha])?)
            }
        }
        ("mul", [a, b]) => {
            let (first, second) = commuted(state, a, b)?;
            Some(state.record("aten::mul.Tensor", &[first, second])?)
        }
        ("div", [a, b]) => {
            let (a, b) = (operand(state, a)?, operand(state, b)?);
            Some(state.record("aten::div.Tensor", &[a, b])?)
        }
        ("floordiv", [a, b]) => {
            let (a, b) = (operand(state, a)?, operand(state, b)?);
            Some(state.record("aten::floor_divide", &[a, b])?)
        }
        ("remainder", [a, b]) => {
            let (a, b) = (operand(state, a)?, operand(state, b)?);
            Some(state.record("aten::remainder.Tensor", &[a, b])?)
        }
        _ => None,
    };
    Ok(match result {
        Some(node) => Traced {
            value: output,
            trace: Trace::Number(state.graph.node_output(node, 0)),
        },
        // Any other number operator (`max`, `math.sqrt`, ...): Python computes it on the
        // tensor's number, so the result is a constant.
        None => Traced::constant(output),
    })
}

/// The tensor standing for a number operand: its trace, or a wrapped-number constant.
fn operand(state: &mut TracingState, number: &Traced) -> Result<ValueId> {
    match number.trace {
        Trace::Number(value) => Ok(value),
        _ => state.wrapped_number(&number.value),
    }
}

/// Operands of a commutative operator with the traced one first: `2 * n` is
/// `n.__rmul__(2)` in Python, which records `aten::mul(%n, {2})`.
fn commuted(state: &mut TracingState, a: &Traced, b: &Traced) -> Result<(ValueId, ValueId)> {
    if matches!(a.trace, Trace::Number(_)) {
        Ok((operand(state, a)?, operand(state, b)?))
    } else {
        Ok((operand(state, b)?, operand(state, a)?))
    }
}
