//! ferrojit-runtime: runs TorchScript graphs. Values (`IValue`), script objects and modules,
//! the operator registry with PyTorch schemas and kernels, and the interpreter.
//!
//! The runtime does not depend on the frontend: methods and functions are obtained through
//! the `MethodSource` trait, which the frontend's compilation unit implements.

pub mod autograd;
pub mod builtins;
pub mod error;
pub mod future_value;
pub mod interpreter;
pub mod ivalue;
pub mod module;
pub mod number_op;
pub mod object;
pub mod opdef;
pub mod ops;
pub mod registry;

pub use error::{Result, RuntimeError};
/// The intra-op thread count (the tensor kernels' worker pool; default: the number of cores).
pub use ferrojit_tensor::ops::parallel::{num_threads, set_num_threads};
pub use interpreter::{
    compile, run_graph, run_graph_with_options, run_shared_graph, Code, GraphExecutor, RunOptions,
};
pub use ivalue::{Device, DictValue, IValue, ListValue, NamedTupleInfo, TensorCell, TupleValue};
pub use module::Module;
pub use object::{MethodSource, NoMethods, Object};
pub use opdef::{OperatorDefinition, OperatorFlags};
pub use registry::{register_operator, Kernel, KernelFn, Operator, OperatorRegistry, Stack};
