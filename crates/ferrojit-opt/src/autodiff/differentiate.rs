//! Symbolic differentiation of a `prim::DifferentiableGraph`'s subgraph (PyTorch's
//! `differentiate` in torch/csrc/jit/runtime/autodiff.cpp): a forward graph that computes the
//! subgraph's outputs and also returns the values the gradient needs, and a backward graph
//! that takes the outputs' gradients and those saved values and returns one gradient per
//! subgraph input.
//!
//! PyTorch's `Gradient` struct splits the backward graph's inputs into output vjps, captured
//! inputs and captured outputs; here the saved values are one list, in the order the
//! formulas first asked for them: forward values (inputs or intermediates) and the sizes of
//! tensors that may have been broadcast. Constants are copied into the backward graph, never
//! saved.
//!
//! The formulas are written in the same arithmetic order as the runtime engine's
//! (crates/ferrojit-autograd/src/formulas), so that a symbolic gradient equals the engine's
//! bit for bit where the same kernels run. An operator or overload without a formula here,
//! or a `matmul` whose operands are not known to be matrices, is refused with an error naming
//! it; the executor then leaves that group to the runtime autograd.

use std::collections::HashMap;

use ferrojit_ir::{AttributeValue, Graph, InsertPoint, Prim, Type, ValueId};

/// A subgraph's symbolic gradient.
#[derive(Debug, Clone)]
pub struct Gradient {
    /// Takes the subgraph's inputs; returns its outputs, then the saved values.
    pub forward: Graph,
    /// Takes one gradient per subgraph output, then the saved values; returns one gradient
    /// per subgraph input (`None` for inputs that are not tensors or get no gradient).
    pub backward: Graph,
    /// How many of the forward graph's outputs are the subgraph's own.
    pub num_outputs: usize,
    /// How many saved values follow them.
    pub num_saved: usize,
}

/// [`differentiate`], with the backward graph computing gradients only for the inputs whose
/// `needs_gradient` is true: the others get `None` (as PyTorch's backward graph does for
/// inputs that do not require grad), and what only they needed is removed from the backward
/// graph. A mask of the wrong length is an error.
pub fn differentiate_for(subgraph: &Graph, needs_gradient: &[bool]) -> Result<Gradient, String> {
    if needs_gradient.len() != subgraph.inputs().len() {
        return Err(format!(
            "differentiate: {} gradient flags for {} inputs",
            needs_gradient.len(),
            subgraph.inputs().len()
        ));
    }
    let mut gradient = differentiate(subgraph)?;
    if needs_gradient.iter().all(|&needed| needed) {
        return Ok(gradient);
    }
    let backward = &mut gradient.backward;
    let none = backward.insert_constant(None, Type::NoneType);
    let returned = backward.block_return_node(backward.top_block());
    for (index, &needed) in needs_gradient.iter().enumerate() {
        if !needed {
            backward.replace_node_input(returned, index, none);
        }
    }
    crate::dead_code_elimination::eliminate_dead_code(backward);
    Ok(gradient)
}

/// The forward and backward graphs of `subgraph`, whose top block holds only constants and
/// operators with a formula here.
pub fn differentiate(subgraph: &Graph) -> Result<Gradient, String> {
    let mut builder = Builder::new(subgraph);
    let num_outputs = subgraph.outputs().len();
    for (index, &output) in subgraph.outputs().iter().enumerate() {
        let gradient = builder.backward.inputs()[index];
        builder.accumulate(output, gradient);
    }
    let nodes = subgraph.block_nodes(subgraph.top_block());
    for &node in nodes.iter().rev() {
        if !subgraph.node_blocks(node).is_empty() {
            return Err(format!(
                "differentiate: {} has blocks",
                subgraph.kind(node).as_str()
            ));
        }
        if subgraph.kind(node).is_prim(Prim::Constant) {
            continue;
        }
        if subgraph.kind(node).is_prim(Prim::ListUnpack) {
            builder.unpacked_chunk_gradient(node)?;
            continue;
        }
        let outputs = subgraph.node_outputs(node);
        if outputs.len() != 1 {
            return Err(format!(
                "differentiate: {} has {} outputs",
                subgraph.kind(node).as_str(),
                outputs.len()
            ));
        }
        let Some(&gradient) = builder.gradients.get(&outputs[0]) else {
            continue;
        };
        builder.node_gradient(node, gradient)?;
    }
    let none = builder.backward.insert_constant(None, Type::NoneType);
    for &input in subgraph.inputs() {
        let gradient = match builder.gradients.get(&input) {
            Some(&gradient) if subgraph.value_type(input).is_tensor() => gradient,
            _ => none,
        };
        builder.backward.register_output(gradient);
    }
    let num_saved = builder.forward.outputs().len() - num_outputs;
    Ok(Gradient {
        forward: builder.forward,
        backward: builder.backward,
        num_outputs,
        num_saved,
    })
}

struct Builder<'a> {
    subgraph: &'a Graph,
    forward: Graph,
    backward: Graph,
    /// Forward value (of the subgraph, and of `forward`, a copy with the same ids) to the
    /// backward value that holds it: a saved input of the backward graph, or a copied
    /// constant.
    saved: HashMap<ValueId, ValueId>,
    /// Forward tensor to the backward input that holds its sizes.
    saved_sizes: HashMap<ValueId, ValueId>,
    /// Forward value to the backward value of its gradient so far.
    gradients: HashMap<ValueId, ValueId>,
}

impl<'a> Builder<'a> {
    fn new(subgraph: &'a Graph) -> Builder<'a> {
        let mut forward = subgraph.clone();
        let top = forward.top_block();
        forward.set_insert_point(InsertPoint::EndOf(top));
        let mut backward = Graph::new();
        for &output in subgraph.outputs() {
            let name = subgraph
                .debug_name(output)
                .map(|name| format!("grad_{name}"));
            backward.add_input(Type::Tensor, name.as_deref());
        }
        Builder {
            subgraph,
            forward,
            backward,
            saved: HashMap::new(),
            saved_sizes: HashMap::new(),
            gradients: HashMap::new(),
        }
    }

    /// The constant value of `value` when a `prim::Constant` makes it: its attribute (`None`
    /// for the `None` constant) and type.
    fn constant(&self, value: ValueId) -> Option<(Option<AttributeValue>, Type)> {
        let producer = self.subgraph.producer(value)?;
        if !self.subgraph.kind(producer).is_prim(Prim::Constant) {
            return None;
        }
        let attribute = self.subgraph.attribute(producer, "value").cloned();
        Some((attribute, self.subgraph.value_type(value).clone()))
    }

    /// Whether `value` is the constant `None` (an absent optional argument).
    fn is_none(&self, value: ValueId) -> bool {
        matches!(self.subgraph.value_type(value), Type::NoneType)
    }

    fn is_tensor(&self, value: ValueId) -> bool {
        self.subgraph.value_type(value).is_tensor()
    }

    /// Whether `value` is certainly a number (no gradient flows to it).
    fn is_number(&self, value: ValueId) -> bool {
        matches!(
            self.subgraph.value_type(value),
            Type::Int | Type::Float | Type::Bool
        )
    }

    /// The backward graph's handle on forward value `value`: a copy of it when constant,
    /// else a saved value (a forward output and a backward input).
    fn saved(&mut self, value: ValueId) -> ValueId {
        if let Some(&held) = self.saved.get(&value) {
            return held;
        }
        let held = match self.constant(value) {
            Some((attribute, ty)) => self.backward.insert_constant(attribute, ty),
            None => {
                self.forward.register_output(value);
                let name = self.subgraph.debug_name(value);
                self.backward
                    .add_input(self.subgraph.value_type(value).clone(), name)
            }
        };
        self.saved.insert(value, held);
        held
    }

    /// The sizes of forward tensor `value`: read in the backward graph off the tensor when the
    /// backward already holds it (a `mul`'s operands), otherwise computed in the forward
    /// graph and saved, as PyTorch's differentiate saves `aten::size` of a broadcast operand.
    fn saved_size(&mut self, value: ValueId) -> ValueId {
        if let Some(&held) = self.saved_sizes.get(&value) {
            return held;
        }
        let int_list = Type::List(Box::new(Type::Int));
        if let Some(&tensor) = self.saved.get(&value) {
            let size = self.emit_typed("aten::size", &[tensor], int_list);
            self.saved_sizes.insert(value, size);
            return size;
        }
        let size = self
            .forward
            .insert("aten::size", &[value], std::slice::from_ref(&int_list));
        let size = self.forward.node_output(size, 0);
        self.forward.register_output(size);
        let held = self.backward.add_input(int_list, None);
        self.saved_sizes.insert(value, held);
        held
    }

    /// Inserts `kind(inputs)` into the backward graph; its one output has type `ty`.
    fn emit_typed(&mut self, kind: &str, inputs: &[ValueId], ty: Type) -> ValueId {
        let node = self.backward.insert(kind, inputs, &[ty]);
        self.backward.node_output(node, 0)
    }

    fn emit(&mut self, kind: &str, inputs: &[ValueId]) -> ValueId {
        self.emit_typed(kind, inputs, Type::Tensor)
    }

    fn int(&mut self, value: i64) -> ValueId {
        self.backward
            .insert_constant(Some(AttributeValue::Int(value)), Type::Int)
    }

    fn float(&mut self, value: f64) -> ValueId {
        self.backward
            .insert_constant(Some(AttributeValue::Float(value)), Type::Float)
    }

    /// `gradient * factor` as the engine's `scale`: `aten::mul` by a float.
    fn scale(&mut self, gradient: ValueId, factor: f64) -> ValueId {
        let factor = self.float(factor);
        self.emit("aten::mul", &[gradient, factor])
    }

    /// The constant number `value` holds, when it is one.
    fn constant_number(&self, value: ValueId) -> Option<f64> {
        match self.constant(value)?.0? {
            AttributeValue::Int(number) => Some(number as f64),
            AttributeValue::Float(number) => Some(number),
            _ => None,
        }
    }

    /// `gradient` times the scalar argument `factor` of the forward graph (negated when
    /// `negate`), skipping a multiplication by one as the engine's `scaled` does.
    fn scaled_by_argument(&mut self, gradient: ValueId, factor: ValueId, negate: bool) -> ValueId {
        match self.constant_number(factor) {
            Some(number) => {
                let number = if negate { -number } else { number };
                if number == 1.0 {
                    gradient
                } else {
                    self.scale(gradient, number)
                }
            }
            None => {
                let factor = self.saved(factor);
                let scaled = self.emit("aten::mul", &[gradient, factor]);
                if negate {
                    self.emit("aten::neg", &[scaled])
                } else {
                    scaled
                }
            }
        }
    }

    /// Sums a possibly broadcast gradient back to the sizes of forward tensor `target`.
    fn sum_to(&mut self, gradient: ValueId, target: ValueId) -> ValueId {
        let sizes = self.saved_size(target);
        self.emit("aten::sum_to_size", &[gradient, sizes])
    }

    /// Adds `gradient` to what forward value `value` has received.
    fn accumulate(&mut self, value: ValueId, gradient: ValueId) {
        match self.gradients.get(&value).copied() {
            Some(previous) => {
                let one = self.int(1);
                let sum = self.emit("aten::add", &[previous, gradient, one]);
                self.gradients.insert(value, sum);
            }
            None => {
                self.gradients.insert(value, gradient);
            }
        }
    }

    /// The rank of forward tensor `value` when its type states it.
    fn rank(&self, value: ValueId) -> Option<usize> {
        match self.subgraph.value_type(value) {
            Type::RefinedTensor(refinement) => refinement.sizes.as_ref().map(Vec::len),
            _ => None,
        }
    }

    /// The node of the subgraph that makes `value`, when it is of kind `kind`.
    fn producer_of_kind(&self, value: ValueId, kind: &str) -> Option<ferrojit_ir::NodeId> {
        self.subgraph
            .producer(value)
            .filter(|&producer| self.subgraph.kind(producer).as_str() == kind)
    }

    /// The gradient of a `chunk` (or `unsafe_chunk`) whose list a `prim::ListUnpack` takes
    /// apart (the pair PyTorch's fuser turns into `prim::ConstantChunk`): the pieces lie one
    /// after another along `dim`, so the gradient of the chunked tensor is the
    /// concatenation of the pieces' gradients, zeros for a piece that got none (the
    /// engine's `SplitBackward0`, and PyTorch's `ConstantChunk` gradient).
    fn unpacked_chunk_gradient(&mut self, unpack: ferrojit_ir::NodeId) -> Result<(), String> {
        let pieces = self.subgraph.node_outputs(unpack).to_vec();
        let gradients: Vec<Option<ValueId>> = pieces
            .iter()
            .map(|piece| self.gradients.get(piece).copied())
            .collect();
        let Some(&Some(any_gradient)) = gradients.iter().find(|gradient| gradient.is_some()) else {
            return Ok(());
        };
        let list = self.subgraph.node_inputs(unpack)[0];
        let chunk = self
            .producer_of_kind(list, "aten::chunk")
            .or_else(|| self.producer_of_kind(list, "aten::unsafe_chunk"))
            .ok_or_else(|| {
                "differentiate: no formula for prim::ListUnpack: its list is not a chunk of \
                 the subgraph"
                    .to_string()
            })?;
        let chunk_inputs = self.subgraph.node_inputs(chunk).to_vec();
        if chunk_inputs.len() != 3 || !self.is_tensor(chunk_inputs[0]) {
            return Err(format!(
                "differentiate: no formula for {}: this overload",
                self.subgraph.kind(chunk).as_str()
            ));
        }
        let mut joined = Vec::with_capacity(pieces.len());
        for (&piece, gradient) in pieces.iter().zip(gradients) {
            let gradient = match gradient {
                Some(gradient) => gradient,
                None => {
                    let sizes = self.saved_size(piece);
                    let none = self.backward.insert_constant(None, Type::NoneType);
                    self.emit(
                        "aten::new_zeros",
                        &[any_gradient, sizes, none, none, none, none],
                    )
                }
            };
            joined.push(gradient);
        }
        let tensor_list = Type::List(Box::new(Type::Tensor));
        let list = self.emit_typed("prim::ListConstruct", &joined, tensor_list);
        let dim = self.saved(chunk_inputs[2]);
        let gradient = self.emit("aten::cat", &[list, dim]);
        self.accumulate(chunk_inputs[0], gradient);
        Ok(())
    }

    /// The gradient of `cat` over a list a `prim::ListConstruct` of the subgraph made: each
    /// element gets its own stretch of the output's gradient along `dim` (the engine's
    /// `CatBackward0`), found from the elements' saved sizes.
    fn cat_gradient(&mut self, node: ferrojit_ir::NodeId, g: ValueId) -> Result<(), String> {
        let inputs = self.subgraph.node_inputs(node).to_vec();
        let construct = self
            .producer_of_kind(inputs[0], "prim::ListConstruct")
            .ok_or_else(|| {
                "differentiate: no formula for aten::cat: its list is not built in the subgraph"
                    .to_string()
            })?;
        let elements = self.subgraph.node_inputs(construct).to_vec();
        if !self.is_number(inputs[1]) || elements.iter().any(|&e| !self.is_tensor(e)) {
            return Err("differentiate: no formula for aten::cat: this overload".to_string());
        }
        let dim = self.saved(inputs[1]);
        let mut offset = self.int(0);
        for element in elements {
            let sizes = self.saved_size(element);
            let length = self.emit_typed("aten::__getitem__", &[sizes, dim], Type::Int);
            let piece = self.emit("aten::narrow", &[g, dim, offset, length]);
            self.accumulate(element, piece);
            offset = self.emit_typed("aten::add", &[offset, length], Type::Int);
        }
        Ok(())
    }

    /// Emits the gradients of `node`'s inputs, given its output's gradient.
    fn node_gradient(&mut self, node: ferrojit_ir::NodeId, g: ValueId) -> Result<(), String> {
        let kind = self.subgraph.kind(node).as_str().to_string();
        let inputs = self.subgraph.node_inputs(node).to_vec();
        let output = self.subgraph.node_output(node, 0);
        let refuse = |why: &str| format!("differentiate: no formula for {kind}: {why}");
        if kind == "aten::cat" && inputs.len() == 2 {
            return self.cat_gradient(node, g);
        }
        // Every input is a tensor, a number or the None constant; an optional or unknown
        // one could be either at run time.
        if let Some(&unclear) = inputs.iter().find(|&&input| {
            !self.is_tensor(input) && !self.is_number(input) && !self.is_none(input)
        }) {
            return Err(refuse(&format!(
                "input %{} is neither a tensor nor a number",
                self.subgraph.value_display_name(unclear)
            )));
        }
        match (kind.as_str(), inputs.len()) {
            ("aten::add" | "aten::sub", 3) => {
                let (a, b, alpha) = (inputs[0], inputs[1], inputs[2]);
                if self.is_tensor(a) {
                    let ga = self.sum_to(g, a);
                    self.accumulate(a, ga);
                }
                if self.is_tensor(b) {
                    let scaled = self.scaled_by_argument(g, alpha, kind == "aten::sub");
                    let gb = self.sum_to(scaled, b);
                    self.accumulate(b, gb);
                }
            }
            ("aten::mul", 2) => {
                let (a, b) = (inputs[0], inputs[1]);
                if self.is_tensor(b) {
                    // Both operands are saved first, so that the sums to their sizes read
                    // the sizes off them rather than saving the sizes too.
                    let saved_b = self.saved(b);
                    let saved_a = self.saved(a);
                    let product = self.emit("aten::mul", &[g, saved_b]);
                    let ga = self.sum_to(product, a);
                    self.accumulate(a, ga);
                    let product = self.emit("aten::mul", &[g, saved_a]);
                    let gb = self.sum_to(product, b);
                    self.accumulate(b, gb);
                } else {
                    // The engine's mul.Scalar formula: the gradient scaled by the number.
                    let ga = match self.constant_number(b) {
                        Some(number) => self.scale(g, number),
                        None => {
                            let saved_b = self.saved(b);
                            self.emit("aten::mul", &[g, saved_b])
                        }
                    };
                    self.accumulate(a, ga);
                }
            }
            ("aten::div", 2) => {
                let (a, b) = (inputs[0], inputs[1]);
                if !self.is_tensor(b) {
                    return Err(refuse("division by a number"));
                }
                let saved_b = self.saved(b);
                let saved_a = self.saved(a);
                let quotient = self.emit("aten::div", &[g, saved_b]);
                let ga = self.sum_to(quotient, a);
                self.accumulate(a, ga);
                let numerator = self.emit("aten::mul", &[g, saved_a]);
                let square = self.emit("aten::mul", &[saved_b, saved_b]);
                let quotient = self.emit("aten::div", &[numerator, square]);
                let negated = self.emit("aten::neg", &[quotient]);
                let gb = self.sum_to(negated, b);
                self.accumulate(b, gb);
            }
            ("aten::neg", 1) => {
                let ga = self.emit("aten::neg", &[g]);
                self.accumulate(inputs[0], ga);
            }
            ("aten::t", 1) => {
                let ga = self.emit("aten::t", &[g]);
                self.accumulate(inputs[0], ga);
            }
            ("aten::mm", 2) => {
                let (a, b) = (inputs[0], inputs[1]);
                let saved_b = self.saved(b);
                let b_t = self.emit("aten::t", &[saved_b]);
                let ga = self.emit("aten::mm", &[g, b_t]);
                self.accumulate(a, ga);
                let saved_a = self.saved(a);
                let a_t = self.emit("aten::t", &[saved_a]);
                let gb = self.emit("aten::mm", &[a_t, g]);
                self.accumulate(b, gb);
            }
            ("aten::matmul", 2) => {
                let (a, b) = (inputs[0], inputs[1]);
                if self.rank(a) != Some(2) || self.rank(b) != Some(2) {
                    return Err(refuse("operands not known to be matrices"));
                }
                let last = self.int(-1);
                let second_last = self.int(-2);
                let saved_b = self.saved(b);
                let b_t = self.emit("aten::transpose", &[saved_b, last, second_last]);
                let ga = self.emit("aten::matmul", &[g, b_t]);
                self.accumulate(a, ga);
                let saved_a = self.saved(a);
                let a_t = self.emit("aten::transpose", &[saved_a, last, second_last]);
                let gb = self.emit("aten::matmul", &[a_t, g]);
                self.accumulate(b, gb);
            }
            ("aten::addmm", 5) => {
                let (bias, m1, m2, beta, alpha) =
                    (inputs[0], inputs[1], inputs[2], inputs[3], inputs[4]);
                let (Some(beta), Some(alpha)) =
                    (self.constant_number(beta), self.constant_number(alpha))
                else {
                    return Err(refuse("beta and alpha must be constants"));
                };
                let scaled = self.scale(g, beta);
                let gbias = self.sum_to(scaled, bias);
                self.accumulate(bias, gbias);
                let saved_m2 = self.saved(m2);
                let m2_t = self.emit("aten::t", &[saved_m2]);
                let product = self.emit("aten::mm", &[g, m2_t]);
                let gm1 = self.scale(product, alpha);
                self.accumulate(m1, gm1);
                let saved_m1 = self.saved(m1);
                let m1_t = self.emit("aten::t", &[saved_m1]);
                let product = self.emit("aten::mm", &[m1_t, g]);
                let gm2 = self.scale(product, alpha);
                self.accumulate(m2, gm2);
            }
            ("aten::linear", 3) => {
                let (x, weight, bias) = (inputs[0], inputs[1], inputs[2]);
                let saved_weight = self.saved(weight);
                let gx = self.emit("aten::matmul", &[g, saved_weight]);
                self.accumulate(x, gx);
                // The engine flattens the leading dimensions of the gradient and the input
                // into rows: weight' = grad_rows^T @ input_rows.
                let zero = self.int(0);
                let one = self.int(1);
                let minus_one = self.int(-1);
                let out_features = self.emit_typed("aten::size", &[saved_weight, zero], Type::Int);
                let in_features = self.emit_typed("aten::size", &[saved_weight, one], Type::Int);
                let int_list = Type::List(Box::new(Type::Int));
                let grad_shape = self.emit_typed(
                    "prim::ListConstruct",
                    &[minus_one, out_features],
                    int_list.clone(),
                );
                let input_shape =
                    self.emit_typed("prim::ListConstruct", &[minus_one, in_features], int_list);
                let grad_rows = self.emit("aten::reshape", &[g, grad_shape]);
                let saved_x = self.saved(x);
                let input_rows = self.emit("aten::reshape", &[saved_x, input_shape]);
                let grad_rows_t = self.emit("aten::t", &[grad_rows]);
                let gw = self.emit("aten::mm", &[grad_rows_t, input_rows]);
                self.accumulate(weight, gw);
                if !self.is_none(bias) {
                    let gb = self.sum_to(g, bias);
                    self.accumulate(bias, gb);
                }
            }
            ("aten::relu", 1) => {
                let x = self.saved(inputs[0]);
                let zero = self.float(0.0);
                let positive = self.emit("aten::gt", &[x, zero]);
                let mask = self.emit("aten::type_as", &[positive, x]);
                let gx = self.emit("aten::mul", &[g, mask]);
                self.accumulate(inputs[0], gx);
            }
            ("aten::sigmoid", 1) => {
                // The output is sigmoid(x), bit for bit what the engine recomputes.
                let s = self.saved(output);
                let one = self.float(1.0);
                let alpha = self.int(1);
                let complement = self.emit("aten::rsub", &[s, one, alpha]);
                let derivative = self.emit("aten::mul", &[s, complement]);
                let gx = self.emit("aten::mul", &[g, derivative]);
                self.accumulate(inputs[0], gx);
            }
            ("aten::tanh", 1) => {
                let t = self.saved(output);
                let square = self.emit("aten::mul", &[t, t]);
                let one = self.float(1.0);
                let alpha = self.int(1);
                let derivative = self.emit("aten::rsub", &[square, one, alpha]);
                let gx = self.emit("aten::mul", &[g, derivative]);
                self.accumulate(inputs[0], gx);
            }
            ("aten::exp", 1) => {
                let result = self.saved(output);
                let gx = self.emit("aten::mul", &[g, result]);
                self.accumulate(inputs[0], gx);
            }
            ("aten::log", 1) => {
                let x = self.saved(inputs[0]);
                let gx = self.emit("aten::div", &[g, x]);
                self.accumulate(inputs[0], gx);
            }
            ("aten::mean", 2) => {
                let x = inputs[0];
                if !self.is_none(inputs[1]) {
                    return Err(refuse("a dtype argument"));
                }
                let sizes = self.saved_size(x);
                let implicit = self
                    .backward
                    .insert_constant(Some(AttributeValue::Int(0)), Type::Bool);
                let spread = self.emit("aten::expand", &[g, sizes, implicit]);
                let count = self.emit_typed("aten::numel", &[spread], Type::Int);
                let one = self.float(1.0);
                let reciprocal = self.emit_typed("aten::div", &[one, count], Type::Float);
                let gx = self.emit("aten::mul", &[spread, reciprocal]);
                self.accumulate(x, gx);
            }
            _ => return Err(refuse("this overload is not differentiated symbolically")),
        }
        Ok(())
    }
}
