//! Creation and shape operators: `*_like`/`new_*` factories, empty, linspace/logspace, eye,
//! random tensors and sampling (exponential_, multinomial) from the seedable generators and
//! their seeding, tril/triu, hstack/vstack, repeat, repeat_interleave, tile, flip, roll,
//! meshgrid and broadcast_tensors, as typed kernels.
//!
//! A factory's trailing options (`ScalarType? dtype, Layout? layout, Device? device,
//! bool? pin_memory`, sometimes `MemoryFormat? memory_format`) are parameters of their own:
//! the dtype is read, the device must be the CPU (`binding::CpuDevice`), and the layout, pinning and
//! memory format, which change nothing for a strided CPU tensor, are [`Unread`]. A
//! `Generator? generator` argument is a [`GeneratorChoice`], entered around the kernel's draws.

use std::sync::Arc;

use ferrojit_tensor::ops::binary::BinaryOp;
use ferrojit_tensor::ops::{creation, random};
use ferrojit_tensor::{DType, Scalar, Tensor};

use super::binding::{
    in_place_from_functional, out_from_functional, typed, typed_in_place, CpuDevice, FromArgument,
};
use crate::error::{Result, RuntimeError};
use crate::ivalue::{Device, IValue};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// An argument the kernel accepts and does not read: a factory's `Layout? layout`,
/// `bool? pin_memory` and (except for the random `*_like` factories) `MemoryFormat?
/// memory_format`, which change nothing for a strided CPU tensor, and arguments that are
/// only a hint (`output_size`, `sparse_grad`). It converts nothing, so it never fails.
pub(super) struct Unread;

impl FromArgument for Unread {
    fn from_argument(_value: &IValue) -> Result<Self> {
        Ok(Unread)
    }
}

/// A `SymInt[] size` of a new tensor: every size must be non-negative (PyTorch's message).
struct Sizes(Vec<usize>);

impl FromArgument for Sizes {
    fn from_argument(value: &IValue) -> Result<Self> {
        let raw = value.to_int_vec()?;
        raw.iter()
            .map(|&size| {
                usize::try_from(size).map_err(|_| {
                    RuntimeError::Other(format!(
                        "Trying to create tensor with negative dimension {size}: {raw:?}"
                    ))
                })
            })
            .collect::<Result<Vec<usize>>>()
            .map(Sizes)
    }
}

/// A `Generator? generator` argument: the generator the kernel's draws come from, or None
/// for the default one.
pub(super) struct GeneratorChoice(pub(super) Option<random::SharedGenerator>);

impl FromArgument for GeneratorChoice {
    fn from_argument(value: &IValue) -> Result<Self> {
        match value {
            IValue::None => Ok(GeneratorChoice(None)),
            IValue::Generator(generator) => Ok(GeneratorChoice(Some(generator.clone()))),
            other => Err(RuntimeError::Other(format!(
                "expected a Generator for argument 'generator', got {}",
                other.tag_name()
            ))),
        }
    }
}

impl GeneratorChoice {
    /// Draws come from this generator until the returned scope drops.
    pub(super) fn enter(&self) -> random::GeneratorScope {
        random::GeneratorScope::enter(self.0.as_ref())
    }
}

/// A `Generator self` argument (the seeding methods of `torch.Generator`).
struct GeneratorHandle(random::SharedGenerator);

impl FromArgument for GeneratorHandle {
    fn from_argument(value: &IValue) -> Result<Self> {
        match value {
            IValue::Generator(generator) => Ok(GeneratorHandle(generator.clone())),
            other => Err(RuntimeError::Other(format!(
                "expected a Generator, got {}",
                other.tag_name()
            ))),
        }
    }
}

impl GeneratorHandle {
    fn lock(&self) -> std::sync::MutexGuard<'_, random::Generator> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn default_float(dtype: Option<DType>) -> DType {
    dtype.unwrap_or(DType::default_float())
}

fn full_like(
    input: Input,
    fill_value: Scalar,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
    _memory_format: Unread,
) -> Result<Tensor> {
    let dtype = dtype.unwrap_or(input.dtype());
    Ok(Tensor::full(input.sizes(), fill_value, dtype)?)
}

fn empty_like(
    input: Input,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
    _memory_format: Unread,
) -> Result<Tensor> {
    Ok(Tensor::zeros(
        input.sizes(),
        dtype.unwrap_or(input.dtype()),
    )?)
}

fn empty(
    size: Sizes,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
    _memory_format: Unread,
) -> Result<Tensor> {
    Ok(Tensor::zeros(&size.0, default_float(dtype))?)
}

/// `new_zeros`, `new_ones`, `new_empty`: `input`'s dtype unless one is given, filled with
/// `fill_value` (`new_empty` fills with zeros).
fn new_filled(
    fill_value: Scalar,
) -> impl Fn(Input, Sizes, Option<DType>, Unread, CpuDevice, Unread) -> Result<Tensor>
       + Send
       + Sync
       + 'static {
    move |input: Input,
          size: Sizes,
          dtype: Option<DType>,
          _layout: Unread,
          _device: CpuDevice,
          _pin_memory: Unread| {
        Ok(Tensor::full(
            &size.0,
            fill_value,
            dtype.unwrap_or(input.dtype()),
        )?)
    }
}

fn new_full(
    input: Input,
    size: Sizes,
    fill_value: Scalar,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    Ok(Tensor::full(
        &size.0,
        fill_value,
        dtype.unwrap_or(input.dtype()),
    )?)
}

/// A tensor-library draw of a tensor laid out like a given one, or of fresh sizes.
type DrawLike = fn(&Tensor, DType) -> ferrojit_tensor::Result<Tensor>;
type DrawFresh = fn(&[usize], DType) -> ferrojit_tensor::Result<Tensor>;

/// `rand_like` / `randn_like`: laid out like the input when the memory format preserves it
/// (None or anything but contiguous, 0), which decides the order elements are drawn in, as
/// in PyTorch; else drawn as a fresh contiguous tensor.
fn random_like(
    like: DrawLike,
    fresh: DrawFresh,
) -> impl Fn(Input, Option<DType>, Unread, CpuDevice, Unread, Option<i64>) -> Result<Tensor>
       + Clone
       + Send
       + Sync
       + 'static {
    move |input: Input,
          dtype: Option<DType>,
          _layout: Unread,
          _device: CpuDevice,
          _pin_memory: Unread,
          memory_format: Option<i64>| {
        let dtype = dtype.unwrap_or(input.dtype());
        let preserve = memory_format != Some(0);
        Ok(if preserve {
            like(&input, dtype)?
        } else {
            fresh(input.sizes(), dtype)?
        })
    }
}

/// The `.generator` overload of `rand_like` / `randn_like`.
fn random_like_generator(
    like: DrawLike,
    fresh: DrawFresh,
) -> impl Fn(
    Input,
    GeneratorChoice,
    Option<DType>,
    Unread,
    CpuDevice,
    Unread,
    Option<i64>,
) -> Result<Tensor>
       + Send
       + Sync
       + 'static {
    let draw = random_like(like, fresh);
    move |input: Input,
          generator: GeneratorChoice,
          dtype: Option<DType>,
          layout: Unread,
          device: CpuDevice,
          pin_memory: Unread,
          memory_format: Option<i64>| {
        let _scope = generator.enter();
        draw(input, dtype, layout, device, pin_memory, memory_format)
    }
}

fn linspace(
    start: f64,
    end: f64,
    steps: i64,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    Ok(creation::linspace(start, end, steps, default_float(dtype))?)
}

#[allow(clippy::too_many_arguments)]
fn logspace(
    start: f64,
    end: f64,
    steps: i64,
    base: f64,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    Ok(creation::logspace(
        start,
        end,
        steps,
        base,
        default_float(dtype),
    )?)
}

/// `linspace.out`: computed in the out tensor's dtype, then written into it (resized). Not
/// made from the functional kernel, which would compute in the default float dtype and
/// round only when writing.
fn linspace_out(start: f64, end: f64, steps: i64, out: Input) -> Result<Tensor> {
    let result = creation::linspace(start, end, steps, out.dtype())?;
    Ok(result.write_into_out(&out)?)
}

/// `logspace.out`: computed in the out tensor's dtype, as `linspace.out`.
fn logspace_out(start: f64, end: f64, steps: i64, base: f64, out: Input) -> Result<Tensor> {
    let result = creation::logspace(start, end, steps, base, out.dtype())?;
    Ok(result.write_into_out(&out)?)
}

/// `full.out`: the fill in the out tensor's dtype (no inference from the fill value, which
/// the functional `full` would do).
fn full_out(size: Sizes, fill_value: Scalar, out: Input) -> Result<Tensor> {
    let result = Tensor::full(&size.0, fill_value, out.dtype())?;
    Ok(result.write_into_out(&out)?)
}

fn eye(
    n: i64,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    Ok(creation::eye(n, None, default_float(dtype))?)
}

fn eye_m(
    n: i64,
    m: i64,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    Ok(creation::eye(n, Some(m), default_float(dtype))?)
}

fn rand(
    size: Sizes,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    Ok(creation::rand(&size.0, default_float(dtype))?)
}

fn rand_generator(
    size: Sizes,
    generator: GeneratorChoice,
    dtype: Option<DType>,
    layout: Unread,
    device: CpuDevice,
    pin_memory: Unread,
) -> Result<Tensor> {
    let _scope = generator.enter();
    rand(size, dtype, layout, device, pin_memory)
}

fn randn(
    size: Sizes,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    Ok(creation::randn(&size.0, default_float(dtype))?)
}

fn randn_generator(
    size: Sizes,
    generator: GeneratorChoice,
    dtype: Option<DType>,
    layout: Unread,
    device: CpuDevice,
    pin_memory: Unread,
) -> Result<Tensor> {
    let _scope = generator.enter();
    randn(size, dtype, layout, device, pin_memory)
}

fn randint(
    high: i64,
    size: Sizes,
    dtype: Option<DType>,
    layout: Unread,
    device: CpuDevice,
    pin_memory: Unread,
) -> Result<Tensor> {
    randint_low(0, high, size, dtype, layout, device, pin_memory)
}

#[allow(clippy::too_many_arguments)]
fn randint_generator(
    high: i64,
    size: Sizes,
    generator: GeneratorChoice,
    dtype: Option<DType>,
    layout: Unread,
    device: CpuDevice,
    pin_memory: Unread,
) -> Result<Tensor> {
    let _scope = generator.enter();
    randint(high, size, dtype, layout, device, pin_memory)
}

fn randint_low(
    low: i64,
    high: i64,
    size: Sizes,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    let dtype = dtype.unwrap_or(DType::Int64);
    Ok(creation::randint(low, high, &size.0, dtype)?)
}

#[allow(clippy::too_many_arguments)]
fn randint_low_generator(
    low: i64,
    high: i64,
    size: Sizes,
    generator: GeneratorChoice,
    dtype: Option<DType>,
    layout: Unread,
    device: CpuDevice,
    pin_memory: Unread,
) -> Result<Tensor> {
    let _scope = generator.enter();
    randint_low(low, high, size, dtype, layout, device, pin_memory)
}

fn randperm(
    n: i64,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    Ok(creation::randperm(n, dtype.unwrap_or(DType::Int64))?)
}

fn randperm_generator(
    n: i64,
    generator: GeneratorChoice,
    dtype: Option<DType>,
    layout: Unread,
    device: CpuDevice,
    pin_memory: Unread,
) -> Result<Tensor> {
    let _scope = generator.enter();
    randperm(n, dtype, layout, device, pin_memory)
}

/// `torch.Generator(device=None, seed=None)`: a new CPU generator, seeded with `seed` or, as
/// PyTorch's constructor, with the default seed.
fn new_generator(device: Option<Device>, seed: Option<i64>) -> Result<IValue> {
    if let Some(device) = device {
        if device.device_type != "cpu" {
            return Err(RuntimeError::Other(format!(
                "only CPU generators are supported, not {}",
                device.device_type
            )));
        }
    }
    // The bits of the int64, as PyTorch reads a seed into its uint64.
    let seed = seed.map_or(random::DEFAULT_SEED, |seed| seed as u64);
    Ok(IValue::Generator(random::new_generator(seed)))
}

/// `Generator.manual_seed(seed)`: reseeds this generator and returns it.
fn generator_manual_seed(generator: GeneratorHandle, seed: i64) -> Result<IValue> {
    *generator.lock() = random::Generator::new(seed as u64);
    Ok(IValue::Generator(generator.0))
}

/// `Generator.initial_seed()` (as int64, the bits of PyTorch's uint64 seed).
fn generator_initial_seed(generator: GeneratorHandle) -> Result<i64> {
    let seed = generator.lock().initial_seed();
    Ok(seed as i64)
}

/// `Generator.seed()`: reseeds this generator with a non-deterministic seed and returns it
/// (as int64, the bits of PyTorch's uint64 seed).
fn generator_seed(generator: GeneratorHandle) -> Result<i64> {
    Ok(random::reseed(&generator.0) as i64)
}

fn manual_seed(seed: i64) -> Result<()> {
    creation::manual_seed(seed as u64);
    Ok(())
}

fn exponential_(input: Input, lambd: f64, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(input.exponential_(lambd)?)
}

fn exponential(input: Input, lambd: f64, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(input.exponential(lambd)?)
}

fn multinomial(
    input: Input,
    num_samples: i64,
    replacement: bool,
    generator: GeneratorChoice,
) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(input.multinomial(num_samples, replacement)?)
}

/// `multinomial.out`: hand-written rather than made from `multinomial`, because ATen checks
/// `out`'s dtype (it must be int64) before drawing, so a wrong `out` fails with its own
/// message and leaves the generator untouched.
fn multinomial_out(
    input: Input,
    num_samples: i64,
    replacement: bool,
    generator: GeneratorChoice,
    out: Input,
) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(input.multinomial_out(num_samples, replacement, &out)?)
}

fn normal_(input: Input, mean: f64, std: f64, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(input.normal_(mean, std)?)
}

fn uniform_(input: Input, from: f64, to: f64, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(input.uniform_(from, to)?)
}

#[allow(clippy::too_many_arguments)]
fn normal_float_float(
    mean: f64,
    std: f64,
    size: Sizes,
    generator: GeneratorChoice,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    let _scope = generator.enter();
    let result = Tensor::zeros(&size.0, default_float(dtype))?;
    result.normal_(mean, std)?;
    Ok(result)
}

/// ATen's check on a tensor of standard deviations (`CHECK_NORMAL_TENSOR_STD`).
fn check_normal_std_tensor(std: &Tensor) -> Result<()> {
    if std.to_f64_vec().iter().any(|&value| value < 0.0) {
        return Err(RuntimeError::Other(
            "normal expects all elements of std >= 0.0".to_string(),
        ));
    }
    Ok(())
}

/// `torch.normal(mean_tensor, std)`: as ATen, standard draws scaled by `std` into a
/// contiguous tensor like `mean`, then `mean` added (two roundings, in that order).
fn normal_tensor_float(mean: Input, std: f64, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    let result = Tensor::zeros(mean.sizes(), mean.dtype())?;
    result.normal_(0.0, std)?;
    result.add_(&mean, &Scalar::Int(1))?;
    Ok(result)
}

/// `torch.normal(mean, std_tensor)`: standard draws, times `std`, plus `mean` as a 0-dim
/// tensor of the result's dtype (ATen's order).
fn normal_float_tensor(mean: f64, std: Input, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    check_normal_std_tensor(&std)?;
    let result = Tensor::zeros(std.sizes(), std.dtype())?;
    result.normal_(0.0, 1.0)?;
    result.binary_(&std, BinaryOp::Mul)?;
    result.add_(
        &Tensor::scalar_tensor(Scalar::Float(mean), result.dtype()),
        &Scalar::Int(1),
    )?;
    Ok(result)
}

/// `torch.normal(mean_tensor, std_tensor)`: standard draws in the broadcast shape (dtype of
/// `mean`), times `std`, plus `mean`.
fn normal_tensor_tensor(mean: Input, std: Input, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    check_normal_std_tensor(&std)?;
    let shape = ferrojit_tensor::shape::broadcast_shapes(mean.sizes(), std.sizes())?;
    let result = Tensor::zeros(&shape, mean.dtype())?;
    result.normal_(0.0, 1.0)?;
    result.binary_(&std, BinaryOp::Mul)?;
    result.add_(&mean, &Scalar::Int(1))?;
    Ok(result)
}

fn bernoulli(input: Input, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(input.bernoulli()?)
}

fn bernoulli_p(input: Input, p: f64, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    let result = Tensor::zeros(input.sizes(), input.dtype())?;
    result.bernoulli_scalar_(p)?;
    Ok(result)
}

fn bernoulli_float_(input: Input, p: f64, generator: GeneratorChoice) -> Result<Tensor> {
    let _scope = generator.enter();
    Ok(input.bernoulli_scalar_(p)?)
}

fn tril(input: Input, diagonal: i64) -> Result<Tensor> {
    Ok(input.tril(diagonal)?)
}

fn triu(input: Input, diagonal: i64) -> Result<Tensor> {
    Ok(input.triu(diagonal)?)
}

fn hstack(tensors: Vec<Tensor>) -> Result<Tensor> {
    Ok(creation::hstack(&tensors)?)
}

fn vstack(tensors: Vec<Tensor>) -> Result<Tensor> {
    Ok(creation::vstack(&tensors)?)
}

fn repeat(input: Input, repeats: Vec<i64>) -> Result<Tensor> {
    Ok(input.repeat(&repeats)?)
}

fn tile(input: Input, dims: Vec<i64>) -> Result<Tensor> {
    Ok(input.tile(&dims)?)
}

fn repeat_interleave_tensor(repeats: Input, _output_size: Unread) -> Result<Tensor> {
    Ok(repeats.repeat_interleave_self_tensor()?)
}

fn repeat_interleave_self_tensor(
    input: Input,
    repeats: Input,
    dim: Option<i64>,
    _output_size: Unread,
) -> Result<Tensor> {
    Ok(input.repeat_interleave(&repeats, dim)?)
}

fn repeat_interleave_self_int(
    input: Input,
    repeats: i64,
    dim: Option<i64>,
    _output_size: Unread,
) -> Result<Tensor> {
    let repeats = Tensor::scalar_tensor(Scalar::Int(repeats), DType::Int64);
    Ok(input.repeat_interleave(&repeats, dim)?)
}

fn flip(input: Input, dims: Vec<i64>) -> Result<Tensor> {
    Ok(input.flip(&dims)?)
}

fn roll(input: Input, shifts: Vec<i64>, dims: Vec<i64>) -> Result<Tensor> {
    Ok(input.roll(&shifts, &dims)?)
}

fn meshgrid(tensors: Vec<Tensor>) -> Result<Vec<Tensor>> {
    Ok(creation::meshgrid(&tensors, "ij")?)
}

fn meshgrid_indexing(tensors: Vec<Tensor>, indexing: String) -> Result<Vec<Tensor>> {
    Ok(creation::meshgrid(&tensors, &indexing)?)
}

fn broadcast_tensors(tensors: Vec<Tensor>) -> Result<Vec<Tensor>> {
    Ok(creation::broadcast_tensors(&tensors)?)
}

/// Every operator of this file, in declaration order (within one name, PyTorch's).
#[rustfmt::skip]
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", full_like),
        typed("aten::empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", empty_like),
        typed("aten::empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", empty),
        typed("aten::new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", new_filled(Scalar::Int(0))),
        typed("aten::new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", new_filled(Scalar::Int(1))),
        typed("aten::new_empty(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", new_filled(Scalar::Int(0))),
        typed("aten::new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", new_full),
        typed("aten::rand_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", random_like(creation::rand_like, creation::rand)),
        typed("aten::randn_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", random_like(creation::randn_like, creation::randn)),
        typed("aten::linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", linspace),
        typed("aten::logspace(Scalar start, Scalar end, int steps, float base=10., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", logspace),
        typed("aten::linspace.out(Scalar start, Scalar end, int steps, *, Tensor(a!) out) -> Tensor(a!)", linspace_out),
        typed("aten::logspace.out(Scalar start, Scalar end, int steps, float base=10., *, Tensor(a!) out) -> Tensor(a!)", logspace_out),
        typed("aten::full.out(SymInt[] size, Scalar fill_value, *, Tensor(a!) out) -> Tensor(a!)", full_out),
        typed("aten::eye(SymInt n, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", eye),
        typed("aten::eye.m(SymInt n, SymInt m, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", eye_m),
        typed("aten::rand(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", rand),
        typed("aten::randn(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randn),
        typed("aten::randint(SymInt high, SymInt[] size, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randint),
        typed("aten::randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randint_low),
        typed("aten::randperm(SymInt n, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randperm),
        // The random in-place forms draw straight into `self` (the draw order follows its
        // layout), so they bind the tensor library's own in-place kernels.
        typed_in_place("aten::normal_(Tensor(a!) self, float mean=0., float std=1., *, Generator? generator=None) -> Tensor(a!)", normal_),
        typed("aten::normal.Tensor_float(Tensor mean, float std=1., *, Generator? generator=None) -> Tensor", normal_tensor_float),
        typed("aten::normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor", normal_float_tensor),
        typed("aten::normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor", normal_tensor_tensor),
        typed_in_place("aten::uniform_(Tensor(a!) self, float from=0., float to=1., *, Generator? generator=None) -> Tensor(a!)", uniform_),
        typed("aten::normal.float_float(float mean, float std, SymInt[] size, *, Generator? generator=None, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", normal_float_float),
        typed("aten::bernoulli(Tensor self, *, Generator? generator=None) -> Tensor", bernoulli),
        typed("aten::bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor", bernoulli_p),
        typed_in_place("aten::bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)", bernoulli_float_),
        typed("aten::manual_seed(int seed) -> ()", manual_seed),
        typed("aten::manual_seed.generator(Generator(a!) self, int seed) -> Generator(a!)", generator_manual_seed),
        typed("aten::initial_seed(Generator self) -> int", generator_initial_seed),
        typed("aten::seed(Generator(a!) self) -> int", generator_seed),
        typed_in_place("aten::exponential_(Tensor(a!) self, float lambd=1., *, Generator? generator=None) -> Tensor(a!)", exponential_),
        typed("aten::exponential(Tensor self, float lambd=1., *, Generator? generator=None) -> Tensor", exponential),
        out_from_functional("aten::exponential.out(Tensor self, float lambd=1., *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)", exponential),
        typed("aten::multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, Generator? generator=None) -> Tensor", multinomial),
        typed("aten::multinomial.out(Tensor self, SymInt num_samples, bool replacement=False, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)", multinomial_out),
        typed("aten::Generator(*, Device? device=None, int? seed=None) -> Generator", new_generator),
        typed("aten::rand.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", rand_generator),
        typed("aten::randn.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randn_generator),
        typed("aten::randint.generator(SymInt high, SymInt[] size, *, Generator? generator, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randint_generator),
        typed("aten::randint.low_generator(SymInt low, SymInt high, SymInt[] size, *, Generator? generator, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randint_low_generator),
        typed("aten::randperm.generator(SymInt n, *, Generator? generator, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randperm_generator),
        typed("aten::rand_like.generator(Tensor self, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", random_like_generator(creation::rand_like, creation::rand)),
        typed("aten::randn_like.generator(Tensor self, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", random_like_generator(creation::randn_like, creation::randn)),
        typed("aten::tril(Tensor self, SymInt diagonal=0) -> Tensor", tril),
        typed("aten::triu(Tensor self, SymInt diagonal=0) -> Tensor", triu),
        in_place_from_functional("aten::tril_(Tensor(a!) self, SymInt diagonal=0) -> Tensor(a!)", tril),
        in_place_from_functional("aten::triu_(Tensor(a!) self, SymInt diagonal=0) -> Tensor(a!)", triu),
        typed("aten::hstack(Tensor[] tensors) -> Tensor", hstack),
        typed("aten::vstack(Tensor[] tensors) -> Tensor", vstack),
        typed("aten::repeat(Tensor self, SymInt[] repeats) -> Tensor", repeat),
        typed("aten::tile(Tensor self, SymInt[] dims) -> Tensor", tile),
        typed("aten::repeat_interleave.Tensor(Tensor repeats, *, SymInt? output_size=None) -> Tensor", repeat_interleave_tensor),
        typed("aten::repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor", repeat_interleave_self_tensor),
        typed("aten::repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor", repeat_interleave_self_int),
        typed("aten::flip(Tensor self, int[] dims) -> Tensor", flip),
        typed("aten::roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor", roll),
        typed("aten::meshgrid(Tensor[] tensors) -> Tensor[]", meshgrid),
        typed("aten::meshgrid.indexing(Tensor[] tensors, *, str indexing) -> Tensor[]", meshgrid_indexing),
        typed("aten::broadcast_tensors(Tensor[] tensors) -> Tensor[]", broadcast_tensors),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_negative_size_is_refused_with_pytorchs_message() {
        let size = IValue::list(
            ferrojit_ir::Type::Int,
            vec![IValue::Int(2), IValue::Int(-1)],
        );
        let error = Sizes::from_argument(&size)
            .err()
            .map(|error| error.to_string());
        assert_eq!(
            error.as_deref(),
            Some("Trying to create tensor with negative dimension -1: [2, -1]")
        );
    }

    #[test]
    fn a_factory_runs_on_the_cpu_only() {
        assert!(CpuDevice::from_argument(&IValue::None).is_ok());
        assert!(CpuDevice::from_argument(&IValue::from(Device::cpu())).is_ok());
        let cuda = IValue::from(Device::parse("cuda:0").unwrap());
        let error = CpuDevice::from_argument(&cuda).err().map(|e| e.to_string());
        assert!(error.is_some_and(|error| error.contains("ferrojit runs on the CPU only")));
    }

    #[test]
    fn a_generator_argument_must_be_a_generator_or_none() {
        assert!(
            GeneratorChoice::from_argument(&IValue::None).is_ok_and(|choice| choice.0.is_none())
        );
        let error = GeneratorChoice::from_argument(&IValue::Int(3))
            .err()
            .map(|e| e.to_string());
        assert!(error.is_some_and(
            |error| error.contains("expected a Generator for argument 'generator', got Int")
        ));
    }
}
