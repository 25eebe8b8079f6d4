//! `ferrojit run` and `ferrojit inspect` for torch.export `.pt2` programs (through
//! `ferrojit-export`): the same contract as for TorchScript archives.

use std::path::Path;

use ferrojit_archive::zip_archive::ArchiveReader;
use ferrojit_export::fx_text::{print_code, print_graph};
use ferrojit_export::{ExportedModule, Pt2Archive};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::torch_save;

/// Whether `path` is a `.pt2` archive rather than a TorchScript one.
pub fn is_pt2(path: &Path) -> bool {
    if path.extension().is_some_and(|extension| extension == "pt2") {
        return true;
    }
    ArchiveReader::open(path)
        .map(|reader| reader.has_record("archive_format"))
        .unwrap_or(false)
}

/// Loads program `name` of `model`, runs it on the torch.save'd tuple in `inputs`, prints
/// the result and saves it to `output`.
pub fn run_program(
    model: &Path,
    name: &str,
    inputs: Option<&Path>,
    output: Option<&Path>,
) -> Result<(), String> {
    let arguments = match inputs {
        Some(path) => match torch_save::load_file(path)
            .map_err(|e| format!("cannot read inputs {}: {e}", path.display()))?
        {
            IValue::Tuple(tuple) => tuple.items.to_vec(),
            other => vec![other],
        },
        None => Vec::new(),
    };
    let cannot_load =
        |e: &dyn std::fmt::Display| format!("cannot load model {}: {e}", model.display());
    let archive = Pt2Archive::open(model).map_err(|e| cannot_load(&e))?;
    let loaded = archive.load(name).map_err(|e| cannot_load(&e))?;
    let mut module = ExportedModule::new(loaded).map_err(|e| cannot_load(&e))?;
    let result = module
        .run(arguments)
        .map_err(|e| format!("forward() failed: {e}"))?;
    println!("{}", result.python_repr());
    if let Some(path) = output {
        torch_save::save_file(&result, path)
            .map_err(|e| format!("cannot write output {}: {e}", path.display()))?;
    }
    Ok(())
}

/// What `inspect` prints for a `.pt2` program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pt2View {
    /// `print(torch.export.load(path).graph)`
    Graph,
    /// `torch.export.load(path).graph_module.code`
    Code,
    /// The signature, state dict and range constraints.
    Summary,
}

/// Prints program `name`'s graph, code or summary.
pub fn inspect_program(model: &Path, name: &str, view: Pt2View) -> Result<(), String> {
    let cannot_load =
        |e: &dyn std::fmt::Display| format!("cannot load model {}: {e}", model.display());
    let archive = Pt2Archive::open(model).map_err(|e| cannot_load(&e))?;
    match view {
        Pt2View::Graph => {
            let program = archive.program(name).map_err(|e| cannot_load(&e))?;
            println!("{}", print_graph(&program));
            return Ok(());
        }
        Pt2View::Code => {
            let program = archive.program(name).map_err(|e| cannot_load(&e))?;
            print!("{}", print_code(&program));
            return Ok(());
        }
        Pt2View::Summary => {}
    }
    let loaded = archive.load(name).map_err(|e| cannot_load(&e))?;
    let program = &loaded.program;
    println!("models: {}", archive.model_names().join(", "));
    println!(
        "schema {}.{}, torch {}, dialect {}",
        program.schema_version.major,
        program.schema_version.minor,
        program.torch_version,
        program.verifiers.join(", ")
    );
    println!("input specs:");
    for spec in &program.graph_module.signature.input_specs {
        println!("  {spec:?}");
    }
    println!("output specs:");
    for spec in &program.graph_module.signature.output_specs {
        println!("  {spec:?}");
    }
    println!("state dict:");
    for (key, tensor) in loaded.state_dict.iter().chain(loaded.constants.iter()) {
        println!("  {key}: {} {:?}", tensor.dtype().name(), tensor.sizes());
    }
    println!("range constraints:");
    for (symbol, range) in &program.range_constraints {
        let bound = |value: Option<i64>| value.map_or("oo".to_string(), |v| v.to_string());
        println!(
            "  {symbol}: [{}, {}]",
            bound(range.min_val),
            bound(range.max_val)
        );
    }
    // The example inputs saved with the program (read on request: they may hold values
    // ferrojit does not load, which must not stop the summary).
    match archive.sample_inputs(name) {
        Ok(Some(samples)) => println!(
            "sample inputs: {} positional, {} keyword",
            samples.args.len(),
            samples.kwargs.len()
        ),
        Ok(None) => println!("sample inputs: none"),
        Err(error) => println!("sample inputs: not readable ({error})"),
    }
    Ok(())
}
