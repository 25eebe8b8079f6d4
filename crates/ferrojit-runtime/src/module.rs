//! `Module`: a handle on a module object with `run_method`/`forward` (with PyTorch's argument
//! checks and messages), attribute access and parameter/buffer/submodule iteration.

use std::sync::Arc;

use ferrojit_ir::binding::{bind_arguments, ArgumentSource};
use ferrojit_ir::{AttributeKind, ClassType, Graph, Type};
use ferrojit_tensor::Tensor;

use crate::error::{Result, RuntimeError};
use crate::interpreter::{GraphExecutor, GraphOptimizer, RunOptions};
/// Kept importable from here, where it used to live; it is a question about a value, so it
/// is defined beside `IValue`.
pub use crate::ivalue::value_matches_type;
use crate::ivalue::IValue;
use crate::object::Object;

/// A module instance (an object of a module class type).
#[derive(Debug, Clone)]
pub struct Module(pub Arc<Object>);

impl Module {
    pub fn new(object: Arc<Object>) -> Module {
        Module(object)
    }

    pub fn object(&self) -> &Arc<Object> {
        &self.0
    }

    pub fn class(&self) -> &Arc<ClassType> {
        self.0.class()
    }

    /// Calls method `name` with `args` (without `self`), returning its single result.
    pub fn run_method(&self, name: &str, args: Vec<IValue>) -> Result<IValue> {
        self.run_method_with_options(name, args, &RunOptions::default())
    }

    pub fn run_method_with_options(
        &self,
        name: &str,
        args: Vec<IValue>,
        options: &RunOptions,
    ) -> Result<IValue> {
        let (executor, inputs) = self.prepare_call(name, args)?;
        let methods = self.0.methods().clone();
        let outputs = executor.run(inputs, methods.as_ref(), options)?;
        Ok(single_result(outputs))
    }

    /// The graph the optimizing executor runs for method `name` on `args` (PyTorch's
    /// `graph_for`): the specialized plan's graph, built if needed, or `Err` with the reason
    /// the general graph runs instead.
    pub fn graph_for(
        &self,
        name: &str,
        args: Vec<IValue>,
        optimizer: &dyn GraphOptimizer,
    ) -> Result<std::result::Result<Arc<Graph>, String>> {
        let (executor, inputs) = self.prepare_call(name, args)?;
        let methods = self.0.methods().clone();
        executor.graph_for(&inputs, optimizer, methods.as_ref())
    }

    /// The executor of method `name` and its inputs: `self`, then `args`, then the defaults
    /// of the arguments left out, checked against the method's signature.
    fn prepare_call(
        &self,
        name: &str,
        args: Vec<IValue>,
    ) -> Result<(Arc<GraphExecutor>, Vec<IValue>)> {
        let executor = self.0.methods().method_executor(self.class(), name)?;
        let graph = executor.graph();
        let mut inputs = Vec::with_capacity(args.len() + 1);
        inputs.push(IValue::Object(self.0.clone()));
        inputs.extend(args);
        if inputs.len() < graph.inputs().len() {
            // Arguments left out take the defaults of the method's declaration.
            // A missing argument without a default is left for `check_call_arguments`,
            // which reports it with PyTorch's message.
            if let Some(schema) = self.0.methods().method_schema(self.class(), name) {
                let binding = bind_arguments(&schema, inputs.len(), &[], |_, _| false);
                for (argument, source) in schema.arguments.iter().zip(&binding.sources) {
                    if let (ArgumentSource::Default, Some(default)) = (source, &argument.default) {
                        inputs.push(crate::interpreter::default_value(default, &argument.ty)?);
                    }
                }
            }
        }
        coerce_call_arguments(graph, &mut inputs);
        check_call_arguments(name, graph, &inputs)?;
        Ok((executor, inputs))
    }

    pub fn forward(&self, args: Vec<IValue>) -> Result<IValue> {
        self.run_method("forward", args)
    }

    pub fn attr(&self, name: &str) -> Result<IValue> {
        self.0.get_attr(name)
    }

    pub fn set_attr(&self, name: &str, value: IValue) -> Result<()> {
        self.0.set_attr(name, value)
    }

    /// Attributes of this object (not recursive) of the given kind, in class order.
    pub fn attributes_of_kind(&self, kind: AttributeKind) -> Vec<(String, IValue)> {
        let slots = self.0.slots();
        self.class()
            .attributes()
            .into_iter()
            .enumerate()
            .filter(|(_, attribute)| attribute.kind == kind)
            .filter_map(|(index, attribute)| {
                slots
                    .get(index)
                    .map(|value| (attribute.name, value.clone()))
            })
            .collect()
    }

    /// Direct submodules: attributes holding objects of module class types.
    pub fn named_children(&self) -> Vec<(String, Module)> {
        let slots = self.0.slots();
        self.class()
            .attributes()
            .into_iter()
            .enumerate()
            .filter_map(|(index, attribute)| match slots.get(index) {
                Some(IValue::Object(object)) if object.class().is_module() => {
                    Some((attribute.name, Module(object.clone())))
                }
                _ => None,
            })
            .collect()
    }

    /// This module (named "") and all submodules, depth first, with dotted names.
    pub fn named_modules(&self) -> Vec<(String, Module)> {
        let mut result = vec![(String::new(), self.clone())];
        let mut pending: Vec<(String, Module)> = self.named_children().into_iter().rev().collect();
        while let Some((name, module)) = pending.pop() {
            for (child_name, child) in module.named_children().into_iter().rev() {
                pending.push((format!("{name}.{child_name}"), child));
            }
            result.push((name, module));
        }
        result
    }

    fn named_tensors(&self, kind: AttributeKind, recurse: bool) -> Vec<(String, Tensor)> {
        let modules = if recurse {
            self.named_modules()
        } else {
            vec![(String::new(), self.clone())]
        };
        let mut result = Vec::new();
        for (prefix, module) in modules {
            for (name, value) in module.attributes_of_kind(kind) {
                if let IValue::Tensor(tensor) = value {
                    let full = if prefix.is_empty() {
                        name
                    } else {
                        format!("{prefix}.{name}")
                    };
                    result.push((full, Tensor::clone(&tensor.get())));
                }
            }
        }
        result
    }

    /// Parameters with dotted names (`linear.weight`), like `named_parameters()`.
    pub fn named_parameters(&self, recurse: bool) -> Vec<(String, Tensor)> {
        self.named_tensors(AttributeKind::Parameter, recurse)
    }

    /// Buffers with dotted names, like `named_buffers()`.
    pub fn named_buffers(&self, recurse: bool) -> Vec<(String, Tensor)> {
        self.named_tensors(AttributeKind::Buffer, recurse)
    }
}

/// A method's result: its single output, or a tuple when a graph returns several.
pub fn single_result(mut outputs: Vec<IValue>) -> IValue {
    match outputs.len() {
        0 => IValue::None,
        1 => outputs.pop().unwrap_or_default(),
        _ => IValue::tuple(outputs),
    }
}

/// `x.1` → `x`: the compiler's uniquing suffix is not part of the argument's name.
fn argument_name(graph: &Graph, index: usize) -> String {
    let Some(&value) = graph.inputs().get(index) else {
        return format!("argument_{index}");
    };
    match graph.debug_name(value) {
        Some(name) => match name.rsplit_once('.') {
            Some((base, suffix))
                if !suffix.is_empty() && suffix.bytes().all(|b| b.is_ascii_digit()) =>
            {
                base.to_string()
            }
            _ => name.to_string(),
        },
        None => format!("argument_{index}"),
    }
}

/// The schema-like declaration PyTorch prints in call errors:
/// `forward(__torch__.M self, Tensor x, float scale) -> Tensor`.
pub fn method_declaration(name: &str, graph: &Graph) -> String {
    let arguments: Vec<String> = (0..graph.inputs().len())
        .map(|index| {
            let ty = graph.value_type(graph.inputs()[index]);
            format!("{} {}", ty, argument_name(graph, index))
        })
        .collect();
    let outputs = graph.outputs();
    let returns = if outputs.len() == 1 {
        graph.value_type(outputs[0]).to_string()
    } else {
        let types: Vec<String> = outputs
            .iter()
            .map(|&o| graph.value_type(o).to_string())
            .collect();
        format!("({})", types.join(", "))
    };
    format!("{name}({}) -> {returns}", arguments.join(", "))
}

/// Checks a call's inputs (including `self`) against the graph's inputs, with PyTorch's
/// messages for too many, too few and mistyped arguments.
/// Applies the conversions PyTorch's Python binding makes when a caller passes a Python
/// value for a declared argument: an `int` where `float` (or `Optional[float]`) is declared
/// becomes a float, so `forward(x, 1)` works for `scale: float` as it does in PyTorch, and
/// an `int` or `float` where `complex` is declared becomes a complex.
pub fn coerce_call_arguments(graph: &Graph, inputs: &mut [IValue]) {
    for (value, &declared) in inputs.iter_mut().zip(graph.inputs()) {
        let wants_float = match graph.value_type(declared) {
            Type::Float => true,
            Type::Optional(inner) => **inner == Type::Float,
            _ => false,
        };
        if wants_float {
            if let IValue::Int(integer) = value {
                *value = IValue::Double(*integer as f64);
            }
        }
        // A Python int or float passed for a `complex` parameter becomes a complex number,
        // as PyTorch's argument conversion does (`fn(2)` gets `2+0j`).
        let wants_complex = match graph.value_type(declared) {
            Type::Complex => true,
            Type::Optional(inner) => **inner == Type::Complex,
            _ => false,
        };
        if wants_complex {
            let real = match value {
                IValue::Int(integer) => Some(*integer as f64),
                IValue::Double(number) => Some(*number),
                _ => None,
            };
            if let Some(real) = real {
                *value = IValue::Complex(ferrojit_tensor::Complex128::new(real, 0.0));
            }
        }
    }
}

pub fn check_call_arguments(name: &str, graph: &Graph, inputs: &[IValue]) -> Result<()> {
    let expected = graph.inputs().len();
    if inputs.len() > expected {
        return Err(RuntimeError::Argument(format!(
            "{name}() expected at most {expected} argument(s) but received {} argument(s). Declaration: {}",
            inputs.len(),
            method_declaration(name, graph)
        )));
    }
    if inputs.len() < expected {
        return Err(RuntimeError::Argument(format!(
            "{name}() is missing value for argument '{}'. Declaration: {}",
            argument_name(graph, inputs.len()),
            method_declaration(name, graph)
        )));
    }
    for (index, value) in inputs.iter().enumerate() {
        let ty = graph.value_type(graph.inputs()[index]);
        if !value_matches_type(value, ty) {
            return Err(RuntimeError::Argument(format!(
                "{name}() Expected a value of type '{}' for argument '{}' but instead found type '{}'.\nPosition: {index}\nValue: {value}\nDeclaration: {}",
                ty.annotation_str(),
                argument_name(graph, index),
                value.type_of().annotation_str(),
                method_declaration(name, graph)
            )));
        }
    }
    Ok(())
}
