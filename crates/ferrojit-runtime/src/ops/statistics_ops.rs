//! Statistics, histograms, set operations, assorted pointwise functions and indexed
//! reductions (issue 20's missing operators, part A): every overload of aminmax, cummax,
//! cummin, logcumsumexp, msort, argwhere, std_mean, var_mean, nanmedian, mode, quantile,
//! nanquantile, histc, histogram, bincount, isin, the unique family's remaining overloads,
//! cov, corrcoef, float_power, lcm, logaddexp2, nextafter, signbit, sgn, positive, isreal,
//! resolve_neg, renorm, dist, index_reduce, index_copy, put and
//! segment_reduce. The kernels live in ferrojit_tensor's statistics, histogram,
//! set_membership, misc_pointwise and index_reduce modules.

use std::sync::Arc;

use ferrojit_tensor::ops::index_reduce::{IndexReduction, SegmentReduction};
use ferrojit_tensor::ops::statistics::QuantileInterpolation;
use ferrojit_tensor::{DType, Scalar, Tensor, TensorError};

use super::binding::{
    functional_and_out, in_place_from_functional, typed, DimList, IntoResults, TypedKernel,
};
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// The form with several `out` tensors (`aminmax.out`, `cummax.out`, `_unique2.out`...)
/// made from the functional kernel: its results are written, in order, into the last
/// `outputs` arguments, which are resized to them, and returned.
fn outs_from_functional<Parameters, Kernel>(
    schema: &str,
    outputs: usize,
    kernel: Kernel,
) -> OperatorDeclaration
where
    Kernel: TypedKernel<Parameters>,
    Kernel::Output: IntoResults,
{
    let arity = kernel.arity() + outputs;
    OperatorDeclaration::arguments(schema.to_string(), move |arguments: &[IValue]| {
        let split = arguments.len().checked_sub(outputs).ok_or_else(|| {
            RuntimeError::InvalidGraph("an out= operator got too few arguments".to_string())
        })?;
        let (functional, outs) = arguments.split_at(split);
        let results = kernel.call_with(functional)?.into_results();
        results
            .iter()
            .zip(outs)
            .map(|(result, out)| {
                Ok(IValue::from(
                    result.to_tensor()?.write_into_out(&*out.to_tensor()?)?,
                ))
            })
            .collect()
    })
    .with_arity(arity)
}

/// `unbiased` of the older overloads as a correction.
fn correction_of(unbiased: bool) -> f64 {
    if unbiased {
        1.0
    } else {
        0.0
    }
}

/// A Python float `q` as the 0-dim tensor of the input's dtype that PyTorch makes of it,
/// after its range check (which names the value, unlike the tensor overload's).
fn scalar_q(input: &Tensor, q: f64, op: &str) -> Result<Tensor> {
    if !(0.0..=1.0).contains(&q) {
        return Err(TensorError::InvalidArgument(format!(
            "{op}() q must be in the range [0, 1] but got {q}"
        ))
        .into());
    }
    let dtype = if input.dtype().is_floating_point() {
        input.dtype()
    } else {
        DType::Float32
    };
    Ok(Tensor::scalar_tensor(Scalar::Float(q), dtype))
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    let mut r = Vec::new();
    order_statistics(&mut r);
    moments(&mut r);
    quantiles(&mut r);
    histograms(&mut r);
    sets(&mut r);
    pointwise(&mut r);
    indexed(&mut r);
    r
}

fn order_statistics(r: &mut Vec<OperatorDeclaration>) {
    let aminmax = |input: Input, dim: Option<i64>, keepdim: bool| Ok(input.aminmax(dim, keepdim)?);
    r.push(typed(
        "aten::aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)",
        aminmax,
    ));
    r.push(outs_from_functional(
        "aten::aminmax.out(Tensor self, *, int? dim=None, bool keepdim=False, Tensor(a!) min, Tensor(b!) max) -> (Tensor(a!) min, Tensor(b!) max)",
        2,
        aminmax,
    ));
    for (name, is_max) in [("cummax", true), ("cummin", false)] {
        let running = move |input: Input, dim: i64| Ok(input.cumulative_extreme(dim, is_max)?);
        r.push(typed(
            &format!("aten::{name}(Tensor self, int dim) -> (Tensor values, Tensor indices)"),
            running,
        ));
        r.push(outs_from_functional(
            &format!("aten::{name}.out(Tensor self, int dim, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)"),
            2,
            running,
        ));
        // The helper PyTorch's cummax calls: fills `values` and `indices` in place.
        r.push(typed(
            &format!("aten::_{name}_helper(Tensor self, Tensor(a!) values, Tensor(b!) indices, int dim) -> ()"),
            move |input: Input, values: Input, indices: Input, dim: i64| {
                let (v, i) = input.cumulative_extreme(dim, is_max)?;
                v.write_into_out(&values)?;
                i.write_into_out(&indices)?;
                Ok(())
            },
        ));
    }
    let logcumsumexp = |input: Input, dim: i64| Ok(input.logcumsumexp(dim)?);
    r.extend(functional_and_out(
        "aten::logcumsumexp(Tensor self, int dim) -> Tensor",
        "aten::logcumsumexp.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)",
        logcumsumexp,
    ));
    r.extend(functional_and_out(
        "aten::_logcumsumexp(Tensor self, int dim) -> Tensor",
        "aten::_logcumsumexp.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)",
        logcumsumexp,
    ));
    r.extend(functional_and_out(
        "aten::msort(Tensor self) -> Tensor",
        "aten::msort.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        |input: Input| Ok(input.msort()?),
    ));
    r.push(typed(
        "aten::argwhere(Tensor self) -> Tensor",
        |input: Input| Ok(input.argwhere()?),
    ));
    r.extend(functional_and_out(
        "aten::nanmedian(Tensor self) -> Tensor",
        "aten::nanmedian.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        |input: Input| Ok(input.nanmedian_all()?),
    ));
    let nanmedian_dim =
        |input: Input, dim: i64, keepdim: bool| Ok(input.nanmedian_dim(dim, keepdim)?);
    r.push(typed(
        "aten::nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
        nanmedian_dim,
    ));
    r.push(outs_from_functional(
        "aten::nanmedian.dim_values(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
        2,
        nanmedian_dim,
    ));
    let mode = |input: Input, dim: i64, keepdim: bool| Ok(input.mode(dim, keepdim)?);
    r.push(typed(
        "aten::mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
        mode,
    ));
    r.push(outs_from_functional(
        "aten::mode.values(Tensor self, int dim=-1, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
        2,
        mode,
    ));
}

fn moments(r: &mut Vec<OperatorDeclaration>) {
    for (name, take_sqrt) in [("std_mean", true), ("var_mean", false)] {
        r.push(typed(
            &format!("aten::{name}(Tensor self, bool unbiased=True) -> (Tensor, Tensor)"),
            move |input: Input, unbiased: bool| {
                Ok(input.moments(&[], correction_of(unbiased), false, take_sqrt)?)
            },
        ));
        r.push(typed(
            &format!("aten::{name}.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)"),
            move |input: Input, dims: DimList, unbiased: bool, keepdim: bool| {
                Ok(input.moments(&dims.0, correction_of(unbiased), keepdim, take_sqrt)?)
            },
        ));
        let with_correction =
            move |input: Input, dims: DimList, correction: Option<f64>, keepdim: bool| {
                Ok(input.moments(&dims.0, correction.unwrap_or(1.0), keepdim, take_sqrt)?)
            };
        r.push(typed(
            &format!("aten::{name}.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"),
            with_correction,
        ));
        r.push(outs_from_functional(
            &format!("aten::{name}.correction_out(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False, Tensor(a!) out0, Tensor(b!) out1) -> (Tensor(a!), Tensor(b!))"),
            2,
            with_correction,
        ));
    }
    r.push(typed(
        "aten::cov(Tensor self, *, int correction=1, Tensor? fweights=None, Tensor? aweights=None) -> Tensor",
        |input: Input, correction: i64, fweights: Option<Input>, aweights: Option<Input>| {
            Ok(input.cov(correction, fweights.as_deref(), aweights.as_deref())?)
        },
    ));
    r.push(typed(
        "aten::corrcoef(Tensor self) -> Tensor",
        |input: Input| Ok(input.corrcoef()?),
    ));
}

fn quantiles(r: &mut Vec<OperatorDeclaration>) {
    for (name, ignore_nan) in [("quantile", false), ("nanquantile", true)] {
        let by_tensor = move |input: Input,
                              q: Input,
                              dim: Option<i64>,
                              keepdim: bool,
                              interpolation: String| {
            let mode = QuantileInterpolation::parse(&interpolation, name)?;
            Ok(input.quantile(&q, dim, keepdim, mode, ignore_nan)?)
        };
        let by_float =
            move |input: Input, q: f64, dim: Option<i64>, keepdim: bool, interpolation: String| {
                let q = scalar_q(&input, q, name)?;
                let mode = QuantileInterpolation::parse(&interpolation, name)?;
                Ok(input.quantile(&q, dim, keepdim, mode, ignore_nan)?)
            };
        r.extend(functional_and_out(
            &format!("aten::{name}(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, str interpolation=\"linear\") -> Tensor"),
            &format!("aten::{name}.out(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, str interpolation=\"linear\", Tensor(a!) out) -> Tensor(a!)"),
            by_tensor,
        ));
        r.extend(functional_and_out(
            &format!("aten::{name}.scalar(Tensor self, float q, int? dim=None, bool keepdim=False, *, str interpolation=\"linear\") -> Tensor"),
            &format!("aten::{name}.scalar_out(Tensor self, float q, int? dim=None, bool keepdim=False, *, str interpolation=\"linear\", Tensor(a!) out) -> Tensor(a!)"),
            by_float,
        ));
    }
}

fn histograms(r: &mut Vec<OperatorDeclaration>) {
    r.extend(functional_and_out(
        "aten::histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor",
        "aten::histc.out(Tensor self, int bins=100, Scalar min=0, Scalar max=0, *, Tensor(a!) out) -> Tensor(a!)",
        |input: Input, bins: i64, min: f64, max: f64| Ok(input.histc(bins, min, max)?),
    ));
    let by_edges = |input: Input, bins: Input, weight: Option<Input>, density: bool| {
        Ok(input.histogram_bin_edges(&bins, weight.as_deref(), density)?)
    };
    r.push(typed(
        "aten::histogram.bins_tensor(Tensor self, Tensor bins, *, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)",
        by_edges,
    ));
    r.push(outs_from_functional(
        "aten::histogram.bins_tensor_out(Tensor self, Tensor bins, *, Tensor? weight=None, bool density=False, Tensor(a!) hist, Tensor(b!) bin_edges) -> (Tensor(a!) hist, Tensor(b!) bin_edges)",
        2,
        by_edges,
    ));
    let by_count =
        |input: Input, bins: i64, range: Option<Vec<f64>>, weight: Option<Input>, density: bool| {
            Ok(input.histogram_bin_count(bins, range.as_deref(), weight.as_deref(), density)?)
        };
    r.push(typed(
        "aten::histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)",
        by_count,
    ));
    r.push(outs_from_functional(
        "aten::histogram.bin_ct_out(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, bool density=False, Tensor(a!) hist, Tensor(b!) bin_edges) -> (Tensor(a!) hist, Tensor(b!) bin_edges)",
        2,
        by_count,
    ));
    // histogramdd: a bin count per dimension, one count for every dimension, or edges.
    r.push(typed(
        "aten::histogramdd(Tensor self, int[] bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)",
        |input: Input, bins: Vec<i64>, range: Option<Vec<f64>>, weight: Option<Input>, density: bool| {
            Ok(input.histogramdd_bin_counts(&bins, range.as_deref(), weight.as_deref(), density)?)
        },
    ));
    r.push(typed(
        "aten::histogramdd.int_bins(Tensor self, int bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)",
        |input: Input, bins: i64, range: Option<Vec<f64>>, weight: Option<Input>, density: bool| {
            let dims = input.sizes().last().copied().unwrap_or(1);
            let counts = vec![bins; dims];
            Ok(input.histogramdd_bin_counts(&counts, range.as_deref(), weight.as_deref(), density)?)
        },
    ));
    r.push(typed(
        "aten::histogramdd.TensorList_bins(Tensor self, Tensor[] bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)",
        |input: Input, bins: Vec<Tensor>, _range: Option<Vec<f64>>, weight: Option<Input>, density: bool| {
            Ok(input.histogramdd_bin_tensors(&bins, weight.as_deref(), density)?)
        },
    ));
    r.extend(functional_and_out(
        "aten::bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> Tensor",
        "aten::bincount.out(Tensor self, Tensor? weights=None, SymInt minlength=0, *, Tensor(a!) out) -> Tensor(a!)",
        |input: Input, weights: Option<Input>, minlength: i64| {
            Ok(input.bincount(weights.as_deref(), minlength)?)
        },
    ));
}

fn sets(r: &mut Vec<OperatorDeclaration>) {
    r.extend(functional_and_out(
        "aten::isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, bool assume_unique=False, bool invert=False) -> Tensor",
        "aten::isin.Tensor_Tensor_out(Tensor elements, Tensor test_elements, *, bool assume_unique=False, bool invert=False, Tensor(a!) out) -> Tensor(a!)",
        |elements: Input, tests: Input, _assume_unique: bool, invert: bool| {
            Ok(elements.isin(&tests, invert)?)
        },
    ));
    r.extend(functional_and_out(
        "aten::isin.Tensor_Scalar(Tensor elements, Scalar test_element, *, bool assume_unique=False, bool invert=False) -> Tensor",
        "aten::isin.Tensor_Scalar_out(Tensor elements, Scalar test_element, *, bool assume_unique=False, bool invert=False, Tensor(a!) out) -> Tensor(a!)",
        |elements: Input, test: Scalar, _assume_unique: bool, invert: bool| {
            Ok(elements.isin_scalar(&test, invert)?)
        },
    ));
    r.extend(functional_and_out(
        "aten::isin.Scalar_Tensor(Scalar element, Tensor test_elements, *, bool assume_unique=False, bool invert=False) -> Tensor",
        "aten::isin.Scalar_Tensor_out(Scalar element, Tensor test_elements, *, bool assume_unique=False, bool invert=False, Tensor(a!) out) -> Tensor(a!)",
        |element: Scalar, tests: Input, _assume_unique: bool, invert: bool| {
            let element = Tensor::scalar_tensor(element, element.dtype());
            Ok(element.isin(&tests, invert)?)
        },
    ));
    let unique_consecutive =
        |input: Input, return_inverse: bool, return_counts: bool, dim: Option<i64>| {
            Ok(input.unique_consecutive(return_inverse, return_counts, dim)?)
        };
    r.push(typed(
        "aten::unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None) -> (Tensor, Tensor, Tensor)",
        unique_consecutive,
    ));
    r.push(outs_from_functional(
        "aten::unique_consecutive.out(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))",
        3,
        unique_consecutive,
    ));
    let unique_dim_consecutive =
        |input: Input, dim: i64, return_inverse: bool, return_counts: bool| {
            Ok(input.unique_consecutive(return_inverse, return_counts, Some(dim))?)
        };
    r.push(typed(
        "aten::unique_dim_consecutive(Tensor self, int dim, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)",
        unique_dim_consecutive,
    ));
    r.push(outs_from_functional(
        "aten::unique_dim_consecutive.out(Tensor self, int dim, bool return_inverse=False, bool return_counts=False, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))",
        3,
        unique_dim_consecutive,
    ));
    // The out= forms of the unique overloads registered in core_ops/tensor_ops.
    r.push(outs_from_functional(
        "aten::_unique2.out(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))",
        3,
        |input: Input, _sorted: bool, return_inverse: bool, return_counts: bool| {
            let (values, inverse, counts) = input.unique()?;
            let empty = || Tensor::zeros(&[0], DType::Int64);
            Ok((
                values,
                if return_inverse { inverse } else { empty()? },
                if return_counts { counts } else { empty()? },
            ))
        },
    ));
    r.push(outs_from_functional(
        "aten::_unique.out(Tensor self, bool sorted=True, bool return_inverse=False, *, Tensor(a!) out0, Tensor(b!) out1) -> (Tensor(a!), Tensor(b!))",
        2,
        |input: Input, _sorted: bool, return_inverse: bool| {
            let (values, inverse, _) = input.unique()?;
            let inverse = if return_inverse {
                inverse
            } else {
                Tensor::zeros(&[0], DType::Int64)?
            };
            Ok((values, inverse))
        },
    ));
    r.push(outs_from_functional(
        "aten::unique_dim.out(Tensor self, int dim, bool sorted=True, bool return_inverse=False, bool return_counts=False, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))",
        3,
        |input: Input, dim: i64, _sorted: bool, _return_inverse: bool, _return_counts: bool| {
            Ok(input.unique_dim(dim)?)
        },
    ));
}

fn pointwise(r: &mut Vec<OperatorDeclaration>) {
    let power = |input: Input, exponent: Input| Ok(input.float_power(&exponent)?);
    let power_scalar = |input: Input, exponent: Scalar| Ok(input.float_power_scalar(&exponent)?);
    let scalar_base = |base: Scalar, exponent: Input| {
        let dtype = if exponent.dtype().is_complex() {
            DType::ComplexDouble
        } else {
            DType::Float64
        };
        Ok(Tensor::scalar_tensor(base, dtype).float_power(&exponent)?)
    };
    r.extend(functional_and_out(
        "aten::float_power.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
        "aten::float_power.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)",
        power,
    ));
    r.extend(functional_and_out(
        "aten::float_power.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor",
        "aten::float_power.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out) -> Tensor(a!)",
        power_scalar,
    ));
    r.extend(functional_and_out(
        "aten::float_power.Scalar(Scalar self, Tensor exponent) -> Tensor",
        "aten::float_power.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)",
        scalar_base,
    ));
    // In place, the base must already be double (complex double): PyTorch does not cast
    // the result back.
    let check_double_base = |input: &Tensor, complex_exponent: bool| -> Result<()> {
        let wanted = if input.dtype().is_complex() || complex_exponent {
            DType::ComplexDouble
        } else {
            DType::Float64
        };
        if input.dtype() != wanted {
            return Err(TensorError::InvalidArgument(format!(
                "the base given to float_power_ has dtype {} but the operation's result requires dtype {}",
                input.dtype().scalar_type_name(),
                wanted.scalar_type_name()
            ))
            .into());
        }
        Ok(())
    };
    r.push(in_place_from_functional(
        "aten::float_power_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)",
        move |input: Input, exponent: Input| {
            check_double_base(input.as_ref(), exponent.dtype().is_complex())?;
            Ok(input.float_power(&exponent)?)
        },
    ));
    r.push(in_place_from_functional(
        "aten::float_power_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)",
        move |input: Input, exponent: Scalar| {
            check_double_base(input.as_ref(), false)?;
            Ok(input.float_power_scalar(&exponent)?)
        },
    ));
    let lcm = |input: Input, other: Input| Ok(input.lcm(&other)?);
    r.extend(functional_and_out(
        "aten::lcm(Tensor self, Tensor other) -> Tensor",
        "aten::lcm.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        lcm,
    ));
    r.push(in_place_from_functional(
        "aten::lcm_(Tensor(a!) self, Tensor other) -> Tensor(a!)",
        lcm,
    ));
    r.extend(functional_and_out(
        "aten::logaddexp2(Tensor self, Tensor other) -> Tensor",
        "aten::logaddexp2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |input: Input, other: Input| Ok(input.logaddexp2(&other)?),
    ));
    let nextafter = |input: Input, other: Input| Ok(input.nextafter(&other)?);
    r.extend(functional_and_out(
        "aten::nextafter(Tensor self, Tensor other) -> Tensor",
        "aten::nextafter.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        nextafter,
    ));
    r.push(in_place_from_functional(
        "aten::nextafter_(Tensor(a!) self, Tensor other) -> Tensor(a!)",
        nextafter,
    ));
    r.extend(functional_and_out(
        "aten::signbit(Tensor self) -> Tensor",
        "aten::signbit.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        |input: Input| Ok(input.signbit()?),
    ));
    let sgn = |input: Input| Ok(input.sgn()?);
    r.extend(functional_and_out(
        "aten::sgn(Tensor self) -> Tensor",
        "aten::sgn.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        sgn,
    ));
    r.push(in_place_from_functional(
        "aten::sgn_(Tensor(a!) self) -> Tensor(a!)",
        sgn,
    ));
    // Views of self: the same value is returned (ferrojit keeps no lazy negation bit, so
    // resolving one is the identity; resolve_conj is registered with the complex family).
    r.push(typed(
        "aten::positive(Tensor(a) self) -> Tensor(a)",
        |input: Input| {
            input.positive()?;
            Ok(input)
        },
    ));
    r.push(typed(
        "aten::resolve_neg(Tensor(a) self) -> Tensor(a)",
        |input: Input| Ok(input),
    ));
    r.push(typed(
        "aten::isreal(Tensor self) -> Tensor",
        |input: Input| Ok(input.isreal()?),
    ));
    let renorm = |input: Input, p: f64, dim: i64, maxnorm: f64| Ok(input.renorm(p, dim, maxnorm)?);
    r.extend(functional_and_out(
        "aten::renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor",
        "aten::renorm.out(Tensor self, Scalar p, int dim, Scalar maxnorm, *, Tensor(a!) out) -> Tensor(a!)",
        renorm,
    ));
    r.push(in_place_from_functional(
        "aten::renorm_(Tensor(a!) self, Scalar p, int dim, Scalar maxnorm) -> Tensor(a!)",
        renorm,
    ));
    r.extend(functional_and_out(
        "aten::dist(Tensor self, Tensor other, Scalar p=2) -> Tensor",
        "aten::dist.out(Tensor self, Tensor other, Scalar p=2, *, Tensor(a!) out) -> Tensor(a!)",
        |input: Input, other: Input, p: f64| Ok(input.dist(&other, p)?),
    ));
}

fn indexed(r: &mut Vec<OperatorDeclaration>) {
    let index_reduce = |input: Input,
                        dim: i64,
                        index: Input,
                        source: Input,
                        reduce: String,
                        include_self: bool| {
        let reduction = IndexReduction::parse(&reduce)?;
        Ok(input.index_reduce(dim, &index, &source, reduction, include_self)?)
    };
    r.extend(functional_and_out(
        "aten::index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, bool include_self=True) -> Tensor",
        "aten::index_reduce.out(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, bool include_self=True, Tensor(a!) out) -> Tensor(a!)",
        index_reduce,
    ));
    r.push(in_place_from_functional(
        "aten::index_reduce_(Tensor(a!) self, int dim, Tensor index, Tensor source, str reduce, *, bool include_self=True) -> Tensor(a!)",
        index_reduce,
    ));
    let index_copy = |input: Input, dim: i64, index: Input, source: Input| {
        Ok(input.index_copy(dim, &index, &source)?)
    };
    r.extend(functional_and_out(
        "aten::index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor",
        "aten::index_copy.out(Tensor self, int dim, Tensor index, Tensor source, *, Tensor(a!) out) -> Tensor(a!)",
        index_copy,
    ));
    r.push(in_place_from_functional(
        "aten::index_copy_(Tensor(a!) self, int dim, Tensor index, Tensor source) -> Tensor(a!)",
        index_copy,
    ));
    let put = |input: Input, index: Input, source: Input, accumulate: bool| {
        Ok(input.put(&index, &source, accumulate)?)
    };
    r.extend(functional_and_out(
        "aten::put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor",
        "aten::put.out(Tensor self, Tensor index, Tensor source, bool accumulate=False, *, Tensor(a!) out) -> Tensor(a!)",
        put,
    ));
    r.push(in_place_from_functional(
        "aten::put_(Tensor(a!) self, Tensor index, Tensor source, bool accumulate=False) -> Tensor(a!)",
        put,
    ));
    let segment_reduce = |data: Input,
                          reduce: String,
                          lengths: Option<Input>,
                          indices: Option<Input>,
                          offsets: Option<Input>,
                          axis: i64,
                          unsafe_lengths: bool,
                          initial: Option<Scalar>| {
        if indices.is_some() {
            return Err(RuntimeError::from(TensorError::InvalidArgument(
                "segment_reduce(): indices based reduction is not supported yet.".to_string(),
            )));
        }
        let reduction = SegmentReduction::parse(&reduce)?;
        Ok(data.segment_reduce(
            reduction,
            lengths.as_deref(),
            offsets.as_deref(),
            axis,
            unsafe_lengths,
            initial.as_ref(),
        )?)
    };
    r.extend(functional_and_out(
        "aten::segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, Tensor? offsets=None, int axis=0, bool unsafe=False, Scalar? initial=None) -> Tensor",
        "aten::segment_reduce.out(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, Tensor? offsets=None, int axis=0, bool unsafe=False, Scalar? initial=None, Tensor(a!) out) -> Tensor(a!)",
        segment_reduce,
    ));
    // Python's `torch._segment_reduce` is the same function as `torch.segment_reduce`
    // (PyTorch's script compiler resolves it to aten::segment_reduce); ferrojit's frontend
    // maps `torch.NAME` to `aten::NAME`, so the private spelling is registered too.
    r.push(typed(
        "aten::_segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, Tensor? offsets=None, int axis=0, bool unsafe=False, Scalar? initial=None) -> Tensor",
        segment_reduce,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opdef::OverloadRank;
    use crate::registry::{OperatorRegistry, Stack};

    #[test]
    fn every_declaration_registers() {
        let mut registry = OperatorRegistry::new();
        registry
            .register_family(OverloadRank::NativeFunction, declarations())
            .unwrap();
        assert!(!registry.overloads("aten::aminmax").is_empty());
    }

    #[test]
    fn the_two_output_out_form_writes_both_outputs() {
        let mut registry = OperatorRegistry::new();
        registry
            .register_family(OverloadRank::NativeFunction, declarations())
            .unwrap();
        let x = Tensor::from_vec(vec![3.0f32, 1.0, 2.0], &[3]).unwrap();
        let low = IValue::from(Tensor::zeros(&[0], DType::Float32).unwrap());
        let high = IValue::from(Tensor::zeros(&[0], DType::Float32).unwrap());
        let mut stack: Stack = vec![
            IValue::from(x),
            IValue::None,
            IValue::Bool(false),
            low.clone(),
            high.clone(),
        ];
        (registry.lookup("aten::aminmax.out").unwrap().kernel)(&mut stack).unwrap();
        assert_eq!(low.to_tensor().unwrap().to_f64_vec(), vec![1.0]);
        assert_eq!(high.to_tensor().unwrap().to_f64_vec(), vec![3.0]);
    }
}
