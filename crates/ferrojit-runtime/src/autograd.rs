//! Autograd state the runtime keeps: grad mode, per thread as PyTorch keeps it. ferrojit
//! records no autograd history, but programs read and set the mode (`with torch.no_grad():`
//! compiles to `aten::is_grad_enabled` and `aten::set_grad_enabled`), and a forked task
//! starts in the mode of the thread that forked it.

use std::cell::Cell;
use std::marker::PhantomData;

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
