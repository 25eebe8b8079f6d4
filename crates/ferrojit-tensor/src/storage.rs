//! Shared, mutable, typed element storage. Many tensors (views) may alias one `Storage`.

use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Result, TensorError};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The typed element buffer behind a storage: one `Vec` per dtype.
#[derive(Debug, Clone, PartialEq)]
pub enum Buffer {
    Bool(Vec<bool>),
    UInt8(Vec<u8>),
    Int8(Vec<i8>),
    Int16(Vec<i16>),
    Int32(Vec<i32>),
    Int64(Vec<i64>),
    Float16(Vec<half::f16>),
    BFloat16(Vec<half::bf16>),
    Float32(Vec<f32>),
    Float64(Vec<f64>),
}

/// Runs `$body` with `$v` bound to the typed vector inside a buffer (by reference or mutable reference).
macro_rules! with_buffer {
    ($buffer:expr, $v:ident => $body:expr) => {
        match $buffer {
            $crate::storage::Buffer::Bool($v) => $body,
            $crate::storage::Buffer::UInt8($v) => $body,
            $crate::storage::Buffer::Int8($v) => $body,
            $crate::storage::Buffer::Int16($v) => $body,
            $crate::storage::Buffer::Int32($v) => $body,
            $crate::storage::Buffer::Int64($v) => $body,
            $crate::storage::Buffer::Float16($v) => $body,
            $crate::storage::Buffer::BFloat16($v) => $body,
            $crate::storage::Buffer::Float32($v) => $body,
            $crate::storage::Buffer::Float64($v) => $body,
        }
    };
}
pub(crate) use with_buffer;

impl Buffer {
    pub fn dtype(&self) -> DType {
        match self {
            Buffer::Bool(_) => DType::Bool,
            Buffer::UInt8(_) => DType::UInt8,
            Buffer::Int8(_) => DType::Int8,
            Buffer::Int16(_) => DType::Int16,
            Buffer::Int32(_) => DType::Int32,
            Buffer::Int64(_) => DType::Int64,
            Buffer::Float16(_) => DType::Float16,
            Buffer::BFloat16(_) => DType::BFloat16,
            Buffer::Float32(_) => DType::Float32,
            Buffer::Float64(_) => DType::Float64,
        }
    }

    pub fn len(&self) -> usize {
        with_buffer!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A zero-filled buffer of `len` elements.
    pub fn zeros(dtype: DType, len: usize) -> Buffer {
        match dtype {
            DType::Bool => Buffer::Bool(vec![false; len]),
            DType::UInt8 => Buffer::UInt8(vec![0; len]),
            DType::Int8 => Buffer::Int8(vec![0; len]),
            DType::Int16 => Buffer::Int16(vec![0; len]),
            DType::Int32 => Buffer::Int32(vec![0; len]),
            DType::Int64 => Buffer::Int64(vec![0; len]),
            DType::Float16 => Buffer::Float16(vec![half::f16::ZERO; len]),
            DType::BFloat16 => Buffer::BFloat16(vec![half::bf16::ZERO; len]),
            DType::Float32 => Buffer::Float32(vec![0.0; len]),
            DType::Float64 => Buffer::Float64(vec![0.0; len]),
        }
    }
}

struct StorageInner {
    dtype: DType,
    len: usize,
    buffer: RwLock<Buffer>,
}

/// Cheap-clone handle to a shared typed buffer. Its dtype and length never change.
#[derive(Clone)]
pub struct Storage {
    inner: Arc<StorageInner>,
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Storage(dtype={}, len={})",
            self.inner.dtype.name(),
            self.inner.len
        )
    }
}

impl Storage {
    pub fn new(buffer: Buffer) -> Storage {
        Storage {
            inner: Arc::new(StorageInner {
                dtype: buffer.dtype(),
                len: buffer.len(),
                buffer: RwLock::new(buffer),
            }),
        }
    }

    pub fn from_vec<T: Element>(values: Vec<T>) -> Storage {
        Storage::new(T::into_buffer(values))
    }

    pub fn zeros(dtype: DType, len: usize) -> Storage {
        Storage::new(Buffer::zeros(dtype, len))
    }

    /// Decodes raw element bytes (as found in a TorchScript archive). Big-endian input is byte-swapped.
    pub fn from_bytes(dtype: DType, bytes: &[u8], little_endian: bool) -> Result<Storage> {
        let item = dtype.item_size();
        if !bytes.len().is_multiple_of(item) {
            return Err(TensorError::ByteLengthNotMultiple {
                len: bytes.len(),
                item_size: item,
                dtype,
            });
        }
        fn decode<T: Element>(bytes: &[u8], item: usize, little_endian: bool) -> Vec<T> {
            bytes
                .chunks_exact(item)
                .map(|chunk| {
                    if little_endian {
                        T::read_le(chunk)
                    } else {
                        let mut swapped = chunk.to_vec();
                        swapped.reverse();
                        T::read_le(&swapped)
                    }
                })
                .collect()
        }
        let buffer = match dtype {
            DType::Bool => Buffer::Bool(decode(bytes, item, little_endian)),
            DType::UInt8 => Buffer::UInt8(decode(bytes, item, little_endian)),
            DType::Int8 => Buffer::Int8(decode(bytes, item, little_endian)),
            DType::Int16 => Buffer::Int16(decode(bytes, item, little_endian)),
            DType::Int32 => Buffer::Int32(decode(bytes, item, little_endian)),
            DType::Int64 => Buffer::Int64(decode(bytes, item, little_endian)),
            DType::Float16 => Buffer::Float16(decode(bytes, item, little_endian)),
            DType::BFloat16 => Buffer::BFloat16(decode(bytes, item, little_endian)),
            DType::Float32 => Buffer::Float32(decode(bytes, item, little_endian)),
            DType::Float64 => Buffer::Float64(decode(bytes, item, little_endian)),
        };
        Ok(Storage::new(buffer))
    }

    /// All elements as little-endian bytes (the on-disk format of TorchScript archives).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        let guard = self.read();
        let mut out = Vec::with_capacity(self.inner.len * self.inner.dtype.item_size());
        with_buffer!(&*guard, v => {
            for x in v.iter() {
                x.write_le(&mut out);
            }
        });
        out
    }

    pub fn len_elements(&self) -> usize {
        self.inner.len
    }

    pub fn nbytes(&self) -> usize {
        self.inner.len * self.inner.dtype.item_size()
    }

    pub fn dtype(&self) -> DType {
        self.inner.dtype
    }

    /// Whether two handles refer to the same underlying storage.
    pub fn ptr_eq(a: &Storage, b: &Storage) -> bool {
        Arc::ptr_eq(&a.inner, &b.inner)
    }

    /// Read access to the buffer. A poisoned lock is recovered: buffers are plain data.
    pub fn read(&self) -> RwLockReadGuard<'_, Buffer> {
        self.inner
            .buffer
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Write access to the buffer (its length and dtype must not be changed).
    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, Buffer> {
        self.inner
            .buffer
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A copy of all elements as `T` (dtype must match).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        let guard = self.read();
        T::slice_of(&guard)
            .map(|s| s.to_vec())
            .ok_or(TensorError::TypeMismatch {
                expected: T::DTYPE,
                actual: self.inner.dtype,
            })
    }
}
