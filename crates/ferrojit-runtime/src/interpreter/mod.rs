//! The TorchScript interpreter: graphs are compiled to register-based `Code` (see `code`)
//! and run by a loop with an explicit frame stack (see `execute`).
//!
//! Compiled code is cached per shared graph (`Arc<Graph>` identity) by `code_for_graph`;
//! `run_graph` on a plain `&Graph` compiles every time.

pub mod code;
pub mod execute;
pub mod future;
mod liveness;

pub use code::{
    compile, compile_with_registry, decode_constant, default_value, Code, CompiledOperator,
    Instruction, Operand, PrimOp,
};
pub use execute::{
    code_for_graph, run_code, run_graph, run_graph_with_options, run_shared_graph, PrintHandler,
    RunOptions,
};
