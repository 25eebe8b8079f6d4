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
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use super::code::Code;
use super::execute::{resume_forked, run_forked, ForkContext, ForkedRun, RunOptions, SuspendedRun};
use crate::autograd::{self, GradModeGuard};
use crate::error::RuntimeError;
pub use crate::future_value::{expect_future, wait, FutureValue};
use crate::future_value::{PendingTask, TaskOutcome};
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

impl PendingTask for ForkTask {
    fn run(self: Box<Self>) -> TaskOutcome {
        run_task(*self)
    }
}

/// Queues `task` on the inter-op pool and returns its future.
pub(crate) fn spawn(task: ForkTask) -> Arc<FutureValue> {
    let future = FutureValue::pending(Box::new(task), |future| pool().submit(future));
    pool().submit(future.clone());
    future
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
