//! `ferrojit compile`: compile a TorchScript source file (top-level functions and script
//! classes) without Python and save it as a module whose `forward` calls the entry function.

use std::path::Path;

use ferrojit_serialize::export::{module_from_source, save_module};

pub fn compile(source_path: &Path, output: &Path, entry: Option<&str>) -> Result<(), String> {
    let source = std::fs::read_to_string(source_path)
        .map_err(|e| format!("cannot read {}: {e}", source_path.display()))?;
    let name = source_path.display().to_string();
    let loaded = module_from_source(&source, &name, entry)
        .map_err(|e| format!("cannot compile {name}: {e}"))?;
    save_module(&loaded, output).map_err(|e| format!("cannot save {}: {e}", output.display()))
}
