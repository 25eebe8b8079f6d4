//! `ferrojit.Module`: a loaded model (or one of its submodules) as a Python object whose
//! methods take and return numpy arrays and Python values, with its code, graph and module
//! tree visible, as `torch.jit.load` gives them.

use std::sync::Arc;

use ferrojit::{IValue, Model, ModelFormat};
use ferrojit_ir::AttributeKind;
use pyo3::exceptions::PyAttributeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::errors::{to_python as error_to_python, RunError};
use crate::values::{tensor_to_numpy, to_ivalue, to_python};

/// A loaded model, or a submodule of a TorchScript one. Calling it runs `forward`;
/// `module.name(...)` runs any other method; submodules and attributes read as
/// attributes.
#[pyclass(frozen, name = "Module", module = "ferrojit")]
pub struct ModuleObject {
    model: Arc<Model>,
    /// The submodule this object stands for; `None` for the loaded model itself (whose
    /// calls go through the optimizing executor).
    node: Option<ferrojit::Module>,
    /// Dotted name from the root (`""` for the root).
    qualified: String,
}

/// One method of a module, bound to it: call it, or read its `.graph` and `.code`.
#[pyclass(frozen, name = "Method", module = "ferrojit")]
pub struct MethodObject {
    owner: Py<ModuleObject>,
    name: String,
}

impl ModuleObject {
    pub fn root(model: Model) -> ModuleObject {
        ModuleObject {
            model: Arc::new(model),
            node: None,
            qualified: String::new(),
        }
    }

    /// The TorchScript module this object stands for (`None` for a `.pt2` program).
    fn torchscript(&self) -> Option<&ferrojit::Module> {
        self.node
            .as_ref()
            .or_else(|| self.model.torchscript_module())
    }

    fn has_method(&self, name: &str) -> bool {
        match self.torchscript() {
            Some(module) => module.class().has_method(name),
            None => name == "forward",
        }
    }

    fn child(&self, name: &str, module: ferrojit::Module) -> ModuleObject {
        ModuleObject {
            model: self.model.clone(),
            node: Some(module),
            qualified: if self.qualified.is_empty() {
                name.to_string()
            } else {
                format!("{}.{name}", self.qualified)
            },
        }
    }

    fn call<'py>(
        &self,
        py: Python<'py>,
        method: &str,
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let inputs = args
            .iter()
            .enumerate()
            .map(|(index, arg)| to_ivalue(&arg, &format!("{method}() argument {}", index + 1)))
            .collect::<PyResult<Vec<_>>>()?;
        let model = self.model.clone();
        let node = self.node.clone();
        let method_name = method.to_string();
        // The model runs without the GIL: its inputs are Rust values now, and other Python
        // threads may run (or call this model too: a Model is shared between threads).
        let result = py.detach(move || match node {
            None => model
                .run_method(&method_name, inputs)
                .map_err(|error| error_to_python(&error)),
            Some(node) => {
                if !node.class().has_method(&method_name) {
                    return Err(PyAttributeError::new_err(format!(
                        "the module has no method '{method_name}'"
                    )));
                }
                node.run_method(&method_name, inputs)
                    .map_err(|error| RunError::new_err(format!("{method_name}() failed: {error}")))
            }
        })?;
        // The result is this call's alone: its tensors can move into numpy uncopied.
        crate::owned_results::result_to_python(py, result)
    }

    fn is_root(&self) -> bool {
        self.node.is_none()
    }

    fn root_only(&self, what: &str) -> PyErr {
        PyAttributeError::new_err(format!(
            "{what} is available on the loaded model, not on its submodule '{}'",
            self.qualified
        ))
    }
}

#[pymethods]
impl ModuleObject {
    /// Runs `forward` on positional arguments.
    #[pyo3(signature = (*args))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.call(py, "forward", args)
    }

    /// Runs the method called `name` on positional arguments.
    #[pyo3(signature = (name, *args))]
    fn run_method<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if !self.has_method(name) {
            return Err(PyAttributeError::new_err(format!(
                "the model has no method '{name}'; its methods are: {}",
                self.method_names().join(", ")
            )));
        }
        self.call(py, name, args)
    }

    /// Methods first, then submodules, then attributes (parameters, buffers and plain
    /// values, tensors as numpy arrays).
    fn __getattr__(slf: &Bound<'_, Self>, name: &str) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let this = slf.get();
        if this.has_method(name) {
            let method = MethodObject {
                owner: slf.clone().unbind(),
                name: name.to_string(),
            };
            return Ok(Py::new(py, method)?.into_any());
        }
        if let Some(module) = this.torchscript() {
            for (child_name, child) in module.named_children() {
                if child_name == name {
                    return Ok(Py::new(py, this.child(name, child))?.into_any());
                }
            }
            if module.class().attributes().iter().any(|a| a.name == name) {
                let value = module
                    .attr(name)
                    .map_err(|error| PyAttributeError::new_err(error.to_string()))?;
                return attribute_to_python(py, &value);
            }
        }
        Err(PyAttributeError::new_err(format!(
            "'{}' has no method, submodule or attribute '{name}'",
            this.describe()
        )))
    }

    fn __dir__(&self) -> Vec<String> {
        let mut names = self.method_names();
        if let Some(module) = self.torchscript() {
            names.extend(module.class().attributes().into_iter().map(|a| a.name));
        }
        names.extend(
            [
                "code",
                "graph",
                "format",
                "path",
                "method_names",
                "named_children",
                "named_modules",
                "named_parameters",
                "named_buffers",
                "attributes",
                "run_method",
                "sample_inputs",
            ]
            .map(String::from),
        );
        names.sort();
        names.dedup();
        names
    }

    fn __repr__(&self) -> String {
        format!("<ferrojit.Module {}>", self.describe())
    }

    /// The methods this module has, sorted.
    fn method_names(&self) -> Vec<String> {
        match &self.node {
            None => self.model.method_names(),
            Some(module) => {
                let mut names = module.class().method_names();
                names.sort();
                names
            }
        }
    }

    /// The model's code as PyTorch prints it (`torch.jit.load(path).code`, or a `.pt2`
    /// program's `graph_module.code`).
    #[getter]
    fn code(&self) -> PyResult<String> {
        if !self.is_root() {
            return Err(self.root_only("code"));
        }
        self.model.code().map_err(|error| error_to_python(&error))
    }

    /// `forward`'s graph in TorchScript's IR text (or a `.pt2` program's FX graph).
    #[getter]
    fn graph(&self) -> PyResult<String> {
        if !self.is_root() {
            return Err(self.root_only("graph"));
        }
        self.model
            .graph("forward")
            .map_err(|error| error_to_python(&error))
    }

    /// `"torchscript"` or `"pt2"`.
    #[getter]
    fn format(&self) -> &'static str {
        match self.model.format() {
            ModelFormat::TorchScript => "torchscript",
            ModelFormat::ExportedProgram => "pt2",
        }
    }

    /// The file the model was loaded from.
    #[getter]
    fn path(&self) -> String {
        self.model.path().display().to_string()
    }

    /// Direct submodules as `(name, Module)` pairs.
    fn named_children(&self) -> Vec<(String, ModuleObject)> {
        self.torchscript()
            .map(|module| {
                module
                    .named_children()
                    .into_iter()
                    .map(|(name, child)| (name.clone(), self.child(&name, child)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// This module (named `""`) and all submodules, depth first, with dotted names.
    fn named_modules(&self) -> Vec<(String, ModuleObject)> {
        let Some(module) = self.torchscript() else {
            return vec![];
        };
        module
            .named_modules()
            .into_iter()
            .map(|(name, child)| {
                let wrapped = ModuleObject {
                    model: self.model.clone(),
                    node: if name.is_empty() {
                        self.node.clone()
                    } else {
                        Some(child)
                    },
                    qualified: [self.qualified.as_str(), name.as_str()]
                        .iter()
                        .filter(|part| !part.is_empty())
                        .copied()
                        .collect::<Vec<_>>()
                        .join("."),
                };
                (name, wrapped)
            })
            .collect()
    }

    /// Parameters with dotted names, as numpy arrays (`named_parameters()`).
    #[pyo3(signature = (recurse = true))]
    fn named_parameters<'py>(
        &self,
        py: Python<'py>,
        recurse: bool,
    ) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
        let tensors = self
            .torchscript()
            .map(|module| module.named_parameters(recurse))
            .unwrap_or_default();
        tensors
            .iter()
            .map(|(name, tensor)| Ok((name.clone(), tensor_to_numpy(py, tensor)?)))
            .collect()
    }

    /// Buffers with dotted names, as numpy arrays (`named_buffers()`).
    #[pyo3(signature = (recurse = true))]
    fn named_buffers<'py>(
        &self,
        py: Python<'py>,
        recurse: bool,
    ) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
        let tensors = self
            .torchscript()
            .map(|module| module.named_buffers(recurse))
            .unwrap_or_default();
        tensors
            .iter()
            .map(|(name, tensor)| Ok((name.clone(), tensor_to_numpy(py, tensor)?)))
            .collect()
    }

    /// This module's plain attributes (not parameters, buffers or submodules) as a dict.
    fn attributes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let result = PyDict::new(py);
        if let Some(module) = self.torchscript() {
            for (name, value) in module.attributes_of_kind(AttributeKind::Regular) {
                if matches!(&value, IValue::Object(object) if object.class().is_module()) {
                    continue;
                }
                result.set_item(name, attribute_to_python(py, &value)?)?;
            }
        }
        Ok(result)
    }

    /// The example inputs a `.pt2` program was saved with (a list), or `None`.
    fn sample_inputs<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let Some(inputs) = self.model.sample_inputs() else {
            return Ok(None);
        };
        let items = inputs
            .iter()
            .map(|value| to_python(py, value))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Some(PyList::new(py, items)?))
    }
}

impl ModuleObject {
    fn describe(&self) -> String {
        let class = self
            .torchscript()
            .map(|module| module.class().qualified_name().to_string())
            .unwrap_or_else(|| "torch.export program".to_string());
        if self.qualified.is_empty() {
            format!("{class} from {}", self.model.path().display())
        } else {
            format!("{class} at {}", self.qualified)
        }
    }
}

/// An attribute's value for Python: an object that is not a module has no Python form, so
/// it reads as its class name rather than failing the whole lookup.
fn attribute_to_python(py: Python<'_>, value: &IValue) -> PyResult<Py<PyAny>> {
    match value {
        IValue::Object(object) => Ok(format!("<object {}>", object.class().qualified_name())
            .into_pyobject(py)?
            .into_any()
            .unbind()),
        other => Ok(to_python(py, other)?.unbind()),
    }
}

#[pymethods]
impl MethodObject {
    #[pyo3(signature = (*args))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.owner.get().call(py, &self.name, args)
    }

    /// The method's graph in TorchScript's IR text.
    #[getter]
    fn graph(&self) -> PyResult<String> {
        let owner = self.owner.get();
        if !owner.is_root() {
            return Err(owner.root_only("graph"));
        }
        owner
            .model
            .graph(&self.name)
            .map_err(|error| error_to_python(&error))
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    fn __repr__(&self) -> String {
        format!(
            "<ferrojit.Method {} of {}>",
            self.name,
            self.owner.get().describe()
        )
    }
}
