//! `ferrojit convert`: load a TorchScript archive and save it again through ferrojit's own
//! Python printer and pickler; or, for a torch.export `.pt2` archive, load every program in
//! it (with its weights, constants and sample inputs) and save them again through
//! ferrojit's `.pt2` writer.

use std::path::Path;

use ferrojit_serialize::export::save_module;
use ferrojit_serialize::import::load_module;

pub fn convert(input: &Path, output: &Path) -> Result<(), String> {
    if ferrojit_export::looks_like_pt2(input) {
        return convert_pt2(input, output);
    }
    let loaded =
        load_module(input).map_err(|e| format!("cannot load model {}: {e}", input.display()))?;
    save_module(&loaded, output).map_err(|e| format!("cannot save {}: {e}", output.display()))
}

/// Re-saves every program of a `.pt2` archive, each under its own name.
fn convert_pt2(input: &Path, output: &Path) -> Result<(), String> {
    let cannot_load =
        |e: ferrojit_export::ExportError| format!("cannot load program {}: {e}", input.display());
    let archive = ferrojit_export::Pt2Archive::open(input).map_err(cannot_load)?;
    let mut programs = Vec::new();
    for name in archive.model_names() {
        let program = archive.load(name).map_err(cannot_load)?;
        let sample_inputs = archive.sample_inputs(name).map_err(cannot_load)?;
        programs.push((program, sample_inputs));
    }
    let borrowed: Vec<_> = programs
        .iter()
        .map(|(program, inputs)| (program, inputs.as_ref()))
        .collect();
    ferrojit_export::save_programs(&borrowed, output)
        .map_err(|e| format!("cannot save {}: {e}", output.display()))
}
