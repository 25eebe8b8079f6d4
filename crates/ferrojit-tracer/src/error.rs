//! The tracer's one error type: every failure names what went wrong and where.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum TraceError {
    /// The source does not compile as TorchScript.
    #[error("cannot compile {file}: {message}")]
    Compile { file: String, message: String },
    /// The entry function is not defined in the source.
    #[error("the source defines no function '{name}' (it defines: {defined})")]
    NoEntry { name: String, defined: String },
    /// An example input PyTorch's tracer would refuse too.
    #[error("input {index} ('{name}'): Type '{type_name}' cannot be traced. Only Tensors and (possibly nested) Lists, Dicts, and Tuples of Tensors can be traced")]
    UntraceableInput {
        index: usize,
        name: String,
        type_name: String,
    },
    /// More example inputs than the entry function has parameters, or too few without defaults.
    #[error("{entry}() takes {expected} argument(s) but {given} example input(s) were given")]
    ArgumentCount {
        entry: String,
        expected: usize,
        given: usize,
    },
    /// An operator (or primitive) failed while running on the example inputs.
    #[error("{node} failed while tracing{location}: {message}")]
    Runtime {
        node: String,
        location: String,
        message: String,
    },
    /// Something the tracer does not record (a construct, or an output kind).
    #[error("cannot trace {what}{location}")]
    Unsupported { what: String, location: String },
    /// The traced module could not be saved.
    #[error("cannot save the trace: {0}")]
    Save(String),
}

pub type Result<T> = std::result::Result<T, TraceError>;
