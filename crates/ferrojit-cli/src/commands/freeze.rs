//! `ferrojit freeze MODEL.pt -o FROZEN.pt [--preserve NAME]... [--eval]
//! [--optimize-for-inference] [--no-freeze-interfaces]`: what `torch.jit.freeze(module)` does, saved as an archive
//! PyTorch loads. The module must be in eval mode, as PyTorch requires; `--eval` first sets
//! `training` to False on the module and every submodule, as `module.eval()` does.
//! `--optimize-for-inference` does what `torch.jit.optimize_for_inference(module,
//! other_methods=preserved)` does on a CPU without MKLDNN (it implies `--eval`, since PyTorch's
//! function calls `eval()` itself); see `ferrojit_opt::freezing::optimize_for_inference`.

use std::path::Path;

use ferrojit_opt::freezing::{freeze, optimize_for_inference, FreezeOptions};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::export::save_object_with_graph_methods;
use ferrojit_serialize::import::load_module;

/// PyTorch's message for anything that is not a TorchScript module.
const NOT_A_SCRIPT_MODULE: &str = "Freezing expects a ScriptModule as input. Please use \
    torch.jit.script or torch.jit.trace to script your 'nn.Module'.";

pub fn freeze_model(
    input: &Path,
    output: &Path,
    preserved: &[String],
    eval: bool,
    for_inference: bool,
    freeze_interfaces: bool,
) -> Result<(), String> {
    let eval = eval || for_inference;
    let _progress = super::progress::Progress::start(&format!("freezing {}", input.display()));
    if super::pt2::is_pt2(input) {
        return Err(format!(
            "{NOT_A_SCRIPT_MODULE} ({} is a torch.export program)",
            input.display()
        ));
    }
    let loaded = load_module(input).map_err(|e| {
        format!(
            "{NOT_A_SCRIPT_MODULE} (cannot load {}: {e})",
            input.display()
        )
    })?;
    if !loaded.module.class().is_module() {
        return Err(format!(
            "{NOT_A_SCRIPT_MODULE} ({} holds an object of class {}, not a module)",
            input.display(),
            loaded.module.class().qualified_name()
        ));
    }
    // `torch.jit.freeze` reads `module.training` first; a module without the attribute (one
    // that is frozen already) fails there unless `eval()` has set it on the Python side.
    if !eval && loaded.module.attr("training").is_err() {
        return Err(format!(
            "'RecursiveScriptModule' object has no attribute 'training' ({} has no training \
             attribute, as a frozen module has none; --eval freezes it again)",
            input.display()
        ));
    }
    if eval {
        for (name, module) in loaded.module.named_modules() {
            if module.class().attribute_index("training").is_some() {
                module
                    .set_attr("training", IValue::Bool(false))
                    .map_err(|e| {
                        let which = if name.is_empty() { "the module" } else { &name };
                        format!("cannot set {which} to eval mode: {e}")
                    })?;
            }
        }
    }
    let options = FreezeOptions {
        preserved: preserved.to_vec(),
        freeze_interfaces,
    };
    let frozen = if for_inference {
        optimize_for_inference(&loaded.module, &options)
    } else {
        freeze(&loaded.module, &options)
    }
    .map_err(|e| format!("cannot freeze {}: {e}", input.display()))?;
    let methods: Vec<(String, ferrojit_ir::Graph)> = frozen
        .methods
        .into_iter()
        .map(|method| (method.name, method.graph))
        .collect();
    save_object_with_graph_methods(
        &loaded,
        &frozen.object,
        &frozen.original_class,
        &methods,
        output,
    )
    .map_err(|e| format!("cannot save {}: {e}", output.display()))
}
