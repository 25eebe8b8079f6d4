//! The `ferrojit` Python package: load TorchScript archives and torch.export programs and
//! run them from Python on numpy arrays, with neither torch nor libtorch installed.
//!
//! ```python
//! import ferrojit, numpy as np
//! model = ferrojit.load("examples/mlp.pt")
//! y = model(np.ones((2, 4), np.float32), 0.5)   # a numpy array
//! ```
//!
//! maturin builds this crate into the wheel (`python/pyproject.toml`); `cargo build`
//! compiles it too, so the workspace checks it without a Python toolchain.

mod errors;
mod module;
mod owned_results;
mod values;

use std::path::Path;

use pyo3::exceptions::{PyFileNotFoundError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use module::{MethodObject, ModuleObject};

/// Loads a TorchScript archive (`torch.jit.save`, `.pt`) or a torch.export program
/// (`torch.export.save`, `.pt2`); the format is read from the file. `max_steps` bounds the
/// interpreter steps of each call, `max_pickle_memory` the memory a pickle's values may
/// take, and `optimize=False` runs every graph as written.
#[pyfunction]
#[pyo3(signature = (path, *, max_steps = None, max_pickle_memory = None, optimize = true, program = None))]
fn load(
    py: Python<'_>,
    path: std::path::PathBuf,
    max_steps: Option<u64>,
    max_pickle_memory: Option<u64>,
    optimize: bool,
    program: Option<String>,
) -> PyResult<ModuleObject> {
    if !Path::new(&path).exists() {
        return Err(PyFileNotFoundError::new_err(format!(
            "no such file: {}",
            path.display()
        )));
    }
    let mut options = ferrojit::LoadOptions {
        max_steps,
        max_pickle_memory,
        optimize,
        ..Default::default()
    };
    if let Some(program) = program {
        options.program = program;
    }
    let model = py
        .detach(|| ferrojit::load_with_options(&path, &options))
        .map_err(|error| errors::to_python(&error))?;
    Ok(ModuleObject::root(model))
}

/// Reads a `torch.save` file (tensors as numpy arrays): inputs or expected outputs saved
/// from Python with torch, read here without it.
#[pyfunction]
fn load_values<'py>(py: Python<'py>, path: std::path::PathBuf) -> PyResult<Bound<'py, PyAny>> {
    let value = ferrojit::load_values(&path).map_err(|error| errors::to_python(&error))?;
    values::to_python(py, &value)
}

/// Writes a value (numpy arrays, numbers, strings, lists, tuples, dicts) as a `torch.save`
/// file that `torch.load` reads.
#[pyfunction]
fn save_values(value: &Bound<'_, PyAny>, path: std::path::PathBuf) -> PyResult<()> {
    let value = values::to_ivalue(value, "value")?;
    ferrojit::save_values(&value, &path).map_err(|error| errors::to_python(&error))
}

/// Sizes the kernels' worker pool (as `torch.set_num_threads`); only before the first
/// model runs.
#[pyfunction]
fn set_num_threads(threads: usize) -> PyResult<()> {
    ferrojit::set_num_threads(threads).map_err(|error| PyValueError::new_err(error.to_string()))
}

/// The kernels' worker-pool size.
#[pyfunction]
fn get_num_threads() -> usize {
    ferrojit::num_threads()
}

/// Copies what DLPack gives (a torch tensor, a numpy array) into a numpy array through
/// numpy's own DLPack support, without a copy where the layout allows: what a model call
/// does with a torch tensor argument.
#[pyfunction]
fn from_dlpack<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let numpy = value.py().import("numpy")?;
    numpy.call_method1("from_dlpack", PyTuple::new(value.py(), [value])?)
}

/// How many result tensors this process handed to numpy without a copy (their element
/// vector moved into the array); a test hook, not part of the API.
#[pyfunction]
#[pyo3(name = "_results_moved")]
fn results_moved() -> usize {
    owned_results::results_moved()
}

/// The Python module `ferrojit`.
#[pymodule]
#[pyo3(name = "ferrojit")]
fn ferrojit_module(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add_function(wrap_pyfunction!(load, module)?)?;
    module.add_function(wrap_pyfunction!(load_values, module)?)?;
    module.add_function(wrap_pyfunction!(save_values, module)?)?;
    module.add_function(wrap_pyfunction!(set_num_threads, module)?)?;
    module.add_function(wrap_pyfunction!(get_num_threads, module)?)?;
    module.add_function(wrap_pyfunction!(from_dlpack, module)?)?;
    module.add_function(wrap_pyfunction!(results_moved, module)?)?;
    module.add_class::<ModuleObject>()?;
    module.add_class::<MethodObject>()?;
    module.add("Error", py.get_type::<errors::Error>())?;
    module.add("LoadError", py.get_type::<errors::LoadError>())?;
    module.add("RunError", py.get_type::<errors::RunError>())?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
