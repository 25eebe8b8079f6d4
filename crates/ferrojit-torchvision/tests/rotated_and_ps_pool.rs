//! `torchvision::box_iou_rotated` and `torchvision::ps_roi_pool` against torchvision's own
//! outputs, written by tests/fixtures/torchvision_ops/generate.py.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ferrojit_runtime::registry::OperatorRegistry;
use ferrojit_runtime::IValue;
use ferrojit_serialize::safetensors_io::load_safetensors;
use ferrojit_tensor::{DType, Tensor};
use ferrojit_torchvision::box_iou_rotated::box_iou_rotated;
use ferrojit_torchvision::kernels::ps_roi_pool;

fn fixture(name: &str) -> BTreeMap<String, Tensor> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/torchvision_ops")
        .join(name);
    load_safetensors(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .collect()
}

/// The case names of a fixture: the part of each tensor name before the first dot.
fn cases(tensors: &BTreeMap<String, Tensor>) -> Vec<String> {
    let mut names: Vec<String> = tensors
        .keys()
        .filter_map(|key| key.split_once('.').map(|(case, _)| case.to_string()))
        .collect();
    names.dedup();
    names
}

fn as_f64(tensor: &Tensor) -> Vec<f64> {
    match tensor.dtype() {
        DType::Float32 => tensor
            .to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect(),
        _ => tensor.to_vec::<f64>().unwrap(),
    }
}

/// Asserts `actual` is within `atol + rtol * |expected|` of `expected`, element by element.
fn assert_close(case: &str, actual: &Tensor, expected: &Tensor, rtol: f64, atol: f64) {
    assert_eq!(actual.sizes(), expected.sizes(), "{case}: shape");
    assert_eq!(actual.dtype(), expected.dtype(), "{case}: dtype");
    for (i, (a, e)) in as_f64(actual).iter().zip(as_f64(expected)).enumerate() {
        assert!(
            (a - e).abs() <= atol + rtol * e.abs(),
            "{case}: element {i} is {a}, torchvision gives {e}"
        );
    }
}

#[test]
fn box_iou_rotated_matches_torchvision() {
    let tensors = fixture("box_iou_rotated.safetensors");
    let names = cases(&tensors);
    assert!(names.len() >= 16, "cases: {names:?}");
    for case in &names {
        let get = |role: &str| &tensors[&format!("{case}.{role}")];
        let actual = box_iou_rotated(get("boxes1"), get("boxes2")).unwrap();
        assert_close(case, &actual, get("expected"), 1e-5, 1e-6);
    }
}

#[test]
fn ps_roi_pool_matches_torchvision() {
    let tensors = fixture("ps_roi_pool.safetensors");
    let names = cases(&tensors);
    assert!(names.len() >= 6, "cases: {names:?}");
    for case in &names {
        let get = |role: &str| &tensors[&format!("{case}.{role}")];
        let arguments = get("arguments").to_vec::<f64>().unwrap();
        let (output, mapping) = ps_roi_pool(
            get("input"),
            get("rois"),
            arguments[0],
            arguments[1] as i64,
            arguments[2] as i64,
        )
        .unwrap();
        assert_close(case, &output, get("output"), 1e-6, 1e-6);
        assert_eq!(mapping.dtype(), DType::Int32, "{case}");
        assert_eq!(mapping.sizes(), get("mapping").sizes(), "{case}");
        assert_eq!(
            mapping.to_vec::<i32>().unwrap(),
            get("mapping").to_vec::<i32>().unwrap(),
            "{case}: channel mapping"
        );
    }
}

#[test]
fn ps_roi_pool_rejects_what_torchvision_rejects() {
    let input = Tensor::from_vec(vec![0.0f32; 2 * 3 * 3 * 3], &[2, 3, 3, 3]).unwrap();
    let rois = Tensor::from_vec(vec![0.0f32, 0.0, 0.0, 2.0, 2.0], &[1, 5]).unwrap();
    // 3 channels are not a multiple of 2 * 2 bins.
    assert!(ps_roi_pool(&input, &rois, 1.0, 2, 2).is_err());
    let wide_rois = Tensor::from_vec(vec![0.0f32; 4], &[1, 4]).unwrap();
    assert!(ps_roi_pool(&input, &wide_rois, 1.0, 1, 1).is_err());
    let double_rois = Tensor::from_vec(vec![0.0f64, 0.0, 0.0, 2.0, 2.0], &[1, 5]).unwrap();
    assert!(ps_roi_pool(&input, &double_rois, 1.0, 1, 1).is_err());
    let outside_batch = Tensor::from_vec(vec![2.0f32, 0.0, 0.0, 2.0, 2.0], &[1, 5]).unwrap();
    assert!(ps_roi_pool(&input, &outside_batch, 1.0, 1, 1).is_err());
    let flat = Tensor::from_vec(vec![0.0f32; 9], &[9]).unwrap();
    assert!(ps_roi_pool(&flat, &rois, 1.0, 1, 1).is_err());
    assert!(ps_roi_pool(&input, &rois, 1.0, 0, 1).is_err());
}

#[test]
fn both_operators_are_registered_with_torchvision_schemas() {
    let registry = OperatorRegistry::new();
    ferrojit_torchvision::register_into(&registry).unwrap();
    let operator = registry
        .lookup("torchvision::box_iou_rotated")
        .expect("box_iou_rotated registered");
    let square = Tensor::from_vec(vec![0.0f32, 0.0, 2.0, 2.0, 0.0], &[1, 5]).unwrap();
    let shifted = Tensor::from_vec(vec![1.0f32, 0.0, 2.0, 2.0, 0.0], &[1, 5]).unwrap();
    let mut stack = vec![IValue::from(square), IValue::from(shifted)];
    (operator.kernel)(&mut stack).unwrap();
    assert_eq!(stack.len(), 1);
    let iou = stack[0].to_tensor().unwrap().to_vec::<f32>().unwrap();
    assert!((iou[0] - 1.0 / 3.0).abs() < 1e-6, "{iou:?}");
    let pool = registry
        .lookup("torchvision::ps_roi_pool")
        .expect("ps_roi_pool registered");
    assert_eq!(pool.schema.returns.len(), 2);
}
