//! `freeze_module`, PyTorch's `torch._C._freeze_module` (torch/csrc/jit/passes/
//! freeze_module.cpp): the preserved methods are inlined with everything they call, every
//! attribute they read and never mutate becomes a constant (tensors detached, as PyTorch
//! freezes parameters), chains of `prim::GetAttr` through submodules fold away with them,
//! `training` (False in eval mode) folds like any other attribute so constant propagation
//! removes the training-only branches, and the attributes and submodules nothing reads any
//! more are dropped: the frozen module is an object of a new class that holds only what the
//! frozen graphs still read.
//!
//! Tuples, lists and dicts of such values (tensors, numbers, strings, None, devices, and
//! containers of them) fold too, as PyTorch's freezing folds them: PyTorch puts each in one
//! `prim::Constant`; ferrojit's IR has no tuple or dict constant, so each becomes a
//! `prim::TupleConstruct`/`ListConstruct`/`DictConstruct` of constants (named like the
//! attribute), which the peephole and constant propagation then index into as PyTorch's do
//! into its constant. A list or dict the graphs write to stays an attribute, as in PyTorch.
//!
//! An attribute stays an attribute when the graphs mutate it: a `prim::SetAttr` on it, or
//! (alias analysis) a write to the memory it holds, or to the memory of an attribute that
//! shares its storage. It also stays when no constant can hold its value (objects, named
//! tuples), when the module holding it is used other than to read or set attributes
//! (passed to a call that could not be inlined, put in a list), and when the caller
//! preserves it by name.
//!
//! Interfaces (PyTorch's `freezeInterfaces`, on by default): a submodule attribute typed by
//! an interface is read with the type of the module it holds, so the methods called on it
//! inline like any other submodule's ([`resolve_interface_reads`]); setting such an
//! attribute is refused, as PyTorch refuses it. With interfaces not frozen, PyTorch refuses
//! any module whose graphs read an interface-typed attribute, and so does ferrojit.

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
    /// A method sets an interface-typed attribute (interfaces frozen).
    SetsInterfaceAttribute { name: String },
    /// A method reads an interface-typed attribute, and interfaces are not frozen.
    UsesInterfaces,
    /// An interface-typed attribute whose module freezing cannot find.
    InterfaceNotFound { name: String },
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
            FreezeError::SetsInterfaceAttribute { name } => write!(
                f,
                "Freezing does not support SetAttr on an interface type. SetAttr is attempted \
                 on '{name}'"
            ),
            FreezeError::UsesInterfaces => {
                write!(
                    f,
                    "attempted to freeze a module that uses interface attributes"
                )
            }
            FreezeError::InterfaceNotFound { name } => {
                write!(f, "failed to freeze interface attribute '{name}'")
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
/// that must stay attributes (PyTorch's `preserved_attrs`, which holds both); and whether
/// interface-typed submodules are resolved and inlined (PyTorch's `freeze_interfaces`,
/// true by default as in `torch.jit.freeze`).
#[derive(Debug, Clone)]
pub struct FreezeOptions {
    pub preserved: Vec<String>,
    pub freeze_interfaces: bool,
}

impl Default for FreezeOptions {
    fn default() -> FreezeOptions {
        FreezeOptions {
            preserved: Vec::new(),
            freeze_interfaces: true,
        }
    }
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
    let root = module.object().clone();
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
        let inline = |graph: &mut Graph| {
            inline_calls(graph, &MethodSourceCallees(methods.as_ref())).map_err(|message| {
                FreezeError::Pass {
                    method: name.clone(),
                    message,
                }
            })
        };
        inline(&mut graph)?;
        check_supported(&graph)?;
        if options.freeze_interfaces {
            // Each round inlines the interface calls it resolved, whose bodies may read
            // interface-typed attributes of their own.
            while resolve_interface_reads(&mut graph, &root)? {
                inline(&mut graph)?;
                check_supported(&graph)?;
            }
        } else if reads_interface_attribute(&graph) {
            return Err(FreezeError::UsesInterfaces);
        }
        graphs.push((name.clone(), graph));
    }

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

fn is_interface_type(ty: &Type) -> bool {
    match ty {
        Type::Class(class) => class.is_interface(),
        Type::Interface(_) => true,
        _ => false,
    }
}

/// Whether any `prim::GetAttr` of `graph` reads an interface-typed attribute.
fn reads_interface_attribute(graph: &Graph) -> bool {
    graph.all_nodes().into_iter().any(|node| {
        graph.kind(node).is_prim(Prim::GetAttr)
            && is_interface_type(graph.value_type(graph.node_output(node, 0)))
    })
}

/// PyTorch's `inlineInterfaceCalls` (the retyping half; the caller inlines): each
/// `prim::GetAttr` reading an interface-typed submodule gets the class of the module the
/// attribute holds, so the inliner finds the methods called on it. Refuses a `prim::SetAttr`
/// of an interface-typed attribute (the module it holds could change, so its calls cannot
/// be inlined). Returns whether any read was retyped.
fn resolve_interface_reads(graph: &mut Graph, root: &Arc<Object>) -> Result<bool, FreezeError> {
    let objects = objects_of_values(graph, root);
    let mut retyped = false;
    for node in graph.all_nodes() {
        let kind = graph.kind(node);
        let is_get = kind.is_prim(Prim::GetAttr);
        if !is_get && !kind.is_prim(Prim::SetAttr) {
            continue;
        }
        let Some(AttributeValue::Str(name)) = graph.attribute(node, "name") else {
            continue;
        };
        let name = name.clone();
        let receiver = graph.node_inputs(node).first().and_then(|v| objects.get(v));
        if !is_get {
            let Some(receiver) = receiver else {
                continue;
            };
            let declared = receiver
                .class()
                .attributes()
                .into_iter()
                .find(|attribute| attribute.name == name);
            if declared.is_some_and(|attribute| is_interface_type(&attribute.ty)) {
                return Err(FreezeError::SetsInterfaceAttribute { name });
            }
            continue;
        }
        let output = graph.node_output(node, 0);
        if !is_interface_type(graph.value_type(output)) {
            continue;
        }
        let concrete = match receiver.map(|object| object.get_attr(&name)) {
            Some(Ok(IValue::Object(object))) => object.class().clone(),
            _ => return Err(FreezeError::InterfaceNotFound { name }),
        };
        graph.set_value_type(output, Type::Class(concrete));
        retyped = true;
    }
    Ok(retyped)
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

/// The IR constant an attribute's value becomes, if one constant can hold it: tensors
/// (detached), numbers, strings, devices, None, and lists of numbers and strings.
fn frozen_constant(value: &IValue, declared: &Type) -> Option<(Option<AttributeValue>, Type)> {
    match value {
        IValue::Tensor(cell) => {
            let tensor = cell.get();
            Some((
                Some(AttributeValue::Tensor(tensor.as_ref().clone())),
                tensor_type(&tensor),
            ))
        }
        IValue::Object(_) | IValue::Tuple(_) | IValue::Dict(_) => None,
        IValue::List(list)
            if !matches!(list.element_type(), Type::Int | Type::Float | Type::Str) =>
        {
            None
        }
        other => constant_for(other, declared),
    }
}

/// Whether [`insert_frozen_value`] can build `value`: what [`frozen_constant`] holds, and
/// tuples (not named ones), lists (not of tensors) and dicts of such values.
fn can_freeze_value(value: &IValue) -> bool {
    match value {
        IValue::Tuple(tuple) => tuple.named.is_none() && tuple.items.iter().all(can_freeze_value),
        // A list of tensors stays an attribute: constant propagation would fold its
        // construct into a tensor-list constant, which the archive printer cannot write.
        IValue::List(list) => {
            let items = list.to_vec();
            !items.iter().any(|item| matches!(item, IValue::Tensor(_)))
                && items.iter().all(can_freeze_value)
        }
        IValue::Dict(dict) => dict
            .entries()
            .iter()
            .all(|(key, value)| can_freeze_value(key) && can_freeze_value(value)),
        IValue::Tensor(_)
        | IValue::Int(_)
        | IValue::Double(_)
        | IValue::Bool(_)
        | IValue::Str(_)
        | IValue::None
        | IValue::Device(_) => true,
        _ => false,
    }
}

/// Inserts, at the graph's insert point, the nodes that give `value`: one constant where
/// [`frozen_constant`] can hold it, else the construct of its items' values. Every value
/// inserted is pushed on `inserted` (alias analysis asks each whether it is written).
/// `None`, with nothing inserted, when [`can_freeze_value`] refuses `value`.
fn insert_frozen_value(
    graph: &mut Graph,
    value: &IValue,
    declared: &Type,
    inserted: &mut Vec<ValueId>,
) -> Option<ValueId> {
    // Checked first, so that a refusal deep inside leaves no half-built construct behind.
    if !can_freeze_value(value) {
        return None;
    }
    insert_freezable_value(graph, value, declared, inserted)
}

/// The type a container's item is built with: its declared type, but `NoneType` for a
/// None (as PyTorch types a None inside a constant).
fn item_type(item: &IValue, declared: &Type) -> Type {
    if matches!(item, IValue::None) {
        Type::NoneType
    } else {
        declared.clone()
    }
}

fn insert_freezable_value(
    graph: &mut Graph,
    value: &IValue,
    declared: &Type,
    inserted: &mut Vec<ValueId>,
) -> Option<ValueId> {
    if let Some((attribute, ty)) = frozen_constant(value, declared) {
        let constant = graph.insert_constant(attribute, ty);
        inserted.push(constant);
        return Some(constant);
    }
    let (kind, inputs, ty) = match value {
        IValue::Tuple(tuple) => {
            let declared_items = match declared {
                Type::Tuple(items) if items.len() == tuple.items.len() => items.clone(),
                _ => vec![Type::NoneType; tuple.items.len()],
            };
            let mut inputs = Vec::with_capacity(tuple.items.len());
            for (item, ty) in tuple.items.iter().zip(&declared_items) {
                let ty = item_type(item, ty);
                inputs.push(insert_freezable_value(graph, item, &ty, inserted)?);
            }
            let types = inputs
                .iter()
                .map(|&v| graph.value_type(v).clone())
                .collect();
            ("prim::TupleConstruct", inputs, Type::Tuple(types))
        }
        IValue::List(list) => {
            let element = list.element_type().clone();
            let mut inputs = Vec::new();
            for item in list.to_vec() {
                let ty = item_type(&item, &element);
                inputs.push(insert_freezable_value(graph, &item, &ty, inserted)?);
            }
            ("prim::ListConstruct", inputs, Type::List(Box::new(element)))
        }
        IValue::Dict(dict) => {
            let (key_type, value_type) = (dict.key_type().clone(), dict.value_type().clone());
            let mut inputs = Vec::new();
            for (key, item) in dict.entries() {
                inputs.push(insert_freezable_value(graph, &key, &key_type, inserted)?);
                let ty = item_type(&item, &value_type);
                inputs.push(insert_freezable_value(graph, &item, &ty, inserted)?);
            }
            (
                "prim::DictConstruct",
                inputs,
                Type::Dict(Box::new(key_type), Box::new(value_type)),
            )
        }
        _ => return None,
    };
    let node = graph.insert(kind, &inputs, &[ty]);
    let output = graph.node_output(node, 0);
    inserted.push(output);
    Some(output)
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
        let declared = graph.value_type(output).clone();
        copy.set_insert_point(InsertPoint::Before(node));
        let mut inserted = Vec::new();
        let Some(constant) = insert_frozen_value(&mut copy, &value, &declared, &mut inserted)
        else {
            continue;
        };
        copy.replace_all_uses_with(output, constant);
        constant_of_read.push((inserted, object, name));
    }
    let top = copy.top_block();
    copy.set_insert_point(InsertPoint::EndOf(top));
    attach_registry_schemas(&mut copy, ferrojit_runtime::OperatorRegistry::global());
    let alias_db = AliasDb::new(&copy);
    for (inserted, object, name) in constant_of_read {
        // A write to any part (a tensor in a tuple, the list itself) keeps the attribute.
        if inserted.iter().any(|&value| alias_db.has_writers(value)) {
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
        let declared = graph.value_type(output).clone();
        graph.set_insert_point(InsertPoint::Before(node));
        let Some(constant) = insert_frozen_value(graph, &value, &declared, &mut Vec::new()) else {
            continue;
        };
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
/// `LowerSimpleTuples`, common subexpressions and constant pooling.
fn optimize_after_folding(graph: &mut Graph) -> Result<(), String> {
    crate::dead_code_elimination::eliminate_dead_code_with_alias_db(graph)
        .map_err(|error| error.to_string())?;
    crate::peephole::peephole(graph, false)?;
    crate::constant_propagation::propagate_constants(graph)?;
    // Frozen tuples are constructs of constants: indexing into them picks the constant.
    if super::lower_simple_tuples::lower_simple_tuples(graph) {
        crate::constant_propagation::propagate_constants(graph)?;
    }
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
            let value = slots.get(index).cloned().unwrap_or(IValue::None);
            // PyTorch's `reassignInterfaceTypes`: a kept interface attribute takes the
            // type of the module it holds.
            let ty = match &value {
                IValue::Object(object) if is_interface_type(&attribute.ty) => {
                    Type::Class(object.class().clone())
                }
                _ => attribute.ty.clone(),
            };
            class.add_attribute(&attribute.name, ty, attribute.kind);
            values.push(value);
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
