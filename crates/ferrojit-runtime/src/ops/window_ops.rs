//! The window functions (`hann_window`, `hamming_window`, `blackman_window`,
//! `bartlett_window`, `kaiser_window`) with every overload: schemas and argument binding. The
//! kernel is `ferrojit_tensor::spectral::windows`.

use ferrojit_tensor::spectral::windows::{window, Window};
use ferrojit_tensor::{DType, Tensor};

use super::binding::{typed, CpuDevice};
use super::creation_ops::Unread;
use crate::error::Result;
use crate::opdef::OperatorDeclaration;

/// Every window takes the same creation keywords; only dtype is read (CPU only).
const OPTIONS: &str =
    "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";

fn make(
    op: &'static str,
    shape: Window,
    length: i64,
    periodic: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    Ok(window(
        op,
        shape,
        length,
        periodic,
        dtype.unwrap_or(DType::default_float()),
    )?)
}

/// The `.out` form: the window in `out`'s dtype, written into it.
fn make_out(
    op: &'static str,
    shape: Window,
    length: i64,
    periodic: bool,
    out: &Tensor,
) -> Result<Tensor> {
    Ok(window(op, shape, length, periodic, out.dtype())?.write_into_out(out)?)
}

/// Declares `NAME`, `NAME.periodic` and their `out` forms for a window with no parameters
/// beyond `periodic` (the default window is periodic).
fn plain(declarations: &mut Vec<OperatorDeclaration>, op: &'static str, shape: Window) {
    declarations.push(typed(
        &format!("aten::{op}(int window_length, {OPTIONS}) -> Tensor"),
        move |length: i64, dtype: Option<DType>, _l: Unread, _d: CpuDevice, _p: Unread| {
            make(op, shape, length, true, dtype)
        },
    ));
    declarations.push(typed(
        &format!("aten::{op}.periodic(int window_length, bool periodic, {OPTIONS}) -> Tensor"),
        move |length: i64,
              periodic: bool,
              dtype: Option<DType>,
              _l: Unread,
              _d: CpuDevice,
              _p: Unread| { make(op, shape, length, periodic, dtype) },
    ));
    declarations.push(typed(
        &format!("aten::{op}.out(int window_length, *, Tensor(a!) out) -> Tensor(a!)"),
        move |length: i64, out: std::sync::Arc<Tensor>| make_out(op, shape, length, true, &out),
    ));
    declarations.push(typed(
        &format!("aten::{op}.periodic_out(int window_length, bool periodic, *, Tensor(a!) out) -> Tensor(a!)"),
        move |length: i64, periodic: bool, out: std::sync::Arc<Tensor>| {
            make_out(op, shape, length, periodic, &out)
        },
    ));
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    let mut declarations = Vec::new();
    let hann = Window::Hamming {
        alpha: 0.5,
        beta: 0.5,
    };
    let hamming = Window::Hamming {
        alpha: 0.54,
        beta: 0.46,
    };
    plain(&mut declarations, "hann_window", hann);
    plain(&mut declarations, "hamming_window", hamming);
    plain(&mut declarations, "blackman_window", Window::Blackman);
    plain(&mut declarations, "bartlett_window", Window::Bartlett);
    plain(
        &mut declarations,
        "kaiser_window",
        Window::Kaiser { beta: 12.0 },
    );
    let op = "hamming_window";
    declarations.extend([
        typed(
            &format!("aten::hamming_window.periodic_alpha(int window_length, bool periodic, float alpha, {OPTIONS}) -> Tensor"),
            move |length: i64, periodic: bool, alpha: f64, dtype: Option<DType>, _l: Unread, _d: CpuDevice, _p: Unread| {
                make(op, Window::Hamming { alpha, beta: 0.46 }, length, periodic, dtype)
            },
        ),
        typed(
            &format!("aten::hamming_window.periodic_alpha_beta(int window_length, bool periodic, float alpha, float beta, {OPTIONS}) -> Tensor"),
            move |length: i64, periodic: bool, alpha: f64, beta: f64, dtype: Option<DType>, _l: Unread, _d: CpuDevice, _p: Unread| {
                make(op, Window::Hamming { alpha, beta }, length, periodic, dtype)
            },
        ),
        typed(
            "aten::hamming_window.periodic_alpha_out(int window_length, bool periodic, float alpha, *, Tensor(a!) out) -> Tensor(a!)",
            move |length: i64, periodic: bool, alpha: f64, out: std::sync::Arc<Tensor>| {
                make_out(op, Window::Hamming { alpha, beta: 0.46 }, length, periodic, &out)
            },
        ),
        typed(
            "aten::hamming_window.periodic_alpha_beta_out(int window_length, bool periodic, float alpha, float beta, *, Tensor(a!) out) -> Tensor(a!)",
            move |length: i64, periodic: bool, alpha: f64, beta: f64, out: std::sync::Arc<Tensor>| {
                make_out(op, Window::Hamming { alpha, beta }, length, periodic, &out)
            },
        ),
        typed(
            &format!("aten::kaiser_window.beta(int window_length, bool periodic, float beta, {OPTIONS}) -> Tensor"),
            move |length: i64, periodic: bool, beta: f64, dtype: Option<DType>, _l: Unread, _d: CpuDevice, _p: Unread| {
                make("kaiser_window", Window::Kaiser { beta }, length, periodic, dtype)
            },
        ),
        typed(
            "aten::kaiser_window.beta_out(int window_length, bool periodic, float beta, *, Tensor(a!) out) -> Tensor(a!)",
            move |length: i64, periodic: bool, beta: f64, out: std::sync::Arc<Tensor>| {
                make_out("kaiser_window", Window::Kaiser { beta }, length, periodic, &out)
            },
        ),
    ]);
    declarations
}
