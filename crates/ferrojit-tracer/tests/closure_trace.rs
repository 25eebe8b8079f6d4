//! The Rust tracing API (`trace`, `trace_module`, `nn`): the trace runs as the closure does,
//! generalizes sizes read from its input, reads parameters as attributes, records tensors
//! it did not see as constants, and refuses bad use with typed errors.

use ferrojit_runtime::IValue;
use ferrojit_tensor::Tensor;
use ferrojit_tracer::closure_trace::trace_module;
use ferrojit_tracer::nn::{Layer, LayerNorm, Linear, SeededUniform, Sequential};
use ferrojit_tracer::{trace, Module, TraceError, TracedTensor};

fn random(seed: u64, sizes: &[usize]) -> Tensor {
    SeededUniform::new(seed).tensor(sizes, 1.0).unwrap()
}

fn values(value: &IValue) -> Vec<f64> {
    value.to_tensor().unwrap().to_f64_vec()
}

#[test]
fn a_traced_closure_runs_like_the_closure_on_another_batch_size() {
    let weight = TracedTensor::new(random(1, &[4, 3]));
    let body = |inputs: &[TracedTensor]| -> Result<TracedTensor, TraceError> {
        let x = &inputs[0];
        let hidden = x.matmul(&weight)?.relu()?;
        let scaled = hidden.mul(&hidden)?.sub(&hidden)?.div(&inputs[1])?;
        let flat = scaled.reshape(&[scaled.size(0)?, (-1).into()])?;
        flat.add(&flat.sigmoid()?)?.tanh()
    };
    let traced = trace(body, vec![random(2, &[2, 4]), random(3, &[2, 3])]).unwrap();
    let text = traced.graph_text();
    assert!(text.contains("aten::matmul"), "{text}");
    assert!(text.contains("aten::reshape"), "{text}");
    // The weight was created outside the trace and is no parameter: a constant.
    assert!(text.contains(": Tensor = prim::Constant"), "{text}");
    let (x, y) = (random(4, &[6, 4]), random(5, &[6, 3]));
    let traced_output = traced
        .run(vec![x.clone().into(), y.clone().into()])
        .unwrap();
    let eager = body(&[TracedTensor::new(x), TracedTensor::new(y)]).unwrap();
    assert_eq!(traced_output.to_tensor().unwrap().sizes(), &[6, 3]);
    assert_eq!(values(&traced_output), values(eager.value()));
}

#[test]
fn sizes_read_from_the_input_stay_traced_and_constants_stay_constant() {
    let traced = trace(
        |inputs| {
            let x = &inputs[0];
            let rows = x.size(0)?.mul(&x.size(1)?)?;
            x.view(&[rows, 2.into()])
        },
        vec![random(1, &[3, 2, 2])],
    )
    .unwrap();
    let text = traced.graph_text();
    assert_eq!(text.matches("aten::size(").count(), 2, "{text}");
    assert!(text.contains("aten::mul("), "{text}");
    let output = traced.run(vec![random(2, &[5, 4, 2]).into()]).unwrap();
    assert_eq!(output.to_tensor().unwrap().sizes(), &[20, 2]);

    let fixed = trace(
        |inputs| inputs[0].view(&[6.into(), 2.into()]),
        vec![random(1, &[3, 2, 2])],
    )
    .unwrap();
    assert!(!fixed.graph_text().contains("aten::size"));
    // Baked in as PyTorch bakes a Python int: another batch size no longer fits.
    assert!(fixed.run(vec![random(2, &[5, 2, 2]).into()]).is_err());
}

struct Block {
    first: Linear,
    norm: LayerNorm,
    rest: Sequential,
}

impl Module for Block {
    fn qualified_name(&self) -> String {
        "__torch__.Block".to_string()
    }
    fn children(&self) -> Vec<(String, &dyn Module)> {
        vec![
            ("first".to_string(), &self.first as &dyn Module),
            ("norm".to_string(), &self.norm),
            ("rest".to_string(), &self.rest),
        ]
    }
    fn forward(&self, input: &TracedTensor) -> Result<TracedTensor, TraceError> {
        let hidden = self.norm.forward(&self.first.forward(input)?)?;
        self.rest.forward(&hidden)
    }
}

fn block() -> Block {
    Block {
        first: Linear::new(4, 6, 1).unwrap(),
        norm: LayerNorm::new(&[6]).unwrap(),
        rest: Sequential::new(vec![
            Box::new(Layer::GELU),
            Box::new(Sequential::new(vec![
                Box::new(Linear::new(6, 3, 2).unwrap()),
                Box::new(Layer::Softmax(1)),
            ])),
        ]),
    }
}

#[test]
fn a_module_trees_parameters_are_attributes_and_its_archive_reloads() {
    let model = block();
    let traced = trace_module(&model, random(3, &[2, 4])).unwrap();
    let text = traced.graph_text();
    assert_eq!(
        text.matches("prim::GetAttr[name=\"weight\"]").count(),
        3,
        "{text}"
    );
    assert!(!text.contains(": Tensor = prim::Constant"), "{text}");
    let names: Vec<String> = ferrojit_tracer::named_parameters(&model)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(
        names,
        [
            "first.weight",
            "first.bias",
            "norm.weight",
            "norm.bias",
            "rest.1.0.weight",
            "rest.1.0.bias"
        ]
    );
    // Two Sequentials with different children: the second class name is mangled.
    let bytes = traced.save_to_bytes("block").unwrap();
    let text_of_archive = String::from_utf8_lossy(&bytes);
    assert!(text_of_archive.contains("___torch_mangle_0"));

    let path = std::env::temp_dir().join(format!("ferrojit_block_{}.pt", std::process::id()));
    traced.save(&path).unwrap();
    let loaded = ferrojit_serialize::import::load_module(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let x = random(4, &[7, 4]);
    let reloaded = loaded
        .module
        .run_method("forward", vec![x.clone().into()])
        .unwrap();
    let eager = model.forward(&TracedTensor::new(x)).unwrap();
    assert_eq!(values(&reloaded), values(eager.value()));
}

#[test]
fn bad_use_gives_typed_errors_and_leaves_no_trace_active() {
    let error = trace(
        |inputs| inputs[0].size(5).map(|_| inputs[0].clone()),
        vec![random(1, &[2])],
    )
    .err()
    .unwrap();
    assert!(
        error.to_string().contains("dimension 5 is out of range"),
        "{error}"
    );
    let error = trace(
        |inputs| inputs[0].matmul(&TracedTensor::new(random(2, &[3, 3]))),
        vec![random(1, &[2, 2])],
    )
    .err()
    .unwrap();
    assert!(matches!(error, TraceError::Runtime { .. }), "{error}");
    assert!(error.to_string().contains("aten::matmul"), "{error}");
    // Tracing inside a trace is refused, and the outer trace still finishes.
    let outer = trace(
        |inputs| {
            let inner = trace(|inner| inner[0].relu(), vec![random(3, &[2])]);
            assert!(matches!(inner, Err(TraceError::Unsupported { .. })));
            inputs[0].relu()
        },
        vec![random(1, &[2])],
    )
    .unwrap();
    assert!(outer.graph_text().contains("aten::relu"));
    // After the errors, eager calls record nothing and a new trace starts cleanly.
    let again = trace(|inputs| inputs[0].tanh(), vec![random(1, &[2])]).unwrap();
    assert!(!again.graph_text().contains("aten::relu"));
    assert!(Linear::new(0, 3, 1).is_err());
    assert!(LayerNorm::new(&[]).is_err());
}

#[test]
fn cat_records_a_list_of_traced_tensors() {
    let traced = trace(
        |inputs| TracedTensor::cat(&[inputs[0].clone(), inputs[1].sigmoid()?], 0),
        vec![random(1, &[2, 3]), random(2, &[1, 3])],
    )
    .unwrap();
    assert!(
        traced.graph_text().contains("prim::ListConstruct(%x0"),
        "{}",
        traced.graph_text()
    );
    let output = traced
        .run(vec![random(3, &[4, 3]).into(), random(4, &[2, 3]).into()])
        .unwrap();
    assert_eq!(output.to_tensor().unwrap().sizes(), &[6, 3]);
}

#[test]
fn a_panicking_closure_leaves_no_trace_active() {
    let outcome = std::panic::catch_unwind(|| {
        let _ = trace(
            |inputs| {
                let _ = inputs[0].relu();
                panic!("the model's own bug")
            },
            vec![random(1, &[2])],
        );
    });
    assert!(outcome.is_err());
    // Had the panicked trace stayed active, this one would be refused as nested.
    let traced = trace(|inputs| inputs[0].sigmoid(), vec![random(1, &[2])]).unwrap();
    let text = traced.graph_text();
    assert!(
        text.contains("aten::sigmoid") && !text.contains("aten::relu"),
        "{text}"
    );
}
