//! The Fourier transforms: ATen's primitives `_fft_c2c`, `_fft_r2c` and `_fft_c2r` (what
//! torch.export's core ATen graphs call), and the `torch.fft` functions (`fft_fft`,
//! `fft_rfftn`, `fft_hfft`, `fft_fftfreq`, `fft_fftshift`, ...) with their `out=` forms. The
//! kernels are `ferrojit_tensor::ops::fft`.

use std::sync::Arc;

use ferrojit_tensor::{DType, Tensor};

use super::binding::{out_from_functional, typed, CpuDevice};
use super::creation_ops::Unread;
use crate::error::Result;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

fn fft_r2c(input: Input, dim: Vec<i64>, normalization: i64, onesided: bool) -> Result<Tensor> {
    Ok(input.fft_r2c(&dim, normalization, onesided)?)
}

fn fft_c2r(input: Input, dim: Vec<i64>, normalization: i64, last_dim_size: i64) -> Result<Tensor> {
    Ok(input.fft_c2r(&dim, normalization, last_dim_size)?)
}

fn fft_c2c(input: Input, dim: Vec<i64>, normalization: i64, forward: bool) -> Result<Tensor> {
    Ok(input.fft_c2c(&dim, normalization, forward)?)
}

fn fft(input: Input, n: Option<i64>, dim: i64, norm: Option<String>) -> Result<Tensor> {
    Ok(input.fft_1d(n, dim, norm.as_deref(), true)?)
}

fn ifft(input: Input, n: Option<i64>, dim: i64, norm: Option<String>) -> Result<Tensor> {
    Ok(input.fft_1d(n, dim, norm.as_deref(), false)?)
}

fn rfft(input: Input, n: Option<i64>, dim: i64, norm: Option<String>) -> Result<Tensor> {
    Ok(input.rfft(n, dim, norm.as_deref())?)
}

fn irfft(input: Input, n: Option<i64>, dim: i64, norm: Option<String>) -> Result<Tensor> {
    Ok(input.irfft(n, dim, norm.as_deref())?)
}

fn hfft(input: Input, n: Option<i64>, dim: i64, norm: Option<String>) -> Result<Tensor> {
    Ok(input.hfft(n, dim, norm.as_deref())?)
}

fn ihfft(input: Input, n: Option<i64>, dim: i64, norm: Option<String>) -> Result<Tensor> {
    Ok(input.ihfft(n, dim, norm.as_deref())?)
}

fn fftn(
    input: Input,
    s: Option<Vec<i64>>,
    dim: Option<Vec<i64>>,
    norm: Option<String>,
) -> Result<Tensor> {
    Ok(input.fftn(s.as_deref(), dim.as_deref(), norm.as_deref(), true)?)
}

fn ifftn(
    input: Input,
    s: Option<Vec<i64>>,
    dim: Option<Vec<i64>>,
    norm: Option<String>,
) -> Result<Tensor> {
    Ok(input.fftn(s.as_deref(), dim.as_deref(), norm.as_deref(), false)?)
}

fn rfftn(
    input: Input,
    s: Option<Vec<i64>>,
    dim: Option<Vec<i64>>,
    norm: Option<String>,
) -> Result<Tensor> {
    Ok(input.rfftn(s.as_deref(), dim.as_deref(), norm.as_deref())?)
}

fn irfftn(
    input: Input,
    s: Option<Vec<i64>>,
    dim: Option<Vec<i64>>,
    norm: Option<String>,
) -> Result<Tensor> {
    Ok(input.irfftn(s.as_deref(), dim.as_deref(), norm.as_deref())?)
}

fn hfftn(
    input: Input,
    s: Option<Vec<i64>>,
    dim: Option<Vec<i64>>,
    norm: Option<String>,
) -> Result<Tensor> {
    Ok(input.hfftn(s.as_deref(), dim.as_deref(), norm.as_deref())?)
}

fn ihfftn(
    input: Input,
    s: Option<Vec<i64>>,
    dim: Option<Vec<i64>>,
    norm: Option<String>,
) -> Result<Tensor> {
    Ok(input.ihfftn(s.as_deref(), dim.as_deref(), norm.as_deref())?)
}

fn hfft2(input: Input, s: Option<Vec<i64>>, dim: Vec<i64>, norm: Option<String>) -> Result<Tensor> {
    hfftn(input, s, Some(dim), norm)
}

fn ihfft2(
    input: Input,
    s: Option<Vec<i64>>,
    dim: Vec<i64>,
    norm: Option<String>,
) -> Result<Tensor> {
    ihfftn(input, s, Some(dim), norm)
}

fn fft2(input: Input, s: Option<Vec<i64>>, dim: Vec<i64>, norm: Option<String>) -> Result<Tensor> {
    fftn(input, s, Some(dim), norm)
}

fn ifft2(input: Input, s: Option<Vec<i64>>, dim: Vec<i64>, norm: Option<String>) -> Result<Tensor> {
    ifftn(input, s, Some(dim), norm)
}

fn rfft2(input: Input, s: Option<Vec<i64>>, dim: Vec<i64>, norm: Option<String>) -> Result<Tensor> {
    rfftn(input, s, Some(dim), norm)
}

fn irfft2(
    input: Input,
    s: Option<Vec<i64>>,
    dim: Vec<i64>,
    norm: Option<String>,
) -> Result<Tensor> {
    irfftn(input, s, Some(dim), norm)
}

fn fftfreq(
    n: i64,
    d: f64,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    Ok(Tensor::fft_frequencies(n, d, false, dtype)?)
}

fn rfftfreq(
    n: i64,
    d: f64,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    Ok(Tensor::fft_frequencies(n, d, true, dtype)?)
}

fn fftfreq_values(n: i64, d: f64) -> Result<Tensor> {
    Ok(Tensor::fft_frequencies(n, d, false, None)?)
}

fn rfftfreq_values(n: i64, d: f64) -> Result<Tensor> {
    Ok(Tensor::fft_frequencies(n, d, true, None)?)
}

fn fftshift(input: Input, dim: Option<Vec<i64>>) -> Result<Tensor> {
    Ok(input.fftshift(dim.as_deref(), false)?)
}

fn ifftshift(input: Input, dim: Option<Vec<i64>>) -> Result<Tensor> {
    Ok(input.fftshift(dim.as_deref(), true)?)
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    let mut declarations = vec![
        typed("aten::_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor", fft_r2c),
        out_from_functional("aten::_fft_r2c.out(Tensor self, int[] dim, int normalization, bool onesided, *, Tensor(a!) out) -> Tensor(a!)", fft_r2c),
        typed("aten::_fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size) -> Tensor", fft_c2r),
        out_from_functional("aten::_fft_c2r.out(Tensor self, int[] dim, int normalization, SymInt last_dim_size, *, Tensor(a!) out) -> Tensor(a!)", fft_c2r),
        typed("aten::_fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) -> Tensor", fft_c2c),
        out_from_functional("aten::_fft_c2c.out(Tensor self, SymInt[] dim, int normalization, bool forward, *, Tensor(a!) out) -> Tensor(a!)", fft_c2c),
        typed("aten::fft_fftfreq(int n, float d=1., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", fftfreq),
        out_from_functional("aten::fft_fftfreq.out(int n, float d=1., *, Tensor(a!) out) -> Tensor(a!)", fftfreq_values),
        typed("aten::fft_rfftfreq(int n, float d=1., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", rfftfreq),
        out_from_functional("aten::fft_rfftfreq.out(int n, float d=1., *, Tensor(a!) out) -> Tensor(a!)", rfftfreq_values),
        typed("aten::fft_fftshift(Tensor self, int[1]? dim=None) -> Tensor", fftshift),
        typed("aten::fft_ifftshift(Tensor self, int[1]? dim=None) -> Tensor", ifftshift),
    ];
    type OneDim = fn(Input, Option<i64>, i64, Option<String>) -> Result<Tensor>;
    let one_dim: [(&str, OneDim); 6] = [
        ("fft_fft", fft),
        ("fft_ifft", ifft),
        ("fft_rfft", rfft),
        ("fft_irfft", irfft),
        ("fft_hfft", hfft),
        ("fft_ihfft", ihfft),
    ];
    for (name, kernel) in one_dim {
        let args = "Tensor self, SymInt? n=None, int dim=-1, str? norm=None";
        declarations.push(typed(&format!("aten::{name}({args}) -> Tensor"), kernel));
        declarations.push(out_from_functional(
            &format!("aten::{name}.out({args}, *, Tensor(a!) out) -> Tensor(a!)"),
            kernel,
        ));
    }
    type TwoDim = fn(Input, Option<Vec<i64>>, Vec<i64>, Option<String>) -> Result<Tensor>;
    let two_dim: [(&str, TwoDim); 6] = [
        ("fft_fft2", fft2),
        ("fft_ifft2", ifft2),
        ("fft_rfft2", rfft2),
        ("fft_irfft2", irfft2),
        ("fft_hfft2", hfft2),
        ("fft_ihfft2", ihfft2),
    ];
    for (name, kernel) in two_dim {
        let args = "Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None";
        declarations.push(typed(&format!("aten::{name}({args}) -> Tensor"), kernel));
        declarations.push(out_from_functional(
            &format!("aten::{name}.out({args}, *, Tensor(a!) out) -> Tensor(a!)"),
            kernel,
        ));
    }
    type AnyDims = fn(Input, Option<Vec<i64>>, Option<Vec<i64>>, Option<String>) -> Result<Tensor>;
    let any_dims: [(&str, AnyDims); 6] = [
        ("fft_fftn", fftn),
        ("fft_ifftn", ifftn),
        ("fft_rfftn", rfftn),
        ("fft_irfftn", irfftn),
        ("fft_hfftn", hfftn),
        ("fft_ihfftn", ihfftn),
    ];
    for (name, kernel) in any_dims {
        let args = "Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None";
        declarations.push(typed(&format!("aten::{name}({args}) -> Tensor"), kernel));
        declarations.push(out_from_functional(
            &format!("aten::{name}.out({args}, *, Tensor(a!) out) -> Tensor(a!)"),
            kernel,
        ));
    }
    declarations
}
