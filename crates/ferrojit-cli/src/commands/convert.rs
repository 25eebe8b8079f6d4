//! `ferrojit convert`: load a TorchScript archive and save it again through ferrojit's own
//! Python printer and pickler; or, for a torch.export `.pt2` archive, load every program in
//! it (with its weights, constants and sample inputs) and save them again through
//! ferrojit's `.pt2` writer (`--decompose`: lowered to core ATen first).

use std::path::Path;

use ferrojit_serialize::export::save_module;
use ferrojit_serialize::import::load_module;

/// `decompose`: `Some(strict)` lowers each `.pt2` program to core ATen before saving.
pub fn convert(input: &Path, output: &Path, decompose: Option<bool>) -> Result<(), String> {
    let _progress = super::progress::Progress::start(&format!("converting {}", input.display()));
    if ferrojit_export::looks_like_pt2(input) {
        return convert_pt2(input, output, decompose);
    }
    if decompose.is_some() {
        return Err(format!(
            "--decompose lowers Export IR programs; {} is not a .pt2 archive (use ferrojit export --decompose)",
            input.display()
        ));
    }
    let loaded =
        load_module(input).map_err(|e| format!("cannot load model {}: {e}", input.display()))?;
    save_module(&loaded, output).map_err(|e| format!("cannot save {}: {e}", output.display()))
}

/// Re-saves every program of a `.pt2` archive, each under its own name.
fn convert_pt2(input: &Path, output: &Path, decompose_as: Option<bool>) -> Result<(), String> {
    let cannot_load =
        |e: ferrojit_export::ExportError| format!("cannot load program {}: {e}", input.display());
    let archive = ferrojit_export::Pt2Archive::open(input).map_err(cannot_load)?;
    let mut programs = Vec::new();
    for name in archive.model_names() {
        let mut program = archive.load(name).map_err(cannot_load)?;
        if let Some(strict) = decompose_as {
            decompose(&mut program, strict)?;
        }
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

/// Lowers `program` to core ATen (`--decompose`); what stays is printed as warnings, or with
/// `strict` refused as an error naming the node.
pub fn decompose(program: &mut ferrojit_export::LoadedProgram, strict: bool) -> Result<(), String> {
    use ferrojit_export::decompose::{decompose_program, DecomposeOptions};
    let report = decompose_program(&mut program.program, DecomposeOptions { strict })
        .map_err(|e| format!("cannot decompose program '{}': {e}", program.name))?;
    for warning in report.warnings() {
        eprintln!("warning: program '{}': {warning}", program.name);
    }
    Ok(())
}
