//! Recognises an ONNX model handed to `run` or `inspect` in place of a TorchScript archive
//! (the `torch.save` cases are recognised by `ferrojit_serialize::file_kind`), so the
//! error says what the file is and how to make one ferrojit runs.

use std::io::Read;
use std::path::Path;

use ferrojit_serialize::file_kind::HOW_TO_SAVE_A_MODEL;

/// The "cannot load model" message, with a hint appended when the file is an ONNX model.
pub fn model_load_error(model: &Path, error: &dyn std::fmt::Display) -> String {
    let mut message = format!("cannot load model {}: {error}", model.display());
    if looks_like_onnx(model) {
        message.push_str(&format!(
            "; this is an ONNX model (a protobuf ModelProto), not a TorchScript archive or a \
             .pt2 program, and an ONNX file cannot be turned back into one: from the PyTorch \
             model it was exported from, {HOW_TO_SAVE_A_MODEL}"
        ));
    }
    message
}

/// Whether the file's first bytes are an ONNX `ModelProto`: field 1 (`ir_version`, a small
/// varint, tag 0x08) followed by another ModelProto field (producer name or version,
/// domain, model version, doc string, graph, opset import), or an `.onnx` name on a file
/// that is not a zip archive.
pub fn looks_like_onnx(path: &Path) -> bool {
    let mut head = [0u8; 64];
    let Ok(length) = std::fs::File::open(path).and_then(|mut file| file.read(&mut head)) else {
        return false;
    };
    let head = &head[..length];
    if head.starts_with(b"PK") {
        return false;
    }
    if path
        .extension()
        .is_some_and(|extension| extension.eq_ignore_ascii_case("onnx"))
    {
        return true;
    }
    // ir_version is 1 to 12 today; the next field's tag (key = field << 3 | wire type).
    const MODEL_PROTO_TAGS: [u8; 8] = [0x12, 0x1a, 0x22, 0x28, 0x32, 0x3a, 0x42, 0x52];
    matches!(head, [0x08, version, tag, ..] if (1..=32).contains(version) && MODEL_PROTO_TAGS.contains(tag))
}
