//! ferrojit's intermediate representation: types, graphs in arenas, schemas, and the text form.
//!
//! The IR is the interchange format between the frontend, the passes and the interpreter.
//! See ARCHITECTURE.md for the invariants every graph keeps.

pub mod aliases;
pub mod attributes;
pub mod binding;
pub mod filecheck;
pub mod graph;
pub mod parser;
pub mod prims;
pub mod printer;
pub mod schema;
pub mod source;
pub mod types;
pub mod verifier;

pub use attributes::AttributeValue;
pub use graph::{
    BlockId, CopyError, Graph, GraphEditError, InsertPoint, NodeId, SourceLocation, Symbol, Use,
    ValueDefinition, ValueId,
};
pub use parser::{parse_graph, parse_graph_with_classes, parse_type, IrParseError};
pub use prims::{Prim, PrimInfo, PRIMS};
pub use schema::{
    parse_schema, AliasInfo, Argument, DefaultValue, FunctionSchema, SchemaParseError,
};
pub use types::{
    unify_type_list, unify_types, AttributeKind, ClassAttribute, ClassType, NamedTupleType,
    TensorRefinement, Type,
};
