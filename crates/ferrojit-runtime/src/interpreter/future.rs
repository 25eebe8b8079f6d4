//! Futures made by `prim::fork`, and the inter-op thread pool that runs them.
//!
//! `fork` queues its call as a task and returns a [`FutureValue`] at once; a pool of
//! inter-op threads (one per core, or `FERROJIT_INTEROP_THREADS`) runs queued tasks.
//! `wait` on a task no thread has started runs it on the waiting thread, and blocks only
//! on a task that is already running. So every blocked thread waits for a thread that is
//! making progress, and a fixed pool never deadlocks on tasks queued behind it. A forked
//! task's error is kept in its future and raised by every `wait`, as PyTorch does.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use super::code::Code;
use super::execute::{run_forked, ForkContext, RunOptions};
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::object::MethodSource;

/// A call `prim::fork` made, waiting for a thread.
pub(crate) struct ForkTask {
    pub code: Arc<Code>,
    pub inputs: Vec<IValue>,
    pub functions: Arc<dyn MethodSource>,
    pub options: RunOptions,
    pub context: ForkContext,
    /// The forking thread's grad mode, which the task runs under (PyTorch propagates it).
    pub grad_enabled: bool,
}

enum FutureState {
    Pending(Box<ForkTask>),
    Running,
    Done(Result<IValue>),
}

/// The value of `Future[T]`: a forked call that is queued, running or finished.
pub struct FutureValue {
    state: Mutex<FutureState>,
    finished: Condvar,
}

impl fmt::Debug for FutureValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &*self.lock() {
            FutureState::Pending(_) => "pending",
            FutureState::Running => "running",
            FutureState::Done(_) => "done",
        };
        f.debug_struct("FutureValue")
            .field("state", &state)
            .finish()
    }
}

impl FutureValue {
    /// A future that already holds `result` (forks run in place, see `execute`).
    pub fn completed(result: Result<IValue>) -> Arc<FutureValue> {
        Arc::new(FutureValue {
            state: Mutex::new(FutureState::Done(result)),
            finished: Condvar::new(),
        })
    }

    /// Queues `task` on the inter-op pool and returns its future.
    pub(crate) fn spawn(task: ForkTask) -> Arc<FutureValue> {
        let future = Arc::new(FutureValue {
            state: Mutex::new(FutureState::Pending(Box::new(task))),
            finished: Condvar::new(),
        });
        pool().submit(future.clone());
        future
    }

    fn lock(&self) -> MutexGuard<'_, FutureState> {
        // Only whole-state replacements happen under the lock, so a poisoned one is intact.
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Whether the value (or error) is there.
    pub fn is_done(&self) -> bool {
        matches!(&*self.lock(), FutureState::Done(_))
    }

    /// Runs the task on this thread if no thread has started it yet.
    fn run_if_pending(&self) {
        let task = {
            let mut state = self.lock();
            if !matches!(&*state, FutureState::Pending(_)) {
                return;
            }
            match std::mem::replace(&mut *state, FutureState::Running) {
                FutureState::Pending(task) => task,
                _ => return,
            }
        };
        // A panic (a kernel bug) must still finish the future, or its waiters would hang.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_task(*task)))
            .unwrap_or_else(|_| {
                Err(RuntimeError::Other(
                    "a forked task panicked; this is a bug in ferrojit".to_string(),
                ))
            });
        *self.lock() = FutureState::Done(result);
        self.finished.notify_all();
    }

    /// `wait(future)`: the value, or the error the forked code raised. As in PyTorch, the
    /// error's traceback starts again at the `wait`: the forked code's frames are dropped.
    pub fn wait(&self) -> Result<IValue> {
        self.run_if_pending();
        let mut state = self.lock();
        loop {
            match &*state {
                FutureState::Done(result) => {
                    return result.clone().map_err(|error| error.root().clone())
                }
                _ => {
                    state = self
                        .finished
                        .wait(state)
                        .unwrap_or_else(|poison| poison.into_inner());
                }
            }
        }
    }
}

fn run_task(task: ForkTask) -> Result<IValue> {
    let ForkTask {
        code,
        inputs,
        functions,
        options,
        context,
        grad_enabled,
    } = task;
    let saved = crate::ops::prim_lang_ops::grad_enabled();
    crate::ops::prim_lang_ops::set_grad_enabled_flag(grad_enabled);
    let outputs = run_forked(code, inputs, functions, &options, context);
    crate::ops::prim_lang_ops::set_grad_enabled_flag(saved);
    let mut outputs = outputs?;
    match (outputs.pop(), outputs.is_empty()) {
        (Some(value), true) => Ok(value),
        _ => Err(RuntimeError::InvalidGraph(
            "a forked subgraph must return exactly one value".to_string(),
        )),
    }
}

/// `wait(future)` on any value: the future's value or error.
pub fn wait(future: &IValue) -> Result<IValue> {
    match future {
        IValue::Future(future) => future.wait(),
        other => Err(RuntimeError::Argument(format!(
            "wait() expects a Future, not a value of type {}",
            other.type_of()
        ))),
    }
}

/// The inter-op pool: a queue of futures and threads that run them in order.
struct InterOpPool {
    queue: Mutex<VecDeque<Arc<FutureValue>>>,
    queued: Condvar,
}

fn interop_threads() -> usize {
    std::env::var("FERROJIT_INTEROP_THREADS")
        .ok()
        .and_then(|text| text.trim().parse::<usize>().ok())
        .filter(|&count| count > 0)
        // At least two, so one task can run while another thread waits on it.
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get().max(2)))
        .min(64)
}

fn pool() -> &'static InterOpPool {
    static POOL: OnceLock<&'static InterOpPool> = OnceLock::new();
    POOL.get_or_init(|| {
        let pool: &'static InterOpPool = Box::leak(Box::new(InterOpPool {
            queue: Mutex::new(VecDeque::new()),
            queued: Condvar::new(),
        }));
        for index in 0..interop_threads() {
            // A thread that cannot start only costs parallelism: `wait` runs queued tasks.
            let _ = std::thread::Builder::new()
                .name(format!("ferrojit-interop-{index}"))
                .stack_size(16 << 20)
                .spawn(move || pool.work());
        }
        pool
    })
}

impl InterOpPool {
    fn submit(&self, future: Arc<FutureValue>) {
        self.queue
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .push_back(future);
        self.queued.notify_one();
    }

    fn work(&self) {
        loop {
            let future = {
                let mut queue = self
                    .queue
                    .lock()
                    .unwrap_or_else(|poison| poison.into_inner());
                loop {
                    if let Some(future) = queue.pop_front() {
                        break future;
                    }
                    queue = self
                        .queued
                        .wait(queue)
                        .unwrap_or_else(|poison| poison.into_inner());
                }
            };
            future.run_if_pending();
        }
    }
}
