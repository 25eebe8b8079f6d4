//! Operator calls. An operator on tensors becomes a node `torch.ops.NS.NAME.OVERLOAD` whose
//! arguments are named by the operator's schema; its example result is computed by the
//! runtime's kernel. An in-place or `out=` call becomes its functional variant, and the
//! written tensor takes the new value's name, so later readers see the update. Operators
//! that read only a tensor's metadata give static values; operators that read its data give
//! data-dependent values.

use ferrojit_export::model::{
    Argument, ArgumentKind, NamedArgument, Node, OptionalTensorArgument, SymArgument,
};
use ferrojit_ir::{FunctionSchema, NodeId, Type};
use ferrojit_runtime::interpreter::code::default_value;
use ferrojit_runtime::{IValue, Operator};
use std::collections::BTreeMap;

use crate::converter::{cell_key, node_location, Converter, DataDependent, ViewOf};
use crate::error::Result;
use crate::metadata::{dtype_code_of_index, memory_format_code};
use crate::symbolic_shapes::SymValue;

/// Operators on tensors that read only metadata (sizes, dtype, device), which static
/// shapes make static values.
const METADATA_OPERATORS: &[&str] = &[
    "size",
    "sym_size",
    "dim",
    "numel",
    "sym_numel",
    "stride",
    "sym_stride",
    "len",
    "__len__",
    "dtype",
    "device",
    "layout",
    "is_floating_point",
    "is_complex",
    "is_signed",
    "is_contiguous",
    "is_cuda",
    "is_cpu",
    "is_mkldnn",
    "is_sparse",
    "is_quantized",
    "is_meta",
    "is_nested",
    "is_xpu",
    "is_mps",
    "is_vulkan",
    "requires_grad",
    "get_device",
    "element_size",
    "nbytes",
    "itemsize",
    "shape",
    "storage_offset",
    "is_leaf",
    "is_same_size",
    "sym_storage_offset",
    "is_xla",
    "is_ipu",
    "is_hpu",
    "is_lazy",
    "is_mtia",
    "is_maia",
];

/// Metadata operators whose result follows from a tensor's sizes: static only when the
/// sizes are.
const SIZE_READERS: &[&str] = &[
    "sym_size",
    "numel",
    "sym_numel",
    "stride",
    "sym_stride",
    "len",
    "__len__",
    "shape",
    "is_same_size",
    "is_contiguous",
    "size",
];

/// TorchScript's operators that make a tensor from values written in the code; they have
/// no ATen operator in Export IR, so their tensors become lifted constants.
const TENSOR_LITERALS: &[&str] = &["aten::tensor", "aten::as_tensor"];

fn mentions_tensor(ty: &Type) -> bool {
    match ty {
        Type::Tensor | Type::RefinedTensor(_) => true,
        Type::Optional(inner) | Type::List(inner) => mentions_tensor(inner),
        Type::Tuple(items) => items.iter().any(mentions_tensor),
        _ => false,
    }
}

fn is_tensor_value(value: &IValue) -> bool {
    matches!(value, IValue::Tensor(_))
}

fn written_arguments(schema: &FunctionSchema) -> Vec<usize> {
    schema
        .arguments
        .iter()
        .enumerate()
        .filter(|(_, argument)| {
            argument
                .alias_info
                .as_ref()
                .is_some_and(|alias| alias.is_write)
        })
        .map(|(index, _)| index)
        .collect()
}

/// The export target of an operator: `torch.ops.aten.add.Tensor`, `...relu.default`.
fn target_name(schema: &FunctionSchema) -> String {
    let (namespace, name) = schema
        .name
        .split_once("::")
        .unwrap_or(("aten", &schema.name));
    let overload = if schema.overload_name.is_empty() {
        "default"
    } else {
        &schema.overload_name
    };
    format!("torch.ops.{namespace}.{name}.{overload}")
}

/// A functional form the runtime lacks but the `.pt2` runner stands in for (`aten::copy`),
/// whose arguments are `wanted`.
fn stand_in_variant(base: &str, overload: &str, wanted: &[&str]) -> Option<&'static Operator> {
    let overloaded = format!("{base}.{overload}");
    for name in [overloaded.as_str(), base] {
        if let Some(operator) = ferrojit_export::fallback::find_operator(name) {
            let names = operator.schema.arguments.iter().map(|a| a.name.as_str());
            if names.eq(wanted.iter().copied()) {
                return Some(operator);
            }
        }
    }
    None
}

fn base_name(schema: &FunctionSchema) -> &str {
    let name = schema
        .name
        .split_once("::")
        .map_or(schema.name.as_str(), |(_, n)| n);
    name.trim_start_matches('_')
}

impl Converter<'_> {
    /// Whether `node` is an operator call returning tensors, which takes symbolic ints as
    /// `SymInt` arguments.
    pub(crate) fn takes_symbolic_arguments(&self, node: NodeId) -> bool {
        self.graph.kind(node).prim().is_none()
            && self.find_operator(node).is_ok_and(|operator| {
                !operator.schema.name.starts_with("prim::")
                    && operator
                        .schema
                        .returns
                        .iter()
                        .any(|a| mentions_tensor(&a.ty))
            })
    }

    /// Runs the kernel of an operator node on its example inputs (with defaults).
    pub(crate) fn run_operator_kernel(&self, node: NodeId) -> Result<Vec<IValue>> {
        let operator = self.find_operator(node)?;
        let mut stack = self.static_inputs(node)?;
        if !operator.schema.is_vararg {
            for formal in
                &operator.schema.arguments[stack.len().min(operator.schema.arguments.len())..]
            {
                let default = formal.default.as_ref().ok_or_else(|| {
                    self.node_error(node, format!("no value for '{}'", formal.name))
                })?;
                stack.push(
                    default_value(default, &formal.ty)
                        .map_err(|e| self.node_error(node, e.to_string()))?,
                );
            }
        }
        self.run_kernel(node, operator, stack)
    }

    fn find_operator(&self, node: NodeId) -> Result<&'static Operator> {
        let data = self.graph.node(node);
        let found = match &data.schema {
            Some(schema) => self.registry.lookup(&schema.full_name()),
            None => {
                let types: Vec<Type> = data
                    .inputs
                    .iter()
                    .map(|&v| self.graph.value_type(v).clone())
                    .collect();
                self.registry.find_by_types(data.kind.as_str(), &types)
            }
        };
        found.ok_or_else(|| self.node_error(node, "the operator is not registered in ferrojit"))
    }

    /// The functional variant of an in-place (`add_`) or `out=` operator: the overload of the
    /// name without the trailing underscore whose arguments are the same, less the written
    /// ones.
    fn functional_variant(
        &self,
        node: NodeId,
        schema: &FunctionSchema,
    ) -> Result<&'static Operator> {
        let written = written_arguments(schema);
        let in_place = schema.name.ends_with('_') && !schema.name.ends_with("__");
        let base = if in_place {
            schema.name[..schema.name.len() - 1].to_string()
        } else {
            schema.name.clone()
        };
        let wanted: Vec<&str> = schema
            .arguments
            .iter()
            .enumerate()
            .filter(|(index, _)| in_place || !written.contains(index))
            .map(|(_, argument)| argument.name.as_str())
            .collect();
        let mut candidates = self.registry.overloads(&base);
        // The same overload name first (`add_.Tensor` → `add.Tensor`).
        candidates.sort_by_key(|candidate| candidate.overload_name != schema.overload_name);
        candidates
            .into_iter()
            .filter(|candidate| written_arguments(candidate).is_empty())
            .find(|candidate| {
                candidate
                    .arguments
                    .iter()
                    .map(|a| a.name.as_str())
                    .eq(wanted.iter().copied())
            })
            .and_then(|candidate| self.registry.lookup(&candidate.full_name()))
            .or_else(|| stand_in_variant(&base, &schema.overload_name, &wanted))
            .ok_or_else(|| {
                self.node_error(
                    node,
                    format!(
                        "{} writes into a tensor and ferrojit knows no functional variant of it",
                        schema.full_name()
                    ),
                )
            })
    }

    pub(crate) fn node_metadata(&self, node: NodeId) -> BTreeMap<String, String> {
        let mut metadata = BTreeMap::new();
        let location = node_location(self.graph, node);
        if let Some((file, line)) = location.rsplit_once(':') {
            metadata.insert(
                "stack_trace".to_string(),
                format!("File \"{file}\", line {line}, in forward"),
            );
        }
        metadata
    }

    /// A schema argument's example value as an Export IR argument.
    fn export_argument(
        &mut self,
        node: NodeId,
        formal: &ferrojit_ir::Argument,
        value: &IValue,
    ) -> Result<Argument> {
        let spelling = formal.type_spelling.trim_end_matches('?');
        Ok(match value {
            IValue::None => Argument::None,
            IValue::Tensor(_) => Argument::Tensor(self.tensor_name(value)?),
            IValue::Bool(flag) => Argument::Bool(*flag),
            IValue::Int(number) => match spelling {
                "ScalarType" => {
                    Argument::ScalarType(dtype_code_of_index(*number).ok_or_else(|| {
                        self.node_error(node, format!("dtype number {number} has no export code"))
                    })?)
                }
                "MemoryFormat" => Argument::MemoryFormat(
                    memory_format_code(*number)
                        .ok_or_else(|| self.node_error(node, format!("memory format {number}")))?,
                ),
                "Layout" if *number == 0 => Argument::Layout(crate::metadata::LAYOUT_STRIDED),
                "Layout" => return Err(self.node_error(node, "a layout other than strided")),
                _ => Argument::Int(*number),
            },
            IValue::Double(number) => Argument::Float(*number),
            IValue::Str(text) => Argument::String(text.to_string()),
            IValue::Device(device) => Argument::Device(ferrojit_export::model::Device {
                device_type: device.device_type.clone(),
                index: device.index,
            }),
            IValue::List(list) => {
                let items = list.to_vec();
                let element = spelling.trim_end_matches(|c: char| c == ']' || c.is_ascii_digit());
                let element = element.trim_end_matches('[');
                if element == "Tensor?" {
                    let mut optional = Vec::new();
                    for item in &items {
                        optional.push(match item {
                            IValue::None => OptionalTensorArgument::None,
                            _ => OptionalTensorArgument::Tensor(self.tensor_name(item)?),
                        });
                    }
                    Argument::OptionalTensors(optional)
                } else if element == "Tensor" || items.iter().any(is_tensor_value) {
                    let mut names = Vec::new();
                    for item in &items {
                        names.push(self.tensor_name(item)?);
                    }
                    Argument::Tensors(names)
                } else if items.iter().all(|i| matches!(i, IValue::Int(_)))
                    && element != "float"
                    && element != "bool"
                {
                    Argument::Ints(items.iter().filter_map(|i| i.to_int().ok()).collect())
                } else if items
                    .iter()
                    .all(|i| matches!(i, IValue::Double(_) | IValue::Int(_)))
                    && element != "bool"
                {
                    Argument::Floats(items.iter().filter_map(|i| i.to_double().ok()).collect())
                } else if items.iter().all(|i| matches!(i, IValue::Bool(_))) {
                    Argument::Bools(items.iter().filter_map(|i| i.to_bool().ok()).collect())
                } else {
                    return Err(self.node_error(
                        node,
                        format!("argument '{}' is a list Export IR cannot hold", formal.name),
                    ));
                }
            }
            other => {
                return Err(self.node_error(
                    node,
                    format!(
                        "argument '{}' is a {} (Export IR arguments are tensors, numbers, \
                         strings and lists of them)",
                        formal.name,
                        other.tag_name()
                    ),
                ))
            }
        })
    }

    /// Runs a TorchScript operator node.
    pub(crate) fn run_operator(&mut self, node: NodeId) -> Result<()> {
        let inputs = self.static_inputs(node)?;
        let operator = self.find_operator(node)?;
        let schema = operator.schema.clone();
        let mut stack = inputs;
        if !schema.is_vararg {
            if stack.len() > schema.arguments.len() {
                return Err(self.node_error(node, "more inputs than the schema takes"));
            }
            for formal in &schema.arguments[stack.len()..] {
                let default = formal.default.as_ref().ok_or_else(|| {
                    self.node_error(node, format!("no value for '{}'", formal.name))
                })?;
                stack.push(
                    default_value(default, &formal.ty)
                        .map_err(|e| self.node_error(node, e.to_string()))?,
                );
            }
        }
        let takes_tensor = schema.arguments.iter().any(|a| mentions_tensor(&a.ty));
        let returns_tensor = schema.returns.iter().any(|a| mentions_tensor(&a.ty));
        let namespace = schema.name.split_once("::").map_or("", |(ns, _)| ns);
        let symbolic = self.symbolic_inputs(node);
        if !symbolic.is_empty() {
            // Only operators on tensors reach here with symbolic ints (run_node sends the
            // rest to run_symbolic_node); they take them as SymInt arguments.
            self.pending_sym_arguments = symbolic;
            let results = self.call_and_emit(node, operator, stack)?;
            return self.set_outputs(node, results);
        }
        if schema.name == "aten::size" && self.run_symbolic_size(node, &stack)? {
            return Ok(());
        }
        if let Some(tensor) = stack.iter().find(|v| self.is_symbolic_tensor(v)) {
            let unqualified = base_name(&schema);
            if SIZE_READERS.contains(&unqualified) {
                let dims = self.dims_of(tensor).unwrap_or_default();
                let dynamic: Vec<String> = dims
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| d.is_symbolic())
                    .map(|(i, d)| format!("dimension {i} ({})", d.expression()))
                    .collect();
                return Err(self.node_error(
                    node,
                    format!(
                        "{} reads the sizes of a tensor whose {} is dynamic; the converter \
                         cannot express its result symbolically",
                        schema.full_name(),
                        dynamic.join(", ")
                    ),
                ));
            }
        }
        if !returns_tensor && (!takes_tensor || namespace == "prim") {
            if self.in_subgraph() && !written_arguments(&schema).is_empty() {
                return Err(self.node_error(node, "mutates a value inside a data-dependent branch"));
            }
            // A string made from a tensor (`str(t)`, `"{}".format(t)`) reads its data.
            let reads_tensor = stack.iter().find(|v| is_tensor_value(v)).cloned();
            let results = self.run_kernel(node, operator, stack)?;
            let makes_text = results.iter().any(|v| matches!(v, IValue::Str(_)));
            self.set_outputs(node, results)?;
            if let (Some(tensor), true) = (reads_tensor, makes_text) {
                self.mark_outputs_data_dependent(node, &tensor, &schema);
            }
            return Ok(());
        }
        if TENSOR_LITERALS.contains(&schema.name.as_str()) && !stack.iter().any(is_tensor_value) {
            // A tensor written out in the code (`torch.tensor([1, 2])`): a lifted constant.
            let results = self.run_kernel(node, operator, stack)?;
            return self.set_outputs(node, results);
        }
        if !returns_tensor {
            let tensor = stack.iter().find(|v| is_tensor_value(v)).cloned();
            let results = self.run_kernel(node, operator, stack)?;
            let unqualified = base_name(&schema);
            let is_metadata = METADATA_OPERATORS
                .contains(&schema.name.split_once("::").map_or("", |(_, n)| n))
                || METADATA_OPERATORS.contains(&unqualified);
            self.set_outputs(node, results)?;
            if !is_metadata {
                if let Some(tensor) = tensor {
                    self.mark_outputs_data_dependent(node, &tensor, &schema);
                }
            }
            return Ok(());
        }
        if namespace == "prim" {
            // prim operators that make tensors from static values make constants.
            let results = self.run_kernel(node, operator, stack.clone())?;
            if stack.iter().any(is_tensor_value) {
                return Err(
                    self.node_error(node, "a prim operator on tensors has no Export IR form")
                );
            }
            return self.set_outputs(node, results);
        }
        let results = self.call_and_emit(node, operator, stack)?;
        self.set_outputs(node, results)
    }

    /// Marks every output of `node` as read out of `tensor`'s data by the operator `schema`.
    fn mark_outputs_data_dependent(
        &mut self,
        node: NodeId,
        tensor: &IValue,
        schema: &FunctionSchema,
    ) {
        for &output in self.graph.node_outputs(node) {
            self.data_dependent.insert(
                output,
                DataDependent {
                    tensor: tensor.clone(),
                    operator: schema.full_name(),
                },
            );
        }
    }

    fn run_kernel(
        &self,
        node: NodeId,
        operator: &Operator,
        mut stack: Vec<IValue>,
    ) -> Result<Vec<IValue>> {
        // A vararg kernel finds its argument count on top of the stack, as the interpreter
        // pushes it.
        if operator.schema.is_vararg {
            let count = stack.len() as i64;
            stack.push(IValue::Int(count));
        }
        (operator.kernel)(&mut stack)
            .map_err(|e| self.node_error(node, format!("failed on the example inputs: {e}")))?;
        Ok(stack)
    }

    /// Calls `operator` on the example values in `stack` (all arguments, in schema order) and
    /// emits its node; returns the kernel's results.
    pub(crate) fn call_and_emit(
        &mut self,
        node: NodeId,
        operator: &Operator,
        stack: Vec<IValue>,
    ) -> Result<Vec<IValue>> {
        let schema = operator.schema.clone();
        let symbolic = std::mem::take(&mut self.pending_sym_arguments);
        let written = written_arguments(&schema);
        let written_tensors: Vec<usize> = written
            .iter()
            .copied()
            .filter(|&i| stack.get(i).is_some_and(is_tensor_value))
            .collect();
        let export_operator = if written.is_empty() {
            operator
        } else {
            if self.in_subgraph() {
                return Err(
                    self.node_error(node, "writes into a tensor inside a data-dependent branch")
                );
            }
            for &index in &written_tensors {
                if !self.write_is_functional(&stack[index]) {
                    return Err(self.node_error(
                        node,
                        format!(
                            "{} writes into a tensor that shares memory with another (a view); \
                             the write cannot be made functional",
                            schema.full_name()
                        ),
                    ));
                }
            }
            self.functional_variant(node, &schema)?
        };
        let export_schema = export_operator.schema.clone();
        // Arguments by name (the functional variant's are a subset of the original's).
        let mut inputs = Vec::new();
        for formal in &export_schema.arguments {
            let Some(index) = schema.arguments.iter().position(|a| a.name == formal.name) else {
                return Err(self.node_error(node, format!("no value for '{}'", formal.name)));
            };
            let value = stack
                .get(index)
                .cloned()
                .ok_or_else(|| self.node_error(node, format!("no value for '{}'", formal.name)))?;
            let arg = match symbolic.iter().find(|(i, _)| *i == index) {
                Some((_, SymValue::Int(scalar))) => {
                    Argument::SymInt(SymArgument::Name(scalar.name.clone()))
                }
                Some((_, SymValue::List(entries))) => {
                    let values = value
                        .to_int_vec()
                        .map_err(|e| self.node_error(node, e.to_string()))?;
                    Argument::SymInts(
                        values
                            .iter()
                            .zip(entries)
                            .map(|(v, entry)| match entry {
                                Some(scalar) => SymArgument::Name(scalar.name.clone()),
                                None => SymArgument::Literal(*v),
                            })
                            .collect(),
                    )
                }
                None => self.export_argument(node, formal, &value)?,
            };
            inputs.push(NamedArgument {
                name: formal.name.clone(),
                arg,
                kind: Some(if formal.kwarg_only {
                    ArgumentKind::Keyword
                } else {
                    ArgumentKind::Positional
                }),
            });
        }
        let argument_values = stack.clone();
        // A functionalized call: the functional kernel runs first, on the values before the
        // write, and gives the new value of each written tensor.
        let functional_results = if written.is_empty() {
            None
        } else {
            let mut functional_stack = Vec::new();
            for formal in &export_schema.arguments {
                let index = schema.arguments.iter().position(|a| a.name == formal.name);
                functional_stack.push(
                    index
                        .and_then(|i| stack.get(i).cloned())
                        .unwrap_or_default(),
                );
            }
            Some(self.run_kernel(node, export_operator, functional_stack)?)
        };
        let results = self.run_kernel(node, operator, stack)?;
        let made: Vec<IValue> = functional_results.unwrap_or_else(|| results.clone());
        if !written.is_empty() && made.len() != written_tensors.len() {
            return Err(self.node_error(
                node,
                format!(
                    "{} returns {} values for {} written tensors",
                    export_schema.full_name(),
                    made.len(),
                    written_tensors.len()
                ),
            ));
        }
        let base = base_name(&export_schema).to_string();
        self.record_result_sizes(node, &base, &argument_values, &symbolic, &made)?;
        let mut outputs = Vec::new();
        for value in &made {
            match value {
                IValue::Tensor(_) => {
                    let name = self.fresh_name(&base);
                    self.bind_tensor(value, &name)?;
                    outputs.push(Argument::Tensor(name));
                }
                IValue::List(list) if list.to_vec().iter().all(is_tensor_value) => {
                    let mut names = Vec::new();
                    for item in list.to_vec() {
                        let name = self.fresh_name(&format!("{base}_item"));
                        self.bind_tensor(&item, &name)?;
                        names.push(name);
                    }
                    outputs.push(Argument::Tensors(names));
                }
                IValue::None => outputs.push(Argument::None),
                other => {
                    return Err(self.node_error(
                        node,
                        format!(
                            "{} returns a {} beside tensors",
                            export_schema.full_name(),
                            other.tag_name()
                        ),
                    ))
                }
            }
        }
        // A node with one tensor output shares its name; one with several has its own (the
        // reader names the outputs' getitem nodes after them).
        let name = match outputs.as_slice() {
            [Argument::Tensor(single)] => single.clone(),
            _ => self.fresh_name(&base),
        };
        let metadata = self.node_metadata(node);
        self.push_node(Node {
            target: target_name(&export_schema),
            inputs,
            outputs,
            metadata,
            is_hop_single_tensor_return: None,
            name: Some(name),
        });
        // The written tensors now have the functional results' values (cast to the written
        // tensor's dtype, as an in-place or out= write casts).
        for (&index, value) in written_tensors.iter().zip(&made) {
            let target = &argument_values[index];
            let (Ok(written), Ok(made_tensor)) = (target.to_tensor(), value.to_tensor()) else {
                continue;
            };
            if written.sizes() != made_tensor.sizes() {
                return Err(self.node_error(
                    node,
                    "writes a result of another shape into its output tensor (a resize)",
                ));
            }
            let mut current = value.clone();
            if written.dtype() != made_tensor.dtype() {
                current = self.emit_simple(
                    node,
                    "aten::to.dtype",
                    vec![
                        current,
                        IValue::Int(written.dtype().scalar_type_index()),
                        IValue::Bool(false),
                        IValue::Bool(false),
                        IValue::None,
                    ],
                )?;
            }
            let name = self.tensor_name(&current)?;
            self.rename_tensor(target, &name);
            // A write into a view is a write into its base: scatter the new value back.
            if let Some(view) = cell_key(target).and_then(|key| self.views.get(&key).cloned()) {
                let mut arguments = vec![view.base.clone(), current];
                arguments.extend(view.arguments.iter().cloned());
                let scattered = self.emit_simple(node, view.scatter, arguments)?;
                let base_name = self.tensor_name(&scattered)?;
                self.rename_tensor(&view.base, &base_name);
            }
        }
        if written.is_empty() {
            self.record_view(&schema, &argument_values, &made);
        }
        Ok(results)
    }

    /// Remembers how a `select` or `slice` result was cut from its base.
    fn record_view(&mut self, schema: &FunctionSchema, arguments: &[IValue], made: &[IValue]) {
        let scatter = match schema.full_name().as_str() {
            "aten::select.int" => "aten::select_scatter",
            "aten::slice.Tensor" => "aten::slice_scatter",
            _ => return,
        };
        if let (Some(base), Some(key)) = (arguments.first(), made.first().and_then(cell_key)) {
            self.views.insert(
                key,
                ViewOf {
                    base: base.clone(),
                    scatter,
                    arguments: arguments[1..].to_vec(),
                },
            );
        }
    }

    /// Emits a call of the operator `full_name` on `arguments` (the leading ones; the rest
    /// take their defaults) for node `node`, returning its first result.
    pub(crate) fn emit_simple(
        &mut self,
        node: NodeId,
        full_name: &str,
        arguments: Vec<IValue>,
    ) -> Result<IValue> {
        let operator = ferrojit_export::fallback::find_operator(full_name)
            .ok_or_else(|| self.node_error(node, format!("{full_name} is not registered")))?;
        let mut stack = arguments;
        for formal in &operator.schema.arguments[stack.len().min(operator.schema.arguments.len())..]
        {
            let default = formal
                .default
                .as_ref()
                .ok_or_else(|| self.node_error(node, format!("no value for '{}'", formal.name)))?;
            stack.push(
                default_value(default, &formal.ty)
                    .map_err(|e| self.node_error(node, e.to_string()))?,
            );
        }
        let results = self.call_and_emit(node, operator, stack)?;
        results
            .into_iter()
            .next()
            .ok_or_else(|| self.node_error(node, format!("{full_name} returned nothing")))
    }
}
