//! Creation and shape operators: `*_like`/`new_*` factories, empty, linspace/logspace, eye,
//! random tensors and sampling (exponential_, multinomial) from the seedable generators and
//! their seeding, tril/triu, hstack/vstack, repeat, repeat_interleave, tile, flip, roll,
//! meshgrid and broadcast_tensors.

use ferrojit_tensor::ops::{creation, random};
use ferrojit_tensor::{DType, Scalar, Tensor};

use super::nn_ops::tensor_list;
use super::{optional_dtype, pop_array, pop_vec, push, scalar, KernelTableEntry};
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::registry::Stack;

fn check_cpu(device: &IValue) -> Result<()> {
    match device {
        IValue::None => Ok(()),
        IValue::Device(d) if d.device_type == "cpu" => Ok(()),
        IValue::Device(d) => Err(RuntimeError::Other(format!(
            "device '{d}' is not available: ferrojit runs on the CPU only"
        ))),
        other => Err(RuntimeError::type_mismatch(
            "Device",
            other.type_of().to_string(),
            "device argument",
        )),
    }
}

fn sizes(value: &IValue) -> Result<Vec<usize>> {
    let raw = value.to_int_vec()?;
    raw.iter()
        .map(|&s| {
            usize::try_from(s).map_err(|_| {
                RuntimeError::Other(format!(
                    "Trying to create tensor with negative dimension {s}: {raw:?}"
                ))
            })
        })
        .collect()
}

/// Pops the trailing `dtype, layout, device, pin_memory` (and `memory_format` when `with_format`)
/// options, returning the dtype.
fn pop_options(stack: &mut Stack, with_format: bool) -> Result<Option<DType>> {
    if with_format {
        pop_vec(stack, 1)?;
    }
    let [dtype, _layout, device, _pin] = pop_array::<4>(stack)?;
    check_cpu(&device)?;
    optional_dtype(&dtype)
}

fn full_like(stack: &mut Stack) -> Result<()> {
    let dtype = pop_options(stack, true)?;
    let [s, fill] = pop_array::<2>(stack)?;
    let t = s.to_tensor()?;
    push(
        stack,
        Tensor::full(t.sizes(), scalar(&fill)?, dtype.unwrap_or(t.dtype()))?,
    )
}

fn empty_like(stack: &mut Stack) -> Result<()> {
    let dtype = pop_options(stack, true)?;
    let [s] = pop_array::<1>(stack)?;
    let t = s.to_tensor()?;
    push(stack, Tensor::zeros(t.sizes(), dtype.unwrap_or(t.dtype()))?)
}

fn empty(stack: &mut Stack) -> Result<()> {
    let dtype = pop_options(stack, true)?;
    let [size] = pop_array::<1>(stack)?;
    push(
        stack,
        Tensor::zeros(&sizes(&size)?, dtype.unwrap_or(DType::default_float()))?,
    )
}

fn new_filled(stack: &mut Stack, fill: Scalar) -> Result<()> {
    let dtype = pop_options(stack, false)?;
    let [s, size] = pop_array::<2>(stack)?;
    let t = s.to_tensor()?;
    push(
        stack,
        Tensor::full(&sizes(&size)?, fill, dtype.unwrap_or(t.dtype()))?,
    )
}

fn new_zeros(stack: &mut Stack) -> Result<()> {
    new_filled(stack, Scalar::Int(0))
}
fn new_ones(stack: &mut Stack) -> Result<()> {
    new_filled(stack, Scalar::Int(1))
}
fn new_empty(stack: &mut Stack) -> Result<()> {
    new_filled(stack, Scalar::Int(0))
}

fn new_full(stack: &mut Stack) -> Result<()> {
    let dtype = pop_options(stack, false)?;
    let [s, size, fill] = pop_array::<3>(stack)?;
    let t = s.to_tensor()?;
    push(
        stack,
        Tensor::full(&sizes(&size)?, scalar(&fill)?, dtype.unwrap_or(t.dtype()))?,
    )
}

/// `rand_like` / `randn_like` options: the dtype, and whether the result keeps the input's
/// layout (`memory_format` None or preserve) rather than a contiguous one. The layout decides
/// the order elements are drawn in, as in PyTorch.
fn like_options(stack: &mut Stack) -> Result<(Option<DType>, bool)> {
    let [format] = pop_array::<1>(stack)?;
    let contiguous = matches!(format, IValue::Int(0));
    let dtype = pop_options(stack, false)?;
    Ok((dtype, !contiguous))
}

/// `rand_like` / `randn_like`: laid out like the input when the memory format preserves it
/// (which decides the order elements are drawn in), else drawn as a fresh contiguous tensor.
fn random_like(
    stack: &mut Stack,
    like: fn(&Tensor, DType) -> ferrojit_tensor::Result<Tensor>,
    fresh: fn(&[usize], DType) -> ferrojit_tensor::Result<Tensor>,
) -> Result<()> {
    let (dtype, preserve) = like_options(stack)?;
    let [s] = pop_array::<1>(stack)?;
    let t = s.to_tensor()?;
    let dtype = dtype.unwrap_or(t.dtype());
    let r = if preserve {
        like(&t, dtype)?
    } else {
        fresh(t.sizes(), dtype)?
    };
    push(stack, r)
}

fn rand_like(stack: &mut Stack) -> Result<()> {
    random_like(stack, creation::rand_like, creation::rand)
}

fn randn_like(stack: &mut Stack) -> Result<()> {
    random_like(stack, creation::randn_like, creation::randn)
}

fn linspace(stack: &mut Stack) -> Result<()> {
    let dtype = pop_options(stack, false)?;
    let [start, end, steps] = pop_array::<3>(stack)?;
    let r = creation::linspace(
        scalar(&start)?.to_f64(),
        scalar(&end)?.to_f64(),
        steps.to_int()?,
        dtype.unwrap_or(DType::default_float()),
    )?;
    push(stack, r)
}

fn logspace(stack: &mut Stack) -> Result<()> {
    let dtype = pop_options(stack, false)?;
    let [start, end, steps, base] = pop_array::<4>(stack)?;
    let r = creation::logspace(
        scalar(&start)?.to_f64(),
        scalar(&end)?.to_f64(),
        steps.to_int()?,
        base.to_double()?,
        dtype.unwrap_or(DType::default_float()),
    )?;
    push(stack, r)
}

/// `linspace.out`: computed in the out tensor's dtype, then written into it (resized).
fn linspace_out(stack: &mut Stack) -> Result<()> {
    let [start, end, steps, out] = pop_array::<4>(stack)?;
    let out = out.to_tensor()?;
    let r = creation::linspace(
        scalar(&start)?.to_f64(),
        scalar(&end)?.to_f64(),
        steps.to_int()?,
        out.dtype(),
    )?;
    push(stack, r.write_into_out(&out)?)
}

/// `logspace.out`: computed in the out tensor's dtype, then written into it (resized).
fn logspace_out(stack: &mut Stack) -> Result<()> {
    let [start, end, steps, base, out] = pop_array::<5>(stack)?;
    let out = out.to_tensor()?;
    let r = creation::logspace(
        scalar(&start)?.to_f64(),
        scalar(&end)?.to_f64(),
        steps.to_int()?,
        base.to_double()?,
        out.dtype(),
    )?;
    push(stack, r.write_into_out(&out)?)
}

/// `full.out`: the fill in the out tensor's dtype (no inference from the fill value).
fn full_out(stack: &mut Stack) -> Result<()> {
    let [size, fill, out] = pop_array::<3>(stack)?;
    let out = out.to_tensor()?;
    let r = Tensor::full(&sizes(&size)?, scalar(&fill)?, out.dtype())?;
    push(stack, r.write_into_out(&out)?)
}

fn eye(stack: &mut Stack) -> Result<()> {
    let dtype = pop_options(stack, false)?;
    let [n] = pop_array::<1>(stack)?;
    push(
        stack,
        creation::eye(n.to_int()?, None, dtype.unwrap_or(DType::default_float()))?,
    )
}

fn eye_m(stack: &mut Stack) -> Result<()> {
    let dtype = pop_options(stack, false)?;
    let [n, m] = pop_array::<2>(stack)?;
    push(
        stack,
        creation::eye(
            n.to_int()?,
            Some(m.to_int()?),
            dtype.unwrap_or(DType::default_float()),
        )?,
    )
}

fn rand(stack: &mut Stack) -> Result<()> {
    let dtype = pop_options(stack, false)?;
    let [size] = pop_array::<1>(stack)?;
    push(
        stack,
        creation::rand(&sizes(&size)?, dtype.unwrap_or(DType::default_float()))?,
    )
}

fn randn(stack: &mut Stack) -> Result<()> {
    let dtype = pop_options(stack, false)?;
    let [size] = pop_array::<1>(stack)?;
    push(
        stack,
        creation::randn(&sizes(&size)?, dtype.unwrap_or(DType::default_float()))?,
    )
}

fn randint(stack: &mut Stack) -> Result<()> {
    let dtype = pop_options(stack, false)?;
    let [high, size] = pop_array::<2>(stack)?;
    let r = creation::randint(
        0,
        high.to_int()?,
        &sizes(&size)?,
        dtype.unwrap_or(DType::Int64),
    )?;
    push(stack, r)
}

fn randint_low(stack: &mut Stack) -> Result<()> {
    let dtype = pop_options(stack, false)?;
    let [low, high, size] = pop_array::<3>(stack)?;
    let r = creation::randint(
        low.to_int()?,
        high.to_int()?,
        &sizes(&size)?,
        dtype.unwrap_or(DType::Int64),
    )?;
    push(stack, r)
}

fn randperm(stack: &mut Stack) -> Result<()> {
    let dtype = pop_options(stack, false)?;
    let [n] = pop_array::<1>(stack)?;
    push(
        stack,
        creation::randperm(n.to_int()?, dtype.unwrap_or(DType::Int64))?,
    )
}

/// The generator a `Generator? generator` argument names, entered for the kernel's draws
/// until the returned scope drops (`None`: the default generator).
fn enter_generator(generator: &IValue) -> Result<random::GeneratorScope> {
    match generator {
        IValue::None => Ok(random::GeneratorScope::enter(None)),
        IValue::Generator(generator) => Ok(random::GeneratorScope::enter(Some(generator))),
        other => Err(RuntimeError::Other(format!(
            "expected a Generator for argument 'generator', got {}",
            other.tag_name()
        ))),
    }
}

/// A `.generator` overload: takes the generator out of the arguments (it is followed by
/// `after` more) and runs `kernel`, the overload without it, drawing from that generator.
fn with_generator_argument(
    stack: &mut Stack,
    after: usize,
    kernel: fn(&mut Stack) -> Result<()>,
) -> Result<()> {
    let index = stack
        .len()
        .checked_sub(after + 1)
        .ok_or_else(|| RuntimeError::Other("missing generator argument".to_string()))?;
    let generator = stack.remove(index);
    let _scope = enter_generator(&generator)?;
    kernel(stack)
}

fn rand_generator(stack: &mut Stack) -> Result<()> {
    with_generator_argument(stack, 4, rand)
}

fn randn_generator(stack: &mut Stack) -> Result<()> {
    with_generator_argument(stack, 4, randn)
}

fn randint_generator(stack: &mut Stack) -> Result<()> {
    with_generator_argument(stack, 4, randint)
}

fn randint_low_generator(stack: &mut Stack) -> Result<()> {
    with_generator_argument(stack, 4, randint_low)
}

fn randperm_generator(stack: &mut Stack) -> Result<()> {
    with_generator_argument(stack, 4, randperm)
}

fn rand_like_generator(stack: &mut Stack) -> Result<()> {
    with_generator_argument(stack, 5, rand_like)
}

fn randn_like_generator(stack: &mut Stack) -> Result<()> {
    with_generator_argument(stack, 5, randn_like)
}

fn generator_value(value: &IValue) -> Result<&random::SharedGenerator> {
    match value {
        IValue::Generator(generator) => Ok(generator),
        other => Err(RuntimeError::Other(format!(
            "expected a Generator, got {}",
            other.tag_name()
        ))),
    }
}

/// `torch.Generator(device=None, seed=None)`: a new CPU generator, seeded with `seed` or, as
/// PyTorch's constructor, with the default seed.
fn new_generator(stack: &mut Stack) -> Result<()> {
    let [device, seed] = pop_array::<2>(stack)?;
    if let IValue::Device(device) = &device {
        if device.device_type != "cpu" {
            return Err(RuntimeError::Other(format!(
                "only CPU generators are supported, not {}",
                device.device_type
            )));
        }
    }
    let seed = match seed {
        IValue::None => random::DEFAULT_SEED,
        seed => seed.to_int()? as u64,
    };
    push(stack, IValue::Generator(random::new_generator(seed)))
}

/// `Generator.manual_seed(seed)`: reseeds this generator and returns it.
fn generator_manual_seed(stack: &mut Stack) -> Result<()> {
    let [generator, seed] = pop_array::<2>(stack)?;
    let seed = seed.to_int()? as u64;
    *generator_value(&generator)?
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = random::Generator::new(seed);
    push(stack, generator)
}

/// `Generator.initial_seed()`.
fn generator_initial_seed(stack: &mut Stack) -> Result<()> {
    let [generator] = pop_array::<1>(stack)?;
    let seed = generator_value(&generator)?
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .initial_seed();
    push(stack, seed as i64)
}

/// `Generator.seed()`: reseeds this generator with a non-deterministic seed and returns it
/// (as int64, the bits of PyTorch's uint64 seed).
fn generator_seed(stack: &mut Stack) -> Result<()> {
    let [generator] = pop_array::<1>(stack)?;
    let seed = random::reseed(generator_value(&generator)?);
    push(stack, seed as i64)
}

fn exponential_(stack: &mut Stack) -> Result<()> {
    let [s, lambd, generator] = pop_array::<3>(stack)?;
    let _scope = enter_generator(&generator)?;
    s.to_tensor()?.exponential_(lambd.to_double()?)?;
    push(stack, s)
}

fn exponential(stack: &mut Stack) -> Result<()> {
    let [s, lambd, generator] = pop_array::<3>(stack)?;
    let _scope = enter_generator(&generator)?;
    push(stack, s.to_tensor()?.exponential(lambd.to_double()?)?)
}

/// `exponential.out`: drawn as the functional form, then written into `out`.
fn exponential_out(stack: &mut Stack) -> Result<()> {
    let [s, lambd, generator, out] = pop_array::<4>(stack)?;
    let _scope = enter_generator(&generator)?;
    let r = s.to_tensor()?.exponential(lambd.to_double()?)?;
    push(stack, r.write_into_out(&*out.to_tensor()?)?)
}

fn multinomial(stack: &mut Stack) -> Result<()> {
    let [s, n_sample, replacement, generator] = pop_array::<4>(stack)?;
    let _scope = enter_generator(&generator)?;
    let r = s
        .to_tensor()?
        .multinomial(n_sample.to_int()?, replacement.to_bool()?)?;
    push(stack, r)
}

fn multinomial_out(stack: &mut Stack) -> Result<()> {
    let [s, n_sample, replacement, generator, out] = pop_array::<5>(stack)?;
    let _scope = enter_generator(&generator)?;
    let r = s.to_tensor()?.multinomial_out(
        n_sample.to_int()?,
        replacement.to_bool()?,
        &*out.to_tensor()?,
    )?;
    push(stack, r)
}

fn normal_(stack: &mut Stack) -> Result<()> {
    let [s, mean, std, generator] = pop_array::<4>(stack)?;
    let _scope = enter_generator(&generator)?;
    s.to_tensor()?
        .normal_(mean.to_double()?, std.to_double()?)?;
    push(stack, s)
}

fn uniform_(stack: &mut Stack) -> Result<()> {
    let [s, from, to, generator] = pop_array::<4>(stack)?;
    let _scope = enter_generator(&generator)?;
    s.to_tensor()?
        .uniform_(from.to_double()?, to.to_double()?)?;
    push(stack, s)
}

fn normal_float_float(stack: &mut Stack) -> Result<()> {
    let dtype = pop_options(stack, false)?;
    let [mean, std, size, generator] = pop_array::<4>(stack)?;
    let _scope = enter_generator(&generator)?;
    let t = Tensor::zeros(&sizes(&size)?, dtype.unwrap_or(DType::default_float()))?;
    t.normal_(mean.to_double()?, std.to_double()?)?;
    push(stack, t)
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
fn normal_tensor_float(stack: &mut Stack) -> Result<()> {
    let [mean, std, generator] = pop_array::<3>(stack)?;
    let _scope = enter_generator(&generator)?;
    let mean = mean.to_tensor()?;
    let std = std.to_double()?;
    let out = Tensor::zeros(mean.sizes(), mean.dtype())?;
    out.normal_(0.0, std)?;
    out.add_(&mean, &Scalar::Int(1))?;
    push(stack, out)
}

/// `torch.normal(mean, std_tensor)`: standard draws, times `std`, plus `mean` as a 0-dim
/// tensor of the result's dtype (ATen's order).
fn normal_float_tensor(stack: &mut Stack) -> Result<()> {
    let [mean, std, generator] = pop_array::<3>(stack)?;
    let _scope = enter_generator(&generator)?;
    let mean = mean.to_double()?;
    let std = std.to_tensor()?;
    check_normal_std_tensor(&std)?;
    let out = Tensor::zeros(std.sizes(), std.dtype())?;
    out.normal_(0.0, 1.0)?;
    out.binary_(&std, ferrojit_tensor::ops::binary::BinaryOp::Mul)?;
    out.add_(
        &Tensor::scalar_tensor(Scalar::Float(mean), out.dtype()),
        &Scalar::Int(1),
    )?;
    push(stack, out)
}

/// `torch.normal(mean_tensor, std_tensor)`: standard draws in the broadcast shape (dtype of
/// `mean`), times `std`, plus `mean`.
fn normal_tensor_tensor(stack: &mut Stack) -> Result<()> {
    let [mean, std, generator] = pop_array::<3>(stack)?;
    let _scope = enter_generator(&generator)?;
    let (mean, std) = (mean.to_tensor()?, std.to_tensor()?);
    check_normal_std_tensor(&std)?;
    let shape = ferrojit_tensor::shape::broadcast_shapes(mean.sizes(), std.sizes())?;
    let out = Tensor::zeros(&shape, mean.dtype())?;
    out.normal_(0.0, 1.0)?;
    out.binary_(&std, ferrojit_tensor::ops::binary::BinaryOp::Mul)?;
    out.add_(&mean, &Scalar::Int(1))?;
    push(stack, out)
}

fn bernoulli(stack: &mut Stack) -> Result<()> {
    let [s, generator] = pop_array::<2>(stack)?;
    let _scope = enter_generator(&generator)?;
    push(stack, s.to_tensor()?.bernoulli()?)
}

fn bernoulli_p(stack: &mut Stack) -> Result<()> {
    let [s, p, generator] = pop_array::<3>(stack)?;
    let _scope = enter_generator(&generator)?;
    let t = s.to_tensor()?;
    let out = Tensor::zeros(t.sizes(), t.dtype())?;
    out.bernoulli_scalar_(p.to_double()?)?;
    push(stack, out)
}

fn bernoulli_float_(stack: &mut Stack) -> Result<()> {
    let [s, p, generator] = pop_array::<3>(stack)?;
    let _scope = enter_generator(&generator)?;
    s.to_tensor()?.bernoulli_scalar_(p.to_double()?)?;
    push(stack, s)
}

fn manual_seed(stack: &mut Stack) -> Result<()> {
    let [seed] = pop_array::<1>(stack)?;
    creation::manual_seed(seed.to_int()? as u64);
    Ok(())
}

fn tril(stack: &mut Stack) -> Result<()> {
    let [s, d] = pop_array::<2>(stack)?;
    push(stack, s.to_tensor()?.tril(d.to_int()?)?)
}

fn triu(stack: &mut Stack) -> Result<()> {
    let [s, d] = pop_array::<2>(stack)?;
    push(stack, s.to_tensor()?.triu(d.to_int()?)?)
}

fn tril_(stack: &mut Stack) -> Result<()> {
    let [s, d] = pop_array::<2>(stack)?;
    let t = s.to_tensor()?;
    t.copy_(&t.tril(d.to_int()?)?)?;
    push(stack, s)
}

fn triu_(stack: &mut Stack) -> Result<()> {
    let [s, d] = pop_array::<2>(stack)?;
    let t = s.to_tensor()?;
    t.copy_(&t.triu(d.to_int()?)?)?;
    push(stack, s)
}

fn hstack(stack: &mut Stack) -> Result<()> {
    let [ts] = pop_array::<1>(stack)?;
    push(stack, creation::hstack(&ts.to_tensor_vec()?)?)
}

fn vstack(stack: &mut Stack) -> Result<()> {
    let [ts] = pop_array::<1>(stack)?;
    push(stack, creation::vstack(&ts.to_tensor_vec()?)?)
}

fn repeat(stack: &mut Stack) -> Result<()> {
    let [s, reps] = pop_array::<2>(stack)?;
    push(stack, s.to_tensor()?.repeat(&reps.to_int_vec()?)?)
}

fn tile(stack: &mut Stack) -> Result<()> {
    let [s, dims] = pop_array::<2>(stack)?;
    push(stack, s.to_tensor()?.tile(&dims.to_int_vec()?)?)
}

fn repeat_interleave_tensor(stack: &mut Stack) -> Result<()> {
    let [reps, _output_size] = pop_array::<2>(stack)?;
    push(stack, reps.to_tensor()?.repeat_interleave_self_tensor()?)
}

fn repeat_interleave_self_tensor(stack: &mut Stack) -> Result<()> {
    let [s, reps, dim, _output_size] = pop_array::<4>(stack)?;
    let r = s
        .to_tensor()?
        .repeat_interleave(&*reps.to_tensor()?, dim.to_optional_int()?)?;
    push(stack, r)
}

fn repeat_interleave_self_int(stack: &mut Stack) -> Result<()> {
    let [s, reps, dim, _output_size] = pop_array::<4>(stack)?;
    let reps = Tensor::scalar_tensor(Scalar::Int(reps.to_int()?), DType::Int64);
    let r = s
        .to_tensor()?
        .repeat_interleave(&reps, dim.to_optional_int()?)?;
    push(stack, r)
}

fn flip(stack: &mut Stack) -> Result<()> {
    let [s, dims] = pop_array::<2>(stack)?;
    push(stack, s.to_tensor()?.flip(&dims.to_int_vec()?)?)
}

fn roll(stack: &mut Stack) -> Result<()> {
    let [s, shifts, dims] = pop_array::<3>(stack)?;
    push(
        stack,
        s.to_tensor()?
            .roll(&shifts.to_int_vec()?, &dims.to_int_vec()?)?,
    )
}

fn meshgrid(stack: &mut Stack) -> Result<()> {
    let [ts] = pop_array::<1>(stack)?;
    push(
        stack,
        tensor_list(creation::meshgrid(&ts.to_tensor_vec()?, "ij")?),
    )
}

fn meshgrid_indexing(stack: &mut Stack) -> Result<()> {
    let [ts, indexing] = pop_array::<2>(stack)?;
    push(
        stack,
        tensor_list(creation::meshgrid(
            &ts.to_tensor_vec()?,
            indexing.to_str()?,
        )?),
    )
}

fn broadcast_tensors(stack: &mut Stack) -> Result<()> {
    let [ts] = pop_array::<1>(stack)?;
    push(
        stack,
        tensor_list(creation::broadcast_tensors(&ts.to_tensor_vec()?)?),
    )
}

#[rustfmt::skip]
pub const TABLE: &[KernelTableEntry] = &[
    ("aten::full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", full_like),
    ("aten::empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", empty_like),
    ("aten::empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", empty),
    ("aten::new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", new_zeros),
    ("aten::new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", new_ones),
    ("aten::new_empty(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", new_empty),
    ("aten::new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", new_full),
    ("aten::rand_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", rand_like),
    ("aten::randn_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", randn_like),
    ("aten::linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", linspace),
    ("aten::logspace(Scalar start, Scalar end, int steps, float base=10., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", logspace),
    ("aten::linspace.out(Scalar start, Scalar end, int steps, *, Tensor(a!) out) -> Tensor(a!)", linspace_out),
    ("aten::logspace.out(Scalar start, Scalar end, int steps, float base=10., *, Tensor(a!) out) -> Tensor(a!)", logspace_out),
    ("aten::full.out(SymInt[] size, Scalar fill_value, *, Tensor(a!) out) -> Tensor(a!)", full_out),
    ("aten::eye(SymInt n, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", eye),
    ("aten::eye.m(SymInt n, SymInt m, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", eye_m),
    ("aten::rand(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", rand),
    ("aten::randn(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randn),
    ("aten::randint(SymInt high, SymInt[] size, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randint),
    ("aten::randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randint_low),
    ("aten::randperm(SymInt n, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randperm),
    ("aten::normal_(Tensor(a!) self, float mean=0., float std=1., *, Generator? generator=None) -> Tensor(a!)", normal_),
    ("aten::normal.Tensor_float(Tensor mean, float std=1., *, Generator? generator=None) -> Tensor", normal_tensor_float),
    ("aten::normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor", normal_float_tensor),
    ("aten::normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor", normal_tensor_tensor),
    ("aten::uniform_(Tensor(a!) self, float from=0., float to=1., *, Generator? generator=None) -> Tensor(a!)", uniform_),
    ("aten::normal.float_float(float mean, float std, SymInt[] size, *, Generator? generator=None, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", normal_float_float),
    ("aten::bernoulli(Tensor self, *, Generator? generator=None) -> Tensor", bernoulli),
    ("aten::bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor", bernoulli_p),
    ("aten::bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)", bernoulli_float_),
    ("aten::manual_seed(int seed) -> ()", manual_seed),
    ("aten::manual_seed.generator(Generator(a!) self, int seed) -> Generator(a!)", generator_manual_seed),
    ("aten::initial_seed(Generator self) -> int", generator_initial_seed),
    ("aten::seed(Generator(a!) self) -> int", generator_seed),
    ("aten::exponential_(Tensor(a!) self, float lambd=1., *, Generator? generator=None) -> Tensor(a!)", exponential_),
    ("aten::exponential(Tensor self, float lambd=1., *, Generator? generator=None) -> Tensor", exponential),
    ("aten::exponential.out(Tensor self, float lambd=1., *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)", exponential_out),
    ("aten::multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, Generator? generator=None) -> Tensor", multinomial),
    ("aten::multinomial.out(Tensor self, SymInt num_samples, bool replacement=False, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)", multinomial_out),
    ("aten::Generator(*, Device? device=None, int? seed=None) -> Generator", new_generator),
    ("aten::rand.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", rand_generator),
    ("aten::randn.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randn_generator),
    ("aten::randint.generator(SymInt high, SymInt[] size, *, Generator? generator, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randint_generator),
    ("aten::randint.low_generator(SymInt low, SymInt high, SymInt[] size, *, Generator? generator, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randint_low_generator),
    ("aten::randperm.generator(SymInt n, *, Generator? generator, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", randperm_generator),
    ("aten::rand_like.generator(Tensor self, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", rand_like_generator),
    ("aten::randn_like.generator(Tensor self, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", randn_like_generator),
    ("aten::tril(Tensor self, SymInt diagonal=0) -> Tensor", tril),
    ("aten::triu(Tensor self, SymInt diagonal=0) -> Tensor", triu),
    ("aten::tril_(Tensor(a!) self, SymInt diagonal=0) -> Tensor(a!)", tril_),
    ("aten::triu_(Tensor(a!) self, SymInt diagonal=0) -> Tensor(a!)", triu_),
    ("aten::hstack(Tensor[] tensors) -> Tensor", hstack),
    ("aten::vstack(Tensor[] tensors) -> Tensor", vstack),
    ("aten::repeat(Tensor self, SymInt[] repeats) -> Tensor", repeat),
    ("aten::tile(Tensor self, SymInt[] dims) -> Tensor", tile),
    ("aten::repeat_interleave.Tensor(Tensor repeats, *, SymInt? output_size=None) -> Tensor", repeat_interleave_tensor),
    ("aten::repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor", repeat_interleave_self_tensor),
    ("aten::repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor", repeat_interleave_self_int),
    ("aten::flip(Tensor self, int[] dims) -> Tensor", flip),
    ("aten::roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor", roll),
    ("aten::meshgrid(Tensor[] tensors) -> Tensor[]", meshgrid),
    ("aten::meshgrid.indexing(Tensor[] tensors, *, str indexing) -> Tensor[]", meshgrid_indexing),
    ("aten::broadcast_tensors(Tensor[] tensors) -> Tensor[]", broadcast_tensors),
];
