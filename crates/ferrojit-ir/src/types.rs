//! TorchScript's static types: the `Type` enum, class types, subtyping and both printed forms.
//!
//! Two spellings exist in PyTorch and both are needed: the IR style used by graph dumps
//! (`int[]`, `int?`, `(int, Tensor)`, `Dict(str, Tensor)`) and the annotation style used in
//! source and in `code/` files (`List[int]`, `Optional[int]`, `Tuple[int, Tensor]`).

use std::fmt;
use std::sync::{Arc, RwLock};

/// A TorchScript type. Cheap to clone except for deeply nested containers.
#[derive(Debug, Clone)]
pub enum Type {
    /// The top type: every type is a subtype of `Any`.
    Any,
    Tensor,
    Int,
    Float,
    Bool,
    Str,
    NoneType,
    Device,
    Generator,
    /// `Scalar` in schemas: int, float or bool. PyTorch calls it NumberType.
    Number,
    List(Box<Type>),
    Tuple(Vec<Type>),
    Optional(Box<Type>),
    Dict(Box<Type>, Box<Type>),
    /// A module or script class type.
    Class(Arc<ClassType>),
    /// A type variable in a schema (`t`, `t1`); bound during schema matching.
    Var(String),
}

impl Type {
    pub fn list(element: Type) -> Type {
        Type::List(Box::new(element))
    }

    pub fn optional(element: Type) -> Type {
        // Optional[Optional[T]] is Optional[T], and Optional[NoneType] stays NoneType-ish.
        match element {
            Type::Optional(_) | Type::NoneType | Type::Any => element,
            other => Type::Optional(Box::new(other)),
        }
    }

    pub fn dict(key: Type, value: Type) -> Type {
        Type::Dict(Box::new(key), Box::new(value))
    }

    /// True when a value of type `self` may be used where `other` is expected.
    pub fn is_subtype_of(&self, other: &Type) -> bool {
        if self == other {
            return true;
        }
        match (self, other) {
            (_, Type::Any) => true,
            (Type::NoneType, Type::Optional(_)) => true,
            (Type::Optional(inner_self), Type::Optional(inner_other)) => {
                inner_self.is_subtype_of(inner_other)
            }
            (_, Type::Optional(inner)) => self.is_subtype_of(inner),
            (Type::Int | Type::Float | Type::Bool, Type::Number) => true,
            (Type::Tuple(elements_self), Type::Tuple(elements_other)) => {
                elements_self.len() == elements_other.len()
                    && elements_self
                        .iter()
                        .zip(elements_other)
                        .all(|(a, b)| a.is_subtype_of(b))
            }
            // Lists are invariant in TorchScript, except that List[T] <: List[Any] is not
            // allowed either; only exact equality (handled above) counts.
            _ => false,
        }
    }

    /// Annotation style, as written in source and in `code/` files: `List[int]`.
    pub fn annotation_str(&self) -> String {
        match self {
            Type::List(element) => format!("List[{}]", element.annotation_str()),
            Type::Optional(element) => format!("Optional[{}]", element.annotation_str()),
            Type::Tuple(elements) => {
                if elements.is_empty() {
                    "Tuple[()]".to_string()
                } else {
                    let parts: Vec<String> = elements.iter().map(Type::annotation_str).collect();
                    format!("Tuple[{}]", parts.join(", "))
                }
            }
            Type::Dict(key, value) => {
                format!("Dict[{}, {}]", key.annotation_str(), value.annotation_str())
            }
            Type::Number => "number".to_string(),
            other => other.to_string(),
        }
    }

    pub fn class_type(&self) -> Option<&Arc<ClassType>> {
        match self {
            Type::Class(class) => Some(class),
            _ => None,
        }
    }

    /// Whether the type mentions a type variable anywhere (so it must be bound first).
    pub fn has_free_variables(&self) -> bool {
        match self {
            Type::Var(_) => true,
            Type::List(e) | Type::Optional(e) => e.has_free_variables(),
            Type::Tuple(es) => es.iter().any(Type::has_free_variables),
            Type::Dict(k, v) => k.has_free_variables() || v.has_free_variables(),
            _ => false,
        }
    }
}

impl PartialEq for Type {
    fn eq(&self, other: &Type) -> bool {
        match (self, other) {
            (Type::Any, Type::Any)
            | (Type::Tensor, Type::Tensor)
            | (Type::Int, Type::Int)
            | (Type::Float, Type::Float)
            | (Type::Bool, Type::Bool)
            | (Type::Str, Type::Str)
            | (Type::NoneType, Type::NoneType)
            | (Type::Device, Type::Device)
            | (Type::Generator, Type::Generator)
            | (Type::Number, Type::Number) => true,
            (Type::List(a), Type::List(b)) | (Type::Optional(a), Type::Optional(b)) => a == b,
            (Type::Tuple(a), Type::Tuple(b)) => a == b,
            (Type::Dict(ka, va), Type::Dict(kb, vb)) => ka == kb && va == vb,
            (Type::Class(a), Type::Class(b)) => a.qualified_name() == b.qualified_name(),
            (Type::Var(a), Type::Var(b)) => a == b,
            _ => false,
        }
    }
}

/// IR style, as PyTorch's graph dumps print it: `int[]`, `int?`, `(int, Tensor)`.
impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Any => write!(f, "Any"),
            Type::Tensor => write!(f, "Tensor"),
            Type::Int => write!(f, "int"),
            Type::Float => write!(f, "float"),
            Type::Bool => write!(f, "bool"),
            Type::Str => write!(f, "str"),
            Type::NoneType => write!(f, "NoneType"),
            Type::Device => write!(f, "Device"),
            Type::Generator => write!(f, "Generator"),
            Type::Number => write!(f, "Scalar"),
            Type::List(element) => write!(f, "{element}[]"),
            Type::Optional(element) => write!(f, "{element}?"),
            Type::Tuple(elements) => {
                write!(f, "(")?;
                for (index, element) in elements.iter().enumerate() {
                    if index > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{element}")?;
                }
                write!(f, ")")
            }
            Type::Dict(key, value) => write!(f, "Dict({key}, {value})"),
            Type::Class(class) => write!(f, "{}", class.qualified_name()),
            Type::Var(name) => write!(f, "{name}"),
        }
    }
}

/// Whether a class attribute is a parameter, a buffer or a plain attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttributeKind {
    Regular,
    Parameter,
    Buffer,
}

#[derive(Debug, Clone)]
pub struct ClassAttribute {
    pub name: String,
    pub ty: Type,
    pub kind: AttributeKind,
}

/// The mutable part of a class type: filled in while `code/` is imported, because class
/// attributes may refer to classes defined later in other files.
#[derive(Debug, Default, Clone)]
pub struct ClassBody {
    pub attributes: Vec<ClassAttribute>,
    pub method_names: Vec<String>,
    /// `__constants__` style class constants, by name.
    pub constant_names: Vec<String>,
}

/// A named class type: a `torch.nn.Module` subclass or a script class.
///
/// Identity is the qualified name (`__torch__.foo.Bar`); two `ClassType`s with the same
/// name are the same type.
#[derive(Debug)]
pub struct ClassType {
    qualified_name: String,
    is_module: bool,
    body: RwLock<ClassBody>,
}

impl ClassType {
    pub fn new(qualified_name: impl Into<String>, is_module: bool) -> Arc<ClassType> {
        Arc::new(ClassType {
            qualified_name: qualified_name.into(),
            is_module,
            body: RwLock::new(ClassBody::default()),
        })
    }

    pub fn qualified_name(&self) -> &str {
        &self.qualified_name
    }

    /// The last component of the qualified name.
    pub fn short_name(&self) -> &str {
        self.qualified_name
            .rsplit('.')
            .next()
            .unwrap_or(&self.qualified_name)
    }

    pub fn is_module(&self) -> bool {
        self.is_module
    }

    fn read_body(&self) -> std::sync::RwLockReadGuard<'_, ClassBody> {
        // A poisoned lock only means another thread panicked while holding it; the body
        // itself is plain data and still consistent.
        self.body
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    fn write_body(&self) -> std::sync::RwLockWriteGuard<'_, ClassBody> {
        self.body
            .write()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Adds an attribute, replacing the type and kind of an existing one of the same name.
    pub fn add_attribute(&self, name: &str, ty: Type, kind: AttributeKind) {
        let mut body = self.write_body();
        if let Some(existing) = body.attributes.iter_mut().find(|a| a.name == name) {
            existing.ty = ty;
            existing.kind = kind;
        } else {
            body.attributes.push(ClassAttribute {
                name: name.to_string(),
                ty,
                kind,
            });
        }
    }

    pub fn set_attribute_kind(&self, name: &str, kind: AttributeKind) -> bool {
        let mut body = self.write_body();
        match body.attributes.iter_mut().find(|a| a.name == name) {
            Some(attribute) => {
                attribute.kind = kind;
                true
            }
            None => false,
        }
    }

    pub fn add_method_name(&self, name: &str) {
        let mut body = self.write_body();
        if !body.method_names.iter().any(|m| m == name) {
            body.method_names.push(name.to_string());
        }
    }

    pub fn has_method(&self, name: &str) -> bool {
        self.read_body().method_names.iter().any(|m| m == name)
    }

    pub fn method_names(&self) -> Vec<String> {
        self.read_body().method_names.clone()
    }

    pub fn attributes(&self) -> Vec<ClassAttribute> {
        self.read_body().attributes.clone()
    }

    pub fn attribute(&self, name: &str) -> Option<ClassAttribute> {
        self.read_body()
            .attributes
            .iter()
            .find(|a| a.name == name)
            .cloned()
    }

    pub fn attribute_index(&self, name: &str) -> Option<usize> {
        self.read_body()
            .attributes
            .iter()
            .position(|a| a.name == name)
    }

    pub fn attribute_count(&self) -> usize {
        self.read_body().attributes.len()
    }

    pub fn add_constant_name(&self, name: &str) {
        let mut body = self.write_body();
        if !body.constant_names.iter().any(|c| c == name) {
            body.constant_names.push(name.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_both_styles() {
        let ty = Type::Tuple(vec![
            Type::list(Type::Int),
            Type::optional(Type::Tensor),
            Type::dict(Type::Str, Type::Tensor),
        ]);
        assert_eq!(ty.to_string(), "(int[], Tensor?, Dict(str, Tensor))");
        assert_eq!(
            ty.annotation_str(),
            "Tuple[List[int], Optional[Tensor], Dict[str, Tensor]]"
        );
    }

    #[test]
    fn subtyping() {
        assert!(Type::NoneType.is_subtype_of(&Type::optional(Type::Int)));
        assert!(Type::Int.is_subtype_of(&Type::optional(Type::Int)));
        assert!(Type::Int.is_subtype_of(&Type::Number));
        assert!(!Type::Float.is_subtype_of(&Type::Int));
        assert!(!Type::list(Type::Int).is_subtype_of(&Type::list(Type::Float)));
        assert!(Type::Tuple(vec![Type::Int]).is_subtype_of(&Type::Tuple(vec![Type::Number])));
        assert!(Type::list(Type::Int).is_subtype_of(&Type::Any));
    }

    #[test]
    fn class_types_compare_by_name() {
        let a = ClassType::new("__torch__.M", true);
        let b = ClassType::new("__torch__.M", true);
        assert_eq!(Type::Class(a.clone()), Type::Class(b));
        a.add_attribute("weight", Type::Tensor, AttributeKind::Parameter);
        a.add_attribute("weight", Type::Tensor, AttributeKind::Buffer);
        assert_eq!(a.attribute_count(), 1);
        assert_eq!(a.attribute("weight").unwrap().kind, AttributeKind::Buffer);
        assert_eq!(a.short_name(), "M");
    }
}
