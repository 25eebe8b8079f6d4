//! `isinstance(x, T)` and `torch.jit.isinstance(x, T)`: answered at compile time when the
//! static type decides it, otherwise a `prim::isinstance` check; either way the branches
//! see `x` refined to the matching (or remaining) members of its union type.

use ferrojit_ir::Prim;
use ferrojit_ir::{AttributeValue, Type};

use super::statements::Condition;
use super::Emitter;
use crate::ast::{Expr, ExprKind};
use crate::error::FrontendError;

/// Whether every value of `ty` passes an isinstance check against `candidate`.
fn type_matches(ty: &Type, candidate: &Type) -> bool {
    match (candidate, ty) {
        (Type::AnyList, Type::List(_)) => true,
        (Type::AnyTuple, Type::Tuple(_) | Type::NamedTuple(_)) => true,
        (Type::Dict(key, value), Type::Dict(..)) if **key == Type::Any && **value == Type::Any => {
            true
        }
        _ => ty.is_subtype_of(candidate),
    }
}

/// The members of a (possibly union or optional) type.
fn members(ty: &Type) -> Vec<Type> {
    match ty {
        Type::Union(members) => members.clone(),
        Type::Optional(inner) => vec![inner.as_ref().clone(), Type::NoneType],
        other => vec![other.clone()],
    }
}

/// The type of a value known to be one of `types`.
fn union_of(types: &[Type]) -> Type {
    let non_none: Vec<&Type> = types.iter().filter(|t| **t != Type::NoneType).collect();
    match (non_none.as_slice(), types.len()) {
        ([single], 1) => (*single).clone(),
        ([single], 2) => Type::optional((*single).clone()),
        _ => Type::Union(types.to_vec()),
    }
}

impl<'a> Emitter<'a> {
    fn isinstance_candidates(&self, spec: &Expr) -> Result<Vec<Type>, FrontendError> {
        let specs: Vec<&Expr> = match &spec.kind {
            ExprKind::Tuple(items) => items.iter().collect(),
            _ => vec![spec],
        };
        let mut candidates = Vec::new();
        for spec in specs {
            candidates.push(match spec.dotted_name().as_deref() {
                Some("list") | Some("List") => Type::AnyList,
                Some("tuple") | Some("Tuple") => Type::AnyTuple,
                Some("dict") | Some("Dict") => Type::dict(Type::Any, Type::Any),
                _ => self.type_resolver().resolve(spec)?,
            });
        }
        Ok(candidates)
    }

    /// The condition `isinstance(args[0], args[1])`, with refinements for a checked name.
    pub(crate) fn isinstance_condition(
        &mut self,
        expr: &Expr,
        args: &[Expr],
    ) -> Result<Condition, FrontendError> {
        let [subject, spec] = args else {
            return Err(self.error("isinstance() expects 2 arguments", &expr.range));
        };
        let value = self.emit_expr(subject, None)?;
        let actual = self.graph.value_type(value).clone();
        let candidates = self.isinstance_candidates(spec)?;
        let all = members(&actual);
        let (matching, remaining): (Vec<Type>, Vec<Type>) = all
            .iter()
            .cloned()
            .partition(|member| candidates.iter().any(|c| type_matches(member, c)));
        let dynamic = all.contains(&Type::Any);
        let mut condition = Condition {
            value: None,
            static_value: None,
            true_refinements: Vec::new(),
            false_refinements: Vec::new(),
        };
        if !dynamic && remaining.is_empty() {
            condition.static_value = Some(true);
            return Ok(condition);
        }
        if !dynamic && matching.is_empty() {
            condition.static_value = Some(false);
            return Ok(condition);
        }
        if let ExprKind::Name(name) = &subject.kind {
            if dynamic {
                if let [single] = candidates.as_slice() {
                    if !matches!(single, Type::AnyList | Type::AnyTuple)
                        && *single != Type::dict(Type::Any, Type::Any)
                    {
                        condition
                            .true_refinements
                            .push((name.clone(), single.clone()));
                    }
                }
            } else {
                condition
                    .true_refinements
                    .push((name.clone(), union_of(&matching)));
                condition
                    .false_refinements
                    .push((name.clone(), union_of(&remaining)));
            }
        }
        self.location = Some(expr.range.clone());
        let node = self.insert(Prim::IsInstance.name(), &[value], &[Type::Bool]);
        self.graph
            .set_attribute(node, "types", AttributeValue::Types(candidates));
        condition.value = Some(self.graph.node_output(node, 0));
        Ok(condition)
    }

    /// Whether `func` is `isinstance` or `torch.jit.isinstance`.
    pub(crate) fn is_isinstance_callee(&self, func: &Expr) -> Result<bool, FrontendError> {
        if matches!(&func.kind, ExprKind::Name(n) if n == "isinstance") {
            return Ok(self.lookup("isinstance").is_none());
        }
        Ok(matches!(
            self.resolve_sugared(func)?,
            Some(super::Sugared::Builtin(name)) if name == "isinstance"
        ))
    }

    /// `isinstance(...)` used as a value rather than a branch condition.
    pub(crate) fn isinstance_value(
        &mut self,
        expr: &Expr,
        args: &[Expr],
    ) -> Result<ferrojit_ir::ValueId, FrontendError> {
        let condition = self.isinstance_condition(expr, args)?;
        Ok(match (condition.value, condition.static_value) {
            (Some(value), _) => value,
            (None, Some(answer)) => self.bool_constant(answer),
            (None, None) => self.bool_constant(false),
        })
    }
}
