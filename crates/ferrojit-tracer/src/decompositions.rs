//! Operators that PyTorch's tracer records as the ATen call beneath them. `torch.conv2d`
//! is a composite operator: the dispatcher's tracing layer sees `aten::_convolution`, so a
//! Python trace shows that, with its extra flags. ferrojit runs the composite's kernel and
//! records what PyTorch records.

use std::sync::Arc;

use ferrojit_ir::{FunctionSchema, Type};
use ferrojit_runtime::{IValue, OperatorRegistry};

use crate::tracing_state::Traced;

/// The operator and arguments PyTorch's trace shows for a call of `schema` with `inputs`,
/// when it differs from the call itself.
pub fn recorded_as(
    registry: &OperatorRegistry,
    schema: &FunctionSchema,
    inputs: &[Traced],
) -> Option<(Arc<FunctionSchema>, Vec<Traced>)> {
    let full_name = schema.full_name();
    if !matches!(
        full_name.as_str(),
        "aten::conv1d" | "aten::conv2d" | "aten::conv3d"
    ) {
        return None;
    }
    // conv(input, weight, bias, stride, padding, dilation, groups)
    let [input, weight, bias, stride, padding, dilation, groups] = inputs else {
        return None;
    };
    let spatial = stride.value.to_list().ok()?.len();
    let convolution = registry.lookup("aten::_convolution")?;
    let constant = |value: IValue| Traced::constant(value);
    let arguments = vec![
        input.clone(),
        weight.clone(),
        bias.clone(),
        stride.clone(),
        padding.clone(),
        dilation.clone(),
        // transposed
        constant(IValue::Bool(false)),
        // output_padding
        constant(IValue::list(Type::Int, vec![IValue::Int(0); spatial])),
        groups.clone(),
        // benchmark, deterministic, cudnn_enabled, allow_tf32: CPU defaults as traced.
        constant(IValue::Bool(false)),
        constant(IValue::Bool(false)),
        constant(IValue::Bool(true)),
        constant(IValue::Bool(true)),
    ];
    Some((convolution.schema.clone(), arguments))
}
