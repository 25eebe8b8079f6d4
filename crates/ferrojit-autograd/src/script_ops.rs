//! TorchScript's autograd operators, with the schemas of PyTorch's TorchScript runtime:
//! `aten::grad` (`torch.autograd.grad`), `aten::backward` (`.backward()`,
//! `torch.autograd.backward`), `prim::grad` (`tensor.grad`), `aten::is_leaf`,
//! `aten::retain_grad`, `aten::retains_grad`, `aten::_version`, `aten::output_nr`.

use std::sync::Arc;

use ferrojit_runtime::registry::{pop_arguments, Stack};
use ferrojit_runtime::{IValue, OperatorRegistry, Result, RuntimeError, TensorCell};

use crate::call::optional_tensor_list;
use crate::engine::{self, GradOptions};

fn cells(value: &IValue) -> Result<Vec<Arc<TensorCell>>> {
    match value {
        IValue::Tensor(cell) => Ok(vec![Arc::clone(cell)]),
        IValue::List(list) => list
            .read()
            .iter()
            .map(|item| item.to_tensor_cell().cloned())
            .collect(),
        other => Err(RuntimeError::Other(format!(
            "expected a tensor or a list of tensors, got {}",
            other.tag_name()
        ))),
    }
}

fn optional_gradients(value: &IValue) -> Result<Vec<Option<IValue>>> {
    match value {
        IValue::None => Ok(Vec::new()),
        IValue::Tensor(_) => Ok(vec![Some(value.clone())]),
        IValue::List(list) => Ok(list
            .read()
            .iter()
            .map(|item| (!item.is_none()).then(|| item.clone()))
            .collect()),
        other => Err(RuntimeError::Other(format!(
            "expected gradients, got {}",
            other.tag_name()
        ))),
    }
}

fn optional_bool(value: &IValue) -> Result<Option<bool>> {
    if value.is_none() {
        Ok(None)
    } else {
        value.to_bool().map(Some)
    }
}

/// PyTorch's TorchScript `aten::grad` checks each input first, with its own wording.
fn check_inputs_require_grad(inputs: &[Arc<TensorCell>]) -> Result<()> {
    for (index, cell) in inputs.iter().enumerate() {
        if !cell.requires_grad() {
            return Err(RuntimeError::Other(format!(
                "element {index} of the input tensors does not require grad"
            )));
        }
    }
    Ok(())
}

/// Gradients need the recording hook; without it (`ferrojit run` without `--grad`) say so.
fn require_recording() -> Result<()> {
    if crate::is_recording_installed() {
        return Ok(());
    }
    Err(RuntimeError::Other(
        "this is an inference run: gradients are not recorded. Pass --grad to `ferrojit run` \
         (or call ferrojit_autograd::register()) to compute gradients"
            .to_string(),
    ))
}

fn grad_kernel(stack: &mut Stack) -> Result<()> {
    require_recording()?;
    let [outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused] =
        pop_arguments::<6>(stack)?;
    let outputs = cells(&outputs)?;
    let inputs = cells(&inputs)?;
    let grad_outputs = optional_gradients(&grad_outputs)?;
    let options = GradOptions {
        retain_graph: optional_bool(&retain_graph)?,
        create_graph: create_graph.to_bool()?,
    };
    check_inputs_require_grad(&inputs)?;
    let results = engine::grad(
        &outputs,
        &inputs,
        &grad_outputs,
        options,
        allow_unused.to_bool()?,
    )?;
    stack.push(optional_tensor_list(
        results
            .into_iter()
            .map(|item| item.unwrap_or(IValue::None))
            .collect(),
    ));
    Ok(())
}

fn backward_kernel(stack: &mut Stack) -> Result<()> {
    require_recording()?;
    let [tensors, gradients, retain_graph, create_graph] = pop_arguments::<4>(stack)?;
    let tensors = cells(&tensors)?;
    let gradients = optional_gradients(&gradients)?;
    let options = GradOptions {
        retain_graph: optional_bool(&retain_graph)?,
        create_graph: create_graph.to_bool()?,
    };
    engine::backward(&tensors, &gradients, options)
}

fn prim_grad(stack: &mut Stack) -> Result<()> {
    let [tensor] = pop_arguments::<1>(stack)?;
    let cell = tensor.to_tensor_cell()?;
    stack.push(cell.autograd().grad().map_or(IValue::None, IValue::Tensor));
    Ok(())
}

fn is_leaf(stack: &mut Stack) -> Result<()> {
    let [tensor] = pop_arguments::<1>(stack)?;
    stack.push(IValue::Bool(tensor.to_tensor_cell()?.autograd().is_leaf()));
    Ok(())
}

fn retain_grad(stack: &mut Stack) -> Result<()> {
    let [tensor] = pop_arguments::<1>(stack)?;
    let cell = tensor.to_tensor_cell()?;
    if !cell.requires_grad() {
        return Err(RuntimeError::Other(
            "can't retain_grad on Tensor that has requires_grad=False".to_string(),
        ));
    }
    // A leaf keeps its gradient anyway.
    if !cell.autograd().is_leaf() {
        cell.autograd().set_retains_grad(true);
    }
    Ok(())
}

fn retains_grad(stack: &mut Stack) -> Result<()> {
    let [tensor] = pop_arguments::<1>(stack)?;
    stack.push(IValue::Bool(
        tensor.to_tensor_cell()?.autograd().retains_grad(),
    ));
    Ok(())
}

fn version(stack: &mut Stack) -> Result<()> {
    let [tensor] = pop_arguments::<1>(stack)?;
    stack.push(IValue::Int(
        tensor.to_tensor_cell()?.autograd().version() as i64
    ));
    Ok(())
}

fn output_nr(stack: &mut Stack) -> Result<()> {
    let [tensor] = pop_arguments::<1>(stack)?;
    let history = tensor.to_tensor_cell()?.autograd().grad_fn();
    stack.push(IValue::Int(history.map_or(0, |h| h.output_nr as i64)));
    Ok(())
}

type KernelFn = fn(&mut Stack) -> Result<()>;

/// The operators and their schemas (PyTorch 2.15's `torch._C._jit_get_all_schemas()`).
pub const OPERATORS: &[(&str, KernelFn)] = &[
    ("aten::grad(Tensor[] outputs, Tensor[] inputs, Tensor?[]? grad_outputs=None, bool? retain_graph=None, bool create_graph=False, bool allow_unused=False) -> Tensor?[]", grad_kernel),
    ("aten::backward(Tensor self, Tensor? gradient=None, bool? retain_graph=None, bool create_graph=False) -> ()", backward_kernel),
    ("aten::backward.TensorList(Tensor[] tensors, Tensor?[]? grad_tensors=None, bool? retain_graph=None, bool create_graph=False) -> ()", backward_kernel),
    ("prim::grad(Tensor a) -> Tensor(*)", prim_grad),
    ("aten::is_leaf(Tensor self) -> bool", is_leaf),
    ("aten::retain_grad(Tensor(a!) self) -> ()", retain_grad),
    ("aten::retains_grad(Tensor self) -> bool", retains_grad),
    ("aten::_version(Tensor self) -> int", version),
    ("aten::output_nr(Tensor self) -> int", output_nr),
];

/// Registers the operators the registry does not have yet.
pub fn register_into(registry: &OperatorRegistry) -> Result<()> {
    for (schema, kernel) in OPERATORS {
        let full_name = schema_full_name(schema);
        if registry.lookup(&full_name).is_some() {
            continue;
        }
        let parsed = ferrojit_ir::parse_schema(schema)
            .map_err(|e| RuntimeError::Registration(e.to_string()))?;
        let mut definition = ferrojit_runtime::OperatorDefinition::new(
            parsed,
            Arc::new(*kernel),
            ferrojit_runtime::opdef::OverloadRank::Custom,
        );
        // They read or change autograd state no schema shows (`backward` returns nothing and
        // writes `.grad`): no pass may drop, merge or reorder them.
        definition.flags.has_side_effects = true;
        registry.add_definition(definition)?;
    }
    Ok(())
}

fn schema_full_name(schema: &str) -> String {
    schema.split('(').next().unwrap_or(schema).to_string()
}
