//! Derivatives of the dropout family beyond `dropout` (`alpha_dropout`, `feature_dropout`,
//! `feature_alpha_dropout`) and of `rrelu` / `rrelu_with_noise`. Outside training (or with
//! `p = 0`) the dropouts are the identity; in training their gradient needs the kernel's
//! draw, which the call does not return, so it is refused. `rrelu_with_noise` returns its
//! draw in `noise` (the slope each element got, one where it was positive).

use ferrojit_runtime::{Result, RuntimeError};

use super::pointwise::identity;
use super::support::{against, keep_where};
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, mul, scale};

/// `(input, p, train)`: the identity outside training.
fn eval_dropout(input: &FormulaInput, name: &str) -> Result<Gradients> {
    let p = input.number(1)?;
    let train = input.argument(2)?.to_bool()?;
    if train && p > 0.0 {
        return Err(RuntimeError::Other(format!(
            "the derivative for '{name}' with p > 0 in training is not implemented."
        )));
    }
    identity(input)
}

fn alpha_dropout(input: &FormulaInput) -> Result<Gradients> {
    eval_dropout(input, "alpha_dropout")
}

fn feature_dropout(input: &FormulaInput) -> Result<Gradients> {
    eval_dropout(input, "feature_dropout")
}

fn feature_alpha_dropout(input: &FormulaInput) -> Result<Gradients> {
    eval_dropout(input, "feature_alpha_dropout")
}

/// The leaky ReLU gradient with slope `(lower + upper) / 2`: `grad` where `self > 0`,
/// `grad * slope` elsewhere (what rrelu computes outside training).
fn mean_slope_gradient(input: &FormulaInput, lower: usize, upper: usize) -> Result<Gradients> {
    let slope = (input.number(lower)? + input.number(upper)?) / 2.0;
    let grad = input.grad(0)?;
    let positive = against("aten::gt.Scalar", input.argument(0)?, 0.0)?;
    let negative = against("aten::le.Scalar", input.argument(0)?, 0.0)?;
    let mut out = input.none();
    out[0] = Some(call::add(
        &keep_where(&positive, grad)?,
        &keep_where(&negative, &scale(grad, slope)?)?,
    )?);
    Ok(out)
}

/// `rrelu(self, lower, upper, training, generator)`.
fn rrelu(input: &FormulaInput) -> Result<Gradients> {
    if input.argument(3)?.to_bool()? {
        return Err(RuntimeError::Other(
            "the derivative for 'rrelu' in training is not implemented.".into(),
        ));
    }
    mean_slope_gradient(input, 1, 2)
}

/// `rrelu_with_noise(self, noise, lower, upper, training, generator)`: `grad * noise` in
/// training with distinct bounds (noise holds the drawn slopes), else the mean slope's.
fn rrelu_with_noise(input: &FormulaInput) -> Result<Gradients> {
    let training = input.argument(4)?.to_bool()?;
    if training && input.number(3)? - input.number(2)? > 1e-6 {
        let mut out = input.none();
        out[0] = Some(mul(input.grad(0)?, input.argument(1)?)?);
        return Ok(out);
    }
    mean_slope_gradient(input, 2, 3)
}

formula_table![
    (
        "aten::alpha_dropout",
        "AlphaDropoutBackward0",
        alpha_dropout,
        &[]
    ),
    (
        "aten::feature_dropout",
        "FeatureDropoutBackward0",
        feature_dropout,
        &[]
    ),
    (
        "aten::feature_alpha_dropout",
        "FeatureAlphaDropoutBackward0",
        feature_alpha_dropout,
        &[]
    ),
    ("aten::rrelu", "RreluWithNoiseBackward0", rrelu, &[0]),
    (
        "aten::rrelu_with_noise",
        "RreluWithNoiseBackward0",
        rrelu_with_noise,
        &[0, 1]
    ),
];
