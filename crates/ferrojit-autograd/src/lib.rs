//! ferrojit-autograd: PyTorch's autograd for the ferrojit runtime. An operator hook records a
//! backward node for each operator call whose tensor inputs require grad (while grad mode is
//! on); the engine walks those nodes in dependency order; the formulas follow PyTorch's
//! `tools/autograd/derivatives.yaml` and call operators through the same recording path, so
//! that `create_graph=True` (double backward) works by construction. The TorchScript
//! operators (`aten::grad`, `aten::backward`, `prim::grad`, `aten::is_leaf`, ...) are
//! registered into the global registry by [`register`].

pub mod call;
pub mod differentiable_graph;
pub mod engine;
pub mod formulas;
pub mod node;
pub mod record;
pub mod script_ops;

use std::sync::OnceLock;

use ferrojit_runtime::RuntimeError;

pub use engine::{backward, grad, GradOptions};
pub use ferrojit_runtime::autograd::{is_grad_enabled, set_grad_enabled, GradModeGuard};
pub use node::{grad_fn_name, Node};

/// Registers the TorchScript autograd operators in the global registry without installing
/// the recording hook: programs calling them compile, and asking for a gradient fails with
/// an error saying how to turn recording on (an inference run). Idempotent.
pub fn register_operators() -> Result<(), RuntimeError> {
    static RESULT: OnceLock<Result<(), RuntimeError>> = OnceLock::new();
    RESULT
        .get_or_init(|| script_ops::register_into(ferrojit_runtime::OperatorRegistry::global()))
        .clone()
}

/// Whether gradients are recorded in this process (the hook is installed).
pub fn is_recording_installed() -> bool {
    ferrojit_runtime::autograd::operator_hook().is_some()
}

/// Installs the recording hook and registers the TorchScript autograd operators in the
/// global registry. Idempotent: every call returns the first call's result.
pub fn register() -> Result<(), RuntimeError> {
    static RESULT: OnceLock<Result<(), RuntimeError>> = OnceLock::new();
    RESULT
        .get_or_init(|| {
            register_operators()?;
            // Another hook already installed would make recording silently absent: say so.
            if !ferrojit_runtime::autograd::install_operator_hook(Box::new(record::AutogradHook)) {
                return Err(RuntimeError::Other(
                    "autograd: another operator hook is already installed".to_string(),
                ));
            }
            // Without it, differentiable graphs run their subgraphs and record per operator.
            ferrojit_runtime::interpreter::differentiable_graph::install_differentiable_graph_hook(
                Box::new(differentiable_graph::SymbolicGraphHook),
            );
            Ok(())
        })
        .clone()
}

/// A scope without gradient recording (`with torch.no_grad():`).
pub fn no_grad() -> GradModeGuard {
    GradModeGuard::new(false)
}

/// A scope with gradient recording (`with torch.enable_grad():`).
pub fn enable_grad() -> GradModeGuard {
    GradModeGuard::new(true)
}
