//! Discrete Fourier transforms: ATen's three primitives (`_fft_c2c`, `_fft_r2c`, `_fft_c2r`)
//! over any list of dimensions, and the `torch.fft` functions built on them (`fft`, `rfft`,
//! `irfftn`, `hfft`, `hfftn`, ..., `fftfreq`, `fftshift`) with PyTorch's `n`/`s`, `dim` and `norm`
//! rules (aten/src/ATen/native/SpectralOps.cpp).
//!
//! The transforms run in f64 with rustfft, one 1-D transform per line of each dimension, and
//! the result is rounded to the output dtype (complex64 results are therefore at least as
//! accurate as PyTorch's single-precision pocketfft).

use crate::complex::{Complex128, Complex64};
use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;
use rustfft::num_complex::Complex;
use rustfft::FftPlanner;

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

/// ATen's `fft_norm_mode`: how a transform's result is scaled, by its signal size n.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FftNorm {
    /// No scaling (`normalization=0`).
    None = 0,
    /// Scaled by 1/sqrt(n) (`normalization=1`).
    ByRootN = 1,
    /// Scaled by 1/n (`normalization=2`).
    ByN = 2,
}

impl FftNorm {
    /// The integer `normalization` argument of `_fft_c2c` and friends.
    pub fn from_code(code: i64) -> Result<FftNorm> {
        match code {
            0 => Ok(FftNorm::None),
            1 => Ok(FftNorm::ByRootN),
            2 => Ok(FftNorm::ByN),
            other => Err(invalid(format!("Invalid normalization mode: {other}"))),
        }
    }

    /// `norm_from_string`: torch.fft's `norm` argument for a transform in the given
    /// direction. "backward" (the default) scales only the inverse, "forward" only the
    /// forward transform, "ortho" both by 1/sqrt(n).
    pub fn from_name(norm: Option<&str>, forward: bool) -> Result<FftNorm> {
        match norm {
            None | Some("backward") => Ok(if forward { FftNorm::None } else { FftNorm::ByN }),
            Some("forward") => Ok(if forward { FftNorm::ByN } else { FftNorm::None }),
            Some("ortho") => Ok(FftNorm::ByRootN),
            Some(other) => Err(invalid(format!("Invalid normalization mode: \"{other}\""))),
        }
    }

    fn scale(self, signal_numel: usize) -> f64 {
        let n = signal_numel as f64;
        match self {
            FftNorm::None => 1.0,
            FftNorm::ByRootN => 1.0 / n.sqrt(),
            FftNorm::ByN => 1.0 / n,
        }
    }
}

/// Complex values in row-major order with their sizes: the working form of every transform.
struct Spectrum {
    values: Vec<Complex<f64>>,
    sizes: Vec<usize>,
}

impl Spectrum {
    fn of(input: &Tensor) -> Spectrum {
        let values = input
            .gather::<Complex128>()
            .into_iter()
            .map(Complex128::to_num)
            .collect();
        Spectrum {
            values,
            sizes: input.sizes().to_vec(),
        }
    }

    /// Runs a 1-D transform over every line along `dim`, in place.
    fn transform_dim(&mut self, dim: usize, forward: bool, planner: &mut FftPlanner<f64>) {
        let n = self.sizes[dim];
        if n == 0 || self.values.is_empty() {
            return;
        }
        let inner: usize = self.sizes[dim + 1..].iter().product();
        let outer: usize = self.sizes[..dim].iter().product();
        let plan = if forward {
            planner.plan_fft_forward(n)
        } else {
            planner.plan_fft_inverse(n)
        };
        let mut line = vec![Complex::new(0.0, 0.0); n];
        let mut scratch = vec![Complex::new(0.0, 0.0); plan.get_inplace_scratch_len()];
        for o in 0..outer {
            for i in 0..inner {
                let base = o * n * inner + i;
                for (k, slot) in line.iter_mut().enumerate() {
                    *slot = self.values[base + k * inner];
                }
                plan.process_with_scratch(&mut line, &mut scratch);
                for (k, value) in line.iter().enumerate() {
                    self.values[base + k * inner] = *value;
                }
            }
        }
    }

    fn scale(&mut self, factor: f64) {
        if factor != 1.0 {
            for value in &mut self.values {
                *value *= factor;
            }
        }
    }

    /// Keeps the first `keep` entries along `dim`.
    fn truncate_dim(&mut self, dim: usize, keep: usize) {
        let n = self.sizes[dim];
        let inner: usize = self.sizes[dim + 1..].iter().product();
        let outer: usize = self.sizes[..dim].iter().product();
        let mut kept = Vec::with_capacity(outer * keep * inner);
        for o in 0..outer {
            let start = o * n * inner;
            kept.extend_from_slice(&self.values[start..start + keep * inner]);
        }
        self.values = kept;
        self.sizes[dim] = keep;
    }

    /// Rebuilds a full Hermitian signal of length `full` along `dim` from its first
    /// `full / 2 + 1` entries: entry k >= that is the conjugate of entry `full - k`.
    fn extend_hermitian(&mut self, dim: usize, full: usize) {
        let half = self.sizes[dim];
        let inner: usize = self.sizes[dim + 1..].iter().product();
        let outer: usize = self.sizes[..dim].iter().product();
        let mut values = vec![Complex::new(0.0, 0.0); outer * full * inner];
        for o in 0..outer {
            for k in 0..full {
                let (from, conjugate) = if k < half {
                    (k, false)
                } else {
                    (full - k, true)
                };
                if from >= half {
                    continue;
                }
                for i in 0..inner {
                    let value = self.values[(o * half + from) * inner + i];
                    values[(o * full + k) * inner + i] =
                        if conjugate { value.conj() } else { value };
                }
            }
        }
        self.values = values;
        self.sizes[dim] = full;
    }

    fn into_complex(self, dtype: DType) -> Tensor {
        if dtype == DType::ComplexFloat {
            let narrow: Vec<Complex64> = self
                .values
                .into_iter()
                .map(|z| Complex64::new(z.re as f32, z.im as f32))
                .collect();
            Tensor::from_values(narrow, &self.sizes)
        } else {
            let wide: Vec<Complex128> = self.values.into_iter().map(Complex128::from_num).collect();
            Tensor::from_values(wide, &self.sizes)
        }
    }

    fn into_real(self, dtype: DType) -> Tensor {
        if dtype == DType::Float32 {
            let narrow: Vec<f32> = self.values.into_iter().map(|z| z.re as f32).collect();
            Tensor::from_values(narrow, &self.sizes)
        } else {
            let wide: Vec<f64> = self.values.into_iter().map(|z| z.re).collect();
            Tensor::from_values(wide, &self.sizes)
        }
    }
}

/// Wraps and checks a dimension list (each dimension once).
fn fft_dims(input: &Tensor, dims: &[i64]) -> Result<Vec<usize>> {
    let mut wrapped = Vec::with_capacity(dims.len());
    for &dim in dims {
        let d = wrap_dim(dim, input.dim())?;
        if wrapped.contains(&d) {
            return Err(invalid("FFT dims must be unique"));
        }
        wrapped.push(d);
    }
    Ok(wrapped)
}

fn signal_numel(sizes: &[usize], dims: &[usize]) -> usize {
    dims.iter().map(|&d| sizes[d]).product()
}

impl Tensor {
    /// `aten::_fft_c2c`: complex-to-complex transform over `dims`, forward or inverse.
    pub fn fft_c2c(&self, dims: &[i64], normalization: i64, forward: bool) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Err(invalid(format!(
                "Only supports complex dtypes, but found: {}",
                self.dtype().scalar_type_name()
            )));
        }
        let norm = FftNorm::from_code(normalization)?;
        let dims = fft_dims(self, dims)?;
        let mut spectrum = Spectrum::of(self);
        let mut planner = FftPlanner::new();
        for &d in &dims {
            spectrum.transform_dim(d, forward, &mut planner);
        }
        spectrum.scale(norm.scale(signal_numel(self.sizes(), &dims)));
        Ok(spectrum.into_complex(self.dtype()))
    }

    /// `aten::_fft_r2c`: forward transform of a real float tensor over `dims`; `onesided`
    /// keeps only the `n / 2 + 1` non-redundant entries of the last dimension in `dims`.
    pub fn fft_r2c(&self, dims: &[i64], normalization: i64, onesided: bool) -> Result<Tensor> {
        let dtype = self.dtype();
        if !matches!(dtype, DType::Float32 | DType::Float64) {
            return Err(invalid(format!(
                "Only supports floating-point dtypes, but found: {}",
                dtype.scalar_type_name()
            )));
        }
        let norm = FftNorm::from_code(normalization)?;
        let dims = fft_dims(self, dims)?;
        let mut spectrum = Spectrum::of(self);
        let mut planner = FftPlanner::new();
        for &d in &dims {
            spectrum.transform_dim(d, true, &mut planner);
        }
        spectrum.scale(norm.scale(signal_numel(self.sizes(), &dims)));
        if onesided {
            if let Some(&last) = dims.last() {
                let keep = self.sizes()[last] / 2 + 1;
                spectrum.truncate_dim(last, keep.min(self.sizes()[last]));
            }
        }
        Ok(spectrum.into_complex(dtype.to_complex().unwrap_or(DType::ComplexFloat)))
    }

    /// `aten::_fft_c2r`: inverse transform of a one-sided Hermitian spectrum over `dims`
    /// giving a real tensor whose last transformed dimension has `last_dim_size` entries.
    /// The input's last dimension holds `last_dim_size / 2 + 1` entries (more are ignored,
    /// as pocketfft does; fewer are taken as zeros).
    pub fn fft_c2r(&self, dims: &[i64], normalization: i64, last_dim_size: i64) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Err(invalid(format!(
                "Only supports complex dtypes, but found: {}",
                self.dtype().scalar_type_name()
            )));
        }
        if last_dim_size < 1 {
            return Err(invalid(format!(
                "Invalid number of data points ({last_dim_size}) specified"
            )));
        }
        let norm = FftNorm::from_code(normalization)?;
        let dims = fft_dims(self, dims)?;
        let Some(&last) = dims.last() else {
            return Err(invalid("_fft_c2r expects at least one dimension"));
        };
        let full = last_dim_size as usize;
        let mut spectrum = Spectrum::of(self);
        if spectrum.sizes[last] > full / 2 + 1 {
            spectrum.truncate_dim(last, full / 2 + 1);
        }
        let mut planner = FftPlanner::new();
        // The other dimensions are ordinary inverse transforms; the last one rebuilds the
        // redundant half from Hermitian symmetry, and the real part of its inverse is the
        // answer (the imaginary parts that DC and Nyquist terms contribute are dropped, as a
        // real-output transform drops them).
        for &d in &dims[..dims.len() - 1] {
            spectrum.transform_dim(d, false, &mut planner);
        }
        spectrum.extend_hermitian(last, full);
        spectrum.transform_dim(last, false, &mut planner);
        spectrum.scale(norm.scale(signal_numel(&spectrum.sizes, &dims)));
        Ok(spectrum.into_real(self.dtype().to_real()))
    }
}

// ----- torch.fft ------------------------------------------------------------------------

/// `promote_tensor_fft`: integers become the default float dtype; half types are refused
/// (PyTorch's CPU transforms have none); with `require_complex`, real becomes complex.
fn promote_for_fft(input: &Tensor, require_complex: bool) -> Result<Tensor> {
    let dtype = input.dtype();
    if matches!(dtype, DType::Float16 | DType::BFloat16) {
        return Err(invalid(format!(
            "Unsupported dtype {}",
            dtype.scalar_type_name()
        )));
    }
    let mut target = if dtype.is_floating_point() || dtype.is_complex() {
        dtype
    } else {
        DType::default_float()
    };
    if require_complex {
        target = target.to_complex().unwrap_or(DType::ComplexFloat);
    }
    Ok(if target == dtype {
        input.clone()
    } else {
        input.to_dtype(target)
    })
}

/// `resize_fft_input`: each of `dims` trimmed or zero-padded (at the end) to its size in `sizes`.
fn resize_fft_input(input: &Tensor, dims: &[usize], sizes: &[usize]) -> Result<Tensor> {
    let mut result = input.clone();
    let mut padded_sizes = input.sizes().to_vec();
    let mut needs_pad = false;
    for (&d, &size) in dims.iter().zip(sizes) {
        let current = result.sizes()[d];
        if size < current {
            result = result.narrow(d as i64, 0, size as i64)?;
        } else if size > current {
            needs_pad = true;
        }
        padded_sizes[d] = size;
    }
    if !needs_pad {
        return Ok(result);
    }
    let padded = Tensor::zeros(&padded_sizes, result.dtype())?;
    let mut region = padded.clone();
    for (d, &size) in result.sizes().iter().enumerate() {
        region = region.narrow(d as i64, 0, size as i64)?;
    }
    region.write_from(&result)?;
    Ok(padded)
}

fn check_points(n: i64) -> Result<usize> {
    if n < 1 {
        return Err(invalid(format!(
            "Invalid number of data points ({n}) specified"
        )));
    }
    Ok(n as usize)
}

/// `canonicalize_fft_shape_and_dim_args`: the transformed dimensions and their signal
/// sizes from torch.fft's optional `s` and `dim`. Without either every dimension is
/// transformed; `s` alone names the last `len(s)` dimensions; a size of -1 keeps the input's.
fn shape_and_dims(
    input: &Tensor,
    s: Option<&[i64]>,
    dim: Option<&[i64]>,
) -> Result<(Vec<usize>, Vec<i64>)> {
    let dims: Vec<usize> = match (dim, s) {
        (Some(dim), _) => fft_dims(input, dim)?,
        (None, Some(s)) => {
            if s.len() > input.dim() {
                return Err(invalid(format!(
                    "Got shape with {} values but input tensor only has {} dimensions.",
                    s.len(),
                    input.dim()
                )));
            }
            (input.dim() - s.len()..input.dim()).collect()
        }
        (None, None) => (0..input.dim()).collect(),
    };
    let shape: Vec<i64> = match s {
        Some(s) => {
            if s.len() != dims.len() {
                return Err(invalid(format!(
                    "When given, dim and shape arguments must have the same length. Got dim={} and shape={}",
                    dims.len(),
                    s.len()
                )));
            }
            s.iter()
                .zip(&dims)
                .map(|(&size, &d)| {
                    if size == -1 {
                        input.sizes()[d] as i64
                    } else {
                        size
                    }
                })
                .collect()
        }
        None => dims.iter().map(|&d| input.sizes()[d] as i64).collect(),
    };
    for &size in &shape {
        check_points(size)?;
    }
    Ok((dims, shape))
}

fn as_i64(dims: &[usize]) -> Vec<i64> {
    dims.iter().map(|&d| d as i64).collect()
}

impl Tensor {
    /// `torch.fft.fftn` (and `fft`, `fft2`) when `forward`, `ifftn` (and `ifft`, `ifft2`)
    /// otherwise: complex output of any input.
    pub fn fftn(
        &self,
        s: Option<&[i64]>,
        dim: Option<&[i64]>,
        norm: Option<&str>,
        forward: bool,
    ) -> Result<Tensor> {
        let input = promote_for_fft(self, true)?;
        let (dims, shape) = shape_and_dims(&input, s, dim)?;
        let sizes: Vec<usize> = shape.iter().map(|&n| n as usize).collect();
        let input = resize_fft_input(&input, &dims, &sizes)?;
        let norm = FftNorm::from_name(norm, forward)?;
        input.fft_c2c(&as_i64(&dims), norm as i64, forward)
    }

    /// `torch.fft.fft` / `ifft`: one dimension, optional length `n`.
    pub fn fft_1d(
        &self,
        n: Option<i64>,
        dim: i64,
        norm: Option<&str>,
        forward: bool,
    ) -> Result<Tensor> {
        let s = n.map(|n| vec![n]);
        self.fftn(s.as_deref(), Some(&[dim]), norm, forward)
    }

    /// `torch.fft.rfftn` (and `rfft`, `rfft2`): real input, one-sided complex output.
    pub fn rfftn(
        &self,
        s: Option<&[i64]>,
        dim: Option<&[i64]>,
        norm: Option<&str>,
    ) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return Err(invalid(format!(
                "rfftn expects a real-valued input tensor, but got {}",
                self.dtype().scalar_type_name()
            )));
        }
        let input = promote_for_fft(self, false)?;
        let (dims, shape) = shape_and_dims(&input, s, dim)?;
        if dims.is_empty() {
            return Err(invalid("rfftn must transform at least one axis"));
        }
        let sizes: Vec<usize> = shape.iter().map(|&n| n as usize).collect();
        let input = resize_fft_input(&input, &dims, &sizes)?;
        let norm = FftNorm::from_name(norm, true)?;
        input.fft_r2c(&as_i64(&dims), norm as i64, true)
    }

    /// `torch.fft.rfft`.
    pub fn rfft(&self, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return Err(invalid(format!(
                "rfft expects a real input tensor, but got {}",
                self.dtype().scalar_type_name()
            )));
        }
        let s = n.map(|n| vec![n]);
        self.rfftn(s.as_deref(), Some(&[dim]), norm)
    }

    /// `torch.fft.irfftn` (and `irfft`, `irfft2`): one-sided complex input, real output whose
    /// last transformed dimension has `s[-1]` entries (default `2 * (m - 1)`).
    pub fn irfftn(
        &self,
        s: Option<&[i64]>,
        dim: Option<&[i64]>,
        norm: Option<&str>,
    ) -> Result<Tensor> {
        let input = promote_for_fft(self, true)?;
        let (dims, mut shape) = shape_and_dims(&input, s, dim)?;
        let Some(&last) = dims.last() else {
            return Err(invalid("irfftn must transform at least one axis"));
        };
        let last_dim_size = match s {
            Some(s) if s.last().is_some_and(|&n| n != -1) => shape[shape.len() - 1],
            _ => 2 * (input.sizes()[last] as i64 - 1),
        };
        let last_dim_size = check_points(last_dim_size)? as i64;
        let index = shape.len() - 1;
        shape[index] = last_dim_size / 2 + 1;
        let sizes: Vec<usize> = shape.iter().map(|&n| n as usize).collect();
        let input = resize_fft_input(&input, &dims, &sizes)?;
        let norm = FftNorm::from_name(norm, false)?;
        input.fft_c2r(&as_i64(&dims), norm as i64, last_dim_size)
    }

    /// `torch.fft.irfft`.
    pub fn irfft(&self, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
        let s = n.map(|n| vec![n]);
        self.irfftn(s.as_deref(), Some(&[dim]), norm)
    }

    /// `torch.fft.hfft`: the real signal whose one-sided spectrum is `self`'s conjugate
    /// (a forward transform of a Hermitian signal).
    pub fn hfft(&self, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
        let input = promote_for_fft(self, true)?;
        let d = wrap_dim(dim, input.dim())?;
        let n = match n {
            Some(n) => n,
            None => 2 * (input.sizes()[d] as i64 - 1),
        };
        let n = check_points(n)? as i64;
        let input = resize_fft_input(&input, &[d], &[(n / 2 + 1) as usize])?;
        let norm = FftNorm::from_name(norm, true)?;
        input.conj()?.fft_c2r(&[d as i64], norm as i64, n)
    }

    /// `torch.fft.ihfft`: the inverse of `hfft`, a one-sided spectrum of a real signal.
    pub fn ihfft(&self, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return Err(invalid(format!(
                "ihfft expects a real input tensor, but got {}",
                self.dtype().scalar_type_name()
            )));
        }
        let input = promote_for_fft(self, false)?;
        let d = wrap_dim(dim, input.dim())?;
        let n = match n {
            Some(n) => check_points(n)?,
            None => check_points(input.sizes()[d] as i64)?,
        };
        let input = resize_fft_input(&input, &[d], &[n])?;
        let norm = FftNorm::from_name(norm, false)?;
        input.fft_r2c(&[d as i64], norm as i64, true)?.conj()
    }

    /// `torch.fft.hfftn` (and `hfft2`): the real signal whose one-sided Hermitian spectrum is
    /// `self`, over several dimensions. As ATen: a forward complex transform over all but the
    /// last dimension, then the conjugate's complex-to-real transform over the last one, whose
    /// size is `s[-1]` (default `2 * (m - 1)`).
    pub fn hfftn(
        &self,
        s: Option<&[i64]>,
        dim: Option<&[i64]>,
        norm: Option<&str>,
    ) -> Result<Tensor> {
        let (dims, mut shape) = shape_and_dims(self, s, dim)?;
        let Some(&last) = dims.last() else {
            return Err(invalid("hfftn must transform at least one axis"));
        };
        let last_dim_size = match s {
            Some(s) if s.last().is_some_and(|&n| n != -1) => shape[shape.len() - 1],
            _ => 2 * (self.sizes()[last] as i64 - 1),
        };
        let last_dim_size = check_points(last_dim_size)? as i64;
        let index = shape.len() - 1;
        shape[index] = last_dim_size / 2 + 1;
        let input = promote_for_fft(self, true)?;
        let sizes: Vec<usize> = shape.iter().map(|&n| n as usize).collect();
        let input = resize_fft_input(&input, &dims, &sizes)?;
        let norm = FftNorm::from_name(norm, true)? as i64;
        let leading = &dims[..dims.len() - 1];
        let partial = if leading.is_empty() {
            input
        } else {
            input.fft_c2c(&as_i64(leading), norm, true)?
        };
        partial.conj()?.fft_c2r(&[last as i64], norm, last_dim_size)
    }

    /// `torch.fft.ihfftn` (and `ihfft2`): the inverse of `hfftn`. As ATen: a one-sided
    /// real-to-complex transform over the last dimension, conjugated, then an inverse
    /// complex transform over the others.
    pub fn ihfftn(
        &self,
        s: Option<&[i64]>,
        dim: Option<&[i64]>,
        norm: Option<&str>,
    ) -> Result<Tensor> {
        let (dims, shape) = shape_and_dims(self, s, dim)?;
        let Some(&last) = dims.last() else {
            return Err(invalid("ihfftn must transform at least one axis"));
        };
        if self.dtype().is_complex() {
            // ATen's one-sided transform refuses it (`_fft_r2c`'s dtype check).
            return Err(invalid(format!(
                "Only supports floating-point dtypes, but found: {}",
                self.dtype().scalar_type_name()
            )));
        }
        let input = promote_for_fft(self, false)?;
        let sizes: Vec<usize> = shape.iter().map(|&n| n as usize).collect();
        let input = resize_fft_input(&input, &dims, &sizes)?;
        let norm = FftNorm::from_name(norm, false)? as i64;
        let spectrum = input.fft_r2c(&[last as i64], norm, true)?.conj()?;
        let leading = &dims[..dims.len() - 1];
        if leading.is_empty() {
            return Ok(spectrum);
        }
        spectrum.fft_c2c(&as_i64(leading), norm, false)
    }

    /// `torch.fft.fftshift` (`inverse` false) and `ifftshift`: roll each of `dims` (all by
    /// default) by half its size, moving the zero frequency to the centre and back.
    pub fn fftshift(&self, dims: Option<&[i64]>, inverse: bool) -> Result<Tensor> {
        let dims: Vec<i64> = match dims {
            Some(dims) => dims.to_vec(),
            None => (0..self.dim() as i64).collect(),
        };
        let mut shifts = Vec::with_capacity(dims.len());
        for &dim in &dims {
            let size = self.sizes()[wrap_dim(dim, self.dim())?] as i64;
            shifts.push(if inverse { (size + 1) / 2 } else { size / 2 });
        }
        if dims.is_empty() {
            return Ok(self.clone());
        }
        self.roll(&shifts, &dims)
    }

    /// `torch.fft.fftfreq(n, d)` (`onesided` false) and `rfftfreq`: the sample frequencies
    /// of a transform of length `n` with sample spacing `d`.
    pub fn fft_frequencies(n: i64, d: f64, onesided: bool, dtype: Option<DType>) -> Result<Tensor> {
        if n < 0 {
            return Err(invalid(format!(
                "Trying to create tensor with negative dimension {n}: [{n}]"
            )));
        }
        let dtype = dtype.unwrap_or(DType::default_float());
        if !dtype.is_floating_point() && !dtype.is_complex() {
            return Err(invalid(format!(
                "fftfreq requires a floating point or complex dtype, but got {}",
                dtype.scalar_type_name()
            )));
        }
        let scale = 1.0 / (n as f64 * d);
        let values: Vec<f64> = if onesided {
            (0..n / 2 + 1).map(|k| k as f64 * scale).collect()
        } else {
            (0..n)
                .map(|k| {
                    let index = if k < (n + 1) / 2 { k } else { k - n };
                    index as f64 * scale
                })
                .collect()
        };
        let len = values.len();
        Ok(Tensor::from_values(values, &[len]).to_dtype(dtype))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impulse_has_a_flat_spectrum_and_round_trips() {
        let signal = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 0.0, 0.0], &[5]).unwrap();
        let spectrum = signal.fft_r2c(&[0], 0, true).unwrap();
        assert_eq!(spectrum.sizes(), &[3]);
        for z in spectrum.to_vec::<Complex128>().unwrap() {
            assert!((z.re - 1.0).abs() < 1e-12 && z.im.abs() < 1e-12);
        }
        let back = spectrum.fft_c2r(&[0], 2, 5).unwrap();
        let values = back.to_vec::<f64>().unwrap();
        assert!((values[0] - 1.0).abs() < 1e-12);
        assert!(values[1..].iter().all(|v| v.abs() < 1e-12));
    }

    #[test]
    fn norms_follow_the_direction() {
        assert_eq!(FftNorm::from_name(None, true).unwrap(), FftNorm::None);
        assert_eq!(FftNorm::from_name(None, false).unwrap(), FftNorm::ByN);
        assert_eq!(
            FftNorm::from_name(Some("forward"), true).unwrap(),
            FftNorm::ByN
        );
        assert_eq!(
            FftNorm::from_name(Some("ortho"), false).unwrap(),
            FftNorm::ByRootN
        );
        assert!(FftNorm::from_name(Some("sideways"), true).is_err());
        assert!(FftNorm::from_code(3).is_err());
    }

    #[test]
    fn bad_arguments_are_refused() {
        let signal = Tensor::zeros(&[4, 3], DType::Float32).unwrap();
        assert!(signal.fft_c2c(&[0], 0, true).is_err());
        assert!(signal.fftn(None, Some(&[0, 0]), None, true).is_err());
        assert!(signal.fft_1d(Some(0), -1, None, true).is_err());
        let spectrum = signal.fft_r2c(&[1], 0, true).unwrap();
        assert!(spectrum.fft_r2c(&[0], 0, true).is_err());
        assert!(spectrum.fft_c2r(&[1], 0, 0).is_err());
        assert!(spectrum.rfft(None, -1, None).is_err());
    }
}
