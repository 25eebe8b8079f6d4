//! Builds a small torch.export program in Rust (a linear layer, a ReLU and a buffer added
//! to the result) with ferrojit's graph builder, and saves it as a `.pt2` file PyTorch
//! loads: `cargo run --example build_pt2 -- OUT.pt2`.
//!
//! The weights are made from a fixed seed, so the same file comes out every time (the
//! writer is deterministic too); `tests/fixtures/export/built_in_rust.pt2` is this
//! example's output, and PyTorch's result on it is recorded beside it.

use ferrojit_export::writer::builder::ProgramBuilder;
use ferrojit_export::{ExportError, LoadedProgram, SampleInputs};
use ferrojit_runtime::IValue;
use ferrojit_tensor::Tensor;

/// `count` numbers in [-1, 1) from a fixed-seed xorshift generator.
fn seeded_values(seed: u64, count: usize) -> Vec<f32> {
    let mut state = seed.max(1);
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // The top 24 bits as a fraction, exactly representable in f32.
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn tensor(seed: u64, sizes: &[usize]) -> Result<Tensor, ExportError> {
    let count = sizes.iter().product();
    Ok(Tensor::from_vec(seeded_values(seed, count), sizes)?)
}

/// The example's program: `relu(linear(x, fc.weight, fc.bias)) + offset`, where `offset`
/// is a buffer, with a 2×4 example input.
pub fn build_program() -> Result<(LoadedProgram, SampleInputs), ExportError> {
    let mut builder = ProgramBuilder::new();
    let weight = builder.add_parameter("fc.weight", tensor(1, &[3, 4])?)?;
    let bias = builder.add_parameter("fc.bias", tensor(2, &[3])?)?;
    let offset = builder.add_buffer("offset", tensor(3, &[3])?, true)?;
    let x = builder.add_user_input("x", tensor(4, &[2, 4])?)?;
    let linear = builder.call(
        "aten::linear",
        vec![
            ("input", x.arg()),
            ("weight", weight.arg()),
            ("bias", bias.arg()),
        ],
    )?;
    let relu = builder.call("aten::relu", vec![("self", linear.arg())])?;
    let shifted = builder.call(
        "aten::add.Tensor",
        vec![("self", relu.arg()), ("other", offset.arg())],
    )?;
    builder.set_outputs(&[shifted])?;
    builder.build("model")
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(path) = std::env::args().nth(1) else {
        return Err("usage: build_pt2 OUT.pt2".into());
    };
    let (program, sample_inputs) = build_program()?;
    ferrojit_export::save_program(&program, Some(&sample_inputs), std::path::Path::new(&path))?;
    let mut module = ferrojit_export::ExportedModule::new(program)?;
    let output = module.run(sample_inputs.args.clone())?;
    if let IValue::Tensor(_) = &output {
        let output = output.to_tensor()?;
        println!(
            "saved {path}; ferrojit's output: {:?} {:?}",
            output.sizes(),
            output.to_f64_vec()
        );
    }
    Ok(())
}
