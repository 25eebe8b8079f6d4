//! The epilogue applied to each output tile of a packed GEMM while the tile is still in cache:
//! per-channel scale and shift (bias, folded batch norm), a residual add, and an activation.
//!
//! Each step computes what the unfused operator computes for float32 (SiLU, sigmoid and
//! hardswish through the same float32 slice kernels as `ops::pointwise`, GELU through the
//! same f64 formulas), so a fused result differs from the unfused one only by the GEMM's own
//! summation order.

use crate::error::{Result, TensorError};
use crate::ops::special::gelu_fast;
use crate::ops::vectorized_math::{self, VectorFunction};

/// The pointwise function at the end of an epilogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Activation {
    /// No activation.
    Identity,
    /// `max(x, 0)`; NaN stays NaN as in `torch.relu`.
    Relu,
    /// GELU with `approximate='none'` (erf form).
    Gelu,
    /// GELU with `approximate='tanh'`.
    GeluTanh,
    /// `x * sigmoid(x)`.
    Silu,
    /// `1 / (1 + exp(-x))`.
    Sigmoid,
    /// `x * relu6(x + 3) / 6`.
    Hardswish,
}

impl Activation {
    /// The name used in `ferrojit::linear_epilogue`'s `activation` argument.
    pub fn name(self) -> &'static str {
        match self {
            Activation::Identity => "none",
            Activation::Relu => "relu",
            Activation::Gelu => "gelu",
            Activation::GeluTanh => "gelu_tanh",
            Activation::Silu => "silu",
            Activation::Sigmoid => "sigmoid",
            Activation::Hardswish => "hardswish",
        }
    }

    /// Parses a name written by [`Activation::name`].
    pub fn from_name(name: &str) -> Result<Activation> {
        Ok(match name {
            "none" => Activation::Identity,
            "relu" => Activation::Relu,
            "gelu" => Activation::Gelu,
            "gelu_tanh" => Activation::GeluTanh,
            "silu" => Activation::Silu,
            "sigmoid" => Activation::Sigmoid,
            "hardswish" => Activation::Hardswish,
            other => {
                return Err(TensorError::InvalidArgument(format!(
                    "gemm epilogue: unknown activation '{other}' (expected none, relu, gelu, \
                     gelu_tanh, silu, sigmoid or hardswish)"
                )))
            }
        })
    }

    /// The activation of one float32 value, computed as the unfused float32 kernel does.
    #[inline]
    pub fn apply(self, x: f32) -> f32 {
        match self {
            Activation::Identity => x,
            // `x < 0` is false for NaN, so NaN passes through unchanged.
            Activation::Relu => {
                if x < 0.0 {
                    0.0
                } else {
                    x
                }
            }
            Activation::Gelu => {
                // PyTorch's CPU kernel gives NaN for both infinities.
                if x.is_infinite() {
                    f32::NAN
                } else {
                    gelu_fast(f64::from(x)) as f32
                }
            }
            Activation::GeluTanh => {
                let x = f64::from(x);
                let inner = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
                (0.5 * x * (1.0 + inner.tanh())) as f32
            }
            Activation::Silu => vectorized_math::apply_one(VectorFunction::Silu, x),
            Activation::Sigmoid => vectorized_math::apply_one(VectorFunction::Sigmoid, x),
            Activation::Hardswish => vectorized_math::apply_one(VectorFunction::Hardswish, x),
        }
    }

    /// The float32 slice kernel of the activation, where it has one: the unfused operator's.
    fn vector_function(self) -> Option<VectorFunction> {
        match self {
            Activation::Silu => Some(VectorFunction::Silu),
            Activation::Sigmoid => Some(VectorFunction::Sigmoid),
            Activation::Hardswish => Some(VectorFunction::Hardswish),
            _ => None,
        }
    }
}

/// Which output axis the per-channel vectors ([`Epilogue::scale`], [`Epilogue::shift`]) run
/// along: columns for a linear layer (output features), rows for a convolution written as
/// `weight (out channels x k) @ columns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelAxis {
    /// One value per output row.
    Rows,
    /// One value per output column.
    Columns,
}

/// A matrix added to the output, element for element, with its own row stride.
#[derive(Debug, Clone, Copy)]
pub struct Residual<'a> {
    /// The values, `rows x cols` at `data[row * row_stride + col]`.
    pub data: &'a [f32],
    /// Distance between rows in `data`.
    pub row_stride: usize,
}

/// What happens to each output element after the product:
/// `v = acc * scale + shift` (per channel), then the residual add before or after the
/// activation.
#[derive(Debug, Clone, Copy)]
pub struct Epilogue<'a> {
    /// Axis of the per-channel vectors.
    pub axis: ChannelAxis,
    /// Per-channel multiplier (a folded batch norm's scale); when set, `acc * scale + shift`
    /// is rounded once, as the batch-norm kernel's fused multiply-add is.
    pub scale: Option<&'a [f32]>,
    /// Per-channel addend (a bias, or a folded batch norm's shift).
    pub shift: Option<&'a [f32]>,
    /// A matrix of the output's shape added to it.
    pub residual: Option<Residual<'a>>,
    /// Whether the residual is added after the activation (`act(x) + r`) rather than before
    /// (`act(x + r)`, ResNet's `relu(bn(conv(x)) + identity)`).
    pub residual_after_activation: bool,
    /// The final (or, with `residual_after_activation`, middle) pointwise function.
    pub activation: Activation,
}

impl Epilogue<'_> {
    /// No epilogue: the plain product.
    pub const NONE: Epilogue<'static> = Epilogue {
        axis: ChannelAxis::Columns,
        scale: None,
        shift: None,
        residual: None,
        residual_after_activation: false,
        activation: Activation::Identity,
    };

    /// Whether applying it changes nothing.
    pub fn is_identity(&self) -> bool {
        self.scale.is_none()
            && self.shift.is_none()
            && self.residual.is_none()
            && self.activation == Activation::Identity
    }

    /// Checks that every vector and the residual cover an `m x n` output.
    pub(crate) fn check(&self, m: usize, n: usize) -> Result<()> {
        let channels = match self.axis {
            ChannelAxis::Rows => m,
            ChannelAxis::Columns => n,
        };
        for (name, vector) in [("scale", self.scale), ("shift", self.shift)] {
            if let Some(v) = vector {
                if v.len() != channels {
                    return Err(TensorError::InvalidArgument(format!(
                        "gemm epilogue: {name} has {} values but the output has {channels} \
                         channels",
                        v.len()
                    )));
                }
            }
        }
        if let Some(r) = self.residual {
            let needed = if m == 0 || n == 0 {
                0
            } else {
                (m - 1)
                    .checked_mul(r.row_stride)
                    .and_then(|x| x.checked_add(n))
                    .unwrap_or(usize::MAX)
            };
            if r.row_stride < n && m > 1 || r.data.len() < needed {
                return Err(TensorError::InvalidArgument(format!(
                    "gemm epilogue: residual of {} values with row stride {} does not cover a \
                     {m} x {n} output",
                    r.data.len(),
                    r.row_stride
                )));
            }
        }
        Ok(())
    }

    /// Applies the epilogue to the output rows `row0..row0 + rows`, columns
    /// `col0..col0 + cols`, stored at `c[i * c_stride + j]` (relative to the tile's corner).
    pub fn apply_tile(
        &self,
        c: &mut [f32],
        c_stride: usize,
        row0: usize,
        rows: usize,
        col0: usize,
        cols: usize,
    ) {
        if self.is_identity() {
            return;
        }
        for i in 0..rows {
            let row = &mut c[i * c_stride..i * c_stride + cols];
            let global_row = row0 + i;
            match self.axis {
                ChannelAxis::Columns => {
                    let range = col0..col0 + cols;
                    match (self.scale, self.shift) {
                        (Some(s), Some(b)) => {
                            for ((v, &s), &b) in
                                row.iter_mut().zip(&s[range.clone()]).zip(&b[range])
                            {
                                *v = v.mul_add(s, b);
                            }
                        }
                        (Some(s), None) => {
                            for (v, &s) in row.iter_mut().zip(&s[range]) {
                                *v *= s;
                            }
                        }
                        (None, Some(b)) => {
                            for (v, &b) in row.iter_mut().zip(&b[range]) {
                                *v += b;
                            }
                        }
                        (None, None) => {}
                    }
                }
                ChannelAxis::Rows => {
                    let s = self.scale.map(|s| s[global_row]);
                    let b = self.shift.map(|b| b[global_row]);
                    match (s, b) {
                        (Some(s), Some(b)) => row.iter_mut().for_each(|v| *v = v.mul_add(s, b)),
                        (Some(s), None) => row.iter_mut().for_each(|v| *v *= s),
                        (None, Some(b)) => row.iter_mut().for_each(|v| *v += b),
                        (None, None) => {}
                    }
                }
            }
            let residual_row = self.residual.map(|r| {
                let start = global_row * r.row_stride + col0;
                &r.data[start..start + cols]
            });
            if let (Some(r), false) = (residual_row, self.residual_after_activation) {
                row.iter_mut().zip(r).for_each(|(v, &r)| *v += r);
            }
            match self.activation {
                Activation::Identity => {}
                // A select with an unconditional store vectorizes; a conditional store is a
                // branch per element, mispredicted about half the time on a layer's values.
                // NaN stays NaN (`NaN < 0` is false), as in PyTorch's relu.
                Activation::Relu => row
                    .iter_mut()
                    .for_each(|v| *v = if *v < 0.0 { 0.0 } else { *v }),
                act => match act.vector_function() {
                    Some(function) => vectorized_math::apply(function, row),
                    None => row.iter_mut().for_each(|v| *v = act.apply(*v)),
                },
            }
            if let (Some(r), true) = (residual_row, self.residual_after_activation) {
                row.iter_mut().zip(r).for_each(|(v, &r)| *v += r);
            }
        }
    }
}
