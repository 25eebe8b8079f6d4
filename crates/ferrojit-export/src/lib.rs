//! ferrojit-export: reads torch.export `.pt2` archives (the `ExportedProgram` JSON, schema
//! version 8, with its weights and constants) and runs them on the runtime's operators,
//! without Python and without libtorch.
//!
//! ```no_run
//! use ferrojit_export::{load_module, DEFAULT_MODEL_NAME};
//! let mut module = load_module("model.pt2", DEFAULT_MODEL_NAME).unwrap();
//! let output = module.run(vec![]).unwrap();
//! ```

pub mod archive;
pub mod decompose;
pub mod error;
pub mod fallback;
pub mod fast_path;
pub mod fx_text;
pub mod higher_order;
pub mod input_check;
pub mod json;
pub mod model;
pub mod run;
pub mod symbolic;
pub mod torch_save;
pub mod treespec;
pub mod writer;

pub use archive::{LoadedProgram, Pt2Archive, Pt2Layout, SampleInputs, DEFAULT_MODEL_NAME};
pub use error::{ExportError, Result};
pub use model::ExportedProgram;
pub use run::ExportedModule;
pub use writer::{save_program, save_program_to_bytes, save_programs, save_programs_to_bytes};

/// Opens `path` and prepares program `model` to run.
pub fn load_module(path: impl AsRef<std::path::Path>, model: &str) -> Result<ExportedModule> {
    let archive = Pt2Archive::open(path)?;
    ExportedModule::new(archive.load(model)?)
}

/// Whether the file at `path` is a zip whose records include a `.pt2` archive's
/// `archive_format` (or the older flat layout's program); a cheap check for callers choosing
/// a loader.
pub fn looks_like_pt2(path: impl AsRef<std::path::Path>) -> bool {
    ferrojit_archive::zip_archive::ArchiveReader::open_allowing_flat(path)
        .map(|reader| {
            reader.has_record("archive_format")
                || reader.has_record(archive::FLAT_PROGRAM_RECORD)
                || reader
                    .record_names()
                    .iter()
                    .any(|n| n.starts_with("models/"))
        })
        .unwrap_or(false)
}
