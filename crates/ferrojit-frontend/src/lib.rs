//! ferrojit-frontend.

pub mod ast;
pub mod compilation_unit;
pub(crate) mod compiler;
pub mod error;
pub mod lexer;
pub mod operators;
pub mod parser;
pub mod source;
pub mod upgraders;

pub use compilation_unit::{compile_source, CompilationUnit, Function, SourceLoader};
pub use error::FrontendError;
