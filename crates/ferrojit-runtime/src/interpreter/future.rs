//! Futures made by `prim::fork`, and the inter-op thread pool that runs them.
//!
//! `fork` queues its call as a task and returns a [`FutureValue`] at once; a pool of
//! inter-op threads (one per core, or `FERROJIT_INTEROP_THREADS`) runs queued tasks.
//! `wait` on a task no thread has started runs it on the waiting thread. `wait` on a task
//! another thread is running suspends a forked task, as PyTorch's interpreter does: its
//! frames are kept with the awaited future, its thread goes back to the pool, and the task
//! is queued again when that future is done. Only the caller's own thread (the run that is
//! not a forked task) blocks. A forked task's error is kept in its future and raised by
//! every `wait`, as PyTorch does.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use super::code::Code;
use super::execute::{resume_forked, run_forked, ForkContext, ForkedRun, RunOptions, SuspendedRun};
use crate::autograd::{self, GradModeGuard};
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::object::MethodSource;

/// What a task runs: a forked call from its start, or a suspended run from where it stopped.
pub(crate) enum TaskBody {
    Start {
        code: Arc<Code>,
        inputs: Vec<IValue>,
    },
    Resume(SuspendedRun),
}

/// A call `prim::fork` made (or a suspended one), waiting for a thread.
pub(crate) struct ForkTask {
    pub body: TaskBody,
    pub functions: Arc<dyn MethodSource>,
    pub options: RunOptions,
    pub context: ForkContext,
    /// The grad mode the task runs under: the forking thread's (PyTorch propagates it), or
    /// the task's own when it suspended.
    pub grad_enabled: bool,
}

/// Runs once a future is done (re-queues a task suspended on it).
type Callback = Box<dyn FnOnce() + Send>;

enum FutureState {
    Pending(Box<ForkTask>),
    Running,
    Done(Result<IValue>),
}

/// The value of `Future[T]`: a forked call that is queued, running (or suspended) or
/// finished.
pub struct FutureValue {
    shared: Mutex<Shared>,
    /// Signalled when the state changes (done, or a suspended task queued again).
    changed: Condvar,
}

/// What a future's lock guards.
struct Shared {
    state: FutureState,
    /// Run once, when the future is done.
    callbacks: Vec<Callback>,
}

impl fmt::Debug for FutureValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.lock().state {
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
        FutureValue::new(FutureState::Done(result))
    }

    /// Queues `task` on the inter-op pool and returns its future.
    pub(crate) fn spawn(task: ForkTask) -> Arc<FutureValue> {
        let future = FutureValue::new(FutureState::Pending(Box::new(task)));
        pool().submit(future.clone());
        future
    }

    fn new(state: FutureState) -> Arc<FutureValue> {
        Arc::new(FutureValue {
            shared: Mutex::new(Shared {
                state,
                callbacks: Vec::new(),
            }),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        // Only whole-state replacements happen under the lock, so a poisoned one is intact.
        self.shared
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Whether the value (or error) is there.
    pub fn is_done(&self) -> bool {
        matches!(&self.lock().state, FutureState::Done(_))
    }

    /// Runs the task on this thread if no thread has started it yet (or it was suspended
    /// and is queued again).
    fn run_if_pending(self: &Arc<Self>) {
        let task = {
            let mut shared = self.lock();
            if !matches!(&shared.state, FutureState::Pending(_)) {
                return;
            }
            match std::mem::replace(&mut shared.state, FutureState::Running) {
                FutureState::Pending(task) => task,
                _ => return,
            }
        };
        // A panic (a kernel bug) must still finish the future, or its waiters would hang.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_task(*task)))
            .unwrap_or_else(|_| {
                TaskOutcome::Done(Err(RuntimeError::Other(
                    "a forked task panicked; this is a bug in ferrojit".to_string(),
                )))
            });
        match outcome {
            TaskOutcome::Done(result) => self.finish(result),
            TaskOutcome::Suspended(task, awaited) => {
                let this = self.clone();
                awaited.when_done(Box::new(move || {
                    this.lock().state = FutureState::Pending(task);
                    this.changed.notify_all();
                    pool().submit(this);
                }));
            }
        }
    }

    /// Stores the result, wakes the waiters and runs the callbacks.
    fn finish(&self, result: Result<IValue>) {
        let callbacks = {
            let mut shared = self.lock();
            shared.state = FutureState::Done(result);
            std::mem::take(&mut shared.callbacks)
        };
        self.changed.notify_all();
        for callback in callbacks {
            callback();
        }
    }

    /// Runs `callback` once the future is done: now, on this thread, if it already is.
    fn when_done(&self, callback: Callback) {
        {
            let mut shared = self.lock();
            if !matches!(&shared.state, FutureState::Done(_)) {
                shared.callbacks.push(callback);
                return;
            }
        }
        callback();
    }

    /// The result if the future is done, after running its task here if no thread has
    /// started it; `None` while another thread runs it (or it is suspended). As in PyTorch,
    /// an error's traceback starts again at the `wait`, and the forked code's traceback
    /// follows it in the message.
    pub(crate) fn try_take_result(self: &Arc<Self>) -> Option<Result<IValue>> {
        self.run_if_pending();
        match &self.lock().state {
            FutureState::Done(result) => Some(result.clone().map_err(|e| e.raised_through_wait())),
            _ => None,
        }
    }

    /// Blocks this thread until the future is done, running its task here whenever it is
    /// queued (not yet started, or suspended and ready to go on).
    pub(crate) fn block_until_done(self: &Arc<Self>) {
        loop {
            self.run_if_pending();
            let shared = self.lock();
            match &shared.state {
                FutureState::Done(_) => return,
                FutureState::Pending(_) => continue,
                FutureState::Running => {
                    drop(
                        self.changed
                            .wait(shared)
                            .unwrap_or_else(|poison| poison.into_inner()),
                    );
                }
            }
        }
    }

    /// `wait(future)`: the value, or the error the forked code raised. Blocks this thread
    /// (the interpreter suspends forked tasks instead, see `PrimOp::Wait`).
    pub fn wait(self: &Arc<Self>) -> Result<IValue> {
        loop {
            if let Some(result) = self.try_take_result() {
                return result;
            }
            self.block_until_done();
        }
    }
}

/// How running a task on a thread ended.
enum TaskOutcome {
    Done(Result<IValue>),
    /// Stopped at a `wait` on this future; the task goes on once it is done.
    Suspended(Box<ForkTask>, Arc<FutureValue>),
}

fn run_task(task: ForkTask) -> TaskOutcome {
    let ForkTask {
        body,
        functions,
        options,
        context,
        grad_enabled,
    } = task;
    // The task runs in its own grad mode; the thread's comes back when the guard drops.
    let grad_mode = GradModeGuard::new(grad_enabled);
    let run = match body {
        TaskBody::Start { code, inputs } => {
            run_forked(code, inputs, functions.clone(), &options, context.clone())
        }
        TaskBody::Resume(run) => resume_forked(run, functions.clone(), &options, context.clone()),
    };
    // The task's grad mode as it stopped, for when it goes on.
    let task_grad_enabled = autograd::is_grad_enabled();
    drop(grad_mode);
    match run {
        ForkedRun::Finished(outputs) => TaskOutcome::Done(outputs.and_then(|mut outputs| {
            match (outputs.pop(), outputs.is_empty()) {
                (Some(value), true) => Ok(value),
                _ => Err(RuntimeError::InvalidGraph(
                    "a forked subgraph must return exactly one value".to_string(),
                )),
            }
        })),
        ForkedRun::Suspended(run, awaited) => TaskOutcome::Suspended(
            Box::new(ForkTask {
                body: TaskBody::Resume(run),
                functions,
                options,
                context,
                grad_enabled: task_grad_enabled,
            }),
            awaited,
        ),
    }
}

/// `wait(future)` on any value: the future's value or error.
pub fn wait(future: &IValue) -> Result<IValue> {
    expect_future(future)?.wait()
}

/// The future `wait` was given, or the error for any other value.
pub(crate) fn expect_future(value: &IValue) -> Result<&Arc<FutureValue>> {
    match value {
        IValue::Future(future) => Ok(future),
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
