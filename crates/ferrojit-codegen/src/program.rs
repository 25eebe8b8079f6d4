//! Lowering a fusion group's subgraph to a flat elementwise program: one step per value,
//! scalar arguments folded into constants, every step on f32 lanes.
//!
//! Lowering never fails with an error: a node it does not know makes the group
//! unsupported ([`Unsupported`]), which the cache remembers and the caller answers by
//! running the group's graph in the interpreter.

use ferrojit_ir::{AttributeValue, Graph, NodeId, Prim, ValueDefinition, ValueId};
use ferrojit_tensor::DType;
use std::collections::HashMap;

use crate::math::MathFunction;
use crate::row_reduction::RowReductionKind;

/// An arithmetic operation the generated code does inline, on a vector or a scalar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InlineUnary {
    Neg,
    Abs,
    Relu,
    Sqrt,
    /// `1 / sqrt(x)`, as PyTorch's vectorized rsqrt computes it.
    Rsqrt,
    Reciprocal,
    Square,
}

/// A binary arithmetic operation done inline. `Minimum`/`Maximum` propagate NaN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InlineBinary {
    Add,
    Sub,
    Mul,
    Div,
    Minimum,
    Maximum,
}

/// One step; operands name earlier steps by index.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Group input number `.0`.
    Input(usize),
    /// A constant folded from a scalar argument.
    Constant(f32),
    Unary(InlineUnary, usize),
    Binary(InlineBinary, usize, usize),
    /// `where(condition != 0, if_true, if_false)`; conditions arrive as 0.0/1.0 lanes.
    Select(usize, usize, usize),
    /// An out-of-line math kernel over a block of elements.
    Call(MathFunction, usize),
}

/// A lowered group: the steps in order and which steps are the group's outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub steps: Vec<Step>,
    pub outputs: Vec<usize>,
    /// For each group input: whether it is a `where` condition (bool) rather than data.
    pub condition_inputs: Vec<bool>,
    /// The trailing reduction over the last dimension, if the group ends with one.
    pub row_reduction: Option<RowReduction>,
}

/// A softmax or log_softmax ending the group: applied in place, row by row, to the group
/// output `output` (an index into [`Program::outputs`]) after the steps have written it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowReduction {
    pub kind: RowReductionKind,
    pub output: usize,
    /// The reduced dimension as the graph gives it (-1, or rank - 1 of the group's shape);
    /// the launcher checks it against the actual rank.
    pub dim: i64,
}

/// Why a group cannot be compiled (kept for diagnostics; the caller only needs "not").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub String);

type Lowered<T> = Result<T, Unsupported>;

fn unsupported<T>(why: impl Into<String>) -> Lowered<T> {
    Err(Unsupported(why.into()))
}

/// A scalar argument's constant value.
#[derive(Debug, Clone, PartialEq)]
enum ConstantArgument {
    None,
    Number(f64),
    Str(String),
}

struct Lowering<'g> {
    graph: &'g Graph,
    steps: Vec<Step>,
    /// Graph value -> the step computing it (tensors only).
    tensor_steps: HashMap<ValueId, usize>,
    condition_inputs: Vec<bool>,
    /// The trailing reduction seen so far: its kind, the graph value it makes, the step it
    /// reduces and its dim.
    reduction: Option<(RowReductionKind, ValueId, usize, i64)>,
}

/// Lowers `graph` (a fusion group's subgraph) for inputs of `input_dtypes`.
pub fn lower(graph: &Graph, input_dtypes: &[DType]) -> Lowered<Program> {
    if graph.inputs().len() != input_dtypes.len() {
        return unsupported(format!(
            "the group takes {} inputs but was given {}",
            graph.inputs().len(),
            input_dtypes.len()
        ));
    }
    let mut lowering = Lowering {
        graph,
        steps: Vec::new(),
        tensor_steps: HashMap::new(),
        condition_inputs: Vec::new(),
        reduction: None,
    };
    for (index, (&value, &dtype)) in graph.inputs().iter().zip(input_dtypes).enumerate() {
        let condition = match dtype {
            DType::Float32 => false,
            DType::Bool => true,
            other => return unsupported(format!("input {index} has dtype {other:?}")),
        };
        lowering.condition_inputs.push(condition);
        let step = lowering.push(Step::Input(index));
        lowering.tensor_steps.insert(value, step);
    }
    for node in graph.block_nodes(graph.top_block()) {
        if lowering.reduction.is_some() && !graph.kind(node).is_prim(Prim::Constant) {
            return unsupported("a node after the trailing reduction");
        }
        lowering.lower_node(node)?;
    }
    let mut row_reduction = None;
    if let Some((kind, value, reduced, dim)) = lowering.reduction {
        if matches!(lowering.steps[reduced], Step::Input(_) | Step::Constant(_)) {
            return unsupported("the reduction's input is not computed in the group");
        }
        let Some(output) = graph.outputs().iter().position(|&o| o == value) else {
            return unsupported("the reduction's result is not a group output");
        };
        row_reduction = Some(RowReduction { kind, output, dim });
    }
    let mut outputs = Vec::new();
    for &value in graph.outputs() {
        let step = lowering.tensor(value)?;
        if matches!(lowering.steps[step], Step::Input(_) | Step::Constant(_)) {
            return unsupported("an output is an input or a constant, not a computed value");
        }
        if outputs.contains(&step) {
            return unsupported("one value is returned twice");
        }
        outputs.push(step);
    }
    // A bool input may only feed `where` conditions: arithmetic on bools promotes to other
    // dtypes this code generator does not produce.
    for (index, &condition) in lowering.condition_inputs.iter().enumerate() {
        if condition && !lowering.only_conditions(index) {
            return unsupported(format!("bool input {index} is used as data"));
        }
    }
    Ok(Program {
        steps: lowering.steps,
        outputs,
        condition_inputs: lowering.condition_inputs,
        row_reduction,
    })
}

impl Lowering<'_> {
    fn push(&mut self, step: Step) -> usize {
        self.steps.push(step);
        self.steps.len() - 1
    }

    fn only_conditions(&self, input: usize) -> bool {
        self.steps.iter().all(|step| match step {
            Step::Unary(_, a) | Step::Call(_, a) => *a != input,
            Step::Binary(_, a, b) => *a != input && *b != input,
            Step::Select(_, a, b) => *a != input && *b != input,
            Step::Input(_) | Step::Constant(_) => true,
        })
    }

    fn constant_node(&self, value: ValueId) -> Option<NodeId> {
        match self.graph.value_definition(value) {
            ValueDefinition::NodeOutput { node, .. }
                if self.graph.kind(node).is_prim(Prim::Constant) =>
            {
                Some(node)
            }
            _ => None,
        }
    }

    fn constant(&self, value: ValueId) -> Lowered<ConstantArgument> {
        let Some(node) = self.constant_node(value) else {
            return unsupported(format!(
                "argument %{} is not a constant",
                self.graph.value_display_name(value)
            ));
        };
        match self.graph.attribute(node, "value") {
            None => Ok(ConstantArgument::None),
            Some(AttributeValue::Int(v)) => Ok(ConstantArgument::Number(*v as f64)),
            Some(AttributeValue::Float(v)) => Ok(ConstantArgument::Number(*v)),
            Some(AttributeValue::Str(s)) => Ok(ConstantArgument::Str(s.clone())),
            Some(other) => unsupported(format!("constant of kind {}", other.kind_name())),
        }
    }

    fn number(&self, value: ValueId) -> Lowered<f64> {
        match self.constant(value)? {
            ConstantArgument::Number(v) => Ok(v),
            other => unsupported(format!("expected a number, found {other:?}")),
        }
    }

    /// A tensor operand, or a scalar constant operand (the `.Scalar` overloads), as a step.
    fn operand(&mut self, value: ValueId) -> Lowered<usize> {
        if let Some(&step) = self.tensor_steps.get(&value) {
            return Ok(step);
        }
        let number = self.number(value)?;
        Ok(self.push(Step::Constant(number as f32)))
    }

    fn tensor(&self, value: ValueId) -> Lowered<usize> {
        self.tensor_steps.get(&value).copied().ok_or_else(|| {
            Unsupported(format!(
                "%{} is not a tensor computed in the group",
                self.graph.value_display_name(value)
            ))
        })
    }

    fn unary(&mut self, op: InlineUnary, input: usize) -> usize {
        self.push(Step::Unary(op, input))
    }

    fn binary(&mut self, op: InlineBinary, a: usize, b: usize) -> usize {
        self.push(Step::Binary(op, a, b))
    }

    /// `a + alpha * b` or `a - alpha * b`.
    fn add_with_alpha(&mut self, op: InlineBinary, inputs: &[ValueId]) -> Lowered<usize> {
        let a = self.operand(inputs[0])?;
        let mut b = self.operand(inputs[1])?;
        if let Some(&alpha) = inputs.get(2) {
            let alpha = self.number(alpha)?;
            if alpha != 1.0 {
                let alpha = self.push(Step::Constant(alpha as f32));
                b = self.binary(InlineBinary::Mul, b, alpha);
            }
        }
        Ok(self.binary(op, a, b))
    }

    fn pow(&mut self, base: usize, exponent: f64) -> usize {
        // PyTorch's pow kernel special-cases these exponents with exact inline forms.
        if exponent == 1.0 {
            base
        } else if exponent == 2.0 {
            self.unary(InlineUnary::Square, base)
        } else if exponent == 3.0 {
            let square = self.unary(InlineUnary::Square, base);
            self.binary(InlineBinary::Mul, square, base)
        } else if exponent == 0.5 {
            self.unary(InlineUnary::Sqrt, base)
        } else if exponent == -0.5 {
            self.unary(InlineUnary::Rsqrt, base)
        } else if exponent == -1.0 {
            self.unary(InlineUnary::Reciprocal, base)
        } else if exponent == -2.0 {
            let square = self.unary(InlineUnary::Square, base);
            self.unary(InlineUnary::Reciprocal, square)
        } else {
            self.push(Step::Call(MathFunction::Pow(exponent as f32), base))
        }
    }

    fn lower_node(&mut self, node: NodeId) -> Lowered<()> {
        let graph = self.graph;
        let kind = graph.kind(node).as_str().to_string();
        if kind == "prim::Constant" {
            return Ok(());
        }
        if !graph.node_blocks(node).is_empty() {
            return unsupported(format!("{kind} has blocks"));
        }
        let inputs: Vec<ValueId> = graph.node_inputs(node).to_vec();
        let outputs = graph.node_outputs(node);
        if outputs.len() != 1 {
            return unsupported(format!("{kind} has {} outputs", outputs.len()));
        }
        let output = outputs[0];
        let first = |lowering: &mut Self| -> Lowered<usize> {
            match inputs.first() {
                Some(&value) => lowering.tensor(value),
                None => unsupported(format!("{kind} has no inputs")),
            }
        };
        let arity = |count: usize| -> Lowered<()> {
            if inputs.len() == count {
                Ok(())
            } else {
                unsupported(format!("{kind} with {} inputs", inputs.len()))
            }
        };
        let step = match kind.as_str() {
            "aten::add" | "aten::sub" => {
                if inputs.len() != 2 && inputs.len() != 3 {
                    return unsupported(format!("{kind} with {} inputs", inputs.len()));
                }
                let op = if kind == "aten::add" {
                    InlineBinary::Add
                } else {
                    InlineBinary::Sub
                };
                self.add_with_alpha(op, &inputs)?
            }
            "aten::mul" | "aten::div" | "aten::minimum" | "aten::maximum" => {
                arity(2)?;
                let op = match kind.as_str() {
                    "aten::mul" => InlineBinary::Mul,
                    "aten::div" => InlineBinary::Div,
                    "aten::minimum" => InlineBinary::Minimum,
                    _ => InlineBinary::Maximum,
                };
                let a = self.operand(inputs[0])?;
                let b = self.operand(inputs[1])?;
                self.binary(op, a, b)
            }
            "aten::neg" | "aten::abs" | "aten::relu" | "aten::sqrt" | "aten::rsqrt"
            | "aten::reciprocal" => {
                arity(1)?;
                let op = match kind.as_str() {
                    "aten::neg" => InlineUnary::Neg,
                    "aten::abs" => InlineUnary::Abs,
                    "aten::relu" => InlineUnary::Relu,
                    "aten::sqrt" => InlineUnary::Sqrt,
                    "aten::rsqrt" => InlineUnary::Rsqrt,
                    _ => InlineUnary::Reciprocal,
                };
                let input = first(self)?;
                self.unary(op, input)
            }
            "aten::exp" | "aten::log" | "aten::tanh" | "aten::sigmoid" | "aten::erf"
            | "aten::silu" => {
                arity(1)?;
                let function = match kind.as_str() {
                    "aten::exp" => MathFunction::Exp,
                    "aten::log" => MathFunction::Log,
                    "aten::tanh" => MathFunction::Tanh,
                    "aten::sigmoid" => MathFunction::Sigmoid,
                    "aten::erf" => MathFunction::Erf,
                    _ => MathFunction::Silu,
                };
                let input = first(self)?;
                self.push(Step::Call(function, input))
            }
            "aten::gelu" => {
                let approximate = match inputs.get(1) {
                    None => "none".to_string(),
                    Some(&value) => match self.constant(value)? {
                        ConstantArgument::Str(s) => s,
                        other => return unsupported(format!("gelu approximate={other:?}")),
                    },
                };
                let function = match approximate.as_str() {
                    "none" => MathFunction::Gelu,
                    "tanh" => MathFunction::GeluTanh,
                    other => return unsupported(format!("gelu approximate=\"{other}\"")),
                };
                let input = first(self)?;
                self.push(Step::Call(function, input))
            }
            "aten::pow" => {
                arity(2)?;
                let base = first(self)?;
                let exponent = self.number(inputs[1])?;
                self.pow(base, exponent)
            }
            "aten::clamp" | "aten::clamp_min" | "aten::clamp_max" => {
                let mut result = first(self)?;
                let (min, max) = match kind.as_str() {
                    "aten::clamp" => (inputs.get(1).copied(), inputs.get(2).copied()),
                    "aten::clamp_min" => (inputs.get(1).copied(), None),
                    _ => (None, inputs.get(1).copied()),
                };
                // PyTorch applies the lower bound first, then the upper one (so min > max
                // gives max), and NaN inputs stay NaN.
                for (bound, op) in [(min, InlineBinary::Maximum), (max, InlineBinary::Minimum)] {
                    let Some(bound) = bound else { continue };
                    match self.constant(bound)? {
                        ConstantArgument::None => {}
                        ConstantArgument::Number(v) => {
                            let constant = self.push(Step::Constant(v as f32));
                            result = self.binary(op, result, constant);
                        }
                        other => return unsupported(format!("clamp bound {other:?}")),
                    }
                }
                result
            }
            "aten::softmax" | "aten::log_softmax" => {
                arity(3)?;
                let reduced = first(self)?;
                let dim = match self.constant(inputs[1])? {
                    ConstantArgument::Number(dim) if dim.fract() == 0.0 => dim as i64,
                    other => return unsupported(format!("{kind} dim {other:?}")),
                };
                if self.constant(inputs[2])? != ConstantArgument::None {
                    return unsupported(format!("{kind} with a dtype"));
                }
                if self.reduction.is_some() {
                    return unsupported("a second reduction");
                }
                let reduction_kind = RowReductionKind::from_operator(&kind)
                    .ok_or_else(|| Unsupported(format!("operator {kind}")))?;
                self.reduction = Some((reduction_kind, output, reduced, dim));
                // The reduction rewrites its input's output buffer in place: the value
                // names the reduced step, and nothing may read it as a pointwise value.
                self.tensor_steps.insert(output, reduced);
                return Ok(());
            }
            "aten::where" => {
                arity(3)?;
                let condition = first(self)?;
                if !matches!(self.steps[condition], Step::Input(i) if self.condition_inputs[i]) {
                    return unsupported("where's condition is not a bool group input");
                }
                let a = self.operand(inputs[1])?;
                let b = self.operand(inputs[2])?;
                self.push(Step::Select(condition, a, b))
            }
            "aten::to" | "aten::type_as" | "aten::contiguous" | "aten::clone" => {
                let input = first(self)?;
                if matches!(self.steps[input], Step::Input(i) if self.condition_inputs[i]) {
                    return unsupported(format!("{kind} of a bool input"));
                }
                match kind.as_str() {
                    // Only the cast to float32 (ScalarType 6) is the identity here.
                    "aten::to" => match inputs.get(1).map(|&v| self.constant(v)) {
                        Some(Ok(ConstantArgument::Number(6.0))) => {}
                        _ => return unsupported("aten::to other than to float32"),
                    },
                    "aten::type_as" => {
                        // type_as another f32 tensor of the group is the identity.
                        let other = inputs.get(1).map(|&v| self.tensor(v));
                        match other {
                            Some(Ok(step)) if !matches!(self.steps[step], Step::Input(i) if self.condition_inputs[i]) =>
                                {}
                            _ => return unsupported("type_as a non-f32 tensor"),
                        }
                    }
                    _ => {}
                }
                input
            }
            _ => return unsupported(format!("operator {kind}")),
        };
        self.tensor_steps.insert(output, step);
        Ok(())
    }
}
