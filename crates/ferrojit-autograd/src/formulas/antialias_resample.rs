//! The antialiased bilinear resize's gradient (`_upsample_bilinear2d_aa`). The resize is
//! linear and separable: `out = Wh x Ww^T` per image, with interpolation matrices that depend
//! only on the sizes, scales and `align_corners`. The formula reads each matrix off the
//! forward kernel itself, by resizing an identity laid out along the channels (a one-pixel
//! extent in the other dimension is copied unchanged), so the weights are the forward's own;
//! the gradient is then `Wh^T grad Ww`, made of recorded operators.

use ferrojit_ir::Type;
use ferrojit_runtime::{IValue, Result};
use ferrojit_tensor::Tensor;

use super::support::refuse;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, ints, matmul, transpose};

/// Which extent of the image a basis resize measures.
#[derive(Clone, Copy, PartialEq)]
enum Extent {
    Height,
    Width,
}

/// An identity of `length` laid out as `[1, length, length, 1]` (height) or
/// `[1, length, 1, length]` (width) in `like`'s dtype.
fn basis(length: usize, extent: Extent, like: &IValue) -> Result<IValue> {
    let mut values = vec![0.0f64; length * length];
    for index in 0..length {
        values[index * length + index] = 1.0;
    }
    let sizes = match extent {
        Extent::Height => [1, length, length, 1],
        Extent::Width => [1, length, 1, length],
    };
    let identity = call::fresh(Tensor::from_vec(values, &sizes)?);
    let dtype = call::tensor(like)?.dtype();
    call1(
        "aten::to.dtype",
        vec![identity, int(dtype.scalar_type_index())],
    )
}

/// The `[out, in]` interpolation matrix of one extent: the resized basis, read back.
fn matrix(resized: IValue, extent: Extent) -> Result<IValue> {
    // [1, in, out, 1] or [1, in, 1, out] -> [in, out] -> [out, in].
    let squeezed = call1("aten::squeeze.dim", vec![resized, int(0)])?;
    let dim = if extent == Extent::Height { 2 } else { 1 };
    let plane = call1("aten::squeeze.dim", vec![squeezed, int(dim)])?;
    transpose(&plane, 0, 1)
}

/// `Wh^T grad Ww` from the two matrices.
fn apply(input: &FormulaInput, height: IValue, width: IValue) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let rows = matmul(&transpose(&height, 0, 1)?, grad)?;
    let mut out = input.none();
    out[0] = Some(matmul(&rows, &width)?);
    Ok(out)
}

fn image_sizes(input: &FormulaInput) -> Result<(usize, usize)> {
    let sizes = input.sizes(0)?;
    if sizes.len() != 4 {
        return Err(refuse(format!(
            "_upsample_bilinear2d_aa: expected a 4-D input, got {} dimensions",
            sizes.len()
        )));
    }
    Ok((sizes[2], sizes[3]))
}

/// `_upsample_bilinear2d_aa(self, output_size, align_corners, scales_h, scales_w)`.
fn sized(input: &FormulaInput) -> Result<Gradients> {
    let (in_h, in_w) = image_sizes(input)?;
    let output = input.ints(1)?;
    let [out_h, out_w] = output[..] else {
        return Err(refuse(
            "_upsample_bilinear2d_aa: output_size must have 2 elements",
        ));
    };
    let corners = input.argument(2)?.clone();
    let grad = input.grad(0)?;
    let name = "aten::_upsample_bilinear2d_aa";
    let height = call1(
        name,
        vec![
            basis(in_h, Extent::Height, grad)?,
            ints(&[out_h, 1]),
            corners.clone(),
            input.argument(3)?.clone(),
            IValue::None,
        ],
    )?;
    let width = call1(
        name,
        vec![
            basis(in_w, Extent::Width, grad)?,
            ints(&[1, out_w]),
            corners,
            IValue::None,
            input.argument(4)?.clone(),
        ],
    )?;
    apply(
        input,
        matrix(height, Extent::Height)?,
        matrix(width, Extent::Width)?,
    )
}

/// `_upsample_bilinear2d_aa.vec(input, output_size, align_corners, scale_factors)`.
fn vec_form(input: &FormulaInput) -> Result<Gradients> {
    let (in_h, in_w) = image_sizes(input)?;
    let corners = input.argument(2)?.clone();
    let grad = input.grad(0)?;
    let name = "aten::_upsample_bilinear2d_aa.vec";
    let output = input.argument(1)?;
    let (height_args, width_args) = if output.is_none() {
        let factors = input.argument(3)?.to_double_vec()?;
        let [scale_h, scale_w] = factors[..] else {
            return Err(refuse(
                "_upsample_bilinear2d_aa: scale_factors must have 2 elements",
            ));
        };
        let factors =
            |h: f64, w: f64| IValue::list(Type::Float, vec![IValue::Double(h), IValue::Double(w)]);
        (
            (IValue::None, factors(scale_h, 1.0)),
            (IValue::None, factors(1.0, scale_w)),
        )
    } else {
        let output = output.to_int_vec()?;
        let [out_h, out_w] = output[..] else {
            return Err(refuse(
                "_upsample_bilinear2d_aa: output_size must have 2 elements",
            ));
        };
        (
            (ints(&[out_h, 1]), IValue::None),
            (ints(&[1, out_w]), IValue::None),
        )
    };
    let height = call1(
        name,
        vec![
            basis(in_h, Extent::Height, grad)?,
            height_args.0,
            corners.clone(),
            height_args.1,
        ],
    )?;
    let width = call1(
        name,
        vec![
            basis(in_w, Extent::Width, grad)?,
            width_args.0,
            corners,
            width_args.1,
        ],
    )?;
    apply(
        input,
        matrix(height, Extent::Height)?,
        matrix(width, Extent::Width)?,
    )
}

formula_table![
    (
        "aten::_upsample_bilinear2d_aa",
        "UpsampleBilinear2DAaBackward0",
        sized,
        &[]
    ),
    (
        "aten::_upsample_bilinear2d_aa.vec",
        "UpsampleBilinear2DAaBackward1",
        vec_form,
        &[]
    ),
];
