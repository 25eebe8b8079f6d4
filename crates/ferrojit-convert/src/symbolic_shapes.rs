//! Symbolic shape propagation for `--dynamic` dimensions: the symbolic sizes of operator
//! results (elementwise broadcast, view/reshape with -1, flatten, matmul/linear, cat,
//! sum/mean over dims, transpose/permute/unsqueeze, conv and pooling with a dynamic batch,
//! factories with symbolic sizes), `aten::sym_size.int` nodes for sizes read from a dynamic
//! dimension, and `_operator.*` nodes for the int arithmetic on them. A result size no rule
//! can express is an error naming the node and the dimension, never a static size.

use std::collections::BTreeMap;

use ferrojit_export::model::{
    Argument, ArgumentKind, NamedArgument, Node, SymArgument, SymExpr, SymHint, SymInt, TensorMeta,
};
use ferrojit_ir::Type;
use ferrojit_ir::{NodeId, Prim};
use ferrojit_runtime::{IValue, ListValue};
use ferrojit_tensor::Tensor;

use crate::converter::{cell_key, Converter};
use crate::dynamic::{product, Dim};
use crate::error::Result;
use crate::metadata::tensor_meta;

/// An int of the walk that is a size read from a dynamic dimension: its node's name in the
/// program and its symbolic value.
#[derive(Debug, Clone)]
pub(crate) struct SymScalar {
    pub name: String,
    pub dim: Dim,
}

/// A value of the walk that carries symbolic ints.
#[derive(Debug, Clone)]
pub(crate) enum SymValue {
    Int(SymScalar),
    /// A list of ints, some of them symbolic.
    List(Vec<Option<SymScalar>>),
}

/// Operators whose result has the broadcast shape of their tensor arguments.
const ELEMENTWISE: &[&str] = &[
    "add",
    "sub",
    "mul",
    "div",
    "rsub",
    "relu",
    "sigmoid",
    "tanh",
    "gelu",
    "silu",
    "exp",
    "log",
    "neg",
    "abs",
    "pow",
    "where",
    "clamp",
    "clamp_min",
    "clamp_max",
    "dropout",
    "softmax",
    "log_softmax",
    "maximum",
    "minimum",
    "eq",
    "ne",
    "lt",
    "gt",
    "le",
    "ge",
    "sqrt",
    "rsqrt",
    "leaky_relu",
    "hardtanh",
    "clone",
    "contiguous",
    "to",
    "to_copy",
    "masked_fill",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "rand_like",
    "randn_like",
    "sin",
    "cos",
    "erf",
    "floor",
    "ceil",
    "round",
    "sign",
    "square",
    "detach",
    "alias",
    "copy",
    "fill",
    "lerp",
    "addcmul",
    "addcdiv",
    "hardswish",
    "hardsigmoid",
    "elu",
    "softplus",
    "mish",
    "logical_and",
    "logical_or",
    "logical_not",
    "bitwise_and",
    "bitwise_or",
    "bitwise_not",
    "type_as",
    "layer_norm",
    "reciprocal",
    "remainder",
    "fmod",
    "floor_divide",
    "threshold",
    "relu6",
    "expm1",
    "log1p",
    "sgn",
    "frac",
    "trunc",
    "atan",
    "asin",
    "acos",
    "sinh",
    "cosh",
    "isnan",
    "nan_to_num",
    "glu_backward",
    "selu",
    "celu",
    "prelu",
    "logit",
    "xlogy",
];

/// Operators that keep a dynamic batch (dimension 0) and make every other size static.
const BATCH_OPERATORS: &[&str] = &[
    "conv1d",
    "conv2d",
    "conv3d",
    "convolution",
    "conv_transpose1d",
    "conv_transpose2d",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "batch_norm",
    "instance_norm",
    "group_norm",
    "embedding",
];

/// Factories whose first argument is the result's size list.
const FACTORIES: &[&str] = &["zeros", "ones", "empty", "full", "rand", "randn"];

/// A stride: `coefficient` times a product of symbols (a tensor with two dynamic
/// dimensions has strides like `s0*s1`).
#[derive(Debug, Clone, PartialEq)]
struct Monomial {
    coefficient: i64,
    /// Symbol → (power, example value).
    symbols: BTreeMap<String, (u32, i64)>,
}

impl Monomial {
    fn constant(value: i64) -> Monomial {
        Monomial {
            coefficient: value,
            symbols: BTreeMap::new(),
        }
    }

    fn example(&self) -> i64 {
        self.symbols
            .values()
            .fold(self.coefficient, |total, (power, hint)| {
                total.saturating_mul(hint.saturating_pow(*power))
            })
    }

    fn times(&self, dim: &Dim) -> Monomial {
        let mut result = self.clone();
        match dim {
            Dim::Static(value) => result.coefficient *= value,
            Dim::Symbolic {
                coefficient,
                symbol,
                hint,
            } => {
                result.coefficient *= coefficient;
                result.symbols.entry(symbol.clone()).or_insert((0, *hint)).0 += 1;
            }
        }
        result
    }

    /// The export schema's SymInt, written as sympy prints it (`4*s0*s1`, `s0**2`).
    fn sym_int(&self) -> SymInt {
        if self.symbols.is_empty() || self.coefficient == 0 {
            return SymInt::Int(self.coefficient);
        }
        let mut factors: Vec<String> = Vec::new();
        if self.coefficient != 1 {
            factors.push(self.coefficient.to_string());
        }
        for (symbol, (power, _)) in &self.symbols {
            factors.push(match power {
                1 => symbol.clone(),
                _ => format!("{symbol}**{power}"),
            });
        }
        SymInt::Expr(SymExpr {
            expr_str: factors.join("*"),
            hint: Some(SymHint::Int(self.example())),
        })
    }
}

/// Dense strides of `sizes` laid out in the order of the example's `strides` (innermost is
/// the smallest stride), checked against the example.
fn symbolic_strides(sizes: &[Dim], strides: &[usize]) -> std::result::Result<Vec<SymInt>, String> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    // Innermost first: smallest stride, then the later dimension.
    order.sort_by(|&a, &b| strides[a].cmp(&strides[b]).then(b.cmp(&a)));
    let mut result = vec![SymInt::Int(0); sizes.len()];
    let mut running = Monomial::constant(1);
    for &index in &order {
        // A broadcast (expanded) dimension repeats its memory: its stride is 0 and it takes
        // no room in the layout.
        if strides[index] == 0 && sizes[index].example() != 1 {
            continue;
        }
        let actual = strides[index] as i64;
        let example = running.example();
        // A dimension of size 1 is never stepped over: its stride says nothing of the layout.
        if sizes[index].example() == 1 {
            result[index] = if example == actual {
                running.sym_int()
            } else {
                SymInt::Int(actual)
            };
            continue;
        }
        // Dense: the stride is the running product. A view of a larger tensor (a slice of a
        // static dimension inside) has a whole multiple of it.
        let stride = if example == actual {
            running.clone()
        } else if example > 0 && actual % example == 0 && !running.symbols.is_empty() {
            let mut multiple = running.clone();
            multiple.coefficient *= actual / example;
            multiple
        } else if running.symbols.is_empty() {
            Monomial::constant(actual)
        } else {
            return Err(format!(
                "the stride of dimension {index} ({actual}) is not a multiple of the product of \
                 the sizes inside it"
            ));
        };
        result[index] = stride.sym_int();
        running = stride.times(&sizes[index]);
    }
    Ok(result)
}

/// The metadata of `tensor` whose sizes are `dims`.
pub(crate) fn symbolic_tensor_meta(
    tensor: &Tensor,
    requires_grad: bool,
    dims: &[Dim],
) -> std::result::Result<TensorMeta, String> {
    let mut meta = tensor_meta(tensor, requires_grad)
        .ok_or_else(|| format!("dtype {:?} has no Export IR name", tensor.dtype()))?;
    meta.sizes = dims.iter().map(Dim::sym_int).collect();
    meta.strides = symbolic_strides(dims, tensor.strides())?;
    Ok(meta)
}

fn broadcast(node_dims: &[Vec<Dim>], out: &[usize]) -> Vec<Dim> {
    let rank = out.len();
    (0..rank)
        .map(|j| {
            let from_right = rank - j;
            let candidates = node_dims.iter().filter_map(|dims| {
                dims.len()
                    .checked_sub(from_right)
                    .map(|i| &dims[i])
                    .filter(|d| d.example() == out[j] as i64)
            });
            let mut chosen = Dim::Static(out[j] as i64);
            for candidate in candidates {
                if candidate.is_symbolic() {
                    chosen = candidate.clone();
                    break;
                }
            }
            chosen
        })
        .collect()
}

fn dim_index(value: Option<&IValue>, rank: usize) -> Option<usize> {
    let dim = value?.to_int().ok()?;
    let dim = if dim < 0 { dim + rank as i64 } else { dim };
    usize::try_from(dim).ok().filter(|d| *d < rank.max(1))
}

impl Converter<'_> {
    /// The sizes of a tensor value: symbolic where known, else its example sizes.
    pub(crate) fn dims_of(&self, value: &IValue) -> Option<Vec<Dim>> {
        let key = cell_key(value)?;
        if let Some(dims) = self.symbolic_sizes.get(&key) {
            return Some(dims.clone());
        }
        let tensor = value.to_tensor().ok()?;
        Some(
            tensor
                .sizes()
                .iter()
                .map(|&s| Dim::Static(s as i64))
                .collect(),
        )
    }

    /// Gives tensor `to` the symbolic sizes of tensor `from` (a value that stands for it:
    /// a branch's or a loop's result, a loop body's carried input).
    pub(crate) fn copy_symbolic_sizes(&mut self, from: &IValue, to: &IValue) {
        let dims = cell_key(from).and_then(|key| self.symbolic_sizes.get(&key).cloned());
        if let (Some(dims), Some(key)) = (dims, cell_key(to)) {
            self.symbolic_sizes.insert(key, dims);
        }
    }

    pub(crate) fn is_symbolic_tensor(&self, value: &IValue) -> bool {
        cell_key(value).is_some_and(|key| self.symbolic_sizes.contains_key(&key))
    }

    /// The symbolic values among a node's inputs, by input position.
    pub(crate) fn symbolic_inputs(&self, node: NodeId) -> Vec<(usize, SymValue)> {
        self.graph
            .node_inputs(node)
            .iter()
            .enumerate()
            .filter_map(|(i, v)| self.sym_values.get(v).map(|s| (i, s.clone())))
            .collect()
    }

    /// A node whose inputs include symbolic ints and that is not an operator on tensors:
    /// lists of them, their unpacking and indexing, and int arithmetic. Anything else that
    /// reads a dynamic size is refused (it would make the size static).
    pub(crate) fn run_symbolic_node(
        &mut self,
        node: NodeId,
        symbolic: Vec<(usize, SymValue)>,
    ) -> Result<()> {
        let kind = self.graph.kind(node).clone();
        let outputs = self.graph.node_outputs(node).to_vec();
        let refuse = |this: &Self, what: &str| {
            Err(this.node_error(
                node,
                format!(
                    "it {what} a size of a dynamic dimension ({}), which the converter cannot \
                     express symbolically",
                    symbolic
                        .iter()
                        .map(|(_, s)| match s {
                            SymValue::Int(scalar) => scalar.dim.expression(),
                            SymValue::List(_) => "a list of sizes".to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ))
        };
        if self.in_subgraph() {
            return refuse(self, "uses, inside a data-dependent branch,");
        }
        match kind.prim() {
            Some(Prim::ListConstruct) => {
                let items = self.static_inputs(node)?;
                let mut entries = vec![None; items.len()];
                for (index, value) in &symbolic {
                    match value {
                        SymValue::Int(scalar) => entries[*index] = Some(scalar.clone()),
                        SymValue::List(_) => return refuse(self, "nests in a list"),
                    }
                }
                let element = match self.graph.value_type(outputs[0]) {
                    Type::List(element) => element.as_ref().clone(),
                    _ => Type::Any,
                };
                self.set_outputs(node, vec![IValue::List(ListValue::new(element, items))])?;
                self.sym_values.insert(outputs[0], SymValue::List(entries));
                return Ok(());
            }
            Some(Prim::ListUnpack) => {
                let [(0, SymValue::List(entries))] = symbolic.as_slice() else {
                    return refuse(self, "unpacks");
                };
                let entries = entries.clone();
                let items = self.static_inputs(node)?;
                let Some(IValue::List(list)) = items.first() else {
                    return refuse(self, "unpacks");
                };
                let values = list.to_vec();
                if values.len() != outputs.len() {
                    return Err(self.node_error(node, "unpacks the wrong number of sizes"));
                }
                self.set_outputs(node, values)?;
                for (output, entry) in outputs.iter().zip(entries) {
                    if let Some(scalar) = entry {
                        self.sym_values.insert(*output, SymValue::Int(scalar));
                    }
                }
                return Ok(());
            }
            _ => {}
        }
        let name = kind.as_str().to_string();
        match name.as_str() {
            "aten::__getitem__" => {
                let inputs = self.static_inputs(node)?;
                let [(0, SymValue::List(entries))] = symbolic.as_slice() else {
                    return refuse(self, "indexes with");
                };
                let (Some(IValue::List(list)), Some(IValue::Int(index))) =
                    (inputs.first(), inputs.get(1))
                else {
                    return refuse(self, "indexes");
                };
                let length = list.to_vec().len() as i64;
                let position = if *index < 0 { index + length } else { *index };
                let position = usize::try_from(position)
                    .ok()
                    .filter(|p| *p < entries.len())
                    .ok_or_else(|| self.node_error(node, "list index out of range"))?;
                let entry = entries[position].clone();
                self.set_outputs(node, vec![list.to_vec()[position].clone()])?;
                if let Some(scalar) = entry {
                    self.sym_values.insert(outputs[0], SymValue::Int(scalar));
                }
                Ok(())
            }
            "aten::mul" | "aten::floordiv" => {
                let inputs = self.static_inputs(node)?;
                let operand = |index: usize| -> Option<(Argument, Dim)> {
                    match symbolic.iter().find(|(i, _)| *i == index) {
                        Some((_, SymValue::Int(scalar))) => Some((
                            Argument::SymInt(SymArgument::Name(scalar.name.clone())),
                            scalar.dim.clone(),
                        )),
                        Some(_) => None,
                        None => match inputs.get(index) {
                            Some(IValue::Int(value)) => {
                                Some((Argument::Int(*value), Dim::Static(*value)))
                            }
                            _ => None,
                        },
                    }
                };
                let (Some((left, a)), Some((right, b))) = (operand(0), operand(1)) else {
                    return refuse(self, "does arithmetic other than on ints with");
                };
                let (result, target) = if name == "aten::mul" {
                    (a.times(&b), "_operator.mul")
                } else {
                    (a.divided_by(&b), "_operator.floordiv")
                };
                let Some(result) = result else {
                    return refuse(self, "computes a size not of the form k*symbol from");
                };
                let results = self.run_operator_kernel(node)?;
                if results.first().and_then(|v| v.to_int().ok()) != Some(result.example()) {
                    return Err(
                        self.node_error(node, "its symbolic result disagrees with the example")
                    );
                }
                self.set_outputs(node, results)?;
                let scalar =
                    self.emit_symbolic_int(node, target, vec![("a", left), ("b", right)], result);
                self.sym_values.insert(outputs[0], SymValue::Int(scalar));
                Ok(())
            }
            _ => refuse(self, "reads"),
        }
    }

    /// Emits a node whose one output is a symbolic int with value `dim`.
    fn emit_symbolic_int(
        &mut self,
        node: NodeId,
        target: &str,
        arguments: Vec<(&str, Argument)>,
        dim: Dim,
    ) -> SymScalar {
        let base = target.rsplit('.').next().unwrap_or(target).to_string();
        let base = if target.starts_with("torch.ops.aten.sym_size") {
            "sym_size_int".to_string()
        } else {
            base
        };
        let name = self.fresh_name(&base);
        let metadata = self.node_metadata(node);
        let positional = !target.starts_with('_');
        self.push_node(Node {
            target: target.to_string(),
            inputs: arguments
                .into_iter()
                .map(|(formal, arg)| NamedArgument {
                    name: formal.to_string(),
                    arg,
                    kind: positional.then_some(ArgumentKind::Positional),
                })
                .collect(),
            outputs: vec![Argument::SymInt(SymArgument::Name(name.clone()))],
            metadata,
            is_hop_single_tensor_return: None,
            name: Some(name.clone()),
        });
        self.scopes
            .last_mut()
            .expect("the top scope always exists")
            .sym_int_values
            .insert(name.clone(), dim.sym_int());
        SymScalar { name, dim }
    }

    /// `aten::size.int` / `aten::size` on a tensor with dynamic sizes: a `sym_size.int` node
    /// for each dynamic dimension read. Returns false when the tensor's sizes are static.
    pub(crate) fn run_symbolic_size(&mut self, node: NodeId, stack: &[IValue]) -> Result<bool> {
        let Some(tensor) = stack.first().filter(|v| self.is_symbolic_tensor(v)) else {
            return Ok(false);
        };
        let tensor = tensor.clone();
        let dims = self.dims_of(&tensor).unwrap_or_default();
        let tensor_name = self.tensor_name(&tensor)?;
        let outputs = self.graph.node_outputs(node).to_vec();
        if self.in_subgraph() {
            return Err(
                self.node_error(node, "reads a dynamic size inside a data-dependent branch")
            );
        }
        let read = |this: &mut Self, index: usize| -> Option<SymScalar> {
            let dim = dims[index].clone();
            dim.is_symbolic().then(|| {
                this.emit_symbolic_int(
                    node,
                    "torch.ops.aten.sym_size.int",
                    vec![
                        ("self", Argument::Tensor(tensor_name.clone())),
                        ("dim", Argument::Int(index as i64)),
                    ],
                    dim,
                )
            })
        };
        match stack.get(1) {
            Some(IValue::Int(_)) => {
                let index = dim_index(stack.get(1), dims.len())
                    .ok_or_else(|| self.node_error(node, "dimension out of range"))?;
                let value = IValue::Int(dims[index].example());
                self.set_outputs(node, vec![value])?;
                if let Some(scalar) = read(self, index) {
                    self.sym_values.insert(outputs[0], SymValue::Int(scalar));
                }
            }
            _ => {
                let mut entries = Vec::new();
                for index in 0..dims.len() {
                    entries.push(read(self, index));
                }
                let sizes: Vec<i64> = dims.iter().map(Dim::example).collect();
                self.set_outputs(node, vec![IValue::int_list(&sizes)])?;
                self.sym_values.insert(outputs[0], SymValue::List(entries));
            }
        }
        Ok(true)
    }

    /// Records the symbolic sizes of an operator's tensor results, when an argument has
    /// dynamic sizes or is a symbolic int. `arguments` are in the schema's order; `symbolic`
    /// maps argument positions to their symbolic values.
    pub(crate) fn record_result_sizes(
        &mut self,
        node: NodeId,
        base: &str,
        arguments: &[IValue],
        symbolic: &[(usize, SymValue)],
        made: &[IValue],
    ) -> Result<()> {
        let base = base.trim_end_matches('_');
        let tensor_dims: Vec<(usize, Vec<Dim>)> = arguments
            .iter()
            .enumerate()
            .flat_map(|(i, v)| match v {
                IValue::Tensor(_) => vec![(i, v.clone())],
                IValue::List(list) => list.to_vec().into_iter().map(|t| (i, t)).collect(),
                _ => Vec::new(),
            })
            .filter(|(_, v)| self.is_symbolic_tensor(v))
            .filter_map(|(i, v)| self.dims_of(&v).map(|d| (i, d)))
            .collect();
        if tensor_dims.is_empty() && symbolic.is_empty() {
            return Ok(());
        }
        let outputs: Vec<(IValue, Vec<usize>)> = made
            .iter()
            .filter_map(|v| v.to_tensor().ok().map(|t| (v.clone(), t.sizes().to_vec())))
            .collect();
        let sym_list = |index: usize| -> Option<Vec<Option<SymScalar>>> {
            symbolic.iter().find_map(|(i, s)| match s {
                SymValue::List(entries) if *i == index => Some(entries.clone()),
                _ => None,
            })
        };
        let int_list_dims = |index: usize| -> Option<Vec<Dim>> {
            let values = arguments.get(index)?.to_int_vec().ok()?;
            let symbols = sym_list(index);
            Some(
                values
                    .iter()
                    .enumerate()
                    .map(|(k, v)| {
                        symbols
                            .as_ref()
                            .and_then(|s| s.get(k).cloned().flatten())
                            .map_or(Dim::Static(*v), |s| s.dim)
                    })
                    .collect(),
            )
        };
        let arg_dims = |index: usize| arguments.get(index).and_then(|v| self.dims_of(v));
        // Which input dimension is dynamic, for the message.
        let cause = tensor_dims
            .iter()
            .find_map(|(i, dims)| {
                dims.iter()
                    .enumerate()
                    .find(|(_, d)| d.is_symbolic())
                    .map(|(k, d)| format!("dimension {k} of argument {i} is {}", d.expression()))
            })
            .unwrap_or_else(|| "an argument is a size of a dynamic dimension".to_string());
        let refuse = |this: &Self, dimension: String| {
            Err(this.node_error(
                node,
                format!(
                    "cannot express {dimension} of the result of aten::{base} symbolically \
                     ({cause})"
                ),
            ))
        };
        let single = match outputs.as_slice() {
            [(_, sizes)] => sizes.clone(),
            _ => return refuse(self, "the sizes of several results".to_string()),
        };
        let rank = single.len();
        let all_dims: Vec<Vec<Dim>> = arguments
            .iter()
            .filter(|v| matches!(v, IValue::Tensor(_)))
            .filter_map(|v| self.dims_of(v))
            .collect();
        let dims: Option<Vec<Dim>> = if rank == 0 {
            // A full reduction (`x.sum()`): no sizes to follow.
            Some(Vec::new())
        } else if ELEMENTWISE.contains(&base) {
            Some(broadcast(&all_dims, &single))
        } else if BATCH_OPERATORS.contains(&base) {
            let input = if base == "embedding" {
                arg_dims(1)
            } else {
                arg_dims(0)
            };
            match input {
                Some(input)
                    if base == "embedding" || input.iter().skip(1).all(|d| !d.is_symbolic()) =>
                {
                    let mut dims: Vec<Dim> =
                        single.iter().map(|&s| Dim::Static(s as i64)).collect();
                    if base == "embedding" {
                        for (k, d) in input.iter().enumerate() {
                            dims[k] = d.clone();
                        }
                    } else if let Some(first) = input.first() {
                        dims[0] = first.clone();
                    }
                    Some(dims)
                }
                _ => None,
            }
        } else {
            match base {
                "linear" => arg_dims(0).map(|input| {
                    let mut dims = input[..input.len().saturating_sub(1)].to_vec();
                    dims.push(Dim::Static(single[rank - 1] as i64));
                    dims
                }),
                "mm" | "addmm" | "matmul" | "bmm" | "baddbmm" => {
                    let offset = usize::from(base == "addmm" || base == "baddbmm");
                    match (arg_dims(offset), arg_dims(offset + 1)) {
                        (Some(a), Some(b)) if a.len() >= 2 && b.len() == 2 => {
                            let mut dims = a[..a.len() - 1].to_vec();
                            dims.push(b[1].clone());
                            Some(dims)
                        }
                        (Some(a), Some(b)) if a.len() >= 2 && b.len() == 1 => {
                            Some(a[..a.len() - 1].to_vec())
                        }
                        (Some(a), Some(b)) if a.len() == 3 && b.len() == 3 => {
                            Some(vec![a[0].clone(), a[1].clone(), b[2].clone()])
                        }
                        _ => None,
                    }
                }
                "sum" | "mean" | "amax" | "amin" | "prod" | "std" | "var" => {
                    let input = arg_dims(0).unwrap_or_default();
                    let reduced = arguments.get(1).and_then(|v| {
                        v.to_int_vec()
                            .ok()
                            .or_else(|| v.to_int().ok().map(|d| vec![d]))
                    });
                    let keepdim = arguments
                        .get(2)
                        .and_then(|v| v.to_bool().ok())
                        .unwrap_or(false);
                    reduced.map(|reduced| {
                        let reduced: Vec<usize> = reduced
                            .iter()
                            .filter_map(|d| dim_index(Some(&IValue::Int(*d)), input.len()))
                            .collect();
                        let mut dims = Vec::new();
                        for (k, d) in input.iter().enumerate() {
                            if reduced.is_empty() || reduced.contains(&k) {
                                if keepdim {
                                    dims.push(Dim::Static(1));
                                }
                            } else {
                                dims.push(d.clone());
                            }
                        }
                        dims
                    })
                }
                "view" | "reshape" | "unsafe_view" => {
                    let input = arg_dims(0).unwrap_or_default();
                    let target = int_list_dims(1).unwrap_or_default();
                    let total = product(&input);
                    let known: Vec<Dim> = target
                        .iter()
                        .filter(|d| d.example() != -1)
                        .cloned()
                        .collect();
                    match (total, product(&known)) {
                        (Some(total), Some(known_product)) => {
                            let inferred = total.divided_by(&known_product);
                            let unknown = target.iter().any(|d| d.example() == -1);
                            if !unknown && total.is_symbolic() != known_product.is_symbolic() {
                                None
                            } else {
                                target
                                    .iter()
                                    .map(|d| {
                                        if d.example() == -1 {
                                            inferred.clone()
                                        } else {
                                            Some(d.clone())
                                        }
                                    })
                                    .collect()
                            }
                        }
                        _ => None,
                    }
                }
                "flatten" => {
                    let input = arg_dims(0).unwrap_or_default();
                    let start = dim_index(arguments.get(1), input.len()).unwrap_or(0);
                    let end = dim_index(arguments.get(2), input.len()).unwrap_or(0);
                    if input.is_empty() {
                        Some(Vec::new())
                    } else {
                        product(&input[start..=end.max(start)]).map(|middle| {
                            let mut dims = input[..start].to_vec();
                            dims.push(middle);
                            dims.extend_from_slice(&input[end.max(start) + 1..]);
                            dims
                        })
                    }
                }
                "cat" | "concat" => {
                    let parts: Vec<Vec<Dim>> = match arguments.first() {
                        Some(IValue::List(list)) => list
                            .to_vec()
                            .iter()
                            .filter_map(|t| self.dims_of(t))
                            .filter(|d| !(d.len() == 1 && d[0].example() == 0))
                            .collect(),
                        _ => Vec::new(),
                    };
                    let dim = dim_index(arguments.get(1), rank);
                    match (parts.first(), dim) {
                        (Some(first), Some(dim)) => {
                            let mut dims = first.clone();
                            let mut total = Dim::Static(0);
                            let mut ok = true;
                            for part in &parts {
                                match part.get(dim).and_then(|d| {
                                    total
                                        .plus(d)
                                        .or_else(|| (total.example() == 0).then(|| d.clone()))
                                }) {
                                    Some(sum) => total = sum,
                                    None => ok = false,
                                }
                            }
                            dims[dim] = total;
                            ok.then_some(dims)
                        }
                        _ => None,
                    }
                }
                "transpose" | "t" | "permute" | "unsqueeze" | "squeeze" | "select" => {
                    let input = arg_dims(0).unwrap_or_default();
                    let mut dims = input.clone();
                    match base {
                        "t" if input.len() == 2 => dims.reverse(),
                        "transpose" => {
                            let a = dim_index(arguments.get(1), input.len());
                            let b = dim_index(arguments.get(2), input.len());
                            if let (Some(a), Some(b)) = (a, b) {
                                dims.swap(a, b);
                            }
                        }
                        "permute" => {
                            let order = arguments.get(1).and_then(|v| v.to_int_vec().ok());
                            if let Some(order) = order {
                                dims = order
                                    .iter()
                                    .filter_map(|d| dim_index(Some(&IValue::Int(*d)), input.len()))
                                    .map(|d| input[d].clone())
                                    .collect();
                            }
                        }
                        "unsqueeze" => {
                            if let Some(at) = dim_index(arguments.get(1), input.len() + 1) {
                                dims.insert(at, Dim::Static(1));
                            }
                        }
                        "squeeze" => dims.retain(|d| d.is_symbolic() || d.example() != 1),
                        "select" => {
                            if let Some(at) = dim_index(arguments.get(1), input.len()) {
                                if input[at].is_symbolic() {
                                    return refuse(self, format!("dimension {at} (selected)"));
                                }
                                dims.remove(at);
                            }
                        }
                        _ => {}
                    }
                    Some(dims)
                }
                _ if FACTORIES.contains(&base) => int_list_dims(0),
                // The written base keeps its sizes.
                "select_scatter" | "slice_scatter" => arg_dims(0),
                "slice" => {
                    // A slice of a static dimension is static; of a dynamic one, only the
                    // whole of it (start 0, step 1, to the end) keeps the symbol.
                    let input = arg_dims(0).unwrap_or_default();
                    let at = dim_index(arguments.get(1), input.len());
                    match at {
                        Some(at) if input[at].is_symbolic() => {
                            let start = arguments.get(2).and_then(|v| v.to_int().ok()).unwrap_or(0);
                            let step = arguments.get(4).and_then(|v| v.to_int().ok()).unwrap_or(1);
                            if start == 0 && step == 1 && single[at] as i64 == input[at].example() {
                                Some(input)
                            } else {
                                return refuse(self, format!("dimension {at} (sliced)"));
                            }
                        }
                        Some(at) => {
                            let mut dims = input;
                            dims[at] = Dim::Static(single[at] as i64);
                            Some(dims)
                        }
                        None => None,
                    }
                }
                "expand" => {
                    // -1 keeps the input's size; new leading dimensions come first.
                    let input = arg_dims(0).unwrap_or_default();
                    int_list_dims(1).map(|target| {
                        let leading = target.len().saturating_sub(input.len());
                        target
                            .iter()
                            .enumerate()
                            .map(|(k, d)| match (d.example(), k.checked_sub(leading)) {
                                (-1, Some(i)) => input[i].clone(),
                                (_, Some(i)) if input[i].is_symbolic() && !d.is_symbolic() => {
                                    input[i].clone()
                                }
                                _ => d.clone(),
                            })
                            .collect()
                    })
                }
                _ => None,
            }
        };
        let Some(dims) = dims else {
            return refuse(self, "the sizes".to_string());
        };
        if dims.len() != rank {
            return refuse(self, format!("the rank ({rank})"));
        }
        for (index, (dim, &size)) in dims.iter().zip(&single).enumerate() {
            if dim.example() != size as i64 {
                return refuse(self, format!("dimension {index}"));
            }
        }
        if let (Some(key), true) = (cell_key(&outputs[0].0), dims.iter().any(Dim::is_symbolic)) {
            self.symbolic_sizes.insert(key, dims);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s0(hint: i64) -> Dim {
        Dim::Symbolic {
            coefficient: 1,
            symbol: "s0".into(),
            hint,
        }
    }

    fn texts(strides: Vec<SymInt>) -> Vec<String> {
        strides
            .into_iter()
            .map(|s| match s {
                SymInt::Int(v) => v.to_string(),
                SymInt::Expr(e) => e.expr_str,
            })
            .collect()
    }

    #[test]
    fn strides_follow_the_layout_of_the_example() {
        let s1 = Dim::Symbolic {
            coefficient: 1,
            symbol: "s1".into(),
            hint: 7,
        };
        // Contiguous [s0, 3, 4].
        let dims = [s0(5), Dim::Static(3), Dim::Static(4)];
        assert_eq!(
            texts(symbolic_strides(&dims, &[12, 4, 1]).unwrap()),
            ["12", "4", "1"]
        );
        // Transposed [4, s0] of a contiguous [s0, 4]: strides [1, 4].
        let strides = symbolic_strides(&[Dim::Static(4), s0(5)], &[1, 4]).unwrap();
        assert_eq!(texts(strides), ["1", "4"]);
        // [3, s0]: the outer stride is the symbol.
        let strides = symbolic_strides(&[Dim::Static(3), s0(5)], &[5, 1]).unwrap();
        assert_eq!(texts(strides), ["s0", "1"]);
        // Two symbols: [4, s0, s1] contiguous has strides [s0*s1, s1, 1].
        let strides = symbolic_strides(&[Dim::Static(4), s0(5), s1.clone()], &[35, 7, 1]).unwrap();
        assert_eq!(texts(strides), ["s0*s1", "s1", "1"]);
        // An expanded batch has stride 0.
        let strides = symbolic_strides(&[s0(5), Dim::Static(4)], &[0, 1]).unwrap();
        assert_eq!(texts(strides), ["0", "1"]);
        // A slice [s0, 2] of a contiguous [s0, 4]: the outer stride stays 4.
        let strides = symbolic_strides(&[s0(5), Dim::Static(2)], &[4, 1]).unwrap();
        assert_eq!(texts(strides), ["4", "1"]);
        // A slice [s0, s1, 2] of a contiguous [s0, s1, 4]: strides [4*s1, 4, 1].
        let strides = symbolic_strides(&[s0(5), s1.clone(), Dim::Static(2)], &[28, 4, 1]).unwrap();
        assert_eq!(texts(strides), ["4*s1", "4", "1"]);
        // A stride that is no multiple of the symbol cannot be written symbolically.
        let error = symbolic_strides(&[Dim::Static(3), s0(5)], &[7, 1]).unwrap_err();
        assert!(error.contains("dimension 0"), "{error}");
    }
}
