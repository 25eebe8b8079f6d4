//! Calls: builtin operators (`torch.X`, `ops.aten.X`, operators, tensor methods) matched
//! against registry schemas as PyTorch's `matchSchemas` does, Python builtins, calls of
//! other TorchScript functions (`prim::CallFunction`) and methods (`prim::CallMethod`).

use ferrojit_ir::Prim;
use std::collections::HashMap;
use std::sync::Arc;

use ferrojit_ir::binding::{bind_arguments, ArgumentSource};
use ferrojit_ir::{AttributeValue, DefaultValue, FunctionSchema, Type, ValueId};

use super::types::unify_types;
use super::Emitter;
use crate::ast::{Expr, ExprKind, Keyword};
use crate::error::FrontendError;
use crate::functional_prelude::{functional_callee, resolve_functional_call, FunctionalCall};
use crate::source::SourceRange;
use crate::upgraders;

/// A positional argument value with the source it came from.
pub(crate) type PositionalArgument = (ValueId, SourceRange);

/// A keyword argument.
pub(crate) struct KeywordArgument {
    pub name: String,
    pub value: ValueId,
}

/// The result of matching one schema: the node inputs and the output types.
pub(crate) struct MatchedSchema {
    pub inputs: Vec<ValueId>,
    pub return_types: Vec<Type>,
}

/// Primitive ops reachable as `ops.prim.X` that the interpreter implements itself.
fn primitive_output(name: &str) -> Option<Option<Type>> {
    Some(match name {
        "NumToTensor" => Some(Type::Tensor),
        "dtype" => Some(Type::Int),
        "device" => Some(Type::Device),
        "layout" => Some(Type::Int),
        "is_cuda" => Some(Type::Bool),
        "requires_grad" => Some(Type::Bool),
        "RaiseException" | "Print" => None,
        _ => return None,
    })
}

/// Builtin exception classes usable in `raise`.
fn is_exception_class(name: &str) -> bool {
    matches!(
        name,
        "Exception"
            | "ValueError"
            | "RuntimeError"
            | "TypeError"
            | "KeyError"
            | "IndexError"
            | "AssertionError"
            | "NotImplementedError"
            | "StopIteration"
            | "ZeroDivisionError"
            | "AttributeError"
    )
}

fn type_mismatch(formal: &Type, actual: &Type, argument: &str) -> String {
    format!(
        "Expected a value of type '{}' for argument '{argument}' but instead found type '{}'.",
        formal.annotation_str(),
        actual.annotation_str()
    )
}

/// Binds type variables of `formal` against `actual` (PyTorch's `matchTypeVariables`).
fn match_type_variables(
    formal: &Type,
    actual: &Type,
    env: &mut HashMap<String, Type>,
) -> Result<(), String> {
    if !formal.has_free_variables() {
        return Ok(());
    }
    match formal {
        Type::Var(name) => {
            match env.get(name) {
                Some(bound) => match unify_types(bound, actual) {
                    Some(unified) => {
                        env.insert(name.clone(), unified);
                    }
                    None => {
                        return Err(format!(
                            "Type variable '{name}' previously matched to type {} is matched to type {}",
                            bound.annotation_str(),
                            actual.annotation_str()
                        ))
                    }
                },
                None => {
                    env.insert(name.clone(), actual.clone());
                }
            }
            Ok(())
        }
        Type::List(formal_element) => match actual {
            Type::List(actual_element) => match_type_variables(formal_element, actual_element, env),
            _ => Err(format!(
                "Cannot match {} to {}.",
                formal.annotation_str(),
                actual.annotation_str()
            )),
        },
        Type::Optional(formal_inner) => match actual {
            Type::NoneType => Ok(()),
            Type::Optional(actual_inner) => match_type_variables(formal_inner, actual_inner, env),
            other => match_type_variables(formal_inner, other, env),
        },
        Type::Tuple(formal_elements) => match actual {
            Type::Tuple(actual_elements) if actual_elements.len() == formal_elements.len() => {
                for (f, a) in formal_elements.iter().zip(actual_elements) {
                    match_type_variables(f, a, env)?;
                }
                Ok(())
            }
            _ => Err(format!(
                "Cannot match {} to {}.",
                formal.annotation_str(),
                actual.annotation_str()
            )),
        },
        Type::Dict(formal_key, formal_value) => match actual {
            Type::Dict(actual_key, actual_value) => {
                match_type_variables(formal_key, actual_key, env)?;
                match_type_variables(formal_value, actual_value, env)
            }
            _ => Err(format!(
                "Cannot match {} to {}.",
                formal.annotation_str(),
                actual.annotation_str()
            )),
        },
        _ => Ok(()),
    }
}

/// Replaces bound type variables; `None` when one is still free.
fn substitute(ty: &Type, env: &HashMap<String, Type>) -> Option<Type> {
    Some(match ty {
        Type::Var(name) => env.get(name)?.clone(),
        Type::List(element) => Type::list(substitute(element, env)?),
        Type::Optional(inner) => Type::optional(substitute(inner, env)?),
        Type::Tuple(elements) => Type::Tuple(
            elements
                .iter()
                .map(|e| substitute(e, env))
                .collect::<Option<_>>()?,
        ),
        Type::Dict(key, value) => Type::dict(substitute(key, env)?, substitute(value, env)?),
        other => other.clone(),
    })
}

fn unwrap_optional(ty: &Type) -> &Type {
    match ty {
        Type::Optional(inner) => inner,
        other => other,
    }
}

/// Named enum-like defaults in schemas, as the integers TorchScript uses for them.
fn named_default(name: &str) -> Option<i64> {
    Some(match name {
        "contiguous_format" | "Mean" => {
            if name == "Mean" {
                1
            } else {
                0
            }
        }
        "preserve_format" => 1,
        "channels_last" => 2,
        "Sum" => 2,
        "long" => 4,
        "float" => 6,
        "strided" => 0,
        _ => return None,
    })
}

impl<'a> Emitter<'a> {
    pub(crate) fn emit_arguments(
        &mut self,
        args: &[Expr],
        keywords: &[Keyword],
    ) -> Result<(Vec<PositionalArgument>, Vec<KeywordArgument>), FrontendError> {
        let mut positional = Vec::new();
        for arg in args {
            if let ExprKind::Starred(inner) = &arg.kind {
                for value in self.emit_starred(inner)? {
                    positional.push((value, arg.range.clone()));
                }
                continue;
            }
            positional.push((self.emit_expr(arg, None)?, arg.range.clone()));
        }
        let mut named = Vec::new();
        for keyword in keywords {
            let Some(name) = &keyword.name else {
                return Err(self.error("**kwargs arguments are not supported", &keyword.range));
            };
            let value = self.emit_expr(&keyword.value, None)?;
            named.push(KeywordArgument {
                name: name.name.clone(),
                value,
            });
        }
        Ok((positional, named))
    }

    pub fn emit_call(
        &mut self,
        expr: &Expr,
        func: &Expr,
        args: &[Expr],
        keywords: &[Keyword],
        hint: Option<&Type>,
    ) -> Result<ValueId, FrontendError> {
        // PyTorch reports call errors at the callee (`torch.add`), not the whole call.
        let range = &func.range;
        if let Some(sugared) = self.resolve_sugared(func)? {
            return self.emit_sugared_call(sugared, expr, args, keywords, hint);
        }
        if let ExprKind::Name(name) = &func.kind {
            if self.lookup(name).is_none() {
                return self.emit_builtin_function_call(expr, name, args, keywords, hint);
            }
        }
        if let ExprKind::Attribute {
            value: receiver_expr,
            attr,
        } = &func.kind
        {
            if let Some(dotted) = func.dotted_name() {
                let root = dotted.split('.').next().unwrap_or("");
                if self.lookup(root).is_none() {
                    return self.emit_qualified_call(expr, &dotted, args, keywords, hint);
                }
            }
            let receiver = self.emit_expr(receiver_expr, None)?;
            let (positional, named) = self.emit_arguments(args, keywords)?;
            self.location = Some(range.clone());
            let receiver_type = self.graph.value_type(receiver).clone();
            if let Type::Class(class) = &receiver_type {
                let class_name = class.qualified_name().to_string();
                let class = self.context.unit.resolve_class(&class_name)?;
                if !class.has_method(&attr.name) {
                    if let Some(attribute) = class.attribute(&attr.name) {
                        if let Type::Class(submodule) = &attribute.ty {
                            let submodule_name = submodule.qualified_name().to_string();
                            let module =
                                self.emit_get_attr(receiver, &class_name, &attr.name, range)?;
                            return self.emit_method_call(
                                module,
                                &submodule_name,
                                "forward",
                                &positional,
                                &named,
                                range,
                            );
                        }
                    }
                }
                return self.emit_method_call(
                    receiver,
                    &class_name,
                    &attr.name,
                    &positional,
                    &named,
                    range,
                );
            }
            if attr.name == "tolist" && receiver_type.is_tensor() {
                return self.emit_tolist(receiver, &positional, hint, range);
            }
            if receiver_type.is_tensor() {
                if let Some(dtype) = tensor_cast_method_dtype(&attr.name) {
                    // PyTorch's builtin `x.float()` (and byte, char, ...) is
                    // `x.to(<dtype>, non_blocking, copy)`, inlined as one `aten::to`.
                    let dtype = self.int_constant(dtype);
                    let mut all = vec![
                        (receiver, receiver_expr.range.clone()),
                        (dtype, range.clone()),
                    ];
                    all.extend(positional);
                    return self.emit_builtin_call("aten::to", &all, &named, range);
                }
            }
            let name = format!("aten::{}", attr.name);
            if self.context.unit.operators().overloads(&name).is_empty() {
                return Err(self.error(
                    format!(
                        "'{}' object has no attribute or method '{}'.",
                        receiver_type.annotation_str(),
                        attr.name
                    ),
                    range,
                ));
            }
            let mut all = vec![(receiver, receiver_expr.range.clone())];
            all.extend(positional);
            return self.emit_builtin_call(&name, &all, &named, range);
        }
        let callee = self.emit_expr(func, None)?;
        let (positional, named) = self.emit_arguments(args, keywords)?;
        self.location = Some(range.clone());
        match self.graph.value_type(callee).clone() {
            Type::Class(class) => {
                let class_name = class.qualified_name().to_string();
                self.emit_method_call(callee, &class_name, "forward", &positional, &named, range)
            }
            other => Err(self.error(
                format!("'{}' object is not callable", other.annotation_str()),
                &func.range,
            )),
        }
    }

    /// `torch.X(...)`, `ops.ns.X(...)`, `math.X(...)`, `__torch__.a.f(...)`.
    /// `torch.lu(A, pivot=True, get_infos=False)`: a Python function that PyTorch scripts by
    /// boolean dispatch on the constant `get_infos`. Both forms call
    /// `aten::_lu_with_info(A, pivot, check_errors=not get_infos)`; with `get_infos` the
    /// result is its three outputs, without it the first two (LU, pivots).
    fn emit_torch_lu(
        &mut self,
        args: &[Expr],
        keywords: &[Keyword],
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        let keyword = |name: &str| {
            keywords
                .iter()
                .find(|k| k.name.as_ref().is_some_and(|n| n.name == name))
                .map(|k| &k.value)
        };
        if let Some(unknown) = keywords.iter().find(|k| {
            !k.name
                .as_ref()
                .is_some_and(|n| matches!(n.name.as_str(), "A" | "pivot" | "get_infos"))
        }) {
            return Err(self.error(
                "torch.lu takes the arguments A, pivot and get_infos only",
                &unknown.range,
            ));
        }
        let get_infos = match args.get(2).or_else(|| keyword("get_infos")).map(|e| &e.kind) {
            None => false,
            Some(ExprKind::Bool(value)) => *value,
            Some(_) => {
                return Err(self.error(
                    "torch.lu: get_infos must be a constant True or False (PyTorch chooses the function by it)",
                    range,
                ))
            }
        };
        let Some(matrix) = args.first().or_else(|| keyword("A")) else {
            return Err(self.error("torch.lu() is missing value for argument 'A'", range));
        };
        let matrix = self.emit_expr(matrix, None)?;
        let pivot = match args.get(1).or_else(|| keyword("pivot")) {
            Some(pivot) => self.emit_expr(pivot, None)?,
            None => self.bool_constant(true),
        };
        let check_errors = self.bool_constant(!get_infos);
        self.location = Some(range.clone());
        let result =
            self.emit_builtin("aten::_lu_with_info", &[matrix, pivot, check_errors], range)?;
        if get_infos {
            return Ok(result);
        }
        let items = self.tuple_items(result, &[Type::Tensor, Type::Tensor, Type::Tensor]);
        Ok(self.insert_one(
            Prim::TupleConstruct.name(),
            &items[..2],
            Type::Tuple(vec![Type::Tensor, Type::Tensor]),
        ))
    }

    fn emit_qualified_call(
        &mut self,
        expr: &Expr,
        dotted: &str,
        args: &[Expr],
        keywords: &[Keyword],
        hint: Option<&Type>,
    ) -> Result<ValueId, FrontendError> {
        let range = &expr_func_range(expr);
        match dotted {
            "torch.jit.annotate" => {
                return self.emit_builtin_function_call(expr, "annotate", args, keywords, hint)
            }
            "torch.jit.is_scripting" => return Ok(self.bool_constant(true)),
            "torch.lu" => return self.emit_torch_lu(args, keywords, range),
            "torch.Generator" => {
                if let Some(seed) = constant_generator_seed(args, keywords) {
                    // As PyTorch: a generator built from constants is one graph constant, so
                    // every call of the function shares (and advances) the same generator.
                    self.location = Some(range.clone());
                    return Ok(self.constant(Some(AttributeValue::Int(seed)), Type::Generator));
                }
                let (positional, named) = self.emit_arguments(args, keywords)?;
                self.location = Some(range.clone());
                return self.emit_builtin_call("aten::Generator", &positional, &named, range);
            }
            "torch.jit._unwrap_optional" => {
                let (positional, named) = self.emit_arguments(args, keywords)?;
                self.location = Some(range.clone());
                return self.emit_builtin_call(
                    "aten::_unwrap_optional",
                    &positional,
                    &named,
                    range,
                );
            }
            _ => {}
        }
        let ops_path = dotted
            .strip_prefix("torch.ops.")
            .or_else(|| dotted.strip_prefix("ops."));
        if let Some(path) = ops_path {
            let Some((namespace, op)) = path.split_once('.') else {
                return Err(self.error(format!("undefined value {dotted}"), range));
            };
            let (positional, named) = self.emit_arguments(args, keywords)?;
            self.location = Some(range.clone());
            if namespace == "prim" {
                if let Some(output) = primitive_output(op) {
                    if !named.is_empty() {
                        return Err(
                            self.error(format!("prim::{op} takes no keyword arguments"), range)
                        );
                    }
                    let mut inputs: Vec<ValueId> = positional.iter().map(|(v, _)| *v).collect();
                    if op == "RaiseException" && inputs.len() == 1 {
                        inputs.push(self.none_constant());
                    }
                    let expected = match op {
                        "RaiseException" => Some(2),
                        "Print" => None,
                        _ => Some(1),
                    };
                    if let Some(expected) = expected {
                        if inputs.len() != expected {
                            return Err(self.error(
                                format!(
                                    "prim::{op} expects {expected} argument(s) but got {}",
                                    inputs.len()
                                ),
                                range,
                            ));
                        }
                    }
                    self.location = Some(range.clone());
                    return Ok(match output {
                        Some(ty) => self.insert_one(&format!("prim::{op}"), &inputs, ty),
                        None => {
                            self.insert(&format!("prim::{op}"), &inputs, &[]);
                            self.none_constant()
                        }
                    });
                }
            }
            return self.emit_builtin_call(
                &format!("{namespace}::{op}"),
                &positional,
                &named,
                range,
            );
        }
        // `torch.autograd.grad`/`backward` are TorchScript builtins (`aten::grad`,
        // `aten::backward`), registered by the ferrojit-autograd crate.
        if let Some(op @ ("grad" | "backward")) = dotted.strip_prefix("torch.autograd.") {
            let (positional, named) = self.emit_arguments(args, keywords)?;
            self.location = Some(range.clone());
            return self.emit_builtin_call(&format!("aten::{op}"), &positional, &named, range);
        }
        // PyTorch binds `torch.linalg.X`, `torch.fft.X` and `torch.special.X` to the builtins
        // `aten::linalg_X`, `aten::fft_X` and `aten::special_X` (torch/jit/_builtins.py).
        for (namespace, prefix) in [
            ("torch.linalg.", "linalg_"),
            ("torch.fft.", "fft_"),
            ("torch.special.", "special_"),
        ] {
            if let Some(op) = dotted.strip_prefix(namespace) {
                if !op.contains('.') {
                    let (positional, named) = self.emit_arguments(args, keywords)?;
                    self.location = Some(range.clone());
                    let builtin = format!("aten::{prefix}{op}");
                    return self.emit_builtin_call(&builtin, &positional, &named, range);
                }
            }
        }
        if let Some(op) = dotted.strip_prefix("torch.") {
            // torch/functional.py's scripted Python functions (`torch.norm`, `torch.unique`).
            if let Some(value) = self.try_emit_torch_functional_call(op, args, keywords, range)? {
                return Ok(value);
            }
            if !op.contains('.') {
                if !self.context.unit.compiles_archive_code()
                    && self
                        .context
                        .unit
                        .operators()
                        .overloads(&format!("aten::{op}"))
                        .is_empty()
                {
                    // Scripting from Python looks `torch.X` up on the Python module first;
                    // archive code reaches the builtin directly ("Unknown builtin op").
                    return Err(self.error(format!("object has no attribute {op}"), range));
                }
                let (positional, named) = self.emit_arguments(args, keywords)?;
                self.location = Some(range.clone());
                return self.emit_builtin_call(&format!("aten::{op}"), &positional, &named, range);
            }
        }
        // `cmath.X(z)`: the `.complex` overloads of the same aten operators; `phase` is
        // `angle`.
        if let Some(op) = dotted.strip_prefix("cmath.") {
            if !op.contains('.') {
                let op = if op == "phase" { "angle" } else { op };
                let (positional, named) = self.emit_arguments(args, keywords)?;
                self.location = Some(range.clone());
                return self.emit_builtin_call(&format!("aten::{op}"), &positional, &named, range);
            }
        }
        if let Some(op) = dotted.strip_prefix("math.") {
            if !op.contains('.') {
                let (positional, named) = self.emit_arguments(args, keywords)?;
                self.location = Some(range.clone());
                return self.emit_builtin_call(&format!("aten::{op}"), &positional, &named, range);
            }
        }
        // `torch.nn.functional.X`: an aten builtin or a function of our prelude of
        // torch/nn/functional.py (crate::functional_prelude), also as `F.X`.
        let unit = self.context.unit;
        if let Some(name) = functional_callee(unit, self.context.qualifier, dotted) {
            if let Some(call) = resolve_functional_call(unit, &name, args, keywords, range)? {
                let (positional, named) = self.emit_arguments(args, keywords)?;
                self.location = Some(range.clone());
                return match call {
                    FunctionalCall::Builtin(op) => {
                        self.emit_builtin_call(op, &positional, &named, range)
                    }
                    FunctionalCall::Function(qualified) => {
                        self.emit_function_call(&qualified, &positional, &named, range)
                    }
                    FunctionalCall::Overloaded(overloads) => {
                        let mut schemas = Vec::new();
                        for overload in &overloads {
                            schemas.push(Arc::new(unit.function(overload)?.schema().clone()));
                        }
                        let chosen = self.match_schemas(&schemas, &positional, &named, range)?.0;
                        self.emit_function_call(&chosen.name, &positional, &named, range)
                    }
                };
            }
        }
        if dotted.starts_with("__torch__.") {
            if self.context.unit.has_function(dotted)? {
                let (positional, named) = self.emit_arguments(args, keywords)?;
                self.location = Some(range.clone());
                return self.emit_function_call(dotted, &positional, &named, range);
            }
            if self.context.unit.try_resolve_class(dotted)?.is_some() {
                return Err(self.error("constructing class instances is not supported yet", range));
            }
        }
        Err(self.error(format!("undefined value {dotted}"), range))
    }

    /// Calls of bare names: Python builtins and functions of the same file.
    fn emit_builtin_function_call(
        &mut self,
        expr: &Expr,
        name: &str,
        args: &[Expr],
        keywords: &[Keyword],
        _hint: Option<&Type>,
    ) -> Result<ValueId, FrontendError> {
        let range = &expr_func_range(expr);
        let expect_args = |emitter: &Self, count: usize| -> Result<(), FrontendError> {
            if args.len() != count || !keywords.is_empty() {
                return Err(emitter.error(
                    format!(
                        "{name}() expects {count} positional argument(s) but got {}",
                        args.len()
                    ),
                    range,
                ));
            }
            Ok(())
        };
        match name {
            "annotate" => {
                expect_args(self, 2)?;
                let ty = self.type_resolver().resolve(&args[0])?;
                let value = self.emit_expr(&args[1], Some(&ty))?;
                let value = self
                    .convert_value(value, &ty, &args[1].range)
                    .unwrap_or(value);
                let actual = self.graph.value_type(value).clone();
                if !actual.is_subtype_of(&ty) {
                    return Err(self.error(
                        format!(
                            "Expected an expression of type {} but got an expression of type {}",
                            ty.annotation_str(),
                            actual.annotation_str()
                        ),
                        &args[1].range,
                    ));
                }
                if matches!(ty, Type::Optional(_)) && actual == Type::NoneType {
                    self.location = Some(range.clone());
                    return Ok(self.constant(None, ty));
                }
                Ok(value)
            }
            "uninitialized" => {
                expect_args(self, 1)?;
                let ty = self.type_resolver().resolve(&args[0])?;
                self.location = Some(range.clone());
                Ok(self.insert_one(Prim::Uninitialized.name(), &[], ty))
            }
            "unchecked_cast" => {
                expect_args(self, 2)?;
                let ty = self.type_resolver().resolve(&args[0])?;
                let value = self.emit_expr(&args[1], None)?;
                self.location = Some(range.clone());
                Ok(self.insert_one(Prim::UncheckedCast.name(), &[value], ty))
            }
            "isinstance" => self.isinstance_value(expr, args),
            "hasattr" => {
                expect_args(self, 2)?;
                let object = self.emit_expr(&args[0], None)?;
                let ExprKind::Str(attribute) = &args[1].kind else {
                    return Err(self.error(
                        "hasattr's second argument must be a string literal",
                        &args[1].range,
                    ));
                };
                let answer = match self.graph.value_type(object).clone() {
                    Type::Class(class) => {
                        let class = self.context.unit.resolve_class(class.qualified_name())?;
                        class.attribute(attribute).is_some() || class.has_method(attribute)
                    }
                    _ => false,
                };
                Ok(self.bool_constant(answer))
            }
            "getattr" => {
                expect_args(self, 2)?;
                let object = self.emit_expr(&args[0], None)?;
                let ExprKind::Str(attribute) = &args[1].kind else {
                    return Err(self.error(
                        "getattr's second argument must be a string literal",
                        &args[1].range,
                    ));
                };
                self.location = Some(range.clone());
                match self.graph.value_type(object).clone() {
                    Type::Class(class) => {
                        self.emit_get_attr(object, class.qualified_name(), attribute, range)
                    }
                    other => Err(self.error(
                        format!(
                            "getattr on a value of type {} is not supported",
                            other.annotation_str()
                        ),
                        range,
                    )),
                }
            }
            "int" | "float" | "bool" | "str" => {
                expect_args(self, 1)?;
                let value = self.emit_expr(&args[0], None)?;
                let target = match name {
                    "int" => Type::Int,
                    "float" => Type::Float,
                    "bool" => Type::Bool,
                    _ => Type::Str,
                };
                if *self.graph.value_type(value) == target {
                    return Ok(value);
                }
                let op = match name {
                    "int" => "aten::Int",
                    "float" => "aten::Float",
                    "bool" => "aten::Bool",
                    _ => "aten::str",
                };
                self.location = Some(range.clone());
                self.emit_builtin(op, &[value], range)
            }
            // `complex(re, im)` and `complex(x)`: `aten::Complex`, whose overloads take every
            // mix of int, float, bool and tensor parts.
            "complex" => {
                if args.is_empty() || args.len() > 2 {
                    return Err(self.error("complex() takes one or two arguments", range));
                }
                let (positional, named) = self.emit_arguments(args, keywords)?;
                if let [(value, _)] = positional.as_slice() {
                    if *self.graph.value_type(*value) == Type::Complex {
                        return Ok(*value);
                    }
                }
                self.location = Some(range.clone());
                self.emit_builtin_call("aten::Complex", &positional, &named, range)
            }
            "print" => {
                let (positional, _) = self.emit_arguments(args, &[])?;
                let inputs: Vec<ValueId> = positional.iter().map(|(v, _)| *v).collect();
                self.location = Some(range.clone());
                self.insert(Prim::Print.name(), &inputs, &[]);
                Ok(self.none_constant())
            }
            "len" | "abs" | "min" | "max" | "round" | "divmod" | "list" | "sum" | "ord" | "chr"
            | "hash" | "all" | "any" | "sorted" | "hex" | "oct" | "bin" => {
                let (positional, named) = self.emit_arguments(args, keywords)?;
                self.location = Some(range.clone());
                let op = match name {
                    // PyTorch maps the builtins min/max/abs to prim:: (prim::min.self_int for
                    // `min(xs)`); tensor arguments keep the aten:: overloads.
                    "min" | "max" => {
                        let on_tensor = positional
                            .iter()
                            .any(|(v, _)| *self.graph.value_type(*v) == Type::Tensor);
                        if on_tensor {
                            format!("aten::{name}")
                        } else {
                            format!("prim::{name}")
                        }
                    }
                    "abs" => "prim::abs".to_string(),
                    other => format!("aten::{other}"),
                };
                if self.context.unit.operators().overloads(&op).is_empty()
                    && op.starts_with("prim::")
                {
                    let fallback = format!("aten::{name}");
                    return self.emit_builtin_call(&fallback, &positional, &named, range);
                }
                self.emit_builtin_call(&op, &positional, &named, range)
            }
            "range" => Err(self.error(
                "range() can only be used as the iterable of a for loop",
                range,
            )),
            exception if is_exception_class(exception) => {
                Err(self.error("exceptions can only be used in raise statements", range))
            }
            _ => {
                let qualified = format!("{}.{}", self.context.qualifier, name);
                if self.context.unit.has_function(&qualified)? {
                    let (positional, named) = self.emit_arguments(args, keywords)?;
                    self.location = Some(range.clone());
                    return self.emit_function_call(&qualified, &positional, &named, range);
                }
                Err(self.error(format!("undefined value {name}"), range))
            }
        }
    }

    /// `x.tolist()`: the result type comes from the annotation around the call, as the
    /// `dim` nesting depth and element type PyTorch's `prim::tolist` takes.
    fn emit_tolist(
        &mut self,
        tensor: ValueId,
        positional: &[PositionalArgument],
        hint: Option<&Type>,
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        if !positional.is_empty() {
            return Err(self.error("tolist() takes no arguments", range));
        }
        let Some(annotated) = hint.cloned() else {
            return Err(self.error("Expected type hint for result of tolist()", range));
        };
        let mut dim = 0i64;
        let mut element = &annotated;
        while let Type::List(inner) = element {
            dim += 1;
            element = inner;
        }
        let element_code = match element {
            Type::Int => 0,
            Type::Float => 1,
            Type::Bool => 2,
            other => {
                return Err(self.error(
                    format!(
                        "Output annotation element type must be int, float or bool for tolist(), not {}",
                        other.annotation_str()
                    ),
                    range,
                ))
            }
        };
        if dim == 0 {
            return Err(self.error(
                "Output annotation for tolist() must be a (nested) list",
                range,
            ));
        }
        let dim_value = self.int_constant(dim);
        let element_value = self.int_constant(element_code);
        self.location = Some(range.clone());
        Ok(self.insert_one(
            "prim::tolist",
            &[tensor, dim_value, element_value],
            annotated,
        ))
    }

    /// `prim::CallFunction[name=...]` of a free function of the compilation unit.
    pub(crate) fn emit_function_call(
        &mut self,
        qualified_name: &str,
        positional: &[PositionalArgument],
        named: &[KeywordArgument],
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        let function = self
            .context
            .unit
            .function(qualified_name)
            .map_err(|error| {
                error.with_note(
                    format!("'{qualified_name}' is being compiled since it was called from"),
                    range.clone(),
                )
            })?;
        let schema = Arc::new(function.schema().clone());
        let matched = self
            .match_schemas(std::slice::from_ref(&schema), positional, named, range)?
            .1;
        self.location = Some(range.clone());
        let node = self.insert(
            Prim::CallFunction.name(),
            &matched.inputs,
            &matched.return_types,
        );
        self.graph.set_attribute(
            node,
            "name",
            AttributeValue::Str(qualified_name.to_string()),
        );
        // Calls are not operators: PyTorch gives them no schema, and the verifier checks
        // that a node carrying one is that operator.
        self.pack_outputs(node)
    }

    /// `prim::CallMethod[name=...]` on a class-typed value.
    pub fn emit_method_call(
        &mut self,
        object: ValueId,
        class_name: &str,
        method: &str,
        positional: &[PositionalArgument],
        named: &[KeywordArgument],
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        let class = self.context.unit.resolve_class(class_name)?;
        if !class.has_method(method) {
            return Err(self.error(
                format!("Tried to access nonexistent attribute or method '{method}' of type '{class_name}'."),
                range,
            ));
        }
        let function = self.context.unit.method(&class, method).map_err(|error| {
            error.with_note(
                format!("'{method}' is being compiled since it was called from"),
                range.clone(),
            )
        })?;
        let schema = Arc::new(function.schema().clone());
        let mut all = vec![(object, range.clone())];
        all.extend(positional.iter().cloned());
        let matched = self
            .match_schemas(std::slice::from_ref(&schema), &all, named, range)?
            .1;
        self.location = Some(range.clone());
        let node = self.insert(
            Prim::CallMethod.name(),
            &matched.inputs,
            &matched.return_types,
        );
        self.graph
            .set_attribute(node, "name", AttributeValue::Str(method.to_string()));
        // Calls are not operators: PyTorch gives them no schema, and the verifier checks
        // that a node carrying one is that operator.
        self.pack_outputs(node)
    }

    /// A registry operator called with positional values only.
    pub fn emit_builtin(
        &mut self,
        name: &str,
        inputs: &[ValueId],
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        let positional: Vec<PositionalArgument> =
            inputs.iter().map(|v| (*v, range.clone())).collect();
        self.emit_builtin_call(name, &positional, &[], range)
    }

    /// `g.initial_seed()` of a generator constant: PyTorch's compiler folds it to the seed the
    /// constant was built with, even after `g.manual_seed(...)` (constant propagation treats
    /// `aten::initial_seed` as pure), so ferrojit gives the same number.
    fn initial_seed_of_constant_generator(
        &self,
        name: &str,
        positional: &[PositionalArgument],
        named: &[KeywordArgument],
    ) -> Option<i64> {
        if name != "aten::initial_seed" || positional.len() != 1 || !named.is_empty() {
            return None;
        }
        let generator = positional[0].0;
        let node = self.graph.producer(generator)?;
        if !self.graph.kind(node).is_prim(Prim::Constant)
            || *self.graph.value_type(generator) != Type::Generator
        {
            return None;
        }
        match self.graph.attribute(node, "value") {
            Some(AttributeValue::Int(seed)) => Some(*seed),
            _ => None,
        }
    }

    /// `2 * t`, `1 - t`, `1.5 < t`, `torch.div(2, t)`: a Python number then a tensor. No
    /// operator takes (number, Tensor); PyTorch defines TorchScript builtin functions for these
    /// names that match on the first pass (before the conversions that would turn the tensor
    /// into an `int` for `aten::sub.int`) and inlines them: the operands swap (`b * a`,
    /// `b + a`, `b != a`, `b == a`, and the mirrored comparison for `<` `<=` `>` `>=`, which
    /// complex numbers lack), subtraction is `neg(b) + a` and division `reciprocal(b) * a`.
    fn try_number_then_tensor(
        &mut self,
        name: &str,
        positional: &[PositionalArgument],
        named: &[KeywordArgument],
        range: &SourceRange,
    ) -> Result<Option<ValueId>, FrontendError> {
        let [(number, _), (tensor, _)] = positional else {
            return Ok(None);
        };
        let (number, tensor) = (*number, *tensor);
        let number_type = self.graph.value_type(number).clone();
        if !named.is_empty()
            || !matches!(number_type, Type::Int | Type::Float | Type::Complex)
            || !self.graph.value_type(tensor).is_tensor()
        {
            return Ok(None);
        }
        let complex = number_type == Type::Complex;
        let mirrored = match name {
            "aten::lt" if !complex => Some("aten::gt"),
            "aten::le" if !complex => Some("aten::ge"),
            "aten::gt" if !complex => Some("aten::lt"),
            "aten::ge" if !complex => Some("aten::le"),
            "aten::mul" | "aten::add" | "aten::ne" | "aten::eq" => Some(name),
            _ => None,
        };
        let value = match (name, mirrored) {
            (_, Some(operator)) => self.emit_builtin(operator, &[tensor, number], range)?,
            ("aten::sub", None) => {
                let negated = self.emit_builtin("aten::neg", &[tensor], range)?;
                self.emit_builtin("aten::add", &[negated, number], range)?
            }
            ("aten::div", None) => {
                let reciprocal = self.emit_builtin("aten::reciprocal", &[tensor], range)?;
                self.emit_builtin("aten::mul", &[reciprocal, number], range)?
            }
            _ => return Ok(None),
        };
        Ok(Some(value))
    }

    /// A registry operator: matches the overloads and inserts the node.
    pub fn emit_builtin_call(
        &mut self,
        name: &str,
        positional: &[PositionalArgument],
        named: &[KeywordArgument],
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        if let Some(value) = self.try_class_dunder(name, positional, named, range)? {
            return Ok(value);
        }
        if let Some(seed) = self.initial_seed_of_constant_generator(name, positional, named) {
            return Ok(self.int_constant(seed));
        }
        if let Some(value) = self.try_number_then_tensor(name, positional, named, range)? {
            return Ok(value);
        }
        let mut overloads = self.context.unit.operators().overloads(name);
        // Code of an old archive sees the old schemas of operators changed since, and a call
        // matching one runs its upgrader (see `crate::upgraders`); the upgraders' own
        // bodies use today's operators.
        let upgraders = match self.context.unit.operator_version() {
            Some(version) if self.context.qualifier != upgraders::UPGRADERS_QUALIFIER => {
                upgraders::for_operator(name, version)
            }
            _ => Vec::new(),
        };
        if !upgraders.is_empty() {
            overloads.retain(|current| {
                !upgraders
                    .iter()
                    .any(|old| old.schema.overload_name == current.overload_name)
            });
            overloads.extend(upgraders.iter().map(|old| old.schema.clone()));
        }
        if overloads.is_empty() {
            return Err(self.error(
                format!(
                    "Unknown builtin op: {name}.\nCould not find any similar ops to {name}. This op may not exist or may not be currently supported in TorchScript."
                ),
                range,
            ));
        }
        let (schema, matched) = self.match_schemas(&overloads, positional, named, range)?;
        if let Some(old) = upgraders
            .iter()
            .find(|old| Arc::ptr_eq(&old.schema, &schema))
        {
            upgraders::define_in(self.context.unit)?;
            return self.emit_function_call(&old.function, positional, named, range);
        }
        self.location = Some(range.clone());
        let mut inputs = matched.inputs;
        self.legacy_tensor_literal_dtype(&schema, &mut inputs);
        let schema = self.normalized_alias(schema, &inputs);
        let node = self.insert(&schema.name, &inputs, &matched.return_types);
        self.graph.set_node_schema(node, Some(schema));
        self.pack_outputs(node)
    }

    /// PyTorch's `NormalizeOps`: a call of an operator alias (`torch.subtract`, `x.greater`)
    /// whose first argument is a tensor (or a tensor list) becomes a call of the operator it stands for, same
    /// overload, or else the overload taking the same argument types (`swapdims` is
    /// `transpose.int`); see [`ferrojit_ir::aliases::OPERATOR_ALIASES`].
    fn normalized_alias(
        &self,
        schema: Arc<FunctionSchema>,
        inputs: &[ValueId],
    ) -> Arc<FunctionSchema> {
        let Some(canonical) = ferrojit_ir::aliases::canonical_operator(&schema.name) else {
            return schema;
        };
        // torch 2.15 also rewrites the list-taking aliases (`concat`, `row_stack`).
        let first_is_tensor =
            inputs
                .first()
                .is_some_and(|&first| match self.graph.value_type(first) {
                    Type::List(element) => element.is_tensor(),
                    other => other.is_tensor(),
                });
        if !first_is_tensor {
            return schema;
        }
        let candidates = self.context.unit.operators().overloads(canonical);
        let same_types = |candidate: &FunctionSchema| {
            candidate.arguments.len() == schema.arguments.len()
                && candidate
                    .arguments
                    .iter()
                    .zip(&schema.arguments)
                    .all(|(a, b)| a.ty == b.ty)
        };
        let found = candidates
            .iter()
            .find(|candidate| candidate.overload_name == schema.overload_name)
            .or_else(|| candidates.iter().find(|candidate| same_types(candidate)))
            .cloned();
        found.unwrap_or(schema)
    }

    /// In legacy-format archives (PyTorch ≤ 1.2, see
    /// [`CompilationUnit::set_legacy_tensor_literals`]) `torch.tensor` of float data without
    /// a dtype made a float64 tensor (TorchScript then typed Python floats as double); today
    /// it takes the default dtype. The call gets an explicit float64 dtype.
    fn legacy_tensor_literal_dtype(&mut self, schema: &FunctionSchema, inputs: &mut [ValueId]) {
        if !self.context.unit.legacy_tensor_literals()
            || schema.name != "aten::tensor"
            || !matches!(schema.overload_name.as_str(), "" | "float")
            || inputs.len() < 2
            || *self.graph.value_type(inputs[1]) != Type::NoneType
        {
            return;
        }
        let mut element = self.graph.value_type(inputs[0]);
        while let Type::List(inner) = element {
            element = inner;
        }
        if *element == Type::Float {
            // PyTorch's ScalarType::Double.
            inputs[1] = self.int_constant(7);
        }
    }

    /// The value of a call expression: its single output, a tuple of several, or None.
    pub(crate) fn pack_outputs(
        &mut self,
        node: ferrojit_ir::NodeId,
    ) -> Result<ValueId, FrontendError> {
        let outputs = self.graph.node_outputs(node).to_vec();
        Ok(match outputs.len() {
            0 => self.none_constant(),
            1 => outputs[0],
            _ => {
                let types = outputs
                    .iter()
                    .map(|v| self.graph.value_type(*v).clone())
                    .collect();
                self.insert_one(Prim::TupleConstruct.name(), &outputs, Type::Tuple(types))
            }
        })
    }

    pub(crate) fn match_schemas(
        &mut self,
        schemas: &[Arc<FunctionSchema>],
        positional: &[PositionalArgument],
        named: &[KeywordArgument],
        range: &SourceRange,
    ) -> Result<(Arc<FunctionSchema>, MatchedSchema), FrontendError> {
        let mut failures = Vec::new();
        for allow_conversions in [false, true] {
            failures.clear();
            for schema in schemas {
                match self.try_match_schema(schema, positional, named, allow_conversions, range) {
                    Ok(matched) => return Ok((schema.clone(), matched)),
                    Err(reason) => failures.push((schema.clone(), reason)),
                }
            }
        }
        if let [(schema, reason)] = failures.as_slice() {
            return Err(self.error(format!("{schema}:\n{reason}"), range));
        }
        let mut listing = String::new();
        for (schema, reason) in &failures {
            listing.push_str(&format!("\n{schema}:\n{reason}\n"));
        }
        let prefixed: String = listing
            .split_inclusive('\n')
            .map(|line| format!("  {line}"))
            .collect();
        Err(self.error(
            format!(
                "Arguments for call are not valid.\nThe following variants are available:\n{prefixed}\nThe original call is"
            ),
            range,
        ))
    }

    /// Emits a schema default as a constant (PyTorch gives these no source location).
    fn default_constant(&mut self, default: &DefaultValue, ty: &Type) -> Result<ValueId, String> {
        let saved = self.location.take();
        let formal = unwrap_optional(ty).clone();
        let value = match default {
            DefaultValue::None => self.none_constant(),
            DefaultValue::Bool(b) => self.bool_constant(*b),
            DefaultValue::Int(i) => match formal {
                Type::Float => self.float_constant(*i as f64),
                Type::Bool => self.bool_constant(*i != 0),
                _ => self.int_constant(*i),
            },
            DefaultValue::Float(f) => self.float_constant(*f),
            DefaultValue::Str(s) => self.str_constant(s),
            DefaultValue::IntList(values) => self.constant(
                Some(AttributeValue::Ints(values.clone())),
                Type::list(Type::Int),
            ),
            DefaultValue::FloatList(values) => self.constant(
                Some(AttributeValue::Floats(values.clone())),
                Type::list(Type::Float),
            ),
            DefaultValue::BoolList(values) => self.constant(
                Some(AttributeValue::Ints(
                    values.iter().map(|b| *b as i64).collect(),
                )),
                Type::list(Type::Bool),
            ),
            DefaultValue::EmptyList => {
                let element = match &formal {
                    Type::List(element) if !element.has_free_variables() => {
                        element.as_ref().clone()
                    }
                    _ => Type::Tensor,
                };
                self.insert_one(Prim::ListConstruct.name(), &[], Type::list(element))
            }
            DefaultValue::Named(name) => match named_default(name) {
                Some(v) => self.int_constant(v),
                None => {
                    self.location = saved;
                    return Err(format!("unsupported default value {name}"));
                }
            },
        };
        self.location = saved;
        Ok(value)
    }

    /// Implicit conversions applied on the second matching pass (PyTorch's
    /// `tryConvertToType` with `allow_conversions`).
    pub(crate) fn convert_value(
        &mut self,
        value: ValueId,
        formal: &Type,
        range: &SourceRange,
    ) -> Option<ValueId> {
        let actual = self.graph.value_type(value).clone();
        let formal = unwrap_optional(formal);
        let op = match (&actual, formal) {
            (Type::Tensor, Type::Int) => "aten::IntImplicit",
            (Type::Tensor, Type::Float) => "aten::FloatImplicit",
            (Type::Tensor, Type::Number) => "aten::ScalarImplicit",
            (Type::Number | Type::Bool, Type::Int) => "aten::Int",
            (Type::Number | Type::Bool, Type::Float) => "aten::Float",
            (Type::Str, Type::Device) => "aten::device",
            _ => return None,
        };
        if self.context.unit.operators().overloads(op).is_empty() {
            return None;
        }
        self.emit_builtin(op, &[value], range).ok()
    }

    /// Checks (and adapts) one actual argument for a formal one.
    fn match_argument(
        &mut self,
        argument: &ferrojit_ir::Argument,
        value: ValueId,
        range: &SourceRange,
        env: &mut HashMap<String, Type>,
        allow_conversions: bool,
    ) -> Result<ValueId, String> {
        let formal = &argument.ty;
        let mut value = value;
        let unwrapped = unwrap_optional(formal).clone();
        // `[]` without a type takes the list type the schema wants.
        if self.empty_list_literals.contains(&value) {
            if let Type::List(element) = &unwrapped {
                if let Some(element) = substitute(element, env) {
                    let list =
                        self.insert_one(Prim::ListConstruct.name(), &[], Type::list(element));
                    self.empty_list_literals.insert(list);
                    value = list;
                }
            }
        }
        let actual = self.graph.value_type(value).clone();
        // Homogeneous tuples convert to lists (`len((a, b))`).
        if let (Type::Tuple(elements), Type::List(formal_element)) = (&actual, &unwrapped) {
            let formal_element = match formal_element.as_ref() {
                Type::Var(_) if elements.windows(2).all(|pair| pair[0] == pair[1]) => {
                    match elements.first() {
                        Some(first) => Box::new(first.clone()),
                        None => formal_element.clone(),
                    }
                }
                _ => formal_element.clone(),
            };
            // PyTorch's `convertibleToList`: every element fits, which an empty tuple `()`
            // does too (`x.new_zeros(())`, `torch.permute(x, ())`) once the list's element
            // type is known.
            let element_known = !elements.is_empty() || !formal_element.has_free_variables();
            if element_known && elements.iter().all(|e| e.is_subtype_of(&formal_element)) {
                let node = self.insert(Prim::TupleUnpack.name(), &[value], elements);
                let items = self.graph.node_outputs(node).to_vec();
                value = self.insert_one(
                    Prim::ListConstruct.name(),
                    &items,
                    Type::list(formal_element.as_ref().clone()),
                );
            }
        }
        // A single int/float for a fixed-size list broadcasts (`int[2] stride=1`).
        if let (Some(length), Type::List(formal_element)) = (argument.list_length, &unwrapped) {
            if actual.is_subtype_of(formal_element) && !matches!(actual, Type::List(_)) {
                let items = vec![value; length];
                value = self.insert_one(
                    Prim::ListConstruct.name(),
                    &items,
                    Type::list(formal_element.as_ref().clone()),
                );
            }
        }
        if allow_conversions {
            let current = self.graph.value_type(value).clone();
            if !current.is_subtype_of(formal) && !formal.has_free_variables() {
                if let Some(converted) = self.convert_value(value, formal, range) {
                    value = converted;
                }
            }
        }
        let actual = self.graph.value_type(value).clone();
        // `AnyEnumType` reads as `Any` in schemas but only takes enum values.
        if argument.type_spelling.starts_with("AnyEnumType") && !matches!(actual, Type::Enum(_)) {
            return Err(type_mismatch(formal, &actual, &argument.name));
        }
        // ScalarType / Layout / MemoryFormat are ints at run time, but PyTorch only lets an
        // int stand for one once plain matches have failed (`x.view(-1)` is not a dtype view).
        let enum_like = ["ScalarType", "Layout", "MemoryFormat"]
            .iter()
            .any(|name| argument.type_spelling.starts_with(name));
        if enum_like && !allow_conversions && actual == Type::Int {
            return Err(type_mismatch(formal, &actual, &argument.name));
        }
        if formal.has_free_variables() {
            match_type_variables(formal, &actual, env).map_err(|reason| {
                format!(
                    "Could not match type {} to {} in argument '{}': {reason}",
                    actual.annotation_str(),
                    formal.annotation_str(),
                    argument.name
                )
            })?;
            let concrete = substitute(formal, env).unwrap_or_else(|| formal.clone());
            if !concrete.has_free_variables() && !actual.is_subtype_of(&concrete) {
                return Err(type_mismatch(&concrete, &actual, &argument.name));
            }
        } else if !actual.is_subtype_of(formal) {
            return Err(type_mismatch(formal, &actual, &argument.name));
        }
        Ok(value)
    }

    fn try_match_schema(
        &mut self,
        schema: &FunctionSchema,
        positional: &[PositionalArgument],
        named: &[KeywordArgument],
        allow_conversions: bool,
        range: &SourceRange,
    ) -> Result<MatchedSchema, String> {
        let mut env: HashMap<String, Type> = HashMap::new();
        let keywords: Vec<&str> = named.iter().map(|k| k.name.as_str()).collect();
        // A vararg-style formal takes the trailing positionals as a list on the second pass,
        // unless the first of them already is a list (or a tuple of fitting elements).
        let binding = bind_arguments(schema, positional.len(), &keywords, |index, first| {
            if !allow_conversions {
                return false;
            }
            let first_type = self.graph.value_type(positional[first].0);
            let unwrapped = unwrap_optional(&schema.arguments[index].ty);
            let convertible = match (first_type, unwrapped) {
                (Type::Tuple(elements), Type::List(element)) => {
                    elements.iter().all(|e| e.is_subtype_of(element))
                }
                _ => false,
            };
            !matches!(first_type, Type::List(_)) && !convertible
        });
        let mut inputs = Vec::new();
        for (argument, source) in schema.arguments.iter().zip(&binding.sources) {
            let (value, value_range) = match *source {
                ArgumentSource::PackedPositionals(first) => {
                    let Type::List(element) = unwrap_optional(&argument.ty).clone() else {
                        return Err("internal: vararg list without a list type".to_string());
                    };
                    let element_argument = ferrojit_ir::Argument {
                        name: argument.name.clone(),
                        ty: element.as_ref().clone(),
                        type_spelling: String::new(),
                        list_length: None,
                        default: None,
                        kwarg_only: false,
                        alias_info: None,
                    };
                    let mut items = Vec::new();
                    for (item, item_range) in &positional[first..] {
                        items.push(self.match_argument(
                            &element_argument,
                            *item,
                            item_range,
                            &mut env,
                            allow_conversions,
                        )?);
                    }
                    let list = self.insert_one(
                        Prim::ListConstruct.name(),
                        &items,
                        Type::list(element.as_ref().clone()),
                    );
                    inputs.push(list);
                    continue;
                }
                ArgumentSource::Positional(index) => positional[index].clone(),
                ArgumentSource::Keyword(index) => (named[index].value, range.clone()),
                ArgumentSource::Default => {
                    let Some(default) = &argument.default else {
                        return Err(format!("Argument {} not provided.", argument.name));
                    };
                    (self.default_constant(default, &argument.ty)?, range.clone())
                }
            };
            let matched =
                self.match_argument(argument, value, &value_range, &mut env, allow_conversions)?;
            inputs.push(matched);
        }
        // Arguments bound before a binding error are checked first, so an earlier type
        // mismatch is reported before a later missing argument, as PyTorch reports them.
        if let Some(error) = binding.error {
            return Err(error.to_string());
        }
        inputs.extend(
            positional[binding.extra_positionals]
                .iter()
                .map(|(v, _)| *v),
        );
        let mut return_types = Vec::new();
        for ret in &schema.returns {
            match substitute(&ret.ty, &env) {
                Some(ty) => return_types.push(ty),
                None => {
                    return Err(format!(
                        "Could not infer the return type {} from the arguments",
                        ret.ty.annotation_str()
                    ))
                }
            }
        }
        Ok(MatchedSchema {
            inputs,
            return_types,
        })
    }
}

fn expr_func_range(expr: &Expr) -> SourceRange {
    match &expr.kind {
        ExprKind::Call { func, .. } => func.range.clone(),
        _ => expr.range.clone(),
    }
}

/// The seed of `torch.Generator(device="cpu", seed=N)` when every argument is a literal (the
/// device a CPU string, the seed an integer or absent): such a generator is a constant.
fn constant_generator_seed(args: &[Expr], keywords: &[Keyword]) -> Option<i64> {
    if !args.is_empty() {
        return None;
    }
    // `torch.Generator()`'s seed (c10's `default_rng_seed_val`, ferrojit-tensor's DEFAULT_SEED).
    let mut seed = 67_280_421_310_721;
    for keyword in keywords {
        match (keyword.name.as_ref()?.name.as_str(), &keyword.value.kind) {
            ("device", ExprKind::Str(device)) if device == "cpu" => {}
            ("device", ExprKind::None) | ("seed", ExprKind::None) => {}
            ("seed", ExprKind::Int(value)) => seed = i64::try_from(*value).ok()?,
            _ => return None,
        }
    }
    Some(seed)
}

/// The ScalarType index of a tensor cast method (`x.byte()`, `x.float()`, ...): the methods
/// PyTorch's TorchScript builtins define as `self.to(<dtype>, non_blocking, copy)`. There is
/// no `bool()` or `bfloat16()` among them, so PyTorch refuses those, as ferrojit does.
fn tensor_cast_method_dtype(name: &str) -> Option<i64> {
    Some(match name {
        "byte" => 0,
        "char" => 1,
        "short" => 2,
        "int" => 3,
        "long" => 4,
        "half" => 5,
        "float" => 6,
        "double" => 7,
        "cfloat" => 9,
        "cdouble" => 10,
        _ => return None,
    })
}
