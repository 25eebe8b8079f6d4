//! `ferrojit convert`: load a TorchScript archive and save it again through ferrojit's own
//! Python printer and pickler.

use std::path::Path;

use ferrojit_serialize::export::save_module;
use ferrojit_serialize::import::load_module;

pub fn convert(input: &Path, output: &Path) -> Result<(), String> {
    let loaded =
        load_module(input).map_err(|e| format!("cannot load model {}: {e}", input.display()))?;
    save_module(&loaded, output).map_err(|e| format!("cannot save {}: {e}", output.display()))
}
