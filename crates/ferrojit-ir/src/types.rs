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
    /// A tensor with (some) static facts known: dtype, sizes, strides, requires_grad,
    /// device. `Type::Tensor` stays the unrefined tensor type.
    RefinedTensor(Box<TensorRefinement>),
    Complex,
    Layout,
    ScalarType,
    MemoryFormat,
    QScheme,
    Storage,
    Stream,
    Capsule,
    /// `list` in annotations: any list.
    AnyList,
    /// `tuple` in annotations: any tuple.
    AnyTuple,
    AnyClass,
    AnyEnum,
    /// `Union(int, str)`; members kept in the order written.
    Union(Vec<Type>),
    /// A tuple with field names (and usually a qualified name).
    NamedTuple(Arc<NamedTupleType>),
    Future(Box<Type>),
    Await(Box<Type>),
    RRef(Box<Type>),
    /// A TorchScript enum class, by qualified name.
    Enum(String),
    /// A module or class interface, by qualified name.
    Interface(String),
    /// A function value (`Function` in IR text), by qualified name when known.
    Function(Option<String>),
}

/// A named tuple type: `NamedTuple(a : int, b : Tensor)` in IR text.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedTupleType {
    /// Qualified name (`__torch__.Pair`) when known.
    pub name: Option<String>,
    pub fields: Vec<(String, Type)>,
}

/// Static facts about a tensor, as PyTorch's `TensorType` keeps them. Every fact is optional;
/// sizes and strides are per-dimension optional once the rank is known.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TensorRefinement {
    /// PyTorch's scalar type name as printed (`Float`, `Long`, `Double`, `Bool`...).
    pub scalar_type: Option<String>,
    pub sizes: Option<Vec<Option<i64>>>,
    pub strides: Option<Vec<Option<i64>>>,
    pub requires_grad: Option<bool>,
    /// Device as printed (`cpu`, `cuda:0`).
    pub device: Option<String>,
    pub undefined: Option<bool>,
}

/// Scalar type names PyTorch prints in refined tensor types.
pub const SCALAR_TYPE_NAMES: &[&str] = &[
    "Byte",
    "Char",
    "Short",
    "Int",
    "Long",
    "Half",
    "Float",
    "Double",
    "ComplexHalf",
    "ComplexFloat",
    "ComplexDouble",
    "Bool",
    "QInt8",
    "QUInt8",
    "QInt32",
    "BFloat16",
    "QUInt4x2",
    "QUInt2x4",
    "Bits1x8",
    "Bits2x4",
    "Bits4x2",
    "Bits8",
    "Bits16",
    "Float8_e5m2",
    "Float8_e4m3fn",
    "Float8_e5m2fnuz",
    "Float8_e4m3fnuz",
    "UInt16",
    "UInt32",
    "UInt64",
];

impl TensorRefinement {
    /// The refinement that knows nothing; prints as `Tensor`.
    pub fn is_empty(&self) -> bool {
        self == &TensorRefinement::default()
    }

    /// Keeps only facts both sides agree on (PyTorch's `TensorType::merge`).
    pub fn merge(&self, other: &TensorRefinement) -> TensorRefinement {
        fn same<T: Clone + PartialEq>(a: &Option<T>, b: &Option<T>) -> Option<T> {
            if a == b {
                a.clone()
            } else {
                None
            }
        }
        fn dims(
            a: &Option<Vec<Option<i64>>>,
            b: &Option<Vec<Option<i64>>>,
        ) -> Option<Vec<Option<i64>>> {
            match (a, b) {
                (Some(a), Some(b)) if a.len() == b.len() => Some(
                    a.iter()
                        .zip(b)
                        .map(|(x, y)| if x == y { *x } else { None })
                        .collect(),
                ),
                _ => None,
            }
        }
        TensorRefinement {
            scalar_type: same(&self.scalar_type, &other.scalar_type),
            sizes: dims(&self.sizes, &other.sizes),
            strides: dims(&self.strides, &other.strides),
            requires_grad: same(&self.requires_grad, &other.requires_grad),
            device: same(&self.device, &other.device),
            undefined: same(&self.undefined, &other.undefined),
        }
    }

    /// Whether every fact of `other` is also a fact of `self` (so `self` is the narrower type).
    fn refines(&self, other: &TensorRefinement) -> bool {
        fn fact<T: PartialEq>(mine: &Option<T>, theirs: &Option<T>) -> bool {
            theirs.is_none() || mine == theirs
        }
        fn dims(mine: &Option<Vec<Option<i64>>>, theirs: &Option<Vec<Option<i64>>>) -> bool {
            match (mine, theirs) {
                (_, None) => true,
                (Some(a), Some(b)) => {
                    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| y.is_none() || x == y)
                }
                (None, Some(_)) => false,
            }
        }
        fact(&self.scalar_type, &other.scalar_type)
            && dims(&self.sizes, &other.sizes)
            && dims(&self.strides, &other.strides)
            && fact(&self.requires_grad, &other.requires_grad)
            && fact(&self.device, &other.device)
            && fact(&self.undefined, &other.undefined)
    }
}

impl fmt::Display for TensorRefinement {
    /// PyTorch's `operator<<(ostream, Type)` for tensor types at full verbosity.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.scalar_type {
            Some(name) => {
                f.write_str(name)?;
                if self.sizes.is_none() {
                    f.write_str("Tensor")?;
                }
            }
            None => f.write_str("Tensor")?,
        }
        let mut count = 0usize;
        let separator = |f: &mut fmt::Formatter<'_>, count: &mut usize| -> fmt::Result {
            let text = if *count == 0 { "(" } else { ", " };
            *count += 1;
            f.write_str(text)
        };
        if let Some(sizes) = &self.sizes {
            f.write_str("(")?;
            for (index, size) in sizes.iter().enumerate() {
                if index > 0 {
                    f.write_str(", ")?;
                }
                match size {
                    Some(size) => write!(f, "{size}")?,
                    None => f.write_str("*")?,
                }
            }
            count = sizes.len();
            let strides_complete = self.strides.as_ref().is_some_and(|strides| {
                !sizes.is_empty()
                    && strides.len() == sizes.len()
                    && strides.iter().all(Option::is_some)
            });
            if strides_complete {
                if let Some(strides) = &self.strides {
                    f.write_str(", strides=[")?;
                    for (index, stride) in strides.iter().enumerate() {
                        if index > 0 {
                            f.write_str(", ")?;
                        }
                        if let Some(stride) = stride {
                            write!(f, "{stride}")?;
                        }
                    }
                    f.write_str("]")?;
                }
            }
            if let Some(requires_grad) = self.requires_grad {
                if count > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "requires_grad={}", requires_grad as i32)?;
                count += 1;
            }
            if let Some(device) = &self.device {
                if count > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "device={device}")?;
            }
            f.write_str(")")?;
        } else {
            if let Some(requires_grad) = self.requires_grad {
                separator(f, &mut count)?;
                write!(f, "requires_grad={}", requires_grad as i32)?;
            }
            if let Some(device) = &self.device {
                separator(f, &mut count)?;
                write!(f, "device={device}")?;
            }
            if count > 0 {
                f.write_str(")")?;
            }
        }
        if self.undefined == Some(true) {
            f.write_str("[Undefined]")?;
        }
        Ok(())
    }
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

    /// True when a value of type `self` may be used where `other` is expected
    /// (PyTorch's `isSubtypeOf`).
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
            // A union is a subtype when every member is.
            (Type::Union(members), _) => members.iter().all(|m| m.is_subtype_of(other)),
            (Type::Optional(inner), Type::Union(members)) => {
                members.contains(&Type::NoneType) && inner.is_subtype_of(other)
            }
            (_, Type::Union(members)) => members.iter().any(|m| self.is_subtype_of(m)),
            (_, Type::Optional(inner)) => self.is_subtype_of(inner),
            (Type::Int | Type::Float | Type::Bool | Type::Complex, Type::Number) => true,
            (Type::RefinedTensor(_), Type::Tensor) => true,
            (Type::RefinedTensor(mine), Type::RefinedTensor(theirs)) => mine.refines(theirs),
            (Type::Tensor, Type::RefinedTensor(theirs)) => theirs.is_empty(),
            (Type::Tuple(elements_self), Type::Tuple(elements_other)) => {
                elements_self.len() == elements_other.len()
                    && elements_self
                        .iter()
                        .zip(elements_other)
                        .all(|(a, b)| a.is_subtype_of(b))
            }
            (Type::NamedTuple(named), Type::Tuple(elements_other)) => {
                named.fields.len() == elements_other.len()
                    && named
                        .fields
                        .iter()
                        .zip(elements_other)
                        .all(|((_, a), b)| a.is_subtype_of(b))
            }
            (Type::Tuple(_) | Type::NamedTuple(_), Type::AnyTuple) => true,
            (Type::List(_), Type::AnyList) => true,
            (Type::Class(_), Type::AnyClass) => true,
            // A class implements an interface that declares only methods it has (PyTorch
            // also compares their signatures): a module assigned to an interface attribute.
            (Type::Class(class), Type::Class(interface))
                if interface.is_interface() && !class.is_interface() =>
            {
                let methods = interface.method_names();
                !methods.is_empty() && methods.iter().all(|method| class.has_method(method))
            }
            (Type::Enum(_), Type::AnyEnum) => true,
            (Type::Future(a), Type::Future(b)) => a.is_subtype_of(b),
            (Type::Await(a), Type::Await(b)) => a.is_subtype_of(b),
            (Type::RRef(a), Type::RRef(b)) => a.is_subtype_of(b),
            // Lists and dicts are invariant (they are mutable).
            _ => false,
        }
    }

    /// The type with tensor refinements removed everywhere (PyTorch's `unshapedType`).
    pub fn unshaped(&self) -> Type {
        match self {
            Type::RefinedTensor(_) => Type::Tensor,
            Type::List(e) => Type::list(e.unshaped()),
            Type::Optional(e) => Type::Optional(Box::new(e.unshaped())),
            Type::Tuple(es) => Type::Tuple(es.iter().map(Type::unshaped).collect()),
            Type::Dict(k, v) => Type::dict(k.unshaped(), v.unshaped()),
            Type::Union(ms) => Type::Union(ms.iter().map(Type::unshaped).collect()),
            Type::Future(e) => Type::Future(Box::new(e.unshaped())),
            Type::Await(e) => Type::Await(Box::new(e.unshaped())),
            Type::RRef(e) => Type::RRef(Box::new(e.unshaped())),
            other => other.clone(),
        }
    }

    /// Whether this is a tensor type, refined or not.
    pub fn is_tensor(&self) -> bool {
        matches!(self, Type::Tensor | Type::RefinedTensor(_))
    }

    /// Annotation style, as written in source and in `code/` files: `List[int]`.
    pub fn annotation_str(&self) -> String {
        let join = |types: &[Type]| -> String {
            types
                .iter()
                .map(Type::annotation_str)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Type::List(element) => format!("List[{}]", element.annotation_str()),
            Type::Optional(element) => format!("Optional[{}]", element.annotation_str()),
            Type::Tuple(elements) => {
                if elements.is_empty() {
                    "Tuple[()]".to_string()
                } else {
                    format!("Tuple[{}]", join(elements))
                }
            }
            Type::Dict(key, value) => {
                format!("Dict[{}, {}]", key.annotation_str(), value.annotation_str())
            }
            Type::Union(members) => format!("Union[{}]", join(members)),
            Type::NamedTuple(named) => match &named.name {
                Some(name) => name.clone(),
                None => {
                    let types: Vec<Type> = named.fields.iter().map(|(_, t)| t.clone()).collect();
                    format!("Tuple[{}]", join(&types))
                }
            },
            Type::Future(e) => format!("Future[{}]", e.annotation_str()),
            Type::Await(e) => format!("Await[{}]", e.annotation_str()),
            Type::RRef(e) => format!("RRef[{}]", e.annotation_str()),
            Type::RefinedTensor(_) => "Tensor".to_string(),
            Type::Number => "number".to_string(),
            Type::AnyList => "list".to_string(),
            Type::AnyTuple => "tuple".to_string(),
            Type::Enum(name) | Type::Interface(name) => name.clone(),
            Type::Class(class) => class.qualified_name().to_string(),
            Type::Function(Some(name)) => name.clone(),
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
            Type::List(e)
            | Type::Optional(e)
            | Type::Future(e)
            | Type::Await(e)
            | Type::RRef(e) => e.has_free_variables(),
            Type::Tuple(es) | Type::Union(es) => es.iter().any(Type::has_free_variables),
            Type::Dict(k, v) => k.has_free_variables() || v.has_free_variables(),
            _ => false,
        }
    }
}

/// PyTorch's `unifyTypes`: the narrowest type both `a` and `b` are subtypes of, when one
/// exists without resorting to `Any` (`None` and `T` give `Optional[T]`; two refined tensors
/// merge their common facts; tuples unify element-wise; dicts unify after dropping tensor
/// refinements). Lists are invariant and unify only through subtyping.
pub fn unify_types(a: &Type, b: &Type) -> Option<Type> {
    if a.is_subtype_of(b) {
        return Some(b.clone());
    }
    if b.is_subtype_of(a) {
        return Some(a.clone());
    }
    match (a, b) {
        (Type::RefinedTensor(x), Type::RefinedTensor(y)) => {
            let merged = x.merge(y);
            return Some(if merged.is_empty() {
                Type::Tensor
            } else {
                Type::RefinedTensor(Box::new(merged))
            });
        }
        (Type::Tensor, Type::RefinedTensor(_)) | (Type::RefinedTensor(_), Type::Tensor) => {
            return Some(Type::Tensor)
        }
        _ => {}
    }
    let is_none = |t: &Type| t.is_subtype_of(&Type::NoneType);
    if is_none(a) && !is_none(b) {
        return Some(Type::optional(b.clone()));
    }
    if is_none(b) && !is_none(a) {
        return Some(Type::optional(a.clone()));
    }
    if let Type::Optional(inner) = a {
        if let Some(element) = unify_types(inner, b) {
            return Some(Type::optional(element));
        }
    } else if let Type::Optional(inner) = b {
        if let Some(element) = unify_types(inner, a) {
            return Some(Type::optional(element));
        }
    }
    if let (Type::Tuple(xs), Type::Tuple(ys)) = (a, b) {
        if xs.len() != ys.len() {
            return None;
        }
        let elements = xs
            .iter()
            .zip(ys)
            .map(|(x, y)| unify_types(x, y))
            .collect::<Option<Vec<_>>>()?;
        return Some(Type::Tuple(elements));
    }
    let (a_unshaped, b_unshaped) = (a.unshaped(), b.unshaped());
    if a_unshaped.is_subtype_of(&b_unshaped) {
        return Some(b_unshaped);
    }
    if b_unshaped.is_subtype_of(&a_unshaped) {
        return Some(a_unshaped);
    }
    if let (Type::Dict(ka, va), Type::Dict(kb, vb)) = (&a_unshaped, &b_unshaped) {
        return Some(Type::dict(unify_types(ka, kb)?, unify_types(va, vb)?));
    }
    None
}

/// Unifies a list of types left to right (PyTorch's `unifyTypeList`); `None` when empty or
/// when some element does not unify with the types before it.
pub fn unify_type_list(types: &[Type]) -> Option<Type> {
    let (first, rest) = types.split_first()?;
    rest.iter()
        .try_fold(first.clone(), |acc, next| unify_types(&acc, next))
}

impl PartialEq for Type {
    fn eq(&self, other: &Type) -> bool {
        match (self, other) {
            (Type::List(a), Type::List(b))
            | (Type::Optional(a), Type::Optional(b))
            | (Type::Future(a), Type::Future(b))
            | (Type::Await(a), Type::Await(b))
            | (Type::RRef(a), Type::RRef(b)) => a == b,
            (Type::Tuple(a), Type::Tuple(b)) | (Type::Union(a), Type::Union(b)) => a == b,
            (Type::Dict(ka, va), Type::Dict(kb, vb)) => ka == kb && va == vb,
            (Type::Class(a), Type::Class(b)) => a.qualified_name() == b.qualified_name(),
            (Type::Var(a), Type::Var(b)) => a == b,
            (Type::RefinedTensor(a), Type::RefinedTensor(b)) => a == b,
            (Type::NamedTuple(a), Type::NamedTuple(b)) => a == b,
            (Type::Enum(a), Type::Enum(b)) | (Type::Interface(a), Type::Interface(b)) => a == b,
            (Type::Function(a), Type::Function(b)) => a == b,
            // Every remaining variant carries no data: equal when the variants are equal.
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b) && a.is_leaf(),
        }
    }
}

impl Type {
    /// Variants without contents (`int`, `Tensor`, `Device`...).
    fn is_leaf(&self) -> bool {
        matches!(
            self,
            Type::Any
                | Type::Tensor
                | Type::Int
                | Type::Float
                | Type::Bool
                | Type::Str
                | Type::NoneType
                | Type::Device
                | Type::Generator
                | Type::Number
                | Type::Complex
                | Type::Layout
                | Type::ScalarType
                | Type::MemoryFormat
                | Type::QScheme
                | Type::Storage
                | Type::Stream
                | Type::Capsule
                | Type::AnyList
                | Type::AnyTuple
                | Type::AnyClass
                | Type::AnyEnum
        )
    }
}

/// IR style, as PyTorch's graph dumps print it: `int[]`, `int?`, `(int, Tensor)`.
impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list(f: &mut fmt::Formatter<'_>, types: &[Type]) -> fmt::Result {
            for (index, element) in types.iter().enumerate() {
                if index > 0 {
                    write!(f, ", ")?;
                }
                write!(f, "{element}")?;
            }
            Ok(())
        }
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
            Type::Complex => write!(f, "complex"),
            Type::Layout => write!(f, "Layout"),
            Type::ScalarType => write!(f, "ScalarType"),
            Type::MemoryFormat => write!(f, "MemoryFormat"),
            Type::QScheme => write!(f, "QScheme"),
            Type::Storage => write!(f, "Storage"),
            Type::Stream => write!(f, "Stream"),
            Type::Capsule => write!(f, "Capsule"),
            Type::AnyList => write!(f, "list"),
            Type::AnyTuple => write!(f, "tuple"),
            Type::AnyClass => write!(f, "AnyClassType"),
            Type::AnyEnum => write!(f, "AnyEnumType"),
            Type::List(element) => write!(f, "{element}[]"),
            Type::Optional(element) => write!(f, "{element}?"),
            Type::Tuple(elements) => {
                write!(f, "(")?;
                list(f, elements)?;
                write!(f, ")")
            }
            Type::Union(members) => {
                write!(f, "Union(")?;
                list(f, members)?;
                write!(f, ")")
            }
            Type::NamedTuple(named) => {
                write!(f, "NamedTuple(")?;
                for (index, (name, ty)) in named.fields.iter().enumerate() {
                    if index > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{name} : {ty}")?;
                }
                write!(f, ")")
            }
            Type::Dict(key, value) => write!(f, "Dict({key}, {value})"),
            Type::Future(e) => write!(f, "Future[{e}]"),
            Type::Await(e) => write!(f, "Await[{e}]"),
            Type::RRef(e) => write!(f, "RRef[{e}]"),
            Type::Class(class) if class.is_interface() => {
                write!(f, "InterfaceType<{}>", class.short_name())
            }
            Type::Class(class) => write!(f, "{}", class.qualified_name()),
            Type::Var(name) => write!(f, "{name}"),
            Type::RefinedTensor(refinement) => write!(f, "{refinement}"),
            Type::Enum(name) => write!(f, "Enum<{name}>"),
            Type::Interface(name) => write!(f, "InterfaceType<{name}>"),
            Type::Function(_) => write!(f, "Function"),
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
    /// Declared with `@torch.jit.interface`: its values print as `InterfaceType<Name>` in
    /// graphs, as PyTorch's `InterfaceType::str` does, and by qualified name in code.
    is_interface: bool,
    body: RwLock<ClassBody>,
}

impl ClassType {
    pub fn new(qualified_name: impl Into<String>, is_module: bool) -> Arc<ClassType> {
        Arc::new(ClassType {
            qualified_name: qualified_name.into(),
            is_module,
            is_interface: false,
            body: RwLock::new(ClassBody::default()),
        })
    }

    /// An interface type (`@torch.jit.interface`): a class whose methods are declarations
    /// that calls dispatch on the value's own class.
    pub fn new_interface(qualified_name: impl Into<String>, is_module: bool) -> Arc<ClassType> {
        Arc::new(ClassType {
            qualified_name: qualified_name.into(),
            is_module,
            is_interface: true,
            body: RwLock::new(ClassBody::default()),
        })
    }

    pub fn is_interface(&self) -> bool {
        self.is_interface
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
