//! Backward nodes: what one recorded operator call keeps for its backward (the arguments its
//! formula needs, the versions of the saved tensors, where each input's gradient goes).

use std::any::Any;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, Weak};

use ferrojit_runtime::autograd::{GradNode, VersionCounter};
use ferrojit_runtime::{IValue, RuntimeError, TensorCell};
use ferrojit_tensor::DType;

use crate::formulas::Formula;

/// Where a gradient flows: into another node's output `output_nr`, or into a leaf's `.grad`
/// (PyTorch's `AccumulateGrad` node).
#[derive(Clone)]
pub enum Edge {
    Node(Arc<Node>, usize),
    Leaf(Arc<TensorCell>),
}

impl Edge {
    /// The edge of a tensor that requires grad: its `grad_fn`, or itself as a leaf.
    pub fn of(cell: &Arc<TensorCell>) -> Option<Edge> {
        if !cell.requires_grad() {
            return None;
        }
        match cell.autograd().grad_fn() {
            Some(history) => node_of(&history.node).map(|node| Edge::Node(node, history.output_nr)),
            None => Some(Edge::Leaf(Arc::clone(cell))),
        }
    }
}

/// The concrete node behind a tensor's `grad_fn`.
pub fn node_of(node: &Arc<dyn GradNode>) -> Option<Arc<Node>> {
    Arc::clone(node).into_any().downcast::<Node>().ok()
}

/// `tensor.grad_fn`'s printed name (`MulBackward0`), `None` for a leaf.
pub fn grad_fn_name(cell: &TensorCell) -> Option<String> {
    cell.autograd().grad_fn().map(|history| history.node.name())
}

/// The shape and dtype of one tensor input or output, kept so that a formula can make
/// zeros or sum a broadcast gradient back without keeping the tensor alive.
#[derive(Debug, Clone)]
pub struct TensorMeta {
    pub sizes: Vec<usize>,
    pub dtype: DType,
}

/// A saved tensor's version when it was saved, to detect a later in-place write.
pub struct SavedVersion {
    pub argument: usize,
    pub counter: Arc<VersionCounter>,
    pub version: u64,
}

/// One recorded operator call.
pub struct Node {
    /// PyTorch's printed name (`MulBackward0`), shared by every node of the operator.
    pub name: Arc<str>,
    /// The operator's full name (`aten::mul.Tensor`), shared likewise.
    pub operator: Arc<str>,
    pub formula: Option<&'static Formula>,
    /// A backward that is no formula of the table: a `prim::DifferentiableGraph`'s symbolic
    /// backward graph (see `differentiable_graph`). Used instead of `formula` when set.
    pub custom: Option<Arc<dyn CustomBackward>>,
    /// The call's arguments in schema order; tensor arguments the formula does not save are
    /// `None` here (kept alive by nothing). `None` once released after a backward.
    pub arguments: Mutex<Option<Vec<IValue>>>,
    pub saved_versions: Vec<SavedVersion>,
    /// Per argument: for a tensor its edge; for a tensor list one edge per element.
    pub edges: Vec<ArgumentEdges>,
    /// Per argument: the tensor's shape and dtype (tensor lists: per element).
    pub input_meta: Vec<Vec<Option<TensorMeta>>>,
    /// Per schema return: the shape and dtype of each differentiable tensor it returned.
    pub output_meta: Vec<Option<TensorMeta>>,
    /// Per schema return: the output's handle, not kept alive by the node (it keeps the
    /// node alive), for `retain_grad`.
    pub output_cells: Vec<Weak<TensorCell>>,
}

/// A node's backward when it is not a formula of the table. It reads the node's saved
/// `arguments` and the output gradients as a formula does, and returns one gradient per edge.
pub trait CustomBackward: Send + Sync {
    fn apply(
        &self,
        input: &crate::formulas::FormulaInput,
    ) -> Result<crate::formulas::Gradients, RuntimeError>;
}

/// The edges of one argument.
#[derive(Clone, Default)]
pub enum ArgumentEdges {
    #[default]
    None,
    Tensor(Option<Edge>),
    List(Vec<Option<Edge>>),
}

impl ArgumentEdges {
    pub fn iter(&self) -> impl Iterator<Item = &Edge> {
        let items: Vec<&Edge> = match self {
            ArgumentEdges::None => Vec::new(),
            ArgumentEdges::Tensor(edge) => edge.iter().collect(),
            ArgumentEdges::List(edges) => edges.iter().flatten().collect(),
        };
        items.into_iter()
    }
}

impl GradNode for Node {
    fn name(&self) -> String {
        self.name.to_string()
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

/// Dropping a graph frees it node by node from a work list, not by recursion: a node owns the
/// nodes its edges lead to and, through its saved tensors' `grad_fn`, the nodes that made
/// them, so a recursive drop of a long chain (an RNN unrolled over thousands of steps) nests
/// once per node and can overflow the stack. PyTorch deletes its graphs iteratively too.
impl Drop for Node {
    fn drop(&mut self) {
        let mut pending = Vec::new();
        self.release_owned(&mut pending);
        while let Some(node) = pending.pop() {
            // A node someone else still holds (a live tensor's `grad_fn`) stays.
            if let Ok(mut node) = Arc::try_unwrap(node) {
                node.release_owned(&mut pending);
            }
        }
    }
}

impl Node {
    /// Empties the node's edges and saved arguments, moving the nodes they held into
    /// `pending` rather than dropping them here.
    fn release_owned(&mut self, pending: &mut Vec<Arc<Node>>) {
        for edges in std::mem::take(&mut self.edges) {
            match edges {
                ArgumentEdges::None => {}
                ArgumentEdges::Tensor(edge) => pending.extend(edge.and_then(Edge::into_node)),
                ArgumentEdges::List(list) => {
                    pending.extend(list.into_iter().flatten().filter_map(Edge::into_node))
                }
            }
        }
        let arguments = self
            .arguments
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        for value in arguments.into_iter().flatten() {
            if let IValue::Tensor(cell) = value {
                pending.extend(history_of_unshared(cell));
            }
        }
    }
}

impl Edge {
    fn into_node(self) -> Option<Arc<Node>> {
        match self {
            Edge::Node(node, _) => Some(node),
            Edge::Leaf(_) => None,
        }
    }
}

/// The node that made `cell`, when this was the last handle to the cell (so the cell is
/// about to go, and its `grad_fn` with it); the cell is dropped without dropping the node.
fn history_of_unshared(cell: Arc<TensorCell>) -> Option<Arc<Node>> {
    let cell = Arc::try_unwrap(cell).ok()?;
    let history = cell.autograd().grad_fn()?;
    node_of(&history.node)
}

/// PyTorch's error for a node whose saved values were freed by an earlier backward.
pub fn freed_error() -> RuntimeError {
    RuntimeError::Other(
        "Trying to backward through the graph a second time (or directly access saved tensors \
         after they have already been freed). Saved intermediate values of the graph are freed \
         when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to \
         backward through the graph a second time or if you need to access saved tensors after \
         calling backward."
            .to_string(),
    )
}

impl Node {
    /// Whether the formula keeps any tensor (so a second backward without retain_graph fails).
    pub fn saves_tensors(&self) -> bool {
        self.custom.is_some()
            || self
                .formula
                .is_some_and(|formula| !formula.saves.is_empty())
    }

    /// Frees the saved tensors (after a backward without `retain_graph`).
    pub fn release(&self) {
        if self.saves_tensors() {
            *self.arguments.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }

    /// The arguments for the formula, checking that no saved tensor was written since.
    /// `release`: the backward keeps no graph, so the saved tensors are freed now (taken
    /// rather than copied); a node that saves none keeps its arguments, as PyTorch lets a
    /// second backward through such a node run.
    pub fn arguments_for_backward(&self, release: bool) -> Result<Vec<IValue>, RuntimeError> {
        let mut slot = self.arguments.lock().unwrap_or_else(|p| p.into_inner());
        let saved_arguments = slot.as_ref().ok_or_else(freed_error)?;
        // Checked before anything is freed: a failed check leaves the node as it was.
        let modified = self.saved_versions.iter().find_map(|saved| {
            let now = saved.counter.current();
            (now != saved.version).then(|| {
                let cell = match saved_arguments.get(saved.argument) {
                    Some(IValue::Tensor(cell)) => Some(Arc::clone(cell)),
                    _ => None,
                };
                (cell, now, saved.version)
            })
        });
        if let Some((cell, now, expected)) = modified {
            drop(slot);
            let description = cell.map_or_else(|| "[tensor]".to_string(), |c| describe_saved(&c));
            return Err(RuntimeError::Other(format!(
                "one of the variables needed for gradient computation has been modified by \
                 an inplace operation: {description} is at version {now}; expected version \
                 {expected} instead. Hint: enable anomaly detection to find the operation that \
                 failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, \
                 check_nan=False)."
            )));
        }
        let arguments = if release && self.saves_tensors() {
            slot.take()
        } else {
            slot.clone()
        };
        arguments.ok_or_else(freed_error)
    }
}

/// PyTorch's legacy tensor type prefix (`Float` for `torch.FloatTensor`).
fn type_prefix(dtype: DType) -> &'static str {
    match dtype {
        DType::Float64 => "Double",
        DType::Float16 => "Half",
        DType::BFloat16 => "BFloat16",
        DType::Int64 => "Long",
        DType::Int32 => "Int",
        DType::Bool => "Bool",
        _ => "Float",
    }
}

/// `[torch.FloatTensor [3]]`, with `, which is output 0 of Add,` when the tensor has a
/// `grad_fn` (named without its `Backward0` suffix), as PyTorch describes a saved tensor.
fn describe_saved(cell: &TensorCell) -> String {
    let tensor = cell.get();
    let sizes = tensor
        .sizes()
        .iter()
        .map(|size| size.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut text = format!("[torch.{}Tensor [{sizes}]]", type_prefix(tensor.dtype()));
    if let Some(history) = cell.autograd().grad_fn() {
        let name = history.node.name();
        let short = match name.rfind("Backward") {
            Some(position) => name[..position].to_string(),
            None => name,
        };
        text.push_str(&format!(
            ", which is output {} of {short},",
            history.output_nr
        ));
    }
    text
}

/// A hasher for maps keyed by an address (a node's, a schema's): the address itself, its
/// alignment bits folded in, is already spread enough; SipHash's cost showed in profiles of
/// the engine, which looks nodes up several times each.
#[derive(Default, Clone, Copy)]
pub struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        // The product's low bits stay those of an aligned address (zeros), and hashbrown
        // picks buckets with the low bits: bring the well-mixed high bits down.
        self.0.rotate_left(26)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_usize(&mut self, value: usize) {
        // Multiplying by an odd constant mixes each bit into all the higher ones; the
        // rotation folds in an earlier word (a `(node, output_nr)` key).
        self.0 = (self.0.rotate_left(5) ^ value as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A map keyed by an address.
pub type AddressMap<V> = HashMap<usize, V, BuildHasherDefault<AddressHasher>>;
