//! The `.pt2` fast path: a copy of a program's top-level graph rewritten once, when the
//! program is prepared, so that it runs the kernels the frozen TorchScript path runs.
//!
//! Two rewrites, both on the Export IR graph itself (the interpreter in [`crate::run`] then
//! runs the rewritten copy as it runs any graph):
//!
//! - **Batch-norm folding.** An eval-mode `aten.batch_norm` (`training=False`) reading a
//!   convolution's result, whose parameters and buffers are program state that nothing in
//!   the program writes, folds into the convolution, as `torch.jit.freeze` folds it:
//!   `weight * (gamma / sqrt(var + eps))` per output channel and
//!   `(bias - mean) * gamma / sqrt(var + eps) + beta`. The folded tensors are computed here,
//!   once, and passed at run time in place of the convolution's weight placeholder and the
//!   batch norm's bias placeholder (both read by that one node only), so the run's inputs keep
//!   their number and order.
//! - **Epilogue fusion.** `aten.linear` or a non-transposed convolution, followed by an
//!   activation and/or a residual add that only it feeds, becomes one
//!   `ferrojit::linear_epilogue` / `ferrojit::conv_epilogue` call: the runtime's packed GEMM
//!   with the weight packed once (cached per weight storage) and the epilogue applied to each
//!   output tile, the operator the optimizing executor's `linear_epilogue` pass writes for
//!   TorchScript. A linear with no epilogue becomes one too, for the packed weight. The
//!   operator runs the unfused operators itself for operands its kernel does not take.
//!
//! The plan is prepared on a module's first run, from the state as it is then: like
//! `torch.jit.freeze`, a batch norm's folded values do not follow later in-place writes to
//! its parameters or buffers made through handles from `ExportedModule::state_value`
//! (writes by the program itself are ruled out above).
//!
//! Only the top-level graph is rewritten; subgraphs of `cond`, `while_loop`, `map` and `scan`,
//! symbolic sizes and every other node run as the plain interpreter runs them. A chain is
//! fused only when its nodes follow one another in the graph, so no node moves past another.
//! Packed products and folded weights sum in another order than the unfused operators:
//! results agree with the plain interpreter within float tolerance, not bitwise.

use std::collections::{HashMap, HashSet};

use crate::error::{ExportError, Result};
use crate::fallback::find_operator;
use crate::model::{Argument, Graph, GraphSignature, InputSpec, NamedArgument, Node, OutputSpec};
use ferrojit_runtime::IValue;
use ferrojit_tensor::DType;

/// A prepared top-level graph and the inputs it takes in place of the program's own.
#[derive(Debug)]
pub(crate) struct FastPlan {
    /// The rewritten graph: the same inputs and outputs as the program's graph.
    pub graph: Graph,
    /// Inputs replaced by folded tensors: (position in the graph's inputs, value).
    pub replaced_inputs: Vec<(usize, IValue)>,
    /// How many batch norms were folded and how many chains fused (for tests and messages).
    pub folded_batch_norms: usize,
    pub fused_chains: usize,
}

/// The fast plan for `graph`, or `None` when neither rewrite applies. `state` holds the
/// program's parameters, buffers and constants by state-dict name.
pub(crate) fn prepare(
    graph: &Graph,
    signature: &GraphSignature,
    state: &HashMap<String, IValue>,
) -> Result<Option<FastPlan>> {
    let mut plan = FastPlan {
        graph: graph.clone(),
        replaced_inputs: Vec::new(),
        folded_batch_norms: 0,
        fused_chains: 0,
    };
    // The clone carries the original's liveness; the rewritten graph gets its own.
    plan.graph.values_dead_after = Default::default();
    fold_batch_norms(&mut plan, signature, state)?;
    fuse_epilogues(&mut plan);
    if plan.folded_batch_norms == 0 && plan.fused_chains == 0 {
        return Ok(None);
    }
    Ok(Some(plan))
}

/// How many times each value name is read: by node inputs and by the graph's outputs.
fn use_counts(graph: &Graph) -> HashMap<String, usize> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for node in &graph.nodes {
        for input in &node.inputs {
            input.arg.for_each_referenced_name(&mut |name| {
                *counts.entry(name.to_string()).or_default() += 1;
            });
        }
    }
    for output in &graph.outputs {
        output.for_each_referenced_name(&mut |name| {
            *counts.entry(name.to_string()).or_default() += 1;
        });
    }
    counts
}

/// The argument the node passes for the schema formal `name`, if it passes one.
fn input<'a>(node: &'a Node, name: &str) -> Option<&'a Argument> {
    node.inputs
        .iter()
        .find(|input| input.name == name)
        .map(|input| &input.arg)
}

fn tensor_input<'a>(node: &'a Node, name: &str) -> Option<&'a str> {
    match input(node, name) {
        Some(Argument::Tensor(value)) => Some(value),
        _ => None,
    }
}

/// The single tensor a node returns.
fn single_tensor_output(node: &Node) -> Option<&str> {
    match node.outputs.as_slice() {
        [Argument::Tensor(name)] => Some(name),
        _ => None,
    }
}

/// Calls a registered operator and returns its one result.
fn call(full_name: &str, arguments: Vec<IValue>) -> Result<IValue> {
    let operator = find_operator(full_name)
        .ok_or_else(|| ExportError::Unsupported(format!("{full_name} is not registered")))?;
    let mut stack = arguments;
    (operator.kernel)(&mut stack)?;
    stack
        .pop()
        .ok_or_else(|| ExportError::Unsupported(format!("{full_name} returned nothing")))
}

// --- batch-norm folding ---------------------------------------------------------------

/// Each graph input that is program state nobody mutates: placeholder name → (position,
/// state-dict name).
fn frozen_state_inputs(
    graph: &Graph,
    signature: &GraphSignature,
) -> HashMap<String, (usize, String)> {
    let mutated: HashSet<&str> = signature
        .output_specs
        .iter()
        .filter_map(|spec| match spec {
            OutputSpec::BufferMutation { buffer_name, .. } => Some(buffer_name.as_str()),
            OutputSpec::ParameterMutation { parameter_name, .. } => Some(parameter_name.as_str()),
            _ => None,
        })
        .collect();
    let mut frozen = HashMap::new();
    for (position, (spec, argument)) in signature.input_specs.iter().zip(&graph.inputs).enumerate()
    {
        let state_name = match spec {
            InputSpec::Parameter { parameter_name, .. } => parameter_name,
            InputSpec::Buffer { buffer_name, .. } => buffer_name,
            InputSpec::TensorConstant {
                tensor_constant_name,
                ..
            } => tensor_constant_name,
            _ => continue,
        };
        if mutated.contains(state_name.as_str()) {
            continue;
        }
        if let Some(name) = argument.name() {
            frozen.insert(name.to_string(), (position, state_name.clone()));
        }
    }
    frozen
}

/// A convolution node's target that folding and fusion take: `conv1d/2d/3d` with explicit
/// padding, or a non-transposed `convolution`.
fn is_convolution(node: &Node) -> bool {
    match node.target.as_str() {
        "torch.ops.aten.conv1d.default"
        | "torch.ops.aten.conv2d.default"
        | "torch.ops.aten.conv3d.default" => true,
        "torch.ops.aten.convolution.default" => {
            matches!(input(node, "transposed"), Some(Argument::Bool(false)))
        }
        _ => false,
    }
}

fn fold_batch_norms(
    plan: &mut FastPlan,
    signature: &GraphSignature,
    state: &HashMap<String, IValue>,
) -> Result<()> {
    let frozen = frozen_state_inputs(&plan.graph, signature);
    let uses = use_counts(&plan.graph);
    let single_use = |name: &str| uses.get(name).copied() == Some(1);
    let mut index = 0;
    while index + 1 < plan.graph.nodes.len() {
        let (conv, norm) = (&plan.graph.nodes[index], &plan.graph.nodes[index + 1]);
        let folded = if is_convolution(conv) && norm.target == "torch.ops.aten.batch_norm.default" {
            fold_one(conv, norm, &frozen, state, &single_use)?
        } else {
            None
        };
        let Some(fold) = folded else {
            index += 1;
            continue;
        };
        // The convolution now reads the folded weight (in its weight placeholder's place)
        // and the folded bias (in the batch norm's bias placeholder's place), and produces
        // the batch norm's result; the batch norm goes.
        let norm = plan.graph.nodes.remove(index + 1);
        let conv = &mut plan.graph.nodes[index];
        conv.outputs = norm.outputs;
        conv.inputs.retain(|input| input.name != "bias");
        conv.inputs.push(NamedArgument {
            name: "bias".into(),
            arg: Argument::Tensor(fold.bias_placeholder),
            kind: None,
        });
        plan.replaced_inputs
            .push((fold.weight_position, IValue::from(fold.weight)));
        plan.replaced_inputs
            .push((fold.bias_position, IValue::from(fold.bias)));
        plan.folded_batch_norms += 1;
        index += 1;
    }
    Ok(())
}

struct Fold {
    weight_position: usize,
    weight: ferrojit_tensor::Tensor,
    bias_placeholder: String,
    bias_position: usize,
    bias: ferrojit_tensor::Tensor,
}

/// The folded weight and bias for `conv` followed by `norm`, or `None` when the pair does
/// not qualify: the norm is not in eval mode or does not read the convolution's result
/// (its only use), or an operand is not float32 state that no output mutates and no other
/// node reads.
fn fold_one(
    conv: &Node,
    norm: &Node,
    frozen: &HashMap<String, (usize, String)>,
    state: &HashMap<String, IValue>,
    single_use: &dyn Fn(&str) -> bool,
) -> Result<Option<Fold>> {
    let Some(conv_output) = single_tensor_output(conv) else {
        return Ok(None);
    };
    if tensor_input(norm, "input") != Some(conv_output)
        || !single_use(conv_output)
        || !matches!(input(norm, "training"), Some(Argument::Bool(false)))
        || single_tensor_output(norm).is_none()
    {
        return Ok(None);
    }
    let eps = match input(norm, "eps") {
        Some(Argument::Float(eps)) => *eps,
        _ => return Ok(None),
    };
    // A frozen float32 state tensor, by placeholder name.
    let frozen_tensor = |placeholder: Option<&str>| -> Option<(usize, IValue)> {
        let (position, state_name) = frozen.get(placeholder?)?;
        let value = state.get(state_name)?;
        let tensor = value.to_tensor().ok()?;
        (tensor.dtype() == DType::Float32).then(|| (*position, value.clone()))
    };
    let weight_name = tensor_input(conv, "weight");
    let Some((weight_position, weight)) = frozen_tensor(weight_name) else {
        return Ok(None);
    };
    let conv_bias = match input(conv, "bias") {
        None | Some(Argument::None) => None,
        Some(Argument::Tensor(name)) => match frozen_tensor(Some(name)) {
            Some((_, value)) => Some(value),
            None => return Ok(None),
        },
        Some(_) => return Ok(None),
    };
    let operands: Option<Vec<(usize, IValue)>> = ["weight", "bias", "running_mean", "running_var"]
        .iter()
        .map(|formal| frozen_tensor(tensor_input(norm, formal)))
        .collect();
    let Some(operands) = operands else {
        return Ok(None);
    };
    let (Some(weight_name), Some(bias_placeholder)) = (weight_name, tensor_input(norm, "bias"))
    else {
        return Ok(None);
    };
    let bias_placeholder = bias_placeholder.to_string();
    // Read by this pair alone, so no other node (an in-place operator of the TRAINING
    // dialect) can change them between runs, and the two replaced placeholders feed nothing
    // else.
    let mut read = vec![weight_name];
    if let Some(Argument::Tensor(name)) = input(conv, "bias") {
        read.push(name);
    }
    for formal in ["weight", "bias", "running_mean", "running_var"] {
        read.extend(tensor_input(norm, formal));
    }
    if !read.into_iter().all(single_use) {
        return Ok(None);
    }
    let [(_, gamma), (bias_position, beta), (_, mean), (_, variance)] = &operands[..] else {
        return Ok(None);
    };
    let rank = weight.to_tensor()?.dim();
    let channels = weight.to_tensor()?.sizes().first().copied().unwrap_or(0);
    // Each per-channel operand exactly one value per output channel (a malformed program
    // runs as written and fails there with the batch norm's own message).
    for operand in [gamma, beta, mean, variance] {
        if operand.to_tensor()?.sizes() != [channels] {
            return Ok(None);
        }
    }
    if rank < 3 {
        return Ok(None);
    }
    // gamma / sqrt(var + eps), as PyTorch's fuse_conv_bn_weights computes it.
    let inverse_std = call(
        "aten::rsqrt",
        vec![call(
            "aten::add.Scalar",
            vec![variance.clone(), IValue::Double(eps), IValue::Int(1)],
        )?],
    )?;
    let mut shape = vec![-1i64];
    shape.resize(rank, 1);
    let channel_scale = call(
        "aten::reshape",
        vec![
            call("aten::mul.Tensor", vec![gamma.clone(), inverse_std.clone()])?,
            IValue::int_list(&shape),
        ],
    )?;
    let folded_weight = call("aten::mul.Tensor", vec![weight, channel_scale])?;
    let centered = match conv_bias {
        Some(bias) => call("aten::sub.Tensor", vec![bias, mean.clone(), IValue::Int(1)])?,
        None => call("aten::neg", vec![mean.clone()])?,
    };
    let folded_bias = call(
        "aten::add.Tensor",
        vec![
            call(
                "aten::mul.Tensor",
                vec![
                    call("aten::mul.Tensor", vec![centered, inverse_std])?,
                    gamma.clone(),
                ],
            )?,
            beta.clone(),
            IValue::Int(1),
        ],
    )?;
    Ok(Some(Fold {
        weight_position,
        weight: folded_weight.to_tensor()?.contiguous(),
        bias_placeholder,
        bias_position: *bias_position,
        bias: folded_bias.to_tensor()?.contiguous(),
    }))
}

// --- epilogue fusion ------------------------------------------------------------------

/// The activation a node applies to its `self` input, as the epilogue operators name it.
fn activation_of(node: &Node) -> Option<&'static str> {
    let activation = match node.target.as_str() {
        "torch.ops.aten.relu.default" | "torch.ops.aten.relu_.default" => "relu",
        "torch.ops.aten.silu.default" | "torch.ops.aten.silu_.default" => "silu",
        "torch.ops.aten.sigmoid.default" | "torch.ops.aten.sigmoid_.default" => "sigmoid",
        "torch.ops.aten.hardswish.default" | "torch.ops.aten.hardswish_.default" => "hardswish",
        "torch.ops.aten.gelu.default" => match input(node, "approximate") {
            None => "gelu",
            Some(Argument::String(mode)) if mode == "none" => "gelu",
            Some(Argument::String(mode)) if mode == "tanh" => "gelu_tanh",
            _ => return None,
        },
        _ => return None,
    };
    // Nothing but `self` (and gelu's mode).
    node.inputs
        .iter()
        .all(|input| input.name == "self" || input.name == "approximate")
        .then_some(activation)
}

/// For `add(a, b)` (alpha 1) reading `value` as one operand: the other operand. The in-place
/// `add_` only with `value` as `self`: it writes `self`, which must be the chain's own
/// fresh result, never the residual.
fn residual_of<'a>(node: &'a Node, value: &str) -> Option<&'a str> {
    let in_place = match node.target.as_str() {
        "torch.ops.aten.add.Tensor" => false,
        "torch.ops.aten.add_.Tensor" => true,
        _ => return None,
    };
    match input(node, "alpha") {
        None | Some(Argument::Int(1)) => {}
        Some(Argument::Float(alpha)) if *alpha == 1.0 => {}
        _ => return None,
    }
    let (a, b) = (tensor_input(node, "self")?, tensor_input(node, "other")?);
    if a == value && b != value {
        Some(b)
    } else if b == value && a != value && !in_place {
        Some(a)
    } else {
        None
    }
}

/// The fused operator's target and its leading (head) arguments for a head node.
fn head_of(node: &Node) -> Option<(&'static str, Vec<NamedArgument>)> {
    let named = |name: &str, arg: Argument| NamedArgument {
        name: name.to_string(),
        arg,
        kind: None,
    };
    let passed = |name: &str| input(node, name).cloned();
    let tensor = |name: &str| match input(node, name) {
        Some(Argument::Tensor(_)) => passed(name),
        _ => None,
    };
    let optional_tensor = |name: &str| match input(node, name) {
        None | Some(Argument::None) => Some(Argument::None),
        Some(Argument::Tensor(_)) => passed(name),
        _ => None,
    };
    match node.target.as_str() {
        "torch.ops.aten.linear.default" => Some((
            "torch.ops.ferrojit.linear_epilogue.default",
            vec![
                named("input", tensor("input")?),
                named("weight", tensor("weight")?),
                named("bias", optional_tensor("bias")?),
            ],
        )),
        _ if is_convolution(node) => {
            // conv1d/2d/3d's defaults, spelled out for each spatial dimension.
            let spatial = match node.target.as_str() {
                "torch.ops.aten.conv1d.default" => 1,
                "torch.ops.aten.conv2d.default" => 2,
                "torch.ops.aten.conv3d.default" => 3,
                _ => 0,
            };
            let list = |name: &str, default: i64| match input(node, name) {
                Some(Argument::Ints(values)) => Some(Argument::Ints(values.clone())),
                None if spatial > 0 => Some(Argument::Ints(vec![default; spatial])),
                _ => None,
            };
            let groups = match input(node, "groups") {
                Some(Argument::Int(groups)) => Argument::Int(*groups),
                None if spatial > 0 => Argument::Int(1),
                _ => return None,
            };
            Some((
                "torch.ops.ferrojit.conv_epilogue.default",
                vec![
                    named("input", tensor("input")?),
                    named("weight", tensor("weight")?),
                    named("bias", optional_tensor("bias")?),
                    named("stride", list("stride", 1)?),
                    named("padding", list("padding", 0)?),
                    named("dilation", list("dilation", 1)?),
                    named("groups", groups),
                ],
            ))
        }
        _ => None,
    }
}

fn fuse_epilogues(plan: &mut FastPlan) {
    let uses = use_counts(&plan.graph);
    let old_nodes = std::mem::take(&mut plan.graph.nodes);
    let mut nodes = Vec::with_capacity(old_nodes.len());
    let mut index = 0;
    while index < old_nodes.len() {
        let head = &old_nodes[index];
        let (Some((target, mut arguments)), Some(mut current)) =
            (head_of(head), single_tensor_output(head))
        else {
            nodes.push(head.clone());
            index += 1;
            continue;
        };
        let mut activation = "none";
        let mut residual: Option<&str> = None;
        let mut residual_after_activation = false;
        let mut last = index;
        // Walk the consecutive nodes that take the running value as their only reader.
        while let Some(next) = old_nodes.get(last + 1) {
            if uses.get(current).copied() != Some(1) {
                break;
            }
            let Some(output) = single_tensor_output(next) else {
                break;
            };
            if activation == "none" && tensor_input(next, "self") == Some(current) {
                if let Some(found) = activation_of(next) {
                    activation = found;
                    current = output;
                    last += 1;
                    continue;
                }
            }
            if residual.is_none() {
                if let Some(other) = residual_of(next, current) {
                    residual = Some(other);
                    residual_after_activation = activation != "none";
                    current = output;
                    last += 1;
                    continue;
                }
            }
            break;
        }
        // A convolution alone stays as written; a lone linear is worth its packed weight.
        if last == index && target == "torch.ops.ferrojit.conv_epilogue.default" {
            nodes.push(head.clone());
            index += 1;
            continue;
        }
        let named = |name: &str, arg: Argument| NamedArgument {
            name: name.to_string(),
            arg,
            kind: None,
        };
        arguments.push(named(
            "activation",
            Argument::String(activation.to_string()),
        ));
        arguments.push(named(
            "residual",
            residual.map_or(Argument::None, |name| Argument::Tensor(name.to_string())),
        ));
        arguments.push(named(
            "residual_after_activation",
            Argument::Bool(residual_after_activation),
        ));
        let end = &old_nodes[last];
        nodes.push(Node {
            target: target.to_string(),
            inputs: arguments,
            outputs: end.outputs.clone(),
            metadata: end.metadata.clone(),
            is_hop_single_tensor_return: None,
            name: end.name.clone(),
        });
        plan.fused_chains += 1;
        index = last + 1;
    }
    plan.graph.nodes = nodes;
}
