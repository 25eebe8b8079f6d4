//! Which types are mutable, the type each one shares its wildcard with, and what each
//! container type holds, as PyTorch's alias analysis maps them (`mapTypeToAliasTypeSet`,
//! `containedTypes`).
//!
//! Tensors, lists, dicts and objects are mutable. Tuples, optionals, unions and futures are
//! not mutable themselves but stand for the mutable types inside them, so `Optional[Tensor]`
//! shares the tensor wildcard and `Tuple[int, Tensor]` becomes `Tuple[Tensor]`. Every tensor
//! type maps to the unrefined `Tensor`, so shapes never separate alias classes.

use ferrojit_ir::Type;

/// The alias types `ty` stands for, or `None` for a type whose values never alias anything
/// mutable (ints, strings, tuples of immutable types...). More than one type comes back for
/// unions (and optionals of unions) of several mutable types.
pub fn alias_types(ty: &Type) -> Option<Vec<Type>> {
    match ty {
        Type::Tensor | Type::RefinedTensor(_) => Some(vec![Type::Tensor]),
        Type::List(_) | Type::Dict(_, _) | Type::Class(_) => Some(vec![unshaped(ty)]),
        Type::Union(members) => {
            let types: Vec<Type> = members.iter().filter_map(alias_types).flatten().collect();
            (!types.is_empty()).then_some(types)
        }
        Type::Optional(inner) => alias_types(inner),
        Type::Any => Some(vec![Type::Any]),
        Type::Future(inner) => {
            alias_types(inner).map(|types| vec![Type::Future(Box::new(single_type(types)))])
        }
        Type::Tuple(elements) => tuple_alias_types(elements.iter()),
        Type::NamedTuple(named) => tuple_alias_types(named.fields.iter().map(|(_, ty)| ty)),
        _ => None,
    }
}

fn tuple_alias_types<'t>(elements: impl Iterator<Item = &'t Type>) -> Option<Vec<Type>> {
    let types: Vec<Type> = elements.filter_map(alias_types).flatten().collect();
    (!types.is_empty()).then(|| vec![Type::Tuple(types)])
}

/// Whether values of `ty` may alias (PyTorch's `isMutableType`).
pub fn is_mutable(ty: &Type) -> bool {
    alias_types(ty).is_some()
}

/// One type for a set of alias types: the type itself, or the union of several (sorted and
/// without repeats, so that equal unions are one wildcard).
pub fn single_type(mut types: Vec<Type>) -> Type {
    if types.len() == 1 {
        return types.remove(0);
    }
    let mut unique: Vec<Type> = Vec::new();
    for ty in types {
        if !unique.contains(&ty) {
            unique.push(ty);
        }
    }
    unique.sort_by_key(|ty| ty.to_string());
    Type::Union(unique)
}

/// The types a value of (alias) type `ty` holds directly: list elements, dict keys and
/// values, tuple elements, a future's result, an object's attributes.
pub fn contained_types(ty: &Type) -> Vec<Type> {
    match ty {
        Type::List(element) | Type::Optional(element) | Type::Future(element) => {
            vec![element.as_ref().clone()]
        }
        Type::Dict(key, value) => vec![key.as_ref().clone(), value.as_ref().clone()],
        Type::Tuple(elements) | Type::Union(elements) => elements.clone(),
        Type::NamedTuple(named) => named.fields.iter().map(|(_, ty)| ty.clone()).collect(),
        Type::Class(class) => class
            .attributes()
            .into_iter()
            .map(|attribute| attribute.ty)
            .collect(),
        _ => Vec::new(),
    }
}

/// `ty` with every refined tensor type inside it replaced by `Tensor`. Class types are kept
/// as they are (their attributes are not part of the type's identity).
pub fn unshaped(ty: &Type) -> Type {
    match ty {
        Type::RefinedTensor(_) => Type::Tensor,
        Type::List(element) => Type::List(Box::new(unshaped(element))),
        Type::Optional(element) => Type::Optional(Box::new(unshaped(element))),
        Type::Future(element) => Type::Future(Box::new(unshaped(element))),
        Type::Dict(key, value) => Type::Dict(Box::new(unshaped(key)), Box::new(unshaped(value))),
        Type::Tuple(elements) => Type::Tuple(elements.iter().map(unshaped).collect()),
        Type::Union(members) => Type::Union(members.iter().map(unshaped).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn immutable_parts_of_tuples_are_dropped_and_optionals_unwrap() {
        let tuple = Type::Tuple(vec![Type::Int, Type::Tensor]);
        assert_eq!(
            alias_types(&tuple),
            Some(vec![Type::Tuple(vec![Type::Tensor])])
        );
        assert_eq!(
            alias_types(&Type::optional(Type::Tensor)),
            Some(vec![Type::Tensor])
        );
        assert_eq!(alias_types(&Type::Tuple(vec![Type::Int, Type::Str])), None);
        assert!(is_mutable(&Type::list(Type::Int)));
        assert!(!is_mutable(&Type::Str));
    }
}
