//! `freeze_module`, PyTorch's `torch._C._freeze_module` (torch/csrc/jit/passes/
//! freeze_module.cpp): the preserved methods are inlined with everything they call, every
//! attribute they read and never mutate becomes a constant (tensors detached, as PyTorch
//! freezes parameters), chains of `prim::GetAttr` through submodules fold away with them,
//! `training` (False in eval mode) folds like any other attribute so constant propagation
//! removes the training-only branches, and the attributes and submodules nothing reads any
//! more are dropped: the frozen module is an object of a new class that holds only what the
//! frozen graphs still read.
//!
//! An attribute stays an attribute when the graphs mutate it: a `prim::SetAttr` on it, or
//! (alias analysis) a write to the memory it holds, or to the memory of an attribute that
//! shares its storage. It also stays when an IR constant cannot hold its value (tuples,
//! dicts, objects), when the module holding it is used other than to read or set
//! attributes (passed to a call that could not be inlined, put in a list), and when the
//! caller preserves it by name.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ferrojit_ir::{AttributeValue, ClassType, Graph, InsertPoint, NodeId, Prim, Type, ValueId};
use ferrojit_runtime::module::Module;
use ferrojit_runtime::object::Object;
use ferrojit_runtime::IValue;
use ferrojit_tensor::Storage;

use crate::alias_analysis::{attach_registry_schemas, AliasDb};
use crate::constant_insertion::{constant_for, tensor_type};
use crate::inliner::{inline_calls, MethodSourceCallees};

/// Why a module cannot be frozen. The messages are PyTorch's where PyTorch refuses the
/// same module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FreezeError {
    /// The module is in training mode (`torch.jit.freeze` requires `eval()`).
    TrainingMode,
    /// A method to preserve (or `forward`) does not exist or has no graph.
    Method {
        class: String,
        method: String,
        reason: String,
    },
    /// A method returns the module itself.
    ReturnsItself,
    /// A graph holds a node freezing does not support.
    Unsupported { kind: String },
    /// A pass run while freezing refused the graph.
    Pass { method: String, message: String },
}

impl std::fmt::Display for FreezeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FreezeError::TrainingMode => write!(
                f,
                "Freezing is currently only implemented for modules in eval mode. Please call \
                 .eval() on your module before freezing."
            ),
            FreezeError::Method {
                class,
                method,
                reason,
            } => write!(f, "method '{method}' of {class} cannot be frozen: {reason}"),
            FreezeError::ReturnsItself => {
                write!(f, "attempted to freeze a module that return itself")
            }
            FreezeError::Unsupported { kind } => {
                write!(f, "Freezing modules containing {kind} is not supported")
            }
            FreezeError::Pass { method, message } => {
                write!(f, "freezing method '{method}': {message}")
            }
        }
    }
}

impl std::error::Error for FreezeError {}

/// A frozen module: an object of a new class holding the attributes the frozen methods
/// still read, and the frozen graphs of those methods (each graph's input 0 is `self`,
/// typed with the new class).
#[derive(Debug, Clone)]
pub struct FrozenModule {
    /// The new class (named like the original with PyTorch's `___torch_mangle_N` part).
    pub class: Arc<ClassType>,
    /// The class of the module that was frozen (its methods declare the signatures).
    pub original_class: Arc<ClassType>,
    /// The frozen object, its slots shared with the original module's values.
    pub object: Arc<Object>,
    /// The frozen methods, `forward` first, then the preserved ones in the order given.
    pub methods: Vec<FrozenMethod>,
}

/// One frozen method.
#[derive(Debug, Clone)]
pub struct FrozenMethod {
    pub name: String,
    pub graph: Graph,
}

/// What the caller asks to keep: methods besides `forward`, and attributes of the module
/// that must stay attributes (PyTorch's `preserved_attrs`, which holds both).
#[derive(Debug, Clone, Default)]
pub struct FreezeOptions {
    pub preserved: Vec<String>,
}

/// Freezes `module` (which must be in eval mode, or have no `training` attribute, as a
/// frozen module has none) without the frozen-graph optimizations: PyTorch's
/// `_freeze_module`. [`super::freeze`] runs both, as `torch.jit.freeze` does.
pub fn freeze_module(
    module: &Module,
    options: &FreezeOptions,
) -> Result<FrozenModule, FreezeError> {
    let class = module.class().clone();
    if let Ok(IValue::Bool(true)) = module.attr("training") {
        return Err(FreezeError::TrainingMode);
    }
    let mut method_names = vec!["forward".to_string()];
    let mut preserved_attributes = HashSet::new();
    for name in &options.preserved {
        if class.has_method(name) {
            if !method_names.contains(name) {
                method_names.push(name.clone());
            }
        } else if class.attribute_index(name).is_some() {
            preserved_attributes.insert(name.clone());
        } else {
            return Err(FreezeError::Method {
                class: class.qualified_name().to_string(),
                method: name.clone(),
                reason: "the module has no method or attribute of that name".to_string(),
            });
        }
    }
    let methods = module.object().methods().clone();
    let mut graphs = Vec::new();
    for name in &method_names {
        let method_error = |reason: String| FreezeError::Method {
            class: class.qualified_name().to_string(),
            method: name.clone(),
            reason,
        };
        let graph = methods
            .method_graph(&class, name)
            .map_err(|error| method_error(error.to_string()))?;
        let mut graph = graph.as_ref().clone();
        inline_calls(&mut graph, &MethodSourceCallees(methods.as_ref())).map_err(|message| {
            FreezeError::Pass {
                method: name.clone(),
                message,
            }
        })?;
        check_supported(&graph)?;
        graphs.push((name.clone(), graph));
    }

    let root = module.object().clone();
    let mut mutated = MutatedAttributes::default();
    for name in &preserved_attributes {
        mutated.insert(&root, name);
    }
    // Numbers, strings and the like change only through `SetAttr`: they fold first, so
    // that constant propagation settles what they decide (`training` above all, which
    // decides whether batch norms write their running statistics) before alias analysis
    // asks which tensors are written.
    for (_, graph) in &graphs {
        record_set_attributes(graph, &root, &mut mutated);
    }
    for (name, graph) in &mut graphs {
        fold_attributes(graph, &root, &mutated, AttributeKinds::Immutable);
        optimize_after_folding(graph).map_err(|message| FreezeError::Pass {
            method: name.clone(),
            message,
        })?;
    }
    for (_, graph) in &graphs {
        record_written_attributes(graph, &root, &mut mutated);
    }
    mutated.close_over_shared_storage(&graphs, &root);

    let mut frozen_methods = Vec::new();
    for (name, mut graph) in graphs {
        fold_attributes(&mut graph, &root, &mutated, AttributeKinds::All);
        optimize_after_folding(&mut graph).map_err(|message| FreezeError::Pass {
            method: name.clone(),
            message,
        })?;
        let self_value = graph.inputs().first().copied();
        if let Some(self_value) = self_value {
            if graph.outputs().contains(&self_value) {
                return Err(FreezeError::ReturnsItself);
            }
        }
        frozen_methods.push(FrozenMethod { name, graph });
    }

    let (frozen_class, frozen_object) = build_frozen_object(
        module,
        &frozen_methods,
        &preserved_attributes,
        &method_names,
    );
    for method in &mut frozen_methods {
        if let Some(&self_value) = method.graph.inputs().first() {
            method
                .graph
                .set_value_type(self_value, Type::Class(frozen_class.clone()));
        }
    }
    Ok(FrozenModule {
        class: frozen_class,
        original_class: class,
        object: frozen_object,
        methods: frozen_methods,
    })
}

/// PyTorch refuses modules indexed by a non-constant (`prim::ModuleContainerIndex`).
fn check_supported(graph: &Graph) -> Result<(), FreezeError> {
    for node in graph.all_nodes() {
        let kind = graph.kind(node).as_str();
        if kind == "prim::ModuleContainerIndex" {
            return Err(FreezeError::Unsupported {
                kind: kind.to_string(),
            });
        }
    }
    Ok(())
}

/// The object each module-valued value of `graph` holds, found by following `prim::GetAttr`
/// from `self` (graph input 0).
fn objects_of_values(graph: &Graph, root: &Arc<Object>) -> HashMap<ValueId, Arc<Object>> {
    let mut objects = HashMap::new();
    let Some(&self_value) = graph.inputs().first() else {
        return objects;
    };
    objects.insert(self_value, root.clone());
    for node in graph.all_nodes() {
        if !graph.kind(node).is_prim(Prim::GetAttr) {
            continue;
        }
        let Some(receiver) = graph.node_inputs(node).first().and_then(|v| objects.get(v)) else {
            continue;
        };
        let Some(AttributeValue::Str(name)) = graph.attribute(node, "name") else {
            continue;
        };
        if let Ok(IValue::Object(object)) = receiver.get_attr(name) {
            objects.insert(graph.node_output(node, 0), object);
        }
    }
    objects
}

/// Attributes (object, name) that must stay attributes. Objects are told apart by address:
/// they live as long as the module being frozen.
#[derive(Debug, Default)]
struct MutatedAttributes {
    attributes: HashSet<(usize, String)>,
    /// Objects all of whose attributes stay (used in ways freezing cannot follow).
    whole_objects: HashSet<usize>,
}

impl MutatedAttributes {
    fn insert(&mut self, object: &Arc<Object>, name: &str) {
        self.attributes
            .insert((Arc::as_ptr(object) as usize, name.to_string()));
    }

    fn insert_whole(&mut self, object: &Arc<Object>) {
        if !self.whole_objects.insert(Arc::as_ptr(object) as usize) {
            return;
        }
        // Everything reachable from an object kept whole is kept whole too.
        for value in object.slots() {
            if let IValue::Object(child) = value {
                self.insert_whole(&child);
            }
        }
    }

    fn contains(&self, object: &Arc<Object>, name: &str) -> bool {
        let address = Arc::as_ptr(object) as usize;
        self.whole_objects.contains(&address)
            || self.attributes.contains(&(address, name.to_string()))
    }

    /// A tensor attribute sharing its storage with a mutated one is mutated too (PyTorch
    /// checks attributes that alias each other).
    fn close_over_shared_storage(&mut self, graphs: &[(String, Graph)], root: &Arc<Object>) {
        let mut read: Vec<(Arc<Object>, String, Storage)> = Vec::new();
        for (_, graph) in graphs {
            for (_, object, name) in attribute_reads(graph, root) {
                if let Ok(IValue::Tensor(cell)) = object.get_attr(&name) {
                    read.push((object, name, cell.get().storage().clone()));
                }
            }
        }
        let mutated_storages: Vec<Storage> = read
            .iter()
            .filter(|(object, name, _)| self.contains(object, name))
            .map(|(_, _, storage)| storage.clone())
            .collect();
        for (object, name, storage) in &read {
            if mutated_storages
                .iter()
                .any(|mutated| Storage::ptr_eq(mutated, storage))
            {
                self.insert(object, name);
            }
        }
    }
}

/// Each `prim::GetAttr` of `graph` whose receiver is a known module object: the node, the
/// object and the attribute's name.
fn attribute_reads(graph: &Graph, root: &Arc<Object>) -> Vec<(NodeId, Arc<Object>, String)> {
    let objects = objects_of_values(graph, root);
    let mut reads = Vec::new();
    for node in graph.all_nodes() {
        if !graph.kind(node).is_prim(Prim::GetAttr) {
            continue;
        }
        let Some(object) = graph.node_inputs(node).first().and_then(|v| objects.get(v)) else {
            continue;
        };
        if let Some(AttributeValue::Str(name)) = graph.attribute(node, "name") {
            reads.push((node, object.clone(), name.clone()));
        }
    }
    reads
}

/// The IR constant an attribute's value becomes, if it can become one: tensors (detached),
/// numbers, strings, devices, None, and lists of numbers and strings.
fn frozen_constant(value: &IValue, declared: &Type) -> Option<(Option<AttributeValue>, Type)> {
    match value {
        IValue::Tensor(cell) => {
            let tensor = cell.get();
            Some((
                Some(AttributeValue::Tensor(tensor.as_ref().clone())),
                tensor_type(&tensor),
            ))
        }
        IValue::Object(_) => None,
        IValue::List(list)
            if !matches!(list.element_type(), Type::Int | Type::Float | Type::Str) =>
        {
            None
        }
        other => constant_for(other, declared),
    }
}

/// Records every attribute the graph sets, and every module it uses other than through
/// `GetAttr`/`SetAttr`.
fn record_set_attributes(graph: &Graph, root: &Arc<Object>, mutated: &mut MutatedAttributes) {
    let objects = objects_of_values(graph, root);
    for node in graph.all_nodes() {
        let kind = graph.kind(node);
        if kind.is_prim(Prim::SetAttr) {
            let receiver = graph.node_inputs(node).first().and_then(|v| objects.get(v));
            if let (Some(object), Some(AttributeValue::Str(name))) =
                (receiver, graph.attribute(node, "name"))
            {
                mutated.insert(object, name);
            }
        }
    }
    // A module value used by anything but GetAttr, or as SetAttr's receiver, escapes what
    // freezing can follow: its attributes stay.
    for (&value, object) in &objects {
        for use_ in graph.value_uses(value) {
            let user = graph.kind(use_.node);
            let follows = user.is_prim(Prim::GetAttr)
                || (user.is_prim(Prim::SetAttr) && use_.input_index == 0);
            if !follows {
                mutated.insert_whole(object);
            }
        }
    }
}

/// Records every attribute whose memory the graph may write.
fn record_written_attributes(graph: &Graph, root: &Arc<Object>, mutated: &mut MutatedAttributes) {
    // Writes: every attribute read becomes a constant in a copy of the graph, and alias
    // analysis of the copy says which of those constants something writes.
    let mut copy = graph.clone();
    let mut constant_of_read = Vec::new();
    for (node, object, name) in attribute_reads(graph, root) {
        let Ok(value) = object.get_attr(&name) else {
            continue;
        };
        let output = graph.node_output(node, 0);
        let Some((attribute, ty)) = frozen_constant(&value, graph.value_type(output)) else {
            continue;
        };
        copy.set_insert_point(InsertPoint::Before(node));
        let constant = copy.insert_constant(attribute, ty);
        copy.replace_all_uses_with(output, constant);
        constant_of_read.push((constant, object, name));
    }
    let top = copy.top_block();
    copy.set_insert_point(InsertPoint::EndOf(top));
    attach_registry_schemas(&mut copy, ferrojit_runtime::OperatorRegistry::global());
    let alias_db = AliasDb::new(&copy);
    for (constant, object, name) in constant_of_read {
        if alias_db.has_writers(constant) {
            mutated.insert(&object, &name);
        }
    }
}

/// Which attribute values [`fold_attributes`] folds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AttributeKinds {
    /// Only values no operation can change in place (numbers, strings, None, devices).
    Immutable,
    All,
}

/// Replaces each read of an attribute that is not mutated by a constant holding its value,
/// named after its path (`self.conv.weight`) as PyTorch names it.
fn fold_attributes(
    graph: &mut Graph,
    root: &Arc<Object>,
    mutated: &MutatedAttributes,
    kinds: AttributeKinds,
) {
    let paths = value_paths(graph);
    for (node, object, name) in attribute_reads(graph, root) {
        if mutated.contains(&object, &name) {
            continue;
        }
        let Ok(value) = object.get_attr(&name) else {
            continue;
        };
        let immutable = matches!(
            value,
            IValue::Int(_)
                | IValue::Double(_)
                | IValue::Bool(_)
                | IValue::Str(_)
                | IValue::None
                | IValue::Device(_)
        );
        if kinds == AttributeKinds::Immutable && !immutable {
            continue;
        }
        let output = graph.node_output(node, 0);
        let Some((attribute, ty)) = frozen_constant(&value, graph.value_type(output)) else {
            continue;
        };
        graph.set_insert_point(InsertPoint::Before(node));
        let constant = graph.insert_constant(attribute, ty);
        if let Some(path) = paths.get(&output) {
            graph.set_debug_name(constant, path);
        }
        graph.replace_all_uses_with(output, constant);
        graph.destroy_node(node);
    }
    let top = graph.top_block();
    graph.set_insert_point(InsertPoint::EndOf(top));
}

/// `self.a.b` for each value read through a chain of `GetAttr` from `self`.
fn value_paths(graph: &Graph) -> HashMap<ValueId, String> {
    let mut paths = HashMap::new();
    let Some(&self_value) = graph.inputs().first() else {
        return paths;
    };
    paths.insert(self_value, "self".to_string());
    for node in graph.all_nodes() {
        if !graph.kind(node).is_prim(Prim::GetAttr) {
            continue;
        }
        let Some(receiver) = graph.node_inputs(node).first().and_then(|v| paths.get(v)) else {
            continue;
        };
        if let Some(AttributeValue::Str(name)) = graph.attribute(node, "name") {
            let path = format!("{receiver}.{name}");
            paths.insert(graph.node_output(node, 0), path);
        }
    }
    paths
}

/// What PyTorch's `runOptimization` does after attribute propagation, with the passes
/// ferrojit has: dead code elimination, the peephole (which folds rank and size checks on
/// constant weights), constant propagation (which folds the branches on `training`),
/// common subexpressions and constant pooling.
fn optimize_after_folding(graph: &mut Graph) -> Result<(), String> {
    crate::dead_code_elimination::eliminate_dead_code_with_alias_db(graph)
        .map_err(|error| error.to_string())?;
    crate::peephole::peephole(graph, false)?;
    crate::constant_propagation::propagate_constants(graph)?;
    crate::peephole::peephole(graph, false)?;
    crate::common_subexpression_elimination::eliminate_common_subexpressions(graph);
    crate::constant_pooling::pool_constants(graph);
    crate::dead_code_elimination::eliminate_dead_code_with_alias_db(graph)
        .map_err(|error| error.to_string())?;
    if cfg!(debug_assertions) {
        ferrojit_ir::verifier::verify(graph).map_err(|error| error.to_string())?;
    }
    Ok(())
}

/// The frozen module's class and object: the attributes of `self` the frozen graphs still
/// read or set (and the preserved ones), in the original class's order.
fn build_frozen_object(
    module: &Module,
    methods: &[FrozenMethod],
    preserved_attributes: &HashSet<String>,
    method_names: &[String],
) -> (Arc<ClassType>, Arc<Object>) {
    let original = module.class();
    let mut kept: HashSet<String> = preserved_attributes.clone();
    let mut keep_everything = false;
    for method in methods {
        let graph = &method.graph;
        let Some(&self_value) = graph.inputs().first() else {
            continue;
        };
        for use_ in graph.value_uses(self_value) {
            let kind = graph.kind(use_.node);
            if (kind.is_prim(Prim::GetAttr) || kind.is_prim(Prim::SetAttr)) && use_.input_index == 0
            {
                if let Some(AttributeValue::Str(name)) = graph.attribute(use_.node, "name") {
                    kept.insert(name.clone());
                }
            } else {
                keep_everything = true;
            }
        }
    }
    let class = ClassType::new(mangled_name(original.qualified_name()), true);
    let slots = module.object().slots();
    let mut values = Vec::new();
    for (index, attribute) in original.attributes().into_iter().enumerate() {
        if keep_everything || kept.contains(&attribute.name) {
            class.add_attribute(&attribute.name, attribute.ty.clone(), attribute.kind);
            values.push(slots.get(index).cloned().unwrap_or(IValue::None));
        }
    }
    for name in method_names {
        class.add_method_name(name);
    }
    let object = Object::with_slots(class.clone(), values, module.object().methods().clone());
    (class, object)
}

/// PyTorch's mangled name for the clone of a class: `___torch_mangle_N` before the last
/// component (`__torch__.M` → `__torch__.___torch_mangle_0.M`). An original name that is
/// mangled already gets the next number.
fn mangled_name(qualified: &str) -> String {
    let (qualifier, short) = qualified
        .rsplit_once('.')
        .unwrap_or(("__torch__", qualified));
    let mut parts: Vec<&str> = qualifier.split('.').collect();
    let mut number = 0;
    if let Some(last) = parts.last() {
        if let Some(known) = last
            .strip_prefix("___torch_mangle_")
            .and_then(|n| n.parse::<u64>().ok())
        {
            number = known + 1;
            parts.pop();
        }
    }
    format!("{}.___torch_mangle_{number}.{short}", parts.join("."))
}

#[cfg(test)]
mod tests {
    use super::mangled_name;

    #[test]
    fn mangled_names_follow_pytorch() {
        assert_eq!(mangled_name("__torch__.M"), "__torch__.___torch_mangle_0.M");
        assert_eq!(
            mangled_name("__torch__.a.b.C"),
            "__torch__.a.b.___torch_mangle_0.C"
        );
        assert_eq!(
            mangled_name("__torch__.___torch_mangle_4.C"),
            "__torch__.___torch_mangle_5.C"
        );
    }
}
