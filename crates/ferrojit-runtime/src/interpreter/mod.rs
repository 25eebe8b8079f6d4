//! The TorchScript interpreter: graphs are compiled to register-based `Code` (see `code`)
//! and run by a loop with an explicit frame stack (see `execute`).
//!
//! Compiled code is kept per function by its `GraphExecutor` (see `executor`), which the
//! function's owner holds next to its graph; `run_graph` on a plain `&Graph` compiles every
//! time.

pub mod code;
pub mod execute;
pub mod executor;
pub mod future;
mod liveness;
pub mod observer;

pub use code::{
    compile, compile_with_registry, decode_constant, default_value, Code, CompiledOperator,
    Instruction, Operand, PrimOp,
};
pub use execute::{
    run_code, run_graph, run_graph_with_options, run_shared_graph, PrintHandler, RunOptions,
};
pub use executor::GraphExecutor;
pub use observer::{CallRecorder, OperatorObserver, RecordedCall};
