//! GroupCache behaviour: compile once per key, remember unsupported groups, shape classes,
//! multiple outputs, the bounds the unsafe kernel call relies on (lengths, chunking across
//! threads, zero-size tensors) and typed errors for bad input.

use ferrojit_codegen::{CodegenError, GroupCache};
use ferrojit_ir::parse_graph;
use ferrojit_tensor::{DType, Scalar, Tensor};

const AFFINE_SIGMOID: &str = "graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %one : int = prim::Constant[value=1]()
  %xw : Tensor = aten::mul(%x, %w)
  %z : Tensor = aten::add(%xw, %b, %one)
  %s : Tensor = aten::sigmoid(%z)
  %y : Tensor = aten::mul(%s, %x)
  return (%y)
";

fn values(n: usize, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 37 % 101) as f32 / 50.0 - 1.0) * scale)
        .collect()
}

fn tensor(values: &[f32], sizes: &[usize]) -> Tensor {
    Tensor::from_slice(values, sizes).unwrap()
}

fn affine_sigmoid_reference(x: f32, w: f32, b: f32) -> f32 {
    let z = f64::from(x * w + b);
    ((1.0 / (1.0 + (-z).exp())) as f32) * x
}

#[test]
fn compiles_once_per_key_and_reuses_the_kernel() {
    let graph = parse_graph(AFFINE_SIGMOID).unwrap();
    let cache = GroupCache::new();
    let n = 1000;
    let (x, w, b) = (values(n, 2.0), values(n, 0.5), values(n, 1.5));
    let inputs = [tensor(&x, &[n]), tensor(&w, &[n]), tensor(&b, &[n])];
    for _ in 0..3 {
        let out = cache
            .run_group(7, &graph, &inputs)
            .unwrap()
            .expect("compiles");
        let got = out[0].to_vec::<f32>().unwrap();
        for i in 0..n {
            let want = affine_sigmoid_reference(x[i], w[i], b[i]);
            assert!(
                (got[i] - want).abs() <= 2e-6 * want.abs().max(1.0),
                "{i}: {} vs {want}",
                got[i]
            );
        }
    }
    assert_eq!(cache.stats().compiled, 1);
    // A scalar `b` is another layout, so another kernel.
    let scalar_b = Tensor::scalar_tensor(Scalar::Float(0.25), DType::Float32);
    let out = cache
        .run_group(7, &graph, &[inputs[0].clone(), inputs[1].clone(), scalar_b])
        .unwrap()
        .expect("compiles");
    let got = out[0].to_vec::<f32>().unwrap();
    assert!((got[5] - affine_sigmoid_reference(x[5], w[5], 0.25)).abs() < 1e-6);
    assert_eq!(cache.stats().compiled, 2);
}

#[test]
fn unsupported_operator_and_dtype_are_declined_and_remembered() {
    let graph = parse_graph(
        "graph(%x : Tensor):
  %y : Tensor = aten::sin(%x)
  return (%y)
",
    )
    .unwrap();
    let cache = GroupCache::new();
    let x = tensor(&[1.0, 2.0], &[2]);
    assert!(cache
        .run_group(3, &graph, std::slice::from_ref(&x))
        .unwrap()
        .is_none());
    assert!(cache
        .run_group(3, &graph, std::slice::from_ref(&x))
        .unwrap()
        .is_none());
    assert_eq!(
        cache.stats().unsupported,
        1,
        "lowered once, then remembered"
    );
    assert_eq!(cache.stats().compiled, 0);
    let reason = cache
        .unsupported_reason(3, std::slice::from_ref(&x))
        .unwrap();
    assert!(reason.contains("aten::sin"), "{reason}");

    let doubles = Tensor::from_slice(&[1.0f64, 2.0], &[2]).unwrap();
    let relu = parse_graph("graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x)\n  return (%y)\n")
        .unwrap();
    assert!(cache.run_group(4, &relu, &[doubles]).unwrap().is_none());
    assert_eq!(cache.stats().unsupported, 2);
}

#[test]
fn zero_size_inputs_give_empty_outputs_without_running() {
    let graph = parse_graph(AFFINE_SIGMOID).unwrap();
    let cache = GroupCache::new();
    let empty = tensor(&[], &[0, 4]);
    let out = cache
        .run_group(1, &graph, &[empty.clone(), empty.clone(), empty])
        .unwrap()
        .expect("compiles");
    assert_eq!(out[0].sizes(), &[0, 4]);
    assert_eq!(out[0].numel(), 0);
}

#[test]
fn lengths_that_are_not_a_multiple_of_the_vector_or_block_are_exact() {
    // Sizes around the 4-lane vector and the 256-element block: every element is written
    // once (no zeros left behind) and nothing past the end is read or written (the output
    // buffer is exactly `numel` long; a write past it would corrupt the heap under tests).
    let graph = parse_graph(
        "graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %y : Tensor = aten::exp(%x)
  %z : Tensor = aten::add(%y, %x, %two)
  return (%z)
",
    )
    .unwrap();
    let cache = GroupCache::new();
    for n in [1usize, 3, 4, 5, 255, 256, 257, 511, 513, 1027] {
        let x = values(n, 3.0);
        let out = cache
            .run_group(2, &graph, &[tensor(&x, &[n])])
            .unwrap()
            .expect("compiles");
        let got = out[0].to_vec::<f32>().unwrap();
        assert_eq!(got.len(), n);
        for i in 0..n {
            let want = x[i].exp() + 2.0 * x[i];
            assert!(
                (got[i] - want).abs() <= 1e-5 * want.abs().max(1.0),
                "n={n} i={i}"
            );
        }
    }
    assert_eq!(cache.stats().compiled, 1);
}

#[test]
fn large_tensors_split_across_threads_give_the_same_result() {
    // Above ferrojit-tensor's parallel threshold the range is split into one chunk per
    // thread; chunk edges fall inside blocks, so a chunking error shows as wrong elements.
    let graph = parse_graph(AFFINE_SIGMOID).unwrap();
    let cache = GroupCache::new();
    let n = (1 << 16) + 13;
    let (x, w, b) = (values(n, 2.0), values(n, 0.5), values(n, 1.5));
    let out = cache
        .run_group(
            9,
            &graph,
            &[tensor(&x, &[n]), tensor(&w, &[n]), tensor(&b, &[n])],
        )
        .unwrap()
        .expect("compiles");
    let got = out[0].to_vec::<f32>().unwrap();
    for i in 0..n {
        let want = affine_sigmoid_reference(x[i], w[i], b[i]);
        assert!((got[i] - want).abs() <= 2e-6 * want.abs().max(1.0), "{i}");
    }
}

#[test]
fn multiple_outputs_and_where_with_a_bool_condition() {
    let graph = parse_graph(
        "graph(%x : Tensor, %c : Tensor):
  %zero : float = prim::Constant[value=0.]()
  %t : Tensor = aten::tanh(%x)
  %w : Tensor = aten::where(%c, %t, %zero)
  %n : Tensor = aten::neg(%w)
  return (%w, %n)
",
    )
    .unwrap();
    let cache = GroupCache::new();
    let x = values(10, 2.0);
    let mask: Vec<bool> = (0..10).map(|i| i % 3 == 0).collect();
    let condition = Tensor::from_slice(&mask, &[10]).unwrap();
    let out = cache
        .run_group(5, &graph, &[tensor(&x, &[10]), condition])
        .unwrap()
        .expect("compiles");
    assert_eq!(out.len(), 2);
    let w = out[0].to_vec::<f32>().unwrap();
    let n = out[1].to_vec::<f32>().unwrap();
    for i in 0..10 {
        let want = if mask[i] { x[i].tanh() } else { 0.0 };
        assert!((w[i] - want).abs() < 1e-6, "{i}");
        assert_eq!(n[i], -w[i]);
    }
}

#[test]
fn broadcast_and_non_contiguous_inputs_run_the_strided_class() {
    let graph = parse_graph(
        "graph(%x : Tensor, %y : Tensor):
  %one : int = prim::Constant[value=1]()
  %s : Tensor = aten::sub(%x, %y, %one)
  return (%s)
",
    )
    .unwrap();
    let cache = GroupCache::new();
    let base = tensor(&values(12, 1.0), &[4, 3]);
    let x = base.transpose(0, 1).unwrap(); // [3, 4], not contiguous
    let y = tensor(&[10.0, 20.0, 30.0, 40.0], &[4]); // broadcast along dim 0
    let out = cache
        .run_group(6, &graph, &[x.clone(), y.clone()])
        .unwrap()
        .expect("compiles");
    assert_eq!(out[0].sizes(), &[3, 4]);
    assert!(out[0].is_contiguous());
    assert_eq!(cache.stats().strided_runs, 1);
    let want = x.sub(&y, &Scalar::Int(1)).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), want);
}

#[test]
fn an_output_smaller_than_the_broadcast_shape_is_declined() {
    let graph = parse_graph(
        "graph(%x : Tensor, %y : Tensor):
  %a : Tensor = aten::relu(%x)
  %b : Tensor = aten::mul(%a, %y)
  return (%a, %b)
",
    )
    .unwrap();
    let cache = GroupCache::new();
    let x = tensor(&[1.0, -2.0, 3.0], &[3]);
    let y = tensor(&values(6, 1.0), &[2, 3]);
    assert!(cache.run_group(8, &graph, &[x, y]).unwrap().is_none());
}

#[test]
fn bad_inputs_are_typed_errors() {
    let graph = parse_graph(AFFINE_SIGMOID).unwrap();
    let cache = GroupCache::new();
    let x = tensor(&[1.0, 2.0, 3.0], &[3]);
    let wrong_count = cache.run_group(11, &graph, std::slice::from_ref(&x));
    assert!(
        matches!(&wrong_count, Err(CodegenError::Input { group_key: 11, message }) if message.contains("3 inputs")),
        "{wrong_count:?}"
    );
    let y = tensor(&[1.0, 2.0], &[2]);
    let mismatch = cache.run_group(11, &graph, &[x.clone(), y, x]);
    assert!(
        matches!(&mismatch, Err(CodegenError::Input { message, .. }) if message.contains("does not broadcast")),
        "{mismatch:?}"
    );
}

#[test]
fn the_cache_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<GroupCache>();
}
