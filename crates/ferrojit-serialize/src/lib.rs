//! ferrojit-serialize: PyTorch's file formats. The zip layout, a bounded pickle VM and a
//! pickler (pure data), and the glue that turns archives into runnable modules and
//! `torch.save` files into values, and back.

pub mod debug_info;
pub mod error;
pub mod export;
pub mod import;
pub mod legacy;
pub mod load_error;
pub mod pickle_value;
pub mod pickler;
pub mod python_printer;
pub mod safetensors_io;
pub mod torch_save;
pub mod unpickler;
pub mod values;
pub mod zip_archive;
