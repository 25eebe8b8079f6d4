//! The interpreter loop: runs `Code` with one operand stack shared by all frames and an
//! explicit frame stack, so TorchScript calls never recurse on the Rust stack.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ferrojit_ir::Graph;

use super::code::{compile, Code, CompiledOperator, Instruction, Operand, PrimOp};
use super::executor::{GraphExecutor, GraphOptimizer};
use super::fusion::{run_type_check, try_backend, FusionBackend};
use super::future::{expect_future, spawn, ForkTask, FutureValue, TaskBody};
use super::observer::{run_observed_operator, OperatorObserver};
use crate::error::{Result, RuntimeError};
use crate::ivalue::{DictValue, IValue, ListValue, TupleValue};
use crate::number_op::{NumberOp, NumberValue};
use crate::object::{MethodSource, NoMethods, Object};

/// Receives each line `prim::Print` produces (without the trailing newline).
pub type PrintHandler = Arc<dyn Fn(&str) + Send + Sync>;

/// Limits and hooks for one run.
#[derive(Clone)]
pub struct RunOptions {
    /// Fail with "step budget of N exceeded" after N instructions (all frames together).
    pub max_steps: Option<u64>,
    /// Fail when calls nest deeper than this (the entry frame counts as depth 1).
    pub max_call_depth: usize,
    /// Where `print` goes; stdout when unset.
    pub print: Option<PrintHandler>,
    /// Sees every operator call of the run, forked tasks included (see `observer`).
    pub observer: Option<Arc<dyn OperatorObserver>>,
    /// Builds the specialized plans a function's `GraphExecutor` runs (PyTorch's optimizing
    /// graph executor). `None` runs each graph as written: the `--no-optimize` behaviour,
    /// and the default here, since the optimizer lives above the runtime.
    pub optimizer: Option<Arc<dyn GraphOptimizer>>,
    /// Runs `prim::FusionGroup` nodes as native code (see `fusion`); without one, or for a
    /// group it declines, the interpreter runs the group's subgraph.
    pub fusion_backend: Option<Arc<dyn FusionBackend>>,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            max_steps: None,
            max_call_depth: 1000,
            print: None,
            observer: None,
            optimizer: None,
            fusion_backend: None,
        }
    }
}

impl fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunOptions")
            .field("max_steps", &self.max_steps)
            .field("max_call_depth", &self.max_call_depth)
            .field("print", &self.print.is_some())
            .field("observer", &self.observer.is_some())
            .field("optimizer", &self.optimizer.is_some())
            .field("fusion_backend", &self.fusion_backend.is_some())
            .finish()
    }
}

/// Runs `graph` on `inputs` and returns its outputs. The graph is compiled on every call;
/// use [`run_shared_graph`] to reuse compiled code.
pub fn run_graph(
    graph: &Graph,
    inputs: Vec<IValue>,
    methods: &dyn MethodSource,
) -> Result<Vec<IValue>> {
    run_graph_with_options(graph, inputs, methods, &RunOptions::default())
}

pub fn run_graph_with_options(
    graph: &Graph,
    inputs: Vec<IValue>,
    methods: &dyn MethodSource,
    options: &RunOptions,
) -> Result<Vec<IValue>> {
    let code = Arc::new(compile(graph)?);
    run_code(code, inputs, methods, options)
}

/// Runs a shared graph. It is compiled on every call: hold a
/// [`GraphExecutor`](super::executor::GraphExecutor) to compile once and run many times.
pub fn run_shared_graph(
    graph: &Arc<Graph>,
    inputs: Vec<IValue>,
    methods: &dyn MethodSource,
    options: &RunOptions,
) -> Result<Vec<IValue>> {
    run_graph_with_options(graph, inputs, methods, options)
}

struct Frame {
    code: Arc<Code>,
    pc: usize,
    registers: Vec<IValue>,
    /// Where `CallFunction` looks functions up: the object's source inside methods, the
    /// caller-supplied one at the entry frame (`None`).
    functions: Option<Arc<dyn MethodSource>>,
    /// For the frame running forked code (`prim::fork`): the operand stack height below
    /// its inputs, where its future goes when it returns or fails.
    fork_base: Option<usize>,
}

impl Frame {
    fn new(code: Arc<Code>, functions: Option<Arc<dyn MethodSource>>) -> Frame {
        let registers = vec![IValue::None; code.register_count];
        Frame {
            code,
            pc: 0,
            registers,
            functions,
            fork_base: None,
        }
    }
}

/// Where each frame is: the location of its last instruction run (the one that failed,
/// or the call the frame above it came from), outermost frame first.
#[cold]
fn traceback_of(frames: &[Frame]) -> Vec<ferrojit_ir::SourceLocation> {
    frames
        .iter()
        .filter_map(|frame| frame.code.location_at(frame.pc.checked_sub(1)?).cloned())
        .collect()
}

#[cold]
#[inline(never)]
fn corrupt(message: &str) -> RuntimeError {
    RuntimeError::InvalidGraph(format!("corrupt code: {message}"))
}

fn pop(stack: &mut Vec<IValue>) -> Result<IValue> {
    match stack.pop() {
        Some(value) => Ok(value),
        None => Err(corrupt("operand stack underflow")),
    }
}

fn pop_n(stack: &mut Vec<IValue>, count: usize) -> Result<Vec<IValue>> {
    if stack.len() < count {
        return Err(corrupt("operand stack underflow"));
    }
    Ok(stack.split_off(stack.len() - count))
}

/// Why the interpreter left a frame's instruction loop.
enum Control {
    Call(Frame),
    Return,
    /// The step budget ran out before the next instruction.
    OutOfSteps,
    /// `prim::fork`: queue the code on the inter-op pool (or run it in place).
    Fork {
        code: Arc<Code>,
        num_inputs: usize,
    },
    /// `wait` on a future another thread is running: suspend (forked tasks) or block.
    Wait(Arc<FutureValue>),
}

/// How deeply forks may nest and still go to the inter-op pool. A `wait` can run a queued
/// task on the waiting thread's stack, so nesting is bounded; deeper forks run in place.
const MAX_FORK_NESTING: usize = 32;

/// Steps handed from the shared budget to one running interpreter at a time.
const STEP_CHUNK: u64 = 4096;

/// What a run inherits from the run that forked it.
#[derive(Clone, Default)]
pub(crate) struct ForkContext {
    /// The steps not yet handed out, shared by a run and all its forked tasks; `None`
    /// when `max_steps` is unset.
    budget: Option<Arc<AtomicU64>>,
    /// Frames below this run's entry frame, counted against `max_call_depth`.
    base_depth: usize,
    /// How many forks enclose this run.
    fork_nesting: usize,
}

/// Takes up to `STEP_CHUNK` steps from the shared budget (or all of it when unlimited).
fn claim_steps(budget: &Option<Arc<AtomicU64>>) -> u64 {
    let Some(budget) = budget else {
        return u64::MAX;
    };
    let mut left = budget.load(Ordering::Relaxed);
    loop {
        let take = left.min(STEP_CHUNK);
        match budget.compare_exchange_weak(left, left - take, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => return take,
            Err(now) => left = now,
        }
    }
}

/// Runs compiled code; `inputs` must match the graph's inputs.
pub fn run_code(
    code: Arc<Code>,
    inputs: Vec<IValue>,
    methods: &dyn MethodSource,
    options: &RunOptions,
) -> Result<Vec<IValue>> {
    let context = ForkContext {
        budget: options
            .max_steps
            .map(|steps| Arc::new(AtomicU64::new(steps))),
        ..ForkContext::default()
    };
    run_with_context(code, inputs, methods, None, options, context)
}

/// A forked task's run that stopped at a `wait` on a future another thread is running:
/// its frames and operand stack, resumed by [`resume_forked`] once that future is done.
pub(crate) struct SuspendedRun {
    frames: Vec<Frame>,
    stack: Vec<IValue>,
}

/// How a forked task's run ended.
pub(crate) enum ForkedRun {
    Finished(Result<Vec<IValue>>),
    /// Waiting for this future; the inter-op thread is free for other tasks meanwhile.
    Suspended(SuspendedRun, Arc<FutureValue>),
}

/// Runs a forked task: called on an inter-op thread, or by `wait` on the waiting thread.
pub(crate) fn run_forked(
    code: Arc<Code>,
    inputs: Vec<IValue>,
    functions: Arc<dyn MethodSource>,
    options: &RunOptions,
    context: ForkContext,
) -> ForkedRun {
    if inputs.len() != code.num_inputs {
        return ForkedRun::Finished(Err(input_count_error(&code, &inputs)));
    }
    let run = SuspendedRun {
        frames: vec![Frame::new(code, Some(functions.clone()))],
        stack: inputs,
    };
    resume_forked(run, functions, options, context)
}

/// Runs a forked task from where it stopped (or from its start).
pub(crate) fn resume_forked(
    run: SuspendedRun,
    functions: Arc<dyn MethodSource>,
    options: &RunOptions,
    context: ForkContext,
) -> ForkedRun {
    let SuspendedRun {
        mut frames,
        mut stack,
    } = run;
    match drive(
        &mut frames,
        &mut stack,
        functions.as_ref(),
        options,
        &context,
        true,
    ) {
        Ok(None) => ForkedRun::Finished(Ok(stack)),
        Ok(Some(awaited)) => ForkedRun::Suspended(SuspendedRun { frames, stack }, awaited),
        Err(error) => ForkedRun::Finished(Err(error)),
    }
}

fn input_count_error(code: &Code, inputs: &[IValue]) -> RuntimeError {
    RuntimeError::Argument(format!(
        "expected {} input(s) but received {}",
        code.num_inputs,
        inputs.len()
    ))
}

fn run_with_context(
    code: Arc<Code>,
    inputs: Vec<IValue>,
    methods: &dyn MethodSource,
    entry_functions: Option<Arc<dyn MethodSource>>,
    options: &RunOptions,
    context: ForkContext,
) -> Result<Vec<IValue>> {
    if inputs.len() != code.num_inputs {
        return Err(input_count_error(&code, &inputs));
    }
    let mut stack = inputs;
    let mut frames = vec![Frame::new(code, entry_functions)];
    // Not suspendable: this thread is the caller's, which needs the result to go on.
    drive(&mut frames, &mut stack, methods, options, &context, false)?;
    Ok(stack)
}

/// Runs `frames` until they return (`None`), or, when `suspendable`, until a `wait` finds
/// its future running on another thread (`Some(that future)`; the frames are left ready to
/// re-run the `wait`). Errors carry the frames' traceback.
fn drive(
    frames: &mut Vec<Frame>,
    stack: &mut Vec<IValue>,
    methods: &dyn MethodSource,
    options: &RunOptions,
    context: &ForkContext,
    suspendable: bool,
) -> Result<Option<Arc<FutureValue>>> {
    // Steps this run may take before claiming more from the shared budget.
    let mut steps_left = claim_steps(&context.budget);
    // The one check for an observer: each choice runs its own copy of the loop.
    let run = if options.observer.is_some() {
        run_frames::<true>
    } else {
        run_frames::<false>
    };
    let result = run(
        frames,
        stack,
        &mut steps_left,
        methods,
        options,
        context,
        suspendable,
    )
    .map_err(|error| error.with_outer_frames(traceback_of(frames)));
    // Steps claimed but not taken go back, so a run without forks gets exactly `max_steps`.
    if let Some(budget) = &context.budget {
        budget.fetch_add(steps_left, Ordering::Relaxed);
    }
    result
}

/// `OBSERVED`: the run has an observer, which sees every operator call (see `observer`).
fn run_frames<const OBSERVED: bool>(
    frames: &mut Vec<Frame>,
    stack: &mut Vec<IValue>,
    steps_left: &mut u64,
    methods: &dyn MethodSource,
    options: &RunOptions,
    context: &ForkContext,
    suspendable: bool,
) -> Result<Option<Arc<FutureValue>>> {
    loop {
        let Some(frame) = frames.last_mut() else {
            return Err(corrupt("no frame"));
        };
        let control = match run_frame::<OBSERVED>(frame, stack, steps_left, methods, options) {
            Ok(control) => control,
            // An error inside code forked in place is kept in its future, for `wait`.
            Err(error) => match frames.iter().rposition(|f| f.fork_base.is_some()) {
                Some(index) => {
                    let base = frames[index].fork_base.unwrap_or(0);
                    let error = error.with_outer_frames(traceback_of(&frames[index..]));
                    frames.truncate(index);
                    stack.truncate(base);
                    stack.push(IValue::Future(FutureValue::completed(Err(error))));
                    continue;
                }
                None => return Err(error),
            },
        };
        match control {
            Control::OutOfSteps => {
                *steps_left = claim_steps(&context.budget);
                if *steps_left == 0 {
                    return Err(RuntimeError::StepBudgetExceeded(
                        options.max_steps.unwrap_or(u64::MAX),
                    ));
                }
            }
            Control::Call(callee) => {
                if context.base_depth + frames.len() >= options.max_call_depth {
                    return Err(RuntimeError::CallDepthExceeded(options.max_call_depth));
                }
                frames.push(callee);
            }
            Control::Fork { code, num_inputs } => {
                let base = stack
                    .len()
                    .checked_sub(num_inputs)
                    .ok_or_else(|| corrupt("operand stack underflow"))?;
                let functions = frames
                    .last()
                    .and_then(|frame| frame.functions.clone())
                    .or_else(|| methods.shared());
                match functions {
                    Some(functions) if context.fork_nesting < MAX_FORK_NESTING => {
                        let task = ForkTask {
                            body: TaskBody::Start {
                                code,
                                inputs: stack.split_off(base),
                            },
                            functions,
                            options: options.clone(),
                            context: ForkContext {
                                budget: context.budget.clone(),
                                base_depth: context.base_depth + frames.len(),
                                fork_nesting: context.fork_nesting + 1,
                            },
                            grad_enabled: crate::autograd::is_grad_enabled(),
                        };
                        stack.push(IValue::Future(spawn(task)));
                    }
                    // No shareable function source, or nested too deeply: run it now, to
                    // completion, as a frame of this run.
                    functions => {
                        if context.base_depth + frames.len() >= options.max_call_depth {
                            return Err(RuntimeError::CallDepthExceeded(options.max_call_depth));
                        }
                        let mut callee = Frame::new(code, functions);
                        callee.fork_base = Some(base);
                        frames.push(callee);
                    }
                }
            }
            Control::Return => {
                let finished = frames.pop();
                if finished.is_some_and(|f| f.fork_base.is_some()) {
                    let value = pop(stack)?;
                    stack.push(IValue::Future(FutureValue::completed(Ok(value))));
                }
                if frames.is_empty() {
                    return Ok(None);
                }
            }
            Control::Wait(future) => {
                // The `wait` runs again when this frame resumes, and finds the value.
                if let Some(frame) = frames.last_mut() {
                    frame.pc = frame.pc.saturating_sub(1);
                }
                if suspendable {
                    return Ok(Some(future));
                }
                future.block_until_done();
            }
        }
    }
}

fn register(registers: &mut [IValue], index: usize) -> Result<&mut IValue> {
    match registers.get_mut(index) {
        Some(slot) => Ok(slot),
        None => Err(corrupt("register out of range")),
    }
}

/// Runs `$write` with `$value` bound to a copy of the `IValue` at `$source` (a reference).
/// Numbers are read field by field and rebuilt: a register or stack slot just written
/// field by field and read back in one piece stalls store forwarding.
macro_rules! with_copy {
    ($source:expr, |$value:ident| $write:expr) => {
        match $source {
            IValue::Int(v) => {
                let $value = IValue::Int(*v);
                $write
            }
            IValue::Bool(v) => {
                let $value = IValue::Bool(*v);
                $write
            }
            IValue::Double(v) => {
                let $value = IValue::Double(*v);
                $write
            }
            IValue::None => {
                let $value = IValue::None;
                $write
            }
            other => {
                let $value = other.clone();
                $write
            }
        }
    };
}

/// `with_copy!` that moves the value out of the register at `$source`. A number stays in
/// the register: it owns nothing, and the register is written before it is read again, so
/// keeping it keeps the register's tag for `store_number`.
macro_rules! with_taken {
    ($source:expr, |$value:ident| $write:expr) => {{
        let slot: &mut IValue = $source;
        match slot {
            IValue::Int(v) => {
                let $value = IValue::Int(*v);
                $write
            }
            IValue::Bool(v) => {
                let $value = IValue::Bool(*v);
                $write
            }
            IValue::Double(v) => {
                let $value = IValue::Double(*v);
                $write
            }
            IValue::None => {
                let $value = IValue::None;
                $write
            }
            other => {
                let $value = std::mem::take(other);
                $write
            }
        }
    }};
}

/// Pops the top of the stack into a register (numbers field by field, see `with_copy!`).
#[inline(always)]
fn pop_into(stack: &mut Vec<IValue>, slot: &mut IValue) -> Result<()> {
    let Some(len) = stack.len().checked_sub(1) else {
        return Err(corrupt("operand stack underflow"));
    };
    match number_of(&stack[len]) {
        Some(number) => store_number(slot, number),
        None => with_taken!(&mut stack[len], |value| set_register(slot, value)),
    }
    // Only the emptied slot's tag is read to drop it.
    stack.truncate(len);
    Ok(())
}

/// Pops a bool, reading a `Bool` on top of the stack field by field (see `with_copy!`).
#[inline(always)]
fn pop_bool(stack: &mut Vec<IValue>) -> Result<bool> {
    match stack.last() {
        Some(&IValue::Bool(value)) => {
            stack.truncate(stack.len() - 1);
            Ok(value)
        }
        _ => pop(stack)?.to_bool(),
    }
}

/// Pushes a number result (see `with_copy!` for why each arm pushes its own variant).
#[inline(always)]
fn push_number(stack: &mut Vec<IValue>, value: NumberValue) {
    match value {
        NumberValue::Int(v) => stack.push(IValue::Int(v)),
        NumberValue::Float(v) => stack.push(IValue::Double(v)),
        NumberValue::Bool(v) => stack.push(IValue::Bool(v)),
    }
}

/// Stores a number result in a register. A register that already holds a number of that
/// kind (a loop's registers, iteration after iteration) only gets its payload written.
#[inline(always)]
fn store_number(slot: &mut IValue, value: NumberValue) {
    match (slot, value) {
        (IValue::Int(x), NumberValue::Int(v)) => *x = v,
        (IValue::Double(x), NumberValue::Float(v)) => *x = v,
        (IValue::Bool(x), NumberValue::Bool(v)) => *x = v,
        (slot, NumberValue::Int(v)) => set_register(slot, IValue::Int(v)),
        (slot, NumberValue::Float(v)) => set_register(slot, IValue::Double(v)),
        (slot, NumberValue::Bool(v)) => set_register(slot, IValue::Bool(v)),
    }
}

/// The number a value holds, read field by field.
#[inline(always)]
fn number_of(value: &IValue) -> Option<NumberValue> {
    match *value {
        IValue::Int(v) => Some(NumberValue::Int(v)),
        IValue::Double(v) => Some(NumberValue::Float(v)),
        IValue::Bool(v) => Some(NumberValue::Bool(v)),
        _ => None,
    }
}

/// Names the operator in a tensor error its kernel raised without a name.
#[cold]
#[inline(never)]
fn operator_error(error: RuntimeError, operator: &CompiledOperator) -> RuntimeError {
    match error {
        RuntimeError::Tensor {
            operator: name,
            source,
        } if name.is_empty() => RuntimeError::Tensor {
            operator: operator.schema.full_name(),
            source,
        },
        other => other,
    }
}

fn run_operator(operator: &CompiledOperator, stack: &mut Vec<IValue>) -> Result<()> {
    // Autograd's hook (when a crate installed one) records backward nodes around the kernel.
    if let Some(hook) = crate::autograd::operator_hook() {
        let count = if operator.schema.is_vararg {
            operator.num_inputs
        } else {
            operator.schema.arguments.len()
        };
        let run_kernel = |stack: &mut Vec<IValue>| run_kernel(operator, stack);
        return hook.run_operator(&operator.schema, count, stack, &run_kernel);
    }
    run_kernel(operator, stack)
}

fn run_kernel(operator: &CompiledOperator, stack: &mut Vec<IValue>) -> Result<()> {
    if operator.schema.is_vararg {
        stack.push(IValue::Int(operator.num_inputs as i64));
    }
    match (operator.kernel)(stack) {
        Ok(()) => Ok(()),
        Err(error) => Err(operator_error(error, operator)),
    }
}

/// Runs an operator's kernel; in an observed run, between the observer's two calls.
#[inline(always)]
fn call_operator<const OBSERVED: bool>(
    operator: &CompiledOperator,
    stack: &mut Vec<IValue>,
    options: &RunOptions,
) -> Result<()> {
    if OBSERVED {
        if let Some(observer) = &options.observer {
            return run_observed_operator(operator, stack, observer.as_ref(), run_operator);
        }
    }
    run_operator(operator, stack)
}

/// Runs `op` on the two values on top of the stack when both are numbers, leaving the
/// result in their place; returns false (stack untouched) when the kernel must run.
#[inline(always)]
fn run_number_op(op: NumberOp, stack: &mut Vec<IValue>) -> bool {
    let result = match stack.as_slice() {
        [.., a, b] => op.apply(a, b),
        _ => None,
    };
    let Some(value) = result else {
        return false;
    };
    // Both operands are numbers, which own nothing: forget them instead of dropping.
    std::mem::forget(stack.pop());
    if let Some(slot) = stack.last_mut() {
        store_number(slot, value);
    }
    true
}

/// An operand of `NumberWith`, read in place.
#[inline(always)]
fn operand<'a>(
    operand: Operand,
    stack: &'a [IValue],
    registers: &'a [IValue],
    constants: &'a [IValue],
) -> Result<&'a IValue> {
    let value = match operand {
        Operand::Stack => stack.last(),
        Operand::Load(r) | Operand::Move(r) => registers.get(r as usize),
        Operand::Constant(c) => constants.get(c as usize),
    };
    match value {
        Some(value) => Ok(value),
        None => Err(corrupt("operand out of range")),
    }
}

/// Pushes an operand of `NumberWith` the way the instruction folded into it would have.
fn push_operand(
    operand: Operand,
    stack: &mut Vec<IValue>,
    registers: &mut [IValue],
    constants: &[IValue],
) -> Result<()> {
    match operand {
        Operand::Stack => {}
        Operand::Load(r) => with_copy!(register(registers, r as usize)?, |value| stack.push(value)),
        Operand::Move(r) => {
            with_taken!(register(registers, r as usize)?, |value| stack.push(value))
        }
        Operand::Constant(c) => match constants.get(c as usize) {
            Some(constant) => with_copy!(constant, |value| stack.push(value)),
            None => return Err(corrupt("constant out of range")),
        },
    }
    Ok(())
}

/// The folded number operators (`NumberWith`, `NumberInto`, `NumberJumpIfFalse`): computes
/// `op` in place when both operands are numbers, consuming them (moved-out registers are
/// cleared, a stack operand popped) and returning the result. Otherwise pushes the operands
/// as the folded instructions would have, runs the operator's kernel, and returns `None`:
/// the result is on the stack.
#[inline(always)]
fn run_number_with<const OBSERVED: bool>(
    op: NumberOp,
    (a, b): (Operand, Operand),
    operator: usize,
    stack: &mut Vec<IValue>,
    registers: &mut [IValue],
    code: &Code,
    options: &RunOptions,
) -> Result<Option<NumberValue>> {
    let constants = code.constants.as_slice();
    // An observed run calls the kernel, so that the observer sees the call.
    let result = if OBSERVED {
        None
    } else {
        op.apply(
            operand(a, stack, registers, constants)?,
            operand(b, stack, registers, constants)?,
        )
    };
    match result {
        Some(value) => {
            // The operands are numbers, which own nothing: moved-out registers keep them
            // (see `with_taken!`), and a stack operand is dropped, which only reads its tag.
            if a == Operand::Stack {
                match stack.len().checked_sub(1) {
                    Some(len) => stack.truncate(len),
                    None => return Err(corrupt("operand stack underflow")),
                }
            }
            Ok(Some(value))
        }
        None => {
            push_operand(a, stack, registers, constants)?;
            push_operand(b, stack, registers, constants)?;
            let Some(operator) = code.operators.get(operator) else {
                return Err(corrupt("operator out of range"));
            };
            call_operator::<OBSERVED>(operator, stack, options)?;
            Ok(None)
        }
    }
}

/// Overwrites a register, skipping the out-of-line drop when the old value is a number.
#[inline(always)]
fn set_register(slot: &mut IValue, value: IValue) {
    match slot {
        IValue::None | IValue::Int(_) | IValue::Bool(_) | IValue::Double(_) => {
            std::mem::forget(std::mem::replace(slot, value));
        }
        _ => *slot = value,
    }
}

/// Runs the top frame's instructions until it calls, returns, fails or runs out of steps.
/// Each instruction costs one step of `steps_left`.
fn run_frame<const OBSERVED: bool>(
    frame: &mut Frame,
    stack: &mut Vec<IValue>,
    steps_left: &mut u64,
    methods: &dyn MethodSource,
    options: &RunOptions,
) -> Result<Control> {
    // The program counter and the step budget live in locals while the loop runs (kept in
    // machine registers), and are written back however the loop ends.
    let mut pc = frame.pc;
    let mut steps = *steps_left;
    let result = run_instructions::<OBSERVED>(frame, &mut pc, &mut steps, stack, methods, options);
    frame.pc = pc;
    *steps_left = steps;
    result
}

#[inline(always)]
fn run_instructions<const OBSERVED: bool>(
    frame: &mut Frame,
    pc: &mut usize,
    steps_left: &mut u64,
    stack: &mut Vec<IValue>,
    methods: &dyn MethodSource,
    options: &RunOptions,
) -> Result<Control> {
    let Frame {
        code,
        registers,
        functions,
        ..
    } = frame;
    let code: &Code = code;
    let instructions = code.instructions.as_slice();
    let registers = registers.as_mut_slice();
    loop {
        if *steps_left == 0 {
            return Ok(Control::OutOfSteps);
        }
        *steps_left -= 1;
        let Some(&instruction) = instructions.get(*pc) else {
            return Err(corrupt("ran past the last instruction"));
        };
        *pc += 1;
        match instruction {
            Instruction::Load(r) => with_copy!(register(registers, r)?, |value| stack.push(value)),
            Instruction::Move(r) => with_taken!(register(registers, r)?, |value| stack.push(value)),
            Instruction::Store(r) => pop_into(stack, register(registers, r)?)?,
            Instruction::Copy { from, to } => match number_of(register(registers, from)?) {
                Some(number) => store_number(register(registers, to)?, number),
                None => with_copy!(register(registers, from)?, |value| {
                    set_register(register(registers, to)?, value)
                }),
            },
            // A number moved out stays in its register (see `with_taken!`).
            Instruction::Transfer { from, to } => match number_of(register(registers, from)?) {
                Some(number) => store_number(register(registers, to)?, number),
                None => with_taken!(register(registers, from)?, |value| {
                    set_register(register(registers, to)?, value)
                }),
            },
            Instruction::Drop(r) => {
                // Numbers stay (see `with_taken!`).
                let slot = register(registers, r)?;
                if number_of(slot).is_none() {
                    set_register(slot, IValue::None);
                }
            }
            Instruction::Pop => {
                pop(stack)?;
            }
            Instruction::Constant(c) => match code.constants.get(c) {
                Some(constant) => with_copy!(constant, |value| stack.push(value)),
                None => return Err(corrupt("constant out of range")),
            },
            Instruction::Number { op, operator } => {
                if OBSERVED || !run_number_op(op, stack) {
                    let Some(operator) = code.operators.get(operator) else {
                        return Err(corrupt("operator out of range"));
                    };
                    call_operator::<OBSERVED>(operator, stack, options)?;
                }
            }
            Instruction::NumberWith { op, a, b, operator } => {
                if let Some(value) = run_number_with::<OBSERVED>(
                    op,
                    (a, b),
                    operator,
                    stack,
                    registers,
                    code,
                    options,
                )? {
                    push_number(stack, value);
                }
            }
            Instruction::NumberInto {
                op,
                a,
                b,
                operator,
                to,
            } => match run_number_with::<OBSERVED>(
                op,
                (a, b),
                operator,
                stack,
                registers,
                code,
                options,
            )? {
                Some(value) => store_number(register(registers, to)?, value),
                None => {
                    let value = pop(stack)?;
                    set_register(register(registers, to)?, value);
                }
            },
            Instruction::NumberJumpIfFalse {
                op,
                a,
                b,
                operator,
                target,
            } => {
                let condition = match run_number_with::<OBSERVED>(
                    op,
                    (a, b),
                    operator,
                    stack,
                    registers,
                    code,
                    options,
                )? {
                    Some(NumberValue::Bool(condition)) => condition,
                    Some(other) => IValue::from(other).to_bool()?,
                    None => pop_bool(stack)?,
                };
                if !condition {
                    *pc = target;
                }
            }
            Instruction::Operator(o) => {
                let Some(operator) = code.operators.get(o) else {
                    return Err(corrupt("operator out of range"));
                };
                call_operator::<OBSERVED>(operator, stack, options)?;
            }
            Instruction::Prim(p) => {
                let Some(prim) = code.prims.get(p) else {
                    return Err(corrupt("prim out of range"));
                };
                if let Some(control) = run_prim(prim, functions, stack, methods, options)? {
                    return Ok(control);
                }
            }
            Instruction::JumpIfFalse(target) => {
                if !pop_bool(stack)? {
                    *pc = target;
                }
            }
            Instruction::Jump(target) => *pc = target,
            Instruction::LoopCondition {
                counter,
                max,
                cond,
                exit,
            } => {
                let keep_going = register(registers, cond)?.to_bool()?;
                let count = register(registers, counter)?.to_int()?;
                let limit = register(registers, max)?.to_int()?;
                if !(keep_going && count < limit) {
                    *pc = exit;
                }
            }
            Instruction::LoopNextCounted { counter, max, body } => {
                let count = match register(registers, counter)? {
                    IValue::Int(count) => {
                        *count = count.wrapping_add(1);
                        *count
                    }
                    // Not an int: fails as `to_int` does.
                    other => other.to_int()?,
                };
                if count < register(registers, max)?.to_int()? {
                    *pc = body;
                }
            }
            Instruction::LoopNext {
                counter,
                max,
                cond,
                body,
            } => {
                pop_into(stack, register(registers, cond)?)?;
                let slot = register(registers, counter)?;
                let count = slot.to_int()?.wrapping_add(1);
                set_register(slot, IValue::Int(count));
                let keep_going = register(registers, cond)?.to_bool()?;
                let limit = register(registers, max)?.to_int()?;
                if keep_going && count < limit {
                    *pc = body;
                }
            }
            Instruction::Return => return Ok(Control::Return),
        }
    }
}

fn callee_frame(
    executor: Arc<GraphExecutor>,
    name: &str,
    num_inputs: usize,
    num_outputs: usize,
    functions: Option<Arc<dyn MethodSource>>,
) -> Result<Frame> {
    let code = executor.code()?;
    if code.num_inputs != num_inputs {
        return Err(RuntimeError::Argument(format!(
            "{name}() expected {} argument(s) but received {num_inputs} argument(s)",
            code.num_inputs
        )));
    }
    if code.num_outputs != num_outputs {
        return Err(RuntimeError::InvalidGraph(format!(
            "{name}() returns {} value(s) but the call expects {num_outputs}",
            code.num_outputs
        )));
    }
    Ok(Frame::new(code, functions))
}

/// Runs a primitive; `Some` when it enters a new frame.
fn run_prim(
    prim: &PrimOp,
    functions: &Option<Arc<dyn MethodSource>>,
    stack: &mut Vec<IValue>,
    methods: &dyn MethodSource,
    options: &RunOptions,
) -> Result<Option<Control>> {
    match prim {
        PrimOp::GetAttr(name) => {
            let object = pop(stack)?;
            let value = object.to_object()?.get_attr(name)?;
            stack.push(value);
        }
        PrimOp::SetAttr(name) => {
            let value = pop(stack)?;
            let object = pop(stack)?;
            object.to_object()?.set_attr(name, value)?;
        }
        PrimOp::CallMethod {
            name,
            num_inputs,
            num_outputs,
        } => {
            let receiver = stack
                .len()
                .checked_sub(*num_inputs)
                .and_then(|index| stack.get(index))
                .ok_or_else(|| corrupt("operand stack underflow"))?;
            let object = receiver.to_object()?.clone();
            let source = object.methods().clone();
            let executor = source.method_executor(object.class(), name)?;
            let callee = callee_frame(executor, name, *num_inputs, *num_outputs, Some(source))?;
            return Ok(Some(Control::Call(callee)));
        }
        PrimOp::CallFunction {
            name,
            num_inputs,
            num_outputs,
        } => {
            let executor = match functions {
                Some(source) => source.function_executor(name)?,
                None => methods.function_executor(name)?,
            };
            let callee =
                callee_frame(executor, name, *num_inputs, *num_outputs, functions.clone())?;
            return Ok(Some(Control::Call(callee)));
        }
        PrimOp::TupleConstruct(count) => {
            let items = pop_n(stack, *count)?;
            stack.push(IValue::Tuple(TupleValue::new(items)));
        }
        PrimOp::TupleUnpack(count) => {
            let value = pop(stack)?;
            let tuple = value.to_tuple()?;
            if tuple.items.len() != *count {
                return Err(RuntimeError::ValueError(format!(
                    "Expected {count} elements in a tuple but found {}",
                    tuple.items.len()
                )));
            }
            stack.extend(tuple.items.iter().cloned());
        }
        PrimOp::TupleIndex => {
            let index = pop(stack)?.to_int()?;
            let value = pop(stack)?;
            let tuple = value.to_tuple()?;
            let position = crate::ops::normalize_index(index, tuple.items.len())
                .ok_or_else(|| RuntimeError::IndexError("tuple index out of range".to_string()))?;
            let item =
                tuple.items.get(position).cloned().ok_or_else(|| {
                    RuntimeError::IndexError("tuple index out of range".to_string())
                })?;
            stack.push(item);
        }
        PrimOp::ListConstruct {
            count,
            element_type,
        } => {
            let items = pop_n(stack, *count)?;
            stack.push(IValue::List(ListValue::new(element_type.clone(), items)));
        }
        PrimOp::ListUnpack(count) => {
            let value = pop(stack)?;
            let items = value.to_list()?.to_vec();
            if items.len() != *count {
                return Err(RuntimeError::ValueError(format!(
                    "Expected {count} elements in a list but found {}",
                    items.len()
                )));
            }
            stack.extend(items);
        }
        PrimOp::DictConstruct {
            pairs,
            key_type,
            value_type,
        } => {
            let items = pop_n(stack, pairs * 2)?;
            let dict = DictValue::new(key_type.clone(), value_type.clone());
            let mut items = items.into_iter();
            while let (Some(key), Some(value)) = (items.next(), items.next()) {
                dict.insert(key, value);
            }
            stack.push(IValue::Dict(dict));
        }
        PrimOp::RaiseException { has_class } => {
            let class_name = if *has_class {
                match pop(stack)? {
                    IValue::Str(name) => name.to_string(),
                    _ => "Exception".to_string(),
                }
            } else {
                "Exception".to_string()
            };
            let message = pop(stack)?;
            let message = match &message {
                IValue::Str(text) => text.to_string(),
                other => other.to_string(),
            };
            return Err(RuntimeError::Exception {
                class_name,
                message,
            });
        }
        PrimOp::Uninitialized => stack.push(IValue::Uninitialized),
        PrimOp::Fork { code, num_inputs } => {
            return Ok(Some(Control::Fork {
                code: code.clone(),
                num_inputs: *num_inputs,
            }));
        }
        PrimOp::TypeCheck(types) => run_type_check(types, stack)?,
        PrimOp::FusionGroup {
            group_key,
            subgraph,
            code,
            num_inputs,
            num_outputs,
        } => {
            // An observed run interprets the group, so that the observer sees its operators.
            if let (Some(backend), None) = (&options.fusion_backend, &options.observer) {
                if try_backend(
                    backend,
                    *group_key,
                    subgraph,
                    *num_inputs,
                    *num_outputs,
                    stack,
                )? {
                    return Ok(None);
                }
            }
            // The subgraph's code takes its inputs from the stack and leaves its outputs there.
            return Ok(Some(Control::Call(Frame::new(
                code.clone(),
                functions.clone(),
            ))));
        }
        PrimOp::DifferentiableGraph {
            code,
            gradient,
            num_inputs,
            num_outputs,
        } => {
            if let Some(gradient) = gradient {
                let base = stack
                    .len()
                    .checked_sub(*num_inputs)
                    .ok_or_else(|| corrupt("operand stack underflow"))?;
                if super::differentiable_graph::records_gradient(&stack[base..]) {
                    if let Some(hook) = super::differentiable_graph::differentiable_graph_hook() {
                        let inputs = stack.split_off(base);
                        let outputs = hook.run(gradient, inputs)?;
                        if outputs.len() != *num_outputs {
                            return Err(corrupt(
                                "prim::DifferentiableGraph's forward graph returned the wrong number of values",
                            ));
                        }
                        stack.extend(outputs);
                        return Ok(None);
                    }
                }
            }
            return Ok(Some(Control::Call(Frame::new(
                code.clone(),
                functions.clone(),
            ))));
        }
        PrimOp::Wait => {
            let future = match stack.last() {
                Some(value) => expect_future(value)?.clone(),
                None => return Err(corrupt("operand stack underflow")),
            };
            // Runs a task no thread has started here; `None` while another thread runs it.
            match future.try_take_result() {
                Some(result) => {
                    stack.pop();
                    stack.push(result?);
                }
                None => return Ok(Some(Control::Wait(future))),
            }
        }
        PrimOp::ToList => {
            let element_type = pop(stack)?.to_int()?;
            let dim = pop(stack)?.to_int()?;
            let tensor = pop(stack)?;
            let list =
                crate::ops::list_ops::tensor_to_list(&*tensor.to_tensor()?, dim, element_type)?;
            stack.push(list);
        }
        PrimOp::IsInstance(types) => {
            let value = pop(stack)?;
            let matches = types
                .iter()
                .any(|ty| crate::ivalue::value_matches_type(&value, ty));
            stack.push(IValue::Bool(matches));
        }
        PrimOp::CreateObject(class) => {
            let source: Arc<dyn MethodSource> = match functions {
                Some(source) => source.clone(),
                None => methods.shared().unwrap_or_else(|| Arc::new(NoMethods)),
            };
            stack.push(IValue::Object(Object::new(class.clone(), source)));
        }
        PrimOp::EnumConstant { class, name } => {
            let value = pop(stack)?;
            let slots = vec![IValue::Str(Arc::from(name.as_str())), value];
            stack.push(IValue::Object(Object::with_slots(
                class.clone(),
                slots,
                Arc::new(NoMethods),
            )));
        }
        PrimOp::Print(count) => {
            let items = pop_n(stack, *count)?;
            let parts: Vec<String> = items.iter().map(IValue::to_string).collect();
            let line = parts.join(" ");
            match &options.print {
                Some(handler) => handler(&line),
                None => println!("{line}"),
            }
        }
    }
    Ok(None)
}
