//! The functional random operators PyTorch derives from its in-place distributions
//! (`random`, `cauchy`, `log_normal`, `geometric`, `uniform`, `normal_functional`,
//! `bernoulli.Tensor`, `poisson`, `binomial`) and the `randint_like` factories, as typed kernels. Their
//! in-place and out= overloads come from these through `derived_variants.rs`; each draws from
//! the chosen generator as ATen's CPU kernels do (ferrojit-tensor's `ops/distributions.rs`).

use std::sync::Arc;

use ferrojit_tensor::ops::distributions::{self, empty_like_for_draws};
use ferrojit_tensor::{DType, Tensor};

use super::binding::{typed, CpuDevice};
use super::creation_ops::{GeneratorChoice, Unread};
use crate::error::{Result, RuntimeError};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// A tensor laid out like `input` (its clone's layout), of its dtype, for a functional form.
fn like(input: &Tensor) -> Result<Tensor> {
    Ok(empty_like_for_draws(input, input.dtype())?)
}

fn random(input: Input, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(like(&input)?.random_full_()?)
}

fn random_from(
    input: Input,
    from: i64,
    to: Option<i64>,
    generator: GeneratorChoice,
) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(like(&input)?.random_from_to_(from, to)?)
}

fn random_to(input: Input, to: i64, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(like(&input)?.random_from_to_(0, Some(to))?)
}

fn cauchy(input: Input, median: f64, sigma: f64, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(like(&input)?.cauchy_(median, sigma)?)
}

fn log_normal(input: Input, mean: f64, std: f64, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(like(&input)?.log_normal_(mean, std)?)
}

fn geometric(input: Input, p: f64, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(like(&input)?.geometric_(p)?)
}

fn uniform(input: Input, from: f64, to: f64, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(like(&input)?.uniform_(from, to)?)
}

fn normal_functional(
    input: Input,
    mean: f64,
    std: f64,
    generator: GeneratorChoice,
) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(like(&input)?.normal_(mean, std)?)
}

/// `normal.out(self, mean, std)`: the out= form of `normal_functional` (another name, so
/// the data file cannot pair them).
fn normal_out(
    input: Input,
    mean: f64,
    std: f64,
    generator: GeneratorChoice,
    out: Input,
) -> Result<Tensor> {
    let result = normal_functional(input, mean, std, generator)?;
    Ok(result.write_into_out(&out)?)
}

fn bernoulli_tensor(input: Input, p: Input, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(like(&input)?.bernoulli_tensor_(&p)?)
}

/// `bernoulli.float_out(self, p=0.5)`: `bernoulli.p` written into `out` (the defaults
/// differ, so the data file cannot pair them).
fn bernoulli_float_out(
    input: Input,
    p: f64,
    generator: GeneratorChoice,
    out: Input,
) -> Result<Tensor> {
    let _scope = generator.enter();
    let result = Tensor::zeros(input.sizes(), input.dtype())?;
    result.bernoulli_scalar_(p)?;
    Ok(result.write_into_out(&out)?)
}

fn poisson(input: Input, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(input.poisson()?)
}

fn binomial(count: Input, prob: Input, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(distributions::binomial(&count, &prob)?)
}

/// `randint_like`: `empty_like(self, dtype)` filled by `random_(low, high)`.
fn randint_like_from(
    input: &Tensor,
    low: i64,
    high: i64,
    dtype: Option<DType>,
    generator: &GeneratorChoice,
) -> Result<Tensor> {
    let _scope = generator.enter();
    let result = empty_like_for_draws(input, dtype.unwrap_or(input.dtype()))?;
    Ok(result.random_from_to_(low, Some(high))?)
}

/// The `Tensor high` of `randint_like.Tensor`: a 0-dim tensor, read as int64.
fn scalar_high(high: &Tensor) -> Result<i64> {
    if high.numel() != 1 || high.dim() != 0 {
        return Err(RuntimeError::Other(
            "high must be a scalar tensor and on CPU".to_string(),
        ));
    }
    Ok(high.to_f64_vec()[0] as i64)
}

fn randint_like(
    input: Input,
    high: i64,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
    _memory_format: Unread,
) -> Result<Tensor> {
    randint_like_from(&input, 0, high, dtype, &GeneratorChoice(None))
}

fn randint_like_tensor(
    input: Input,
    high: Input,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
    _memory_format: Unread,
) -> Result<Tensor> {
    let high = scalar_high(&high)?;
    randint_like_from(&input, 0, high, dtype, &GeneratorChoice(None))
}

#[allow(clippy::too_many_arguments)]
fn randint_like_low_dtype(
    input: Input,
    low: i64,
    high: i64,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
    _memory_format: Unread,
) -> Result<Tensor> {
    randint_like_from(&input, low, high, dtype, &GeneratorChoice(None))
}

#[allow(clippy::too_many_arguments)]
fn randint_like_generator(
    input: Input,
    high: i64,
    generator: GeneratorChoice,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
    _memory_format: Unread,
) -> Result<Tensor> {
    randint_like_from(&input, 0, high, dtype, &generator)
}

#[allow(clippy::too_many_arguments)]
fn randint_like_tensor_generator(
    input: Input,
    high: Input,
    generator: GeneratorChoice,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
    _memory_format: Unread,
) -> Result<Tensor> {
    let high = scalar_high(&high)?;
    randint_like_from(&input, 0, high, dtype, &generator)
}

#[allow(clippy::too_many_arguments)]
fn randint_like_low_generator_dtype(
    input: Input,
    low: i64,
    high: i64,
    generator: GeneratorChoice,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
    _memory_format: Unread,
) -> Result<Tensor> {
    randint_like_from(&input, low, high, dtype, &generator)
}

/// Every operator of this file, in declaration order (within one name, PyTorch's).
#[rustfmt::skip]
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::random(Tensor self, *, Generator? generator=None) -> Tensor", random),
        typed("aten::random.from(Tensor self, int from, int? to, *, Generator? generator=None) -> Tensor", random_from),
        typed("aten::random.to(Tensor self, int to, *, Generator? generator=None) -> Tensor", random_to),
        typed("aten::cauchy(Tensor self, float median=0., float sigma=1., *, Generator? generator=None) -> Tensor", cauchy),
        typed("aten::log_normal(Tensor self, float mean=1., float std=2., *, Generator? generator=None) -> Tensor", log_normal),
        typed("aten::geometric(Tensor self, float p, *, Generator? generator=None) -> Tensor", geometric),
        typed("aten::uniform(Tensor self, float from=0., float to=1., *, Generator? generator=None) -> Tensor", uniform),
        typed("aten::normal_functional(Tensor self, float mean=0., float std=1., *, Generator? generator=None) -> Tensor", normal_functional),
        typed("aten::normal.out(Tensor self, float mean=0., float std=1., *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)", normal_out),
        typed("aten::bernoulli.Tensor(Tensor self, Tensor p, *, Generator? generator=None) -> Tensor", bernoulli_tensor),
        typed("aten::bernoulli.float_out(Tensor self, float p=0.5, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)", bernoulli_float_out),
        typed("aten::poisson(Tensor self, Generator? generator=None) -> Tensor", poisson),
        typed("aten::binomial(Tensor count, Tensor prob, Generator? generator=None) -> Tensor", binomial),
        typed("aten::randint_like(Tensor self, SymInt high, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", randint_like),
        typed("aten::randint_like.Tensor(Tensor self, Tensor high, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", randint_like_tensor),
        typed("aten::randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", randint_like_low_dtype),
        typed("aten::randint_like.generator(Tensor self, SymInt high, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", randint_like_generator),
        typed("aten::randint_like.Tensor_generator(Tensor self, Tensor high, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", randint_like_tensor_generator),
        typed("aten::randint_like.low_generator_dtype(Tensor self, SymInt low, SymInt high, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", randint_like_low_generator_dtype),
    ]
}
