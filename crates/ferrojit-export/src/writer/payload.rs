//! A program's weights and constants as torch 2.15's `_package.py` writes them: each
//! storage once, as its raw little-endian bytes (`data/weights/weight_N`,
//! `data/constants/tensor_N`), and a config naming, for every tensor, its file and its
//! view (`TensorMeta`). Tensors that share a storage name the same file.

use super::json_text::JsonValue;
use super::program_json::payload_meta;
use crate::model::{Device, PayloadMeta, SymInt, TensorMeta};
use ferrojit_tensor::{DType, Storage, Tensor};
use std::collections::BTreeMap;

/// The export schema's ScalarType number of a dtype (the inverse of
/// [`crate::model::scalar_type_to_dtype`]).
pub fn dtype_to_scalar_type(dtype: DType) -> i64 {
    match dtype {
        DType::UInt8 => 1,
        DType::Int8 => 2,
        DType::Int16 => 3,
        DType::Int32 => 4,
        DType::Int64 => 5,
        DType::Float16 => 6,
        DType::Float32 => 7,
        DType::Float64 => 8,
        DType::ComplexFloat => 10,
        DType::ComplexDouble => 11,
        DType::Bool => 12,
        DType::BFloat16 => 13,
    }
}

/// The metadata of a concrete CPU tensor, as `serialize_tensor_meta` writes it.
pub fn concrete_tensor_meta(tensor: &Tensor, requires_grad: bool) -> TensorMeta {
    let int = |value: usize| SymInt::Int(value as i64);
    TensorMeta {
        dtype: dtype_to_scalar_type(tensor.dtype()),
        sizes: tensor.sizes().iter().copied().map(int).collect(),
        requires_grad,
        device: Device {
            device_type: "cpu".into(),
            index: None,
        },
        strides: tensor.strides().iter().copied().map(int).collect(),
        storage_offset: int(tensor.storage_offset()),
        layout: 7,
    }
}

/// The files and config of one payload folder.
pub struct PayloadRecords {
    /// `(file name in the folder, bytes)`, in the order they are written.
    pub files: Vec<(String, Vec<u8>)>,
    /// The config record's JSON (`{"config": {...}}`).
    pub config: JsonValue,
}

/// What the config says about one tensor besides its view.
pub struct TensorRole {
    pub is_param: bool,
    pub requires_grad: bool,
}

/// Lays out `tensors` as files `PREFIX{index}`, numbering from `*next_index` (which counts on
/// across the programs of one archive, as PyTorch's writer counts the files already written).
pub fn payload_records(
    tensors: &BTreeMap<String, Tensor>,
    file_prefix: &str,
    next_index: &mut usize,
    role: impl Fn(&str) -> TensorRole,
) -> PayloadRecords {
    // One group per distinct storage, in the order the tensors first name it.
    let mut groups: Vec<(Storage, String, Vec<&String>)> = Vec::new();
    for (name, tensor) in tensors {
        match groups
            .iter_mut()
            .find(|(storage, _, _)| Storage::ptr_eq(storage, tensor.storage()))
        {
            Some((_, _, members)) => members.push(name),
            None => {
                let file = format!("{file_prefix}{}", *next_index);
                *next_index += 1;
                groups.push((tensor.storage().clone(), file, vec![name]));
            }
        }
    }
    let mut files = Vec::with_capacity(groups.len());
    let mut config = Vec::with_capacity(tensors.len());
    for (storage, file, members) in groups {
        for name in members {
            let tensor = &tensors[name];
            let TensorRole {
                is_param,
                requires_grad,
            } = role(name);
            let payload = PayloadMeta {
                path_name: file.clone(),
                is_param,
                use_pickle: false,
                tensor_meta: Some(concrete_tensor_meta(tensor, requires_grad)),
            };
            config.push((name.clone(), payload_meta(&payload)));
        }
        files.push((file, storage.to_le_bytes()));
    }
    PayloadRecords {
        files,
        config: JsonValue::object([("config", JsonValue::Object(config))]),
    }
}
