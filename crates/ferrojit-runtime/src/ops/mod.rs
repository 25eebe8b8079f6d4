//! Builtin operators, one file per family, each a list of declarations (PyTorch schema,
//! kernel, rules), the list of families with their overload ranks, and the stack helpers the
//! kernels share.

pub mod arithmetic_ops;
pub mod arrange_ops;
pub mod attention_math_ops;
pub mod batch_norm_variant_ops;
pub mod binding;
pub mod comparison_ops;
pub mod complex_ops;
pub mod complex_scalar_ops;
pub mod composite_ops;
pub mod copy_overloads;
pub mod core_ops;
pub mod creation_ops;
pub mod ctc_loss_ops;
pub mod derived_variants;
pub mod dict_ops;
pub mod distance_ops;
pub mod epilogue_ops;
pub mod factory_overloads;
pub mod fft_ops;
pub mod fractional_max_pool_ops;
pub mod grid_and_reduction_extra_ops;
pub mod in_place_extra_ops;
pub mod indexing_ops;
pub mod jit_builtin_ops;
pub mod linalg_ops;
pub mod linalg_overloads;
pub mod list_ops;
pub mod margin_loss_ops;
pub mod math_ops;
pub mod misc_ops;
pub mod nn_backward_ops;
pub mod nn_composite_ops;
pub mod nn_internal_ops;
pub mod nn_layer_extra_ops;
pub mod nn_ops;
pub mod packed_sequence_ops;
pub mod prim_lang_ops;
pub mod quasirandom_ops;
pub mod random_activation_ops;
pub mod random_overloads;
pub mod rnn_ops;
pub mod scalar_ops;
pub mod sequence_padding_ops;
pub mod shape_copy_ops;
pub mod shape_rules;
pub mod short_time_fourier_ops;
pub mod special_ops;
pub mod statistics_ops;
pub mod storage_view_extra_ops;
pub mod str_format_ops;
pub mod str_ops;
pub mod tensor_metadata_ops;
pub mod tensor_ops;
pub mod transformer_ops;
pub mod weight_norm_ops;
pub mod window_ops;

use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::{OperatorDeclaration, OverloadRank};
use crate::registry::{OperatorRegistry, Stack};

/// Every builtin family with the overload rank of its operators. Within one name the
/// registry orders overloads by rank (PyTorch's native functions, then its builtins, then
/// its composites), and only then by this order, so moving a family in this list never
/// changes which overload the compiler picks across ranks.
pub fn builtin_families() -> Vec<(&'static str, OverloadRank, Vec<OperatorDeclaration>)> {
    use OverloadRank::{Builtin, Composite, NativeFunction};
    vec![
        ("arithmetic", NativeFunction, arithmetic_ops::declarations()),
        ("comparison", NativeFunction, comparison_ops::declarations()),
        ("tensor", NativeFunction, tensor_ops::declarations()),
        ("core", NativeFunction, core_ops::declarations()),
        ("arrange", NativeFunction, arrange_ops::declarations()),
        ("nn", NativeFunction, nn_ops::declarations()),
        (
            "nn_backward",
            NativeFunction,
            nn_backward_ops::declarations(),
        ),
        ("distance", NativeFunction, distance_ops::declarations()),
        (
            "margin_loss",
            NativeFunction,
            margin_loss_ops::declarations(),
        ),
        (
            "nn_layer_extra",
            NativeFunction,
            nn_layer_extra_ops::declarations(),
        ),
        (
            "nn_internal",
            NativeFunction,
            nn_internal_ops::declarations(),
        ),
        (
            "random_activation",
            NativeFunction,
            random_activation_ops::declarations(),
        ),
        (
            "nn_composite",
            NativeFunction,
            nn_composite_ops::declarations(),
        ),
        ("rnn", NativeFunction, rnn_ops::declarations()),
        (
            "transformer",
            NativeFunction,
            transformer_ops::declarations(),
        ),
        ("indexing", NativeFunction, indexing_ops::declarations()),
        ("creation", NativeFunction, creation_ops::declarations()),
        ("complex", NativeFunction, complex_ops::declarations()),
        ("fft", NativeFunction, fft_ops::declarations()),
        ("linalg", NativeFunction, linalg_ops::declarations()),
        ("special", NativeFunction, special_ops::declarations()),
        ("epilogue", NativeFunction, epilogue_ops::declarations()),
        ("window", NativeFunction, window_ops::declarations()),
        ("shape_copy", NativeFunction, shape_copy_ops::declarations()),
        (
            "weight_norm",
            NativeFunction,
            weight_norm_ops::declarations(),
        ),
        ("statistics", NativeFunction, statistics_ops::declarations()),
        (
            "random_overloads",
            NativeFunction,
            random_overloads::declarations(),
        ),
        (
            "factory_overloads",
            NativeFunction,
            factory_overloads::declarations(),
        ),
        (
            "linalg_overloads",
            NativeFunction,
            linalg_overloads::declarations(),
        ),
        (
            "copy_overloads",
            NativeFunction,
            copy_overloads::declarations(),
        ),
        (
            "short_time_fourier",
            NativeFunction,
            short_time_fourier_ops::declarations(),
        ),
        (
            "tensor_metadata",
            NativeFunction,
            tensor_metadata_ops::declarations(),
        ),
        (
            "in_place_extra",
            NativeFunction,
            in_place_extra_ops::declarations(),
        ),
        (
            "batch_norm_variant",
            NativeFunction,
            batch_norm_variant_ops::declarations(),
        ),
        (
            "sequence_padding",
            NativeFunction,
            sequence_padding_ops::declarations(),
        ),
        (
            "grid_and_reduction_extra",
            NativeFunction,
            grid_and_reduction_extra_ops::declarations(),
        ),
        (
            "packed_sequence",
            NativeFunction,
            packed_sequence_ops::declarations(),
        ),
        (
            "attention_math",
            NativeFunction,
            attention_math_ops::declarations(),
        ),
        (
            "storage_view_extra",
            NativeFunction,
            storage_view_extra_ops::declarations(),
        ),
        ("ctc_loss", NativeFunction, ctc_loss_ops::declarations()),
        (
            "quasirandom",
            NativeFunction,
            quasirandom_ops::declarations(),
        ),
        (
            "fractional_max_pool",
            NativeFunction,
            fractional_max_pool_ops::declarations(),
        ),
        // Before the int/float family: a complex operand also matches `Scalar`, and the
        // exact `.complex` overloads must be found first.
        (
            "complex_scalar",
            Builtin,
            complex_scalar_ops::declarations(),
        ),
        ("scalar", Builtin, scalar_ops::declarations()),
        ("math", Builtin, math_ops::declarations()),
        ("str", Builtin, str_ops::declarations()),
        ("str_format", Builtin, str_format_ops::declarations()),
        ("list", Builtin, list_ops::declarations()),
        ("dict", Builtin, dict_ops::declarations()),
        ("misc", Builtin, misc_ops::declarations()),
        ("jit_builtin", Builtin, jit_builtin_ops::declarations()),
        ("prim_lang", Builtin, prim_lang_ops::declarations()),
        ("composite", Composite, composite_ops::declarations()),
    ]
}

/// Registers every builtin family, recording each failure in
/// [`OperatorRegistry::registration_errors`] and going on (the global registry cannot fail;
/// a test keeps the list empty). [`try_register_builtins`] stops at the first failure.
pub fn register_builtins(registry: &mut OperatorRegistry) {
    // With `stop_at_first_error` false every failure is recorded and nothing is returned.
    let _ = register_all_builtins(registry, false);
}

/// Registers every builtin family, failing on the first malformed or duplicate schema, or
/// the first alias or rule that cannot be registered.
pub fn try_register_builtins(registry: &mut OperatorRegistry) -> Result<()> {
    register_all_builtins(registry, true)
}

fn register_all_builtins(registry: &mut OperatorRegistry, stop_at_first_error: bool) -> Result<()> {
    let outcome = |registry: &mut OperatorRegistry, result: Result<()>| -> Result<()> {
        match result {
            Err(error) if stop_at_first_error => Err(error),
            Err(error) => {
                registry.push_registration_error(error.to_string());
                Ok(())
            }
            Ok(()) => Ok(()),
        }
    };
    let mut derived_registered = false;
    for (_family, rank, declarations) in builtin_families() {
        // In-place and out= forms built from functional kernels: after every native family
        // has declared its own, and (being native functions) before any builtin overload.
        if rank != OverloadRank::NativeFunction && !derived_registered {
            for result in derived_variants::register(registry) {
                outcome(registry, result)?;
            }
            derived_registered = true;
        }
        for declaration in declarations {
            let result = registry.register_declaration(rank, declaration);
            outcome(registry, result)?;
        }
    }
    for result in derived_variants::register(registry) {
        outcome(registry, result)?;
    }
    // Rules before aliases, so that an alias shares its operator's rules.
    let result = shape_rules::attach(registry);
    outcome(registry, result)?;
    for result in register_aliases(registry) {
        outcome(registry, result)?;
    }
    Ok(())
}

/// Registers each operator alias (`aten::subtract`) that has no schema of its own here as the
/// overloads of the operator it stands for whose first argument is a tensor or a tensor list,
/// under the alias's name, with the same definitions. Returns each registration's outcome.
fn register_aliases(registry: &mut OperatorRegistry) -> Vec<Result<()>> {
    let mut outcomes = Vec::new();
    for &(alias, canonical) in ferrojit_ir::aliases::OPERATOR_ALIASES {
        if !registry.overloads(alias).is_empty() {
            continue;
        }
        let operators: Vec<_> = registry
            .operators()
            .iter()
            .filter(|operator| operator.schema.name == canonical)
            .cloned()
            .collect();
        for operator in operators {
            let takes_tensor =
                operator
                    .schema
                    .arguments
                    .first()
                    .is_some_and(|first| match &first.ty {
                        ferrojit_ir::Type::List(element) => element.is_tensor(),
                        other => other.is_tensor(),
                    });
            if !takes_tensor {
                continue;
            }
            outcomes.push(registry.register_renamed(&operator, alias));
        }
    }
    outcomes
}

/// For vararg schemas (`aten::format(str self, ...)`), the only operators that still read the
/// stack themselves: pops the input count the interpreter pushed, then that many inputs, in
/// push order.
pub(crate) fn pop_varargs(stack: &mut Stack) -> Result<Vec<IValue>> {
    let underflow =
        || RuntimeError::InvalidGraph("operand stack underflow in an operator".to_string());
    let count = stack.pop().ok_or_else(underflow)?;
    let count = usize::try_from(count.to_int()?)
        .map_err(|_| RuntimeError::InvalidGraph("negative vararg count".to_string()))?;
    let start = stack.len().checked_sub(count).ok_or_else(underflow)?;
    Ok(stack.split_off(start))
}

/// Normalizes a Python index (negative counts from the end) into `0..len`.
pub(crate) fn normalize_index(index: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let normalized = if index < 0 {
        index.checked_add(len)?
    } else {
        index
    };
    if (0..len).contains(&normalized) {
        usize::try_from(normalized).ok()
    } else {
        None
    }
}

/// Python's slice index adjustment (`PySlice_AdjustIndices`): returns (start, step, count).
pub(crate) fn slice_indices(
    len: usize,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<(i64, i64, usize)> {
    if step == 0 {
        return Err(RuntimeError::ValueError(
            "slice step cannot be zero".to_string(),
        ));
    }
    let len = i64::try_from(len).map_err(|_| RuntimeError::Other("list too long".to_string()))?;
    let adjust = |value: Option<i64>, default: i64, low: i64, high: i64| -> i64 {
        match value {
            None => default,
            Some(v) if v < 0 => {
                let v = v.saturating_add(len);
                if v < 0 {
                    low
                } else {
                    v
                }
            }
            Some(v) => {
                if v >= len {
                    high
                } else {
                    v
                }
            }
        }
    };
    let (start, end) = if step > 0 {
        (adjust(start, 0, 0, len), adjust(end, len, 0, len))
    } else {
        (
            adjust(start, len - 1, -1, len - 1),
            adjust(end, -1, -1, len - 1),
        )
    };
    let count = if step > 0 {
        if end > start {
            (end - start - 1) / step + 1
        } else {
            0
        }
    } else if start > end {
        (start - end - 1) / (-step) + 1
    } else {
        0
    };
    Ok((start, step, usize::try_from(count).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_follow_python() {
        // [0, 1, 2, 3, 4][1:4] -> 1, 2, 3
        assert_eq!(slice_indices(5, Some(1), Some(4), 1).unwrap(), (1, 1, 3));
        // [::-1] -> 4, 3, 2, 1, 0
        assert_eq!(slice_indices(5, None, None, -1).unwrap(), (4, -1, 5));
        // [-2:] -> 3, 4
        assert_eq!(slice_indices(5, Some(-2), None, 1).unwrap(), (3, 1, 2));
        // [10:] -> empty
        assert_eq!(slice_indices(5, Some(10), None, 1).unwrap().2, 0);
        // [::2] -> 0, 2, 4
        assert_eq!(slice_indices(5, None, None, 2).unwrap(), (0, 2, 3));
        assert!(slice_indices(5, None, None, 0).is_err());
        assert_eq!(normalize_index(-1, 3), Some(2));
        assert_eq!(normalize_index(3, 3), None);
        assert_eq!(normalize_index(-4, 3), None);
    }
}
