//! `ferrojit export MODEL.pt --inputs ARGS.pt -o OUT.pt2`: converts a TorchScript module's
//! method into an Export IR program (ferrojit-convert) on the example inputs, and saves it
//! as a `.pt2` archive that `torch.export.load` reads, with the inputs as its sample inputs;
//! `--decompose` lowers it to core ATen first.

use std::path::Path;

use ferrojit_convert::{convert_file_dynamic, read_example_inputs, DynamicDim};
use ferrojit_export::SampleInputs;

/// What `ferrojit export` was asked to do.
pub struct ExportOptions<'a> {
    pub model: &'a Path,
    pub inputs: &'a Path,
    pub output: &'a Path,
    pub method: &'a str,
    /// `NAME:DIM=SYMBOL[MIN,MAX]` (or `NAME:DIM=SYMBOL`) specs: dimensions made symbolic.
    pub dynamic: &'a [String],
    /// `Some(strict)`: lower the program to core ATen before saving (`--decompose`).
    pub decompose: Option<bool>,
}

pub fn export_model(options: &ExportOptions) -> Result<(), String> {
    let dynamic = options
        .dynamic
        .iter()
        .map(|spec| DynamicDim::parse(spec))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let args = read_example_inputs(options.inputs).map_err(|e| e.to_string())?;
    let mut program = convert_file_dynamic(options.model, options.method, args, &dynamic)
        .map_err(|e| e.to_string())?;
    if let Some(strict) = options.decompose {
        super::convert::decompose(&mut program, strict)?;
    }
    // Read again: the conversion runs the method, which may write into its inputs.
    let sample = SampleInputs {
        args: read_example_inputs(options.inputs).map_err(|e| e.to_string())?,
        kwargs: Vec::new(),
    };
    ferrojit_export::save_program(&program, Some(&sample), options.output)
        .map_err(|e| format!("cannot save {}: {e}", options.output.display()))
}
