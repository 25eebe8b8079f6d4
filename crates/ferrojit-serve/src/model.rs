//! A model the server hosts: the loaded file, its method's signature, the mapping from v2
//! inputs to the method's arguments, and from its result to v2 outputs.

use std::path::Path;

use ferrojit::{IValue, Model, ModelFormat, Tensor};
use ferrojit_ir::types::Type;
use ferrojit_tensor::Scalar;
use serde_json::{json, Value};

use crate::codec::WireTensor;
use crate::datatype::Datatype;
use crate::protocol::NamedInput;
use crate::ServeError;

/// What a method argument takes, as far as the protocol can supply it.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgumentKind {
    /// A tensor (also `Optional[Tensor]`).
    Tensor,
    /// An `int`, from a one-element tensor.
    Int,
    /// A `float`, from a one-element tensor.
    Float,
    /// A `bool`, from a one-element tensor.
    Bool,
    /// A `str`, from a one-element BYTES tensor.
    Str,
    /// A type the protocol cannot express (lists, dicts, objects): its TorchScript spelling.
    Unsupported(String),
}

/// One argument of the served method (after `self`).
#[derive(Debug, Clone)]
pub struct ArgumentSpec {
    /// The argument's name in the method's declaration.
    pub name: String,
    /// What it takes.
    pub kind: ArgumentKind,
    /// Whether the declaration gives a default (so a request may leave it out when it is
    /// last).
    pub has_default: bool,
    /// The static dtype, when the declaration refines the tensor type.
    pub datatype: Option<&'static str>,
}

/// A loaded model and what the server knows of its method.
pub struct ServedModel {
    /// The name in URLs (`/v2/models/{name}`).
    pub name: String,
    /// The method requests call.
    pub method: String,
    model: Model,
    /// The arguments after `self`; `None` when the file does not declare them (a `.pt2`
    /// program: inputs then map by position).
    arguments: Option<Vec<ArgumentSpec>>,
    /// The return types' count and static dtypes, when declared.
    outputs: Option<Vec<Option<&'static str>>>,
}

fn kind_of(ty: &Type) -> ArgumentKind {
    match ty {
        Type::Tensor | Type::RefinedTensor(_) => ArgumentKind::Tensor,
        Type::Optional(inner) if matches!(**inner, Type::Tensor | Type::RefinedTensor(_)) => {
            ArgumentKind::Tensor
        }
        Type::Int => ArgumentKind::Int,
        Type::Float => ArgumentKind::Float,
        Type::Bool => ArgumentKind::Bool,
        Type::Str => ArgumentKind::Str,
        other => ArgumentKind::Unsupported(other.to_string()),
    }
}

/// PyTorch's printed scalar type names, to v2 datatypes.
fn static_datatype(ty: &Type) -> Option<&'static str> {
    let Type::RefinedTensor(refinement) = ty else {
        return None;
    };
    Some(match refinement.scalar_type.as_deref()? {
        "Float" => "FP32",
        "Double" => "FP64",
        "Half" => "FP16",
        "BFloat16" => "BF16",
        "Long" => "INT64",
        "Int" => "INT32",
        "Short" => "INT16",
        "Char" => "INT8",
        "Byte" => "UINT8",
        "Bool" => "BOOL",
        _ => return None,
    })
}

fn output_types(ty: &Type) -> Vec<Option<&'static str>> {
    match ty {
        Type::Tuple(items) => items.iter().map(static_datatype).collect(),
        other => vec![static_datatype(other)],
    }
}

impl ServedModel {
    /// Loads `path` and reads the signature of `method`.
    pub fn load(name: &str, path: &Path, method: &str) -> Result<ServedModel, ServeError> {
        let model = ferrojit::load(path).map_err(|source| ServeError::Load {
            path: path.to_path_buf(),
            message: source.to_string(),
        })?;
        if !model
            .method_names()
            .iter()
            .any(|candidate| candidate == method)
        {
            return Err(ServeError::Load {
                path: path.to_path_buf(),
                message: format!(
                    "the model has no method '{method}' (it has: {})",
                    model.method_names().join(", ")
                ),
            });
        }
        let (arguments, outputs) = match model.torchscript_module() {
            Some(module) => {
                let methods = module.object().methods();
                match methods.method_schema(module.class(), method) {
                    Some(schema) => {
                        let arguments = schema
                            .arguments
                            .iter()
                            .skip(1)
                            .map(|argument| ArgumentSpec {
                                name: argument.name.clone(),
                                kind: kind_of(&argument.ty),
                                has_default: argument.default.is_some(),
                                datatype: static_datatype(&argument.ty),
                            })
                            .collect();
                        let outputs = match schema.returns.as_slice() {
                            [single] => output_types(&single.ty),
                            several => several.iter().map(|r| static_datatype(&r.ty)).collect(),
                        };
                        (Some(arguments), Some(outputs))
                    }
                    None => (None, None),
                }
            }
            None => (None, None),
        };
        Ok(ServedModel {
            name: name.to_string(),
            method: method.to_string(),
            model,
            arguments,
            outputs,
        })
    }

    /// Runs the method on arguments already mapped by [`ServedModel::arguments_from`].
    pub fn run(&self, arguments: Vec<IValue>) -> Result<IValue, String> {
        self.model
            .run_method(&self.method, arguments)
            .map_err(|error| error.to_string())
    }

    /// The `GET /v2/models/{name}` document.
    pub fn metadata(&self) -> Value {
        let platform = match self.model.format() {
            ModelFormat::TorchScript => "ferrojit_torchscript",
            ModelFormat::ExportedProgram => "ferrojit_exported_program",
        };
        let inputs: Vec<Value> = match &self.arguments {
            Some(arguments) => arguments
                .iter()
                .map(|argument| {
                    let (datatype, shape) = match argument.kind {
                        ArgumentKind::Tensor => (argument.datatype.unwrap_or("FP32"), json!([-1])),
                        ArgumentKind::Int => ("INT64", json!([1])),
                        ArgumentKind::Float => ("FP64", json!([1])),
                        ArgumentKind::Bool => ("BOOL", json!([1])),
                        ArgumentKind::Str => ("BYTES", json!([1])),
                        ArgumentKind::Unsupported(_) => ("BYTES", json!([-1])),
                    };
                    json!({"name": argument.name, "datatype": datatype, "shape": shape})
                })
                .collect(),
            None => self
                .model
                .sample_inputs()
                .unwrap_or_default()
                .iter()
                .enumerate()
                .map(|(index, sample)| {
                    let (datatype, rank) = match sample.to_tensor() {
                        Ok(tensor) => (
                            Datatype::of_dtype(tensor.dtype()).map_or("FP32", Datatype::name),
                            tensor.sizes().len(),
                        ),
                        Err(_) => ("FP32", 1),
                    };
                    json!({"name": format!("input__{index}"), "datatype": datatype,
                           "shape": vec![-1; rank]})
                })
                .collect(),
        };
        let outputs: Vec<Value> = self
            .outputs
            .clone()
            .unwrap_or_else(|| vec![None])
            .iter()
            .enumerate()
            .map(|(index, datatype)| {
                json!({"name": output_name(index), "datatype": datatype.unwrap_or("FP32"),
                       "shape": [-1]})
            })
            .collect();
        json!({
            "name": self.name,
            "versions": ["1"],
            "platform": platform,
            "inputs": inputs,
            "outputs": outputs,
        })
    }

    /// Maps a request's inputs to the method's positional arguments: by name when every
    /// input names an argument, else in the order sent.
    pub fn arguments_from(&self, inputs: Vec<NamedInput>) -> Result<Vec<IValue>, String> {
        let Some(arguments) = &self.arguments else {
            return inputs
                .into_iter()
                .map(|input| convert(input, &ArgumentKind::Tensor, None))
                .collect();
        };
        let by_name = !inputs.is_empty()
            && inputs
                .iter()
                .all(|input| arguments.iter().any(|argument| argument.name == input.name));
        let mut slots: Vec<Option<NamedInput>> = (0..arguments.len()).map(|_| None).collect();
        if by_name {
            for input in inputs {
                let position = arguments
                    .iter()
                    .position(|argument| argument.name == input.name)
                    .expect("checked above: every input names an argument");
                if slots[position].is_some() {
                    return Err(format!("input '{}' is given twice", input.name));
                }
                slots[position] = Some(input);
            }
        } else {
            if inputs.len() > arguments.len() {
                return Err(format!(
                    "{} inputs given but {} takes {} arguments ({})",
                    inputs.len(),
                    self.method,
                    arguments.len(),
                    argument_list(arguments)
                ));
            }
            for (slot, input) in slots.iter_mut().zip(inputs) {
                *slot = Some(input);
            }
        }
        let given = slots
            .iter()
            .rposition(Option::is_some)
            .map_or(0, |last| last + 1);
        let mut values = Vec::with_capacity(given);
        for (index, (slot, argument)) in slots.into_iter().zip(arguments).enumerate() {
            match slot {
                Some(input) => values.push(convert(input, &argument.kind, Some(&argument.name))?),
                None if index >= given && argument.has_default => break,
                None => {
                    return Err(format!(
                        "argument '{}' of {} is missing ({})",
                        argument.name,
                        self.method,
                        argument_list(arguments)
                    ))
                }
            }
        }
        Ok(values)
    }
}

fn argument_list(arguments: &[ArgumentSpec]) -> String {
    let names: Vec<&str> = arguments.iter().map(|a| a.name.as_str()).collect();
    format!("arguments: {}", names.join(", "))
}

/// The name of output `index`, as Triton's PyTorch backend names them.
pub fn output_name(index: usize) -> String {
    format!("output__{index}")
}

/// The one element of a number argument's tensor.
fn single_number(tensor: &Tensor, at: &str) -> Result<Scalar, String> {
    if tensor.numel() != 1 {
        return Err(format!(
            "{at} takes a number: send a 0-d or one-element tensor, not shape {:?}",
            tensor.sizes()
        ));
    }
    tensor.item().map_err(|error| error.to_string())
}

fn convert(
    input: NamedInput,
    kind: &ArgumentKind,
    argument: Option<&str>,
) -> Result<IValue, String> {
    let at = match argument {
        Some(argument) => format!("input '{}' (argument '{argument}')", input.name),
        None => format!("input '{}'", input.name),
    };
    match (kind, input.tensor) {
        (ArgumentKind::Tensor, WireTensor::Tensor(tensor)) => Ok(tensor.into()),
        (ArgumentKind::Int, WireTensor::Tensor(tensor)) => match single_number(&tensor, &at)? {
            Scalar::Int(value) => Ok(IValue::Int(value)),
            Scalar::Bool(flag) => Ok(IValue::Int(i64::from(flag))),
            Scalar::Float(value) if value.fract() == 0.0 && value.abs() < 9.0e15 => {
                Ok(IValue::Int(value as i64))
            }
            Scalar::Float(value) => Err(format!("{at} takes an int, not {value}")),
        },
        (ArgumentKind::Float, WireTensor::Tensor(tensor)) => match single_number(&tensor, &at)? {
            Scalar::Int(value) => Ok(IValue::Double(value as f64)),
            Scalar::Bool(flag) => Ok(IValue::Double(f64::from(u8::from(flag)))),
            Scalar::Float(value) => Ok(IValue::Double(value)),
        },
        (ArgumentKind::Bool, WireTensor::Tensor(tensor)) => match single_number(&tensor, &at)? {
            Scalar::Bool(flag) => Ok(IValue::Bool(flag)),
            Scalar::Int(value @ (0 | 1)) => Ok(IValue::Bool(value == 1)),
            other => Err(format!("{at} takes a bool, not {other:?}")),
        },
        (ArgumentKind::Str, WireTensor::Bytes { elements, .. }) => match elements.as_slice() {
            [single] => String::from_utf8(single.clone())
                .map(IValue::from)
                .map_err(|_| format!("{at} is not UTF-8 text")),
            _ => Err(format!(
                "{at} takes a str: send one BYTES element, not {}",
                elements.len()
            )),
        },
        (ArgumentKind::Str, WireTensor::Tensor(_)) => {
            Err(format!("{at} takes a str: send datatype BYTES"))
        }
        (ArgumentKind::Unsupported(ty), _) => Err(format!(
            "{at}: the argument's type {ty} cannot be sent through the v2 protocol"
        )),
        (_, WireTensor::Bytes { .. }) => Err(format!("{at} takes numbers, not BYTES")),
    }
}

fn to_wire(value: &IValue, at: &str) -> Result<WireTensor, String> {
    Ok(match value {
        IValue::Tensor(_) => {
            let tensor = value.to_tensor().map_err(|e| e.to_string())?;
            WireTensor::Tensor(tensor.contiguous())
        }
        IValue::Int(number) => {
            WireTensor::Tensor(Tensor::from_vec(vec![*number], &[]).map_err(|e| e.to_string())?)
        }
        IValue::Double(number) => {
            WireTensor::Tensor(Tensor::from_vec(vec![*number], &[]).map_err(|e| e.to_string())?)
        }
        IValue::Bool(flag) => {
            WireTensor::Tensor(Tensor::from_vec(vec![*flag], &[]).map_err(|e| e.to_string())?)
        }
        IValue::Str(text) => WireTensor::Bytes {
            shape: vec![1],
            elements: vec![text.as_bytes().to_vec()],
        },
        other => {
            return Err(format!(
                "{at} is a {}, which the v2 protocol cannot carry",
                other.type_of()
            ))
        }
    })
}

/// The v2 outputs of a result: `output__0` for a single value, `output__i` for each item of
/// a tuple or list.
pub fn outputs_of(result: &IValue) -> Result<Vec<(String, WireTensor)>, String> {
    let items = match result {
        IValue::Tuple(tuple) => tuple.items.clone(),
        IValue::List(list) => list.to_vec(),
        single => vec![single.clone()],
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let name = output_name(index);
            let tensor = to_wire(item, &format!("the model's output {index}"))?;
            Ok((name, tensor))
        })
        .collect()
}
