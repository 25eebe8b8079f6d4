//! Reading type annotations (`List[Tuple[int, Tensor]]`, `__torch__.foo.Bar`) into IR types,
//! and PyTorch's type unification for values that meet at control-flow joins.

use ferrojit_ir::Type;

use crate::ast::{Expr, ExprKind};
use crate::compilation_unit::CompilationUnit;
use crate::error::FrontendError;

/// Resolves annotation expressions; class names are looked up in the compilation unit.
pub(crate) struct TypeResolver<'a> {
    pub unit: &'a CompilationUnit,
    /// The qualifier of the file the annotation appears in (`__torch__.foo`), used to find
    /// classes named without qualification in hand-written source.
    pub qualifier: &'a str,
}

fn strip_typing_prefix(name: &str) -> &str {
    name.strip_prefix("typing.")
        .or_else(|| name.strip_prefix("t."))
        .or_else(|| name.strip_prefix("torch.jit."))
        .unwrap_or(name)
}

/// The N of a `BroadcastingListN` type constructor's name.
fn broadcasting_length(name: &str) -> Option<usize> {
    name.strip_prefix("BroadcastingList")?.parse().ok()
}

/// The N of a `BroadcastingListN[T]` annotation, also inside `Optional[...]`: a parameter
/// that takes a list of N or one value, which stands for N copies of itself.
pub(crate) fn broadcasting_list_length(annotation: &Expr) -> Option<usize> {
    let ExprKind::Subscript { value, index } = &annotation.kind else {
        return None;
    };
    let base = value.dotted_name()?;
    match strip_typing_prefix(&base) {
        "Optional" => broadcasting_list_length(index),
        name => broadcasting_length(name),
    }
}

/// Built-in type names that need no lookup.
pub(crate) fn builtin_type(name: &str) -> Option<Type> {
    Some(match name {
        "int" => Type::Int,
        "float" => Type::Float,
        "complex" => Type::Complex,
        "bool" => Type::Bool,
        "str" => Type::Str,
        "Tensor" | "torch.Tensor" => Type::Tensor,
        "Any" => Type::Any,
        "NoneType" | "None" => Type::NoneType,
        "Device" | "torch.device" | "device" => Type::Device,
        "Generator" | "torch.Generator" => Type::Generator,
        "number" | "Scalar" => Type::Number,
        _ => return None,
    })
}

impl<'a> TypeResolver<'a> {
    pub fn resolve(&self, expr: &Expr) -> Result<Type, FrontendError> {
        match &expr.kind {
            ExprKind::None => Ok(Type::NoneType),
            ExprKind::Str(text) => {
                let parsed = crate::parser::parse_expression_str("<type annotation>", text)?;
                self.resolve(&parsed)
            }
            ExprKind::Name(_) | ExprKind::Attribute { .. } => {
                let Some(name) = expr.dotted_name() else {
                    return Err(FrontendError::new(
                        "Expected a type annotation",
                        expr.range.clone(),
                    ));
                };
                let name = strip_typing_prefix(&name);
                if let Some(ty) = builtin_type(name) {
                    return Ok(ty);
                }
                self.resolve_class_name(name, expr)
            }
            ExprKind::Subscript { value, index } => {
                let Some(base) = value.dotted_name() else {
                    return Err(FrontendError::new(
                        "Expected a type annotation",
                        expr.range.clone(),
                    ));
                };
                let elements: Vec<&Expr> = match &index.kind {
                    ExprKind::Tuple(items) => items.iter().collect(),
                    _ => vec![index.as_ref()],
                };
                let expect_count = |count: usize| -> Result<(), FrontendError> {
                    if elements.len() == count {
                        Ok(())
                    } else {
                        Err(FrontendError::new(
                            format!(
                                "{base}[...] expects {count} type argument(s) but got {}",
                                elements.len()
                            ),
                            expr.range.clone(),
                        ))
                    }
                };
                match strip_typing_prefix(&base) {
                    "List" | "list" => {
                        expect_count(1)?;
                        Ok(Type::list(self.resolve(elements[0])?))
                    }
                    "Optional" => {
                        expect_count(1)?;
                        Ok(Type::optional(self.resolve(elements[0])?))
                    }
                    // PyTorch's fixed-size list parameters (torch/nn/functional.py): a list
                    // whose length only matters when one value is given for it.
                    name if broadcasting_length(name).is_some() => {
                        expect_count(1)?;
                        Ok(Type::list(self.resolve(elements[0])?))
                    }
                    "Final" => {
                        expect_count(1)?;
                        self.resolve(elements[0])
                    }
                    "Tuple" | "tuple" => {
                        // `Tuple[()]` is the empty tuple.
                        if let [single] = elements.as_slice() {
                            if let ExprKind::Tuple(items) = &single.kind {
                                if items.is_empty() {
                                    return Ok(Type::Tuple(Vec::new()));
                                }
                            }
                        }
                        let types = elements
                            .iter()
                            .map(|e| self.resolve(e))
                            .collect::<Result<Vec<_>, _>>()?;
                        Ok(Type::Tuple(types))
                    }
                    "Dict" | "dict" => {
                        expect_count(2)?;
                        Ok(Type::dict(
                            self.resolve(elements[0])?,
                            self.resolve(elements[1])?,
                        ))
                    }
                    "Union" => {
                        let mut members: Vec<Type> = Vec::new();
                        for element in &elements {
                            let ty = self.resolve(element)?;
                            let flattened = match ty {
                                Type::Union(inner) => inner,
                                Type::Optional(inner) => vec![*inner, Type::NoneType],
                                other => vec![other],
                            };
                            for member in flattened {
                                if !members.contains(&member) {
                                    members.push(member);
                                }
                            }
                        }
                        let non_none: Vec<&Type> =
                            members.iter().filter(|t| **t != Type::NoneType).collect();
                        Ok(match (non_none.as_slice(), members.len()) {
                            ([single], 1) => (*single).clone(),
                            ([single], 2) => Type::optional((*single).clone()),
                            _ => Type::Union(members),
                        })
                    }
                    "Future" => {
                        expect_count(1)?;
                        Ok(Type::Future(Box::new(self.resolve(elements[0])?)))
                    }
                    other => Err(FrontendError::new(
                        format!("Unknown type constructor {other}"),
                        value.range.clone(),
                    )),
                }
            }
            _ => Err(FrontendError::new(
                "Expected a type annotation",
                expr.range.clone(),
            )),
        }
    }

    fn resolve_class_name(&self, name: &str, expr: &Expr) -> Result<Type, FrontendError> {
        let mut candidates = Vec::new();
        if !name.starts_with("__torch__") {
            candidates.push(format!("{}.{}", self.qualifier, name));
        }
        candidates.push(name.to_string());
        for candidate in &candidates {
            if let Some(named) = self.unit.try_resolve_named_tuple(candidate)? {
                return Ok(Type::NamedTuple(named));
            }
            if let Some(info) = self.unit.try_resolve_enum(candidate)? {
                return Ok(Type::Enum(info.qualified_name.clone()));
            }
            if let Some(class) = self.unit.try_resolve_class(candidate)? {
                return Ok(Type::Class(class));
            }
        }
        Err(FrontendError::new(
            format!("Unknown type name '{name}'"),
            expr.range.clone(),
        ))
    }
}

/// PyTorch's `unifyTypes` without unions: the smallest common supertype, if there is one.
pub(crate) fn unify_types(a: &Type, b: &Type) -> Option<Type> {
    if a == b {
        return Some(a.clone());
    }
    if a.is_subtype_of(b) {
        return Some(b.clone());
    }
    if b.is_subtype_of(a) {
        return Some(a.clone());
    }
    match (a, b) {
        (Type::NoneType, other) | (other, Type::NoneType) => Some(Type::optional(other.clone())),
        (Type::Optional(inner), other) | (other, Type::Optional(inner)) => {
            unify_types(inner, other).map(Type::optional)
        }
        (Type::Tuple(left), Type::Tuple(right)) if left.len() == right.len() => left
            .iter()
            .zip(right)
            .map(|(l, r)| unify_types(l, r))
            .collect::<Option<Vec<_>>>()
            .map(Type::Tuple),
        _ => None,
    }
}
