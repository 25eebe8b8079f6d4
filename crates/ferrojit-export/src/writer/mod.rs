//! Writes programs as the `.pt2` archive torch 2.15's `torch.export.save` writes
//! (`torch/export/pt2_archive/_package.py`): for each program, its weights' storages and
//! config, its constants' storages and config, `models/NAME.json` and
//! `data/sample_inputs/NAME.pt`; then `archive_format`, `archive_version`, `.data/version`,
//! `byteorder` and `.data/serialization_id`, all under one root folder.
//!
//! Saving is deterministic: PyTorch's `.data/serialization_id` is random, ferrojit's is a
//! hash of the records before it, so the same program always gives the same bytes.

pub mod builder;
pub mod json_text;
pub mod payload;
pub mod program_json;

use crate::archive::{LoadedProgram, SampleInputs};
use crate::error::{ExportError, Result};
use crate::model::{Argument, Graph, InputSpec};
use ferrojit_archive::serialization_id::ContentHash;
use ferrojit_archive::zip_archive::{replace_file, ArchiveWriter};
use ferrojit_ir::Type;
use ferrojit_runtime::{DictValue, IValue};
use payload::{payload_records, TensorRole};
use std::collections::BTreeMap;
use std::io::Cursor;
use std::path::Path;

/// The root folder of an archive written to memory, as PyTorch names it for a buffer.
pub const IN_MEMORY_ROOT: &str = "archive";

/// Saves one program (with its sample inputs, if given) as a `.pt2` file at `path`; the
/// archive's root folder is the file's stem, as PyTorch names it.
pub fn save_program(
    program: &LoadedProgram,
    sample_inputs: Option<&SampleInputs>,
    path: &Path,
) -> Result<()> {
    save_programs(&[(program, sample_inputs)], path)
}

/// The bytes of the `.pt2` archive [`save_program`] writes (root folder `archive`).
pub fn save_program_to_bytes(
    program: &LoadedProgram,
    sample_inputs: Option<&SampleInputs>,
) -> Result<Vec<u8>> {
    save_programs_to_bytes(&[(program, sample_inputs)], IN_MEMORY_ROOT)
}

/// Saves several programs (each under its own name) in one `.pt2` file at `path`.
pub fn save_programs(
    programs: &[(&LoadedProgram, Option<&SampleInputs>)],
    path: &Path,
) -> Result<()> {
    let root = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .filter(|stem| !stem.is_empty())
        .unwrap_or(IN_MEMORY_ROOT);
    let bytes = save_programs_to_bytes(programs, root)?;
    replace_file(path, &bytes).map_err(|source| {
        ExportError::Archive(ferrojit_archive::error::ArchiveError::Io {
            path: path.display().to_string(),
            source,
        })
    })
}

/// The bytes of a `.pt2` archive holding `programs`, under root folder `root`.
pub fn save_programs_to_bytes(
    programs: &[(&LoadedProgram, Option<&SampleInputs>)],
    root: &str,
) -> Result<Vec<u8>> {
    if programs.is_empty() {
        return Err(ExportError::Unsupported(
            "saving an archive with no program in it".into(),
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    for (program, _) in programs {
        check_model_name(&program.name)?;
        if !names.insert(program.name.as_str()) {
            return Err(ExportError::Unsupported(format!(
                "two programs are both named '{}'",
                program.name
            )));
        }
        check_program(program)?;
    }
    let mut archive = RecordWriter {
        archive: ArchiveWriter::in_memory(root)?,
        digest: ContentHash::new(),
    };
    let (mut weight_index, mut constant_index) = (0, 0);
    for (program, sample_inputs) in programs {
        let name = &program.name;
        let roles = StateRoles::of(program);
        let weights = payload_records(&program.state_dict, "weight_", &mut weight_index, |fqn| {
            roles.role(fqn)
        });
        for (file, bytes) in &weights.files {
            archive.write(&format!("data/weights/{file}"), bytes)?;
        }
        archive.write(
            &format!("data/weights/{name}_weights_config.json"),
            weights.config.to_text().as_bytes(),
        )?;
        let constants =
            payload_records(&program.constants, "tensor_", &mut constant_index, |fqn| {
                roles.role(fqn)
            });
        for (file, bytes) in &constants.files {
            archive.write(&format!("data/constants/{file}"), bytes)?;
        }
        archive.write(
            &format!("data/constants/{name}_constants_config.json"),
            constants.config.to_text().as_bytes(),
        )?;
        archive.write(
            &format!("models/{name}.json"),
            program_json_text(program).as_bytes(),
        )?;
        let sample_record = format!("data/sample_inputs/{name}.pt");
        let sample_bytes = match sample_inputs {
            Some(inputs) => sample_inputs_bytes(inputs, &sample_record)?,
            None => Vec::new(),
        };
        archive.write(&sample_record, &sample_bytes)?;
    }
    archive.write("archive_format", b"pt2")?;
    archive.write("archive_version", b"0")?;
    archive.write(".data/version", b"6\n")?;
    archive.write("byteorder", b"little")?;
    let id = archive.digest.serialization_id();
    archive
        .archive
        .write_record(".data/serialization_id", id.as_bytes())?;
    Ok(archive.archive.finish_into_bytes()?)
}

/// The text of `models/NAME.json` for a program.
pub fn program_json_text(program: &LoadedProgram) -> String {
    program_json::exported_program(&program.program).to_text()
}

/// The sample inputs as the `torch.save` file of `(args, kwargs)` PyTorch writes.
fn sample_inputs_bytes(inputs: &SampleInputs, record: &str) -> Result<Vec<u8>> {
    let kwargs = DictValue::new(Type::Str, Type::Any);
    for (key, value) in &inputs.kwargs {
        kwargs.insert(IValue::string(key), value.clone());
    }
    let pair = IValue::tuple(vec![
        IValue::tuple(inputs.args.clone()),
        IValue::Dict(kwargs),
    ]);
    ferrojit_serialize::torch_save::save_to_bytes(&pair, IN_MEMORY_ROOT).map_err(|error| {
        ExportError::Tensor {
            name: record.to_string(),
            message: format!("the sample inputs cannot be saved: {error}"),
        }
    })
}

/// A zip writer that also hashes every record it writes, for the serialization id.
struct RecordWriter {
    archive: ArchiveWriter<Cursor<Vec<u8>>>,
    digest: ContentHash,
}

impl RecordWriter {
    fn write(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.digest.update(name.as_bytes());
        self.digest.update(&(bytes.len() as u64).to_le_bytes());
        self.digest.update(bytes);
        self.archive.write_record(name, bytes)?;
        Ok(())
    }
}

/// For each state name, whether it is a parameter and whether its placeholder requires grad
/// (PyTorch writes `requires_grad` from the live tensor; the placeholder's metadata is what
/// ferrojit kept of it).
struct StateRoles<'a> {
    placeholders: BTreeMap<&'a str, (&'a str, bool)>,
    graph: &'a Graph,
}

impl<'a> StateRoles<'a> {
    fn of(program: &'a LoadedProgram) -> StateRoles<'a> {
        let mut placeholders = BTreeMap::new();
        for spec in &program.program.graph_module.signature.input_specs {
            match spec {
                InputSpec::Parameter {
                    arg,
                    parameter_name,
                } => {
                    placeholders.insert(parameter_name.as_str(), (arg.as_str(), true));
                }
                InputSpec::Buffer {
                    arg, buffer_name, ..
                } => {
                    placeholders.insert(buffer_name.as_str(), (arg.as_str(), false));
                }
                InputSpec::TensorConstant {
                    arg,
                    tensor_constant_name,
                } => {
                    placeholders.insert(tensor_constant_name.as_str(), (arg.as_str(), false));
                }
                _ => {}
            }
        }
        StateRoles {
            placeholders,
            graph: &program.program.graph_module.graph,
        }
    }

    fn role(&self, fqn: &str) -> TensorRole {
        match self.placeholders.get(fqn) {
            Some((arg, is_param)) => TensorRole {
                is_param: *is_param,
                requires_grad: self
                    .graph
                    .tensor_values
                    .get(*arg)
                    .map(|meta| meta.requires_grad)
                    .unwrap_or(*is_param),
            },
            None => TensorRole {
                is_param: false,
                requires_grad: false,
            },
        }
    }
}

/// A program name must make a plain file name (`models/NAME.json`).
fn check_model_name(name: &str) -> Result<()> {
    let bad = name.is_empty()
        || name.contains(['/', '\\', '\0'])
        || name == "."
        || name == ".."
        || name.chars().any(char::is_control);
    if bad {
        return Err(ExportError::Unsupported(format!(
            "'{name}' cannot name a program in an archive (models/NAME.json)"
        )));
    }
    Ok(())
}

/// The checks PyTorch's loader would fail on, made before anything is written: every
/// lifted parameter, buffer and constant has its tensor, and every tensor the graphs name
/// (inputs and node outputs, subgraphs included) has metadata in `tensor_values`.
pub fn check_program(program: &LoadedProgram) -> Result<()> {
    for spec in &program.program.graph_module.signature.input_specs {
        let (kind, name, found) = match spec {
            InputSpec::Parameter { parameter_name, .. } => (
                "parameter (state_dict entry)",
                parameter_name,
                program.state_dict.contains_key(parameter_name),
            ),
            InputSpec::Buffer { buffer_name, .. } => (
                "buffer (state_dict or constants entry)",
                buffer_name,
                program.state_dict.contains_key(buffer_name)
                    || program.constants.contains_key(buffer_name),
            ),
            InputSpec::TensorConstant {
                tensor_constant_name,
                ..
            } => (
                "tensor constant (constants entry)",
                tensor_constant_name,
                program.constants.contains_key(tensor_constant_name)
                    || program.state_dict.contains_key(tensor_constant_name),
            ),
            _ => continue,
        };
        if !found {
            return Err(ExportError::MissingReference {
                kind,
                name: name.clone(),
            });
        }
    }
    check_graph_metadata(&program.program.graph_module.graph)
}

fn check_graph_metadata(graph: &Graph) -> Result<()> {
    let missing = |name: &str| ExportError::MissingReference {
        kind: "tensor metadata (tensor_values entry)",
        name: name.to_string(),
    };
    let check = |argument: &Argument| -> Result<()> {
        match argument {
            Argument::Tensor(name) if !graph.tensor_values.contains_key(name) => Err(missing(name)),
            Argument::Tensors(names) => match names
                .iter()
                .find(|name| !graph.tensor_values.contains_key(*name))
            {
                Some(name) => Err(missing(name)),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    };
    for input in &graph.inputs {
        check(input)?;
    }
    for node in &graph.nodes {
        for output in &node.outputs {
            check(output)?;
        }
        for input in &node.inputs {
            if let Argument::Graph(subgraph) = &input.arg {
                check_graph_metadata(&subgraph.graph)?;
            }
        }
    }
    Ok(())
}
