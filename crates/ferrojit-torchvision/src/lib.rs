//! torchvision's C++ operators (`torchvision::nms`, `roi_align`, `roi_pool`, `ps_roi_align`,
//! `ps_roi_pool`, `deform_conv2d`, `box_iou_rotated`) for ferrojit, with torchvision's schemas and CPU semantics, registered
//! through ferrojit's public custom-operator API so that scripted detection models (which
//! call `ops.torchvision.nms(...)`) load and run.
//!
//! Call [`register`] once before running a model; later calls do nothing.

pub mod box_iou_rotated;
pub mod error;
pub mod kernels;
mod real;

use std::sync::OnceLock;

use ferrojit_runtime::registry::{pop_arguments, OperatorRegistry, Stack};
use ferrojit_runtime::{IValue, RuntimeError};
use ferrojit_tensor::Tensor;

pub use error::TorchvisionError;

/// torchvision's schemas, as `torch.ops.torchvision.<op>.default._schema` prints them.
pub const SCHEMAS: [&str; 7] = [
    "torchvision::nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "torchvision::roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "torchvision::roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) -> (Tensor, Tensor)",
    "torchvision::ps_roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, int sampling_ratio) -> (Tensor, Tensor)",
    "torchvision::ps_roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) -> (Tensor, Tensor)",
    "torchvision::box_iou_rotated(Tensor boxes1, Tensor boxes2) -> Tensor",
    "torchvision::deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask) -> Tensor",
];

/// Registers the seven operators in the global registry (idempotent: the first call's result
/// is returned by every later call).
pub fn register() -> Result<(), RuntimeError> {
    static RESULT: OnceLock<Result<(), RuntimeError>> = OnceLock::new();
    RESULT
        .get_or_init(|| register_into(OperatorRegistry::global()))
        .clone()
}

/// Registers the seven operators in `registry` (fails if any is already there).
pub fn register_into(registry: &OperatorRegistry) -> Result<(), RuntimeError> {
    let [nms, roi_align, roi_pool, ps_roi_align, ps_roi_pool, box_iou_rotated, deform_conv2d] =
        SCHEMAS;
    registry.add_operator(nms, std::sync::Arc::new(nms_kernel))?;
    registry.add_operator(roi_align, std::sync::Arc::new(roi_align_kernel))?;
    registry.add_operator(roi_pool, std::sync::Arc::new(roi_pool_kernel))?;
    registry.add_operator(ps_roi_align, std::sync::Arc::new(ps_roi_align_kernel))?;
    registry.add_operator(ps_roi_pool, std::sync::Arc::new(ps_roi_pool_kernel))?;
    registry.add_operator(box_iou_rotated, std::sync::Arc::new(box_iou_rotated_kernel))?;
    registry.add_operator(deform_conv2d, std::sync::Arc::new(deform_conv2d_kernel))?;
    Ok(())
}

fn to_runtime(operator: &str, error: TorchvisionError) -> RuntimeError {
    RuntimeError::Other(format!("torchvision::{operator}: {error}"))
}

fn int_argument(value: &IValue) -> Result<i64, RuntimeError> {
    value.to_int()
}

fn nms_kernel(stack: &mut Stack) -> Result<(), RuntimeError> {
    let [dets, scores, threshold] = pop_arguments::<3>(stack)?;
    let keep = kernels::nms(
        &*dets.to_tensor()?,
        &*scores.to_tensor()?,
        threshold.to_double()?,
    )
    .map_err(|e| to_runtime("nms", e))?;
    stack.push(IValue::from(keep));
    Ok(())
}

fn roi_align_kernel(stack: &mut Stack) -> Result<(), RuntimeError> {
    let [input, rois, scale, height, width, sampling, aligned] = pop_arguments::<7>(stack)?;
    let output = kernels::roi_align(
        &*input.to_tensor()?,
        &*rois.to_tensor()?,
        scale.to_double()?,
        int_argument(&height)?,
        int_argument(&width)?,
        int_argument(&sampling)?,
        aligned.to_bool()?,
    )
    .map_err(|e| to_runtime("roi_align", e))?;
    stack.push(IValue::from(output));
    Ok(())
}

fn push_pair(stack: &mut Stack, (first, second): (Tensor, Tensor)) {
    stack.push(IValue::from(first));
    stack.push(IValue::from(second));
}

fn roi_pool_kernel(stack: &mut Stack) -> Result<(), RuntimeError> {
    let [input, rois, scale, height, width] = pop_arguments::<5>(stack)?;
    let outputs = kernels::roi_pool(
        &*input.to_tensor()?,
        &*rois.to_tensor()?,
        scale.to_double()?,
        int_argument(&height)?,
        int_argument(&width)?,
    )
    .map_err(|e| to_runtime("roi_pool", e))?;
    push_pair(stack, outputs);
    Ok(())
}

fn ps_roi_align_kernel(stack: &mut Stack) -> Result<(), RuntimeError> {
    let [input, rois, scale, height, width, sampling] = pop_arguments::<6>(stack)?;
    let outputs = kernels::ps_roi_align(
        &*input.to_tensor()?,
        &*rois.to_tensor()?,
        scale.to_double()?,
        int_argument(&height)?,
        int_argument(&width)?,
        int_argument(&sampling)?,
    )
    .map_err(|e| to_runtime("ps_roi_align", e))?;
    push_pair(stack, outputs);
    Ok(())
}

fn ps_roi_pool_kernel(stack: &mut Stack) -> Result<(), RuntimeError> {
    let [input, rois, scale, height, width] = pop_arguments::<5>(stack)?;
    let outputs = kernels::ps_roi_pool(
        &*input.to_tensor()?,
        &*rois.to_tensor()?,
        scale.to_double()?,
        int_argument(&height)?,
        int_argument(&width)?,
    )
    .map_err(|e| to_runtime("ps_roi_pool", e))?;
    push_pair(stack, outputs);
    Ok(())
}

fn box_iou_rotated_kernel(stack: &mut Stack) -> Result<(), RuntimeError> {
    let [boxes1, boxes2] = pop_arguments::<2>(stack)?;
    let ious = box_iou_rotated::box_iou_rotated(&*boxes1.to_tensor()?, &*boxes2.to_tensor()?)
        .map_err(|e| to_runtime("box_iou_rotated", e))?;
    stack.push(IValue::from(ious));
    Ok(())
}

fn deform_conv2d_kernel(stack: &mut Stack) -> Result<(), RuntimeError> {
    let [input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups, offset_groups, use_mask] =
        pop_arguments::<14>(stack)?;
    let parameters = kernels::DeformConvParameters {
        stride: (int_argument(&stride_h)?, int_argument(&stride_w)?),
        padding: (int_argument(&pad_h)?, int_argument(&pad_w)?),
        dilation: (int_argument(&dilation_h)?, int_argument(&dilation_w)?),
        groups: int_argument(&groups)?,
        offset_groups: int_argument(&offset_groups)?,
        use_mask: use_mask.to_bool()?,
    };
    let output = kernels::deform_conv2d(
        &*input.to_tensor()?,
        &*weight.to_tensor()?,
        &*offset.to_tensor()?,
        &*mask.to_tensor()?,
        &*bias.to_tensor()?,
        &parameters,
    )
    .map_err(|e| to_runtime("deform_conv2d", e))?;
    stack.push(IValue::from(output));
    Ok(())
}
