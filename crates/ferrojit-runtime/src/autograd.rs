//! Autograd state the runtime keeps: grad mode, per thread as PyTorch keeps it, and each
//! tensor handle's autograd metadata ([`AutogradMeta`], held by its
//! [`crate::ivalue::TensorCell`]: `requires_grad`, `grad_fn`, `grad`, the version counter),
//! and the operator hook through which the ferrojit-autograd crate records backward nodes.
//! Programs read and set the mode (`with torch.no_grad():` compiles to
//! `aten::is_grad_enabled` and `aten::set_grad_enabled`), and a forked task starts in the
//! mode of the thread that forked it.

use std::any::Any;
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use ferrojit_ir::FunctionSchema;

use crate::error::Result;
use crate::ivalue::{IValue, TensorCell};

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// This thread's grad mode (on unless a program or a guard turned it off).
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

/// Sets this thread's grad mode until it is set again (`torch.set_grad_enabled(mode)`).
pub fn set_grad_enabled(enabled: bool) {
    GRAD_ENABLED.with(|flag| flag.set(enabled));
}

/// Sets this thread's grad mode for the guard's life and restores the mode it replaced
/// when dropped, however the scope ends: what a forked task's thread does around the task.
/// Not `Send`: it restores the mode of the thread that made it.
#[must_use = "the mode is restored when the guard is dropped"]
pub struct GradModeGuard {
    previous: bool,
    _this_thread_only: PhantomData<*const ()>,
}

impl GradModeGuard {
    pub fn new(enabled: bool) -> GradModeGuard {
        let previous = is_grad_enabled();
        set_grad_enabled(enabled);
        GradModeGuard {
            previous,
            _this_thread_only: PhantomData,
        }
    }

    /// The mode the guard will restore.
    pub fn previous(&self) -> bool {
        self.previous
    }
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        set_grad_enabled(self.previous);
    }
}

/// A node of the backward graph, as the runtime sees it: something with PyTorch's printed
/// name (`MulBackward0`). The autograd crate defines the nodes; the runtime only holds them
/// (a tensor's `grad_fn`) and hands them back, so the trait can turn the node back into its
/// concrete type.
pub trait GradNode: Any + Send + Sync {
    /// The name PyTorch prints for `tensor.grad_fn` (`AddBackward0`).
    fn name(&self) -> String;
    /// The node as `Any`, for the autograd crate to recover its own type.
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

/// A tensor's place in the backward graph: the node that made it and which of the node's
/// outputs it is (PyTorch's `grad_fn` and `output_nr`).
#[derive(Clone)]
pub struct GradHistory {
    pub node: Arc<dyn GradNode>,
    pub output_nr: usize,
}

impl fmt::Debug for GradHistory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} output {}>", self.node.name(), self.output_nr)
    }
}

/// Counts the in-place writes to a tensor's data, PyTorch's `VersionCounter`: a view shares
/// its base's counter (they share memory), so a backward node that saved either sees a
/// write through the other.
#[derive(Debug, Default)]
pub struct VersionCounter(AtomicU64);

impl VersionCounter {
    pub fn current(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// The autograd metadata of one tensor handle, PyTorch's `AutogradMeta`, which its
/// `TensorImpl` holds. It lives on the [`crate::ivalue::TensorCell`], not on the tensor value:
/// an operator that replaces the cell's tensor (an in-place op, an `out=` resize, `set_`,
/// `unsqueeze_`) keeps it, every handle to the cell sees one flag, and a new tensor an operator
/// returns starts without it.
///
/// Besides `requires_grad` it holds the node that made the tensor (`grad_fn`), the gradient
/// accumulated into it (`grad`), whether a non-leaf keeps its gradient (`retain_grad`) and
/// the version counter. Each sits behind its own lock since handles on other threads read
/// them; none is locked while an operator runs.
#[derive(Debug, Default)]
pub struct AutogradMeta {
    requires_grad: AtomicBool,
    retains_grad: AtomicBool,
    history: Mutex<Option<GradHistory>>,
    grad: Mutex<Option<Arc<TensorCell>>>,
    /// Made on first use: most tensors are never written in place nor saved for backward.
    version: Mutex<Option<Arc<VersionCounter>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a panic elsewhere; every value here is whole.
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

impl AutogradMeta {
    pub fn new(requires_grad: bool) -> AutogradMeta {
        AutogradMeta {
            requires_grad: AtomicBool::new(requires_grad),
            ..AutogradMeta::default()
        }
    }

    /// `tensor.requires_grad`: set on a leaf by `requires_grad_`, and true for every tensor
    /// with a `grad_fn`.
    pub fn requires_grad(&self) -> bool {
        // A lone flag that orders no other memory: relaxed is enough.
        self.requires_grad.load(Ordering::Relaxed)
    }

    /// `tensor.requires_grad_(value)`, seen through every handle to the tensor.
    pub fn set_requires_grad(&self, value: bool) {
        self.requires_grad.store(value, Ordering::Relaxed);
    }

    /// `tensor.grad_fn` with the tensor's output index; `None` for a leaf.
    pub fn grad_fn(&self) -> Option<GradHistory> {
        lock(&self.history).clone()
    }

    /// Makes the tensor the output of a backward node (or a leaf again, with `None`). A
    /// tensor with a history requires grad.
    pub fn set_grad_fn(&self, history: Option<GradHistory>) {
        if history.is_some() {
            self.set_requires_grad(true);
        }
        *lock(&self.history) = history;
    }

    /// `tensor.is_leaf`: no backward node made it.
    pub fn is_leaf(&self) -> bool {
        lock(&self.history).is_none()
    }

    /// `tensor.grad`.
    pub fn grad(&self) -> Option<Arc<TensorCell>> {
        lock(&self.grad).clone()
    }

    /// `tensor.grad = value`.
    pub fn set_grad(&self, grad: Option<Arc<TensorCell>>) {
        *lock(&self.grad) = grad;
    }

    /// `tensor.retains_grad`.
    pub fn retains_grad(&self) -> bool {
        self.retains_grad.load(Ordering::Relaxed)
    }

    /// `tensor.retain_grad()`.
    pub fn set_retains_grad(&self, value: bool) {
        self.retains_grad.store(value, Ordering::Relaxed);
    }

    /// The tensor's version counter (shared with its views and its base).
    pub fn version_counter(&self) -> Arc<VersionCounter> {
        Arc::clone(lock(&self.version).get_or_insert_with(Arc::default))
    }

    /// `tensor._version`.
    pub fn version(&self) -> u64 {
        lock(&self.version)
            .as_ref()
            .map_or(0, |counter| counter.current())
    }

    /// Records one in-place write to the tensor's data.
    pub fn bump_version(&self) {
        self.version_counter().bump();
    }

    /// Makes this tensor (a view) count its writes on `counter` (its base's).
    pub fn share_version_counter(&self, counter: Arc<VersionCounter>) {
        *lock(&self.version) = Some(counter);
    }
}

/// Sees every operator call the interpreter makes once installed (the autograd crate records
/// backward nodes through it). `run_kernel` runs the operator on `stack`, where its
/// `argument_count` arguments are on top; the hook runs it exactly once and may look at the
/// arguments before and the results after.
pub trait OperatorHook: Send + Sync {
    fn run_operator(
        &self,
        schema: &FunctionSchema,
        argument_count: usize,
        stack: &mut Vec<IValue>,
        run_kernel: &dyn Fn(&mut Vec<IValue>) -> Result<()>,
    ) -> Result<()>;
}

static OPERATOR_HOOK: OnceLock<Box<dyn OperatorHook>> = OnceLock::new();

/// Installs the process's operator hook; false (and `hook` dropped) when one already is.
pub fn install_operator_hook(hook: Box<dyn OperatorHook>) -> bool {
    OPERATOR_HOOK.set(hook).is_ok()
}

/// The installed hook, if any: one load and one branch per operator call when none is.
#[inline(always)]
pub fn operator_hook() -> Option<&'static dyn OperatorHook> {
    OPERATOR_HOOK.get().map(|hook| &**hook)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guard_sets_the_mode_and_restores_it_when_dropped() {
        assert!(is_grad_enabled());
        {
            let outer = GradModeGuard::new(false);
            assert!(!is_grad_enabled());
            assert!(outer.previous());
            {
                let _inner = GradModeGuard::new(true);
                assert!(is_grad_enabled());
            }
            assert!(!is_grad_enabled());
            // Set inside the guard's scope; the guard still restores what it replaced.
            set_grad_enabled(true);
        }
        assert!(is_grad_enabled());
    }

    #[test]
    fn each_thread_has_its_own_mode() {
        let _off = GradModeGuard::new(false);
        let other = std::thread::spawn(is_grad_enabled).join();
        assert!(matches!(other, Ok(true)));
        assert!(!is_grad_enabled());
    }
}
