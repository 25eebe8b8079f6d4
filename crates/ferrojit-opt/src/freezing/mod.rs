//! Freezing, PyTorch's `torch.jit.freeze`: [`freeze_module`] turns a module in eval mode
//! into one whose methods read constants instead of attributes (see its file), then
//! [`optimize_frozen_graph`] runs the folds that only frozen graphs allow, in the order of
//! PyTorch's `OptimizeFrozenGraph`: dropout removal, concatenation of linears that share an
//! input, then conv/linear with batch norm, add/sub and mul/div folded into the weights
//! until nothing changes. [`transpose_linear`] is PyTorch's `FrozenLinearTranspose`, which
//! `torch.jit.freeze` does not run; [`optimize_for_inference`] (PyTorch's
//! `torch.jit.optimize_for_inference`) runs it after freezing.
//!
//! Every fold computes the new weights with the runtime's kernels, one PyTorch operation at
//! a time, so results match PyTorch's frozen module within float tolerance.

pub mod batch_norm_parameters;
pub mod concat_linear;
pub mod conv_folding_common;
pub mod fold_conv_add_or_sub;
pub mod fold_conv_batch_norm;
pub mod fold_conv_mul_or_div;
pub mod fold_linear_batch_norm;
pub mod freeze_module;
pub mod lower_simple_tuples;
pub mod operator_calls;
pub mod transpose_linear;

use ferrojit_ir::Graph;
use ferrojit_runtime::module::Module;

pub use freeze_module::{freeze_module, FreezeError, FreezeOptions, FrozenMethod, FrozenModule};

/// PyTorch's `OptimizeFrozenGraph`. `optimize_numerics` allows the folds that change float
/// results within rounding (all but dropout removal and linear concatenation).
pub fn optimize_frozen_graph(graph: &mut Graph, optimize_numerics: bool) -> Result<(), String> {
    crate::remove_dropout::remove_dropout(graph);
    concat_linear::concat_frozen_linear(graph)?;
    if optimize_numerics {
        loop {
            let mut changed = false;
            changed |= fold_conv_batch_norm::fold_frozen_conv_batch_norm(graph)?;
            changed |= fold_conv_add_or_sub::fold_frozen_conv_add_or_sub(graph)?;
            changed |= fold_conv_mul_or_div::fold_frozen_conv_mul_or_div(graph)?;
            changed |= fold_linear_batch_norm::fold_frozen_linear_batch_norm(graph)?;
            if !changed {
                break;
            }
        }
    }
    if cfg!(debug_assertions) {
        ferrojit_ir::verifier::verify(graph)
            .map_err(|error| format!("optimize_frozen_graph broke an invariant: {error}"))?;
    }
    Ok(())
}

/// `torch.jit.freeze(module, preserved_attrs, optimize_numerics=True)`: [`freeze_module`],
/// then [`optimize_frozen_graph`] on every frozen method.
pub fn freeze(module: &Module, options: &FreezeOptions) -> Result<FrozenModule, FreezeError> {
    let mut frozen = freeze_module(module, options)?;
    for method in &mut frozen.methods {
        optimize_frozen_graph(&mut method.graph, true).map_err(|message| FreezeError::Pass {
            method: method.name.clone(),
            message,
        })?;
    }
    Ok(frozen)
}

/// The passes of PyTorch's `optimize_for_inference` on one frozen graph that apply on a CPU
/// without MKLDNN. PyTorch runs three, in this order:
///
/// - `FuseFrozenConvAddRelu` rewrites conv (+ add) + relu into cuDNN's fused kernels, and only
///   for CUDA weights (CUDA builds only): it never applies to a CPU model, so it is not here;
/// - `ConvertFrozenOpsToMKLDNN` moves convolutions, linears and the pointwise ops around
///   them to MKLDNN tensors (MKLDNN builds only): ferrojit has no MKLDNN layout, so it is not
///   applied;
/// - `FrozenLinearTranspose`: [`transpose_linear::transpose_frozen_linear`], applied.
pub fn optimize_frozen_graph_for_inference(graph: &mut Graph) -> Result<(), String> {
    transpose_linear::transpose_frozen_linear(graph)?;
    if cfg!(debug_assertions) {
        ferrojit_ir::verifier::verify(graph).map_err(|error| {
            format!("optimize_frozen_graph_for_inference broke an invariant: {error}")
        })?;
    }
    Ok(())
}

/// `torch.jit.optimize_for_inference(module, other_methods)`: [`freeze`] (the module must be
/// in eval mode; PyTorch's `optimize_for_inference` calls `eval()` itself), then
/// [`optimize_frozen_graph_for_inference`] on `forward` and on every method named in
/// `options.preserved` (PyTorch's `other_methods`, which it also preserves when freezing).
pub fn optimize_for_inference(
    module: &Module,
    options: &FreezeOptions,
) -> Result<FrozenModule, FreezeError> {
    let mut frozen = freeze(module, options)?;
    for method in &mut frozen.methods {
        if method.name != "forward" && !options.preserved.contains(&method.name) {
            continue;
        }
        optimize_frozen_graph_for_inference(&mut method.graph).map_err(|message| {
            FreezeError::Pass {
                method: method.name.clone(),
                message,
            }
        })?;
    }
    Ok(frozen)
}
