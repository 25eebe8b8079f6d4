//! The trace being built: the trace graph, which graph value each live tensor is, and the
//! warnings given so far. Also how a runtime value becomes a graph value when an operator
//! call is recorded (PyTorch's `getValueTrace` and `addInputs`).

use std::collections::HashMap;
use std::sync::Arc;

use ferrojit_ir::{AttributeValue, Graph, NodeId, Type, ValueId};
use ferrojit_runtime::ivalue::TensorCell;
use ferrojit_runtime::{IValue, OperatorRegistry};

use crate::error::{Result, TraceError};

/// What the trace knows about a runtime value besides the value itself. Tensors are not
/// described here: a tensor's graph value is looked up by the tensor's identity (its
/// cell), so that an in-place operation seen through any alias updates it.
#[derive(Debug, Clone, Default)]
pub enum Trace {
    /// Recorded as a constant wherever it is used (a Python value, in PyTorch's terms).
    #[default]
    Constant,
    /// A number derived from sizes: its graph value is a 0-dim tensor
    /// (`prim::NumToTensor` or arithmetic on one), as PyTorch's tracer keeps sizes.
    Number(ValueId),
    /// A module (or other object) whose graph value is this (`self`, or a
    /// `prim::GetAttr` of a submodule), so that its attributes are read in the trace.
    Object(ValueId),
    /// A tuple's, list's or dict's members (a dict's as key, value, key, value, ...).
    Elements(Vec<Trace>),
}

/// A runtime value with what the trace knows about it.
#[derive(Debug, Clone)]
pub struct Traced {
    pub value: IValue,
    pub trace: Trace,
}

impl Traced {
    pub fn constant(value: IValue) -> Traced {
        Traced {
            value,
            trace: Trace::Constant,
        }
    }

    /// Member `index` of a tuple or list value, with its trace.
    pub fn member(&self, index: usize, member: IValue) -> Traced {
        let trace = match &self.trace {
            Trace::Elements(elements) => elements.get(index).cloned().unwrap_or_default(),
            _ => Trace::Constant,
        };
        Traced {
            value: member,
            trace,
        }
    }
}

/// The tracing state of one trace.
pub struct TracingState {
    pub graph: Graph,
    /// Graph value of each traced tensor, by the address of its cell. The cell is held so
    /// that its address cannot be reused by another tensor while the trace runs.
    tensors: HashMap<usize, (Arc<TensorCell>, ValueId)>,
    pub warnings: Vec<String>,
    pub registry: &'static OperatorRegistry,
}

fn cell_key(cell: &Arc<TensorCell>) -> usize {
    Arc::as_ptr(cell) as usize
}

impl TracingState {
    pub fn new() -> TracingState {
        TracingState {
            graph: Graph::new(),
            tensors: HashMap::new(),
            warnings: Vec::new(),
            registry: OperatorRegistry::global(),
        }
    }

    pub fn warn(&mut self, text: String) {
        self.warnings.push(text);
    }

    /// From now on `cell` is `value` in the trace (after an operator produced or modified it).
    pub fn set_tensor(&mut self, cell: &Arc<TensorCell>, value: ValueId) {
        self.tensors.insert(cell_key(cell), (cell.clone(), value));
    }

    pub fn traced_tensor(&self, cell: &Arc<TensorCell>) -> Option<ValueId> {
        self.tensors.get(&cell_key(cell)).map(|(_, value)| *value)
    }

    /// The graph value of a tensor; one the trace has not seen becomes a constant (as
    /// PyTorch records a tensor that is not a traced value).
    pub fn tensor_value(&mut self, cell: &Arc<TensorCell>) -> ValueId {
        if let Some(value) = self.traced_tensor(cell) {
            return value;
        }
        let tensor = cell.get().as_ref().clone();
        let value = self
            .graph
            .insert_constant(Some(AttributeValue::Tensor(tensor)), Type::Tensor);
        self.set_tensor(cell, value);
        value
    }

    /// Inserts an operator node by its full name (`aten::add.Tensor`), with the schema the
    /// registry has for it, at the end of the graph.
    pub fn record(&mut self, full_name: &str, inputs: &[ValueId]) -> Result<NodeId> {
        let operator = self
            .registry
            .lookup(full_name)
            .ok_or_else(|| TraceError::Unsupported {
                what: format!("a call of {full_name} (no such operator is registered)"),
                location: String::new(),
            })?;
        Ok(self
            .graph
            .insert_with_schema(operator.schema.clone(), inputs))
    }

    /// Inserts `kind(input)` (an `aten::Int`-style conversion) right after the node that
    /// produced `input`, where PyTorch's tracer puts it: each use gets its own node.
    fn convert_after_producer(&mut self, full_name: &str, input: ValueId) -> Result<ValueId> {
        let node = self.record(full_name, &[input])?;
        if let Some(producer) = self.graph.producer(input) {
            self.graph.move_after(node, producer);
        }
        Ok(self.graph.node_output(node, 0))
    }

    /// A 0-dim tensor constant for a Python number used as a tensor (PyTorch's wrapped
    /// numbers: `x + 1` records `aten::add(%x, {1}, 1)`).
    pub fn wrapped_number(&mut self, value: &IValue) -> Result<ValueId> {
        use ferrojit_tensor::{DType, Scalar, Tensor};
        let tensor = match value {
            IValue::Int(v) => Tensor::scalar_tensor(Scalar::Int(*v), DType::Int64),
            IValue::Double(v) => Tensor::scalar_tensor(Scalar::Float(*v), DType::Float64),
            IValue::Bool(v) => Tensor::scalar_tensor(Scalar::Bool(*v), DType::Bool),
            other => {
                return Err(TraceError::Unsupported {
                    what: format!("{} as a number", other.tag_name()),
                    location: String::new(),
                })
            }
        };
        Ok(self
            .graph
            .insert_constant(Some(AttributeValue::Tensor(tensor)), Type::Tensor))
    }

    /// The graph value standing for `traced` as an argument declared `declared`:
    /// traced tensors are their values, traced sizes are converted (`aten::Int`,
    /// `aten::Float`, `aten::ScalarImplicit`) or used as tensors, lists and tuples are
    /// constructed member by member, and everything else becomes a constant.
    pub fn argument_value(&mut self, traced: &Traced, declared: &Type) -> Result<ValueId> {
        let declared = match declared {
            Type::Optional(inner) if !matches!(traced.value, IValue::None) => inner.as_ref(),
            other => other,
        };
        match (&traced.value, &traced.trace) {
            (IValue::Tensor(cell), _) => Ok(self.tensor_value(cell)),
            (IValue::Int(_) | IValue::Double(_) | IValue::Bool(_), Trace::Number(number)) => {
                let number = *number;
                match declared {
                    Type::Tensor | Type::RefinedTensor(_) => Ok(number),
                    Type::Float => self.convert_after_producer("aten::Float.Tensor", number),
                    Type::Bool => self.convert_after_producer("aten::Bool.Tensor", number),
                    Type::Number | Type::Any => {
                        self.convert_after_producer("aten::ScalarImplicit", number)
                    }
                    _ => self.convert_after_producer("aten::Int.Tensor", number),
                }
            }
            (IValue::Int(_) | IValue::Double(_) | IValue::Bool(_), Trace::Constant)
                if matches!(declared, Type::Tensor | Type::RefinedTensor(_)) =>
            {
                self.wrapped_number(&traced.value)
            }
            (IValue::List(list), trace) => {
                let element_declared = match declared {
                    Type::List(element) => element.as_ref().clone(),
                    _ => list.element_type().clone(),
                };
                let items = list.to_vec();
                let mut values = Vec::with_capacity(items.len());
                for (index, item) in items.into_iter().enumerate() {
                    let member = Traced {
                        value: item,
                        trace: match trace {
                            Trace::Elements(elements) => {
                                elements.get(index).cloned().unwrap_or_default()
                            }
                            _ => Trace::Constant,
                        },
                    };
                    values.push(self.argument_value(&member, &element_declared)?);
                }
                let list_type = Type::List(Box::new(list.element_type().clone()));
                let node = self
                    .graph
                    .insert("prim::ListConstruct", &values, &[list_type]);
                Ok(self.graph.node_output(node, 0))
            }
            (IValue::Tuple(tuple), _) => {
                let member_types: Vec<Type> = match declared {
                    Type::Tuple(types) => types.clone(),
                    _ => vec![Type::Any; tuple.items.len()],
                };
                let mut values = Vec::with_capacity(tuple.items.len());
                let mut types = Vec::with_capacity(tuple.items.len());
                for (index, item) in tuple.items.iter().enumerate() {
                    let member = traced.member(index, item.clone());
                    let member_type = member_types.get(index).cloned().unwrap_or(Type::Any);
                    let value = self.argument_value(&member, &member_type)?;
                    types.push(self.graph.value_type(value).clone());
                    values.push(value);
                }
                let node =
                    self.graph
                        .insert("prim::TupleConstruct", &values, &[Type::Tuple(types)]);
                Ok(self.graph.node_output(node, 0))
            }
            (value, _) => self.constant(value, declared),
        }
    }

    /// A `prim::Constant` holding `value` (`declared` types a None).
    pub fn constant(&mut self, value: &IValue, declared: &Type) -> Result<ValueId> {
        let (attribute, ty) = match value {
            IValue::None => (None, Type::NoneType),
            other => ferrojit_opt::constant_insertion::constant_for(other, declared).ok_or_else(
                || TraceError::Unsupported {
                    what: format!("a {} as a constant", other.tag_name()),
                    location: String::new(),
                },
            )?,
        };
        // Tensor constants print as `Tensor`; their complete type is not kept.
        let ty = match ty {
            Type::RefinedTensor(_) => Type::Tensor,
            other => other,
        };
        Ok(self.graph.insert_constant(attribute, ty))
    }
}

impl Default for TracingState {
    fn default() -> Self {
        TracingState::new()
    }
}
