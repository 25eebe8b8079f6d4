//! Shared, mutable, typed element storage. Many tensors (views) may alias one `Storage`.

use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Result, TensorError};
use std::ops::{Deref, DerefMut, Range};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Bytes that never change and never move while any handle to them lives: a memory-mapped
/// archive or an owned byte buffer. Storages borrow their elements from these without a copy.
pub type SharedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// The bytes behind a [`SharedBytes`] handle.
fn shared_slice(bytes: &SharedBytes) -> &[u8] {
    AsRef::<[u8]>::as_ref(&**bytes)
}

/// The elements of one dtype behind a storage: owned, or borrowed without a copy from
/// [`SharedBytes`] (a STORED tensor record of a memory-mapped archive).
///
/// Both dereference to `[T]`. Borrowed elements are copied into an owned vector on the first
/// mutable access, so writes never reach the shared bytes (copy on write). A borrowed range is
/// checked once, when it is made, to be in bounds and aligned for `T`.
pub enum Elements<T> {
    Owned(Vec<T>),
    Borrowed {
        bytes: SharedBytes,
        range: Range<usize>,
    },
}

impl<T: bytemuck::Pod> Elements<T> {
    /// Borrows `range` of `bytes` as elements of `T`, or `None` when the range is out of
    /// bounds, not a whole number of elements, or not aligned for `T` in memory.
    pub fn borrow_bytes(bytes: SharedBytes, range: Range<usize>) -> Option<Elements<T>> {
        let slice = shared_slice(&bytes).get(range.clone())?;
        bytemuck::try_cast_slice::<u8, T>(slice).ok()?;
        Some(Elements::Borrowed { bytes, range })
    }

    /// Whether the elements are borrowed from shared bytes (not yet copied).
    pub fn is_borrowed(&self) -> bool {
        matches!(self, Elements::Borrowed { .. })
    }
}

/// The element slice behind one variant of a [`Buffer`], shared or mutable (used by
/// `with_buffer!`).
#[doc(hidden)]
pub trait ElementSlice {
    type Slice;
    fn element_slice(self) -> Self::Slice;
}

impl<'a, T: bytemuck::Pod> ElementSlice for &'a Elements<T> {
    type Slice = &'a [T];
    fn element_slice(self) -> &'a [T] {
        self
    }
}

impl<'a, T: bytemuck::Pod> ElementSlice for &'a mut Elements<T> {
    type Slice = &'a mut [T];
    fn element_slice(self) -> &'a mut [T] {
        self
    }
}

impl<'a> ElementSlice for &'a Vec<bool> {
    type Slice = &'a [bool];
    fn element_slice(self) -> &'a [bool] {
        self
    }
}

impl<'a> ElementSlice for &'a mut Vec<bool> {
    type Slice = &'a mut [bool];
    fn element_slice(self) -> &'a mut [bool] {
        self
    }
}

impl<T> From<Vec<T>> for Elements<T> {
    fn from(values: Vec<T>) -> Self {
        Elements::Owned(values)
    }
}

impl<T: bytemuck::Pod> Deref for Elements<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Elements::Owned(values) => values,
            // `borrow_bytes` checked bounds, length and alignment, and the bytes never move
            // or change, so the cast cannot fail here; an empty slice is the harmless
            // answer should that invariant ever break.
            Elements::Borrowed { bytes, range } => shared_slice(bytes)
                .get(range.clone())
                .and_then(|slice| bytemuck::try_cast_slice(slice).ok())
                .unwrap_or(&[]),
        }
    }
}

impl<T: bytemuck::Pod> DerefMut for Elements<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        if self.is_borrowed() {
            *self = Elements::Owned(self.to_vec());
        }
        match self {
            Elements::Owned(values) => values,
            Elements::Borrowed { .. } => &mut [],
        }
    }
}

impl<T: bytemuck::Pod> Clone for Elements<T> {
    fn clone(&self) -> Self {
        match self {
            Elements::Owned(values) => Elements::Owned(values.clone()),
            Elements::Borrowed { bytes, range } => Elements::Borrowed {
                bytes: bytes.clone(),
                range: range.clone(),
            },
        }
    }
}

impl<T: bytemuck::Pod + PartialEq> PartialEq for Elements<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: bytemuck::Pod + std::fmt::Debug> std::fmt::Debug for Elements<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// The typed element buffer behind a storage: one variant per dtype. `bool` is always owned
/// (not every byte is a valid `bool`, so it cannot be borrowed from file bytes).
#[derive(Debug, Clone, PartialEq)]
pub enum Buffer {
    Bool(Vec<bool>),
    UInt8(Elements<u8>),
    Int8(Elements<i8>),
    Int16(Elements<i16>),
    Int32(Elements<i32>),
    Int64(Elements<i64>),
    Float16(Elements<half::f16>),
    BFloat16(Elements<half::bf16>),
    Float32(Elements<f32>),
    Float64(Elements<f64>),
    ComplexFloat(Elements<crate::complex::Complex64>),
    ComplexDouble(Elements<crate::complex::Complex128>),
}

/// Runs `$body` with `$v` bound to the typed element slice inside a buffer: `&[T]` for a
/// `&Buffer`, `&mut [T]` for a `&mut Buffer` (which copies borrowed elements first).
/// Binding the slice once keeps element indexing in `$body` a plain slice access.
macro_rules! with_buffer {
    ($buffer:expr, $v:ident => $body:expr) => {
        match $buffer {
            $crate::storage::Buffer::Bool($v) => {
                let $v = $crate::storage::ElementSlice::element_slice($v);
                $body
            }
            $crate::storage::Buffer::UInt8($v) => {
                let $v = $crate::storage::ElementSlice::element_slice($v);
                $body
            }
            $crate::storage::Buffer::Int8($v) => {
                let $v = $crate::storage::ElementSlice::element_slice($v);
                $body
            }
            $crate::storage::Buffer::Int16($v) => {
                let $v = $crate::storage::ElementSlice::element_slice($v);
                $body
            }
            $crate::storage::Buffer::Int32($v) => {
                let $v = $crate::storage::ElementSlice::element_slice($v);
                $body
            }
            $crate::storage::Buffer::Int64($v) => {
                let $v = $crate::storage::ElementSlice::element_slice($v);
                $body
            }
            $crate::storage::Buffer::Float16($v) => {
                let $v = $crate::storage::ElementSlice::element_slice($v);
                $body
            }
            $crate::storage::Buffer::BFloat16($v) => {
                let $v = $crate::storage::ElementSlice::element_slice($v);
                $body
            }
            $crate::storage::Buffer::Float32($v) => {
                let $v = $crate::storage::ElementSlice::element_slice($v);
                $body
            }
            $crate::storage::Buffer::Float64($v) => {
                let $v = $crate::storage::ElementSlice::element_slice($v);
                $body
            }
            $crate::storage::Buffer::ComplexFloat($v) => {
                let $v = $crate::storage::ElementSlice::element_slice($v);
                $body
            }
            $crate::storage::Buffer::ComplexDouble($v) => {
                let $v = $crate::storage::ElementSlice::element_slice($v);
                $body
            }
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
            Buffer::ComplexFloat(_) => DType::ComplexFloat,
            Buffer::ComplexDouble(_) => DType::ComplexDouble,
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
            DType::UInt8 => Buffer::UInt8(vec![0; len].into()),
            DType::Int8 => Buffer::Int8(vec![0; len].into()),
            DType::Int16 => Buffer::Int16(vec![0; len].into()),
            DType::Int32 => Buffer::Int32(vec![0; len].into()),
            DType::Int64 => Buffer::Int64(vec![0; len].into()),
            DType::Float16 => Buffer::Float16(vec![half::f16::ZERO; len].into()),
            DType::BFloat16 => Buffer::BFloat16(vec![half::bf16::ZERO; len].into()),
            DType::Float32 => Buffer::Float32(vec![0.0; len].into()),
            DType::Float64 => Buffer::Float64(vec![0.0; len].into()),
            DType::ComplexFloat => Buffer::ComplexFloat(vec![Default::default(); len].into()),
            DType::ComplexDouble => Buffer::ComplexDouble(vec![Default::default(); len].into()),
        }
    }
}

/// Whether a buffer's elements are borrowed rather than owned.
fn buffer_is_borrowed(buffer: &Buffer) -> bool {
    match buffer {
        Buffer::Bool(_) => false,
        Buffer::UInt8(v) => v.is_borrowed(),
        Buffer::Int8(v) => v.is_borrowed(),
        Buffer::Int16(v) => v.is_borrowed(),
        Buffer::Int32(v) => v.is_borrowed(),
        Buffer::Int64(v) => v.is_borrowed(),
        Buffer::Float16(v) => v.is_borrowed(),
        Buffer::BFloat16(v) => v.is_borrowed(),
        Buffer::Float32(v) => v.is_borrowed(),
        Buffer::Float64(v) => v.is_borrowed(),
        Buffer::ComplexFloat(v) => v.is_borrowed(),
        Buffer::ComplexDouble(v) => v.is_borrowed(),
    }
}

struct StorageInner {
    dtype: DType,
    /// Element count. Only `grow_to` changes it, while holding the buffer's write lock, and
    /// only upwards, so a stale read is a smaller, still valid bound.
    len: AtomicUsize,
    /// Bumped at every write access, so a copy derived from the values (a packed GEMM
    /// weight) can tell whether it is still current.
    generation: std::sync::atomic::AtomicU64,
    buffer: RwLock<Buffer>,
}

/// Cheap-clone handle to a shared typed buffer. Its dtype never changes; its length only
/// grows (`grow_to`, PyTorch's storage resize), and every handle sees the growth.
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
            self.len_elements()
        )
    }
}

impl Storage {
    pub fn new(buffer: Buffer) -> Storage {
        Storage {
            inner: Arc::new(StorageInner {
                dtype: buffer.dtype(),
                len: AtomicUsize::new(buffer.len()),
                generation: std::sync::atomic::AtomicU64::new(0),
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

    /// Decodes raw element bytes (as found in a TorchScript archive) into a new owned
    /// buffer. Big-endian input is byte-swapped.
    pub fn from_bytes(dtype: DType, bytes: &[u8], little_endian: bool) -> Result<Storage> {
        let item = dtype.item_size();
        if !bytes.len().is_multiple_of(item) {
            return Err(TensorError::ByteLengthNotMultiple {
                len: bytes.len(),
                item_size: item,
                dtype,
            });
        }
        fn decode<T: Element + bytemuck::Pod>(
            bytes: &[u8],
            item: usize,
            little_endian: bool,
        ) -> Elements<T> {
            if little_endian == cfg!(target_endian = "little") {
                // Same byte order as this machine: one bulk copy (the source may be unaligned).
                return Elements::Owned(bytemuck::pod_collect_to_vec(bytes));
            }
            // A complex element is two numbers: each part is swapped on its own.
            let part = if T::DTYPE.is_complex() {
                item / 2
            } else {
                item
            };
            let swapped: Vec<T> = bytes
                .chunks_exact(item)
                .map(|chunk| {
                    let mut swapped = [0u8; 16];
                    let swapped = &mut swapped[..item];
                    swapped.copy_from_slice(chunk);
                    for one_part in swapped.chunks_exact_mut(part) {
                        one_part.reverse();
                    }
                    T::read_le(swapped)
                })
                .collect();
            Elements::Owned(swapped)
        }
        let buffer = match dtype {
            // One byte each: byte order does not matter, and any nonzero byte is `true`.
            DType::Bool => Buffer::Bool(bytes.iter().map(|byte| *byte != 0).collect()),
            DType::UInt8 => Buffer::UInt8(decode(bytes, item, little_endian)),
            DType::Int8 => Buffer::Int8(decode(bytes, item, little_endian)),
            DType::Int16 => Buffer::Int16(decode(bytes, item, little_endian)),
            DType::Int32 => Buffer::Int32(decode(bytes, item, little_endian)),
            DType::Int64 => Buffer::Int64(decode(bytes, item, little_endian)),
            DType::Float16 => Buffer::Float16(decode(bytes, item, little_endian)),
            DType::BFloat16 => Buffer::BFloat16(decode(bytes, item, little_endian)),
            DType::Float32 => Buffer::Float32(decode(bytes, item, little_endian)),
            DType::Float64 => Buffer::Float64(decode(bytes, item, little_endian)),
            DType::ComplexFloat => Buffer::ComplexFloat(decode(bytes, item, little_endian)),
            DType::ComplexDouble => Buffer::ComplexDouble(decode(bytes, item, little_endian)),
        };
        Ok(Storage::new(buffer))
    }

    /// A storage over `range` of `bytes`, borrowed without a copy when the bytes are in this
    /// machine's byte order and aligned for the dtype (PyTorch aligns records to 64 bytes);
    /// decoded into an owned buffer otherwise (bool, big-endian or unaligned data).
    /// Borrowed elements are copied on the first write.
    pub fn from_shared_bytes(
        dtype: DType,
        bytes: SharedBytes,
        range: Range<usize>,
        little_endian: bool,
    ) -> Result<Storage> {
        let Some(slice) = shared_slice(&bytes).get(range.clone()) else {
            return Err(TensorError::ByteRangeOutOfBounds {
                start: range.start,
                end: range.end,
                len: shared_slice(&bytes).len(),
            });
        };
        let item = dtype.item_size();
        if !slice.len().is_multiple_of(item) {
            return Err(TensorError::ByteLengthNotMultiple {
                len: slice.len(),
                item_size: item,
                dtype,
            });
        }
        if little_endian == cfg!(target_endian = "little") {
            let borrowed = match dtype {
                DType::Bool => None,
                DType::UInt8 => Elements::borrow_bytes(bytes.clone(), range).map(Buffer::UInt8),
                DType::Int8 => Elements::borrow_bytes(bytes.clone(), range).map(Buffer::Int8),
                DType::Int16 => Elements::borrow_bytes(bytes.clone(), range).map(Buffer::Int16),
                DType::Int32 => Elements::borrow_bytes(bytes.clone(), range).map(Buffer::Int32),
                DType::Int64 => Elements::borrow_bytes(bytes.clone(), range).map(Buffer::Int64),
                DType::Float16 => Elements::borrow_bytes(bytes.clone(), range).map(Buffer::Float16),
                DType::BFloat16 => {
                    Elements::borrow_bytes(bytes.clone(), range).map(Buffer::BFloat16)
                }
                DType::Float32 => Elements::borrow_bytes(bytes.clone(), range).map(Buffer::Float32),
                DType::Float64 => Elements::borrow_bytes(bytes.clone(), range).map(Buffer::Float64),
                DType::ComplexFloat => {
                    Elements::borrow_bytes(bytes.clone(), range).map(Buffer::ComplexFloat)
                }
                DType::ComplexDouble => {
                    Elements::borrow_bytes(bytes.clone(), range).map(Buffer::ComplexDouble)
                }
            };
            if let Some(buffer) = borrowed {
                return Ok(Storage::new(buffer));
            }
        }
        Storage::from_bytes(dtype, slice, little_endian)
    }

    /// Whether the elements are still borrowed from shared (memory-mapped) bytes.
    pub fn is_borrowed(&self) -> bool {
        let guard = self.read();
        buffer_is_borrowed(&guard)
    }

    /// All elements as little-endian bytes (the on-disk format of TorchScript archives).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        let guard = self.read();
        let mut out = Vec::with_capacity(guard.len() * self.inner.dtype.item_size());
        with_buffer!(&*guard, v => {
            for x in v.iter() {
                x.write_le(&mut out);
            }
        });
        out
    }

    pub fn len_elements(&self) -> usize {
        self.inner.len.load(Ordering::Acquire)
    }

    pub fn nbytes(&self) -> usize {
        self.len_elements() * self.inner.dtype.item_size()
    }

    /// Grows the storage itself to at least `elements` elements, keeping its contents and
    /// zero-filling the rest, as PyTorch's `resize_` grows a `StorageImpl`: every tensor on
    /// this storage sees the larger buffer. Borrowed (memory-mapped) elements are copied
    /// first. The caller checks the allocation size.
    pub fn grow_to(&self, elements: usize) {
        let mut guard = self.write();
        if guard.len() >= elements {
            return;
        }
        fn grow<T: bytemuck::Pod>(values: &mut Elements<T>, elements: usize) {
            let mut owned = match std::mem::replace(values, Elements::Owned(Vec::new())) {
                Elements::Owned(owned) => owned,
                borrowed => borrowed.to_vec(),
            };
            owned.resize(elements, T::zeroed());
            *values = Elements::Owned(owned);
        }
        match &mut *guard {
            Buffer::Bool(values) => values.resize(elements, false),
            Buffer::UInt8(values) => grow(values, elements),
            Buffer::Int8(values) => grow(values, elements),
            Buffer::Int16(values) => grow(values, elements),
            Buffer::Int32(values) => grow(values, elements),
            Buffer::Int64(values) => grow(values, elements),
            Buffer::Float16(values) => grow(values, elements),
            Buffer::BFloat16(values) => grow(values, elements),
            Buffer::Float32(values) => grow(values, elements),
            Buffer::Float64(values) => grow(values, elements),
            Buffer::ComplexFloat(values) => grow(values, elements),
            Buffer::ComplexDouble(values) => grow(values, elements),
        }
        self.inner.len.store(elements, Ordering::Release);
    }

    pub fn dtype(&self) -> DType {
        self.inner.dtype
    }

    /// How many write accesses the buffer has had: equal counts mean unchanged values. Read
    /// it while holding [`Storage::read`]'s guard to pair it with the values read there.
    pub fn generation(&self) -> u64 {
        self.inner.generation.load(Ordering::Acquire)
    }

    /// The buffer, moved out without a copy, when this is the only handle to the storage
    /// (so no other tensor can see what the new owner does with it); the storage back
    /// otherwise. The Python package gives a result's elements to numpy this way.
    pub fn try_into_buffer(self) -> std::result::Result<Buffer, Storage> {
        Arc::try_unwrap(self.inner)
            .map(|inner| {
                inner
                    .buffer
                    .into_inner()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
            })
            .map_err(|inner| Storage { inner })
    }

    /// How many handles share this storage (1: only the caller's).
    pub fn handle_count(&self) -> usize {
        Arc::strong_count(&self.inner)
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
        let guard = self
            .inner
            .buffer
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Bumped while the write lock is held: a reader that reads the generation under the
        // read lock sees it consistent with the values it reads under that lock.
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
        guard
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The buffer comes out only from the one handle, with the elements unmoved in memory.
    #[test]
    fn try_into_buffer_needs_the_only_handle() {
        let storage = Storage::from_vec(vec![1.0_f32, 2.0, 3.0]);
        let data_before = match &*storage.read() {
            Buffer::Float32(elements) => elements.as_ptr(),
            other => panic!("{other:?}"),
        };
        let other = storage.clone();
        let storage = storage.try_into_buffer().expect_err("shared");
        drop(other);
        match storage.try_into_buffer() {
            Ok(Buffer::Float32(Elements::Owned(values))) => {
                assert_eq!(values, [1.0, 2.0, 3.0]);
                assert_eq!(values.as_ptr(), data_before, "moved, not copied");
            }
            other => panic!("{other:?}"),
        }
    }

    /// Growing keeps the elements, zero-fills the rest, copies borrowed bytes first (the
    /// shared bytes stay as they were), is seen through every handle, and never shrinks.
    #[test]
    fn grow_to_keeps_contents_and_is_shared_by_every_handle() {
        let values: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        // A Vec<u8> is usually aligned for f32, so the storage borrows it; where it is not, the
        // storage decodes an owned copy, and growing must give the same result either way.
        let bytes: SharedBytes = Arc::new(values.clone());
        let storage = Storage::from_shared_bytes(DType::Float32, bytes.clone(), 0..8, true)
            .expect("a valid f32 range");
        let handle = storage.clone();
        storage.grow_to(5);
        assert_eq!(handle.len_elements(), 5);
        assert_eq!(handle.nbytes(), 20);
        let guard = handle.read();
        assert_eq!(f32::slice_of(&guard).unwrap(), &[1.5, -2.0, 0.0, 0.0, 0.0]);
        drop(guard);
        assert!(!handle.is_borrowed());
        assert_eq!(shared_slice(&bytes), &values[..]);
        storage.grow_to(2);
        assert_eq!(storage.len_elements(), 5);
        let flags = Storage::new(Buffer::Bool(vec![true]));
        flags.grow_to(3);
        assert_eq!(flags.len_elements(), 3);
    }
}
