//! Operators that torch.export programs call and that the runtime's registry does not hold
//! (yet): each is built here from registered operators, with PyTorch's schema. They are
//! found only when the registry has no operator of the name, so a registered kernel always
//! wins.

use ferrojit_ir::parse_schema;
use ferrojit_runtime::opdef::OverloadRank;
use ferrojit_runtime::{IValue, Operator, OperatorRegistry, RuntimeError, Stack};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

type Result<T> = std::result::Result<T, RuntimeError>;

/// A kernel of this table.
type FallbackKernel = fn(&mut Stack) -> Result<()>;

/// The operator `full_name` from the registry, or from this table.
pub fn find_operator(full_name: &str) -> Option<&'static Operator> {
    OperatorRegistry::global()
        .lookup(full_name)
        .or_else(|| fallback_table().get(full_name))
}

/// Whether the `.pt2` runner can run the operator `full_name` (`aten::add.Tensor`, or
/// `aten::relu` for a default overload): a registered operator, a stand-in of this table, or
/// one of the size and assertion operators the runner evaluates itself.
pub fn runs_operator(full_name: &str) -> bool {
    find_operator(full_name).is_some() || crate::run::is_builtin_symbolic_operator(full_name)
}

fn call(full_name: &str, arguments: Vec<IValue>) -> Result<Vec<IValue>> {
    let operator = OperatorRegistry::global()
        .lookup(full_name)
        .ok_or_else(|| {
            RuntimeError::InvalidGraph(format!("operator {full_name} is not registered"))
        })?;
    let mut stack = arguments;
    (operator.kernel)(&mut stack)?;
    Ok(stack)
}

fn call_one(full_name: &str, arguments: Vec<IValue>) -> Result<IValue> {
    call(full_name, arguments)?
        .pop()
        .ok_or_else(|| RuntimeError::InvalidGraph(format!("{full_name} returned nothing")))
}

fn take<const N: usize>(stack: &mut Stack) -> Result<[IValue; N]> {
    ferrojit_runtime::registry::pop_arguments::<N>(stack)
}

fn empty_tensor() -> IValue {
    IValue::from(
        ferrojit_tensor::Tensor::zeros(&[0], ferrojit_tensor::DType::Float32).unwrap_or_else(
            |_| {
                ferrojit_tensor::Tensor::scalar_tensor(
                    ferrojit_tensor::Scalar::Float(0.0),
                    ferrojit_tensor::DType::Float32,
                )
            },
        ),
    )
}

fn lift_fresh_copy(stack: &mut Stack) -> Result<()> {
    let [tensor] = take::<1>(stack)?;
    stack.push(call_one("aten::clone", vec![tensor, IValue::None])?);
    Ok(())
}

fn alias(stack: &mut Stack) -> Result<()> {
    let [tensor] = take::<1>(stack)?;
    stack.push(call_one("aten::alias", vec![tensor.clone()]).unwrap_or(tensor));
    Ok(())
}

fn native_batch_norm_no_training(stack: &mut Stack) -> Result<()> {
    let [input, weight, bias, mean, var, momentum, eps] = take::<7>(stack)?;
    let output = call_one(
        "aten::batch_norm",
        vec![
            input,
            weight,
            bias,
            mean,
            var,
            IValue::Bool(false),
            momentum,
            eps,
            IValue::Bool(false),
        ],
    )?;
    stack.extend([output, empty_tensor(), empty_tensor()]);
    Ok(())
}

fn native_layer_norm(stack: &mut Stack) -> Result<()> {
    let [input, shape, weight, bias, eps] = take::<5>(stack)?;
    let rank = input.to_tensor()?.dim();
    let normalized = shape.to_int_vec()?.len();
    let dims: Vec<i64> = (rank.saturating_sub(normalized)..rank)
        .map(|d| d as i64)
        .collect();
    let output = call_one(
        "aten::layer_norm",
        vec![
            input.clone(),
            shape,
            weight,
            bias,
            eps.clone(),
            IValue::Bool(false),
        ],
    )?;
    let (mean, rstd) = mean_and_rstd(&input, &dims, eps)?;
    stack.extend([output, mean, rstd]);
    Ok(())
}

fn to_copy(stack: &mut Stack) -> Result<()> {
    let [tensor, dtype, _layout, _device, _pin_memory, _non_blocking, _memory_format] =
        take::<7>(stack)?;
    let source = tensor.to_tensor()?;
    let copied = match dtype.to_optional_int()? {
        Some(index) => {
            let dtype = ferrojit_tensor::DType::from_scalar_type_index(index)
                .map_err(|error| RuntimeError::InvalidGraph(format!("_to_copy: {error}")))?;
            if dtype == source.dtype() {
                source.clone_tensor()
            } else {
                source.to_dtype(dtype)
            }
        }
        None => source.clone_tensor(),
    };
    stack.push(IValue::from(copied));
    Ok(())
}

/// Mean and 1/sqrt(biased variance + eps) over `dims`, kept as size-1 dimensions.
fn mean_and_rstd(input: &IValue, dims: &[i64], eps: IValue) -> Result<(IValue, IValue)> {
    let mean = call_one(
        "aten::mean.dim",
        vec![
            input.clone(),
            IValue::int_list(dims),
            IValue::Bool(true),
            IValue::None,
        ],
    )?;
    let centered = call_one(
        "aten::sub.Tensor",
        vec![input.clone(), mean.clone(), IValue::Int(1)],
    )?;
    let squared = call_one("aten::mul.Tensor", vec![centered.clone(), centered])?;
    let variance = call_one(
        "aten::mean.dim",
        vec![
            squared,
            IValue::int_list(dims),
            IValue::Bool(true),
            IValue::None,
        ],
    )?;
    let shifted = call_one("aten::add.Scalar", vec![variance, eps, IValue::Int(1)])?;
    Ok((mean, call_one("aten::rsqrt", vec![shifted])?))
}

fn native_batch_norm_functional(stack: &mut Stack) -> Result<()> {
    let [input, weight, bias, mean, var, training, momentum, eps] = take::<8>(stack)?;
    // The functional form returns new running statistics instead of updating its inputs:
    // run the in-place kernel on copies.
    let mean_copy = call_one("aten::clone", vec![mean, IValue::None])?;
    let var_copy = call_one("aten::clone", vec![var, IValue::None])?;
    let output = call_one(
        "aten::batch_norm",
        vec![
            input.clone(),
            weight,
            bias,
            mean_copy.clone(),
            var_copy.clone(),
            training,
            momentum,
            eps.clone(),
            IValue::Bool(false),
        ],
    )?;
    let rank = input.to_tensor()?.dim() as i64;
    let dims: Vec<i64> = std::iter::once(0).chain(2..rank).collect();
    let (save_mean, save_rstd) = mean_and_rstd(&input, &dims, eps)?;
    let flat = |value: IValue| {
        call_one(
            "aten::flatten.using_ints",
            vec![value, IValue::Int(0), IValue::Int(-1)],
        )
    };
    stack.extend([
        output,
        flat(save_mean)?,
        flat(save_rstd)?,
        mean_copy,
        var_copy,
    ]);
    Ok(())
}

fn local_scalar_dense(stack: &mut Stack) -> Result<()> {
    let [tensor] = take::<1>(stack)?;
    stack.push(call_one("aten::item", vec![tensor])?);
    Ok(())
}

fn adaptive_avg_pool2d(stack: &mut Stack) -> Result<()> {
    let [input, output_size] = take::<2>(stack)?;
    stack.push(call_one(
        "aten::adaptive_avg_pool2d",
        vec![input, output_size],
    )?);
    Ok(())
}

/// `self` with `src` written over the view `view_of(copy of self)`: the `*_scatter` family.
fn scatter_into_view(
    input: IValue,
    source: IValue,
    view_of: impl FnOnce(IValue) -> Result<IValue>,
) -> Result<IValue> {
    let result = call_one("aten::clone", vec![input, IValue::None])?;
    let view = view_of(result.clone())?;
    call_one("aten::copy_", vec![view, source, IValue::Bool(false)])?;
    Ok(result)
}

fn slice_scatter(stack: &mut Stack) -> Result<()> {
    let [input, source, dim, start, end, step] = take::<6>(stack)?;
    let result = scatter_into_view(input, source, |copy| {
        call_one("aten::slice.Tensor", vec![copy, dim, start, end, step])
    })?;
    stack.push(result);
    Ok(())
}

/// `copy(self, src)`: a new tensor of `self`'s dtype and shape holding `src` (broadcast).
fn copy(stack: &mut Stack) -> Result<()> {
    let [input, source, _non_blocking] = take::<3>(stack)?;
    let result = scatter_into_view(input, source, Ok)?;
    stack.push(result);
    Ok(())
}

/// `empty_permuted`: the values are unspecified, so zeros of the size and dtype do (the
/// physical layout only changes strides, which no later operator of the program observes
/// through values).
fn empty_permuted(stack: &mut Stack) -> Result<()> {
    let [size, _physical_layout, dtype, layout, device, pin_memory] = take::<6>(stack)?;
    stack.push(call_one(
        "aten::zeros",
        vec![size, dtype, layout, device, pin_memory],
    )?);
    Ok(())
}

/// `native_dropout` outside training: the input unchanged and an all-true keep mask. In
/// training its mask is random, which no stand-in can reproduce: an error, not a guess.
fn native_dropout(stack: &mut Stack) -> Result<()> {
    let [input, probability, train] = take::<3>(stack)?;
    let training = match train {
        IValue::None => true,
        other => other.to_bool()?,
    };
    if training && probability.to_double()? > 0.0 {
        return Err(RuntimeError::InvalidGraph(
            "native_dropout in training draws a random mask; only train=False runs here"
                .to_string(),
        ));
    }
    let output = call_one("aten::clone", vec![input.clone(), IValue::None])?;
    let bool_dtype = IValue::Int(ferrojit_tensor::DType::Bool.scalar_type_index());
    let mask = call_one(
        "aten::ones_like",
        vec![
            input,
            bool_dtype,
            IValue::None,
            IValue::None,
            IValue::None,
            IValue::None,
        ],
    )?;
    stack.extend([output, mask]);
    Ok(())
}

fn native_batch_norm_no_stats(stack: &mut Stack) -> Result<()> {
    let [input, weight, bias, training, momentum, eps] = take::<6>(stack)?;
    let output = call_one(
        "aten::batch_norm",
        vec![
            input.clone(),
            weight,
            bias,
            IValue::None,
            IValue::None,
            training,
            momentum,
            eps.clone(),
            IValue::Bool(false),
        ],
    )?;
    let rank = input.to_tensor()?.dim() as i64;
    let dims: Vec<i64> = std::iter::once(0).chain(2..rank).collect();
    let (save_mean, save_rstd) = mean_and_rstd(&input, &dims, eps)?;
    let flat = |value: IValue| {
        call_one(
            "aten::flatten.using_ints",
            vec![value, IValue::Int(0), IValue::Int(-1)],
        )
    };
    stack.extend([output, flat(save_mean)?, flat(save_rstd)?]);
    Ok(())
}

/// `native_group_norm`: the output of `group_norm`, with each (sample, group)'s mean and
/// 1/sqrt(variance + eps) as `[N, group]` tensors.
fn native_group_norm(stack: &mut Stack) -> Result<()> {
    let [input, weight, bias, samples, _channels, _spatial, groups, eps] = take::<8>(stack)?;
    let output = call_one(
        "aten::group_norm",
        vec![
            input.clone(),
            groups.clone(),
            weight,
            bias,
            eps.clone(),
            IValue::Bool(false),
        ],
    )?;
    let grouped = call_one(
        "aten::reshape",
        vec![
            input,
            IValue::int_list(&[samples.to_int()?, groups.to_int()?, -1]),
        ],
    )?;
    let (mean, rstd) = mean_and_rstd(&grouped, &[2], eps)?;
    let squeeze = |value: IValue| call_one("aten::squeeze.dim", vec![value, IValue::Int(2)]);
    stack.extend([output, squeeze(mean)?, squeeze(rstd)?]);
    Ok(())
}

fn fallback_table() -> &'static HashMap<String, Operator> {
    static TABLE: OnceLock<HashMap<String, Operator>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let entries: [(&str, FallbackKernel); 14] = [
            ("aten::lift_fresh_copy(Tensor self) -> Tensor", lift_fresh_copy),
            (
                "aten::_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
                to_copy,
            ),
            (
                "aten::_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)",
                native_batch_norm_functional,
            ),
            ("aten::alias(Tensor(a) self) -> Tensor(a)", alias),
            (
                "aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
                native_batch_norm_no_training,
            ),
            (
                "aten::native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)",
                native_layer_norm,
            ),
            ("aten::_local_scalar_dense(Tensor self) -> Scalar", local_scalar_dense),
            (
                "aten::_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",
                adaptive_avg_pool2d,
            ),
            (
                "aten::slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor",
                slice_scatter,
            ),
            (
                "aten::copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor",
                copy,
            ),
            (
                "aten::empty_permuted(SymInt[] size, int[] physical_layout, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
                empty_permuted,
            ),
            (
                "aten::native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)",
                native_dropout,
            ),
            (
                "aten::_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
                native_batch_norm_no_stats,
            ),
            (
                "aten::native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)",
                native_group_norm,
            ),
        ];
        let mut table = HashMap::new();
        for (schema, kernel) in entries {
            // The schemas are constants: the test below checks that every one parses, so none
            // is dropped here without a failing test.
            if let Ok(schema) = parse_schema(schema) {
                let name = schema.full_name();
                table.insert(
                    name,
                    Operator::new(schema, Arc::new(kernel), OverloadRank::NativeFunction),
                );
            }
        }
        table
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_fallback_schema_parses() {
        let names: Vec<&String> = super::fallback_table().keys().collect();
        assert_eq!(
            names.len(),
            14,
            "a fallback schema failed to parse: {names:?}"
        );
    }
}
