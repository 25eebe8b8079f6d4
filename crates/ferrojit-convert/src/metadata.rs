//! Export IR metadata of example values: a tensor's `TensorMeta` (dtype, sizes, strides,
//! device, requires_grad) and the export schema's codes for dtypes, layouts and memory
//! formats, translated from TorchScript's (c10's) numbering.

use ferrojit_export::model::{scalar_type_to_dtype, Device, SymInt, TensorMeta};
use ferrojit_tensor::{DType, Tensor};

/// The export schema's strided layout.
pub const LAYOUT_STRIDED: i64 = 7;

/// The export schema's ScalarType number of a dtype.
pub fn dtype_code(dtype: DType) -> Option<i64> {
    (1..=13).find(|&code| scalar_type_to_dtype(code) == Some(dtype))
}

/// The export schema's ScalarType number of a TorchScript (c10) ScalarType index.
pub fn dtype_code_of_index(index: i64) -> Option<i64> {
    DType::from_scalar_type_index(index)
        .ok()
        .and_then(dtype_code)
}

/// The export schema's MemoryFormat number of a c10 MemoryFormat index (Contiguous 0,
/// Preserve 1, ChannelsLast 2, ChannelsLast3d 3).
pub fn memory_format_code(index: i64) -> Option<i64> {
    match index {
        0 => Some(1),
        1 => Some(4),
        2 => Some(2),
        3 => Some(3),
        _ => None,
    }
}

/// The metadata torch.export records for a tensor value.
pub fn tensor_meta(tensor: &Tensor, requires_grad: bool) -> Option<TensorMeta> {
    let ints = |values: &[usize]| values.iter().map(|&v| SymInt::Int(v as i64)).collect();
    Some(TensorMeta {
        dtype: dtype_code(tensor.dtype())?,
        sizes: ints(tensor.sizes()),
        requires_grad,
        device: Device {
            device_type: "cpu".to_string(),
            index: None,
        },
        strides: ints(tensor.strides()),
        storage_offset: SymInt::Int(tensor.storage_offset() as i64),
        layout: LAYOUT_STRIDED,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_codes_follow_the_export_schema() {
        assert_eq!(dtype_code(DType::Float32), Some(7));
        assert_eq!(dtype_code(DType::Int64), Some(5));
        assert_eq!(dtype_code(DType::Bool), Some(12));
        // c10 numbers float as 6 and bool as 11.
        assert_eq!(dtype_code_of_index(6), Some(7));
        assert_eq!(dtype_code_of_index(11), Some(12));
        assert_eq!(memory_format_code(1), Some(4));
        assert_eq!(memory_format_code(9), None);
    }

    #[test]
    fn tensor_meta_records_sizes_and_strides() {
        let tensor = Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap();
        let meta = tensor_meta(&tensor, true).unwrap();
        assert_eq!(meta.sizes, vec![SymInt::Int(2), SymInt::Int(3)]);
        assert_eq!(meta.strides, vec![SymInt::Int(3), SymInt::Int(1)]);
        assert!(meta.requires_grad);
    }
}
