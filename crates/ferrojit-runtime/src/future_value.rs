//! The value of `Future[T]` (`FutureValue`): a task that is queued, running (or suspended)
//! or finished, its result, and `wait`. Defined beside `IValue` because it is a value; what
//! the task is (a forked interpreter run) and the pool that runs it live in
//! `interpreter::future`, behind [`PendingTask`].

use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;

/// The work a pending future runs when a thread takes it (the interpreter's forked task).
pub(crate) trait PendingTask: Send {
    /// Runs the task on this thread until it finishes or suspends on another future.
    fn run(self: Box<Self>) -> TaskOutcome;
}

/// Runs once a future is done (re-queues a task suspended on it).
type Callback = Box<dyn FnOnce() + Send>;

enum FutureState {
    Pending(Box<dyn PendingTask>),
    Running,
    Done(Result<IValue>),
}

/// The value of `Future[T]`: a forked call that is queued, running (or suspended) or
/// finished.
pub struct FutureValue {
    shared: Mutex<Shared>,
    /// Queues this future for a thread to run its task again, after the task suspended.
    queue_again: fn(Arc<FutureValue>),
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

    /// A future whose `task` no thread has started yet. The caller queues it where threads
    /// will find it; `queue_again` does the same after the task suspends.
    pub(crate) fn pending(
        task: Box<dyn PendingTask>,
        queue_again: fn(Arc<FutureValue>),
    ) -> Arc<FutureValue> {
        FutureValue::with_state(FutureState::Pending(task), queue_again)
    }

    fn new(state: FutureState) -> Arc<FutureValue> {
        // A finished future never runs a task, so it is never queued again.
        FutureValue::with_state(state, |_| {})
    }

    fn with_state(state: FutureState, queue_again: fn(Arc<FutureValue>)) -> Arc<FutureValue> {
        Arc::new(FutureValue {
            shared: Mutex::new(Shared {
                state,
                callbacks: Vec::new(),
            }),
            queue_again,
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
    pub(crate) fn run_if_pending(self: &Arc<Self>) {
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
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task.run()))
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
                    (this.queue_again)(this);
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
pub(crate) enum TaskOutcome {
    Done(Result<IValue>),
    /// Stopped at a `wait` on this future; the task goes on once it is done.
    Suspended(Box<dyn PendingTask>, Arc<FutureValue>),
}

/// `wait(future)` on any value: the future's value or error.
pub fn wait(future: &IValue) -> Result<IValue> {
    expect_future(future)?.wait()
}

/// The future `wait` was given, or the error for any other value.
pub fn expect_future(value: &IValue) -> Result<&Arc<FutureValue>> {
    match value {
        IValue::Future(future) => Ok(future),
        other => Err(RuntimeError::Argument(format!(
            "wait() expects a Future, not a value of type {}",
            other.type_of()
        ))),
    }
}
