//! The walk over a TorchScript graph with concrete example values. Every TorchScript value
//! holds its example value; every tensor also has an Export IR name, found by the identity
//! of its tensor cell (a list of tensors names its elements through their cells). Values
//! that are not tensors are specialized to their example value, so static branches and
//! loops disappear; values read out of tensor data are marked data-dependent, and only a
//! branch may use one (it becomes `cond`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use ferrojit_export::model::{Node, TensorMeta};
use ferrojit_ir::{BlockId, Graph as IrGraph, NodeId, Prim, Type, ValueId};
use ferrojit_runtime::interpreter::code::decode_constant;
use ferrojit_runtime::ivalue::value_matches_type;
use ferrojit_runtime::{IValue, ListValue, MethodSource, Object, OperatorRegistry, TupleValue};
use ferrojit_tensor::Tensor;

use crate::dynamic::Dim;
use crate::error::{ConvertError, Result};
use crate::metadata::tensor_meta;
use crate::symbolic_shapes::{symbolic_tensor_meta, SymValue};

/// The most loop iterations the converter unrolls in one program.
pub const MAX_UNROLLED_ITERATIONS: usize = 100_000;

/// A value read out of tensor data (`bool(t)`, `t.item()`): unknown until the program runs.
#[derive(Debug, Clone)]
pub(crate) struct DataDependent {
    /// The tensor it was read from.
    pub tensor: IValue,
    /// The operator that read it (`aten::Bool.Tensor`).
    pub operator: String,
}

/// One graph being built: the top-level graph, or a subgraph of `cond`.
#[derive(Default)]
pub(crate) struct Scope {
    pub nodes: Vec<Node>,
    pub tensor_values: BTreeMap<String, TensorMeta>,
    /// Tensor cell → its current name here (the value is kept so the cell's address stays
    /// unique while the scope lives).
    pub names: HashMap<usize, (String, IValue)>,
    /// For a subgraph: the outer tensors it reads, with the names of its inputs for them.
    pub captures: Vec<(IValue, String)>,
    /// Symbolic ints (`sym_size.int` and the arithmetic on it) by name.
    pub sym_int_values: BTreeMap<String, ferrojit_export::model::SymInt>,
}

/// What a module attribute tensor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StateKind {
    Parameter,
    Buffer,
}

/// A tensor constant lifted into the program's inputs.
pub(crate) struct LiftedConstant {
    pub placeholder: String,
    pub target: String,
    pub value: Tensor,
}

pub(crate) struct Converter<'g> {
    pub graph: &'g IrGraph,
    pub registry: &'static OperatorRegistry,
    pub values: HashMap<ValueId, IValue>,
    pub data_dependent: HashMap<ValueId, DataDependent>,
    pub scopes: Vec<Scope>,
    pub used_names: HashSet<String>,
    pub constants: Vec<LiftedConstant>,
    /// Loop iterations unrolled so far.
    pub unrolled: usize,
    pub subgraph_count: usize,
    /// Where objects of script classes made by the program find their methods.
    pub methods: Option<Arc<dyn MethodSource>>,
    /// Objects the program made itself (`prim::CreateObject`): their attributes are plain
    /// values of the walk and may be assigned.
    pub created_objects: HashSet<usize>,
    /// Tensors made by `select`/`slice`, by cell: a write into one becomes a write into its
    /// base through `select_scatter`/`slice_scatter`.
    pub views: HashMap<usize, ViewOf>,
    /// Tensors with dynamic sizes (`--dynamic`), by cell: their symbolic sizes.
    pub symbolic_sizes: HashMap<usize, Vec<Dim>>,
    /// Values of the walk that are (or hold) sizes read from dynamic dimensions.
    pub sym_values: HashMap<ValueId, SymValue>,
    /// The symbolic arguments of the operator call being emitted, by schema position.
    pub pending_sym_arguments: Vec<(usize, SymValue)>,
    /// The `--dynamic` dimensions: (input name, dimension, symbol `sN`, range).
    pub dynamic_inputs: Vec<(
        String,
        usize,
        String,
        ferrojit_export::model::RangeConstraint,
    )>,
}

/// How a tensor was cut out of its base.
#[derive(Debug, Clone)]
pub(crate) struct ViewOf {
    pub base: IValue,
    /// `aten::select_scatter` or `aten::slice_scatter`.
    pub scatter: &'static str,
    /// The view's arguments after the base (dim, index / dim, start, end, step).
    pub arguments: Vec<IValue>,
}

/// The address of a tensor value's cell: its identity.
pub(crate) fn cell_key(value: &IValue) -> Option<usize> {
    match value {
        IValue::Tensor(cell) => Some(Arc::as_ptr(cell) as usize),
        _ => None,
    }
}

/// `file:line` of a node, or of the call it was inlined from: the original Python source's
/// when the archive's `.debug_pkl` records it, else the archive's generated `code/` file's.
pub(crate) fn node_location(graph: &IrGraph, node: NodeId) -> String {
    let data = graph.node(node);
    let location = match (&data.source_location, data.call_stack.first()) {
        (Some(location), _) | (None, Some((_, location))) => location,
        (None, None) => return "an unknown line".to_string(),
    };
    let original = location.range.as_ref().and_then(|range| {
        let origin = range.file.origin_of(range.start)?;
        let line = origin.file.first_line_number() + origin.file.line_index(origin.start);
        Some(format!("{}:{line}", origin.file.name()))
    });
    original.unwrap_or_else(|| format!("{}:{}", location.file, location.line))
}

impl<'g> Converter<'g> {
    pub fn new(graph: &'g IrGraph) -> Converter<'g> {
        Converter {
            graph,
            registry: OperatorRegistry::global(),
            values: HashMap::new(),
            data_dependent: HashMap::new(),
            scopes: vec![Scope::default()],
            used_names: HashSet::new(),
            constants: Vec::new(),
            unrolled: 0,
            subgraph_count: 0,
            methods: None,
            created_objects: HashSet::new(),
            views: HashMap::new(),
            symbolic_sizes: HashMap::new(),
            sym_values: HashMap::new(),
            pending_sym_arguments: Vec::new(),
            dynamic_inputs: Vec::new(),
        }
    }

    pub fn node_error(&self, node: NodeId, message: impl Into<String>) -> ConvertError {
        ConvertError::Node {
            kind: self.graph.kind(node).as_str().to_string(),
            location: node_location(self.graph, node),
            message: message.into(),
        }
    }

    /// A name not used before in the program: `base`, `base_1`, `base_2`, ...
    pub fn fresh_name(&mut self, base: &str) -> String {
        let mut base: String = base
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) {
            base.insert(0, '_');
        }
        let mut candidate = base.clone();
        let mut suffix = 0;
        while self.used_names.contains(&candidate) {
            suffix += 1;
            candidate = format!("{base}_{suffix}");
        }
        self.used_names.insert(candidate.clone());
        candidate
    }

    fn current(&mut self) -> &mut Scope {
        self.scopes.last_mut().expect("the top scope always exists")
    }

    pub fn in_subgraph(&self) -> bool {
        self.scopes.len() > 1
    }

    /// Records `value` (a tensor) under `name` in the current scope, with its metadata.
    pub fn bind_tensor(&mut self, value: &IValue, name: &str) -> Result<()> {
        let depth = self.scopes.len() - 1;
        self.bind_tensor_in(depth, value, name)
    }

    fn bind_tensor_in(&mut self, depth: usize, value: &IValue, name: &str) -> Result<()> {
        let (Some(key), IValue::Tensor(cell)) = (cell_key(value), value) else {
            return Err(ConvertError::Program(format!(
                "'{name}' is not a tensor value"
            )));
        };
        let meta = match self.symbolic_sizes.get(&key) {
            Some(dims) => symbolic_tensor_meta(&cell.get(), cell.requires_grad(), dims)
                .map_err(|e| ConvertError::Program(format!("'{name}': {e}")))?,
            None => tensor_meta(&cell.get(), cell.requires_grad()).ok_or_else(|| {
                ConvertError::Program(format!(
                    "'{name}' has dtype {:?}, which Export IR cannot name",
                    cell.get().dtype()
                ))
            })?,
        };
        let scope = &mut self.scopes[depth];
        scope.tensor_values.insert(name.to_string(), meta);
        scope.names.insert(key, (name.to_string(), value.clone()));
        Ok(())
    }

    /// Gives tensor `value` the name `name` in the current scope, keeping the metadata
    /// recorded for `name` (a written tensor takes the name of its new value).
    pub fn rename_tensor(&mut self, value: &IValue, name: &str) {
        if let Some(key) = cell_key(value) {
            self.current()
                .names
                .insert(key, (name.to_string(), value.clone()));
        }
    }

    /// The Export IR name of a tensor value in the current scope. A tensor no scope knows
    /// (a constant of the code) is lifted into the program as a tensor constant; a tensor of
    /// an enclosing scope becomes an input of the subgraphs in between.
    pub fn tensor_name(&mut self, value: &IValue) -> Result<String> {
        let depth = self.scopes.len() - 1;
        self.tensor_name_at(depth, value)
    }

    fn tensor_name_at(&mut self, depth: usize, value: &IValue) -> Result<String> {
        let Some(key) = cell_key(value) else {
            return Err(ConvertError::Program(format!(
                "expected a tensor, found {}",
                value.tag_name()
            )));
        };
        if let Some((name, _)) = self.scopes[depth].names.get(&key) {
            return Ok(name.clone());
        }
        if depth == 0 {
            let index = self.constants.len();
            let placeholder = self.fresh_name(&format!("c_lifted_tensor_{index}"));
            let tensor = value
                .to_tensor()
                .map_err(|e| ConvertError::Program(e.to_string()))?;
            self.constants.push(LiftedConstant {
                placeholder: placeholder.clone(),
                target: format!("lifted_tensor_{index}"),
                value: tensor.clone_tensor(),
            });
            self.bind_tensor_in(0, value, &placeholder)?;
            return Ok(placeholder);
        }
        let outer = self.tensor_name_at(depth - 1, value)?;
        let inner = self.fresh_name(&outer);
        let meta = self.scopes[depth - 1]
            .tensor_values
            .get(&outer)
            .cloned()
            .ok_or_else(|| ConvertError::Program(format!("no metadata for '{outer}'")))?;
        let scope = &mut self.scopes[depth];
        scope.tensor_values.insert(inner.clone(), meta);
        scope.names.insert(key, (inner.clone(), value.clone()));
        scope.captures.push((value.clone(), inner.clone()));
        Ok(inner)
    }

    /// The other tensors this program knows that share `value`'s storage (its views, or
    /// the tensor it is a view of), each once.
    pub fn aliases(&self, value: &IValue) -> Vec<IValue> {
        let (Some(key), IValue::Tensor(cell)) = (cell_key(value), value) else {
            return Vec::new();
        };
        let tensor = cell.get();
        let mut seen = HashSet::new();
        let mut found = Vec::new();
        for scope in &self.scopes {
            for (other_key, (_, other)) in &scope.names {
                if *other_key != key
                    && matches!(other, IValue::Tensor(other_cell)
                        if other_cell.get().shares_storage(&tensor))
                    && seen.insert(*other_key)
                {
                    found.push(other.clone());
                }
            }
        }
        found
    }

    /// Whether a write into `value` can be made functional: nothing shares its memory, or
    /// it is a `select`/`slice` of a base that nothing else shares.
    pub fn write_is_functional(&self, value: &IValue) -> bool {
        let aliases = self.aliases(value);
        if aliases.is_empty() {
            return true;
        }
        let Some(view) = cell_key(value).and_then(|key| self.views.get(&key)) else {
            return false;
        };
        aliases.len() == 1 && cell_key(&aliases[0]) == cell_key(&view.base)
    }

    pub fn push_node(&mut self, node: Node) {
        self.current().nodes.push(node);
    }

    pub fn value(&self, node: NodeId, value: ValueId) -> Result<IValue> {
        self.values
            .get(&value)
            .cloned()
            .ok_or_else(|| self.node_error(node, format!("reads {value}, which has no value")))
    }

    /// The example values of a node's inputs; `Err` when one is data-dependent.
    pub fn static_inputs(&self, node: NodeId) -> Result<Vec<IValue>> {
        let inputs = self.graph.node_inputs(node);
        for input in inputs {
            if let Some(dependent) = self.data_dependent.get(input) {
                return Err(self.node_error(
                    node,
                    format!(
                        "it uses a value read from tensor data by {} (data-dependent values \
                         can only decide a branch on tensors)",
                        dependent.operator
                    ),
                ));
            }
        }
        inputs.iter().map(|&v| self.value(node, v)).collect()
    }

    pub fn set_outputs(&mut self, node: NodeId, results: Vec<IValue>) -> Result<()> {
        let outputs = self.graph.node_outputs(node);
        if outputs.len() != results.len() {
            return Err(self.node_error(
                node,
                format!("{} results for {} outputs", results.len(), outputs.len()),
            ));
        }
        for (&output, value) in outputs.iter().zip(results) {
            self.data_dependent.remove(&output);
            self.sym_values.remove(&output);
            self.values.insert(output, value);
        }
        Ok(())
    }

    /// Copies a value (and whether it is data-dependent) from `from` to `to`.
    pub fn forward_value(&mut self, node: NodeId, from: ValueId, to: ValueId) -> Result<()> {
        let value = self.value(node, from)?;
        match self.data_dependent.get(&from).cloned() {
            Some(dependent) => self.data_dependent.insert(to, dependent),
            None => self.data_dependent.remove(&to),
        };
        match self.sym_values.get(&from).cloned() {
            Some(symbolic) => self.sym_values.insert(to, symbolic),
            None => self.sym_values.remove(&to),
        };
        self.values.insert(to, value);
        Ok(())
    }

    pub fn run_block(&mut self, block: BlockId) -> Result<()> {
        for node in self.graph.block_nodes(block) {
            self.run_node(node)?;
        }
        Ok(())
    }

    fn run_node(&mut self, node: NodeId) -> Result<()> {
        let kind = self.graph.kind(node).clone();
        let outputs = self.graph.node_outputs(node).to_vec();
        let symbolic = self.symbolic_inputs(node);
        if !symbolic.is_empty()
            && !matches!(kind.prim(), Some(Prim::UncheckedCast))
            && !self.takes_symbolic_arguments(node)
        {
            return self.run_symbolic_node(node, symbolic);
        }
        match kind.prim() {
            Some(Prim::Constant) => {
                let ty = outputs
                    .first()
                    .map(|&o| self.graph.value_type(o).clone())
                    .ok_or_else(|| self.node_error(node, "a constant without an output"))?;
                let value = decode_constant(&ty, self.graph.attribute(node, "value"))
                    .map_err(|e| self.node_error(node, e.to_string()))?;
                self.set_outputs(node, vec![value])
            }
            Some(Prim::If) => self.run_if(node),
            Some(Prim::Loop) => self.run_loop(node),
            Some(Prim::GetAttr) => {
                let inputs = self.static_inputs(node)?;
                let name = self.string_attribute(node, "name")?;
                let object = inputs
                    .first()
                    .and_then(|v| v.to_object().ok())
                    .ok_or_else(|| {
                        self.node_error(node, "GetAttr on a value that is not an object")
                    })?;
                let value = object
                    .get_attr(&name)
                    .map_err(|e| self.node_error(node, e.to_string()))?;
                self.set_outputs(node, vec![value])
            }
            Some(Prim::SetAttr) => self.run_set_attr(node),
            Some(Prim::CreateObject) => {
                let class = match outputs.first().map(|&o| self.graph.value_type(o)) {
                    Some(Type::Class(class)) => class.clone(),
                    _ => return Err(self.node_error(node, "creates an object of no class")),
                };
                let methods = self
                    .methods
                    .clone()
                    .ok_or_else(|| self.node_error(node, "no methods for script classes"))?;
                let object = Object::new(class, methods);
                self.created_objects.insert(Arc::as_ptr(&object) as usize);
                self.set_outputs(node, vec![IValue::Object(object)])
            }
            Some(Prim::UncheckedCast) => {
                let input = self.graph.node_inputs(node)[0];
                self.forward_value(node, input, outputs[0])
            }
            Some(Prim::TupleConstruct) => {
                let items = self.static_inputs(node)?;
                self.set_outputs(node, vec![IValue::Tuple(TupleValue::new(items))])
            }
            Some(Prim::ListConstruct) => {
                let items = self.static_inputs(node)?;
                let element = match self.graph.value_type(outputs[0]) {
                    Type::List(element) => element.as_ref().clone(),
                    _ => Type::Any,
                };
                self.set_outputs(node, vec![IValue::List(ListValue::new(element, items))])
            }
            Some(Prim::DictConstruct) => {
                let items = self.static_inputs(node)?;
                let (key_type, value_type) = match self.graph.value_type(outputs[0]) {
                    Type::Dict(key, value) => (key.as_ref().clone(), value.as_ref().clone()),
                    _ => (Type::Any, Type::Any),
                };
                let dict = ferrojit_runtime::DictValue::new(key_type, value_type);
                for pair in items.chunks(2) {
                    if let [key, value] = pair {
                        dict.insert(key.clone(), value.clone());
                    }
                }
                self.set_outputs(node, vec![IValue::Dict(dict)])
            }
            Some(Prim::TupleUnpack) | Some(Prim::ListUnpack) => {
                let inputs = self.static_inputs(node)?;
                let items = match inputs.first() {
                    Some(IValue::Tuple(tuple)) => tuple.items.clone(),
                    Some(IValue::List(list)) => list.to_vec(),
                    _ => {
                        return Err(self.node_error(node, "unpacks a value that is not a sequence"))
                    }
                };
                if items.len() != outputs.len() {
                    return Err(self.node_error(
                        node,
                        format!(
                            "expected {} elements but found {}",
                            outputs.len(),
                            items.len()
                        ),
                    ));
                }
                self.set_outputs(node, items)
            }
            Some(Prim::TupleIndex) => {
                let inputs = self.static_inputs(node)?;
                let (Some(IValue::Tuple(tuple)), Some(IValue::Int(index))) =
                    (inputs.first(), inputs.get(1))
                else {
                    return Err(self.node_error(node, "indexes a value that is not a tuple"));
                };
                let length = tuple.items.len() as i64;
                let position = if *index < 0 { index + length } else { *index };
                let item = usize::try_from(position)
                    .ok()
                    .and_then(|p| tuple.items.get(p).cloned())
                    .ok_or_else(|| self.node_error(node, "tuple index out of range"))?;
                self.set_outputs(node, vec![item])
            }
            Some(Prim::Uninitialized) => self.set_outputs(node, vec![IValue::Uninitialized]),
            Some(Prim::RaiseException) => Err(self.node_error(
                node,
                "the program raises an exception on the example inputs",
            )),
            Some(Prim::Print) => Ok(()),
            Some(Prim::IsInstance) => {
                let inputs = self.static_inputs(node)?;
                let types = match self.graph.attribute(node, "types") {
                    Some(ferrojit_ir::AttributeValue::Types(types)) => types.clone(),
                    Some(ferrojit_ir::AttributeValue::Type(ty)) => vec![ty.clone()],
                    _ => return Err(self.node_error(node, "isinstance without types")),
                };
                let value = inputs.first().cloned().unwrap_or_default();
                let result = types.iter().any(|ty| value_matches_type(&value, ty));
                self.set_outputs(node, vec![IValue::Bool(result)])
            }
            Some(Prim::CallMethod) | Some(Prim::CallFunction) => Err(self.node_error(
                node,
                "a call that could not be inlined (its callee is unknown)",
            )),
            Some(Prim::Fork) => Err(self.node_error(node, "asynchronous calls (fork/wait)")),
            _ if kind.as_str() == "aten::warn" => Ok(()),
            _ => self.run_operator(node),
        }
    }

    pub fn string_attribute(&self, node: NodeId, name: &str) -> Result<String> {
        match self.graph.attribute(node, name) {
            Some(ferrojit_ir::AttributeValue::Str(text)) => Ok(text.clone()),
            _ => Err(self.node_error(node, format!("missing its '{name}' attribute"))),
        }
    }

    fn run_set_attr(&mut self, node: NodeId) -> Result<()> {
        let inputs = self.static_inputs(node)?;
        let name = self.string_attribute(node, "name")?;
        let (Some(IValue::Object(object)), Some(value)) = (inputs.first(), inputs.get(1)) else {
            return Err(self.node_error(node, "SetAttr on a value that is not an object"));
        };
        if self.in_subgraph() {
            return Err(self.node_error(
                node,
                format!("assigns attribute '{name}' inside a data-dependent branch or loop"),
            ));
        }
        if self
            .created_objects
            .contains(&(Arc::as_ptr(object) as usize))
        {
            return object
                .set_attr(&name, value.clone())
                .map_err(|e| self.node_error(node, e.to_string()));
        }
        let current = object
            .get_attr(&name)
            .map_err(|e| self.node_error(node, e.to_string()))?;
        let kind = object
            .class()
            .attributes()
            .into_iter()
            .find(|attribute| attribute.name == name)
            .map(|attribute| attribute.kind);
        match (current, value, kind) {
            (IValue::Tensor(_), IValue::Tensor(_), Some(ferrojit_ir::AttributeKind::Buffer)) => {}
            (old, new, _) if old.is_same_identity(new) => {}
            _ => {
                return Err(self.node_error(
                    node,
                    format!(
                        "assigns module attribute '{name}' (only buffers may be assigned tensors; \
                         other attributes cannot change in an exported program)"
                    ),
                ))
            }
        }
        object
            .set_attr(&name, value.clone())
            .map_err(|e| self.node_error(node, e.to_string()))?;
        Ok(())
    }

    pub fn block_output_values(&mut self, node: NodeId, block: BlockId) -> Result<()> {
        let outputs = self.graph.node_outputs(node).to_vec();
        let results = self.graph.block_outputs(block).to_vec();
        if outputs.len() != results.len() {
            return Err(self.node_error(node, "a block returns the wrong number of values"));
        }
        for (output, result) in outputs.into_iter().zip(results) {
            self.forward_value(node, result, output)?;
        }
        Ok(())
    }
}
