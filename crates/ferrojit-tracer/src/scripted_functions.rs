//! Which functions of the source are decorated `@torch.jit.script`: the tracer keeps calls
//! of those as calls (with their control flow), and inlines every other function.

use std::collections::HashSet;

use ferrojit_frontend::ast::{Expr, ExprKind, StmtKind};
use ferrojit_frontend::parser::parse_file;
use ferrojit_frontend::source::SourceFile;

use crate::error::{Result, TraceError};

/// Qualified names (`__torch__.helper`) of the top-level functions decorated
/// `@torch.jit.script` (or `@jit.script`, `@script`, with or without a call).
pub fn scripted_functions(source: &str, file_name: &str) -> Result<HashSet<String>> {
    let module = parse_file(SourceFile::new(file_name, source.to_string())).map_err(|error| {
        TraceError::Compile {
            file: file_name.to_string(),
            message: error.to_string(),
        }
    })?;
    let mut names = HashSet::new();
    for statement in &module.body {
        if let StmtKind::Def(def) = &statement.kind {
            if def.decorators.iter().any(is_script_decorator) {
                names.insert(format!("__torch__.{}", def.name.name));
            }
        }
    }
    Ok(names)
}

fn is_script_decorator(decorator: &Expr) -> bool {
    match &decorator.kind {
        ExprKind::Call { func, .. } => is_script_decorator(func),
        ExprKind::Attribute { attr, .. } => attr.name == "script",
        ExprKind::Name(name) => name == "script",
        _ => false,
    }
}
