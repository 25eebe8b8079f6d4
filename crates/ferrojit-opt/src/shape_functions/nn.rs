//! Shape functions of matrix products, convolutions, pooling, reductions and the other
//! operators whose output sizes are computed from their arguments.

use super::sizes::{add, broadcast, dim_at, floor_div, list_at, mul, sub, wrap_dim};
use super::{Shape, ShapeArgument, SymInt};

pub(super) fn adaptive_avg_pool2d(input: &Shape, output_size: Option<Vec<SymInt>>) -> Shape {
    let input = input.as_ref()?;
    let output_size = output_size?;
    let mut out = input[..input.len().saturating_sub(2)].to_vec();
    out.extend(output_size);
    Some(out)
}

pub(super) fn arange(start: Option<f64>, end: Option<f64>, step: Option<f64>) -> Shape {
    let length = match (start, end, step) {
        (Some(start), Some(end), Some(step)) if step != 0.0 => {
            let length = ((end - start) / step).ceil();
            if length.is_finite() {
                SymInt::Static(length as i64)
            } else {
                SymInt::Unknown
            }
        }
        _ => SymInt::Unknown,
    };
    Some(vec![length])
}

pub(super) fn mm(a: &Shape, b: &Shape) -> Shape {
    Some(vec![dim_at(a, 0), dim_at(b, 1)])
}

pub(super) fn matmul(a: &Shape, b: &Shape) -> Shape {
    let (a, b) = (a.as_ref()?, b.as_ref()?);
    match (a.len(), b.len()) {
        (0, _) | (_, 0) => None,
        (1, 1) => Some(Vec::new()),
        (2, 1) => Some(vec![a[0]]),
        (1, 2) => Some(vec![b[1]]),
        (2, 2) => Some(vec![a[0], b[1]]),
        (rank_a, rank_b) => {
            let batch_a = Some(a[..rank_a.saturating_sub(2)].to_vec());
            let batch_b = Some(b[..rank_b.saturating_sub(2)].to_vec());
            let mut out = broadcast(&batch_a, &batch_b)?;
            if rank_a > 1 {
                out.push(a[rank_a - 2]);
            }
            if rank_b > 1 {
                out.push(b[rank_b - 1]);
            }
            Some(out)
        }
    }
}

/// `pooling_output_shape` for one spatial dimension.
pub(super) fn pooling_output_size(
    input: SymInt,
    kernel: SymInt,
    pad: SymInt,
    stride: SymInt,
    dilation: SymInt,
    ceil_mode: Option<bool>,
) -> SymInt {
    let Some(ceil_mode) = ceil_mode else {
        return SymInt::Unknown;
    };
    let extra = if ceil_mode {
        sub(stride, SymInt::Static(1))
    } else {
        SymInt::Static(0)
    };
    let numerator = add(
        sub(
            sub(
                add(add(input, pad), pad),
                mul(dilation, sub(kernel, SymInt::Static(1))),
            ),
            SymInt::Static(1),
        ),
        extra,
    );
    let mut out = add(floor_div(numerator, stride), SymInt::Static(1));
    if ceil_mode {
        match (out.known(), stride.known(), input.known(), pad.known()) {
            (Some(o), Some(s), Some(i), Some(p)) => {
                if (o - 1) * s >= i + p {
                    out = SymInt::Static(o - 1);
                }
            }
            _ => out = SymInt::Unknown,
        }
    }
    out
}

pub(super) fn max_pool2d(
    input: &Shape,
    kernel: Option<Vec<SymInt>>,
    stride: Option<Vec<SymInt>>,
    padding: Option<Vec<SymInt>>,
    dilation: Option<Vec<SymInt>>,
    ceil_mode: Option<bool>,
) -> Shape {
    let sizes = input.as_ref()?;
    if sizes.len() != 3 && sizes.len() != 4 {
        return None;
    }
    // A one-element list stands for both dimensions; a list of unknown length decides nothing.
    let pair = |list: &Option<Vec<SymInt>>| -> (SymInt, SymInt) {
        match list {
            Some(list) if list.len() == 1 => (list[0], list[0]),
            Some(list) => (
                list_at(&Some(list.clone()), 0),
                list_at(&Some(list.clone()), 1),
            ),
            None => (SymInt::Unknown, SymInt::Unknown),
        }
    };
    let (kernel_h, kernel_w) = pair(&kernel);
    let (stride_h, stride_w) = match &stride {
        Some(list) if list.is_empty() => (kernel_h, kernel_w),
        other => pair(other),
    };
    let (pad_h, pad_w) = pair(&padding);
    let (dilation_h, dilation_w) = pair(&dilation);
    let height = pooling_output_size(
        dim_at(input, -2),
        kernel_h,
        pad_h,
        stride_h,
        dilation_h,
        ceil_mode,
    );
    let width = pooling_output_size(
        dim_at(input, -1),
        kernel_w,
        pad_w,
        stride_w,
        dilation_w,
        ceil_mode,
    );
    if sizes.len() == 3 {
        Some(vec![dim_at(input, -3), height, width])
    } else {
        Some(vec![dim_at(input, -4), dim_at(input, -3), height, width])
    }
}

pub(super) fn conv_output_size(
    input: &Shape,
    weight: &Shape,
    stride: Option<Vec<SymInt>>,
    padding: Option<Vec<SymInt>>,
    dilation: Option<Vec<SymInt>>,
) -> Shape {
    let sizes = input.as_ref()?;
    let mut out = vec![dim_at(input, 0), dim_at(weight, 0)];
    for (d, &input_d) in sizes.iter().enumerate().skip(2) {
        let dilation_d = match &dilation {
            Some(list) if list.is_empty() => SymInt::Static(1),
            other => list_at(other, d - 2),
        };
        let kernel = add(
            mul(dilation_d, sub(dim_at(weight, d as i64), SymInt::Static(1))),
            SymInt::Static(1),
        );
        let padded = add(input_d, mul(SymInt::Static(2), list_at(&padding, d - 2)));
        out.push(add(
            floor_div(sub(padded, kernel), list_at(&stride, d - 2)),
            SymInt::Static(1),
        ));
    }
    Some(out)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn conv_forwards(
    input: &Shape,
    weight: &Shape,
    stride: Option<Vec<SymInt>>,
    padding: Option<Vec<SymInt>>,
    dilation: Option<Vec<SymInt>>,
    transposed: Option<bool>,
    output_padding: Option<Vec<SymInt>>,
    groups: SymInt,
) -> Shape {
    let sizes = input.as_ref()?;
    let transposed = transposed?;
    let mut out = vec![dim_at(input, 0)];
    if transposed {
        out.push(mul(dim_at(weight, 1), groups));
    } else {
        out.push(dim_at(weight, 0));
    }
    for (d, &input_d) in sizes.iter().enumerate().skip(2) {
        let dilation_d = match &dilation {
            Some(list) if list.is_empty() => SymInt::Static(1),
            other => list_at(other, d - 2),
        };
        let output_padding_d = match &output_padding {
            Some(list) if list.is_empty() => SymInt::Static(0),
            other => list_at(other, d - 2),
        };
        let weight_d = dim_at(weight, d as i64);
        if transposed {
            out.push(transposed_size(
                input_d,
                list_at(&stride, d - 2),
                list_at(&padding, d - 2),
                mul(dilation_d, sub(weight_d, SymInt::Static(1))),
                output_padding_d,
            ));
        } else {
            let kernel = add(
                mul(dilation_d, sub(weight_d, SymInt::Static(1))),
                SymInt::Static(1),
            );
            let padded = add(input_d, mul(SymInt::Static(2), list_at(&padding, d - 2)));
            out.push(add(
                floor_div(sub(padded, kernel), list_at(&stride, d - 2)),
                SymInt::Static(1),
            ));
        }
    }
    Some(out)
}

/// `(input - 1) * stride - 2 * padding + kernel + output_padding + 1`.
pub(super) fn transposed_size(
    input: SymInt,
    stride: SymInt,
    padding: SymInt,
    kernel: SymInt,
    output_padding: SymInt,
) -> SymInt {
    add(
        add(
            add(
                sub(
                    mul(sub(input, SymInt::Static(1)), stride),
                    mul(SymInt::Static(2), padding),
                ),
                kernel,
            ),
            output_padding,
        ),
        SymInt::Static(1),
    )
}

pub(super) fn conv_transpose2d(
    input: &Shape,
    weight: &Shape,
    stride: &ShapeArgument,
    padding: &ShapeArgument,
    output_padding: &ShapeArgument,
    groups: SymInt,
    dilation: &ShapeArgument,
) -> Shape {
    let sizes = input.as_ref()?;
    let list_or = |argument: &ShapeArgument, default: i64| match argument {
        ShapeArgument::None => Some(vec![SymInt::Static(default); 2]),
        other => other.int_list(),
    };
    let stride = list_or(stride, 1);
    let padding = list_or(padding, 0);
    let output_padding = list_or(output_padding, 0);
    let dilation = list_or(dilation, 1);
    let mut out = vec![dim_at(input, 0), mul(dim_at(weight, 1), groups)];
    for (d, &input_d) in sizes.iter().enumerate().skip(2) {
        let dilation_d = match &dilation {
            Some(list) if list.is_empty() => SymInt::Static(1),
            other => list_at(other, d - 2),
        };
        out.push(transposed_size(
            input_d,
            list_at(&stride, d - 2),
            list_at(&padding, d - 2),
            mul(dilation_d, sub(dim_at(weight, d as i64), SymInt::Static(1))),
            list_at(&output_padding, d - 2),
        ));
    }
    Some(out)
}

pub(super) fn sum_mean_dim(input: &Shape, dims: &ShapeArgument, keepdim: Option<bool>) -> Shape {
    let sizes = input.as_ref()?;
    let dims: Vec<SymInt> = match dims {
        ShapeArgument::None => Vec::new(),
        other => other.int_list()?,
    };
    let reduced: Vec<usize> = if dims.is_empty() {
        (0..sizes.len()).collect()
    } else {
        dims.iter()
            .map(|&dim| wrap_dim(dim, sizes.len()))
            .collect::<Option<_>>()?
    };
    let mut out = Vec::new();
    for (index, &size) in sizes.iter().enumerate() {
        if reduced.contains(&index) {
            if keepdim? {
                out.push(SymInt::Static(1));
            }
        } else {
            out.push(size);
        }
    }
    Some(out)
}

pub(super) fn reduce_along_dim(input: &Shape, dim: SymInt, keepdim: Option<bool>) -> Shape {
    sum_mean_dim(input, &ShapeArgument::IntList(Some(vec![dim])), keepdim)
}

pub(super) fn upsample_nearest2d(
    input: &Shape,
    output_size: &ShapeArgument,
    scale_factors: &ShapeArgument,
) -> Shape {
    let mut out = vec![dim_at(input, 0), dim_at(input, 1)];
    match (output_size, scale_factors) {
        (ShapeArgument::IntList(Some(sizes)), ShapeArgument::None) if sizes.len() == 2 => {
            out.extend_from_slice(sizes);
        }
        (ShapeArgument::None, ShapeArgument::Other) => {
            // Scale factors are floats the analysis does not follow.
            out.extend([SymInt::Unknown, SymInt::Unknown]);
        }
        _ => return None,
    }
    Some(out)
}

pub(super) fn topk(input: &Shape, k: SymInt, dim: SymInt) -> Shape {
    let sizes = input.as_ref()?;
    if sizes.is_empty() {
        return Some(Vec::new());
    }
    let dim = wrap_dim(dim, sizes.len())?;
    let mut out = sizes.clone();
    out[dim] = k;
    Some(out)
}

pub(super) fn nll_loss_reduction_shape(input: &Shape, reduction: SymInt) -> Shape {
    let sizes = input.as_ref()?;
    match reduction.known() {
        Some(0) if sizes.len() == 2 => Some(vec![sizes[0]]),
        Some(_) => Some(Vec::new()),
        None if sizes.len() != 2 => Some(Vec::new()),
        None => None,
    }
}
