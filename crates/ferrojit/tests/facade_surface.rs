//! The facade's surface beyond loading: a scripted model calling `torch.autograd.grad`
//! loads and runs through `ferrojit::load` (gradients checked against PyTorch's), `ndarray`
//! arrays of any layout convert both ways, and `LoadOptions`' archive limits refuse a file
//! over them with a typed error.

use std::path::PathBuf;

use ferrojit::{DType, Error, IValue, LoadOptions, Tensor};
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn autograd_fixtures() -> Value {
    let text = std::fs::read_to_string(repo().join("tests/fixtures/autograd/autograd.json"))
        .expect("autograd fixtures");
    serde_json::from_str(&text).expect("autograd.json is JSON")
}

fn float64_tensor(value: &Value) -> Tensor {
    let shape: Vec<usize> = value["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(value["dtype"], "float64");
    let data = value["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    Tensor::from_vec(data, &shape).unwrap()
}

fn assert_close(label: &str, actual: &Tensor, expected: &Tensor) {
    assert_eq!(actual.sizes(), expected.sizes(), "{label}: shape");
    for (index, (a, e)) in actual
        .to_f64_vec()
        .iter()
        .zip(expected.to_f64_vec())
        .enumerate()
    {
        assert!(
            (a - e).abs() <= 1e-9 + 1e-7 * e.abs(),
            "{label}[{index}]: {a} != {e}"
        );
    }
}

#[test]
fn a_scripted_autograd_grad_loads_and_matches_pytorch() {
    let path = repo().join("tests/fixtures/autograd/script_grad.pt");
    // Loading compiles the method, which calls aten::grad: the facade registered it.
    let model = ferrojit::load(&path).unwrap();
    let expected = &autograd_fixtures()["scripts"]["grad"];
    let inputs = || {
        vec![
            IValue::tensor_with_requires_grad(float64_tensor(&expected["x"]), true),
            IValue::tensor_with_requires_grad(float64_tensor(&expected["w"]), true),
        ]
    };

    ferrojit::enable_autograd().unwrap();
    ferrojit::set_grad_enabled(true);
    let result = model.forward(inputs());
    ferrojit::set_grad_enabled(false);
    let result = result.unwrap();
    let items = result.to_tuple().unwrap().items.clone();
    assert_close(
        "g1",
        &items[0].to_tensor().unwrap(),
        &float64_tensor(&expected["g1"]),
    );
    assert_close(
        "gg",
        &items[1].to_tensor().unwrap(),
        &float64_tensor(&expected["gg"]),
    );

    // With gradient mode off, the same call fails with the model's error, typed.
    let error = model.forward(inputs()).unwrap_err();
    assert!(matches!(error, Error::Run { .. }), "{error}");
}

#[test]
fn ndarray_views_of_any_layout_convert_in_logical_order() {
    use ferrojit::ndarray::{s, Array3, ArrayD, IxDyn};
    let array = Array3::from_shape_fn((2, 3, 4), |(i, j, k)| (i * 100 + j * 10 + k) as i64);
    // Reversed, sliced and permuted: negative and non-unit strides.
    let view = array.slice(s![..;-1, 1.., ..;2]);
    let view = view.permuted_axes([2, 0, 1]);
    let tensor = ferrojit::tensor_from_ndarray(&view).unwrap();
    assert_eq!(tensor.sizes(), view.shape());
    assert_eq!(
        tensor.to_vec::<i64>().unwrap(),
        view.iter().copied().collect::<Vec<_>>()
    );
    let back = ferrojit::tensor_to_ndarray::<i64>(&tensor).unwrap();
    assert_eq!(back, view.to_owned().into_dyn());

    // A tensor that is itself a strided view (a transpose) comes out in logical order.
    let matrix = Tensor::from_vec((0..6).map(|v| v as f32).collect(), &[2, 3]).unwrap();
    let transposed = matrix.transpose(0, 1).unwrap();
    let array = ferrojit::tensor_to_ndarray::<f32>(&transposed).unwrap();
    assert_eq!(array.shape(), &[3, 2]);
    assert_eq!(array[[2, 1]], 5.0);
    assert_eq!(array[[1, 0]], 1.0);

    // Broadcast (zero-stride) arrays, 0-d arrays, f16 and bool convert too.
    let row = ferrojit::ndarray::arr1(&[1.0_f64, 2.0]);
    let broadcast = row.broadcast((3, 2)).unwrap();
    let tensor = ferrojit::tensor_from_ndarray(&broadcast).unwrap();
    assert_eq!(
        tensor.to_vec::<f64>().unwrap(),
        vec![1.0, 2.0, 1.0, 2.0, 1.0, 2.0]
    );
    let scalar = ArrayD::from_elem(IxDyn(&[]), ferrojit::half::f16::from_f32(0.5));
    let tensor = ferrojit::tensor_from_ndarray(&scalar).unwrap();
    assert_eq!((tensor.dim(), tensor.dtype()), (0, DType::Float16));
    let flags = ferrojit::ndarray::arr1(&[true, false]);
    let tensor = ferrojit::tensor_from_ndarray(&flags).unwrap();
    assert_eq!(
        ferrojit::tensor_to_ndarray::<bool>(&tensor)
            .unwrap()
            .as_slice()
            .unwrap(),
        &[true, false]
    );

    // The element type must match the tensor's dtype.
    match ferrojit::tensor_to_ndarray::<i32>(&tensor) {
        Err(Error::DTypeMismatch { expected, actual }) => {
            assert_eq!((expected, actual), (DType::Int32, DType::Bool));
        }
        other => panic!("expected DTypeMismatch, got {other:?}"),
    }
}

#[test]
fn archive_limits_refuse_a_file_over_them() {
    let path = repo().join("examples/mlp.pt");
    let mut options = LoadOptions::default();
    options.archive_limits.max_entries = 2;
    match ferrojit::load_with_options(&path, &options) {
        Err(Error::Read { message, .. }) => assert!(message.contains("entries"), "{message}"),
        Err(other) => panic!("expected a Read error, got {other}"),
        Ok(_) => panic!("a 2-entry limit accepted mlp.pt"),
    }
    let mut options = LoadOptions::default();
    options.archive_limits.max_record_bytes = 16;
    assert!(ferrojit::load_with_options(&path, &options).is_err());
    // The defaults load it.
    assert!(ferrojit::load_with_options(&path, &LoadOptions::default()).is_ok());
}
