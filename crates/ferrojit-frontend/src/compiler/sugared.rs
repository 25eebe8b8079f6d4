//! Names that stand for compile-time things rather than run-time values: free functions
//! (`__torch__.m.helper`, or a variable the printer bound to one), script classes and their
//! `__new__`, NamedTuple classes and enum classes. Calling one, or reading one of its
//! attributes, emits the matching code.

use ferrojit_ir::Prim;
use std::sync::Arc;

use ferrojit_ir::{Argument, AttributeValue, FunctionSchema, NamedTupleType, Type, ValueId};

use super::{Emitter, Sugared};
use crate::ast::{Expr, ExprKind, Keyword};
use crate::compilation_unit::{ConstantValue, EnumInfo};
use crate::error::FrontendError;
use crate::source::SourceRange;

impl<'a> Emitter<'a> {
    /// A name bound to a sugared value in an enclosing frame.
    fn lookup_sugared(&self, name: &str) -> Option<Sugared> {
        self.frames
            .iter()
            .rev()
            .find_map(|frame| frame.sugared.get(name).cloned())
    }

    /// What a fully qualified name (`__torch__.m.f`, `__torch__.m.C.__new__`) denotes in the
    /// compilation unit, loading its file on demand.
    fn resolve_global(&self, qualified: &str) -> Result<Option<Sugared>, FrontendError> {
        let unit = self.context.unit;
        if unit.has_function(qualified)? {
            return Ok(Some(Sugared::Function(qualified.to_string())));
        }
        if let Some(named) = unit.try_resolve_named_tuple(qualified)? {
            return Ok(Some(Sugared::NamedTuple(named)));
        }
        if let Some(info) = unit.try_resolve_enum(qualified)? {
            return Ok(Some(Sugared::Enum(info)));
        }
        if let Some(class) = unit.try_resolve_class(qualified)? {
            return Ok(Some(Sugared::Class(class)));
        }
        if let Some((owner, member)) = qualified.rsplit_once('.') {
            if owner.contains('.') {
                if let Some(base) = self.resolve_global(owner)? {
                    return self.sugared_member(base, member);
                }
            }
        }
        Ok(None)
    }

    /// `C.__new__`, `C.static_method`.
    fn sugared_member(
        &self,
        base: Sugared,
        member: &str,
    ) -> Result<Option<Sugared>, FrontendError> {
        Ok(match base {
            Sugared::Class(class) if member == "__new__" => Some(Sugared::ClassNew(class)),
            Sugared::Class(class) => {
                let qualified = format!("{}.{member}", class.qualified_name());
                if self.context.unit.has_function(&qualified)? {
                    Some(Sugared::Function(qualified))
                } else {
                    None
                }
            }
            _ => None,
        })
    }

    /// The sugared value `expr` denotes, if it is a name or dotted path that is not a
    /// variable.
    pub(crate) fn resolve_sugared(&self, expr: &Expr) -> Result<Option<Sugared>, FrontendError> {
        match &expr.kind {
            ExprKind::Name(name) => {
                if self.lookup(name).is_some() {
                    return Ok(None);
                }
                if let Some(sugared) = self.lookup_sugared(name) {
                    return Ok(Some(sugared));
                }
                if let Some(global) =
                    self.resolve_global(&format!("{}.{name}", self.context.qualifier))?
                {
                    return Ok(Some(global));
                }
                Ok(builtin_path(name).map(|builtin| Sugared::Builtin(builtin.to_string())))
            }
            ExprKind::Attribute { value, attr } => {
                let Some(dotted) = expr.dotted_name() else {
                    return Ok(None);
                };
                let root = dotted.split('.').next().unwrap_or("");
                if self.lookup(root).is_some() {
                    return Ok(None);
                }
                if dotted.starts_with("__torch__.") {
                    return self.resolve_global(&dotted);
                }
                if let Some(builtin) = builtin_path(&dotted) {
                    return Ok(Some(Sugared::Builtin(builtin.to_string())));
                }
                match self.resolve_sugared(value)? {
                    Some(base) => self.sugared_member(base, &attr.name),
                    None => Ok(None),
                }
            }
            _ => Ok(None),
        }
    }

    /// Uses a sugared value where a run-time value is needed: an enum class is the list of
    /// its members (`for c in Color`); functions and classes have no run-time value.
    pub(crate) fn emit_sugared_value(
        &mut self,
        sugared: &Sugared,
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        match sugared {
            Sugared::Enum(info) => {
                let mut members = Vec::new();
                for (name, _) in &info.members {
                    members.push(self.emit_enum_member(info, name, range)?);
                }
                self.location = Some(range.clone());
                Ok(self.insert_one(
                    Prim::ListConstruct.name(),
                    &members,
                    Type::list(Type::Enum(info.qualified_name.clone())),
                ))
            }
            other => Err(self.error(
                format!("{} cannot be used as a value", sugared_description(other)),
                range,
            )),
        }
    }

    /// `Color.RED`: the member's value wrapped as an enum.
    pub(crate) fn emit_enum_member(
        &mut self,
        info: &EnumInfo,
        name: &str,
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        let Some((_, value)) = info.members.iter().find(|(member, _)| member == name) else {
            let short = info
                .qualified_name
                .rsplit('.')
                .next()
                .unwrap_or(&info.qualified_name);
            return Err(self.error(format!("'{short}' has no attribute '{name}'"), range));
        };
        let ConstantValue::Scalar(attribute, ty) = value else {
            return Err(self.error("enum values must be int, float or str", range));
        };
        let constant = self.constant(attribute.clone(), ty.clone());
        self.location = Some(range.clone());
        let node = self.insert(
            Prim::EnumConstant.name(),
            &[constant],
            &[Type::Enum(info.qualified_name.clone())],
        );
        self.graph
            .set_attribute(node, "name", AttributeValue::Str(name.to_string()));
        Ok(self.graph.node_output(node, 0))
    }

    /// `X.attr` where `X` is sugared.
    pub(crate) fn emit_sugared_attribute(
        &mut self,
        sugared: &Sugared,
        name: &str,
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        match sugared {
            Sugared::Enum(info) => self.emit_enum_member(info, name, range),
            other => Err(self.error(
                format!("{} has no attribute '{name}'", sugared_description(other)),
                range,
            )),
        }
    }

    /// `.name` / `.value` of an enum value.
    pub(crate) fn emit_enum_attribute(
        &mut self,
        object: ValueId,
        enum_name: &str,
        name: &str,
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        let info = self
            .context
            .unit
            .try_resolve_enum(enum_name)?
            .ok_or_else(|| self.error(format!("Unknown enum {enum_name}"), range))?;
        self.location = Some(range.clone());
        match name {
            "name" => Ok(self.insert_one(Prim::EnumName.name(), &[object], Type::Str)),
            "value" => {
                Ok(self.insert_one(Prim::EnumValue.name(), &[object], info.value_type.clone()))
            }
            _ => Err(self.error(
                format!("'{enum_name}' object has no attribute or method '{name}'"),
                range,
            )),
        }
    }

    /// Calls a sugared value.
    pub(crate) fn emit_sugared_call(
        &mut self,
        sugared: Sugared,
        expr: &Expr,
        args: &[Expr],
        keywords: &[Keyword],
        hint: Option<&Type>,
    ) -> Result<ValueId, FrontendError> {
        let range = match &expr.kind {
            ExprKind::Call { func, .. } => func.range.clone(),
            _ => expr.range.clone(),
        };
        match sugared {
            Sugared::Function(name) => {
                let (positional, named) = self.emit_arguments(args, keywords)?;
                self.location = Some(range.clone());
                self.emit_function_call(&name, &positional, &named, &range)
            }
            Sugared::ClassNew(class) => {
                // The argument is the class itself (`C.__new__(C)`), which has no value.
                self.location = Some(range.clone());
                Ok(self.insert_one(Prim::CreateObject.name(), &[], Type::Class(class)))
            }
            Sugared::Class(class) => {
                let (positional, named) = self.emit_arguments(args, keywords)?;
                self.location = Some(range.clone());
                let object =
                    self.insert_one(Prim::CreateObject.name(), &[], Type::Class(class.clone()));
                if class.has_method("__init__") {
                    let class_name = class.qualified_name().to_string();
                    self.emit_method_call(
                        object,
                        &class_name,
                        "__init__",
                        &positional,
                        &named,
                        &range,
                    )?;
                } else if !positional.is_empty() || !named.is_empty() {
                    return Err(self.error(
                        format!("{}() takes no arguments", class.short_name()),
                        &range,
                    ));
                }
                Ok(object)
            }
            Sugared::NamedTuple(named_tuple) => {
                self.emit_named_tuple_construct(&named_tuple, args, keywords, &range)
            }
            Sugared::Builtin(name) => {
                self.emit_builtin_path_call(&name, expr, args, keywords, hint)
            }
            Sugared::Enum(info) => Err(self.error(
                format!(
                    "calling the enum class {} is not supported",
                    info.qualified_name
                ),
                &range,
            )),
            Sugared::Closure(def) => Err(self.error(
                format!(
                    "nested function '{}' can only be run through torch.jit.fork",
                    def.name.name
                ),
                &range,
            )),
        }
    }

    fn emit_named_tuple_construct(
        &mut self,
        named_tuple: &Arc<NamedTupleType>,
        args: &[Expr],
        keywords: &[Keyword],
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        let mut arguments = Vec::new();
        for (name, ty) in &named_tuple.fields {
            arguments.push(Argument {
                name: name.clone(),
                ty: ty.clone(),
                type_spelling: ty.annotation_str(),
                list_length: None,
                default: None,
                kwarg_only: false,
                alias_info: None,
            });
        }
        let type_name = named_tuple.name.clone().unwrap_or_default();
        let schema = Arc::new(FunctionSchema {
            name: type_name,
            overload_name: String::new(),
            arguments,
            returns: Vec::new(),
            is_vararg: false,
            is_varret: false,
        });
        let hints: Vec<Type> = named_tuple.fields.iter().map(|(_, t)| t.clone()).collect();
        let mut positional = Vec::new();
        for (index, arg) in args.iter().enumerate() {
            let value = self.emit_expr(arg, hints.get(index))?;
            positional.push((value, arg.range.clone()));
        }
        let mut named = Vec::new();
        for keyword in keywords {
            let Some(name) = &keyword.name else {
                return Err(self.error("**kwargs arguments are not supported", &keyword.range));
            };
            let hint = named_tuple
                .fields
                .iter()
                .find(|(field, _)| *field == name.name)
                .map(|(_, ty)| ty.clone());
            let value = self.emit_expr(&keyword.value, hint.as_ref())?;
            named.push(super::calls::KeywordArgument {
                name: name.name.clone(),
                value,
            });
        }
        let matched = self
            .match_schemas(std::slice::from_ref(&schema), &positional, &named, range)?
            .1;
        self.location = Some(range.clone());
        Ok(self.insert_one(
            Prim::TupleConstruct.name(),
            &matched.inputs,
            Type::NamedTuple(named_tuple.clone()),
        ))
    }
}

impl<'a> Emitter<'a> {
    /// `torch.jit.isinstance(...)`, `torch.jit.is_tracing()`, ...
    fn emit_builtin_path_call(
        &mut self,
        name: &str,
        expr: &Expr,
        args: &[Expr],
        keywords: &[Keyword],
        _hint: Option<&Type>,
    ) -> Result<ValueId, FrontendError> {
        let range = match &expr.kind {
            ExprKind::Call { func, .. } => func.range.clone(),
            _ => expr.range.clone(),
        };
        match name {
            "is_tracing" => Ok(self.bool_constant(false)),
            "fork" => self.emit_fork(args, keywords, &range),
            "wait" => self.emit_wait(args, keywords, &range),
            "isinstance" => {
                if !keywords.is_empty() {
                    return Err(self.error("isinstance() takes no keyword arguments", &range));
                }
                self.isinstance_value(expr, args)
            }
            other => Err(self.error(
                format!("{other}() is not supported in this position"),
                &range,
            )),
        }
    }
}

impl<'a> Emitter<'a> {
    /// Operators on script-class values call the class's dunder method (`a + b` is
    /// `a.__add__(b)`, `len(a)` is `a.__len__()`).
    pub(crate) fn try_class_dunder(
        &mut self,
        operator: &str,
        positional: &[super::calls::PositionalArgument],
        named: &[super::calls::KeywordArgument],
        range: &SourceRange,
    ) -> Result<Option<ValueId>, FrontendError> {
        let Some((first, _)) = positional.first() else {
            return Ok(None);
        };
        let Type::Class(class) = self.graph.value_type(*first).clone() else {
            return Ok(None);
        };
        if class.is_module() {
            return Ok(None);
        }
        let Some(method) = operator.strip_prefix("aten::").and_then(class_dunder) else {
            return Ok(None);
        };
        if !class.has_method(method) {
            return Ok(None);
        }
        let class_name = class.qualified_name().to_string();
        self.emit_method_call(*first, &class_name, method, &positional[1..], named, range)
            .map(Some)
    }
}

/// The dunder method implementing an `aten::` operator on objects.
fn class_dunder(operator: &str) -> Option<&'static str> {
    Some(match operator {
        "add" => "__add__",
        "sub" => "__sub__",
        "mul" => "__mul__",
        "div" => "__truediv__",
        "floordiv" => "__floordiv__",
        "remainder" => "__mod__",
        "pow" => "__pow__",
        "matmul" => "__matmul__",
        "eq" => "__eq__",
        "ne" => "__ne__",
        "lt" => "__lt__",
        "le" => "__le__",
        "gt" => "__gt__",
        "ge" => "__ge__",
        "len" => "__len__",
        "__getitem__" => "__getitem__",
        "_set_item" => "__setitem__",
        "__contains__" => "__contains__",
        "hash" => "__hash__",
        "neg" => "__neg__",
        "str" => "__str__",
        "Int" => "__int__",
        "Float" => "__float__",
        "Bool" => "__bool__",
        _ => return None,
    })
}

/// Builtins PyTorch reaches through module paths; the value is the canonical name.
fn builtin_path(dotted: &str) -> Option<&'static str> {
    Some(match dotted {
        "torch.jit.fork" | "torch.jit._fork" | "fork" => "fork",
        "torch.jit.wait" | "torch.jit._wait" | "torch.wait" | "wait" => "wait",
        "torch.jit.isinstance" | "torch.jit._isinstance" => "isinstance",
        "torch.jit.is_tracing" | "torch._C._is_tracing" => "is_tracing",
        "torch.no_grad" | "torch.autograd.no_grad" | "torch.autograd.grad_mode.no_grad" => {
            "no_grad"
        }
        "torch.enable_grad" => "enable_grad",
        _ => return None,
    })
}

fn sugared_description(sugared: &Sugared) -> String {
    match sugared {
        Sugared::Function(name) => format!("function '{name}'"),
        Sugared::Class(class) | Sugared::ClassNew(class) => {
            format!("class '{}'", class.qualified_name())
        }
        Sugared::NamedTuple(named) => {
            format!("NamedTuple '{}'", named.name.clone().unwrap_or_default())
        }
        Sugared::Enum(info) => format!("enum '{}'", info.qualified_name),
        Sugared::Builtin(name) => format!("builtin '{name}'"),
        Sugared::Closure(def) => format!("function '{}'", def.name.name),
    }
}
