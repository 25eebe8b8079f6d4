//! ferrojit's tracer: `torch.jit.trace` without Python. It runs a TorchScript-subset
//! function eagerly on example inputs and records the operators it calls into a straight-
//! line graph, as PyTorch's tracer (`torch/csrc/jit/frontend/tracer.cpp`) records a Python
//! run: branches are frozen, loops unrolled, sizes kept as `aten::size` →
//! `prim::NumToTensor` → tensor arithmetic → `aten::Int`, data-dependent conversions
//! warned about and baked in, and `@torch.jit.script` helpers kept as calls.
//!
//! [`trace_source`] traces; [`TracedFunction::save`] writes a module archive whose
//! `forward` is the trace, which `torch.jit.load` reads.

pub mod canonical_form;
pub mod check_trace;
pub mod closure_trace;
pub mod decompositions;
pub mod error;
pub mod evaluator;
pub mod module_trace;
pub mod nn;
pub mod number_arithmetic;
pub mod scripted_functions;
pub mod traced_module;
pub mod tracing_state;
pub mod warnings;

pub use check_trace::{check_trace, CheckReport};
pub use closure_trace::{named_parameters, trace, Module, TracedInt, TracedTensor};
pub use error::{Result, TraceError};
pub use module_trace::trace_module;
pub use traced_module::{trace_source, TracedFunction};
