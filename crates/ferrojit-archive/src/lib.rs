//! ferrojit-archive: the container formats PyTorch's files are made of, as pure data. The zip
//! layout PyTorch writes (64-byte aligned STORED records under one root folder), a bounded pickle
//! VM and a pickler over `PickleValue` trees, and their typed errors.
//!
//! It depends only on `ferrojit-tensor` (for the shared, memory-mapped bytes that storages
//! borrow), so both formats' readers can use it: the TorchScript archive importer
//! (`ferrojit-serialize`) and the `.pt2` reader, without pulling in each other's stacks.

pub mod error;
pub mod pickle_value;
pub mod pickler;
pub mod serialization_id;
pub mod unpickler;
pub mod zip_archive;
