//! `AliasDb`: PyTorch's alias analysis. Which values may share memory, which nodes write to
//! which memory, and whether a node can be moved without changing what the graph computes.
//!
//! Every value of a mutable type (see [`containment`]) gets an element in a memory DAG
//! ([`memory_locations`]). Nodes are analysed in order, as PyTorch's `AliasDb::analyzeImpl`
//! does: nodes with a schema follow its alias annotations (`Tensor(a)` output points to the
//! `(a)` input, `(a!)` writes, `(a -> *)` sends the value to the wildcard set, `Tensor(a)[]`
//! annotates the elements), control flow unions its branches, container constructs put their
//! inputs in the wildcard set of their type and hold that wildcard, extractors (`GetAttr`,
//! `TupleUnpack`, `ListUnpack`) give wildcards, `prim::fork` sends its inputs to the
//! wildcards and `aten::wait` writes to every wildcard, group nodes (`DifferentiableGraph`,
//! fusion groups) are analysed through their `Subgraph`, and calls or unknown operators are
//! analysed conservatively (they may write to everything their inputs contain, and give
//! wildcards). Graph inputs start in the wildcard set of their type; a list or tuple used
//! only as the graph's output holds its own elements.
//!
//! The answers are PyTorch's: `tests/alias_analysis.rs` compares them with what
//! `graph.alias_db()` answered for the graphs in `tests/fixtures/alias`.
//!
//! An `AliasDb` answers for the graph it was built from; moves made through it keep its
//! answers valid (no value or write changes), other edits do not.

pub mod containment;
mod dump;
pub mod memory_locations;
mod moves;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ferrojit_ir::{
    AliasInfo, AttributeValue, BlockId, FunctionSchema, Graph, NodeId, Prim, Type, ValueId,
};

use containment::{alias_types, contained_types, is_mutable, single_type};
use memory_locations::{ElementId, MemoryDag, MemoryDagBuilder, MemoryLocations};

/// The alias analysis of one graph. Build it with [`AliasDb::new`].
#[derive(Debug)]
pub struct AliasDb {
    dag: MemoryDag,
    element_of_value: HashMap<ValueId, ElementId>,
    /// The wildcard element of each alias type, in creation order.
    wildcard_index: Vec<(Type, ElementId)>,
    /// Values that are in the wildcard set of their type, in the order they were put there.
    wildcard_values: Vec<ValueId>,
    /// Values that are certainly `None`: they alias nothing and are never written.
    none_values: HashSet<ValueId>,
    /// The memory locations each node writes itself (not counting nested blocks).
    writes: HashMap<NodeId, MemoryLocations>,
    /// Every memory location some node writes (nodes of analysed subgraphs included).
    written_locations: MemoryLocations,
    /// Printed names of the elements of subgraph values, for the dump.
    subgraph_value_names: HashMap<ElementId, String>,
}

impl AliasDb {
    /// Analyses `graph`. Nodes without a schema are analysed by their kind when PyTorch
    /// gives the kind a meaning, and conservatively otherwise; attach the registry's schemas
    /// first ([`attach_registry_schemas`]) for graphs that were parsed rather than compiled.
    pub fn new(graph: &Graph) -> AliasDb {
        let mut analysis = Analysis {
            graph,
            graph_key: MAIN_GRAPH,
            next_graph_key: MAIN_GRAPH + 1,
            dag: MemoryDagBuilder::default(),
            element_of_value: HashMap::new(),
            wildcard_index: Vec::new(),
            wildcard_values: Vec::new(),
            wildcard_sources: Vec::new(),
            wildcard_value_set: HashSet::new(),
            writes: Vec::new(),
            contained_writes: Vec::new(),
            writes_to_all_wildcards: Vec::new(),
            subgraph_value_names: HashMap::new(),
        };
        for &input in graph.inputs() {
            analysis.set_wildcard(input);
        }
        analysis.analyze_block(graph.top_block());
        analysis.give_every_mutable_value_an_element();
        analysis.finish()
    }

    fn element(&self, value: ValueId) -> Option<ElementId> {
        self.element_of_value.get(&value).copied()
    }

    /// The element standing for `value`, if it has a mutable type.
    pub fn element_of(&self, value: ValueId) -> Option<ElementId> {
        self.element(value)
    }

    /// Whether `a` and `b` may refer to the same memory.
    pub fn may_alias(&self, a: ValueId, b: ValueId) -> bool {
        match (self.element(a), self.element(b)) {
            (Some(a), Some(b)) => self.dag.may_alias(a, b),
            _ => false,
        }
    }

    /// Whether any value in `a` may alias any value in `b`.
    pub fn may_alias_any(&self, a: &[ValueId], b: &[ValueId]) -> bool {
        let mut locations = MemoryLocations::default();
        for element in a.iter().filter_map(|&v| self.element(v)) {
            locations.union_with(self.dag.memory_locations(element));
        }
        b.iter()
            .filter_map(|&v| self.element(v))
            .any(|element| self.dag.memory_locations(element).intersects(&locations))
    }

    /// Whether `a` or anything it contains may alias `b` or anything it contains.
    pub fn may_contain_alias(&self, a: ValueId, b: ValueId) -> bool {
        match (self.element(a), self.element(b)) {
            (Some(a), Some(b)) => self.dag.may_contain_alias(a, b),
            _ => false,
        }
    }

    /// [`AliasDb::may_contain_alias`] for sets of values: does anything reachable from `a`
    /// share memory with anything reachable from `b`?
    pub fn may_contain_alias_any(&self, a: &[ValueId], b: &[ValueId]) -> bool {
        let collect = |values: &[ValueId]| {
            let mut locations = MemoryLocations::default();
            for element in values.iter().filter_map(|&v| self.element(v)) {
                locations.union_with(self.dag.all_contained_memory_locations(element));
            }
            locations
        };
        collect(a).intersects(&collect(b))
    }

    /// Whether some node of the graph may write to memory `value` refers to.
    pub fn has_writers(&self, value: ValueId) -> bool {
        if self.none_values.contains(&value) {
            return false;
        }
        self.element(value).is_some_and(|element| {
            self.written_locations
                .intersects(self.dag.memory_locations(element))
        })
    }

    /// The memory locations `node` writes, nested blocks included.
    pub fn writes_of(&self, graph: &Graph, node: NodeId) -> MemoryLocations {
        let mut locations = MemoryLocations::default();
        self.collect_writes(graph, node, &mut locations);
        locations
    }

    fn collect_writes(&self, graph: &Graph, node: NodeId, out: &mut MemoryLocations) {
        let mut stack = vec![node];
        while let Some(current) = stack.pop() {
            if let Some(writes) = self.writes.get(&current) {
                out.union_with(writes);
            }
            for &block in graph.node_blocks(current) {
                stack.extend(graph.block_nodes(block));
            }
        }
    }

    /// The memory locations `node` reads: everything its inputs (and the inputs of nodes in
    /// its blocks) may contain.
    pub fn reads_of(&self, graph: &Graph, node: NodeId) -> MemoryLocations {
        let mut locations = MemoryLocations::default();
        let mut stack = vec![node];
        while let Some(current) = stack.pop() {
            for element in graph
                .node_inputs(current)
                .iter()
                .filter_map(|&v| self.element(v))
            {
                locations.union_with(self.dag.all_contained_memory_locations(element));
            }
            for &block in graph.node_blocks(current) {
                stack.extend(graph.block_nodes(block));
            }
        }
        locations
    }

    /// Whether `node` (or a node in its blocks) may write to memory that one of `values`
    /// refers to.
    pub fn writes_to_alias(&self, graph: &Graph, node: NodeId, values: &[ValueId]) -> bool {
        let written = self.writes_of(graph, node);
        if written.is_empty() {
            return false;
        }
        values
            .iter()
            .filter_map(|&v| self.element(v))
            .any(|element| written.intersects(self.dag.memory_locations(element)))
    }

    /// Whether `node` may write to one of its own inputs (PyTorch's `isMutable`).
    pub fn is_mutable_node(&self, graph: &Graph, node: NodeId) -> bool {
        self.writes_to_alias(graph, node, graph.node_inputs(node))
    }

    /// Whether `node` writes to a wildcard set (memory that escapes the graph's view).
    pub fn writes_to_wildcard(&self, node: NodeId) -> bool {
        self.writes.get(&node).is_some_and(|writes| {
            self.wildcard_index
                .iter()
                .any(|(_, wildcard)| writes.contains(*wildcard))
        })
    }

    /// Whether `value` may alias the wildcard set of its type.
    pub fn may_alias_wildcard(&self, graph: &Graph, value: ValueId) -> bool {
        let Some(wildcard) = self.wildcard_for(graph.value_type(value)) else {
            return false;
        };
        self.element(value)
            .is_some_and(|element| self.dag.may_alias(element, wildcard))
    }

    fn wildcard_for(&self, ty: &Type) -> Option<ElementId> {
        let key = single_type(alias_types(ty)?);
        self.wildcard_index
            .iter()
            .find(|(ty, _)| *ty == key)
            .map(|(_, element)| *element)
    }

    /// Whether any of `values` may alias a graph input or output or a wildcard set.
    pub fn escapes_scope(&self, graph: &Graph, values: &[ValueId]) -> bool {
        self.may_contain_alias_any(graph.inputs(), values)
            || self.may_contain_alias_any(graph.outputs(), values)
            || values.iter().any(|&v| self.may_alias_wildcard(graph, v))
    }

    /// The values put in the wildcard set of their type, in the order the analysis put
    /// them there (graph inputs first).
    pub fn wildcard_values(&self) -> &[ValueId] {
        &self.wildcard_values
    }

    /// The memory DAG, for passes and the dump.
    pub fn memory_dag(&self) -> &MemoryDag {
        &self.dag
    }
}

/// Gives each node of `graph` (and of its nodes' `Subgraph`s) that has no schema the schema
/// of the registry's first overload that accepts its input types, as the interpreter
/// resolves it.
/// Prims and unknown operators keep none.
pub fn attach_registry_schemas(
    graph: &mut Graph,
    registry: &ferrojit_runtime::registry::OperatorRegistry,
) {
    for node in graph.all_nodes() {
        if let Some(AttributeValue::Graph(subgraph)) = graph.attribute(node, "Subgraph") {
            let mut subgraph = subgraph.as_ref().clone();
            attach_registry_schemas(&mut subgraph, registry);
            graph.set_attribute(node, "Subgraph", AttributeValue::Graph(Box::new(subgraph)));
        }
        let data = graph.node(node);
        if data.schema.is_some() || graph.kind(node).prim().is_some() {
            continue;
        }
        let types: Vec<Type> = data
            .inputs
            .iter()
            .map(|&v| graph.value_type(v).clone())
            .collect();
        let found = registry
            .find_by_types(data.kind.as_str(), &types)
            .map(|operator| operator.schema.clone());
        if let Some(schema) = found {
            graph.set_node_schema(node, Some(schema));
        }
    }
}

/// Whether PyTorch treats `node` as having effects beyond its outputs, so that it is never
/// reordered (`Node::hasSideEffects`). Operators the analysis knows nothing of count too.
/// `prim::SetAttr` does not: its write to the object is a recorded write like any other, so
/// it moves wherever the memory dependencies allow (torch 2.15 answers so).
pub fn has_side_effects(graph: &Graph, node: NodeId) -> bool {
    const SIDE_EFFECT_KINDS: &[&str] = &[
        "prim::PythonOp",
        "prim::IgnoredPythonOp",
        "prim::Print",
        "prim::RaiseException",
        "aten::warn",
        "aten::save",
        "aten::manual_seed",
        "prim::AddStatValue",
        "prim::TimePoint",
        "prim::CallFunction",
        "prim::CallMethod",
        "prim::BailoutTemplate",
        "prim::BailOut",
        "prim::rpc_async",
        "prim::rpc_sync",
        "prim::rpc_remote",
        "aten::wait",
        "cuda::set_stream",
        "cuda::_set_device",
        "cuda::_current_device",
        "cuda::synchronize",
        "prim::Enter",
        "prim::Exit",
        // Registered with conservative alias analysis in PyTorch, which `hasSideEffects`
        // answers true for: the grad mode switch `torch.no_grad()` compiles to, and
        // `Tensor.backward()`, whose effect is on `.grad` and returns nothing.
        "aten::set_grad_enabled",
        "aten::backward",
    ];
    let kind = graph.kind(node);
    if SIDE_EFFECT_KINDS.contains(&kind.as_str()) {
        return true;
    }
    // An operator with neither a schema nor a meaning here is analysed conservatively, and
    // may do anything; prims without a schema have none (PyTorch asserts the same).
    graph.node(node).schema.is_none()
        && kind.namespace() != "prim"
        && !matches!(kind.as_str(), "aten::batch_norm" | "aten::instance_norm")
}

/// Whether `value` is certainly `None` (PyTorch's `Value::mustBeNone`).
fn must_be_none(graph: &Graph, value: ValueId) -> bool {
    if *graph.value_type(value) == Type::NoneType {
        return true;
    }
    let Some(producer) = graph.producer(value) else {
        return false;
    };
    let data = graph.node(producer);
    data.kind.as_str() == "prim::AutogradZero"
        || (data.outputs.len() == 1 && *graph.value_type(data.outputs[0]) == Type::NoneType)
        || (data.kind.is_prim(Prim::Constant)
            && data.attributes.is_empty()
            && matches!(graph.value_type(value), Type::Optional(_)))
}

/// The state of one analysis run; [`Analysis::finish`] freezes it into an [`AliasDb`].
struct Analysis<'g> {
    /// The graph being analysed: the top graph, or a subgraph while its group node is.
    graph: &'g Graph,
    /// Which graph `graph` is: values and nodes are keyed by it, since a subgraph's ids
    /// restart from zero.
    graph_key: u32,
    next_graph_key: u32,
    dag: MemoryDagBuilder,
    element_of_value: HashMap<(u32, ValueId), ElementId>,
    wildcard_index: Vec<(Type, ElementId)>,
    /// Values of the top graph put in a wildcard set, in order.
    wildcard_values: Vec<ValueId>,
    /// (wildcard, element) for every value put in a wildcard set.
    wildcard_sources: Vec<(ElementId, ElementId)>,
    wildcard_value_set: HashSet<(u32, ValueId)>,
    writes: Vec<((u32, NodeId), ElementId)>,
    /// Writes to a value and everything it contains (conservative nodes).
    contained_writes: Vec<((u32, NodeId), ElementId)>,
    /// Nodes that may write to every wildcard set (`aten::wait`).
    writes_to_all_wildcards: Vec<(u32, NodeId)>,
    subgraph_value_names: HashMap<ElementId, String>,
}

/// The key of the graph an AliasDb is built for; its subgraphs get the following ones.
const MAIN_GRAPH: u32 = 0;

impl<'g> Analysis<'g> {
    fn value_mutable(&self, value: ValueId) -> bool {
        is_mutable(self.graph.value_type(value))
    }

    fn analyze_block(&mut self, block: BlockId) {
        for node in self.graph.block_nodes(block) {
            self.analyze_node(node);
        }
    }

    fn analyze_node(&mut self, node: NodeId) {
        let graph = self.graph;
        let inputs = graph.node_inputs(node);
        let outputs = graph.node_outputs(node);
        match graph.kind(node).as_str() {
            "prim::If" => self.analyze_if(node),
            "prim::Loop" => self.analyze_loop(node),
            "prim::GradOf" => {
                if let Some(&body) = graph.node_blocks(node).first() {
                    self.analyze_block(body);
                    self.map_aliases(outputs, graph.block_outputs(body));
                }
            }
            "prim::FusionGroup"
            | "prim::CudaFusionGroup"
            | "prim::LlgaFusionGroup"
            | "prim::FunctionalGraph"
            | "prim::DifferentiableGraph"
            | "prim::FallbackGraph" => self.analyze_subgraph(node),
            "prim::fork" | "prim::rpc_async" | "prim::rpc_sync" | "prim::rpc_remote" => {
                for &input in inputs {
                    self.set_wildcard(input);
                }
                for &output in outputs {
                    self.give_fresh_alias(output, true);
                }
            }
            "aten::wait" => {
                for &output in outputs {
                    self.set_wildcard(output);
                }
                // The forked function may write to anything it was given; which values
                // those were is not known here, so every wildcard set is written.
                self.writes_to_all_wildcards.push((self.graph_key, node));
            }
            "aten::batch_norm" => self.analyze_norm(node, "training", 5),
            "aten::instance_norm" => self.analyze_norm(node, "use_input_stats", 5),
            "prim::BroadcastMKLDNNTensors" => {
                for (&output, &input) in outputs.iter().zip(inputs) {
                    self.make_pointer_to(output, input);
                }
            }
            "prim::TensorExprGroup"
            | "prim::MKLDNNGroup"
            | "prim::ConstantMKLDNNTensor"
            | "prim::StaticSubgraph"
            | "prim::Constant"
            | "prim::AutogradZero"
            | "prim::AutogradAdd"
            | "prim::FusedConcat"
            | "prim::MMTreeReduce"
            | "prim::MMBatchSide"
            | "prim::BroadcastSizes"
            | "prim::ChunkSizes"
            | "prim::Closure"
            | "prim::CreateObject"
            | "prim::tolist"
            | "prim::Uninitialized" => {
                for &output in outputs {
                    self.give_fresh_alias(output, true);
                }
            }
            "prim::TupleConstruct" | "prim::DictConstruct" | "prim::ListConstruct" => {
                self.analyze_container_construct(node)
            }
            "prim::TupleUnpack" | "prim::TupleIndex" | "prim::TupleSlice" | "prim::ListUnpack"
            | "prim::PythonOp" | "prim::GetAttr" => {
                for &output in outputs {
                    self.set_wildcard(output);
                }
            }
            "prim::unchecked_cast"
            | "prim::profile_ivalue"
            | "prim::profile"
            | "prim::Guard"
            | "prim::ConstantChunk" => {
                if let Some(&input) = inputs.first() {
                    for &output in outputs {
                        self.make_pointer_to(output, input);
                    }
                }
            }
            "prim::BroadcastingChunk" => {
                let chunks = match graph.attribute(node, "chunks") {
                    Some(AttributeValue::Int(chunks)) if *chunks > 0 => *chunks as usize,
                    _ => return self.analyze_conservative(node),
                };
                for (index, &input) in inputs.iter().enumerate() {
                    for &output in outputs.iter().skip(index * chunks).take(chunks) {
                        self.make_pointer_to(output, input);
                    }
                }
            }
            "prim::SetAttr" => {
                if let (Some(&object), Some(&new_value)) = (inputs.first(), inputs.get(1)) {
                    self.register_write(object, node, false);
                    // The stored value is now reachable through the object.
                    self.set_wildcard(new_value);
                }
            }
            "prim::TypeCheck" | "prim::RequiresGradCheck" => {
                for (&output, &input) in outputs.iter().zip(inputs) {
                    self.make_pointer_to(output, input);
                }
            }
            "prim::BailOut" => {
                if let (Some(&output), Some(&input)) = (outputs.first(), inputs.get(1)) {
                    self.make_pointer_to(output, input);
                }
            }
            "prim::CallFunction" | "prim::CallMethod" | "prim::Enter" | "prim::Exit" => {
                self.analyze_conservative(node)
            }
            "prim::Print" | "prim::isinstance" => {}
            _ => match graph.node(node).schema.clone() {
                Some(schema) => self.analyze_from_schema(node, &schema),
                None => self.analyze_conservative(node),
            },
        }
    }

    /// A group node runs its `Subgraph` on its inputs: the subgraph's inputs point to the
    /// node's inputs, its nodes are analysed (their writes count as the graph's writes), and
    /// the node's outputs point to the subgraph's outputs.
    fn analyze_subgraph(&mut self, node: NodeId) {
        let outer = (self.graph, self.graph_key);
        let Some(AttributeValue::Graph(subgraph)) = outer.0.attribute(node, "Subgraph") else {
            return self.analyze_conservative(node);
        };
        let subgraph: &'g Graph = subgraph;
        let inner = (subgraph, self.next_graph_key);
        self.next_graph_key += 1;
        for (&inner_input, &outer_input) in subgraph.inputs().iter().zip(outer.0.node_inputs(node))
        {
            self.make_pointer_across(
                (inner.0, inner.1, inner_input),
                (outer.0, outer.1, outer_input),
            );
        }
        self.graph = inner.0;
        self.graph_key = inner.1;
        self.analyze_block(subgraph.top_block());
        self.graph = outer.0;
        self.graph_key = outer.1;
        for (&output, &inner_output) in outer.0.node_outputs(node).iter().zip(subgraph.outputs()) {
            self.make_pointer_across((outer.0, outer.1, output), (inner.0, inner.1, inner_output));
        }
    }

    /// Runs `f` with `graph` (keyed `key`) as the graph being analysed.
    fn in_graph<R>(&mut self, graph: &'g Graph, key: u32, f: impl FnOnce(&mut Self) -> R) -> R {
        let saved = (self.graph, self.graph_key);
        self.graph = graph;
        self.graph_key = key;
        let result = f(self);
        self.graph = saved.0;
        self.graph_key = saved.1;
        result
    }

    fn analyze_if(&mut self, node: NodeId) {
        let graph = self.graph;
        let blocks = graph.node_blocks(node);
        for &block in blocks {
            self.analyze_block(block);
        }
        for (index, &output) in graph.node_outputs(node).iter().enumerate() {
            for &block in blocks {
                if let Some(&branch_output) = graph.block_outputs(block).get(index) {
                    self.make_pointer_to(output, branch_output);
                }
            }
        }
    }

    fn analyze_loop(&mut self, node: NodeId) {
        let graph = self.graph;
        let Some(&body) = graph.node_blocks(node).first() else {
            return self.analyze_conservative(node);
        };
        // Loop-carried inputs skip the trip count and condition; body parameters skip the
        // iteration number; body outputs skip the continue condition.
        let carried = graph.node_inputs(node).get(2..).unwrap_or(&[]);
        let parameters = graph.block_parameters(body).get(1..).unwrap_or(&[]);
        self.map_aliases(parameters, carried);
        self.analyze_block(body);
        let body_outputs = graph.block_outputs(body).get(1..).unwrap_or(&[]);
        self.map_aliases(graph.node_outputs(node), body_outputs);
    }

    /// Batch and instance norm update their running statistics unless the flag is a
    /// constant `false`.
    fn analyze_norm(&mut self, node: NodeId, flag_name: &str, flag_position: usize) {
        let graph = self.graph;
        for &output in graph.node_outputs(node) {
            self.give_fresh_alias(output, true);
        }
        let position = |name: &str, default: usize| {
            graph
                .node(node)
                .schema
                .as_ref()
                .and_then(|schema| schema.arguments.iter().position(|a| a.name == name))
                .unwrap_or(default)
        };
        let inputs = graph.node_inputs(node);
        let flag = inputs
            .get(position(flag_name, flag_position))
            .and_then(|&value| constant_bool(graph, value));
        if flag != Some(false) {
            for (name, default) in [("running_mean", 3), ("running_var", 4)] {
                if let Some(&value) = inputs.get(position(name, default)) {
                    self.register_write(value, node, false);
                }
            }
        }
    }

    /// Anything with no precise summary: it may write to everything its inputs contain, and
    /// its inputs and outputs join the wildcard sets.
    fn analyze_conservative(&mut self, node: NodeId) {
        let graph = self.graph;
        for &input in graph.node_inputs(node) {
            if !self.value_mutable(input) {
                continue;
            }
            self.register_write(input, node, true);
            self.set_wildcard(input);
        }
        for &output in graph.node_outputs(node) {
            self.set_wildcard(output);
        }
    }

    /// A list, tuple or dict built from its inputs. The inputs join the wildcard sets and
    /// the container holds those wildcards, except for a list used once, by an operator that
    /// neither keeps it nor returns an alias of it (`cat`, `stack`...), or a list or tuple
    /// used only as a graph output: that container holds its inputs themselves.
    fn analyze_container_construct(&mut self, node: NodeId) {
        let graph = self.graph;
        let Some(&container) = graph.node_outputs(node).first() else {
            return;
        };
        if !self.value_mutable(container) {
            return;
        }
        let uses = graph.value_uses(container);
        if uses.len() == 1 && self.functional_non_escaping_use(container, uses[0].node) {
            self.give_fresh_alias(container, false);
            for &input in graph.node_inputs(node) {
                self.add_to_contained(input, container);
            }
            return;
        }
        self.give_fresh_alias(container, true);
        let Some(container_element) = self.element_key(container) else {
            return;
        };
        for &input in graph.node_inputs(node) {
            if let Some(wildcard) = self.set_wildcard(input) {
                self.dag.add_to_contained(wildcard, container_element);
            }
        }
    }

    /// Whether the only use of a list or tuple keeps its elements from escaping: an
    /// operator that reads the list and returns fresh values, or (torch 2.15) returning it
    /// from the graph, where the caller sees exactly the values it holds.
    fn functional_non_escaping_use(&self, container: ValueId, user: NodeId) -> bool {
        let graph = self.graph;
        let is_list = matches!(graph.value_type(container), Type::List(_));
        let is_tuple = matches!(
            graph.value_type(container),
            Type::Tuple(_) | Type::NamedTuple(_)
        );
        if (is_list || is_tuple) && user == graph.block_return_node(graph.top_block()) {
            return true;
        }
        if !is_list {
            return false;
        }
        matches!(
            self.graph.kind(user).as_str(),
            "aten::cat"
                | "aten::broadcast_tensors"
                | "aten::stack"
                | "aten::vstack"
                | "aten::hstack"
                | "aten::dstack"
        )
    }

    /// Follows the schema's alias annotations: the formal alias sets of the arguments are
    /// bound to the actual inputs, writes recorded, `(a -> *)` inputs sent to the wildcard
    /// sets, and each output points to the inputs its annotation names (or is fresh).
    fn analyze_from_schema(&mut self, node: NodeId, schema: &Arc<FunctionSchema>) {
        let graph = self.graph;
        let inputs = graph.node_inputs(node);
        let mut formal_to_actual: HashMap<String, ValueId> = HashMap::new();
        for (argument, &actual) in schema.arguments.iter().zip(inputs) {
            let Some(formal) = argument.alias_info.as_ref() else {
                continue;
            };
            if !self.value_mutable(actual) {
                continue;
            }
            let formal = element_annotation(formal);
            let Some(alias_set) = formal.before_sets.first() else {
                continue;
            };
            if formal_to_actual.contains_key(alias_set) {
                continue;
            }
            formal_to_actual.insert(alias_set.clone(), actual);
            if formal.is_write {
                self.register_write(actual, node, false);
            }
            if formal.after_sets.iter().any(|set| set == "*") {
                self.set_wildcard(actual);
            }
        }
        for (index, &actual) in graph.node_outputs(node).iter().enumerate() {
            let formal = schema
                .returns
                .get(index)
                .and_then(|ret| ret.alias_info.as_ref());
            let Some(formal) = formal else {
                self.give_fresh_alias(actual, true);
                continue;
            };
            if !self.value_mutable(actual) {
                continue;
            }
            let formal = element_annotation(formal);
            if formal.before_sets.iter().any(|set| set == "*") {
                self.set_wildcard(actual);
                continue;
            }
            for alias_set in &formal.before_sets {
                match formal_to_actual.get(alias_set) {
                    Some(&input) => self.make_pointer_to(actual, input),
                    // A set no argument has is a fresh value when it is the only one
                    // (`-> Tensor(b)`); in `Tensor(a|fresh)` it adds nothing.
                    None if formal.before_sets.len() == 1 => self.give_fresh_alias(actual, true),
                    None => {}
                }
            }
            if formal.is_write {
                self.register_write(actual, node, false);
            }
        }
    }

    fn register_write(&mut self, value: ValueId, node: NodeId, contained: bool) {
        if !self.value_mutable(value) {
            return;
        }
        let Some(element) = self.get_or_create_element(value) else {
            return;
        };
        let node = (self.graph_key, node);
        if contained {
            self.contained_writes.push((node, element));
        } else {
            self.writes.push((node, element));
        }
    }

    fn element_key(&self, value: ValueId) -> Option<ElementId> {
        self.element_of_value.get(&(self.graph_key, value)).copied()
    }

    fn map_aliases(&mut self, from: &[ValueId], to: &[ValueId]) {
        for (&from, &to) in from.iter().zip(to) {
            self.make_pointer_to(from, to);
        }
    }

    fn non_aliasing_value(&self, value: ValueId) -> bool {
        must_be_none(self.graph, value)
            || self
                .graph
                .producer(value)
                .is_some_and(|node| self.graph.kind(node).as_str() == "prim::Uninitialized")
    }

    fn make_pointer_to(&mut self, from: ValueId, to: ValueId) {
        let here = (self.graph, self.graph_key);
        self.make_pointer_across((here.0, here.1, from), (here.0, here.1, to));
    }

    /// `from` may refer to whatever `to` refers to; each is a value of the given graph.
    fn make_pointer_across(
        &mut self,
        from: (&'g Graph, u32, ValueId),
        to: (&'g Graph, u32, ValueId),
    ) {
        let from_non_aliasing = self.in_graph(from.0, from.1, |s| s.non_aliasing_value(from.2));
        let to_non_aliasing = self.in_graph(to.0, to.1, |s| s.non_aliasing_value(to.2));
        if from_non_aliasing || to_non_aliasing {
            // Neither aliases anything, but every mutable value still gets an element.
            self.in_graph(from.0, from.1, |s| s.give_fresh_alias(from.2, true));
            self.in_graph(to.0, to.1, |s| s.give_fresh_alias(to.2, true));
            return;
        }
        let from_mutable = is_mutable(from.0.value_type(from.2));
        let to_mutable = is_mutable(to.0.value_type(to.2));
        if from_mutable != to_mutable || !from_mutable || (from.1 == to.1 && from.2 == to.2) {
            return;
        }
        let from_element = self.in_graph(from.0, from.1, |s| s.get_or_create_element(from.2));
        let to_element = self.in_graph(to.0, to.1, |s| s.get_or_create_element(to.2));
        if let (Some(from_element), Some(to_element)) = (from_element, to_element) {
            self.dag.make_pointer_to(from_element, to_element);
        }
    }

    fn add_to_contained(&mut self, inner: ValueId, container: ValueId) {
        if !self.value_mutable(inner) {
            return;
        }
        let inner_element = self.get_or_create_element(inner);
        let container_element = self.get_or_create_element(container);
        if let (Some(inner_element), Some(container_element)) = (inner_element, container_element) {
            self.dag.add_to_contained(inner_element, container_element);
        }
    }

    fn give_fresh_alias(&mut self, value: ValueId, add_wildcards_to_contained: bool) {
        let Some(types) = alias_types(self.graph.value_type(value)) else {
            return;
        };
        if self.element_of_value.contains_key(&(self.graph_key, value)) {
            return;
        }
        let element = self.dag.make_fresh(Some(value));
        self.element_of_value
            .insert((self.graph_key, value), element);
        if self.graph_key != MAIN_GRAPH {
            self.subgraph_value_names
                .insert(element, self.graph.value_display_name(value));
        }
        if add_wildcards_to_contained {
            self.add_contained_wildcards(element, &types);
        }
    }

    /// A fresh element of a union type points to the wildcard of each member; any other
    /// holds the wildcards of the types it contains.
    fn add_contained_wildcards(&mut self, element: ElementId, types: &[Type]) {
        if types.len() > 1 {
            for ty in types {
                if let Some(wildcard) = self.get_or_create_wildcard(ty) {
                    if wildcard != element {
                        self.dag.make_pointer_to(element, wildcard);
                    }
                }
            }
        } else {
            for ty in types {
                for contained in contained_types(ty) {
                    if let Some(wildcard) = self.get_or_create_wildcard(&contained) {
                        self.dag.add_to_contained(wildcard, element);
                    }
                }
            }
        }
    }

    fn get_or_create_element(&mut self, value: ValueId) -> Option<ElementId> {
        if self.element_key(value).is_none() {
            self.give_fresh_alias(value, true);
        }
        self.element_key(value)
    }

    fn get_or_create_wildcard(&mut self, ty: &Type) -> Option<ElementId> {
        let types = alias_types(ty)?;
        let key = single_type(types.clone());
        if let Some((_, element)) = self.wildcard_index.iter().find(|(ty, _)| *ty == key) {
            return Some(*element);
        }
        let element = self.dag.make_fresh(None);
        self.wildcard_index.push((key, element));
        self.add_contained_wildcards(element, &types);
        Some(element)
    }

    /// Puts `value` in the wildcard set of its type; returns that wildcard.
    fn set_wildcard(&mut self, value: ValueId) -> Option<ElementId> {
        let wildcard = self.get_or_create_wildcard(self.graph.value_type(value))?;
        let element = self.get_or_create_element(value)?;
        if self.wildcard_value_set.insert((self.graph_key, value)) {
            self.wildcard_sources.push((wildcard, element));
            if self.graph_key == MAIN_GRAPH {
                self.wildcard_values.push(value);
            }
        }
        Some(wildcard)
    }

    /// Every mutable value has an element (PyTorch lints this); values the analysis never
    /// reached (outputs of malformed nodes) get a fresh one.
    fn give_every_mutable_value_an_element(&mut self) {
        let graph = self.graph;
        let mut blocks = vec![graph.top_block()];
        while let Some(block) = blocks.pop() {
            for &parameter in graph.block_parameters(block) {
                self.give_fresh_alias(parameter, true);
            }
            for node in graph.block_nodes(block) {
                for &output in graph.node_outputs(node) {
                    self.give_fresh_alias(output, true);
                }
                blocks.extend(graph.node_blocks(node));
            }
        }
    }

    fn finish(self) -> AliasDb {
        let graph = self.graph;
        let dag = self.dag.finish(&self.wildcard_sources);
        // Writes of the top graph's nodes, by node; those of subgraph nodes only count
        // towards what is written at all (PyTorch's group node itself writes nothing).
        let mut writes: HashMap<(u32, NodeId), MemoryLocations> = HashMap::new();
        for &(node, element) in &self.writes {
            writes
                .entry(node)
                .or_default()
                .union_with(dag.memory_locations(element));
        }
        for &(node, element) in &self.contained_writes {
            writes
                .entry(node)
                .or_default()
                .union_with(dag.all_contained_memory_locations(element));
        }
        for &node in &self.writes_to_all_wildcards {
            let entry = writes.entry(node).or_default();
            for (_, wildcard) in &self.wildcard_index {
                entry.insert(*wildcard);
            }
        }
        let mut written_locations = MemoryLocations::default();
        for locations in writes.values() {
            written_locations.union_with(locations);
        }
        let writes = writes
            .into_iter()
            .filter(|((key, _), _)| *key == MAIN_GRAPH)
            .map(|((_, node), locations)| (node, locations))
            .collect();
        let element_of_value: HashMap<ValueId, ElementId> = self
            .element_of_value
            .iter()
            .filter(|((key, _), _)| *key == MAIN_GRAPH)
            .map(|(&(_, value), &element)| (value, element))
            .collect();
        let none_values = element_of_value
            .keys()
            .copied()
            .filter(|&value| must_be_none(graph, value))
            .collect();
        AliasDb {
            dag,
            element_of_value,
            wildcard_index: self.wildcard_index,
            wildcard_values: self.wildcard_values,
            none_values,
            writes,
            written_locations,
            subgraph_value_names: self.subgraph_value_names,
        }
    }
}

/// The annotation that applies to a value: `Tensor(a!)[]` annotates the elements only, and
/// PyTorch reads the element's annotation for the list.
fn element_annotation(formal: &AliasInfo) -> &AliasInfo {
    match formal.contained.as_slice() {
        [element] if formal.before_sets.is_empty() => element,
        _ => formal,
    }
}

/// The value of a `bool` constant, if `value` is one.
fn constant_bool(graph: &Graph, value: ValueId) -> Option<bool> {
    let producer = graph.producer(value)?;
    if !graph.kind(producer).is_prim(Prim::Constant) {
        return None;
    }
    match graph.attribute(producer, "value")? {
        AttributeValue::Int(value) => Some(*value != 0),
        _ => None,
    }
}
