//! The graph IR: nodes, values and blocks in per-graph arenas addressed by typed ids.
//!
//! What a node *is* (kind, inputs, outputs, attributes) lives in the node arena; where it
//! *sits* is a doubly linked list per block, so inserting, moving and destroying never
//! renumber anything. Every block ends in a `prim::Return` node whose inputs are the
//! block's outputs, so uses of a value by a block's outputs are ordinary uses.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

mod edit;

pub use edit::GraphEditError;

use crate::attributes::AttributeValue;
use crate::prims::Prim;
use crate::schema::FunctionSchema;
use crate::types::Type;

/// An operator or primitive name such as `aten::add` or `prim::Loop`.
///
/// A symbol of the prim table is interned as its [`Prim`], so the verifier, the passes and
/// the interpreter's compiler compare enums; every other kind is a shared string. (A global
/// interner of every name would let untrusted files grow a table that is never freed.)
#[derive(Debug, Clone)]
pub struct Symbol {
    text: Arc<str>,
    prim: Option<Prim>,
}

impl PartialEq for Symbol {
    fn eq(&self, other: &Symbol) -> bool {
        match (self.prim, other.prim) {
            (Some(a), Some(b)) => a == b,
            (None, None) => self.text == other.text,
            _ => false,
        }
    }
}

impl Eq for Symbol {}

impl std::hash::Hash for Symbol {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.text.hash(state);
    }
}

impl PartialOrd for Symbol {
    fn partial_cmp(&self, other: &Symbol) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Symbol {
    fn cmp(&self, other: &Symbol) -> std::cmp::Ordering {
        self.text.cmp(&other.text)
    }
}

impl From<Prim> for Symbol {
    fn from(prim: Prim) -> Symbol {
        Symbol {
            text: Arc::from(prim.name()),
            prim: Some(prim),
        }
    }
}

impl Symbol {
    pub fn new(qualified: &str) -> Symbol {
        Symbol {
            text: Arc::from(qualified),
            prim: Prim::from_name(qualified),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The prim this symbol names, if it is one of the prim table's.
    pub fn prim(&self) -> Option<Prim> {
        self.prim
    }

    /// Whether this symbol is `prim`.
    pub fn is_prim(&self, prim: Prim) -> bool {
        self.prim == Some(prim)
    }

    /// The part before `::` (`aten` in `aten::add`).
    pub fn namespace(&self) -> &str {
        self.text.split_once("::").map(|(ns, _)| ns).unwrap_or("")
    }

    /// The part after `::` (`add` in `aten::add`).
    pub fn unqualified(&self) -> &str {
        self.text
            .split_once("::")
            .map(|(_, n)| n)
            .unwrap_or(&self.text)
    }

    pub fn is(&self, qualified: &str) -> bool {
        &*self.text == qualified
    }
}

impl fmt::Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

macro_rules! define_id {
    ($name:ident, $prefix:literal) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

define_id!(NodeId, "node");
define_id!(ValueId, "v");
define_id!(BlockId, "block");

/// Where a value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueDefinition {
    NodeOutput { node: NodeId, index: usize },
    BlockParameter { block: BlockId, index: usize },
}

/// One use of a value: input number `input_index` of `node`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Use {
    pub node: NodeId,
    pub input_index: usize,
}

#[derive(Debug, Clone)]
pub struct ValueData {
    pub ty: Type,
    pub debug_name: Option<String>,
    pub definition: ValueDefinition,
    pub uses: Vec<Use>,
}

#[derive(Debug, Clone)]
pub struct NodeData {
    pub kind: Symbol,
    pub inputs: Vec<ValueId>,
    pub outputs: Vec<ValueId>,
    pub blocks: Vec<BlockId>,
    /// Attributes in insertion order, as PyTorch prints them.
    pub attributes: Vec<(String, AttributeValue)>,
    /// The operator schema chosen by the compiler for `aten::`-style calls; not printed.
    pub schema: Option<Arc<FunctionSchema>>,
    /// An opaque source location (file, line, column), if known.
    pub source_location: Option<SourceLocation>,
    /// The tracer's module scope (`__module.conv`), printed as `, scope: NAME`.
    pub scope: Option<String>,
    /// Where this node was inlined from, innermost call first: each entry is the called
    /// function's name and the location of the call.
    pub call_stack: Vec<(String, SourceLocation)>,
    pub owning_block: Option<BlockId>,
    previous: Option<NodeId>,
    next: Option<NodeId>,
    destroyed: bool,
}

impl NodeData {
    /// A node of `kind` with no inputs, outputs, blocks or annotations, not in a block's list.
    fn unlinked(kind: Symbol, owning_block: Option<BlockId>) -> NodeData {
        NodeData {
            kind,
            inputs: Vec::new(),
            outputs: Vec::new(),
            blocks: Vec::new(),
            attributes: Vec::new(),
            schema: None,
            source_location: None,
            scope: None,
            call_stack: Vec::new(),
            owning_block,
            previous: None,
            next: None,
            destroyed: false,
        }
    }
}

/// A source position kept beside a node, used for error tracebacks and `# file:line:col`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLocation {
    pub file: Arc<str>,
    pub line: u32,
    pub column: u32,
    /// The range in the source text the node was compiled from, when the text is known
    /// (compiled nodes; not nodes parsed from IR text). Runtime tracebacks show it.
    pub range: Option<crate::source::SourceRange>,
}

#[derive(Debug, Clone)]
pub struct BlockData {
    pub parameters: Vec<ValueId>,
    pub return_node: NodeId,
    pub owning_node: Option<NodeId>,
    first: Option<NodeId>,
    last: Option<NodeId>,
}

/// Where `Graph::insert_node` puts new nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsertPoint {
    /// Append at the end of the block (before its return node).
    EndOf(BlockId),
    /// Immediately before the given node.
    Before(NodeId),
}

/// A TorchScript graph: one top-level block, its inputs and outputs, and all nested blocks.
#[derive(Debug, Clone)]
pub struct Graph {
    nodes: Vec<NodeData>,
    values: Vec<ValueData>,
    blocks: Vec<BlockData>,
    top_block: BlockId,
    insert_point: InsertPoint,
    names: HashMap<String, ValueId>,
    name_base_suffix: HashMap<String, u64>,
    /// The number an unnamed value prints as (`%5`), per value. Equal to the id unless the
    /// parser set it from text, so parsed graphs print their numbers back unchanged.
    value_numbers: Vec<u64>,
    next_value_number: u64,
}

impl Default for Graph {
    fn default() -> Self {
        Graph::new()
    }
}

impl Graph {
    pub fn new() -> Graph {
        let mut graph = Graph {
            nodes: Vec::new(),
            values: Vec::new(),
            blocks: Vec::new(),
            top_block: BlockId(0),
            insert_point: InsertPoint::EndOf(BlockId(0)),
            names: HashMap::new(),
            name_base_suffix: HashMap::new(),
            value_numbers: Vec::new(),
            next_value_number: 0,
        };
        let top = graph.new_block(None);
        graph.top_block = top;
        graph.insert_point = InsertPoint::EndOf(top);
        graph
    }

    fn new_block(&mut self, owning_node: Option<NodeId>) -> BlockId {
        let block_id = BlockId(self.blocks.len() as u32);
        let return_node = NodeId(self.nodes.len() as u32);
        self.nodes.push(NodeData::unlinked(
            Symbol::from(Prim::Return),
            Some(block_id),
        ));
        self.blocks.push(BlockData {
            parameters: Vec::new(),
            return_node,
            owning_node,
            first: None,
            last: None,
        });
        block_id
    }

    // ----- accessors ---------------------------------------------------------------------

    pub fn top_block(&self) -> BlockId {
        self.top_block
    }

    pub fn inputs(&self) -> &[ValueId] {
        &self.blocks[self.top_block.index()].parameters
    }

    pub fn outputs(&self) -> &[ValueId] {
        self.block_outputs(self.top_block)
    }

    pub fn node(&self, node: NodeId) -> &NodeData {
        &self.nodes[node.index()]
    }

    /// The whole record of a node, for the parser and for tests that break invariants on
    /// purpose. Passes use the editing operations instead, which keep use lists consistent.
    pub(crate) fn node_mut(&mut self, node: NodeId) -> &mut NodeData {
        &mut self.nodes[node.index()]
    }

    /// Sets the operator schema a node was matched against (or clears it).
    pub fn set_node_schema(&mut self, node: NodeId, schema: Option<Arc<FunctionSchema>>) {
        self.nodes[node.index()].schema = schema;
    }

    /// Copies where `from` came from (source location, scope and inlining call stack) to
    /// `to`, as PyTorch's `Node::copyMetadata` does for nodes a pass creates in another's
    /// place.
    pub fn copy_node_metadata(&mut self, from: NodeId, to: NodeId) {
        let source = &self.nodes[from.index()];
        let (location, scope, call_stack) = (
            source.source_location.clone(),
            source.scope.clone(),
            source.call_stack.clone(),
        );
        let target = &mut self.nodes[to.index()];
        target.source_location = location;
        target.scope = scope;
        target.call_stack = call_stack;
    }

    /// Sets where in the source a node came from (or clears it).
    pub fn set_source_location(&mut self, node: NodeId, location: Option<SourceLocation>) {
        self.nodes[node.index()].source_location = location;
    }

    /// Direct access to a value's record, for tests that break invariants on purpose.
    #[cfg(test)]
    pub(crate) fn value_mut(&mut self, value: ValueId) -> &mut ValueData {
        &mut self.values[value.index()]
    }

    pub fn value(&self, value: ValueId) -> &ValueData {
        &self.values[value.index()]
    }

    pub fn block(&self, block: BlockId) -> &BlockData {
        &self.blocks[block.index()]
    }

    pub fn kind(&self, node: NodeId) -> &Symbol {
        &self.nodes[node.index()].kind
    }

    pub fn node_inputs(&self, node: NodeId) -> &[ValueId] {
        &self.nodes[node.index()].inputs
    }

    pub fn node_outputs(&self, node: NodeId) -> &[ValueId] {
        &self.nodes[node.index()].outputs
    }

    pub fn node_output(&self, node: NodeId, index: usize) -> ValueId {
        self.nodes[node.index()].outputs[index]
    }

    pub fn node_blocks(&self, node: NodeId) -> &[BlockId] {
        &self.nodes[node.index()].blocks
    }

    pub fn value_type(&self, value: ValueId) -> &Type {
        &self.values[value.index()].ty
    }

    pub fn set_value_type(&mut self, value: ValueId, ty: Type) {
        self.values[value.index()].ty = ty;
    }

    pub fn value_uses(&self, value: ValueId) -> &[Use] {
        &self.values[value.index()].uses
    }

    pub fn value_definition(&self, value: ValueId) -> ValueDefinition {
        self.values[value.index()].definition
    }

    /// The node producing `value`, or `None` for block parameters.
    pub fn producer(&self, value: ValueId) -> Option<NodeId> {
        match self.values[value.index()].definition {
            ValueDefinition::NodeOutput { node, .. } => Some(node),
            ValueDefinition::BlockParameter { .. } => None,
        }
    }

    pub fn block_parameters(&self, block: BlockId) -> &[ValueId] {
        &self.blocks[block.index()].parameters
    }

    pub fn block_outputs(&self, block: BlockId) -> &[ValueId] {
        let return_node = self.blocks[block.index()].return_node;
        &self.nodes[return_node.index()].inputs
    }

    pub fn block_return_node(&self, block: BlockId) -> NodeId {
        self.blocks[block.index()].return_node
    }

    pub fn block_owning_node(&self, block: BlockId) -> Option<NodeId> {
        self.blocks[block.index()].owning_node
    }

    /// The nodes of a block in order, excluding its return node.
    pub fn block_nodes(&self, block: BlockId) -> Vec<NodeId> {
        let mut result = Vec::new();
        let mut cursor = self.blocks[block.index()].first;
        while let Some(node) = cursor {
            result.push(node);
            cursor = self.nodes[node.index()].next;
        }
        result
    }

    pub fn next_node(&self, node: NodeId) -> Option<NodeId> {
        self.nodes[node.index()].next
    }

    pub fn previous_node(&self, node: NodeId) -> Option<NodeId> {
        self.nodes[node.index()].previous
    }

    pub fn is_destroyed(&self, node: NodeId) -> bool {
        self.nodes[node.index()].destroyed
    }

    /// Number of value slots ever created (including values of destroyed nodes).
    pub fn value_capacity(&self) -> usize {
        self.values.len()
    }

    pub fn node_capacity(&self) -> usize {
        self.nodes.len()
    }

    pub fn block_capacity(&self) -> usize {
        self.blocks.len()
    }

    // ----- names ------------------------------------------------------------------------

    pub fn debug_name(&self, value: ValueId) -> Option<&str> {
        self.values[value.index()].debug_name.as_deref()
    }

    /// The name the printer uses: the debug name, or the value's number.
    pub fn value_display_name(&self, value: ValueId) -> String {
        match &self.values[value.index()].debug_name {
            Some(name) => name.clone(),
            None => self.value_number(value).to_string(),
        }
    }

    /// The number an unnamed value prints as.
    pub fn value_number(&self, value: ValueId) -> u64 {
        self.value_numbers
            .get(value.index())
            .copied()
            .unwrap_or(value.0 as u64)
    }

    /// Makes an unnamed value print as `%number`; values created later get larger numbers,
    /// so they never print like this one.
    pub fn set_value_number(&mut self, value: ValueId, number: u64) {
        if let Some(slot) = self.value_numbers.get_mut(value.index()) {
            *slot = number;
        }
        self.next_value_number = self.next_value_number.max(number.saturating_add(1));
    }

    /// Sets a debug name exactly as given, without PyTorch's uniquing (for the text parser,
    /// which must keep names as written). Returns false, changing nothing, when another
    /// value already has the name or the name is a plain number.
    pub fn set_debug_name_exact(&mut self, value: ValueId, name: &str) -> bool {
        if !Graph::is_valid_debug_name(name) {
            return false;
        }
        if let Some(&owner) = self.names.get(name) {
            return owner == value;
        }
        if let Some(old) = self.values[value.index()].debug_name.take() {
            self.names.remove(&old);
        }
        self.names.insert(name.to_string(), value);
        self.values[value.index()].debug_name = Some(name.to_string());
        // No suffix is recorded: PyTorch's parser names values with `setDebugName`, which
        // records one only when it renames a value, so a later copy of `%i` renames the
        // original `%i.1`, not `%i.2`.
        true
    }

    /// The value named `name` (debug name), if any.
    pub fn value_by_name(&self, name: &str) -> Option<ValueId> {
        self.names.get(name).copied()
    }

    /// Whether `name` can be a debug name: PyTorch rejects names that are plain numbers,
    /// because those are reserved for unnamed values.
    pub fn is_valid_debug_name(name: &str) -> bool {
        !name.is_empty() && !name.bytes().all(|b| b.is_ascii_digit())
    }

    /// Removes a value's debug name, so that it prints as its number (PyTorch's
    /// `setDebugName("")`).
    pub fn clear_debug_name(&mut self, value: ValueId) {
        if let Some(old) = self.values[value.index()].debug_name.take() {
            if self.names.get(&old) == Some(&value) {
                self.names.remove(&old);
            }
        }
    }

    /// Sets a debug name with PyTorch's uniquing: if another value already has `name`, that
    /// *other* value is renamed to `name.N`, and this value takes the plain name. This is why
    /// a graph input assigned again prints as `%x.1` and the last assignment as `%x`.
    /// Names that are plain numbers are ignored (they would collide with unnamed values).
    pub fn set_debug_name(&mut self, value: ValueId, name: &str) {
        if !Graph::is_valid_debug_name(name) {
            return;
        }
        if let Some(old) = self.values[value.index()].debug_name.take() {
            if self.names.get(&old) == Some(&value) {
                self.names.remove(&old);
            }
        }
        if let Some(&old_owner) = self.names.get(name) {
            if old_owner != value {
                let (mut suffix, name_base) = split_numeric_suffix(name);
                if let Some(&known) = self.name_base_suffix.get(&name_base) {
                    suffix = suffix.max(known + 1);
                }
                let replacement = loop {
                    let candidate = format!("{name_base}.{suffix}");
                    suffix += 1;
                    if !self.names.contains_key(&candidate) {
                        break candidate;
                    }
                };
                self.name_base_suffix.insert(name_base, suffix);
                // The replacement is guaranteed free, so this cannot recurse further.
                self.names.remove(name);
                self.values[old_owner.index()].debug_name = Some(replacement.clone());
                self.names.insert(replacement, old_owner);
            }
        }
        self.names.insert(name.to_string(), value);
        self.values[value.index()].debug_name = Some(name.to_string());
    }

    // ----- construction -------------------------------------------------------------------

    fn new_value(&mut self, ty: Type, definition: ValueDefinition) -> ValueId {
        let id = ValueId(self.values.len() as u32);
        let number = self.next_value_number.max(id.0 as u64);
        self.value_numbers.push(number);
        self.next_value_number = number + 1;
        self.values.push(ValueData {
            ty,
            debug_name: None,
            definition,
            uses: Vec::new(),
        });
        id
    }

    /// Adds a graph input (a parameter of the top block).
    pub fn add_input(&mut self, ty: Type, name: Option<&str>) -> ValueId {
        let top = self.top_block;
        let value = self.add_block_parameter(top, ty);
        if let Some(name) = name {
            self.set_debug_name(value, name);
        }
        value
    }

    pub fn register_output(&mut self, value: ValueId) {
        let top = self.top_block;
        self.add_block_output(top, value);
    }

    pub fn add_block_parameter(&mut self, block: BlockId, ty: Type) -> ValueId {
        let index = self.blocks[block.index()].parameters.len();
        let value = self.new_value(ty, ValueDefinition::BlockParameter { block, index });
        self.blocks[block.index()].parameters.push(value);
        value
    }

    pub fn add_block_output(&mut self, block: BlockId, value: ValueId) {
        let return_node = self.blocks[block.index()].return_node;
        self.add_node_input(return_node, value);
    }

    /// Creates a node that is not yet in any block. Its outputs get the given types.
    pub fn create_node(&mut self, kind: &str, inputs: &[ValueId], output_types: &[Type]) -> NodeId {
        let node = NodeId(self.nodes.len() as u32);
        self.nodes.push(NodeData::unlinked(Symbol::new(kind), None));
        for &input in inputs {
            self.add_node_input(node, input);
        }
        for ty in output_types {
            self.add_node_output(node, ty.clone());
        }
        node
    }

    pub fn add_node_output(&mut self, node: NodeId, ty: Type) -> ValueId {
        let index = self.nodes[node.index()].outputs.len();
        let value = self.new_value(ty, ValueDefinition::NodeOutput { node, index });
        self.nodes[node.index()].outputs.push(value);
        value
    }

    pub fn add_node_input(&mut self, node: NodeId, value: ValueId) {
        let input_index = self.nodes[node.index()].inputs.len();
        self.nodes[node.index()].inputs.push(value);
        self.values[value.index()]
            .uses
            .push(Use { node, input_index });
    }

    /// Replaces input `input_index` of `node` with `value`.
    pub fn replace_node_input(&mut self, node: NodeId, input_index: usize, value: ValueId) {
        let old = self.nodes[node.index()].inputs[input_index];
        self.values[old.index()]
            .uses
            .retain(|u| !(u.node == node && u.input_index == input_index));
        self.nodes[node.index()].inputs[input_index] = value;
        self.values[value.index()]
            .uses
            .push(Use { node, input_index });
    }

    /// Adds a nested block to `node` (the branches of `prim::If`, the body of `prim::Loop`).
    pub fn add_node_block(&mut self, node: NodeId) -> BlockId {
        let block = self.new_block(Some(node));
        self.nodes[node.index()].blocks.push(block);
        block
    }

    pub fn set_attribute(&mut self, node: NodeId, name: &str, value: AttributeValue) {
        let attributes = &mut self.nodes[node.index()].attributes;
        if let Some(slot) = attributes.iter_mut().find(|(n, _)| n == name) {
            slot.1 = value;
        } else {
            attributes.push((name.to_string(), value));
        }
    }

    pub fn attribute(&self, node: NodeId, name: &str) -> Option<&AttributeValue> {
        self.nodes[node.index()]
            .attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    pub fn insert_point(&self) -> InsertPoint {
        self.insert_point
    }

    pub fn set_insert_point(&mut self, point: InsertPoint) {
        self.insert_point = point;
    }

    /// The block new nodes currently go into.
    pub fn insert_block(&self) -> BlockId {
        match self.insert_point {
            InsertPoint::EndOf(block) => block,
            InsertPoint::Before(node) => self.nodes[node.index()]
                .owning_block
                .unwrap_or(self.top_block),
        }
    }

    /// Links a created node in at the current insertion point.
    pub fn insert_node(&mut self, node: NodeId) -> NodeId {
        match self.insert_point {
            InsertPoint::EndOf(block) => self.append_to_block(block, node),
            InsertPoint::Before(anchor) => self.link_before(anchor, node),
        }
        node
    }

    /// Creates and inserts a node at the insertion point.
    pub fn insert(&mut self, kind: &str, inputs: &[ValueId], output_types: &[Type]) -> NodeId {
        let node = self.create_node(kind, inputs, output_types);
        self.insert_node(node)
    }

    /// Inserts `prim::Constant` producing `value` with type `ty` at the insertion point.
    pub fn insert_constant(&mut self, value: Option<AttributeValue>, ty: Type) -> ValueId {
        let node = self.create_node(Prim::Constant.name(), &[], &[ty]);
        if let Some(value) = value {
            self.set_attribute(node, "value", value);
        }
        self.insert_node(node);
        self.node_output(node, 0)
    }

    fn append_to_block(&mut self, block: BlockId, node: NodeId) {
        let last = self.blocks[block.index()].last;
        {
            let data = &mut self.nodes[node.index()];
            data.owning_block = Some(block);
            data.previous = last;
            data.next = None;
        }
        match last {
            Some(last) => self.nodes[last.index()].next = Some(node),
            None => self.blocks[block.index()].first = Some(node),
        }
        self.blocks[block.index()].last = Some(node);
    }

    fn link_before(&mut self, anchor: NodeId, node: NodeId) {
        let block = self.nodes[anchor.index()]
            .owning_block
            .unwrap_or(self.top_block);
        if self.blocks[block.index()].return_node == anchor {
            self.append_to_block(block, node);
            return;
        }
        let previous = self.nodes[anchor.index()].previous;
        {
            let data = &mut self.nodes[node.index()];
            data.owning_block = Some(block);
            data.previous = previous;
            data.next = Some(anchor);
        }
        self.nodes[anchor.index()].previous = Some(node);
        match previous {
            Some(previous) => self.nodes[previous.index()].next = Some(node),
            None => self.blocks[block.index()].first = Some(node),
        }
    }

    fn unlink(&mut self, node: NodeId) {
        let Some(block) = self.nodes[node.index()].owning_block else {
            return;
        };
        if self.blocks[block.index()].return_node == node {
            return;
        }
        let previous = self.nodes[node.index()].previous;
        let next = self.nodes[node.index()].next;
        match previous {
            Some(previous) => self.nodes[previous.index()].next = next,
            None => self.blocks[block.index()].first = next,
        }
        match next {
            Some(next) => self.nodes[next.index()].previous = previous,
            None => self.blocks[block.index()].last = previous,
        }
        let data = &mut self.nodes[node.index()];
        data.previous = None;
        data.next = None;
        data.owning_block = None;
    }

    /// Moves `node` to just before `anchor` (which may be in another block).
    pub fn move_before(&mut self, node: NodeId, anchor: NodeId) {
        self.unlink(node);
        self.link_before(anchor, node);
    }

    /// Moves `node` to just after `anchor`.
    pub fn move_after(&mut self, node: NodeId, anchor: NodeId) {
        if node == anchor {
            return;
        }
        self.unlink(node);
        match self.nodes[anchor.index()].next {
            Some(next) => self.link_before(next, node),
            None => {
                let block = self.nodes[anchor.index()]
                    .owning_block
                    .unwrap_or(self.top_block);
                self.append_to_block(block, node);
            }
        }
    }

    /// Creates and inserts a node for an operator call: the kind is the schema's name, the
    /// outputs are typed by the schema's returns, and the schema is attached to the node.
    pub fn insert_with_schema(
        &mut self,
        schema: Arc<FunctionSchema>,
        inputs: &[ValueId],
    ) -> NodeId {
        let output_types: Vec<Type> = schema.returns.iter().map(|r| r.ty.clone()).collect();
        let node = self.create_node(&schema.name, inputs, &output_types);
        self.nodes[node.index()].schema = Some(schema);
        self.insert_node(node)
    }

    /// Copies the nodes of `block` of `source` (which may be this graph's clone) to the
    /// insertion point of this graph. `value_map` must map every value the block uses from
    /// outside it (e.g. its parameters); it is extended with every copied value. Returns the
    /// copied block's outputs, mapped.
    pub fn copy_block_from(
        &mut self,
        source: &Graph,
        block: BlockId,
        value_map: &mut HashMap<ValueId, ValueId>,
    ) -> Result<Vec<ValueId>, CopyError> {
        for node in source.block_nodes(block) {
            let data = source.node(node);
            let mut inputs = Vec::with_capacity(data.inputs.len());
            for input in &data.inputs {
                inputs.push(
                    *value_map
                        .get(input)
                        .ok_or(CopyError::UnmappedValue(*input))?,
                );
            }
            let output_types: Vec<Type> = data
                .outputs
                .iter()
                .map(|&o| source.value_type(o).clone())
                .collect();
            let copy = self.create_node(data.kind.as_str(), &inputs, &output_types);
            {
                let target = &mut self.nodes[copy.index()];
                target.attributes = data.attributes.clone();
                target.schema = data.schema.clone();
                target.source_location = data.source_location.clone();
                target.scope = data.scope.clone();
                target.call_stack = data.call_stack.clone();
            }
            for (index, &output) in data.outputs.iter().enumerate() {
                let new_output = self.nodes[copy.index()].outputs[index];
                if let Some(name) = source.debug_name(output) {
                    self.set_debug_name(new_output, name);
                }
                value_map.insert(output, new_output);
            }
            self.insert_node(copy);
            let saved_point = self.insert_point;
            for &nested in &data.blocks {
                let new_block = self.add_node_block(copy);
                for &parameter in source.block_parameters(nested) {
                    let new_parameter =
                        self.add_block_parameter(new_block, source.value_type(parameter).clone());
                    if let Some(name) = source.debug_name(parameter) {
                        self.set_debug_name(new_parameter, name);
                    }
                    value_map.insert(parameter, new_parameter);
                }
                self.insert_point = InsertPoint::EndOf(new_block);
                let outputs = self.copy_block_from(source, nested, value_map)?;
                for output in outputs {
                    self.add_block_output(new_block, output);
                }
            }
            self.insert_point = saved_point;
        }
        source
            .block_outputs(block)
            .iter()
            .map(|o| {
                value_map
                    .get(o)
                    .copied()
                    .ok_or(CopyError::UnmappedValue(*o))
            })
            .collect()
    }

    /// Makes every use of `old` a use of `new`.
    pub fn replace_all_uses_with(&mut self, old: ValueId, new: ValueId) {
        if old == new {
            return;
        }
        let uses = std::mem::take(&mut self.values[old.index()].uses);
        for use_site in uses {
            self.nodes[use_site.node.index()].inputs[use_site.input_index] = new;
            self.values[new.index()].uses.push(use_site);
        }
    }

    /// Removes a node whose outputs have no uses, with its nested blocks.
    /// Returns false (and changes nothing) when an output is still used.
    pub fn destroy_node(&mut self, node: NodeId) -> bool {
        if self.nodes[node.index()]
            .outputs
            .iter()
            .any(|&o| !self.values[o.index()].uses.is_empty())
        {
            return false;
        }
        // Destroy nested blocks innermost-first without recursion depth tied to input.
        let mut pending = vec![node];
        let mut order = Vec::new();
        while let Some(current) = pending.pop() {
            order.push(current);
            for &block in &self.nodes[current.index()].blocks {
                pending.extend(self.block_nodes(block));
                pending.push(self.blocks[block.index()].return_node);
            }
        }
        for &current in order.iter().rev() {
            self.drop_inputs(current);
        }
        for &current in &order {
            self.unlink(current);
            self.nodes[current.index()].destroyed = true;
        }
        true
    }

    fn drop_inputs(&mut self, node: NodeId) {
        let inputs = std::mem::take(&mut self.nodes[node.index()].inputs);
        for (input_index, input) in inputs.into_iter().enumerate() {
            self.values[input.index()]
                .uses
                .retain(|u| !(u.node == node && u.input_index == input_index));
        }
    }

    /// Removes every input of `node` (keeping uses lists consistent).
    pub fn remove_all_inputs(&mut self, node: NodeId) {
        self.drop_inputs(node);
    }

    /// All live nodes in program order, depth first (a node before the nodes of its blocks).
    pub fn all_nodes(&self) -> Vec<NodeId> {
        let mut result = Vec::new();
        let mut stack: Vec<NodeId> = self.block_nodes(self.top_block).into_iter().rev().collect();
        while let Some(node) = stack.pop() {
            result.push(node);
            for &block in self.nodes[node.index()].blocks.iter().rev() {
                stack.extend(self.block_nodes(block).into_iter().rev());
            }
        }
        result
    }
}

/// Why a block could not be copied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CopyError {
    #[error("value {0} is used by the copied block but has no mapping")]
    UnmappedValue(ValueId),
}

/// Splits `x.3` into (3, "x"); names without a numeric suffix give (1, name).
fn split_numeric_suffix(name: &str) -> (u64, String) {
    if let Some((base, digits)) = name.rsplit_once('.') {
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(number) = digits.parse::<u64>() {
                return (number, base.to_string());
            }
        }
    }
    (1, name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renaming_moves_old_owner_to_suffix() {
        let mut graph = Graph::new();
        let x1 = graph.add_input(Type::Tensor, Some("x"));
        let node = graph.insert("aten::relu", &[x1], &[Type::Tensor]);
        let x2 = graph.node_output(node, 0);
        graph.set_debug_name(x2, "x");
        assert_eq!(graph.debug_name(x1), Some("x.1"));
        assert_eq!(graph.debug_name(x2), Some("x"));
        let node = graph.insert("aten::relu", &[x2], &[Type::Tensor]);
        let x3 = graph.node_output(node, 0);
        graph.set_debug_name(x3, "x");
        // PyTorch remembers the last suffix per base name and continues after it.
        assert_eq!(graph.debug_name(x2), Some("x.3"));
        assert_eq!(graph.debug_name(x3), Some("x"));
    }

    #[test]
    fn uses_follow_replacement_and_destroy() {
        let mut graph = Graph::new();
        let a = graph.add_input(Type::Tensor, Some("a"));
        let b = graph.add_input(Type::Tensor, Some("b"));
        let node = graph.insert("aten::relu", &[a], &[Type::Tensor]);
        let out = graph.node_output(node, 0);
        graph.register_output(out);
        assert_eq!(graph.value_uses(a).len(), 1);
        graph.replace_all_uses_with(a, b);
        assert!(graph.value_uses(a).is_empty());
        assert_eq!(graph.value_uses(b).len(), 1);
        assert!(!graph.destroy_node(node), "output still used by return");
        graph.replace_all_uses_with(out, b);
        assert!(graph.destroy_node(node));
        assert!(graph.value_uses(b).len() == 1, "only the return uses b now");
        assert!(graph.block_nodes(graph.top_block()).is_empty());
    }

    #[test]
    fn insert_before_and_move() {
        let mut graph = Graph::new();
        let a = graph.add_input(Type::Int, None);
        let first = graph.insert("prim::A", &[a], &[]);
        let second = graph.insert("prim::B", &[a], &[]);
        graph.set_insert_point(InsertPoint::Before(first));
        let zeroth = graph.insert("prim::C", &[a], &[]);
        assert_eq!(
            graph.block_nodes(graph.top_block()),
            vec![zeroth, first, second]
        );
        graph.move_before(second, zeroth);
        assert_eq!(
            graph.block_nodes(graph.top_block()),
            vec![second, zeroth, first]
        );
    }
}
