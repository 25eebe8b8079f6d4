//! `OperatorObserver`: a hook that sees every operator call of a run (its schema, its
//! inputs before the kernel runs, its outputs after), for a tracer or a profiler.
//!
//! An observer belongs to one run: it is set in [`RunOptions::observer`] and travels with
//! the run's options into every frame and every task the run forks, whichever thread runs
//! it. A per-thread observer would miss forked tasks (they run on the inter-op pool) and
//! would see unrelated runs that happen to share the thread. The interpreter checks for an
//! observer once when a run starts (or resumes) and then runs one of two compiled copies of
//! its loop, so a run without one pays nothing per operator call.
//!
//! While observed, the number operators that the interpreter otherwise computes inline
//! (`aten::add.int`, `aten::lt.float`, ...) go through their kernels, so that the observer
//! sees them as calls too; their results are the same either way. `aten::wait` is not
//! seen: the interpreter runs it itself, because it may suspend the run. Primitives
//! (`prim::GetAttr`, `prim::ListConstruct`, calls of script functions) are not operator
//! calls and are not seen either.
//!
//! [`RunOptions::observer`]: super::RunOptions::observer

use std::sync::Arc;

use ferrojit_ir::FunctionSchema;

use super::code::CompiledOperator;
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;

/// Sees each operator call of a run. Called on whichever thread runs the call (forked
/// tasks run on other threads), hence `Send + Sync`.
pub trait OperatorObserver: Send + Sync {
    /// Before the kernel runs: `inputs` are all the operator's arguments in schema order
    /// (defaults the call left out included; for a vararg operator, the values passed).
    fn before_operator(&self, schema: &FunctionSchema, inputs: &[IValue]);

    /// After the kernel: the values it returned, or the error it failed with.
    fn after_operator(
        &self,
        schema: &FunctionSchema,
        outputs: std::result::Result<&[IValue], &RuntimeError>,
    );
}

/// One observed call, as [`CallRecorder`] keeps it.
#[derive(Debug, Clone)]
pub struct RecordedCall {
    /// The operator's full name (`aten::add.Tensor`).
    pub operator: String,
    pub inputs: Vec<IValue>,
    /// The values returned; `None` when the kernel failed.
    pub outputs: Option<Vec<IValue>>,
}

/// An observer that records every call in order, with its values: a simple tracer, and
/// what the tests use. Values are shared, not copied (a tensor input is the same cell).
#[derive(Debug, Default)]
pub struct CallRecorder {
    calls: std::sync::Mutex<Vec<RecordedCall>>,
}

impl CallRecorder {
    pub fn new() -> Arc<CallRecorder> {
        Arc::new(CallRecorder::default())
    }

    /// The calls recorded so far, in the order they started.
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.calls
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
    }
}

impl OperatorObserver for CallRecorder {
    fn before_operator(&self, schema: &FunctionSchema, inputs: &[IValue]) {
        self.calls
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .push(RecordedCall {
                operator: schema.full_name(),
                inputs: inputs.to_vec(),
                outputs: None,
            });
    }

    fn after_operator(
        &self,
        schema: &FunctionSchema,
        outputs: std::result::Result<&[IValue], &RuntimeError>,
    ) {
        let Ok(outputs) = outputs else {
            return;
        };
        let mut calls = self
            .calls
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        // Calls on one thread nest in no other way than in order, so the call ending is the
        // last one of this operator still without outputs. (Forked tasks on other threads
        // may interleave; a recorder for them would key calls by thread.)
        let full_name = schema.full_name();
        if let Some(call) = calls
            .iter_mut()
            .rev()
            .find(|call| call.outputs.is_none() && call.operator == full_name)
        {
            call.outputs = Some(outputs.to_vec());
        }
    }
}

/// Runs `operator`'s kernel between the observer's two calls. Kept out of line: only
/// observed runs reach it.
#[inline(never)]
pub(crate) fn run_observed_operator(
    operator: &CompiledOperator,
    stack: &mut Vec<IValue>,
    observer: &dyn OperatorObserver,
    run_operator: impl FnOnce(&CompiledOperator, &mut Vec<IValue>) -> Result<()>,
) -> Result<()> {
    // The arguments on the stack: every schema argument (the compiler pushed the defaults
    // the call left out), or for a vararg operator the values the call passed.
    let count = if operator.schema.is_vararg {
        operator.num_inputs
    } else {
        operator.schema.arguments.len()
    };
    let base = stack.len().saturating_sub(count);
    observer.before_operator(&operator.schema, stack.get(base..).unwrap_or(&[]));
    let result = run_operator(operator, stack);
    match &result {
        Ok(()) => observer.after_operator(&operator.schema, Ok(stack.get(base..).unwrap_or(&[]))),
        Err(error) => observer.after_operator(&operator.schema, Err(error)),
    }
    result
}
