//! Builds a small CNN in Rust with ferrojit's `nn` layers, traces it with
//! `ferrojit::trace_module` (as `torch.jit.trace` traces an `nn.Module`), runs the trace on
//! the example batch and on a larger one, and saves it as a TorchScript archive that
//! `torch.jit.load` reads: `cargo run -p ferrojit --example trace_cnn -- [OUT_DIR]`
//! (default `tests/fixtures/trace`).
//!
//! It writes `rust_cnn.pt` (the traced module), `rust_cnn.inputs.pt` (the two input
//! batches), `rust_cnn.ferrojit.pt` (ferrojit's outputs on them) and `rust_cnn.graph.txt`.
//! `tests/fixtures/trace/check_rust_example.py` runs the archive in PyTorch on the same
//! inputs, compares with ferrojit's outputs and records PyTorch's as `rust_cnn.expected.pt`.

use ferrojit::tracing::nn::{Conv2d, Layer, LayerNorm, Linear, SeededUniform, Sequential};
use ferrojit::tracing::{Module, TraceError, TracedFunction, TracedTensor};
use ferrojit::{IValue, Tensor};

/// The example's model: convolutions and pooling, a flattening `view` whose batch size is
/// read from the input (so the trace runs on any batch), a layer norm and a linear head
/// whose softmax and sigmoid are concatenated.
pub struct SmallCnn {
    pub features: Sequential,
    pub norm: LayerNorm,
    pub head: Linear,
}

impl SmallCnn {
    /// The model with weights from fixed seeds.
    pub fn new() -> Result<SmallCnn, TraceError> {
        Ok(SmallCnn {
            features: Sequential::new(vec![
                Box::new(Conv2d::new(3, 8, 3, 1, 1, 11)?),
                Box::new(Layer::ReLU),
                Box::new(Layer::MaxPool2d {
                    kernel_size: 2,
                    stride: 2,
                }),
                Box::new(Conv2d::new(8, 16, 3, 1, 1, 12)?),
                Box::new(Layer::GELU),
                Box::new(Layer::AdaptiveAvgPool2d(2, 2)),
            ]),
            norm: LayerNorm::new(&[64])?,
            head: Linear::new(64, 5, 13)?,
        })
    }
}

impl Module for SmallCnn {
    fn qualified_name(&self) -> String {
        "__torch__.SmallCnn".to_string()
    }
    fn children(&self) -> Vec<(String, &dyn Module)> {
        vec![
            ("features".to_string(), &self.features as &dyn Module),
            ("norm".to_string(), &self.norm),
            ("head".to_string(), &self.head),
        ]
    }
    fn forward(&self, input: &TracedTensor) -> Result<TracedTensor, TraceError> {
        let features = self.features.forward(input)?;
        let flat = features.view(&[features.size(0)?, (-1).into()])?;
        let logits = self.head.forward(&self.norm.forward(&flat)?.tanh()?)?;
        TracedTensor::cat(&[logits.softmax(1)?, logits.sigmoid()?], 1)
    }
}

/// The two input batches: 2 images (the example the trace records) and 5 (another batch
/// size the trace must generalize to), 3×8×8, from fixed seeds.
pub fn example_inputs() -> Result<Vec<Tensor>, TraceError> {
    let mut random = SeededUniform::new(21);
    Ok(vec![
        random.tensor(&[2, 3, 8, 8], 1.0)?,
        random.tensor(&[5, 3, 8, 8], 1.0)?,
    ])
}

/// Traces the model on the first input batch.
pub fn trace_model(model: &SmallCnn, inputs: &[Tensor]) -> Result<TracedFunction, TraceError> {
    let first = inputs
        .first()
        .cloned()
        .ok_or_else(|| TraceError::Unsupported {
            what: "a trace without an example input".to_string(),
            location: String::new(),
        })?;
    ferrojit::trace_module(model, first)
}

/// Runs the trace on each input batch.
pub fn run_trace(traced: &TracedFunction, inputs: &[Tensor]) -> Result<Vec<IValue>, String> {
    inputs
        .iter()
        .map(|input| traced.run(vec![input.clone().into()]))
        .collect()
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let directory = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "tests/fixtures/trace".to_string()),
    );
    let model = SmallCnn::new()?;
    let inputs = example_inputs()?;
    let traced = trace_model(&model, &inputs)?;
    for warning in &traced.warnings {
        eprintln!("TracerWarning: {warning}");
    }
    let outputs = run_trace(&traced, &inputs)?;
    traced.save(&directory.join("rust_cnn.pt"))?;
    std::fs::write(directory.join("rust_cnn.graph.txt"), traced.graph_text())?;
    let input_values = inputs.iter().cloned().map(IValue::from).collect();
    ferrojit::save_values(
        &IValue::tuple(input_values),
        directory.join("rust_cnn.inputs.pt"),
    )?;
    ferrojit::save_values(
        &IValue::tuple(outputs.clone()),
        directory.join("rust_cnn.ferrojit.pt"),
    )?;
    for (input, output) in inputs.iter().zip(&outputs) {
        println!(
            "batch {}: output {:?}",
            input.sizes()[0],
            output.to_tensor()?.sizes()
        );
    }
    println!("saved {}", directory.join("rust_cnn.pt").display());
    Ok(())
}
