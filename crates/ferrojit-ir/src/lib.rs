//! ferrojit's intermediate representation: types, graphs in arenas, schemas, and the text form.
//!
//! The IR is the interchange format between the frontend, the passes and the interpreter.
//! See ARCHITECTURE.md for the invariants every graph keeps.

pub mod attributes;
pub mod graph;
pub mod printer;
pub mod schema;
pub mod types;
pub mod verifier;

pub use attributes::AttributeValue;
pub use graph::{
    BlockId, Graph, InsertPoint, NodeId, SourceLocation, Symbol, Use, ValueDefinition, ValueId,
};
pub use schema::{
    parse_schema, AliasInfo, Argument, DefaultValue, FunctionSchema, SchemaParseError,
};
pub use types::{AttributeKind, ClassAttribute, ClassType, Type};
