//! The error type of loading and saving whole files (archives, `torch.save` files).

use ferrojit_frontend::error::FrontendError;
use ferrojit_runtime::error::RuntimeError;
use ferrojit_tensor::TensorError;

use ferrojit_archive::error::{ArchiveError, PickleError};

/// Anything that can go wrong turning a file into values or values into a file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    #[error("{record}: {source}")]
    Pickle {
        record: String,
        #[source]
        source: PickleError,
    },
    #[error("{0}")]
    Compile(#[from] FrontendError),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error("{context}: {source}")]
    Tensor {
        context: String,
        #[source]
        source: TensorError,
    },
    /// Well-formed bytes whose content does not describe what the format requires.
    #[error("{record}: {message}")]
    Format { record: String, message: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl LoadError {
    pub fn format(record: &str, message: impl Into<String>) -> LoadError {
        LoadError::Format {
            record: record.to_string(),
            message: message.into(),
        }
    }
}
