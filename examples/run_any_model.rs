//! Runs a PyTorch model from either of PyTorch's formats, with the one `ferrojit::load`
//! interface: the program neither knows nor cares which format it was handed.
//!
//! ```text
//! cargo run -p ferrojit --example run_any_model -- examples/mlp.pt  examples/mlp_inputs.pt
//! cargo run -p ferrojit --example run_any_model -- examples/mlp.pt2 examples/mlp_inputs.pt
//! ```
//!
//! The inputs file is a `torch.save`d tuple of positional arguments. Without one, a `.pt2`
//! program runs on the example inputs `torch.export.save` stored with it.

use std::process::ExitCode;

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let Some(model_path) = arguments.first() else {
        eprintln!("usage: run_any_model MODEL.pt|MODEL.pt2 [INPUTS.pt]");
        return ExitCode::from(2);
    };
    match run(model_path, arguments.get(1)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn run(model_path: &str, inputs_path: Option<&String>) -> Result<(), ferrojit::Error> {
    let model = ferrojit::load(model_path)?;
    let inputs = match inputs_path {
        Some(path) => ferrojit::load_arguments(path)?,
        None => model.sample_inputs().unwrap_or_default(),
    };
    let output = model.run(inputs)?;
    println!("{:?} model {model_path}", model.format());
    println!("{}", output.python_repr());
    Ok(())
}
