//! The batch norm a fold removes, read from its constant inputs, as PyTorch's conv and
//! linear batch-norm folds read it: a missing weight reads as ones, a missing bias as
//! zeros (both shaped like the running mean).

use ferrojit_ir::{Graph, NodeId};
use ferrojit_runtime::IValue;
use ferrojit_tensor::Tensor;

use super::operator_calls::{
    call_tensor_operator, constant_bool, constant_double, constant_tensor, is_none, tensor_argument,
};

/// `aten::batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
/// eps, cudnn_enabled)`, with every parameter a constant.
pub struct BatchNormParameters {
    pub weight: Tensor,
    pub bias: Tensor,
    pub running_mean: Tensor,
    pub running_var: Tensor,
    pub eps: f64,
}

impl BatchNormParameters {
    /// The parameters of `node`, or `None` when it is not a batch norm in eval mode with
    /// constant running statistics (PyTorch skips those with no running statistics).
    pub fn read(graph: &Graph, node: NodeId) -> Result<Option<BatchNormParameters>, String> {
        if !graph.kind(node).is("aten::batch_norm") {
            return Ok(None);
        }
        let inputs = graph.node_inputs(node);
        let [_, weight, bias, running_mean, running_var, training, _, eps, _] = inputs[..] else {
            return Ok(None);
        };
        // A batch norm that normalizes with the batch's statistics does not fold.
        if constant_bool(graph, training) != Some(false) {
            return Ok(None);
        }
        let (Some(running_mean), Some(running_var), Some(eps)) = (
            constant_tensor(graph, running_mean),
            constant_tensor(graph, running_var),
            constant_double(graph, eps),
        ) else {
            return Ok(None);
        };
        let running_mean = running_mean.as_ref().clone();
        let like = |name: &str| call_tensor_operator(name, vec![tensor_argument(&running_mean)]);
        let weight = if is_none(graph, weight) {
            like("aten::ones_like")?
        } else {
            match constant_tensor(graph, weight) {
                Some(weight) => weight.as_ref().clone(),
                None => return Ok(None),
            }
        };
        let bias = if is_none(graph, bias) {
            like("aten::zeros_like")?
        } else {
            match constant_tensor(graph, bias) {
                Some(bias) => bias.as_ref().clone(),
                None => return Ok(None),
            }
        };
        Ok(Some(BatchNormParameters {
            weight,
            bias,
            running_mean,
            running_var: running_var.as_ref().clone(),
            eps,
        }))
    }

    /// `rsqrt(running_var + eps)`.
    pub fn var_rsqrt(&self) -> Result<Tensor, String> {
        let shifted = call_tensor_operator(
            "aten::add.Scalar",
            vec![
                tensor_argument(&self.running_var),
                IValue::Double(self.eps),
                IValue::Int(1),
            ],
        )?;
        call_tensor_operator("aten::rsqrt", vec![tensor_argument(&shifted)])
    }
}

/// `a * b` (`aten::mul.Tensor`).
pub fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor, String> {
    call_tensor_operator(
        "aten::mul.Tensor",
        vec![tensor_argument(a), tensor_argument(b)],
    )
}

/// `a + b` (`aten::add.Tensor`).
pub fn add(a: &Tensor, b: &Tensor) -> Result<Tensor, String> {
    call_tensor_operator(
        "aten::add.Tensor",
        vec![tensor_argument(a), tensor_argument(b), IValue::Int(1)],
    )
}

/// `a - b` (`aten::sub.Tensor`).
pub fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor, String> {
    call_tensor_operator(
        "aten::sub.Tensor",
        vec![tensor_argument(a), tensor_argument(b), IValue::Int(1)],
    )
}
