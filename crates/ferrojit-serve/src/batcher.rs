//! Each model's bounded queue and the worker thread that drains it: requests whose non-batch
//! dimensions match are concatenated along dim 0, run once, and the result split back.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ferrojit::{DType, IValue, Tensor};
use tokio::sync::oneshot;

use crate::metrics::Metrics;
use crate::model::ServedModel;

/// How a model's requests are grouped into runs.
#[derive(Debug, Clone, Copy)]
pub struct BatchPolicy {
    /// The most rows (dim-0 entries) one run takes; 1 runs each request alone.
    pub max_batch_size: usize,
    /// How long the first request of a batch waits for others.
    pub max_queue_delay: Duration,
    /// Requests admitted and not yet answered, at most; more are refused (503).
    pub max_queue: usize,
}

/// Why a queued request got no result.
#[derive(Debug, Clone, PartialEq)]
pub enum JobError {
    /// The model refused these inputs or failed on them (400).
    Run(String),
    /// The server could not split a batched result or the model panicked (500).
    Internal(String),
}

/// A model's answer to one request.
pub type JobResult = Result<IValue, JobError>;

struct Job {
    arguments: Vec<IValue>,
    reply: oneshot::Sender<JobResult>,
}

/// The submitting side of one model's queue.
pub struct ModelQueue {
    sender: Mutex<Option<mpsc::Sender<Job>>>,
    pending: Arc<AtomicUsize>,
    capacity: usize,
    worker: Mutex<Option<JoinHandle<()>>>,
}

/// The queue is full (503), or the server is shutting down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitError {
    /// `max_queue` requests are already waiting.
    Full,
    /// The worker has stopped.
    Closed,
}

impl ModelQueue {
    /// Starts the worker thread of `model`.
    pub fn start(
        model: Arc<ServedModel>,
        policy: BatchPolicy,
        metrics: Arc<Metrics>,
    ) -> ModelQueue {
        let (sender, receiver) = mpsc::channel();
        let pending = Arc::new(AtomicUsize::new(0));
        let worker_pending = pending.clone();
        let worker = std::thread::Builder::new()
            .name(format!("ferrojit-serve-{}", model.name))
            .spawn(move || {
                Worker {
                    model,
                    policy,
                    metrics,
                    pending: worker_pending,
                    receiver,
                    carried: VecDeque::new(),
                }
                .run()
            })
            .expect("the OS refused to start a worker thread");
        ModelQueue {
            sender: Mutex::new(Some(sender)),
            pending,
            capacity: policy.max_queue.max(1),
            worker: Mutex::new(Some(worker)),
        }
    }

    /// Requests admitted and not yet answered.
    pub fn depth(&self) -> usize {
        self.pending.load(Ordering::SeqCst)
    }

    /// Queues a request; the receiver gets its result.
    pub fn submit(
        &self,
        arguments: Vec<IValue>,
    ) -> Result<oneshot::Receiver<JobResult>, SubmitError> {
        let admitted = self
            .pending
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |depth| {
                (depth < self.capacity).then_some(depth + 1)
            });
        if admitted.is_err() {
            return Err(SubmitError::Full);
        }
        let (reply, receiver) = oneshot::channel();
        let sender = self.sender.lock().unwrap_or_else(|p| p.into_inner());
        let sent = sender
            .as_ref()
            .map(|sender| sender.send(Job { arguments, reply }).is_ok())
            .unwrap_or(false);
        if !sent {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return Err(SubmitError::Closed);
        }
        Ok(receiver)
    }

    /// Stops taking requests and waits for the worker to answer those already queued.
    pub fn close(&self) {
        self.sender.lock().unwrap_or_else(|p| p.into_inner()).take();
        let worker = self.worker.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(worker) = worker {
            let _ = worker.join();
        }
    }
}

/// What must match for two requests to share a run: per argument, a tensor's dtype and
/// sizes after dim 0, or a non-tensor's value.
#[derive(Debug, Clone, PartialEq)]
enum ArgumentKey {
    Tensor(DType, Vec<usize>),
    Int(i64),
    Float(u64),
    Bool(bool),
    Str(String),
    None,
}

/// The batch key and row count of a request; `None` when it cannot be batched (no tensor,
/// a 0-d tensor, tensors disagreeing on dim 0, or an argument of another kind).
fn batch_key(arguments: &[IValue]) -> Option<(Vec<ArgumentKey>, usize)> {
    let mut rows = None;
    let mut key = Vec::with_capacity(arguments.len());
    for argument in arguments {
        key.push(match argument {
            IValue::Tensor(_) => {
                let tensor = argument.to_tensor().ok()?;
                let (&first, rest) = tensor.sizes().split_first()?;
                if *rows.get_or_insert(first) != first {
                    return None;
                }
                ArgumentKey::Tensor(tensor.dtype(), rest.to_vec())
            }
            IValue::Int(value) => ArgumentKey::Int(*value),
            IValue::Double(value) => ArgumentKey::Float(value.to_bits()),
            IValue::Bool(value) => ArgumentKey::Bool(*value),
            IValue::Str(value) => ArgumentKey::Str(value.to_string()),
            IValue::None => ArgumentKey::None,
            _ => return None,
        });
    }
    Some((key, rows?))
}

struct Worker {
    model: Arc<ServedModel>,
    policy: BatchPolicy,
    metrics: Arc<Metrics>,
    pending: Arc<AtomicUsize>,
    receiver: mpsc::Receiver<Job>,
    /// Requests taken while collecting a batch they did not fit; served next.
    carried: VecDeque<Job>,
}

impl Worker {
    fn run(mut self) {
        loop {
            let first = match self.carried.pop_front() {
                Some(job) => job,
                None => match self.receiver.recv() {
                    Ok(job) => job,
                    Err(_) => return,
                },
            };
            if first.reply.is_closed() {
                // Its client timed out or went away: skip the work.
                self.finish(1);
                continue;
            }
            let batch = self.collect(first);
            let size = batch.len();
            self.serve(batch);
            self.finish(size);
        }
    }

    fn finish(&self, count: usize) {
        let depth = self.pending.fetch_sub(count, Ordering::SeqCst) - count;
        self.metrics.set_queue_depth(&self.model.name, depth);
    }

    /// The first request and those that can share its run, waiting up to the queue delay.
    fn collect(&mut self, first: Job) -> Vec<Job> {
        let max_rows = self.policy.max_batch_size;
        if max_rows <= 1 {
            return vec![first];
        }
        let Some((key, mut rows)) = batch_key(&first.arguments) else {
            return vec![first];
        };
        let mut batch = vec![first];
        let fits = |job: &Job, rows: usize| match batch_key(&job.arguments) {
            Some((other, more)) if other == key && rows + more <= max_rows => Some(more),
            _ => None,
        };
        let mut index = 0;
        while index < self.carried.len() && rows < max_rows {
            match fits(&self.carried[index], rows) {
                Some(more) => {
                    rows += more;
                    batch.extend(self.carried.remove(index));
                }
                None => index += 1,
            }
        }
        let deadline = Instant::now() + self.policy.max_queue_delay;
        while rows < max_rows {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match self.receiver.recv_timeout(left) {
                Ok(job) => match fits(&job, rows) {
                    Some(more) => {
                        rows += more;
                        batch.push(job);
                    }
                    None => self.carried.push_back(job),
                },
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        batch
    }

    fn run_model(&self, arguments: Vec<IValue>) -> JobResult {
        match catch_unwind(AssertUnwindSafe(|| self.model.run(arguments))) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(message)) => Err(JobError::Run(message)),
            Err(_) => Err(JobError::Internal(format!(
                "running model '{}' panicked",
                self.model.name
            ))),
        }
    }

    fn serve(&self, mut batch: Vec<Job>) {
        batch.retain(|job| !job.reply.is_closed());
        if batch.is_empty() {
            return;
        }
        self.metrics.record_batch(&self.model.name, batch.len());
        if batch.len() <= 1 {
            if let Some(job) = batch.pop() {
                let _ = job.reply.send(self.run_model(job.arguments));
            }
            return;
        }
        let rows: Vec<usize> = batch
            .iter()
            .map(|job| batch_key(&job.arguments).map_or(0, |(_, rows)| rows))
            .collect();
        let results = match concatenate(&batch) {
            Ok(arguments) => match self.run_model(arguments) {
                Ok(result) => split(&result, &rows).map_err(JobError::Internal),
                Err(error) => Err(error),
            },
            Err(message) => Err(JobError::Internal(message)),
        };
        match results {
            Ok(parts) => {
                for (job, part) in batch.into_iter().zip(parts) {
                    let _ = job.reply.send(Ok(part));
                }
            }
            Err(error) => {
                for job in batch {
                    let _ = job.reply.send(Err(error.clone()));
                }
            }
        }
    }
}

/// The batched arguments: tensors concatenated along dim 0, other arguments (equal across
/// the batch by its key) from the first request.
fn concatenate(batch: &[Job]) -> Result<Vec<IValue>, String> {
    let first = &batch[0].arguments;
    let mut arguments = Vec::with_capacity(first.len());
    for (position, argument) in first.iter().enumerate() {
        if let IValue::Tensor(_) = argument {
            let tensors = batch
                .iter()
                .map(|job| job.arguments[position].to_tensor().map(|t| (*t).clone()))
                .collect::<Result<Vec<Tensor>, _>>()
                .map_err(|error| error.to_string())?;
            let joined = ferrojit_tensor::cat(&tensors, 0).map_err(|error| error.to_string())?;
            arguments.push(joined.into());
        } else {
            arguments.push(argument.clone());
        }
    }
    Ok(arguments)
}

fn split_tensor(value: &IValue, rows: &[usize]) -> Result<Vec<IValue>, String> {
    let tensor = value.to_tensor().map_err(|_| {
        format!(
            "the model returned a {} where batching needs a tensor; serve it without \
             --max-batch-size",
            value.type_of()
        )
    })?;
    let total: usize = rows.iter().sum();
    if tensor.sizes().first() != Some(&total) {
        return Err(format!(
            "the model's output has shape {:?}, not {total} rows along dim 0 for the {total} \
             batched rows: the model is not batchable; serve it without --max-batch-size",
            tensor.sizes()
        ));
    }
    let mut start = 0;
    let mut parts = Vec::with_capacity(rows.len());
    for &count in rows {
        let part = tensor
            .narrow(0, start as i64, count as i64)
            .map_err(|error| error.to_string())?
            .contiguous();
        parts.push(part.into());
        start += count;
    }
    Ok(parts)
}

/// Splits a batched result into each request's rows: a tensor, or a tuple or list of
/// tensors.
fn split(result: &IValue, rows: &[usize]) -> Result<Vec<IValue>, String> {
    let items = match result {
        IValue::Tuple(tuple) => Some((tuple.items.clone(), true)),
        IValue::List(list) => Some((list.to_vec(), false)),
        _ => None,
    };
    let Some((items, is_tuple)) = items else {
        return split_tensor(result, rows);
    };
    let columns = items
        .iter()
        .map(|item| split_tensor(item, rows))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((0..rows.len())
        .map(|request| {
            let parts: Vec<IValue> = columns
                .iter()
                .map(|column| column[request].clone())
                .collect();
            if is_tuple {
                IValue::tuple(parts)
            } else {
                IValue::list(ferrojit_ir::types::Type::Tensor, parts)
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(rows: usize, columns: usize) -> IValue {
        let values: Vec<f32> = (0..rows * columns).map(|v| v as f32).collect();
        Tensor::from_vec(values, &[rows, columns]).unwrap().into()
    }

    #[test]
    fn requests_batch_only_when_non_batch_dims_and_scalars_match() {
        let a = batch_key(&[tensor(2, 4), IValue::Double(0.5)]).unwrap();
        let b = batch_key(&[tensor(1, 4), IValue::Double(0.5)]).unwrap();
        let c = batch_key(&[tensor(1, 5), IValue::Double(0.5)]).unwrap();
        let d = batch_key(&[tensor(1, 4), IValue::Double(0.25)]).unwrap();
        assert_eq!((a.0 == b.0, a.1, b.1), (true, 2, 1));
        assert_ne!(a.0, c.0);
        assert_ne!(a.0, d.0);
        let scalar = Tensor::from_vec(vec![1.0_f32], &[]).unwrap();
        assert!(
            batch_key(&[scalar.into()]).is_none(),
            "a 0-d tensor has no batch dim"
        );
        assert!(batch_key(&[tensor(2, 4), tensor(3, 4)]).is_none());
    }

    #[test]
    fn split_gives_each_request_its_rows_and_refuses_unbatched_outputs() {
        let parts = split(&tensor(3, 2), &[1, 2]).unwrap();
        assert_eq!(
            parts[0].to_tensor().unwrap().to_vec::<f32>().unwrap(),
            vec![0.0, 1.0]
        );
        assert_eq!(
            parts[1].to_tensor().unwrap().to_vec::<f32>().unwrap(),
            vec![2.0, 3.0, 4.0, 5.0]
        );
        let tuple = IValue::tuple(vec![tensor(3, 1), tensor(3, 2)]);
        let parts = split(&tuple, &[2, 1]).unwrap();
        let IValue::Tuple(last) = &parts[1] else {
            panic!("a tuple result splits into tuples")
        };
        assert_eq!(last.items[1].to_tensor().unwrap().sizes(), &[1, 2]);
        let message = split(&tensor(2, 2), &[1, 2]).unwrap_err();
        assert!(message.contains("not batchable"), "{message}");
    }
}
