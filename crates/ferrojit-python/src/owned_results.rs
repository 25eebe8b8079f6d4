//! Results handed to numpy without a copy: a result tensor that nothing else holds (no
//! module attribute, no other view of its storage) gives its element vector to numpy, which
//! then owns it, so `torch.from_dlpack(result)` and numpy share the one buffer ferrojit
//! wrote. Everything else (a view of a parameter, a strided or offset view, bfloat16, a
//! tensor borrowed from a memory-mapped archive) is copied, as before.
//!
//! Inputs keep one copy on the way in (values.rs): borrowing numpy's memory would need the
//! GIL held for the whole run, because the model runs with it released and another Python
//! thread could write the array while Rust reads it through a shared slice (a data race),
//! and a result viewing that input would keep aliasing memory Python may write.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ferrojit::{IValue, Tensor};
use ferrojit_tensor::{Buffer, Elements, Storage};
use numpy::ndarray::{ArrayD, IxDyn};
use numpy::PyArray;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::values::{tensor_to_numpy, to_python};

/// How many result tensors went to numpy without a copy, in this process: the tests' way
/// to see which path a result took (`ferrojit._results_moved()`).
static RESULTS_MOVED: AtomicUsize = AtomicUsize::new(0);

/// The count of [`RESULTS_MOVED`].
pub fn results_moved() -> usize {
    RESULTS_MOVED.load(Ordering::Relaxed)
}

/// A method's result as Python values, consuming it so that tensors only it holds can move
/// into numpy without a copy.
pub fn result_to_python(py: Python<'_>, value: IValue) -> PyResult<Bound<'_, PyAny>> {
    result_to_python_at(py, value, 0)
}

fn result_to_python_at(py: Python<'_>, value: IValue, depth: usize) -> PyResult<Bound<'_, PyAny>> {
    // Deeper values go the copying way, which reports the nesting limit.
    if depth > 8 {
        return to_python(py, &value);
    }
    match value {
        IValue::Tensor(_) => {
            let tensor = value
                .into_tensor()
                .map_err(|error| crate::errors::RunError::new_err(error.to_string()))?;
            tensor_into_numpy(py, tensor)
        }
        IValue::Tuple(tuple) => match Arc::try_unwrap(tuple) {
            Ok(tuple) => {
                let items = tuple
                    .items
                    .into_iter()
                    .map(|item| result_to_python_at(py, item, depth + 1))
                    .collect::<PyResult<Vec<_>>>()?;
                Ok(PyTuple::new(py, items)?.into_any())
            }
            Err(shared) => to_python(py, &IValue::Tuple(shared)),
        },
        other => to_python(py, &other),
    }
}

/// Whether numpy can take `tensor`'s elements as they are: the only handle on an owned
/// (not borrowed) storage, laid out exactly as a C-contiguous array of the whole storage.
pub fn can_move_into_numpy(tensor: &Tensor) -> bool {
    let storage = tensor.storage();
    storage.handle_count() == 1
        && tensor.storage_offset() == 0
        && tensor.is_contiguous()
        && tensor.numel() == storage.len_elements()
        && !storage.is_borrowed()
}

/// A tensor as a numpy array: its element vector moved into numpy when
/// [`can_move_into_numpy`] allows, else a copy.
pub fn tensor_into_numpy(py: Python<'_>, tensor: Tensor) -> PyResult<Bound<'_, PyAny>> {
    if !can_move_into_numpy(&tensor) {
        return tensor_to_numpy(py, &tensor);
    }
    let sizes = tensor.sizes().to_vec();
    // The tensor again, for the copying path, from the storage it was taken out of.
    let copy_of = |storage: Storage| {
        let strides = contiguous_strides(&sizes);
        match Tensor::from_storage(storage, 0, sizes.clone(), strides) {
            Ok(tensor) => tensor_to_numpy(py, &tensor),
            Err(error) => Err(pyo3::exceptions::PyValueError::new_err(error.to_string())),
        }
    };
    let buffer = match tensor.into_storage().try_into_buffer() {
        Ok(buffer) => buffer,
        // Not expected after the handle count check, but a copy is always correct.
        Err(storage) => return copy_of(storage),
    };
    fn moved<'py, T: numpy::Element>(
        py: Python<'py>,
        shape: IxDyn,
        values: Vec<T>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let array = ArrayD::from_shape_vec(shape, values).map_err(|error| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "the result's elements do not fit its shape: {error}"
            ))
        })?;
        RESULTS_MOVED.fetch_add(1, Ordering::Relaxed);
        Ok(PyArray::from_owned_array(py, array).into_any())
    }
    match buffer {
        Buffer::Float32(Elements::Owned(values)) => moved(py, IxDyn(&sizes), values),
        Buffer::Float64(Elements::Owned(values)) => moved(py, IxDyn(&sizes), values),
        Buffer::Int64(Elements::Owned(values)) => moved(py, IxDyn(&sizes), values),
        Buffer::Int32(Elements::Owned(values)) => moved(py, IxDyn(&sizes), values),
        Buffer::Int16(Elements::Owned(values)) => moved(py, IxDyn(&sizes), values),
        Buffer::Int8(Elements::Owned(values)) => moved(py, IxDyn(&sizes), values),
        Buffer::UInt8(Elements::Owned(values)) => moved(py, IxDyn(&sizes), values),
        Buffer::Float16(Elements::Owned(values)) => moved(py, IxDyn(&sizes), values),
        Buffer::Bool(values) => moved(py, IxDyn(&sizes), values),
        // Not a dtype numpy takes as it is (bfloat16, complex): the copying path converts.
        other => copy_of(Storage::new(other)),
    }
}

fn contiguous_strides(sizes: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; sizes.len()];
    for index in (0..sizes.len().saturating_sub(1)).rev() {
        strides[index] = strides[index + 1] * sizes[index + 1].max(1);
    }
    strides
}
