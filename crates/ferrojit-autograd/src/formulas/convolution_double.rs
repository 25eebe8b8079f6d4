//! Derivatives of `_convolution` through the runtime's `convolution_backward` kernel (as
//! `convolution`'s in `nn.rs`) and of `convolution_backward` itself (double backward,
//! PyTorch's `_convolution_double_backward`). A convolution is linear in
//! its input and in its weight separately, so with `ggI`, `ggW`, `ggb` the gradients
//! reaching the input, weight and bias gradients:
//! - the output gradient receives `conv(ggI, W) + conv(I, ggW) + ggb` (over channels),
//! - the input receives the input gradient of `conv(., ggW)` for the output gradient,
//! - the weight receives the weight gradient of `conv(ggI, .)` for the output gradient,
//!
//! all with the call's stride, padding, dilation, transposition and groups.

use ferrojit_ir::Type;
use ferrojit_runtime::{IValue, Result};

use super::support::refuse;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call, call1, reshape};

/// `(stride, padding, dilation, transposed, output_padding, groups)` as the call gave them.
fn geometry(input: &FormulaInput, first: usize) -> Result<Vec<IValue>> {
    (first..first + 6)
        .map(|index| input.argument(index).cloned())
        .collect()
}

fn mask(values: [bool; 3]) -> IValue {
    IValue::list(
        Type::Bool,
        values.iter().map(|&v| IValue::Bool(v)).collect(),
    )
}

/// `convolution(input, weight, None, geometry...)`.
fn convolve(x: &IValue, weight: &IValue, geometry: &[IValue]) -> Result<IValue> {
    let mut arguments = vec![x.clone(), weight.clone(), IValue::None];
    arguments.extend(geometry.iter().cloned());
    call1("aten::convolution", arguments)
}

/// `convolution_backward(grad, input, weight, bias_sizes, geometry..., mask)`, result `which`.
fn backward_part(
    grad: &IValue,
    x: &IValue,
    weight: &IValue,
    geometry: &[IValue],
    which: usize,
) -> Result<IValue> {
    let mut wanted = [false; 3];
    wanted[which] = true;
    let mut arguments = vec![grad.clone(), x.clone(), weight.clone(), IValue::None];
    arguments.extend(geometry.iter().cloned());
    arguments.push(mask(wanted));
    call("aten::convolution_backward", arguments)?
        .into_iter()
        .nth(which)
        .filter(|value| !value.is_none())
        .ok_or_else(|| refuse("autograd: convolution_backward returned no gradient"))
}

/// `_convolution(input, weight, bias, stride, padding, dilation, transposed,
/// output_padding, groups, ...)`.
fn convolution(input: &FormulaInput) -> Result<Gradients> {
    let geometry = geometry(input, 3)?;
    let bias_sizes = if input.argument(2)?.is_none() && !input.needs(2) {
        IValue::None
    } else {
        call::sizes_of(&input.sizes(2)?)
    };
    let mut arguments = vec![
        input.grad(0)?.clone(),
        input.argument(0)?.clone(),
        input.argument(1)?.clone(),
        bias_sizes,
    ];
    arguments.extend(geometry);
    arguments.push(mask([input.needs(0), input.needs(1), input.needs(2)]));
    let results = call("aten::convolution_backward", arguments)?;
    let mut out = input.none();
    for (index, value) in results.into_iter().enumerate().take(3) {
        if input.needs(index) && !value.is_none() {
            out[index] = Some(value);
        }
    }
    Ok(out)
}

/// The gradient reaching output `index` of `convolution_backward`, if that output exists.
fn reaching(input: &FormulaInput, index: usize) -> Option<IValue> {
    input
        .grads
        .get(index)
        .and_then(Option::as_ref)
        .filter(|value| !value.is_none())
        .cloned()
}

/// `convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
/// transposed, output_padding, groups, output_mask)`.
fn convolution_backward(input: &FormulaInput) -> Result<Gradients> {
    let (grad_output, x, weight) = (input.argument(0)?, input.argument(1)?, input.argument(2)?);
    let geometry = geometry(input, 4)?;
    let grad_input_grad = reaching(input, 0);
    let grad_weight_grad = reaching(input, 1);
    let grad_bias_grad = reaching(input, 2);
    let mut out = input.none();
    if input.needs(0) {
        let mut total: Option<IValue> = None;
        let mut add = |term: IValue| -> Result<()> {
            total = Some(match total.take() {
                Some(sum) => call::add(&sum, &term)?,
                None => term,
            });
            Ok(())
        };
        if let Some(ggi) = &grad_input_grad {
            add(convolve(ggi, weight, &geometry)?)?;
        }
        if let Some(ggw) = &grad_weight_grad {
            add(convolve(x, ggw, &geometry)?)?;
        }
        let output_sizes = input.sizes(0)?;
        if let Some(ggb) = &grad_bias_grad {
            // The bias adds along the channel dimension 1.
            let mut channel_sizes = vec![1; output_sizes.len()];
            if let Some(slot) = channel_sizes.get_mut(1) {
                *slot = output_sizes[1];
            }
            add(reshape(ggb, &channel_sizes)?)?;
        }
        if let Some(sum) = total {
            out[0] = Some(call::expand(&sum, &output_sizes)?);
        }
    }
    if input.needs(1) {
        if let Some(ggw) = &grad_weight_grad {
            out[1] = Some(backward_part(grad_output, x, ggw, &geometry, 0)?);
        }
    }
    if input.needs(2) {
        if let Some(ggi) = &grad_input_grad {
            out[2] = Some(backward_part(grad_output, ggi, weight, &geometry, 1)?);
        }
    }
    Ok(out)
}

formula_table![
    (
        "aten::_convolution",
        "ConvolutionBackward0",
        convolution,
        &[0, 1]
    ),
    (
        "aten::convolution_backward",
        "ConvolutionBackwardBackward0",
        convolution_backward,
        &[0, 1, 2]
    ),
];
