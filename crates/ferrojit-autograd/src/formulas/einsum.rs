//! `einsum`'s gradient: each operand's gradient is itself an einsum, of the output gradient
//! with the other operands, onto the operand's own subscripts (PyTorch derives it through the
//! operations einsum decomposes into; the result is the same contraction).

use std::collections::BTreeSet;

use ferrojit_runtime::{IValue, Result};

use super::support::refuse;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, expand, optional_tensor_list, reshape, sum_to, tensor_list};

/// The equation's operand subscripts and output subscripts (the implicit output being the
/// labels used exactly once, in sorted order, as PyTorch forms it).
fn parse_equation(equation: &str) -> Result<(Vec<Vec<char>>, Vec<char>)> {
    let equation: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    if equation.contains('.') {
        return Err(refuse(
            "einsum(): the gradient of an equation with an ellipsis ('...') is not supported",
        ));
    }
    let (left, output) = match equation.split_once("->") {
        Some((left, right)) => (left, Some(right.chars().collect::<Vec<char>>())),
        None => (equation.as_str(), None),
    };
    let operands: Vec<Vec<char>> = left.split(',').map(|part| part.chars().collect()).collect();
    let output = output.unwrap_or_else(|| {
        let all: Vec<char> = operands.iter().flatten().copied().collect();
        let once: BTreeSet<char> = all
            .iter()
            .copied()
            .filter(|label| all.iter().filter(|other| *other == label).count() == 1)
            .collect();
        once.into_iter().collect()
    });
    Ok((operands, output))
}

fn contract(equation: &str, operands: Vec<IValue>) -> Result<IValue> {
    call1(
        "aten::einsum",
        vec![
            IValue::string(equation),
            tensor_list(operands),
            IValue::None,
        ],
    )
}

/// `einsum(equation, tensors, path)`: per operand, the output gradient contracted with the
/// other operands onto the labels this operand shares with them or the output; labels summed
/// inside this operand alone come back broadcast, and dimensions it broadcast are summed.
fn einsum(input: &FormulaInput) -> Result<Gradients> {
    let (subscripts, output) = parse_equation(input.argument(0)?.to_str()?)?;
    let operands = match input.argument(1)? {
        IValue::List(list) => list.to_vec(),
        other => {
            return Err(refuse(format!(
                "einsum(): expected a tensor list, got a {}",
                other.tag_name()
            )))
        }
    };
    if operands.len() != subscripts.len() {
        return Err(refuse(format!(
            "einsum(): more operands were provided than specified in the equation ({} vs {})",
            operands.len(),
            subscripts.len()
        )));
    }
    let grad = input.grad(0)?;
    let output_text: String = output.iter().collect();
    let mut pieces = Vec::with_capacity(operands.len());
    for (position, own) in subscripts.iter().enumerate() {
        let unique: BTreeSet<char> = own.iter().copied().collect();
        if unique.len() != own.len() {
            return Err(refuse(
                "einsum(): the gradient of an operand with a repeated subscript (a diagonal) \
                 is not supported",
            ));
        }
        let sizes = call::sizes(&operands[position])?;
        let mut elsewhere: BTreeSet<char> = output.iter().copied().collect();
        let mut terms = vec![output_text.clone()];
        let mut arguments = vec![grad.clone()];
        for (other, labels) in subscripts.iter().enumerate() {
            if other != position {
                elsewhere.extend(labels.iter().copied());
                terms.push(labels.iter().collect());
                arguments.push(operands[other].clone());
            }
        }
        let kept: String = own
            .iter()
            .filter(|label| elsewhere.contains(label))
            .collect();
        let partial = contract(&format!("{}->{kept}", terms.join(",")), arguments)?;
        let partial_sizes = call::sizes(&partial)?;
        let mut next_kept = 0;
        let mut spread = Vec::with_capacity(own.len());
        let mut target = Vec::with_capacity(own.len());
        for (label, &size) in own.iter().zip(&sizes) {
            if elsewhere.contains(label) {
                spread.push(partial_sizes[next_kept]);
                target.push(size);
                next_kept += 1;
            } else {
                spread.push(1);
                target.push(1);
            }
        }
        let shaped = sum_to(&reshape(&partial, &spread)?, &target)?;
        pieces.push(expand(&shaped, &sizes)?);
    }
    let mut out = input.none();
    out[1] = Some(optional_tensor_list(pieces));
    Ok(out)
}

formula_table![("aten::einsum", "EinsumBackward0", einsum, &[1]),];

#[cfg(test)]
mod tests {
    use super::parse_equation;

    #[test]
    fn implicit_output_is_the_labels_used_once_sorted() {
        let (operands, output) = parse_equation("ba, bc").expect("parses");
        assert_eq!(operands, vec![vec!['b', 'a'], vec!['b', 'c']]);
        assert_eq!(output, vec!['a', 'c']);
        let (_, explicit) = parse_equation("ij,jk->ki").expect("parses");
        assert_eq!(explicit, vec!['k', 'i']);
        assert!(parse_equation("...ij->ij").is_err());
    }
}
