//! The random activations: `native_dropout` (dropout that returns its mask), the alpha
//! dropouts (`alpha_dropout`, `feature_alpha_dropout` and their in-place forms) and the
//! randomized leaky ReLU family (`rrelu`, `rrelu_`, `rrelu_with_noise` and its in-place, `out=`
//! and functional forms). Kernels: `ferrojit_tensor::ops::nn::random_activations`; the draws
//! come from the `generator=` argument or the default generator.

use std::sync::Arc;

use ferrojit_tensor::{DType, Scalar, Tensor, TensorError};

use super::binding::{in_place_from_functional, out_from_functional, typed};
use super::creation_ops::GeneratorChoice;
use crate::error::Result;
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

fn native_dropout(input: Input, p: f64, train: Option<bool>) -> Result<(Tensor, Tensor)> {
    Ok(input.native_dropout(p, train)?)
}

fn rrelu_with_noise(
    input: Input,
    noise: Input,
    lower: Scalar,
    upper: Scalar,
    training: bool,
    generator: GeneratorChoice,
) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(input.rrelu_with_noise(&noise, lower.to_f64(), upper.to_f64(), training)?)
}

/// `rrelu_with_noise_functional`: the result and a new noise tensor (a copy of `noise` that
/// the draws overwrite), leaving `noise` itself alone.
fn rrelu_with_noise_functional(
    input: Input,
    noise: Input,
    lower: Scalar,
    upper: Scalar,
    training: bool,
    generator: GeneratorChoice,
) -> Result<Vec<IValue>> {
    let noise_out = Arc::new(noise.clone_tensor());
    let output = rrelu_with_noise(input, noise_out.clone(), lower, upper, training, generator)?;
    Ok(vec![
        IValue::from(output),
        IValue::from(noise_out.as_ref().clone()),
    ])
}

/// `torch.rrelu`: `rrelu_with_noise` with a scratch noise tensor, after checking the bounds.
fn rrelu(
    input: Input,
    lower: Scalar,
    upper: Scalar,
    training: bool,
    generator: GeneratorChoice,
) -> Result<Tensor> {
    if lower.to_f64() > upper.to_f64() {
        return Err(TensorError::InvalidArgument(
            "Lower bound should be less than or equal to the upper bound".to_string(),
        )
        .into());
    }
    let noise_dtype = if input.dtype().is_floating_point() {
        input.dtype()
    } else {
        DType::default_float()
    };
    let noise = Arc::new(Tensor::zeros(input.sizes(), noise_dtype)?);
    rrelu_with_noise(input, noise, lower, upper, training, generator)
}

/// SELU's `alpha` times its `scale`: the value alpha dropout sets dropped elements to (before
/// the affine correction).
const ALPHA_DROPOUT_ALPHA: f64 = 1.7580993408473766;

fn scalar(value: f64) -> Tensor {
    Tensor::wrapped_scalar(Scalar::Float(value))
}

/// ATen's alpha dropout recipe (`_dropout_impl` with `alpha_dropout`): a keep-mask `noise`
/// drawn by `bernoulli_(1 - p)` (one draw per element, or per (N, C) channel for the feature
/// form), then `input * (noise * a) + (noise - 1) * alpha * a + alpha * a * p` with
/// `a = 1 / sqrt((alpha² p + 1)(1 - p))`, which keeps a SELU network's mean and variance.
fn alpha_dropout_impl(input: Input, p: f64, train: bool, feature: bool) -> Result<Tensor> {
    if !(0.0..=1.0).contains(&p) {
        return Err(TensorError::InvalidArgument(format!(
            "dropout probability has to be between 0 and 1, but got {p}"
        ))
        .into());
    }
    if p == 0.0 || !train || input.numel() == 0 {
        return Ok(input.as_ref().clone());
    }
    if p == 1.0 {
        return Ok(input.mul(&Tensor::zeros(&[], input.dtype())?)?);
    }
    let noise_sizes: Vec<usize> = if feature {
        if input.dim() < 2 {
            return Err(TensorError::InvalidArgument(
                "Feature dropout requires at least 2 dimensions in the input".to_string(),
            )
            .into());
        }
        let mut sizes = vec![input.sizes()[0], input.sizes()[1]];
        sizes.resize(input.dim(), 1);
        sizes
    } else {
        input.sizes().to_vec()
    };
    let noise = Tensor::zeros(&noise_sizes, input.dtype())?;
    noise.bernoulli_scalar_(1.0 - p)?;
    let alpha = ALPHA_DROPOUT_ALPHA;
    let a = 1.0 / ((alpha * alpha * p + 1.0) * (1.0 - p)).sqrt();
    let one = Scalar::Int(1);
    let shift = noise
        .add(&Tensor::wrapped_scalar(Scalar::Int(-1)), &one)?
        .mul(&scalar(alpha * a))?
        .add(&scalar(alpha * a * p), &one)?;
    let scaled_noise = noise.mul(&scalar(a))?;
    Ok(input.mul(&scaled_noise)?.add(&shift, &one)?)
}

fn alpha_dropout(input: Input, p: f64, train: bool) -> Result<Tensor> {
    alpha_dropout_impl(input, p, train, false)
}

fn feature_alpha_dropout(input: Input, p: f64, train: bool) -> Result<Tensor> {
    alpha_dropout_impl(input, p, train, true)
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)", native_dropout),
        typed("aten::alpha_dropout(Tensor input, float p, bool train) -> Tensor", alpha_dropout),
        in_place_from_functional("aten::alpha_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)", alpha_dropout),
        typed("aten::feature_alpha_dropout(Tensor input, float p, bool train) -> Tensor", feature_alpha_dropout),
        in_place_from_functional("aten::feature_alpha_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)", feature_alpha_dropout),
        typed("aten::rrelu_with_noise(Tensor self, Tensor(b!) noise, Scalar lower=0.125, Scalar upper=0.33333333333333331, bool training=False, Generator? generator=None) -> Tensor", rrelu_with_noise),
        out_from_functional("aten::rrelu_with_noise.out(Tensor self, Tensor(b!) noise, Scalar lower=0.125, Scalar upper=0.33333333333333331, bool training=False, Generator? generator=None, *, Tensor(a!) out) -> Tensor(a!)", rrelu_with_noise),
        in_place_from_functional("aten::rrelu_with_noise_(Tensor(a!) self, Tensor(b!) noise, Scalar lower=0.125, Scalar upper=0.33333333333333331, bool training=False, Generator? generator=None) -> Tensor(a!)", rrelu_with_noise),
        typed("aten::rrelu_with_noise_functional(Tensor self, Tensor noise, Scalar lower=0.125, Scalar upper=0.33333333333333331, bool training=False, Generator? generator=None) -> (Tensor, Tensor noise_out)", rrelu_with_noise_functional),
        typed("aten::rrelu(Tensor self, Scalar lower=0.125, Scalar upper=0.33333333333333331, bool training=False, Generator? generator=None) -> Tensor", rrelu),
        in_place_from_functional("aten::rrelu_(Tensor(a!) self, Scalar lower=0.125, Scalar upper=0.33333333333333331, bool training=False, Generator? generator=None) -> Tensor(a!)", rrelu),
    ];
    declarations
}
