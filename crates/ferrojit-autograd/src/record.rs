//! The operator hook: around each operator call it bumps the version of tensors the schema
//! marks written (`Tensor(a!)`), makes a view's version counter its base's, refuses an
//! in-place write to a leaf that requires grad, and, when grad mode is on and a tensor input
//! requires grad, records a backward [`Node`] and makes it the `grad_fn` of the outputs.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use ferrojit_ir::{FunctionSchema, Type};
use ferrojit_runtime::autograd::{is_grad_enabled, GradHistory, OperatorHook};
use ferrojit_runtime::{IValue, Result, RuntimeError, TensorCell};

use crate::formulas::{formula_for, Formula};
use crate::node::{AddressMap, ArgumentEdges, Edge, Node, SavedVersion, TensorMeta};

/// The hook [`crate::register`] installs.
pub struct AutogradHook;

/// Operators that manage autograd state themselves: recording them, or treating their
/// `(a!)` argument as a data write, would be wrong (`requires_grad_` writes no data).
fn manages_autograd(name: &str) -> bool {
    matches!(
        name,
        "aten::requires_grad_"
            | "aten::detach_"
            | "aten::retain_grad"
            | "aten::set_data"
            | "aten::grad"
            | "aten::backward"
            | "aten::_backward"
            | "prim::grad"
            | "prim::requires_grad"
    )
}

/// Operators whose floating outputs do not depend differentiably on their inputs.
fn not_differentiable(name: &str) -> bool {
    matches!(
        name,
        "aten::detach"
            | "aten::zeros_like"
            | "aten::ones_like"
            | "aten::empty_like"
            | "aten::full_like"
            | "aten::rand_like"
            | "aten::randn_like"
            | "aten::randint_like"
            | "aten::new_zeros"
            | "aten::new_ones"
            | "aten::new_empty"
            | "aten::new_full"
            | "aten::size"
            | "aten::numel"
            | "aten::dim"
            | "aten::Int"
            | "aten::Float"
            | "aten::item"
            | "aten::_version"
            | "aten::is_leaf"
            | "aten::output_nr"
            | "aten::retains_grad"
    )
}

/// What recording needs to know about an operator that does not change from call to call,
/// worked out on its first recorded call: looking the formula up by the full name built a
/// string and hashed it on every call, and each node copied its names.
struct SchemaFacts {
    /// The schema's name and overload, to tell a cached entry from a later schema that
    /// reuses a freed one's address.
    name: String,
    overload_name: String,
    formula: Option<&'static Formula>,
    /// The node name (`MulBackward0`) and the operator's full name, shared by its nodes.
    node_name: Arc<str>,
    operator: Arc<str>,
    not_differentiable: bool,
}

thread_local! {
    /// Per thread, so that recording takes no lock: schema address → its facts.
    static SCHEMA_FACTS: RefCell<AddressMap<Rc<SchemaFacts>>> = RefCell::new(AddressMap::default());
}

fn facts_of(schema: &FunctionSchema) -> Rc<SchemaFacts> {
    let key = schema as *const FunctionSchema as usize;
    SCHEMA_FACTS.with(|cache| {
        if let Some(facts) = cache.borrow().get(&key) {
            if facts.name == schema.name && facts.overload_name == schema.overload_name {
                return Rc::clone(facts);
            }
        }
        let operator = schema.full_name();
        let formula = formula_for(&operator);
        let node_name = formula.map_or_else(
            || crate::formulas::default_name(&schema.name),
            |formula| formula.name.to_string(),
        );
        let facts = Rc::new(SchemaFacts {
            name: schema.name.clone(),
            overload_name: schema.overload_name.clone(),
            formula,
            node_name: node_name.into(),
            operator: operator.into(),
            not_differentiable: not_differentiable(&schema.name),
        });
        cache.borrow_mut().insert(key, Rc::clone(&facts));
        facts
    })
}

fn is_tensor_type(ty: &Type) -> bool {
    match ty {
        Type::Tensor => true,
        Type::Optional(inner) => is_tensor_type(inner),
        _ => false,
    }
}

/// Whether an argument type holds tensors autograd follows: `Tensor`, `Tensor?`,
/// `Tensor[]`, `Tensor?[]` (generic `t[]` list operators such as `__getitem__.t` are not
/// differentiable operations).
fn holds_tensors(ty: &Type) -> bool {
    match ty {
        Type::List(inner) => is_tensor_type(inner),
        other => is_tensor_type(other),
    }
}

/// Floating and complex outputs are recorded (PyTorch differentiates both).
fn is_floating(cell: &TensorCell) -> bool {
    let dtype = cell.get().dtype();
    dtype.is_floating_point() || dtype.is_complex()
}

fn requires_grad(value: &IValue) -> bool {
    match value {
        IValue::Tensor(cell) => cell.requires_grad(),
        IValue::List(list) => list
            .read()
            .iter()
            .any(|item| matches!(item, IValue::Tensor(cell) if cell.requires_grad())),
        _ => false,
    }
}

/// The argument index whose alias set a return shares without writing (`Tensor(a) self ->
/// Tensor(a)`): the return is a view of that argument.
fn viewed_argument(schema: &FunctionSchema, ret: &ferrojit_ir::Argument) -> Option<usize> {
    let alias = ret.alias_info.as_ref().filter(|alias| !alias.is_write)?;
    schema.arguments.iter().position(|argument| {
        argument
            .alias_info
            .as_ref()
            .is_some_and(|info| info.before_sets == alias.before_sets && !info.is_write)
    })
}

fn cells_of(value: &IValue) -> Vec<Arc<TensorCell>> {
    match value {
        IValue::Tensor(cell) => vec![Arc::clone(cell)],
        IValue::List(list) => list
            .read()
            .iter()
            .filter_map(|item| match item {
                IValue::Tensor(cell) => Some(Arc::clone(cell)),
                _ => None,
            })
            .collect(),
        IValue::Tuple(tuple) => tuple
            .items
            .iter()
            .filter_map(|item| match item {
                IValue::Tensor(cell) => Some(Arc::clone(cell)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// PyTorch's error for an in-place write to a leaf that requires grad.
pub fn leaf_in_place_error() -> RuntimeError {
    RuntimeError::Other(
        "a leaf Variable that requires grad is being used in an in-place operation.".to_string(),
    )
}

impl OperatorHook for AutogradHook {
    fn run_operator(
        &self,
        schema: &FunctionSchema,
        argument_count: usize,
        stack: &mut Vec<IValue>,
        run_kernel: &dyn Fn(&mut Vec<IValue>) -> Result<()>,
    ) -> Result<()> {
        let writes = schema
            .arguments
            .iter()
            .any(|argument| argument.alias_info.as_ref().is_some_and(|a| a.is_write));
        let views = schema
            .returns
            .iter()
            .any(|ret| ret.alias_info.as_ref().is_some_and(|a| !a.is_write));
        let base = stack.len().saturating_sub(argument_count);
        let record = is_grad_enabled()
            && !schema.is_vararg
            && schema
                .arguments
                .iter()
                .zip(&stack[base..])
                .any(|(argument, value)| holds_tensors(&argument.ty) && requires_grad(value))
            && !manages_autograd(&schema.name);
        if !record && !writes && !views {
            return run_kernel(stack);
        }
        if manages_autograd(&schema.name) {
            return run_kernel(stack);
        }
        let arguments: Vec<IValue> = stack[base..].to_vec();
        let written: Vec<Arc<TensorCell>> = schema
            .arguments
            .iter()
            .zip(&arguments)
            .filter(|(argument, _)| argument.alias_info.as_ref().is_some_and(|a| a.is_write))
            .flat_map(|(_, value)| cells_of(value))
            .collect();
        if is_grad_enabled()
            && written
                .iter()
                .any(|cell| cell.requires_grad() && cell.autograd().is_leaf())
        {
            return Err(leaf_in_place_error());
        }
        let prepared = if record {
            Some(prepare(facts_of(schema), &arguments))
        } else {
            None
        };
        run_kernel(stack)?;
        for cell in &written {
            cell.autograd().bump_version();
        }
        let return_count = schema.returns.len().min(stack.len());
        let outputs_start = stack.len() - return_count;
        if views {
            for (ret, value) in schema.returns.iter().zip(&stack[outputs_start..]) {
                let Some(index) = viewed_argument(schema, ret) else {
                    continue;
                };
                let (Some(IValue::Tensor(base_cell)), IValue::Tensor(view)) =
                    (arguments.get(index), value)
                else {
                    continue;
                };
                if !Arc::ptr_eq(base_cell, view) {
                    view.autograd()
                        .share_version_counter(base_cell.autograd().version_counter());
                }
            }
        }
        if let Some((facts, edges, input_meta)) = prepared {
            attach(
                schema,
                &facts,
                arguments,
                edges,
                input_meta,
                &stack[outputs_start..],
            );
        }
        Ok(())
    }
}

type Prepared = (
    Rc<SchemaFacts>,
    Vec<ArgumentEdges>,
    Vec<Vec<Option<TensorMeta>>>,
);

/// Before the kernel: each input's edge (an in-place op replaces its input's `grad_fn`, so the
/// edges must be read first), shapes, and the operator's facts (its formula).
fn prepare(facts: Rc<SchemaFacts>, arguments: &[IValue]) -> Prepared {
    let meta_of = |cell: &Arc<TensorCell>| {
        let tensor = cell.get();
        Some(TensorMeta {
            sizes: tensor.sizes().to_vec(),
            dtype: tensor.dtype(),
        })
    };
    let mut edges = Vec::with_capacity(arguments.len());
    let mut metas = Vec::with_capacity(arguments.len());
    for value in arguments {
        match value {
            IValue::Tensor(cell) => {
                edges.push(ArgumentEdges::Tensor(Edge::of(cell)));
                metas.push(vec![meta_of(cell)]);
            }
            IValue::List(list) if matches!(list.element_type(), t if is_tensor_type(t)) => {
                let items = list.read();
                edges.push(ArgumentEdges::List(
                    items
                        .iter()
                        .map(|item| match item {
                            IValue::Tensor(cell) => Edge::of(cell),
                            _ => None,
                        })
                        .collect(),
                ));
                metas.push(
                    items
                        .iter()
                        .map(|item| match item {
                            IValue::Tensor(cell) => meta_of(cell),
                            _ => None,
                        })
                        .collect(),
                );
            }
            _ => {
                edges.push(ArgumentEdges::None);
                metas.push(Vec::new());
            }
        }
    }
    (facts, edges, metas)
}

/// After the kernel: makes the node and sets it as the `grad_fn` of each floating output.
fn attach(
    schema: &FunctionSchema,
    facts: &SchemaFacts,
    mut arguments: Vec<IValue>,
    edges: Vec<ArgumentEdges>,
    input_meta: Vec<Vec<Option<TensorMeta>>>,
    outputs: &[IValue],
) {
    if facts.not_differentiable {
        return;
    }
    let formula = facts.formula;
    // Outputs that are an input's very handle (`contiguous` of a contiguous tensor) keep
    // their history, unless the op wrote them in place.
    let is_unwritten_input = |cell: &Arc<TensorCell>| {
        arguments
            .iter()
            .zip(&schema.arguments)
            .any(|(value, argument)| {
                let written = argument.alias_info.as_ref().is_some_and(|a| a.is_write);
                !written && matches!(value, IValue::Tensor(input) if Arc::ptr_eq(input, cell))
            })
    };
    // A returned tensor list (`split`, `unbind`, `broadcast_tensors`) counts one output per
    // element, as PyTorch numbers them (`output_nr` is the position in the list).
    let returns_list = outputs
        .iter()
        .any(|value| matches!(value, IValue::List(list) if is_tensor_type(list.element_type())));
    let outputs: Cow<'_, [IValue]> = if returns_list {
        Cow::Owned(
            outputs
                .iter()
                .flat_map(|value| match value {
                    IValue::List(list) if is_tensor_type(list.element_type()) => {
                        list.read().to_vec()
                    }
                    other => vec![other.clone()],
                })
                .collect(),
        )
    } else {
        Cow::Borrowed(outputs)
    };
    let mut output_meta = Vec::with_capacity(outputs.len());
    let mut output_cells = Vec::with_capacity(outputs.len());
    let mut targets = Vec::new();
    for (index, value) in outputs.iter().enumerate() {
        match value {
            IValue::Tensor(cell) if is_floating(cell) && !is_unwritten_input(cell) => {
                let tensor = cell.get();
                output_meta.push(Some(TensorMeta {
                    sizes: tensor.sizes().to_vec(),
                    dtype: tensor.dtype(),
                }));
                output_cells.push(Arc::downgrade(cell));
                targets.push((index, Arc::clone(cell)));
            }
            _ => {
                output_meta.push(None);
                output_cells.push(std::sync::Weak::new());
            }
        }
    }
    if targets.is_empty() {
        return;
    }
    // Keep only what the formula saves; note the versions of saved tensors.
    let saves: &[usize] = formula.map_or(&[], |formula| formula.saves);
    let mut saved_versions = Vec::new();
    for (index, value) in arguments.iter_mut().enumerate() {
        let is_tensor_argument = matches!(value, IValue::Tensor(_))
            || matches!(value, IValue::List(list) if is_tensor_type(list.element_type()));
        if !is_tensor_argument {
            continue;
        }
        if saves.contains(&index) {
            for cell in cells_of(value) {
                let counter = cell.autograd().version_counter();
                saved_versions.push(SavedVersion {
                    argument: index,
                    version: counter.current(),
                    counter,
                });
            }
        } else {
            *value = IValue::None;
        }
    }
    let node = Arc::new(Node {
        name: Arc::clone(&facts.node_name),
        operator: Arc::clone(&facts.operator),
        formula,
        custom: None,
        arguments: Mutex::new(Some(arguments)),
        saved_versions,
        edges,
        input_meta,
        output_meta,
        output_cells,
    });
    for (index, cell) in targets {
        cell.autograd().set_grad_fn(Some(GradHistory {
            node: Arc::clone(&node) as Arc<dyn ferrojit_runtime::autograd::GradNode>,
            output_nr: index,
        }));
    }
}
