//! ferrojit-convert: converts a TorchScript module/method into an Export IR `ExportedProgram`
//! (ferrojit-export's data model), as torch.export would have exported it.
//!
//! The method's graph is inlined and walked with concrete example inputs: every tensor keeps
//! its example value (for the `tensor_values` metadata) and its Export IR name; everything
//! else is specialized to its example value, so static branches are taken and static loops
//! unrolled. Operators on tensors become `torch.ops.aten.*` nodes (in-place ones their
//! functional variants), parameters and buffers become lifted inputs, buffer writes become
//! `buffer_mutation` outputs, and a branch on tensor data becomes `cond`.
//!
//! ```no_run
//! let args = ferrojit_convert::read_example_inputs("model.inputs.pt".as_ref()).unwrap();
//! let program = ferrojit_convert::convert_file("model.pt".as_ref(), "forward", args).unwrap();
//! let mut module = ferrojit_export::ExportedModule::new(program).unwrap();
//! ```

mod control_flow;
mod converter;
pub mod dynamic;
pub mod error;
pub mod metadata;
mod operator_call;
pub mod program;
mod symbolic_shapes;
pub mod treespec_text;
mod while_loop;

pub use dynamic::DynamicDim;
pub use error::{ConvertError, Result};
pub use program::{convert_method, convert_method_dynamic, PROGRAM_NAME};

use ferrojit_runtime::IValue;
use ferrojit_serialize::torch_save;
use std::path::Path;

/// Loads the TorchScript archive at `path` and converts its method `method` called on `args`.
pub fn convert_file(
    path: &Path,
    method: &str,
    args: Vec<IValue>,
) -> Result<ferrojit_export::LoadedProgram> {
    let loaded = ferrojit_serialize::import::load_module(path)
        .map_err(|e| ConvertError::Input(format!("{}: {e}", path.display())))?;
    convert_method(&loaded.module, method, args)
}

/// [`convert_file`] with the dimensions named by `dynamic` made symbolic.
pub fn convert_file_dynamic(
    path: &Path,
    method: &str,
    args: Vec<IValue>,
    dynamic: &[DynamicDim],
) -> Result<ferrojit_export::LoadedProgram> {
    let loaded = ferrojit_serialize::import::load_module(path)
        .map_err(|e| ConvertError::Input(format!("{}: {e}", path.display())))?;
    convert_method_dynamic(&loaded.module, method, args, dynamic)
}

/// Reads the example arguments of a `torch.save` file as the repo's fixtures write them: a
/// tuple of arguments (the zoo), a list of such tuples of which the first call is used (the
/// language corpus), or a single value, which is the one argument.
pub fn read_example_inputs(path: &Path) -> Result<Vec<IValue>> {
    let value = torch_save::load_file(path)
        .map_err(|e| ConvertError::Input(format!("{}: {e}", path.display())))?;
    Ok(match value {
        IValue::Tuple(tuple) => tuple.items.clone(),
        IValue::List(list) => {
            let calls = list.to_vec();
            match calls.first() {
                Some(IValue::Tuple(first))
                    if calls.iter().all(|c| matches!(c, IValue::Tuple(_))) =>
                {
                    first.items.clone()
                }
                _ => vec![IValue::List(list)],
            }
        }
        other => vec![other],
    })
}
