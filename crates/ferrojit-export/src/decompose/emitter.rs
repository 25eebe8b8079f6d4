//! The emitter a decomposition rule writes its replacement nodes through: it reads the
//! original node's arguments, names new values, orders each call's arguments by the
//! registry's schema, and runs every new node on example tensors made from the metadata of
//! what it reads, so each new value gets the `TensorMeta` that torch.export's fake run would
//! record.

use crate::error::{ExportError, Result};
use crate::fallback::find_operator;
use crate::model::{
    scalar_type_to_dtype, Argument, ArgumentKind, Device, Graph, NamedArgument, Node, SymInt,
    TensorMeta,
};
use crate::run::{classify_operator, run_graph};
use crate::writer::payload::concrete_tensor_meta;
use ferrojit_ir::Type;
use ferrojit_runtime::IValue;
use ferrojit_tensor::Tensor;
use std::collections::{BTreeMap, BTreeSet};

/// The export schema's number of `torch.strided`.
pub(crate) const LAYOUT_STRIDED: i64 = 7;
/// The export schema's number of `torch.contiguous_format`.
pub(crate) const MEMORY_FORMAT_CONTIGUOUS: i64 = 1;
/// The export schema's number of `torch.preserve_format`.
pub(crate) const MEMORY_FORMAT_PRESERVE: i64 = 4;

/// Why a rule did not rewrite a node: the node stays as it was, and the reason is reported.
pub(crate) fn not_applicable(message: impl Into<String>) -> ExportError {
    ExportError::Unsupported(message.into())
}

/// The CPU device argument.
pub(crate) fn cpu() -> Argument {
    Argument::Device(Device {
        device_type: "cpu".into(),
        index: None,
    })
}

/// The original node being rewritten: its arguments by schema name.
pub(crate) struct Original<'n> {
    pub(crate) node: &'n Node,
}

impl<'n> Original<'n> {
    /// The argument named `name`, if the node gives it.
    pub(crate) fn get(&self, name: &str) -> Option<&'n Argument> {
        self.node
            .inputs
            .iter()
            .find(|input| input.name == name)
            .map(|input| &input.arg)
    }

    /// The argument named `name`, which must be given.
    pub(crate) fn required(&self, name: &str) -> Result<&'n Argument> {
        self.get(name)
            .ok_or_else(|| not_applicable(format!("argument '{name}' is missing")))
    }

    /// The tensor named by argument `name`.
    pub(crate) fn tensor(&self, name: &str) -> Result<String> {
        match self.required(name)? {
            Argument::Tensor(value) => Ok(value.clone()),
            other => Err(not_applicable(format!(
                "argument '{name}' is not a tensor: {other:?}"
            ))),
        }
    }

    /// An optional tensor argument: `None` when left out or given as None.
    pub(crate) fn optional_tensor(&self, name: &str) -> Result<Option<String>> {
        match self.get(name) {
            None | Some(Argument::None) => Ok(None),
            Some(Argument::Tensor(value)) => Ok(Some(value.clone())),
            Some(Argument::OptionalTensor(crate::model::OptionalTensorArgument::Tensor(value))) => {
                Ok(Some(value.clone()))
            }
            Some(Argument::OptionalTensor(crate::model::OptionalTensorArgument::None)) => Ok(None),
            Some(other) => Err(not_applicable(format!(
                "argument '{name}' is not a tensor: {other:?}"
            ))),
        }
    }

    /// An int argument, or `default` when left out.
    pub(crate) fn int_or(&self, name: &str, default: i64) -> Result<i64> {
        match self.get(name) {
            None => Ok(default),
            Some(Argument::Int(value)) => Ok(*value),
            Some(Argument::SymInt(crate::model::SymArgument::Literal(value))) => Ok(*value),
            Some(other) => Err(not_applicable(format!(
                "argument '{name}' is not a static int: {other:?}"
            ))),
        }
    }

    /// An int-list argument (a single int is broadcast to `length` when given), or
    /// `default` when left out.
    pub(crate) fn ints_or(&self, name: &str, default: &[i64]) -> Result<Vec<i64>> {
        match self.get(name) {
            None | Some(Argument::None) => Ok(default.to_vec()),
            Some(Argument::Ints(values)) => Ok(values.clone()),
            Some(Argument::Int(value)) => Ok(vec![*value]),
            Some(Argument::SymInts(items)) => items
                .iter()
                .map(|item| match item {
                    crate::model::SymArgument::Literal(value) => Ok(*value),
                    crate::model::SymArgument::Name(name) => {
                        Err(not_applicable(format!("a size is the symbol '{name}'")))
                    }
                })
                .collect(),
            Some(other) => Err(not_applicable(format!(
                "argument '{name}' is not an int list: {other:?}"
            ))),
        }
    }

    /// A float (or int) argument as a float, or `default` when left out.
    pub(crate) fn float_or(&self, name: &str, default: f64) -> Result<f64> {
        match self.get(name) {
            None => Ok(default),
            Some(Argument::Float(value)) => Ok(*value),
            Some(Argument::Int(value)) => Ok(*value as f64),
            Some(other) => Err(not_applicable(format!(
                "argument '{name}' is not a number: {other:?}"
            ))),
        }
    }

    /// A bool argument, or `default` when left out.
    pub(crate) fn bool_or(&self, name: &str, default: bool) -> Result<bool> {
        match self.get(name) {
            None => Ok(default),
            Some(Argument::Bool(value)) => Ok(*value),
            Some(other) => Err(not_applicable(format!(
                "argument '{name}' is not a bool: {other:?}"
            ))),
        }
    }

    /// Whether argument `name` is left out or None.
    pub(crate) fn is_none(&self, name: &str) -> bool {
        matches!(self.get(name), None | Some(Argument::None))
    }

    /// The argument `name` as given, or `default`.
    pub(crate) fn arg_or(&self, name: &str, default: Argument) -> Argument {
        self.get(name).cloned().unwrap_or(default)
    }
}

/// Makes and names replacement nodes; see the module documentation.
pub(crate) struct Emitter<'g> {
    graph_metas: &'g BTreeMap<String, TensorMeta>,
    names: &'g mut BTreeSet<String>,
    /// Metadata copied onto every new node (stack_trace, nn_module_stack, ...).
    metadata: BTreeMap<String, String>,
    /// `requires_grad` of the original node's result, given to every new value.
    requires_grad: bool,
    pub(crate) new_metas: BTreeMap<String, TensorMeta>,
    examples: BTreeMap<String, IValue>,
    pub(crate) nodes: Vec<Node>,
    /// Writes the decomposition makes to its inputs, as (value written, value holding the
    /// new contents): training batch norm's running statistics. The pass turns each into a
    /// mutation output, as functionalization does.
    pub(crate) writes: Vec<(String, String)>,
}

/// `torch.ops.aten.permute.default` as the registry name `aten::permute`.
fn registry_name(target: &str) -> Result<String> {
    classify_operator(target)
        .ok_or_else(|| not_applicable(format!("'{target}' is not an operator target")))
}

/// A zero-filled tensor with the geometry and dtype of `meta` (offset 0).
fn example_from_meta(name: &str, meta: &TensorMeta) -> Result<Tensor> {
    let dtype = scalar_type_to_dtype(meta.dtype).ok_or_else(|| {
        not_applicable(format!(
            "value '{name}' has a dtype ferrojit has no tensors of"
        ))
    })?;
    let sizes = static_ints(name, &meta.sizes)?;
    let strides = static_ints(name, &meta.strides)?;
    let empty = sizes.contains(&0);
    let mut needed: i64 = 1;
    if !empty {
        for (size, stride) in sizes.iter().zip(&strides) {
            needed = stride
                .checked_mul(size - 1)
                .and_then(|extent| needed.checked_add(extent))
                .ok_or_else(|| not_applicable(format!("value '{name}' is too large")))?;
        }
    }
    let length = usize::try_from(if empty { 1 } else { needed })
        .map_err(|_| not_applicable(format!("value '{name}' has negative strides")))?;
    let base = Tensor::zeros(&[length], dtype)?;
    Ok(base.as_strided(&sizes, &strides, Some(0))?)
}

/// Static sizes or strides; a symbolic one means the rule cannot decide its shape.
pub(crate) fn static_ints(name: &str, values: &[SymInt]) -> Result<Vec<i64>> {
    values
        .iter()
        .map(|value| match value {
            SymInt::Int(value) => Ok(*value),
            SymInt::Expr(expression) => Err(not_applicable(format!(
                "value '{name}' has the symbolic size {}; only static shapes are decomposed",
                expression.expr_str
            ))),
        })
        .collect()
}

/// The contiguous strides of `sizes`.
pub(crate) fn contiguous_strides(sizes: &[i64]) -> Vec<i64> {
    let mut strides = vec![1; sizes.len()];
    for index in (0..sizes.len().saturating_sub(1)).rev() {
        strides[index] = strides[index + 1] * sizes[index + 1].max(1);
    }
    strides
}

/// PyTorch's `is_contiguous`: strides of size-1 dimensions do not count, and an empty tensor
/// is contiguous.
pub(crate) fn is_contiguous(sizes: &[i64], strides: &[i64]) -> bool {
    if sizes.contains(&0) {
        return true;
    }
    let mut expected = 1;
    for (size, stride) in sizes.iter().zip(strides).rev() {
        if *size != 1 {
            if *stride != expected {
                return false;
            }
            expected *= size;
        }
    }
    true
}

impl<'g> Emitter<'g> {
    pub(crate) fn new(
        graph_metas: &'g BTreeMap<String, TensorMeta>,
        names: &'g mut BTreeSet<String>,
        original: &Node,
    ) -> Emitter<'g> {
        let requires_grad = original
            .outputs
            .iter()
            .find_map(|output| match output {
                Argument::Tensor(name) => graph_metas.get(name).map(|meta| meta.requires_grad),
                _ => None,
            })
            .unwrap_or(false);
        Emitter {
            graph_metas,
            names,
            metadata: original.metadata.clone(),
            requires_grad,
            new_metas: BTreeMap::new(),
            examples: BTreeMap::new(),
            nodes: Vec::new(),
            writes: Vec::new(),
        }
    }

    /// The metadata of value `name` (new or already in the graph).
    pub(crate) fn meta(&self, name: &str) -> Result<&TensorMeta> {
        self.new_metas
            .get(name)
            .or_else(|| self.graph_metas.get(name))
            .ok_or_else(|| not_applicable(format!("value '{name}' has no tensor metadata")))
    }

    pub(crate) fn sizes(&self, name: &str) -> Result<Vec<i64>> {
        static_ints(name, &self.meta(name)?.sizes)
    }

    pub(crate) fn strides(&self, name: &str) -> Result<Vec<i64>> {
        static_ints(name, &self.meta(name)?.strides)
    }

    pub(crate) fn dim(&self, name: &str) -> Result<usize> {
        Ok(self.meta(name)?.sizes.len())
    }

    /// The export ScalarType number of value `name`.
    pub(crate) fn dtype(&self, name: &str) -> Result<i64> {
        Ok(self.meta(name)?.dtype)
    }

    pub(crate) fn is_contiguous(&self, name: &str) -> Result<bool> {
        Ok(is_contiguous(&self.sizes(name)?, &self.strides(name)?))
    }

    /// A name not yet used in the graph, from `base` (`permute`, `permute_1`, ...).
    pub(crate) fn fresh_name(&mut self, base: &str) -> String {
        let mut candidate = base.to_string();
        let mut counter = 0;
        while self.names.contains(&candidate) {
            counter += 1;
            candidate = format!("{base}_{counter}");
        }
        self.names.insert(candidate.clone());
        candidate
    }

    fn example(&mut self, name: &str) -> Result<IValue> {
        if let Some(value) = self.examples.get(name) {
            return Ok(value.clone());
        }
        let meta = self.meta(name)?.clone();
        let value = IValue::from(example_from_meta(name, &meta)?);
        self.examples.insert(name.to_string(), value.clone());
        Ok(value)
    }

    /// Adds a call of `target` returning one tensor, and returns its value's name.
    pub(crate) fn call(
        &mut self,
        target: &str,
        positional: Vec<Argument>,
        keywords: Vec<(&str, Argument)>,
    ) -> Result<String> {
        let mut outputs = self.call_several(target, positional, keywords, None)?;
        if outputs.len() != 1 {
            return Err(not_applicable(format!(
                "{target} returns {} values, not one",
                outputs.len()
            )));
        }
        Ok(outputs.remove(0))
    }

    /// Adds a call of `target` and returns the names of its tensor results in order;
    /// `list_length` is the length of a returned `Tensor[]` (split_with_sizes).
    pub(crate) fn call_several(
        &mut self,
        target: &str,
        positional: Vec<Argument>,
        keywords: Vec<(&str, Argument)>,
        list_length: Option<usize>,
    ) -> Result<Vec<String>> {
        let full_name = registry_name(target)?;
        let operator = find_operator(&full_name)
            .ok_or_else(|| not_applicable(format!("operator {full_name} is not registered")))?;
        let schema = &operator.schema;
        let positional_count = positional.len();
        let mut positional = positional.into_iter();
        let mut keywords: BTreeMap<&str, Argument> = keywords.into_iter().collect();
        let mut inputs = Vec::new();
        for (index, formal) in schema.arguments.iter().enumerate() {
            let given = if index < positional_count {
                positional.next()
            } else {
                keywords.remove(formal.name.as_str())
            };
            match given {
                Some(arg) => inputs.push(NamedArgument {
                    name: formal.name.clone(),
                    arg,
                    kind: Some(if formal.kwarg_only {
                        ArgumentKind::Keyword
                    } else {
                        ArgumentKind::Positional
                    }),
                }),
                None if formal.default.is_none() => {
                    return Err(not_applicable(format!(
                        "{full_name} needs argument '{}'",
                        formal.name
                    )))
                }
                None => {}
            }
        }
        if let Some(name) = keywords.keys().next() {
            return Err(not_applicable(format!(
                "{full_name} has no argument '{name}'"
            )));
        }
        let base = target
            .strip_prefix("torch.ops.aten.")
            .and_then(|rest| rest.split('.').next())
            .unwrap_or("node")
            .to_string();
        // A node with several results is named apart from them: PyTorch's loader makes
        // one node of that name plus a getitem per result, and two of one name fail.
        let several = schema.returns.len() != 1 || matches!(&schema.returns[0].ty, Type::List(_));
        let node_name = several.then(|| self.fresh_name(&base));
        let mut outputs = Vec::new();
        let mut result_names = Vec::new();
        for returned in &schema.returns {
            match &returned.ty {
                Type::Tensor => {
                    let name = self.fresh_name(&base);
                    result_names.push(name.clone());
                    outputs.push(Argument::Tensor(name));
                }
                Type::List(inner) if matches!(inner.as_ref(), Type::Tensor) => {
                    let length = list_length.ok_or_else(|| {
                        not_applicable(format!("{full_name} returns a list of unknown length"))
                    })?;
                    let names: Vec<String> = (0..length).map(|_| self.fresh_name(&base)).collect();
                    result_names.extend(names.iter().cloned());
                    outputs.push(Argument::Tensors(names));
                }
                other => {
                    return Err(not_applicable(format!(
                        "{full_name} returns a {other:?}, not tensors"
                    )))
                }
            }
        }
        let node = Node {
            target: target.to_string(),
            inputs,
            outputs,
            metadata: self.metadata.clone(),
            is_hop_single_tensor_return: None,
            name: node_name.or_else(|| result_names.first().cloned()),
        };
        let values = self.run_on_examples(&node)?;
        let mut flat = Vec::new();
        for value in values {
            match value {
                IValue::List(_) => {
                    for tensor in value.to_tensor_vec()? {
                        flat.push(tensor);
                    }
                }
                other => flat.push(other.to_tensor()?.as_ref().clone()),
            }
        }
        if flat.len() != result_names.len() {
            return Err(not_applicable(format!(
                "{full_name} gave {} tensors for {} results",
                flat.len(),
                result_names.len()
            )));
        }
        for (name, tensor) in result_names.iter().zip(flat) {
            self.new_metas.insert(
                name.clone(),
                concrete_tensor_meta(&tensor, self.requires_grad),
            );
            self.examples.insert(name.clone(), IValue::from(tensor));
        }
        self.nodes.push(node);
        Ok(result_names)
    }

    /// Runs one node on example values of what it reads, in a graph of its own.
    fn run_on_examples(&mut self, node: &Node) -> Result<Vec<IValue>> {
        let mut read = BTreeSet::new();
        for input in &node.inputs {
            input.arg.for_each_referenced_name(&mut |name| {
                read.insert(name.to_string());
            });
        }
        let mut values = Vec::new();
        for name in &read {
            values.push(self.example(name)?);
        }
        let graph = Graph {
            inputs: read
                .iter()
                .map(|name| Argument::Tensor(name.clone()))
                .collect(),
            outputs: node.outputs.clone(),
            nodes: vec![node.clone()],
            ..Graph::default()
        };
        run_graph(&graph, values)
    }
}
