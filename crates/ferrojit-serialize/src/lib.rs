//! ferrojit-serialize: TorchScript's file formats on top of `ferrojit-archive`. The glue that
//! turns `torch.jit.save` archives into runnable modules and `torch.save` files into values,
//! and back (import, export, the Python printer, legacy and safetensors files).

pub mod array_files;
pub mod debug_info;
pub mod export;
pub mod file_kind;
pub mod import;
pub mod legacy;
pub mod load_error;
pub mod python_printer;
pub mod safetensors_io;
pub mod torch_save;
pub mod values;
