//! Storages that borrow their elements from shared bytes (memory-mapped archives): bounds,
//! alignment and byte-order checks on the way in, copy on write, and sharing between views.

use ferrojit_tensor::{DType, Scalar, SharedBytes, Storage, Tensor, TensorError};
use std::sync::Arc;

/// Bytes whose start is 8-byte aligned (a `Vec<u64>` backs them), so the tests control
/// alignment by choosing the offset.
struct AlignedBytes(Vec<u64>);

impl AsRef<[u8]> for AlignedBytes {
    fn as_ref(&self) -> &[u8] {
        bytemuck::cast_slice(&self.0)
    }
}

/// Little-endian f32 values 1.0, 2.0, ... packed into aligned shared bytes, after `pad`
/// leading bytes.
fn shared_f32(values: usize, pad: usize) -> SharedBytes {
    let mut bytes = vec![0u8; pad];
    for index in 0..values {
        bytes.extend_from_slice(&((index + 1) as f32).to_le_bytes());
    }
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    for (index, byte) in bytes.iter().enumerate() {
        words[index / 8] |= u64::from(*byte) << (8 * (index % 8));
    }
    Arc::new(AlignedBytes(words))
}

#[test]
fn aligned_little_endian_bytes_are_borrowed_without_a_copy() {
    let bytes = shared_f32(4, 8);
    let storage = Storage::from_shared_bytes(DType::Float32, bytes.clone(), 8..24, true).unwrap();
    assert!(storage.is_borrowed());
    assert_eq!(storage.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    // The storage holds the bytes: one more handle than the test's.
    assert_eq!(Arc::strong_count(&bytes), 2);
}

#[test]
fn unaligned_big_endian_and_bool_data_are_decoded_into_owned_buffers() {
    let bytes = shared_f32(4, 8);
    // Offset 9 is not 4-byte aligned for f32: decoded (copied) instead.
    let storage = Storage::from_shared_bytes(DType::UInt8, bytes.clone(), 9..13, true).unwrap();
    assert!(storage.is_borrowed(), "u8 needs no alignment");
    let unaligned = Storage::from_shared_bytes(DType::Int16, bytes.clone(), 9..13, true).unwrap();
    assert!(!unaligned.is_borrowed());
    assert_eq!(unaligned.len_elements(), 2);
    // Big-endian data is byte-swapped into an owned buffer.
    let swapped = Storage::from_shared_bytes(DType::Float32, bytes.clone(), 8..12, false).unwrap();
    assert!(!swapped.is_borrowed());
    let one_le = 1.0f32.to_le_bytes();
    assert_eq!(
        swapped.to_vec::<f32>().unwrap(),
        vec![f32::from_be_bytes(one_le)]
    );
    // Not every byte is a valid bool, so bool storages always decode.
    let flags = Storage::from_shared_bytes(DType::Bool, bytes, 8..12, true).unwrap();
    assert!(!flags.is_borrowed());
    assert_eq!(
        flags.to_vec::<bool>().unwrap(),
        vec![false, false, true, true]
    );
}

#[test]
fn out_of_bounds_and_ragged_ranges_are_errors() {
    let bytes = shared_f32(4, 8);
    let past_end = Storage::from_shared_bytes(DType::Float32, bytes.clone(), 8..100, true);
    assert!(matches!(
        past_end,
        Err(TensorError::ByteRangeOutOfBounds {
            start: 8,
            end: 100,
            len: 24
        })
    ));
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = Storage::from_shared_bytes(DType::Float32, bytes.clone(), 12..8, true);
    assert!(matches!(
        reversed,
        Err(TensorError::ByteRangeOutOfBounds { .. })
    ));
    let ragged = Storage::from_shared_bytes(DType::Float32, bytes.clone(), 8..14, true);
    assert!(matches!(
        ragged,
        Err(TensorError::ByteLengthNotMultiple { len: 6, .. })
    ));
    let empty = Storage::from_shared_bytes(DType::Float64, bytes, 8..8, true).unwrap();
    assert_eq!(empty.len_elements(), 0);
}

#[test]
fn the_first_write_copies_and_every_view_sees_it() {
    let bytes = shared_f32(6, 0);
    let storage = Storage::from_shared_bytes(DType::Float32, bytes.clone(), 0..24, true).unwrap();
    let whole = Tensor::from_storage(storage.clone(), 0, vec![2, 3], vec![3, 1]).unwrap();
    let column = whole.select(1, 1).unwrap();
    let transposed = whole.t().unwrap();
    // Reading does not copy.
    assert_eq!(column.to_vec::<f32>().unwrap(), vec![2.0, 5.0]);
    assert!(storage.is_borrowed());
    // Writing through one view copies the elements once; all views share the copy.
    column.fill_(&Scalar::Float(-1.0)).unwrap();
    assert!(!storage.is_borrowed());
    assert_eq!(
        whole.to_vec::<f32>().unwrap(),
        vec![1.0, -1.0, 3.0, 4.0, -1.0, 6.0]
    );
    assert_eq!(
        transposed.to_vec::<f32>().unwrap(),
        vec![1.0, 4.0, -1.0, -1.0, 3.0, 6.0]
    );
    // The shared bytes themselves are untouched: a second storage over them still reads
    // the original values.
    let again = Storage::from_shared_bytes(DType::Float32, bytes, 0..24, true).unwrap();
    assert_eq!(
        again.to_vec::<f32>().unwrap(),
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
}

#[test]
fn borrowed_and_owned_storages_compute_alike() {
    let bytes = shared_f32(6, 0);
    let borrowed = Storage::from_shared_bytes(DType::Float32, bytes, 0..24, true).unwrap();
    let owned = Storage::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let a = Tensor::from_storage(borrowed, 0, vec![2, 3], vec![3, 1]).unwrap();
    let b = Tensor::from_storage(owned, 0, vec![2, 3], vec![3, 1]).unwrap();
    let product_a = a.matmul(&a.t().unwrap()).unwrap();
    let product_b = b.matmul(&b.t().unwrap()).unwrap();
    assert_eq!(
        product_a.to_vec::<f32>().unwrap(),
        product_b.to_vec::<f32>().unwrap()
    );
    assert_eq!(
        a.sum(None).unwrap().item().unwrap(),
        b.sum(None).unwrap().item().unwrap()
    );
}
