//! `ferrojit trace SRC.py --entry NAME --inputs ARGS.pt -o OUT.pt`: runs a function of a
//! TorchScript-subset source on example inputs, records what it does as
//! `torch.jit.trace` would, and saves the trace as a module archive. Tracer warnings go to
//! stderr as `warning: TracerWarning: ...`, as Python shows them.

use std::path::Path;

use ferrojit_archive::zip_archive::ArchiveReader;
use ferrojit_runtime::IValue;
use ferrojit_serialize::torch_save;

pub struct TraceOptions<'a> {
    pub source: &'a Path,
    /// The function to trace; `None` for an archive (its `forward` is traced).
    pub entry: Option<&'a str>,
    pub inputs: &'a Path,
    pub output: &'a Path,
    /// Input sets to check the trace on (`check_inputs`).
    pub check_inputs: &'a [std::path::PathBuf],
}

pub fn trace(options: &TraceOptions) -> Result<(), String> {
    let inputs = read_inputs(options.inputs)?;
    let traced = if is_archive(options.source) {
        if options.entry.is_some() {
            return Err(
                "--entry names a function of a source file; an archive's forward is \
                        traced"
                    .to_string(),
            );
        }
        let loaded = ferrojit_serialize::import::load_module(options.source)
            .map_err(|e| format!("cannot load model {}: {e}", options.source.display()))?;
        ferrojit_tracer::trace_module(loaded, inputs).map_err(|e| e.to_string())?
    } else {
        let entry = options
            .entry
            .ok_or("--entry NAME is needed to trace a source file (which function?)")?;
        let source = std::fs::read_to_string(options.source)
            .map_err(|e| format!("cannot read {}: {e}", options.source.display()))?;
        let name = options.source.display().to_string();
        ferrojit_tracer::trace_source(&source, &name, entry, inputs).map_err(|e| e.to_string())?
    };
    for warning in &traced.warnings {
        eprintln!("warning: TracerWarning: {warning}");
    }
    if !options.check_inputs.is_empty() {
        let check_sets = options
            .check_inputs
            .iter()
            .map(|path| read_inputs(path))
            .collect::<Result<Vec<_>, _>>()?;
        let report =
            ferrojit_tracer::check_trace(&traced, &check_sets).map_err(|e| e.to_string())?;
        for warning in &report.warnings {
            eprintln!("warning: TracerWarning: {warning}");
        }
        if let Some(message) = report.error {
            // The whole report first, as Python prints the exception; then the one
            // `error:` line.
            eprint!("{message}");
            return Err(
                "torch.jit.TracingCheckError: Tracing failed sanity checks! \
                 (the report is above; no archive was written)"
                    .to_string(),
            );
        }
    }
    traced.save(options.output).map_err(|e| e.to_string())
}

/// Whether `path` is a zip archive (a TorchScript module) rather than source text.
fn is_archive(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut magic))
        .is_ok()
        && magic == *b"PK\x03\x04"
}

/// The positional example inputs: a torch.save'd tuple, or one value (the only input).
pub fn read_inputs(path: &Path) -> Result<Vec<IValue>, String> {
    let cannot_read =
        |e: &dyn std::fmt::Display| format!("cannot read inputs {}: {e}", path.display());
    let archive = ArchiveReader::open(path).map_err(|e| cannot_read(&e))?;
    let value = torch_save::load_archive(&archive).map_err(|e| cannot_read(&e))?;
    Ok(match value {
        IValue::Tuple(tuple) => tuple.items.to_vec(),
        other => vec![other],
    })
}
