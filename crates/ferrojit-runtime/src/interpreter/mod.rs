//! The TorchScript interpreter: graphs are compiled to register-based `Code` (see `code`)
//! and run by a loop with an explicit frame stack (see `execute`).
//!
//! Compiled code is kept per function by its `GraphExecutor` (see `executor`), which the
//! function's owner holds next to its graph, with the plans it specialized per
//! `ArgumentSpec` (see `argument_spec`) when a run asks for an optimizer; `run_graph` on a plain `&Graph` compiles every
//! time.

pub mod argument_spec;
pub mod code;
pub mod differentiable_graph;
pub mod execute;
pub mod executor;
pub mod fusion;
pub mod future;
mod liveness;
pub mod observer;

pub use argument_spec::{ArgumentSpec, InputSpec};
pub use code::{
    compile, compile_with_registry, decode_constant, default_value, Code, CompiledOperator,
    Instruction, Operand, PrimOp,
};
pub use execute::{
    run_code, run_graph, run_graph_with_options, run_shared_graph, PrintHandler, RunOptions,
};
pub use executor::{GraphExecutor, GraphOptimizer, MAX_PLANS_PER_FUNCTION};
pub use fusion::FusionBackend;
pub use observer::{CallRecorder, OperatorObserver, RecordedCall};
