//! Derivatives of the gated and parametric activations ferrojit runs as single kernels
//! (`log_sigmoid`, `softshrink`, `glu`, `prelu`) and of the channel mixing layers
//! (`channel_shuffle`, `bilinear`), after PyTorch's `log_sigmoid_backward`,
//! `softshrink_backward`, `glu_backward`, `_prelu_kernel_backward`, the inverse shuffle and
//! the bilinear form's three partial contractions.

use ferrojit_runtime::Result;

use super::support::{against, binary, connected_to, refuse, zero_where};
use super::{wrap_dim, Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, mul, reshape, sum_dims, sum_to};

/// `log_sigmoid(self)`: `d/dx log(sigmoid(x)) = sigmoid(-x)`.
fn log_sigmoid(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let derivative = call::unary("aten::sigmoid", &call::neg(x)?)?;
    let mut out = input.none();
    out[0] = Some(mul(input.grad(0)?, &derivative)?);
    Ok(out)
}

/// `softshrink(self, lambd)`: zero on `[-lambd, lambd]` (both ends included, as PyTorch's
/// kernel), the gradient elsewhere.
fn softshrink(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let lambd = input.number(1)?;
    let inside = binary(
        "aten::logical_and",
        &against("aten::ge.Scalar", x, -lambd)?,
        &against("aten::le.Scalar", x, lambd)?,
    )?;
    let mut out = input.none();
    out[0] = Some(connected_to(zero_where(&inside, input.grad(0)?)?, x)?);
    Ok(out)
}

/// `glu(self, dim) = a * sigmoid(b)` with `a, b` the halves of `self` along `dim`: the
/// gradient of `a` is `grad * sigmoid(b)`, of `b` `grad * a * sigmoid(b) * (1 - sigmoid(b))`.
fn glu(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let sizes = input.sizes(0)?;
    let dim = wrap_dim(input.int(1)?, sizes.len());
    let half = sizes.get(dim).copied().unwrap_or(1) / 2;
    let narrow = |start: usize| {
        call1(
            "aten::narrow",
            vec![
                x.clone(),
                int(dim as i64),
                int(start as i64),
                int(half as i64),
            ],
        )
    };
    let (a, b) = (narrow(0)?, narrow(half)?);
    let gate = call::unary("aten::sigmoid", &b)?;
    let grad = input.grad(0)?;
    let first = mul(grad, &gate)?;
    let gate_slope = mul(&gate, &call::rsub_scalar(&gate, 1.0)?)?;
    let second = mul(&mul(grad, &a)?, &gate_slope)?;
    let mut out = input.none();
    out[0] = Some(call1(
        "aten::cat",
        vec![call::tensor_list(vec![first, second]), int(dim as i64)],
    )?);
    Ok(out)
}

/// `_prelu_kernel(self, weight)` with `weight` broadcasting against `self`: the input's
/// gradient is `grad` where `x > 0` and `weight * grad` elsewhere; the weight's is `x * grad`
/// where `x <= 0`, summed to the shape `weight` had in the broadcast (`view_sizes`).
fn prelu_gradients(input: &FormulaInput, view_sizes: &[usize]) -> Result<Gradients> {
    let (x, weight) = (input.argument(0)?, input.argument(1)?);
    let grad = input.grad(0)?;
    let positive = against("aten::gt.Scalar", x, 0.0)?;
    let mut out = input.none();
    if input.needs(0) {
        let viewed = reshape(weight, view_sizes)?;
        let scaled = mul(&viewed, grad)?;
        let gradient = call1(
            "aten::where.self",
            vec![positive.clone(), grad.clone(), scaled],
        )?;
        out[0] = Some(connected_to(sum_to(&gradient, &input.sizes(0)?)?, x)?);
    }
    if input.needs(1) {
        let gradient = zero_where(&positive, &mul(x, grad)?)?;
        let summed = sum_to(&gradient, view_sizes)?;
        out[1] = Some(reshape(&summed, &input.sizes(1)?)?);
    }
    Ok(out)
}

fn prelu_kernel(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(1)?;
    prelu_gradients(input, &sizes)
}

/// `prelu(self, weight)`: PyTorch reshapes a weight of `C` values to `[1, C, 1, ...]` (the
/// channel dimension 1) when `self` has two or more dimensions.
fn prelu(input: &FormulaInput) -> Result<Gradients> {
    let rank = input.sizes(0)?.len();
    let weight_sizes = input.sizes(1)?;
    let count: usize = weight_sizes.iter().product();
    let view_sizes = if rank > 1 {
        let mut sizes = vec![1; rank];
        sizes[1] = count;
        sizes
    } else {
        weight_sizes
    };
    prelu_gradients(input, &view_sizes)
}

/// `channel_shuffle(self, groups)` permutes channels; the inverse permutation is the shuffle
/// with `C / groups` groups.
fn channel_shuffle(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let groups = input.int(1)?;
    let channels = sizes.get(1).copied().unwrap_or(0) as i64;
    if groups <= 0 || channels % groups != 0 {
        return Err(refuse(format!(
            "Number of channels must be divisible by groups. Got {channels} channels and \
             {groups} groups."
        )));
    }
    let mut out = input.none();
    out[0] = Some(call1(
        "aten::channel_shuffle",
        vec![input.grad(0)?.clone(), int(channels / groups)],
    )?);
    Ok(out)
}

/// `bilinear(x1, x2, weight, bias)`: `y[n, o] = sum_ij x1[n, i] W[o, i, j] x2[n, j] + b[o]`
/// over the flattened leading dimensions `n`.
fn bilinear(input: &FormulaInput) -> Result<Gradients> {
    let (x1, x2, weight) = (input.argument(0)?, input.argument(1)?, input.argument(2)?);
    let weight_sizes = input.sizes(2)?;
    let [outputs, left, right] = weight_sizes[..] else {
        return Err(refuse(format!(
            "bilinear(): weight must be 3-dimensional, got {} dimensions",
            weight_sizes.len()
        )));
    };
    let sizes1 = input.sizes(0)?;
    let rows = sizes1.iter().product::<usize>() / left.max(1);
    let grad = reshape(input.grad(0)?, &[rows, outputs])?;
    let flat1 = reshape(x1, &[rows, left])?;
    let flat2 = reshape(x2, &[rows, right])?;
    let mut out = input.none();
    if input.needs(0) || input.needs(1) {
        // grad contracted with the weight: [rows, left, right].
        let through_weight = reshape(
            &call::mm(&grad, &reshape(weight, &[outputs, left * right])?)?,
            &[rows, left, right],
        )?;
        if input.needs(0) {
            let paired = mul(
                &through_weight,
                &call1("aten::unsqueeze", vec![flat2.clone(), int(1)])?,
            )?;
            out[0] = Some(reshape(&sum_dims(&paired, &[2], false)?, &sizes1)?);
        }
        if input.needs(1) {
            let paired = mul(
                &through_weight,
                &call1("aten::unsqueeze", vec![flat1.clone(), int(2)])?,
            )?;
            out[1] = Some(reshape(&sum_dims(&paired, &[1], false)?, &input.sizes(1)?)?);
        }
    }
    if input.needs(2) {
        let outer = mul(
            &call1("aten::unsqueeze", vec![flat1, int(2)])?,
            &call1("aten::unsqueeze", vec![flat2, int(1)])?,
        )?;
        let products = reshape(&outer, &[rows, left * right])?;
        let gradient = call::mm(&call::t(&grad)?, &products)?;
        out[2] = Some(reshape(&gradient, &weight_sizes)?);
    }
    if input.needs(3) {
        out[3] = Some(reshape(&sum_dims(&grad, &[0], false)?, &input.sizes(3)?)?);
    }
    Ok(out)
}

formula_table![
    (
        "aten::log_sigmoid",
        "LogSigmoidBackward0",
        log_sigmoid,
        &[0]
    ),
    (
        "aten::log_sigmoid_forward",
        "LogSigmoidBackward0",
        log_sigmoid,
        &[0]
    ),
    ("aten::softshrink", "SoftshrinkBackward0", softshrink, &[0]),
    ("aten::glu", "GluBackward0", glu, &[0]),
    ("aten::prelu", "PreluKernelBackward0", prelu, &[0, 1]),
    (
        "aten::_prelu_kernel",
        "PreluKernelBackward0",
        prelu_kernel,
        &[0, 1]
    ),
    (
        "aten::channel_shuffle",
        "ChannelShuffleBackward0",
        channel_shuffle,
        &[]
    ),
    (
        "aten::native_channel_shuffle",
        "NativeChannelShuffleBackward0",
        channel_shuffle,
        &[]
    ),
    ("aten::bilinear", "BilinearBackward0", bilinear, &[0, 1, 2]),
];
