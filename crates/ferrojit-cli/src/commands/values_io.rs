//! The values `run` takes and gives: arguments from an `--inputs` file (torch.save, `.npy`,
//! `.npz`, `.safetensors` or JSON) and `--arg` values, and the result written in the format
//! `--output`'s extension names, that path checked before anything runs.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use ferrojit_archive::zip_archive::{replace_file, ArchiveLimits, ArchiveReader};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::array_files::{
    ivalue_to_json, parse_json_arguments, read_npy, read_npz, write_npy, write_npz,
};
use ferrojit_serialize::safetensors_io::{load_safetensors_bytes, save_safetensors_to_bytes};
use ferrojit_serialize::torch_save;
use ferrojit_tensor::Tensor;

/// A file format for values, chosen by a path's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueFormat {
    /// `torch.save` (`.pt`, `.pth`): any value.
    TorchSave,
    /// One NumPy array.
    Npy,
    /// NumPy arrays in a zip, in order.
    Npz,
    /// Named tensors, Hugging Face's format.
    Safetensors,
    /// The JSON encoding of `ferrojit_serialize::array_files::json_values`.
    Json,
}

/// The extensions `--output` takes, for messages.
const OUTPUT_EXTENSIONS: &str = ".pt, .pth, .npy, .npz, .safetensors or .json";

impl ValueFormat {
    /// The format a path's extension names (case-insensitive); `None` for any other.
    pub fn from_extension(path: &Path) -> Option<ValueFormat> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match extension.as_str() {
            "pt" | "pth" => ValueFormat::TorchSave,
            "npy" => ValueFormat::Npy,
            "npz" => ValueFormat::Npz,
            "safetensors" => ValueFormat::Safetensors,
            "json" => ValueFormat::Json,
            _ => return None,
        })
    }

    /// The format of an inputs file: its extension, else its first bytes (the `.npy` magic,
    /// JSON's `[` or `{`), else torch.save.
    fn of_inputs(path: &Path, first_bytes: &[u8]) -> ValueFormat {
        if let Some(format) = ValueFormat::from_extension(path) {
            return format;
        }
        let text_start = first_bytes
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .copied();
        if first_bytes.starts_with(b"\x93NUMPY") {
            ValueFormat::Npy
        } else if matches!(text_start, Some(b'[' | b'{')) {
            ValueFormat::Json
        } else {
            ValueFormat::TorchSave
        }
    }
}

/// The positional arguments stored in an `--inputs` file. A torch.save file holds a tuple of
/// them (any other value is the only argument); the arrays of an `.npz` or `.safetensors` are
/// the arguments in the file's order; an `.npy` is one tensor argument; JSON is a list.
pub fn read_arguments(path: &Path, limits: ArchiveLimits) -> Result<Vec<IValue>, String> {
    let cannot_read =
        |e: &dyn std::fmt::Display| format!("cannot read inputs {}: {e}", path.display());
    let mut head = [0u8; 16];
    let head_len = {
        use std::io::Read;
        let mut file = std::fs::File::open(path).map_err(|e| cannot_read(&e))?;
        file.read(&mut head).map_err(|e| cannot_read(&e))?
    };
    let format = ValueFormat::of_inputs(path, &head[..head_len]);
    if format == ValueFormat::TorchSave {
        let archive = ArchiveReader::open_with_limits(path, limits).map_err(|e| cannot_read(&e))?;
        let value = torch_save::load_archive(&archive).map_err(|e| cannot_read(&e))?;
        return Ok(match value {
            IValue::Tuple(tuple) => tuple.items.to_vec(),
            other => vec![other],
        });
    }
    let bytes = std::fs::read(path).map_err(|e| cannot_read(&e))?;
    let tensors = |named: Vec<(String, Tensor)>| {
        named
            .into_iter()
            .map(|(_, tensor)| IValue::from(tensor))
            .collect()
    };
    Ok(match format {
        ValueFormat::Npy => vec![IValue::from(read_npy(&bytes).map_err(|e| cannot_read(&e))?)],
        ValueFormat::Npz => tensors(read_npz(&bytes).map_err(|e| cannot_read(&e))?),
        ValueFormat::Safetensors => {
            tensors(load_safetensors_bytes(&bytes).map_err(|e| cannot_read(&e))?)
        }
        ValueFormat::Json => {
            let text = std::str::from_utf8(&bytes)
                .map_err(|_| cannot_read(&"a .json file must be UTF-8 text"))?;
            parse_json_arguments(text).map_err(|e| cannot_read(&e))?
        }
        ValueFormat::TorchSave => Vec::new(),
    })
}

/// An `--arg` value: `None`, `True`/`False` (or `true`/`false`), an int, a float, or else a
/// string. Quotes (`'3'` or `"3"`) make a string of what would read as something else.
pub fn parse_argument(text: &str) -> IValue {
    for quote in ['\'', '"'] {
        if let Some(inner) = text
            .strip_prefix(quote)
            .and_then(|rest| rest.strip_suffix(quote))
        {
            return IValue::string(inner);
        }
    }
    match text {
        "None" => return IValue::None,
        "True" | "true" => return IValue::Bool(true),
        "False" | "false" => return IValue::Bool(false),
        _ => {}
    }
    if let Ok(int) = text.parse::<i64>() {
        return IValue::Int(int);
    }
    // Rust also parses "inf" and "NaN"; Python's float() spellings, so they count too.
    if let Ok(float) = text.parse::<f64>() {
        return IValue::Double(float);
    }
    IValue::string(text)
}

/// Where and how the result will be written: checked before the model loads.
#[derive(Debug, Clone)]
pub struct OutputTarget {
    pub path: PathBuf,
    pub format: ValueFormat,
}

/// Checks `--output` before anything runs: a known extension, not a directory, and a file
/// that can be created (tried, and removed again when it did not exist before).
pub fn prepare_output(path: &Path) -> Result<OutputTarget, String> {
    let cannot_write = |why: String| format!("cannot write output {}: {why}", path.display());
    let format = ValueFormat::from_extension(path).ok_or_else(|| {
        cannot_write(format!(
            "unknown extension (the format is chosen by it: {OUTPUT_EXTENSIONS})"
        ))
    })?;
    if path.is_dir() {
        return Err(cannot_write("it is a directory".to_string()));
    }
    let existed = path.exists();
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| cannot_write(e.to_string()))?;
    if !existed {
        // Only a probe: a run that fails later leaves no empty file behind.
        let _ = std::fs::remove_file(path);
    }
    Ok(OutputTarget {
        path: path.to_path_buf(),
        format,
    })
}

/// Writes the result in the target's format.
pub fn write_result(result: &IValue, target: &OutputTarget) -> Result<(), String> {
    let path = &target.path;
    let cannot_write =
        |e: &dyn std::fmt::Display| format!("cannot write output {}: {e}", path.display());
    let bytes = match target.format {
        ValueFormat::TorchSave => {
            return torch_save::save_file(result, path).map_err(|e| cannot_write(&e));
        }
        ValueFormat::Npy => {
            let tensor = match result {
                IValue::Tensor(cell) => cell.get(),
                other => {
                    return Err(cannot_write(&format!(
                        "a .npy file holds one tensor, and the result is a {}; use .npz, \
                         .safetensors, .json or .pt",
                        other.type_of()
                    )))
                }
            };
            write_npy(&tensor).map_err(|e| cannot_write(&e))?
        }
        ValueFormat::Npz => {
            let named = named_tensors(result, "arr").map_err(|e| cannot_write(&e))?;
            write_npz(&named).map_err(|e| cannot_write(&e))?
        }
        ValueFormat::Safetensors => {
            let named = named_tensors(result, "output").map_err(|e| cannot_write(&e))?;
            save_safetensors_to_bytes(&named, None).map_err(|e| cannot_write(&e))?
        }
        ValueFormat::Json => {
            let json = ivalue_to_json(result).map_err(|e| cannot_write(&e))?;
            let mut text = json.to_string();
            text.push('\n');
            text.into_bytes()
        }
    };
    replace_file(path, &bytes).map_err(|e| cannot_write(&e))
}

/// The tensors of a result, named for an array archive: a lone tensor is `PREFIX_0`, the
/// items of a tuple or list `PREFIX_0`, `PREFIX_1`, … (nested ones `PREFIX_1_0`), the values
/// of a dict with string keys by their keys. Anything else has no place in such a file.
fn named_tensors(result: &IValue, prefix: &str) -> Result<Vec<(String, Tensor)>, String> {
    let mut named = Vec::new();
    let mut pending = vec![(None::<String>, result.clone())];
    while let Some((name, value)) = pending.pop() {
        let child = |suffix: String| match &name {
            Some(name) => format!("{name}_{suffix}"),
            None => format!("{prefix}_{suffix}"),
        };
        match value {
            IValue::Tensor(cell) => named.push((
                name.unwrap_or_else(|| format!("{prefix}_0")),
                cell.get().as_ref().clone(),
            )),
            IValue::Tuple(tuple) => pending.extend(
                tuple
                    .items
                    .iter()
                    .enumerate()
                    .rev()
                    .map(|(index, item)| (Some(child(index.to_string())), item.clone())),
            ),
            IValue::List(list) => pending.extend(
                list.to_vec()
                    .into_iter()
                    .enumerate()
                    .rev()
                    .map(|(index, item)| (Some(child(index.to_string())), item)),
            ),
            IValue::Dict(dict) => {
                let mut entries = Vec::new();
                for (key, item) in dict.entries() {
                    let key = key.to_str().map_err(|_| {
                        "a dict result needs string keys to name its arrays; use .json or .pt"
                            .to_string()
                    })?;
                    let key = match &name {
                        Some(name) => format!("{name}_{key}"),
                        None => key.to_string(),
                    };
                    entries.push((Some(key), item));
                }
                pending.extend(entries.into_iter().rev());
            }
            other => {
                return Err(format!(
                    "the result holds a {} ({}), which an array file cannot store; use .json \
                     or .pt",
                    other.type_of(),
                    name.unwrap_or_else(|| "the whole result".to_string())
                ))
            }
        }
    }
    Ok(named)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_from_the_command_line() {
        assert!(parse_argument("None").is_none());
        assert!(parse_argument("True").to_bool().unwrap());
        assert!(!parse_argument("false").to_bool().unwrap());
        assert_eq!(parse_argument("-3").to_int().unwrap(), -3);
        assert_eq!(parse_argument("2.5").to_double().unwrap(), 2.5);
        assert_eq!(parse_argument("1e3").to_double().unwrap(), 1000.0);
        assert_eq!(parse_argument("relu").to_str().unwrap(), "relu");
        assert_eq!(parse_argument("'3'").to_str().unwrap(), "3");
        assert_eq!(parse_argument("\"None\"").to_str().unwrap(), "None");
    }

    #[test]
    fn array_names_follow_the_structure() {
        let tensor = || IValue::from(Tensor::from_vec(vec![1.0f32], &[1]).unwrap());
        let nested = IValue::tuple(vec![tensor(), IValue::tuple(vec![tensor(), tensor()])]);
        let names: Vec<String> = named_tensors(&nested, "arr")
            .unwrap()
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert_eq!(names, ["arr_0", "arr_1_0", "arr_1_1"]);
        let error =
            named_tensors(&IValue::tuple(vec![tensor(), IValue::Int(3)]), "arr").unwrap_err();
        assert!(error.contains("arr_1"), "{error}");
    }
}
