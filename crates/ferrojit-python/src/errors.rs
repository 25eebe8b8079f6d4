//! ferrojit's errors as Python exceptions: `ferrojit.Error` is the base of everything the
//! package raises for a model, with `LoadError` (the file could not be loaded) and
//! `RunError` (a method failed while running) below it. Mistakes in how the package is
//! called use Python's own types: `FileNotFoundError`, `AttributeError` for a method or
//! attribute the model lacks, `TypeError` for a value that cannot be passed, and
//! `ValueError` for a value of the right type but wrong content.

use pyo3::create_exception;
use pyo3::exceptions::{PyAttributeError, PyException, PyTypeError, PyValueError};
use pyo3::PyErr;

create_exception!(
    ferrojit,
    Error,
    PyException,
    "The base of the errors ferrojit raises for a model."
);
create_exception!(
    ferrojit,
    LoadError,
    Error,
    "A model file that could not be loaded (not a TorchScript archive or .pt2 program, \
     malformed, or over a load limit)."
);
create_exception!(
    ferrojit,
    RunError,
    Error,
    "A model method that failed while running (an exception its code raised, an operator \
     error, an exceeded step budget)."
);

/// The Python exception for one of the facade's errors.
pub fn to_python(error: &ferrojit::Error) -> PyErr {
    use ferrojit::Error as E;
    let message = error.to_string();
    match error {
        E::Read { .. } | E::UnknownFormat { .. } | E::TorchScript { .. } | E::Exported { .. } => {
            LoadError::new_err(message)
        }
        E::Safetensors { .. } => LoadError::new_err(message),
        E::NoSuchMethod { .. } => PyAttributeError::new_err(message),
        E::Run { .. } | E::RunExported(_) | E::Inspect { .. } | E::Operators(_) => {
            RunError::new_err(message)
        }
        E::DTypeMismatch { .. } => PyTypeError::new_err(message),
        E::Tensor(_) | E::Value(_) | E::Threads(_) => PyValueError::new_err(message),
        _ => Error::new_err(message),
    }
}
