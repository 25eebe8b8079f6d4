//! Which functions of the source are decorated `@torch.jit.script`: the tracer keeps calls
//! of those as calls (with their control flow), and inlines every other function.

use std::collections::HashSet;

use ferrojit_frontend::ast::{Expr, ExprKind, StmtKind};
use ferrojit_frontend::parser::parse_file;
use ferrojit_frontend::source::SourceFile;

use crate::error::{Result, TraceError};

/// The top-level functions of a source file.
pub struct SourceFunctions {
    /// Every top-level function's name, in source order.
    pub defined: Vec<String>,
    /// Qualified names (`__torch__.helper`) of those decorated `@torch.jit.script` (or
    /// `@jit.script`, `@script`, with or without a call).
    pub scripted: HashSet<String>,
}

/// Reads which functions `source` defines, and which of them are scripted.
pub fn scripted_functions(source: &str, file_name: &str) -> Result<SourceFunctions> {
    let module = parse_file(SourceFile::new(file_name, source.to_string())).map_err(|error| {
        TraceError::Compile {
            file: file_name.to_string(),
            message: error.to_string(),
        }
    })?;
    let mut functions = SourceFunctions {
        defined: Vec::new(),
        scripted: HashSet::new(),
    };
    for statement in &module.body {
        if let StmtKind::Def(def) = &statement.kind {
            functions.defined.push(def.name.name.clone());
            if def.decorators.iter().any(is_script_decorator) {
                functions
                    .scripted
                    .insert(format!("__torch__.{}", def.name.name));
            }
        }
    }
    Ok(functions)
}

fn is_script_decorator(decorator: &Expr) -> bool {
    match &decorator.kind {
        ExprKind::Call { func, .. } => is_script_decorator(func),
        ExprKind::Attribute { attr, .. } => attr.name == "script",
        ExprKind::Name(name) => name == "script",
        _ => false,
    }
}
