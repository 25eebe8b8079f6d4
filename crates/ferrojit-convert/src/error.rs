//! The converter's error: what could not be converted, with the TorchScript node's kind and
//! source line when a node is to blame.

use thiserror::Error;

/// Why a TorchScript method could not be converted to an Export IR program.
#[derive(Debug, Error)]
pub enum ConvertError {
    /// The archive, the method or the example inputs could not be read.
    #[error("{0}")]
    Input(String),
    /// A node of the method's graph cannot be expressed in Export IR (or failed to run on the
    /// example inputs). `location` is `file:line` of the TorchScript source, when known.
    #[error("cannot convert {kind} at {location}: {message}")]
    Node {
        kind: String,
        location: String,
        message: String,
    },
    /// Something about the whole program (its outputs, its state) cannot be expressed.
    #[error("{0}")]
    Program(String),
}

/// The converter's result type.
pub type Result<T> = std::result::Result<T, ConvertError>;
