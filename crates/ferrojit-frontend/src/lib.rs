//! ferrojit-frontend.

pub mod ast;
pub mod compilation_unit;
pub(crate) mod compiler;
pub mod error;
pub(crate) mod functional_prelude;
pub mod lexer;
pub mod operators;
pub mod parser;
/// Source files and ranges live in the IR crate, where nodes keep them for tracebacks.
pub use ferrojit_ir::source;
pub mod upgraders;

pub use compilation_unit::{compile_source, CompilationUnit, Function, SourceLoader};
pub use error::FrontendError;
