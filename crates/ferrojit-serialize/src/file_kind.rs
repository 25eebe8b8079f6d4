//! Recognises the files most often handed to ferrojit in place of a TorchScript archive:
//! a `state_dict`, a pickled `nn.Module` (`torch.save(model)`), or other values saved with
//! `torch.save`. Each gets a message that says what the file is and how to make a file
//! ferrojit runs, rather than the pickle error the loader would otherwise give.

use ferrojit_archive::error::PickleError;
use ferrojit_archive::zip_archive::ArchiveReader;
use ferrojit_runtime::ivalue::IValue;

use crate::load_error::LoadError;

/// How to make a file ferrojit runs, appended to every message here.
pub const HOW_TO_SAVE_A_MODEL: &str = "save the model as a program instead: \
    torch.jit.script(model).save(PATH) (or torch.jit.trace), or \
    torch.export.save(torch.export.export(model, args), PATH)";

/// Whether the archive looks like a `torch.save` file rather than a TorchScript archive:
/// a `data.pkl` with no `code/` and no `constants.pkl`, which every `torch.jit.save` writes.
pub fn is_torch_save_file(archive: &ArchiveReader) -> bool {
    archive.has_record("data.pkl")
        && !archive.has_record("constants.pkl")
        && !archive
            .record_names()
            .iter()
            .any(|name| name.starts_with("code/"))
}

/// For a `torch.save` file, a one-line description of what it holds and how to make a
/// model file instead; `None` for anything else.
pub fn describe_torch_save_file(archive: &ArchiveReader) -> Option<String> {
    if !is_torch_save_file(archive) {
        return None;
    }
    let what = match crate::torch_save::load_archive(archive) {
        Ok(IValue::Dict(dict))
            if !dict.is_empty()
                && dict.entries().iter().all(|(key, value)| {
                    key.to_str().is_ok() && matches!(value, IValue::Tensor(_))
                }) =>
        {
            format!(
                "a state dict ({} named tensors: a model's weights without its code)",
                dict.len()
            )
        }
        Ok(value) => format!("a {} (values, not a program)", value.tag_name()),
        Err(LoadError::Pickle {
            source: PickleError::DisallowedGlobal { module, name, .. },
            ..
        }) => format!(
            "a pickled Python object of class {module}.{name} (as torch.save(model) writes): \
             ferrojit runs TorchScript and torch.export programs, not Python classes"
        ),
        Err(_) => return None,
    };
    Some(format!(
        "this is a torch.save file holding {what}; {HOW_TO_SAVE_A_MODEL}"
    ))
}
