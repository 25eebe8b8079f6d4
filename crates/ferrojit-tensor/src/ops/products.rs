//! More products built on the matrix kernels: `outer`, `baddbmm`, `addbmm`, `tensordot` and
//! `einsum` (pairwise contraction through batched matrix products).

use crate::dtype::Scalar;
use crate::error::{format_shape, Result, TensorError};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

fn invalid(message: String) -> TensorError {
    TensorError::InvalidArgument(message)
}

impl Tensor {
    /// `torch.outer(self, vec2)`: the outer product of two 1-D tensors.
    pub fn outer(&self, vec2: &Tensor) -> Result<Tensor> {
        if self.dim() != 1 || vec2.dim() != 1 {
            return Err(invalid(format!(
                "outer: expected 1-D tensors, but got {}-D and {}-D tensors",
                self.dim(),
                vec2.dim()
            )));
        }
        self.unsqueeze(1)?.mul(&vec2.unsqueeze(0)?)
    }

    /// `beta * self + alpha * bmm(batch1, batch2)` with `self` broadcast to the product.
    pub fn baddbmm(
        &self,
        batch1: &Tensor,
        batch2: &Tensor,
        beta: &Scalar,
        alpha: &Scalar,
    ) -> Result<Tensor> {
        let product = batch1.bmm(batch2)?;
        combine_scaled(self, &product, beta, alpha)
    }

    /// `beta * self + alpha * sum_b(batch1[b] @ batch2[b])`.
    pub fn addbmm(
        &self,
        batch1: &Tensor,
        batch2: &Tensor,
        beta: &Scalar,
        alpha: &Scalar,
    ) -> Result<Tensor> {
        let product = batch1.bmm(batch2)?;
        let summed = if product.sizes()[0] == 0 {
            Tensor::zeros(&product.sizes()[1..], product.dtype())?
        } else {
            product.sum_dim(&[0], false, None)?
        };
        combine_scaled(self, &summed, beta, alpha)
    }

    /// `torch.tensordot(a, b, dims_a, dims_b)`: contracts the listed dims pairwise.
    pub fn tensordot(&self, other: &Tensor, dims_a: &[i64], dims_b: &[i64]) -> Result<Tensor> {
        if dims_a.len() != dims_b.len() {
            return Err(invalid(
                "both dimension lists should have same length".to_string(),
            ));
        }
        let mut contract_a = Vec::new();
        let mut contract_b = Vec::new();
        let mut size = 1usize;
        // A contracted dim of size 1 on one side broadcasts: the other side is summed over
        // it first (keeping the dim), as ATen's tensordot does.
        let mut left = self.clone();
        let mut right = other.clone();
        for (&da, &db) in dims_a.iter().zip(dims_b) {
            let a = wrap_dim(da, self.dim())?;
            let b = wrap_dim(db, other.dim())?;
            let (mut sa, mut sb) = (left.sizes()[a], right.sizes()[b]);
            if sb == 1 && sa != 1 {
                left = left.sum_dim(&[a as i64], true, Some(left.dtype()))?;
                sa = 1;
            } else if sa == 1 && sb != 1 {
                right = right.sum_dim(&[b as i64], true, Some(right.dtype()))?;
                sb = 1;
            }
            if sa != sb {
                return Err(invalid(format!(
                    "contracted dimensions need to match, but first has size {sa} in dim {a} and second has size {sb} in dim {b}"
                )));
            }
            if contract_a.contains(&a) || contract_b.contains(&b) {
                return Err(invalid(
                    "dim appears multiple times in the list of dims".to_string(),
                ));
            }
            contract_a.push(a);
            contract_b.push(b);
            size *= sa;
        }
        let (this, other) = (&left, &right);
        let free_a: Vec<usize> = (0..this.dim())
            .filter(|d| !contract_a.contains(d))
            .collect();
        let free_b: Vec<usize> = (0..other.dim())
            .filter(|d| !contract_b.contains(d))
            .collect();
        let perm_a: Vec<i64> = free_a
            .iter()
            .chain(&contract_a)
            .map(|&d| d as i64)
            .collect();
        let perm_b: Vec<i64> = contract_b
            .iter()
            .chain(&free_b)
            .map(|&d| d as i64)
            .collect();
        let rows: usize = free_a.iter().map(|&d| this.sizes()[d]).product();
        let cols: usize = free_b.iter().map(|&d| other.sizes()[d]).product();
        let a = this.permute(&perm_a)?.reshape_usize(&[rows, size])?;
        let b = other.permute(&perm_b)?.reshape_usize(&[size, cols])?;
        let mut out_sizes: Vec<usize> = free_a.iter().map(|&d| this.sizes()[d]).collect();
        out_sizes.extend(free_b.iter().map(|&d| other.sizes()[d]));
        a.mm(&b)?.reshape_usize(&out_sizes)
    }
}

pub(crate) fn combine_scaled(
    bias: &Tensor,
    product: &Tensor,
    beta: &Scalar,
    alpha: &Scalar,
) -> Result<Tensor> {
    let bias = bias.broadcast_to(product.sizes()).map_err(|_| {
        invalid(format!(
            "The expanded size of the tensor must match the existing size: self {} vs product {}",
            format_shape(bias.sizes()),
            format_shape(product.sizes())
        ))
    })?;
    // On integer products PyTorch converts beta and alpha to the integer type first
    // (truncating: beta=0.6 is 0), so the result keeps the integer dtype.
    let (beta, alpha) = if product.dtype().is_integral(false) {
        (&Scalar::Int(beta.to_i64()), &Scalar::Int(alpha.to_i64()))
    } else {
        (beta, alpha)
    };
    let scaled = if *alpha == Scalar::Int(1) {
        product.clone()
    } else {
        product.mul(&Tensor::wrapped_scalar(*alpha))?
    };
    if beta.is_zero() {
        // beta == 0 ignores `self` entirely (NaN in it must not propagate).
        return Ok(scaled.contiguous());
    }
    let scaled_bias = if *beta == Scalar::Int(1) {
        bias
    } else {
        bias.mul(&Tensor::wrapped_scalar(*beta))?
    };
    scaled_bias.add(&scaled, &Scalar::Int(1))
}

/// One operand of an einsum: its tensor view and one label per dim (no repeats).
struct Operand {
    tensor: Tensor,
    labels: Vec<char>,
}

/// `torch.einsum(equation, operands)`. Supports explicit (`->`) and implicit output, `...`,
/// repeated labels (diagonals) and any number of operands (contracted left to right).
pub fn einsum(equation: &str, operands: &[Tensor]) -> Result<Tensor> {
    let equation: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match equation.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (equation.clone(), None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    if terms.len() != operands.len() {
        return Err(invalid(
            "einsum(): more operands were provided than specified in the equation"
                .to_string()
                .replace(
                    "more",
                    if terms.len() > operands.len() {
                        "fewer"
                    } else {
                        "more"
                    },
                ),
        ));
    }
    // Ellipsis dims get private labels from a range no letter uses.
    let ellipsis_label = |i: usize| char::from_u32(0x10000 + i as u32).unwrap_or('?');
    let mut max_ellipsis = 0usize;
    let mut parsed: Vec<Operand> = Vec::new();
    for (term, tensor) in terms.iter().zip(operands) {
        let letters = term.replace("...", "");
        if letters.chars().any(|c| !c.is_ascii_alphabetic()) {
            return Err(invalid(format!(
                "einsum(): invalid subscript given at index {} in the equation string, subscripts must be in [a-zA-Z]",
                term.len()
            )));
        }
        let has_ellipsis = term.contains("...");
        let named = letters.chars().count();
        if (!has_ellipsis && named != tensor.dim()) || (has_ellipsis && named > tensor.dim()) {
            return Err(invalid(format!(
                "einsum(): the number of subscripts in the equation ({named}) does not match the number of dimensions ({}) for operand {} and no ellipsis was given",
                tensor.dim(),
                parsed.len()
            )));
        }
        let ellipsis_dims = tensor.dim() - named;
        max_ellipsis = max_ellipsis.max(ellipsis_dims);
        let mut labels = Vec::new();
        let (before, after) = term.split_once("...").unwrap_or((term, ""));
        labels.extend(before.chars());
        if has_ellipsis {
            // Right-aligned so ellipsis dims broadcast like ordinary broadcasting.
            labels.extend((0..ellipsis_dims).map(|i| ellipsis_label(i + 1000 - ellipsis_dims)));
        }
        labels.extend(after.chars());
        parsed.push(Operand {
            tensor: tensor.clone(),
            labels,
        });
    }
    let ellipsis_labels: Vec<char> = (0..max_ellipsis)
        .map(|i| ellipsis_label(i + 1000 - max_ellipsis))
        .collect();
    let output: Vec<char> = match rhs {
        Some(r) => {
            let (before, after) = r.split_once("...").unwrap_or((&r, ""));
            let mut out: Vec<char> = before.chars().collect();
            if r.contains("...") {
                out.extend(&ellipsis_labels);
            }
            out.extend(after.chars());
            out
        }
        None => {
            // Implicit output: ellipsis dims, then labels seen exactly once, alphabetically.
            let mut counts: std::collections::BTreeMap<char, usize> = Default::default();
            for op in &parsed {
                for &l in &op.labels {
                    if l.is_ascii_alphabetic() {
                        *counts.entry(l).or_default() += 1;
                    }
                }
            }
            let mut out = ellipsis_labels.clone();
            let mut singles: Vec<char> = counts
                .into_iter()
                .filter(|&(_, n)| n == 1)
                .map(|(l, _)| l)
                .collect();
            singles.sort_by_key(|c| (c.is_ascii_lowercase(), *c));
            out.extend(singles);
            out
        }
    };
    // Label sizes (size-1 broadcasts) and validation.
    let mut sizes: std::collections::HashMap<char, usize> = Default::default();
    for op in &parsed {
        for (&l, &s) in op.labels.iter().zip(op.tensor.sizes()) {
            let entry = sizes.entry(l).or_insert(s);
            if *entry == 1 {
                *entry = s;
            } else if s != 1 && s != *entry {
                return Err(invalid(format!(
                    "einsum(): operands do not broadcast with remapped shapes (original->remapped): {} and {}",
                    format_shape(op.tensor.sizes()),
                    format_shape(&[*entry])
                )));
            }
        }
    }
    for &l in &output {
        if !sizes.contains_key(&l) {
            return Err(invalid(format!(
                "einsum(): output subscript {l} does not appear in the equation for any input operand"
            )));
        }
    }
    // Take diagonals for repeated labels, then broadcast size-1 dims to the label size.
    for op in parsed.iter_mut() {
        take_diagonals(op)?;
        let target: Vec<usize> = op.labels.iter().map(|l| sizes[l]).collect();
        op.tensor = op.tensor.broadcast_to(&target)?;
    }
    let mut current = parsed.remove(0);
    let mut rest: Vec<Operand> = parsed;
    loop {
        // Labels still needed after this step: the output and the remaining operands.
        let needed = |l: &char, rest: &[Operand]| {
            output.contains(l) || rest.iter().any(|o| o.labels.contains(l))
        };
        if rest.is_empty() {
            current = sum_unneeded(current, |l| output.contains(l))?;
            break;
        }
        let next = rest.remove(0);
        current = sum_unneeded(current, |l| needed(l, &rest) || next.labels.contains(l))?;
        let next = sum_unneeded(next, |l| needed(l, &rest) || current.labels.contains(l))?;
        current = contract_pair(current, next, |l| needed(l, &rest), &sizes)?;
    }
    let perm: Vec<i64> = output
        .iter()
        .map(|l| current.labels.iter().position(|x| x == l).unwrap_or(0) as i64)
        .collect();
    if current.labels.len() != output.len() {
        return Err(invalid(
            "einsum(): output subscript appears more than once".to_string(),
        ));
    }
    Ok(current.tensor.permute(&perm)?.contiguous())
}

/// Replaces repeated labels of one operand by the diagonal view.
fn take_diagonals(op: &mut Operand) -> Result<()> {
    let mut labels: Vec<char> = Vec::new();
    let mut sizes: Vec<usize> = Vec::new();
    let mut strides: Vec<usize> = Vec::new();
    for (i, &l) in op.labels.iter().enumerate() {
        let (s, st) = (op.tensor.sizes()[i], op.tensor.strides()[i]);
        if let Some(p) = labels.iter().position(|&x| x == l) {
            if sizes[p] != s {
                return Err(invalid(format!(
                    "einsum(): subscript {l} is repeated for operand but the sizes don't match, {} != {s}",
                    sizes[p]
                )));
            }
            strides[p] += st;
        } else {
            labels.push(l);
            sizes.push(s);
            strides.push(st);
        }
    }
    if labels.len() != op.labels.len() {
        op.tensor = op
            .tensor
            .with_geometry(sizes, strides, op.tensor.storage_offset());
        op.labels = labels;
    }
    Ok(())
}

/// Sums out labels of one operand that nothing later needs.
fn sum_unneeded(op: Operand, keep: impl Fn(&char) -> bool) -> Result<Operand> {
    let drop: Vec<i64> = op
        .labels
        .iter()
        .enumerate()
        .filter(|(_, l)| !keep(l))
        .map(|(i, _)| i as i64)
        .collect();
    if drop.is_empty() {
        return Ok(op);
    }
    let labels: Vec<char> = op.labels.iter().copied().filter(|l| keep(l)).collect();
    let tensor = if op.tensor.numel() == 0 {
        let sizes: Vec<usize> = op
            .labels
            .iter()
            .zip(op.tensor.sizes())
            .filter(|(l, _)| keep(l))
            .map(|(_, &s)| s)
            .collect();
        Tensor::zeros(&sizes, op.tensor.dtype())?
    } else {
        op.tensor.sum_dim(&drop, false, None)?
    };
    Ok(Operand { tensor, labels })
}

/// Contracts two operands through one batched matrix product.
fn contract_pair(
    a: Operand,
    b: Operand,
    needed_later: impl Fn(&char) -> bool,
    sizes: &std::collections::HashMap<char, usize>,
) -> Result<Operand> {
    let shared: Vec<char> = a
        .labels
        .iter()
        .copied()
        .filter(|l| b.labels.contains(l))
        .collect();
    let batch: Vec<char> = shared.iter().copied().filter(|l| needed_later(l)).collect();
    let contracted: Vec<char> = shared
        .iter()
        .copied()
        .filter(|l| !needed_later(l))
        .collect();
    let a_only: Vec<char> = a
        .labels
        .iter()
        .copied()
        .filter(|l| !shared.contains(l))
        .collect();
    let b_only: Vec<char> = b
        .labels
        .iter()
        .copied()
        .filter(|l| !shared.contains(l))
        .collect();
    let position =
        |labels: &[char], l: &char| labels.iter().position(|x| x == l).unwrap_or(0) as i64;
    let perm_a: Vec<i64> = batch
        .iter()
        .chain(&a_only)
        .chain(&contracted)
        .map(|l| position(&a.labels, l))
        .collect();
    let perm_b: Vec<i64> = batch
        .iter()
        .chain(&contracted)
        .chain(&b_only)
        .map(|l| position(&b.labels, l))
        .collect();
    let product = |ls: &[char]| -> usize { ls.iter().map(|l| sizes[l]).product() };
    let (nb, n, k, m) = (
        product(&batch),
        product(&a_only),
        product(&contracted),
        product(&b_only),
    );
    let dtype = crate::dtype::promote_types(a.tensor.dtype(), b.tensor.dtype());
    let ta = a
        .tensor
        .to_dtype(dtype)
        .permute(&perm_a)?
        .reshape_usize(&[nb, n, k])?;
    let tb = b
        .tensor
        .to_dtype(dtype)
        .permute(&perm_b)?
        .reshape_usize(&[nb, k, m])?;
    let out = if dtype == crate::dtype::DType::Bool {
        ta.to_dtype(crate::dtype::DType::Int64)
            .bmm(&tb.to_dtype(crate::dtype::DType::Int64))?
            .to_dtype(dtype)
    } else {
        ta.bmm(&tb)?
    };
    let labels: Vec<char> = batch
        .iter()
        .chain(&a_only)
        .chain(&b_only)
        .copied()
        .collect();
    let out_sizes: Vec<usize> = labels.iter().map(|l| sizes[l]).collect();
    Ok(Operand {
        tensor: out.reshape_usize(&out_sizes)?,
        labels,
    })
}
