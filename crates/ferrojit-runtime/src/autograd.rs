//! Autograd state the runtime keeps: grad mode, per thread as PyTorch keeps it, and each
//! tensor handle's autograd metadata ([`AutogradMeta`], held by its
//! [`crate::ivalue::TensorCell`]). ferrojit records no autograd history, but programs read and
//! set the mode (`with torch.no_grad():` compiles to `aten::is_grad_enabled` and
//! `aten::set_grad_enabled`) and a tensor's `requires_grad`, and a forked task starts in the
//! mode of the thread that forked it.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// The autograd metadata of one tensor handle, PyTorch's `AutogradMeta`, which its
/// `TensorImpl` holds. It lives on the [`crate::ivalue::TensorCell`], not on the tensor value:
/// an operator that replaces the cell's tensor (an in-place op, an `out=` resize, `set_`,
/// `unsqueeze_`) keeps it, every handle to the cell sees one flag, and a new tensor an operator
/// returns starts without it.
///
/// Today it holds `requires_grad` only. When ferrojit records history, the node that made the
/// tensor (`grad_fn`) and its accumulated gradient (`grad`) belong here too, beside the flag,
/// each behind its own lock since handles on other threads read them.
#[derive(Debug, Default)]
pub struct AutogradMeta {
    requires_grad: AtomicBool,
}

impl AutogradMeta {
    pub fn new(requires_grad: bool) -> AutogradMeta {
        AutogradMeta {
            requires_grad: AtomicBool::new(requires_grad),
        }
    }

    /// `tensor.requires_grad`.
    pub fn requires_grad(&self) -> bool {
        // A lone flag that orders no other memory: relaxed is enough.
        self.requires_grad.load(Ordering::Relaxed)
    }

    /// `tensor.requires_grad_(value)`, seen through every handle to the tensor.
    pub fn set_requires_grad(&self, value: bool) {
        self.requires_grad.store(value, Ordering::Relaxed);
    }
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
