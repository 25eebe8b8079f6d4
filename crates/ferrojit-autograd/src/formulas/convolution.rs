//! Derivatives of the convolution entry points (`conv1d/2d/3d`, their `padding="same"`/
//! `"valid"` overloads, `conv_transpose1d/2d/3d`) through the runtime's
//! `convolution_backward` kernel (whose own formula, in `convolution_double.rs`, gives the
//! double backward). An
//! unbatched input is given a batch of one; an asymmetric `"same"` padding is, as in
//! PyTorch, a symmetric one plus one extra element on the far side, so the gradient is taken
//! on the extended input and cut back.

use ferrojit_ir::Type;
use ferrojit_runtime::{IValue, Result};

use super::support::refuse;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call, call1, int, ints};

/// How one entry point lays out its arguments after `(input, weight, bias)`.
struct Layout {
    spatial: usize,
    transposed: bool,
}

/// An int-list argument with one value per spatial dimension (a single value repeats).
fn per_dim(value: &IValue, count: usize, name: &str) -> Result<Vec<i64>> {
    let values = match value {
        IValue::Int(single) => vec![*single],
        other => other.to_int_vec()?,
    };
    match values.len() {
        1 => Ok(vec![values[0]; count]),
        n if n == count => Ok(values),
        n => Err(refuse(format!(
            "expected {name} to be a single integer value or a list of {count} values to \
             match the convolution dimensions, but got {name}={n} values"
        ))),
    }
}

fn bools(values: &[bool]) -> IValue {
    IValue::list(
        Type::Bool,
        values.iter().map(|&v| IValue::Bool(v)).collect(),
    )
}

/// The symmetric padding and the extra far-side padding per dimension of a `padding`
/// argument (numbers, or `"valid"`/`"same"`).
fn resolve_padding(
    value: &IValue,
    kernel: &[usize],
    dilation: &[i64],
) -> Result<(Vec<i64>, Vec<i64>)> {
    let count = kernel.len();
    match value {
        IValue::Str(mode) if &**mode == "valid" => Ok((vec![0; count], vec![0; count])),
        IValue::Str(mode) if &**mode == "same" => {
            let mut symmetric = Vec::with_capacity(count);
            let mut extra = Vec::with_capacity(count);
            for (size, step) in kernel.iter().zip(dilation) {
                let total = step * (*size as i64 - 1);
                symmetric.push(total / 2);
                extra.push(total - 2 * (total / 2));
            }
            Ok((symmetric, extra))
        }
        IValue::Str(mode) => Err(refuse(format!("Invalid padding string: '{mode}'"))),
        other => Ok((per_dim(other, count, "padding")?, vec![0; count])),
    }
}

fn gradients(input: &FormulaInput, layout: &Layout) -> Result<Gradients> {
    let spatial = layout.spatial;
    let x_sizes = input.sizes(0)?;
    let w_sizes = input.sizes(1)?;
    let batched = x_sizes.len() == spatial + 2;
    if !batched && x_sizes.len() != spatial + 1 {
        return Err(refuse(format!(
            "Expected {}D (unbatched) or {}D (batched) input to conv{spatial}d, but got input \
             of size: {x_sizes:?}",
            spatial + 1,
            spatial + 2
        )));
    }
    let stride = per_dim(input.argument(3)?, spatial, "stride")?;
    let (dilation_index, groups_index, output_padding) = if layout.transposed {
        (
            7,
            6,
            per_dim(input.argument(5)?, spatial, "output_padding")?,
        )
    } else {
        (5, 6, vec![0; spatial])
    };
    let dilation = per_dim(input.argument(dilation_index)?, spatial, "dilation")?;
    let groups = input.int(groups_index)?;
    let kernel = &w_sizes[2..];
    let (padding, extra) = resolve_padding(input.argument(4)?, kernel, &dilation)?;
    let mut x = input.argument(0)?.clone();
    let mut grad = input.grad(0)?.clone();
    if !batched {
        x = call1("aten::unsqueeze", vec![x, int(0)])?;
        grad = call1("aten::unsqueeze", vec![grad, int(0)])?;
    }
    let padded = extra.iter().any(|&e| e != 0);
    if padded {
        let pad: Vec<i64> = extra.iter().rev().flat_map(|&e| [0, e]).collect();
        x = call1("aten::constant_pad_nd", vec![x, ints(&pad)])?;
    }
    let bias_sizes = if input.argument(2)?.is_none() && !input.needs(2) {
        IValue::None
    } else {
        call::sizes_of(&input.sizes(2)?)
    };
    let results = call(
        "aten::convolution_backward",
        vec![
            grad,
            x,
            input.argument(1)?.clone(),
            bias_sizes,
            ints(&stride),
            ints(&padding),
            ints(&dilation),
            IValue::Bool(layout.transposed),
            ints(&output_padding),
            int(groups),
            bools(&[input.needs(0), input.needs(1), input.needs(2)]),
        ],
    )?;
    let mut out = input.none();
    for (index, value) in results.into_iter().enumerate().take(3) {
        if !input.needs(index) || value.is_none() {
            continue;
        }
        let mut value = value;
        if index == 0 {
            if padded {
                for (dim, &size) in x_sizes[x_sizes.len() - spatial..].iter().enumerate() {
                    let axis = (dim + 2) as i64;
                    value = call1(
                        "aten::narrow",
                        vec![value, int(axis), int(0), int(size as i64)],
                    )?;
                }
            }
            if !batched {
                value = call1("aten::squeeze.dim", vec![value, int(0)])?;
            }
        }
        out[index] = Some(value);
    }
    Ok(out)
}

fn conv1d(input: &FormulaInput) -> Result<Gradients> {
    gradients(
        input,
        &Layout {
            spatial: 1,
            transposed: false,
        },
    )
}

fn conv2d(input: &FormulaInput) -> Result<Gradients> {
    gradients(
        input,
        &Layout {
            spatial: 2,
            transposed: false,
        },
    )
}

fn conv3d(input: &FormulaInput) -> Result<Gradients> {
    gradients(
        input,
        &Layout {
            spatial: 3,
            transposed: false,
        },
    )
}

fn conv_transpose1d(input: &FormulaInput) -> Result<Gradients> {
    gradients(
        input,
        &Layout {
            spatial: 1,
            transposed: true,
        },
    )
}

fn conv_transpose2d(input: &FormulaInput) -> Result<Gradients> {
    gradients(
        input,
        &Layout {
            spatial: 2,
            transposed: true,
        },
    )
}

fn conv_transpose3d(input: &FormulaInput) -> Result<Gradients> {
    gradients(
        input,
        &Layout {
            spatial: 3,
            transposed: true,
        },
    )
}

formula_table![
    ("aten::conv1d", "ConvolutionBackward0", conv1d, &[0, 1]),
    (
        "aten::conv1d.padding",
        "ConvolutionBackward0",
        conv1d,
        &[0, 1]
    ),
    ("aten::conv2d", "ConvolutionBackward0", conv2d, &[0, 1]),
    (
        "aten::conv2d.padding",
        "ConvolutionBackward0",
        conv2d,
        &[0, 1]
    ),
    ("aten::conv3d", "ConvolutionBackward0", conv3d, &[0, 1]),
    (
        "aten::conv3d.padding",
        "ConvolutionBackward0",
        conv3d,
        &[0, 1]
    ),
    (
        "aten::conv_transpose1d",
        "ConvolutionBackward0",
        conv_transpose1d,
        &[0, 1]
    ),
    (
        "aten::conv_transpose2d.input",
        "ConvolutionBackward0",
        conv_transpose2d,
        &[0, 1]
    ),
    (
        "aten::conv_transpose3d.input",
        "ConvolutionBackward0",
        conv_transpose3d,
        &[0, 1]
    ),
];
