//! Python values to TorchScript values and back: numpy arrays (and anything with
//! `__dlpack__`, such as a torch tensor) become tensors, Python scalars, strings, lists,
//! tuples and dicts become their TorchScript counterparts, and results come back the same
//! way, tensors as numpy arrays.

use std::sync::Arc;

use ferrojit::{DType, IValue, Tensor};
use ferrojit_ir::Type;
use half::f16;
use numpy::{PyArray, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

/// How deep lists, tuples and dicts may nest, in both directions: past it a value is
/// refused (a self-referencing list would otherwise recurse without end).
const MAX_NESTING: usize = 64;

/// A Python argument as a TorchScript value. `where_` names the argument in errors.
pub fn to_ivalue(value: &Bound<'_, PyAny>, where_: &str) -> PyResult<IValue> {
    to_ivalue_at(value, where_, 0)
}

fn to_ivalue_at(value: &Bound<'_, PyAny>, where_: &str, depth: usize) -> PyResult<IValue> {
    if depth > MAX_NESTING {
        return Err(PyValueError::new_err(format!(
            "{where_}: nested more than {MAX_NESTING} levels deep"
        )));
    }
    if value.is_none() {
        return Ok(IValue::None);
    }
    // bool before int: Python's bool is an int.
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(IValue::Bool(flag.is_true()));
    }
    if value.is_instance_of::<PyInt>() {
        let number: i64 = value.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "{where_}: the integer does not fit TorchScript's int (64-bit)"
            ))
        })?;
        return Ok(IValue::Int(number));
    }
    if value.is_instance_of::<PyFloat>() {
        return Ok(IValue::Double(value.extract()?));
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(IValue::string(&text.to_cow()?));
    }
    if let Ok(array) = value.cast::<PyUntypedArray>() {
        return Ok(tensor_from_numpy(array, where_)?.into());
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        let items = tuple
            .iter()
            .enumerate()
            .map(|(index, item)| to_ivalue_at(&item, &format!("{where_}[{index}]"), depth + 1))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(IValue::tuple(items));
    }
    if let Ok(list) = value.cast::<PyList>() {
        let items = list
            .iter()
            .enumerate()
            .map(|(index, item)| to_ivalue_at(&item, &format!("{where_}[{index}]"), depth + 1))
            .collect::<PyResult<Vec<_>>>()?;
        let element_type = common_type(&items, where_)?;
        return Ok(IValue::list(element_type, items));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut entries = Vec::with_capacity(dict.len());
        for (key, item) in dict.iter() {
            let key_text = key.str().map(|s| s.to_string()).unwrap_or_default();
            let key = to_ivalue_at(&key, &format!("{where_} key {key_text}"), depth + 1)?;
            if !matches!(
                key,
                IValue::Str(_) | IValue::Int(_) | IValue::Double(_) | IValue::Bool(_)
            ) && !matches!(key, IValue::Tensor(_))
            {
                return Err(PyTypeError::new_err(format!(
                    "{where_}: dict keys must be str, int, float, bool or tensors, not {}",
                    key.tag_name()
                )));
            }
            let item = to_ivalue_at(&item, &format!("{where_}[{key_text}]"), depth + 1)?;
            entries.push((key, item));
        }
        let keys: Vec<IValue> = entries.iter().map(|(key, _)| key.clone()).collect();
        let values: Vec<IValue> = entries.iter().map(|(_, value)| value.clone()).collect();
        let dict_value =
            ferrojit::DictValue::new(common_type(&keys, where_)?, common_type(&values, where_)?);
        for (key, item) in entries {
            dict_value.insert(key, item);
        }
        return Ok(IValue::Dict(dict_value));
    }
    // A numpy scalar (np.float32(1.5), np.int64(3)) is a Python number to TorchScript.
    let numpy = value.py().import("numpy")?;
    if value.is_instance(&numpy.getattr("generic")?)? {
        return to_ivalue_at(&value.call_method0("item")?, where_, depth + 1);
    }
    // A torch tensor, or anything else that speaks DLPack: numpy takes it without a copy,
    // and the tensor is made from that array.
    if value.hasattr("__dlpack__")? {
        let array = numpy
            .call_method1("from_dlpack", (value,))
            .map_err(|error| {
                PyTypeError::new_err(format!(
                    "{where_}: cannot take this {} through DLPack: {error}",
                    type_name(value)
                ))
            })?;
        let array = array.cast::<PyUntypedArray>()?;
        return Ok(tensor_from_numpy(array, where_)?.into());
    }
    Err(PyTypeError::new_err(format!(
        "{where_}: ferrojit cannot pass a {} to a model (it takes numpy arrays, torch \
         tensors, int, float, bool, str, None, and lists, tuples and dicts of them)",
        type_name(value)
    )))
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|name| name.to_string())
        .unwrap_or_else(|_| "value".to_string())
}

/// The one TorchScript type all `items` have (`List[int]`, `Dict[str, Tensor]`), as
/// TorchScript would infer it; an empty container is `Tensor`'s, as in TorchScript.
fn common_type(items: &[IValue], where_: &str) -> PyResult<Type> {
    if items.is_empty() {
        return Ok(Type::Tensor);
    }
    let types: Vec<Type> = items.iter().map(IValue::type_of).collect();
    ferrojit_ir::types::unify_type_list(&types).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "{where_}: the elements have different types ({}); TorchScript lists and dicts \
             hold one type",
            types
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// A numpy array as a tensor: its elements copied once, in logical order (any strides).
pub fn tensor_from_numpy(array: &Bound<'_, PyUntypedArray>, where_: &str) -> PyResult<Tensor> {
    fn typed<T: numpy::Element + ferrojit::Element>(
        array: &Bound<'_, PyUntypedArray>,
    ) -> Option<PyResult<Tensor>> {
        let array = array.cast::<PyArrayDyn<T>>().ok()?;
        let readonly = array.try_readonly().ok()?;
        Some(
            ferrojit::tensor_from_ndarray(&readonly.as_array())
                .map_err(|error| crate::errors::to_python(&error)),
        )
    }
    let found = typed::<f32>(array)
        .or_else(|| typed::<f64>(array))
        .or_else(|| typed::<i64>(array))
        .or_else(|| typed::<i32>(array))
        .or_else(|| typed::<i16>(array))
        .or_else(|| typed::<i8>(array))
        .or_else(|| typed::<u8>(array))
        .or_else(|| typed::<bool>(array))
        .or_else(|| typed::<f16>(array));
    match found {
        Some(result) => result,
        None => {
            let dtype = array
                .dtype()
                .str()
                .map(|s| s.to_string())
                .unwrap_or_default();
            Err(PyTypeError::new_err(format!(
                "{where_}: numpy arrays of dtype {dtype} are not supported (ferrojit takes \
                 float16/32/64, int8/16/32/64, uint8 and bool in this machine's byte order)"
            )))
        }
    }
}

/// A tensor as a numpy array that owns a copy of its elements (contiguous). `bfloat16`,
/// which numpy lacks, comes back as `float32`.
pub fn tensor_to_numpy<'py>(py: Python<'py>, tensor: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    fn typed<'py, T: numpy::Element + ferrojit::Element>(
        py: Python<'py>,
        tensor: &Tensor,
    ) -> PyResult<Bound<'py, PyAny>> {
        let array = ferrojit::tensor_to_ndarray::<T>(tensor)
            .map_err(|error| crate::errors::to_python(&error))?;
        Ok(PyArray::from_owned_array(py, array).into_any())
    }
    match tensor.dtype() {
        DType::Float32 => typed::<f32>(py, tensor),
        DType::Float64 => typed::<f64>(py, tensor),
        DType::Int64 => typed::<i64>(py, tensor),
        DType::Int32 => typed::<i32>(py, tensor),
        DType::Int16 => typed::<i16>(py, tensor),
        DType::Int8 => typed::<i8>(py, tensor),
        DType::UInt8 => typed::<u8>(py, tensor),
        DType::Bool => typed::<bool>(py, tensor),
        DType::Float16 => typed::<f16>(py, tensor),
        DType::BFloat16 => typed::<f32>(py, &tensor.to_dtype(DType::Float32)),
        other => Err(PyTypeError::new_err(format!(
            "the model returned a {} tensor, which ferrojit cannot give to numpy yet",
            other.name()
        ))),
    }
}

/// A TorchScript value as a Python one: tensors as numpy arrays, tuples (named ones
/// too) as tuples, lists as lists, dicts as dicts, devices as their names.
pub fn to_python<'py>(py: Python<'py>, value: &IValue) -> PyResult<Bound<'py, PyAny>> {
    to_python_at(py, value, 0)
}

fn to_python_at<'py>(py: Python<'py>, value: &IValue, depth: usize) -> PyResult<Bound<'py, PyAny>> {
    if depth > MAX_NESTING {
        return Err(PyValueError::new_err(format!(
            "the result is nested more than {MAX_NESTING} levels deep"
        )));
    }
    match value {
        IValue::None => Ok(py.None().into_bound(py)),
        IValue::Bool(flag) => flag.into_bound_py_any(py),
        IValue::Int(number) => number.into_bound_py_any(py),
        IValue::Double(number) => number.into_bound_py_any(py),
        IValue::Str(text) => (&**text).into_bound_py_any(py),
        IValue::Tensor(_) => {
            let tensor: Arc<Tensor> = value.to_tensor().map_err(|e| runtime(&e))?;
            tensor_to_numpy(py, &tensor)
        }
        IValue::Tuple(tuple) => {
            let items = tuple
                .items
                .iter()
                .map(|item| to_python_at(py, item, depth + 1))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyTuple::new(py, items)?.into_any())
        }
        IValue::List(list) => {
            let items = list
                .to_vec()
                .iter()
                .map(|item| to_python_at(py, item, depth + 1))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyList::new(py, items)?.into_any())
        }
        IValue::Dict(dict) => {
            let result = PyDict::new(py);
            for (key, item) in dict.entries() {
                let key = match &key {
                    // numpy arrays are not hashable, so a tensor cannot be a Python key.
                    IValue::Tensor(_) => {
                        return Err(PyTypeError::new_err(
                            "the result is a dict with tensor keys, which Python cannot \
                             hold as numpy arrays",
                        ))
                    }
                    other => to_python_at(py, other, depth + 1)?,
                };
                result.set_item(key, to_python_at(py, &item, depth + 1)?)?;
            }
            Ok(result.into_any())
        }
        IValue::Device(device) => format!("{device}").into_bound_py_any(py),
        other => Err(PyTypeError::new_err(format!(
            "ferrojit cannot give a {} value to Python",
            other.tag_name()
        ))),
    }
}

fn runtime(error: &ferrojit::RuntimeError) -> PyErr {
    crate::errors::RunError::new_err(error.to_string())
}
