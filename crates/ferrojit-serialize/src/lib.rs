//! ferrojit-serialize.

pub mod error;
pub mod pickle_value;
pub mod pickler;
pub mod unpickler;
pub mod zip_archive;
