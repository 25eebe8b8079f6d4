//! The in-place random distributions beyond uniform, normal, exponential and bernoulli(p):
//! `random_` (full, `[from, to)` and `[from, dtype max]` ranges), `cauchy_`, `log_normal_`,
//! `geometric_`, `bernoulli_` with a tensor of probabilities, and `poisson`, each drawing from
//! ATen's mt19937 generator (ops/random.rs) value for value as PyTorch's CPU kernels do
//! (aten/src/ATen/core/DistributionsHelper.h and TransformationHelper.h,
//! native/cpu/DistributionTemplates.h, native/Distributions.cpp).

use crate::display::format_g;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Result, TensorError};
use crate::macros::dispatch_dtype;
use crate::ops::random::{
    check_random_bounds, empty_like, float_digits, random_from_to, require_float_dtype,
    update_float_bounds, with_default_generator, Generator,
};
use crate::special_functions::gamma::lgamma;
use crate::tensor::Tensor;

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

/// `uniform_int_distribution<T>` (`random_()` without bounds): a draw reduced to the values
/// the dtype holds exactly, `[0, 2^digits]` for a floating dtype and `[0, max]` for an
/// integer one (`val & 1` for bool). Double and int64 draw 64 bits, the others 32.
fn full_draw(g: &mut Generator, dtype: DType) -> i64 {
    let wide = matches!(dtype, DType::Float64 | DType::Int64);
    let value = if wide {
        g.random64()
    } else {
        u64::from(g.random())
    };
    let modulus: u64 = match dtype {
        DType::Bool => return (value & 1) as i64,
        DType::UInt8 => 1 << 8,
        DType::Int8 => 1 << 7,
        DType::Int16 => 1 << 15,
        DType::Int32 => 1 << 31,
        DType::Int64 => 1 << 63,
        other => (1u64 << float_digits(other).unwrap_or(24)) + 1,
    };
    (value % modulus) as i64
}

/// The name PyTorch's dtype check of a continuous distribution prints for a dtype (the C++
/// type's name as `caffe2::TypeMeta` spells it).
fn cxx_type_meta_name(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "bool",
        DType::UInt8 => "unsigned char",
        DType::Int8 => "signed char",
        DType::Int16 => "short int",
        DType::Int32 => "int",
        DType::Int64 => "long int",
        DType::ComplexFloat => "c10::complex<float>",
        DType::ComplexDouble => "c10::complex<double>",
        _ => dtype.scalar_type_name(),
    }
}

/// Integer draws into a tensor's own elements (C++ casts), in its visiting order.
fn write_integers(target: &Tensor, values: Vec<i64>) -> Result<Tensor> {
    dispatch_dtype!(target.dtype(), T => target.write_values_in_order(
        values.into_iter().map(<T as Element>::from_i64).collect::<Vec<T>>()
    ))
}

/// Double draws into a tensor's own elements (rounded to its dtype), in its visiting order.
fn write_doubles(target: &Tensor, values: Vec<f64>) -> Result<Tensor> {
    dispatch_dtype!(target.dtype(), T => target.write_values_in_order(
        values.into_iter().map(<T as Element>::from_f64).collect::<Vec<T>>()
    ))
}

/// A tensor laid out as `empty_like(t)` with `dtype`, for the functional random forms (a
/// transposed `t` is filled in memory order, as PyTorch fills its clone).
pub fn empty_like_for_draws(t: &Tensor, dtype: DType) -> Result<Tensor> {
    empty_like(t, dtype)
}

impl Tensor {
    /// `Tensor.random_()`: every element a uniform draw over the values the dtype holds
    /// exactly.
    pub fn random_full_(&self) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return Err(TensorError::NotImplementedForDType {
                op: "random_kernel_cpu",
                dtype: self.dtype(),
            });
        }
        let n = self.numel();
        let dtype = self.dtype();
        let values: Vec<i64> =
            with_default_generator(|g| (0..n).map(|_| full_draw(g, dtype)).collect());
        write_integers(self, values)
    }

    /// `Tensor.random_(from, to)`: uniform integers in `[from, to)`, or, with `to` None, in
    /// `[from, largest value the dtype holds exactly]` (`random_from_to_impl`).
    pub fn random_from_to_(&self, from: i64, to: Option<i64>) -> Result<Tensor> {
        let dtype = self.dtype();
        let (from, range) = match to {
            Some(to) => {
                if from >= to {
                    return Err(invalid(format!(
                        "random_ expects 'from' to be less than 'to', but got from={from} >= to={to}"
                    )));
                }
                let (from, to) = match float_digits(dtype) {
                    Some(digits) => {
                        let (from, to) = update_float_bounds(from, to, digits, dtype);
                        if from >= to {
                            return Err(invalid(format!(
                                "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got from={from} >= to={to}"
                            )));
                        }
                        (from, to)
                    }
                    None => (from, to),
                };
                check_random_bounds(from, to - 1, dtype)?;
                (from, (to as u64).wrapping_sub(from as u64))
            }
            None if from == i64::MIN => {
                return Err(invalid(
                    "random_from_to_impl handles only int64, double, float and bfloat16",
                ))
            }
            None => {
                let (from, to_inclusive) = match float_digits(dtype) {
                    Some(digits) => {
                        let to_inclusive = 1i64 << digits.min(62);
                        let from = update_float_bounds(from, i64::MAX, digits, dtype).0;
                        if from >= to_inclusive {
                            return Err(invalid(format!(
                                "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted to dtype, but got from={from} > to_inc={to_inclusive}"
                            )));
                        }
                        (from, to_inclusive)
                    }
                    None => {
                        let max = match dtype {
                            DType::Bool => 1,
                            DType::UInt8 => i64::from(u8::MAX),
                            DType::Int8 => i64::from(i8::MAX),
                            DType::Int16 => i64::from(i16::MAX),
                            DType::Int32 => i64::from(i32::MAX),
                            DType::Int64 => i64::MAX,
                            _ => {
                                return Err(invalid(
                                    "random_from_to_impl handles only integral, floating-point and boolean types",
                                ))
                            }
                        };
                        (from, max)
                    }
                };
                check_random_bounds(from, to_inclusive, dtype)?;
                let range = (to_inclusive as u64)
                    .wrapping_sub(from as u64)
                    .wrapping_add(1);
                (from, range)
            }
        };
        let n = self.numel();
        if n == 0 {
            return Ok(self.clone());
        }
        let values: Vec<i64> =
            with_default_generator(|g| (0..n).map(|_| random_from_to(g, range, from)).collect());
        write_integers(self, values)
    }

    /// `Tensor.cauchy_(median, sigma)`: `median + sigma * tan(pi * (u - 1/2))` of a 53-bit
    /// uniform `u`, in double, rounded to the dtype.
    pub fn cauchy_(&self, median: f64, sigma: f64) -> Result<Tensor> {
        if sigma.is_nan() || sigma <= 0.0 {
            return Err(invalid(format!(
                "cauchy_ expects sigma > 0.0, but found sigma={}",
                format_g(sigma, 6)
            )));
        }
        if !self.dtype().is_floating_point() {
            return Err(invalid(format!(
                "Cauchy distribution is a continuous probability distribution. dtype must be a floating point but you specified {}",
                cxx_type_meta_name(self.dtype())
            )));
        }
        let n = self.numel();
        let values: Vec<f64> = with_default_generator(|g| {
            (0..n)
                .map(|_| {
                    let u = g.uniform_f64();
                    median + sigma * (std::f64::consts::PI * (u - 0.5)).tan()
                })
                .collect()
        });
        write_doubles(self, values)
    }

    /// `Tensor.log_normal_(mean, std)`: `exp` of a double normal sample with that mean and
    /// standard deviation (`lognormal_distribution<double>`), rounded to the dtype.
    pub fn log_normal_(&self, mean: f64, std: f64) -> Result<Tensor> {
        if std.is_nan() || std <= 0.0 {
            return Err(invalid(format!(
                "log_normal_ expects std > 0.0, but found std={}",
                format_g(std, 6)
            )));
        }
        require_float_dtype(self.dtype(), "log_normal_cpu")?;
        let n = self.numel();
        let values: Vec<f64> = with_default_generator(|g| {
            (0..n)
                .map(|_| g.normal_f64().mul_add(std, mean).exp())
                .collect()
        });
        write_doubles(self, values)
    }

    /// `Tensor.geometric_(p)`: the number of trials to the first success,
    /// `ceil(log(u) / log1p(-p))` of a 53-bit uniform `u`.
    pub fn geometric_(&self, p: f64) -> Result<Tensor> {
        if !(p > 0.0 && p < 1.0) {
            return Err(invalid(format!(
                "geometric_ expects p to be in (0, 1), but got p={}",
                format_g(p, 6)
            )));
        }
        if self.dtype().is_complex() || self.dtype() == DType::Bool {
            return Err(TensorError::NotImplementedForDType {
                op: "geometric_cpu",
                dtype: self.dtype(),
            });
        }
        let n = self.numel();
        let values: Vec<f64> = with_default_generator(|g| {
            (0..n)
                .map(|_| (g.uniform_f64().ln() / (-p).ln_1p()).ceil())
                .collect()
        });
        write_doubles(self, values)
    }

    /// `Tensor.bernoulli_(p)` with a tensor `p` broadcast to `self`'s shape: one draw per
    /// element of `self`, a 53-bit uniform against a double `p` and a 24-bit one against
    /// the others.
    pub fn bernoulli_tensor_(&self, p: &Tensor) -> Result<Tensor> {
        require_float_dtype(p.dtype(), "bernoulli_tensor_cpu_p_")?;
        if p.to_f64_vec()
            .iter()
            .any(|&value| !(0.0..=1.0).contains(&value))
        {
            return Err(invalid(
                "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error \
                 message be improved?  If so, please report an enhancement request to PyTorch.)",
            ));
        }
        let p_expanded = p.expand(
            &self
                .sizes()
                .iter()
                .map(|&size| size as i64)
                .collect::<Vec<i64>>(),
        )?;
        let probabilities = p_expanded.to_f64_vec();
        let double = p.dtype() == DType::Float64;
        let values: Vec<i64> = with_default_generator(|g| {
            probabilities
                .iter()
                .map(|&pi| {
                    let hit = if double {
                        g.uniform_f64() < pi
                    } else {
                        g.uniform_f32() < pi as f32
                    };
                    i64::from(hit)
                })
                .collect()
        });
        write_integers(self, values)
    }

    /// `torch.poisson(rates)`: one Poisson sample per rate, as ATen's `sample_poisson`
    /// (Hoermann's transformed rejection from rate 10, products of uniforms below it).
    pub fn poisson(&self) -> Result<Tensor> {
        require_float_dtype(self.dtype(), "poisson_cpu")?;
        let rates = self.contiguous().to_f64_vec();
        let mut values = Vec::with_capacity(rates.len());
        with_default_generator(|g| {
            for &rate in &rates {
                values.push(sample_poisson(g, rate)? as f64);
            }
            Ok::<(), TensorError>(())
        })?;
        let result = Tensor::zeros(self.sizes(), self.dtype())?;
        write_doubles(&result, values)
    }
}

/// `torch.binomial(count, prob)`: one binomial sample per count (with its probability), as
/// ATen's `sample_binomial` draws it: inversion of geometric waiting times while
/// `count * min(p, 1 - p)` is below 10, Hormann's BTRS rejection from there (on `1 - p` for
/// `p > 1/2`, subtracted from `count`), each from 53-bit uniforms, in `T` (the dtype of
/// `count` and `prob`) where ATen computes in `scalar_t` and in double where it uses its
/// accumulate type.
pub fn binomial(count: &Tensor, prob: &Tensor) -> Result<Tensor> {
    if count.dtype() != prob.dtype() {
        return Err(invalid(format!(
            "expected scalar type {} but found {}",
            count.dtype().scalar_type_name(),
            prob.dtype().scalar_type_name()
        )));
    }
    require_float_dtype(count.dtype(), "binomial_cpu")?;
    // The result has `count`'s shape; `prob` broadcasts to it.
    let shape = count.sizes().to_vec();
    let shape_i64: Vec<i64> = shape.iter().map(|&size| size as i64).collect();
    let counts = count.expand(&shape_i64)?.to_f64_vec();
    let probs = prob.expand(&shape_i64)?.to_f64_vec();
    let single = count.dtype() != DType::Float64;
    // `scalar_t` arithmetic: float for a float tensor, double for a double one.
    let narrow = |value: f64| {
        if single {
            f64::from(value as f32)
        } else {
            value
        }
    };
    let values: Vec<f64> = with_default_generator(|g| {
        counts
            .iter()
            .zip(&probs)
            .map(|(&n, &p)| sample_binomial(g, n, p, narrow))
            .collect()
    });
    let result = Tensor::zeros(&shape, count.dtype())?;
    write_doubles(&result, values)
}

fn sample_binomial(g: &mut Generator, count: f64, prob: f64, narrow: impl Fn(f64) -> f64) -> f64 {
    if count <= 0.0 || prob <= 0.0 {
        0.0
    } else if prob >= 1.0 {
        count
    } else if prob <= 0.5 {
        if narrow(count * prob) >= 10.0 {
            binomial_btrs(g, count, prob, &narrow)
        } else {
            binomial_inversion(g, count, prob, &narrow)
        }
    } else if prob > 0.5 {
        let q = narrow(1.0 - prob);
        if narrow(count * q) >= 10.0 {
            narrow(count - binomial_btrs(g, count, q, &narrow))
        } else {
            narrow(count - binomial_inversion(g, count, q, &narrow))
        }
    } else {
        f64::NAN
    }
}

fn binomial_inversion(
    g: &mut Generator,
    count: f64,
    prob: f64,
    narrow: &impl Fn(f64) -> f64,
) -> f64 {
    let mut geometric_sum = 0.0;
    let mut successes = 0.0;
    let log_q = (-prob).ln_1p();
    loop {
        let u = g.uniform_f64();
        geometric_sum += (u.ln() / log_q).ceil();
        if geometric_sum > count {
            return successes;
        }
        successes = narrow(successes + 1.0);
    }
}

/// The tail of Stirling's approximation of `log(k!)`, tabulated for small `k`.
fn stirling_tail(k: f64) -> f64 {
    const TABLE: [f64; 10] = [
        0.081_061_466_795_327_26,
        0.041_340_695_955_409_29,
        0.027_677_925_684_998_34,
        0.020_790_672_103_765_09,
        0.016_644_691_189_821_19,
        0.013_876_128_823_070_75,
        0.011_896_709_945_891_77,
        0.010_411_265_261_972_09,
        0.009_255_462_182_712_733,
        0.008_330_563_433_362_87,
    ];
    if k <= 9.0 {
        return TABLE[k as usize];
    }
    let square = (k + 1.0) * (k + 1.0);
    (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / 1260.0 / square) / square) / (k + 1.0)
}

fn binomial_btrs(g: &mut Generator, count: f64, prob: f64, narrow: &impl Fn(f64) -> f64) -> f64 {
    let stddev = (count * prob * (1.0 - prob)).sqrt();
    let b = 1.15 + 2.53 * stddev;
    let a = -0.0873 + 0.0248 * b + 0.01 * prob;
    let c = count * prob + 0.5;
    let v_r = 0.92 - 4.2 / b;
    let r = prob / (1.0 - prob);
    let alpha = (2.83 + 5.1 / b) * stddev;
    let m = ((count + 1.0) * prob).floor();
    loop {
        let u = g.uniform_f64() - 0.5;
        let v = g.uniform_f64();
        let us = 0.5 - u.abs();
        let k = narrow(((2.0 * a / us + b) * u + c).floor());
        if k < 0.0 || k > count {
            continue;
        }
        if us >= 0.07 && v <= v_r {
            return k;
        }
        let v = (v * alpha / (a / (us * us) + b)).ln();
        let upper_bound = (m + 0.5) * ((m + 1.0) / (r * (count - m + 1.0))).ln()
            + (count + 1.0) * ((count - m + 1.0) / (count - k + 1.0)).ln()
            + (k + 0.5) * (r * (count - k + 1.0) / (k + 1.0)).ln()
            + stirling_tail(m)
            + stirling_tail(count - m)
            - stirling_tail(k)
            - stirling_tail(count - k);
        if v <= upper_bound {
            return k;
        }
    }
}

/// ATen's `sample_poisson` for one rate.
fn sample_poisson(g: &mut Generator, rate: f64) -> Result<i64> {
    if rate.is_nan() || rate < 0.0 {
        return Err(invalid(
            "invalid Poisson rate, expected rate to be non-negative",
        ));
    }
    if rate >= 10.0 {
        let sqrt_rate = rate.sqrt();
        let log_rate = rate.ln();
        let b = 0.931 + 2.53 * sqrt_rate;
        let a = -0.059 + 0.02483 * b;
        let inverse_alpha = 1.1239 + 1.1328 / (b - 3.4);
        let v_r = 0.9277 - 3.6224 / (b - 2.0);
        loop {
            let u = g.uniform_f64() - 0.5;
            let v = g.uniform_f64();
            let u_s = 0.5 - u.abs();
            let k = ((2.0 * a / u_s + b) * u + rate + 0.43).floor() as i64;
            if u_s >= 0.07 && v <= v_r {
                return Ok(k);
            }
            if k < 0 || (u_s < 0.013 && v > u_s) {
                continue;
            }
            if v.ln() + inverse_alpha.ln() - (a / (u_s * u_s) + b).ln()
                <= -rate + k as f64 * log_rate - lgamma(k as f64 + 1.0)
            {
                return Ok(k);
            }
        }
    } else if rate == 0.0 {
        Ok(0)
    } else {
        let threshold = (-rate).exp();
        let mut count = 0;
        let mut product = 1.0;
        loop {
            product *= g.uniform_f64();
            if product > threshold {
                count += 1;
            } else {
                return Ok(count);
            }
        }
    }
}
