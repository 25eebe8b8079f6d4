//! `ferrojit run`: load an archive, call a method on inputs from a torch.save file, print
//! and save the result.

use std::path::Path;

use ferrojit_runtime::interpreter::RunOptions;
use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::import::load_module_with_options;
use ferrojit_serialize::torch_save;

/// `max_steps` bounds every interpreted call (the method and each `__setstate__` run while
/// loading): past it the run fails with "step budget of N exceeded".
pub fn run_model(
    model: &Path,
    inputs: Option<&Path>,
    output: Option<&Path>,
    method: &str,
    max_steps: Option<u64>,
) -> Result<(), String> {
    let options = RunOptions {
        max_steps,
        ..RunOptions::default()
    };
    let arguments = match inputs {
        Some(path) => {
            let value = torch_save::load_file(path)
                .map_err(|e| format!("cannot read inputs {}: {e}", path.display()))?;
            match value {
                IValue::Tuple(tuple) => tuple.items.to_vec(),
                other => vec![other],
            }
        }
        None => Vec::new(),
    };
    let loaded = load_module_with_options(model, &options)
        .map_err(|e| format!("cannot load model {}: {e}", model.display()))?;
    let class = loaded.module.object().class();
    if !class.has_method(method) {
        let mut methods = class.method_names();
        methods.sort();
        return Err(format!(
            "the model ({}) has no method '{method}'; its methods are: {}",
            class.qualified_name(),
            methods.join(", ")
        ));
    }
    let result = loaded
        .module
        .run_method_with_options(method, arguments, &options)
        .map_err(|e| format!("{method}() failed: {e}"))?;
    println!("{}", result.python_repr());
    if let Some(path) = output {
        torch_save::save_file(&result, path)
            .map_err(|e| format!("cannot write output {}: {e}", path.display()))?;
    }
    Ok(())
}
