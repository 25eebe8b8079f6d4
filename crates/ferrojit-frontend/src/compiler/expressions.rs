//! Expressions: literals, names, attributes, operators, subscripts, conditions with
//! `is None` refinement, `and`/`or`/`if`-expressions as `prim::If`.

use ferrojit_ir::Prim;
use ferrojit_ir::{AttributeValue, Type, ValueId};

use super::statements::{binary_operator_name, Condition};
use super::types::unify_types;
use super::Emitter;
use crate::ast::{BoolOpKind, CmpOpKind, Expr, ExprKind, UnaryOpKind};
use crate::error::FrontendError;
use crate::source::SourceRange;

/// `torch.float32` and friends: the ScalarType numbers PyTorch uses.
fn dtype_constant(name: &str) -> Option<i64> {
    Some(match name {
        "uint8" => 0,
        "int8" => 1,
        "int16" | "short" => 2,
        "int32" | "int" => 3,
        "int64" | "long" => 4,
        "float16" | "half" => 5,
        "float32" | "float" => 6,
        "float64" | "double" => 7,
        "complex64" | "cfloat" => 9,
        "complex128" | "cdouble" => 10,
        "bool" => 11,
        "bfloat16" => 15,
        _ => return None,
    })
}

impl<'a> Emitter<'a> {
    pub fn emit_expr(
        &mut self,
        expr: &Expr,
        hint: Option<&Type>,
    ) -> Result<ValueId, FrontendError> {
        self.location = Some(expr.range.clone());
        match &expr.kind {
            ExprKind::Name(name) => self.emit_name(name, &expr.range),
            ExprKind::Int(value) => {
                let value = i64::try_from(*value).map_err(|_| {
                    self.error("integer literal is too large for int64", &expr.range)
                })?;
                Ok(self.int_constant(value))
            }
            ExprKind::Float(value) => Ok(self.float_constant(*value)),
            ExprKind::Imaginary(value) => Ok(self.complex_constant(0.0, *value)),
            ExprKind::Bool(value) => Ok(self.bool_constant(*value)),
            ExprKind::Str(text) => Ok(self.str_constant(text)),
            ExprKind::None => Ok(self.none_constant()),
            ExprKind::Attribute { value, attr } => self.emit_attribute(expr, value, &attr.name),
            ExprKind::Call {
                func,
                args,
                keywords,
            } => self.emit_call(expr, func, args, keywords, hint),
            ExprKind::Subscript { value, index } => self.emit_subscript(expr, value, index),
            ExprKind::BinOp { op, left, right } => {
                let left = self.emit_expr(left, None)?;
                let right = self.emit_expr(right, None)?;
                self.location = Some(expr.range.clone());
                self.emit_binary_operator(*op, left, right, &expr.range)
            }
            ExprKind::UnaryOp { op, operand } => self.emit_unary(expr, *op, operand),
            ExprKind::BoolOp { .. } | ExprKind::Compare { .. } => {
                let condition = self.emit_condition(expr)?;
                Ok(match (condition.value, condition.static_value) {
                    (Some(value), _) => value,
                    (None, Some(constant)) => self.bool_constant(constant),
                    (None, None) => self.bool_constant(false),
                })
            }
            ExprKind::IfExp { test, body, orelse } => {
                self.emit_if_expression(expr, test, body, orelse, hint)
            }
            ExprKind::Tuple(items) => {
                let hints: Vec<Option<&Type>> = match hint {
                    Some(Type::Tuple(types)) if types.len() == items.len() => {
                        types.iter().map(Some).collect()
                    }
                    _ => vec![None; items.len()],
                };
                let mut values = Vec::new();
                for (item, item_hint) in items.iter().zip(hints) {
                    if let ExprKind::Starred(inner) = &item.kind {
                        values.extend(self.emit_starred(inner)?);
                        continue;
                    }
                    values.push(self.emit_expr(item, item_hint)?);
                }
                let types = values
                    .iter()
                    .map(|v| self.graph.value_type(*v).clone())
                    .collect();
                self.location = Some(expr.range.clone());
                Ok(self.insert_one(Prim::TupleConstruct.name(), &values, Type::Tuple(types)))
            }
            ExprKind::List(items) => self.emit_list_literal(expr, items, hint),
            ExprKind::Dict { keys, values } => self.emit_dict_literal(expr, keys, values, hint),
            ExprKind::FString(template) => self.emit_fstring(template, &expr.range),
            ExprKind::ListComp { elt, generators } => {
                self.emit_list_comprehension(expr, elt, generators, hint)
            }
            ExprKind::DictComp {
                key,
                value,
                generators,
            } => self.emit_dict_comprehension(expr, key, value, generators, hint),
            ExprKind::Set(_) => {
                Err(self.error("sets are not supported in TorchScript", &expr.range))
            }
            ExprKind::Ellipsis => {
                Err(self.error("'...' is only supported in tensor indexing", &expr.range))
            }
            ExprKind::Slice { .. } => {
                Err(self.error("slices are only supported inside subscripts", &expr.range))
            }
            ExprKind::Starred(_) => {
                Err(self.error("starred expressions are not supported", &expr.range))
            }
        }
    }

    fn emit_name(&mut self, name: &str, range: &SourceRange) -> Result<ValueId, FrontendError> {
        if let Some(value) = self.lookup(name) {
            return Ok(value);
        }
        let partly = self
            .frames
            .iter()
            .rev()
            .find_map(|frame| frame.partly_defined.get(name).cloned());
        if let Some((branch, if_range)) = partly {
            return Err(self
                .error(format!("{name} is not defined in the {branch}"), &if_range)
                .with_note("and was used here", range.clone()));
        }
        // The printer writes `math.inf` and `math.nan` as bare `inf` and `nan`.
        match name {
            "inf" => return Ok(self.float_constant(f64::INFINITY)),
            "nan" => return Ok(self.float_constant(f64::NAN)),
            _ => {}
        }
        let qualified = format!("{}.{name}", self.context.qualifier);
        if let Some(constant) = self.context.unit.module_constant(&qualified) {
            return Ok(self.emit_constant_value(&constant));
        }
        let name_expr = Expr {
            kind: ExprKind::Name(name.to_string()),
            range: range.clone(),
        };
        if let Some(sugared) = self.resolve_sugared(&name_expr)? {
            return self.emit_sugared_value(&sugared, range);
        }
        Err(self.error(format!("undefined value {name}"), range))
    }

    /// The elements' types unified as PyTorch's `unifyTypeList` with `default_to_union`: one
    /// type when they unify, else the union of the distinct types in order
    /// (`Union[float, complex]`).
    fn unified_element_types(&self, values: &[ValueId]) -> Type {
        let mut members: Vec<Type> = Vec::new();
        let mut unified: Option<Option<Type>> = None;
        for value in values {
            let ty = self.graph.value_type(*value).clone();
            if !members.contains(&ty) {
                members.push(ty.clone());
            }
            unified = Some(match unified {
                None => Some(ty),
                Some(Some(so_far)) => unify_types(&so_far, &ty),
                Some(None) => None,
            });
        }
        match unified {
            Some(Some(ty)) => ty,
            _ => Type::Union(members),
        }
    }

    fn emit_list_literal(
        &mut self,
        expr: &Expr,
        items: &[Expr],
        hint: Option<&Type>,
    ) -> Result<ValueId, FrontendError> {
        let element_hint = match hint {
            Some(Type::List(element)) => Some(element.as_ref().clone()),
            Some(Type::Optional(inner)) => match inner.as_ref() {
                Type::List(element) => Some(element.as_ref().clone()),
                _ => None,
            },
            _ => None,
        };
        let mut values = Vec::new();
        for item in items {
            values.push(self.emit_expr(item, element_hint.as_ref())?);
        }
        let element_type = match &element_hint {
            Some(ty) => {
                for (value, item) in values.iter().zip(items) {
                    let actual = self.graph.value_type(*value);
                    if !actual.is_subtype_of(ty) {
                        return Err(self.error(
                            format!(
                                "List type annotation `List[{}]` did not match the types of the given list elements, which were unified to {}",
                                ty.annotation_str(),
                                self.unified_element_types(&values).annotation_str()
                            ),
                            &item.range,
                        ));
                    }
                }
                ty.clone()
            }
            None => {
                let mut element: Option<Type> = None;
                for (value, item) in values.iter().zip(items) {
                    let ty = self.graph.value_type(*value).clone();
                    element = Some(match element {
                        None => ty,
                        Some(previous) => unify_types(&previous, &ty).ok_or_else(|| {
                            self.error(
                                format!(
                                    "Lists must contain only a single type, expected: {} but found {} instead",
                                    previous.annotation_str(),
                                    ty.annotation_str()
                                ),
                                &item.range,
                            )
                        })?,
                    });
                }
                element.unwrap_or(Type::Tensor)
            }
        };
        self.location = Some(expr.range.clone());
        let list = self.insert_one(
            Prim::ListConstruct.name(),
            &values,
            Type::list(element_type),
        );
        if items.is_empty() && element_hint.is_none() {
            self.empty_list_literals.insert(list);
        }
        Ok(list)
    }

    fn emit_dict_literal(
        &mut self,
        expr: &Expr,
        keys: &[Expr],
        values: &[Expr],
        hint: Option<&Type>,
    ) -> Result<ValueId, FrontendError> {
        let (key_hint, value_hint) = match hint {
            Some(Type::Dict(k, v)) => (Some(k.as_ref().clone()), Some(v.as_ref().clone())),
            _ => (None, None),
        };
        let mut inputs = Vec::new();
        let mut key_type = key_hint.clone();
        let mut value_type = value_hint.clone();
        for (key, value) in keys.iter().zip(values) {
            let k = self.emit_expr(key, key_hint.as_ref())?;
            let v = self.emit_expr(value, value_hint.as_ref())?;
            for (slot, item, expr) in [(&mut key_type, k, key), (&mut value_type, v, value)] {
                let ty = self.graph.value_type(item).clone();
                *slot = Some(match slot.take() {
                    None => ty,
                    Some(previous) if ty.is_subtype_of(&previous) => previous,
                    Some(previous) => {
                        return Err(self.error(
                            format!(
                                "Dict values must contain only a single type, expected: {} but found {} instead",
                                previous.annotation_str(),
                                ty.annotation_str()
                            ),
                            &expr.range,
                        ))
                    }
                });
            }
            inputs.push(k);
            inputs.push(v);
        }
        self.location = Some(expr.range.clone());
        let ty = Type::dict(
            key_type.unwrap_or(Type::Str),
            value_type.unwrap_or(Type::Tensor),
        );
        Ok(self.insert_one(Prim::DictConstruct.name(), &inputs, ty))
    }

    fn emit_unary(
        &mut self,
        expr: &Expr,
        op: UnaryOpKind,
        operand: &Expr,
    ) -> Result<ValueId, FrontendError> {
        match (op, &operand.kind) {
            (UnaryOpKind::Neg, ExprKind::Int(magnitude)) => {
                let value = if *magnitude == (i64::MAX as u64) + 1 {
                    i64::MIN
                } else {
                    let positive = i64::try_from(*magnitude).map_err(|_| {
                        self.error("integer literal is too large for int64", &expr.range)
                    })?;
                    -positive
                };
                return Ok(self.int_constant(value));
            }
            (UnaryOpKind::Neg, ExprKind::Float(value)) => return Ok(self.float_constant(-value)),
            // PyTorch folds `-1.5j` into the constant `0.-1.5j`.
            (UnaryOpKind::Neg, ExprKind::Imaginary(value)) => {
                return Ok(self.complex_constant(0.0, -value))
            }
            _ => {}
        }
        match op {
            UnaryOpKind::Not => {
                let condition = self.emit_condition(expr)?;
                Ok(match (condition.value, condition.static_value) {
                    (Some(value), _) => value,
                    (_, Some(constant)) => self.bool_constant(constant),
                    (None, None) => self.bool_constant(false),
                })
            }
            UnaryOpKind::Pos => self.emit_expr(operand, None),
            UnaryOpKind::Neg => {
                let value = self.emit_expr(operand, None)?;
                self.location = Some(expr.range.clone());
                self.emit_builtin("aten::neg", &[value], &expr.range)
            }
            UnaryOpKind::Invert => {
                let value = self.emit_expr(operand, None)?;
                self.location = Some(expr.range.clone());
                let name = if *self.graph.value_type(value) == Type::Tensor {
                    "aten::bitwise_not"
                } else {
                    "aten::__invert__"
                };
                self.emit_builtin(name, &[value], &expr.range)
            }
        }
    }

    /// Converts a value to `bool` for a condition (`aten::Bool` for tensors and numbers).
    pub fn as_bool(
        &mut self,
        value: ValueId,
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        match self.graph.value_type(value) {
            Type::Bool => Ok(value),
            Type::Tensor | Type::Int | Type::Float | Type::Number => {
                self.location = Some(range.clone());
                self.emit_builtin("aten::Bool", &[value], range)
            }
            Type::List(_) | Type::Dict(..) | Type::Str => {
                self.location = Some(range.clone());
                let length = self.emit_builtin("aten::len", &[value], range)?;
                let zero = self.int_constant(0);
                self.emit_builtin("aten::ne", &[length, zero], range)
            }
            other => Err(self.error(
                format!(
                    "Could not cast value of type {} to bool",
                    other.annotation_str()
                ),
                range,
            )),
        }
    }

    /// Emits a condition, keeping static answers (`x is None` on a non-optional) and
    /// Optional refinements for the branches.
    pub fn emit_condition(&mut self, expr: &Expr) -> Result<Condition, FrontendError> {
        self.location = Some(expr.range.clone());
        match &expr.kind {
            ExprKind::UnaryOp {
                op: UnaryOpKind::Not,
                operand,
            } => {
                let inner = self.emit_condition(operand)?;
                let value = match inner.value {
                    Some(value) => {
                        self.location = Some(expr.range.clone());
                        Some(self.emit_builtin("aten::__not__", &[value], &expr.range)?)
                    }
                    None => None,
                };
                Ok(Condition {
                    value,
                    static_value: inner.static_value.map(|v| !v),
                    true_refinements: inner.false_refinements,
                    false_refinements: inner.true_refinements,
                })
            }
            ExprKind::BoolOp { op, values } => self.emit_bool_op(expr, *op, values),
            ExprKind::Compare {
                left,
                ops,
                comparators,
            } => {
                if let ([op @ (CmpOpKind::Is | CmpOpKind::IsNot)], [right]) =
                    (ops.as_slice(), comparators.as_slice())
                {
                    return self.emit_is(expr, left, right, *op == CmpOpKind::Is);
                }
                let left_value = self.emit_expr(left, None)?;
                let value = self.emit_chained_comparison(expr, left_value, ops, comparators)?;
                Ok(Condition {
                    value: Some(value),
                    static_value: None,
                    true_refinements: Vec::new(),
                    false_refinements: Vec::new(),
                })
            }
            ExprKind::Call { func, args, .. } if self.is_isinstance_callee(func)? => {
                self.isinstance_condition(expr, args)
            }
            _ => {
                let value = self.emit_expr(expr, None)?;
                let value = self.as_bool(value, &expr.range)?;
                Ok(Condition {
                    value: Some(value),
                    static_value: None,
                    true_refinements: Vec::new(),
                    false_refinements: Vec::new(),
                })
            }
        }
    }

    /// A binary operator on two values, with the special cases PyTorch's emitter has:
    /// tuple concatenation, `%`-formatting of strings and tensor floor division.
    pub(crate) fn emit_binary_operator(
        &mut self,
        op: crate::ast::BinOpKind,
        left: ValueId,
        right: ValueId,
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        use crate::ast::BinOpKind;
        let left_type = self.graph.value_type(left).clone();
        let right_type = self.graph.value_type(right).clone();
        match (op, &left_type, &right_type) {
            (BinOpKind::Add, Type::Tuple(a), Type::Tuple(b)) => {
                let mut items = self.tuple_items(left, a);
                items.extend(self.tuple_items(right, b));
                let types = a.iter().chain(b).cloned().collect();
                Ok(self.insert_one(Prim::TupleConstruct.name(), &items, Type::Tuple(types)))
            }
            (BinOpKind::Mod, Type::Str, _) => {
                self.emit_builtin("aten::percentFormat", &[left, right], range)
            }
            (BinOpKind::FloorDiv, l, r) if l.is_tensor() || r.is_tensor() => {
                self.emit_builtin("aten::floor_divide", &[left, right], range)
            }
            _ => self.emit_builtin(binary_operator_name(op), &[left, right], range),
        }
    }

    /// The elements of a tuple value, as separate values.
    pub(crate) fn tuple_items(&mut self, tuple: ValueId, types: &[Type]) -> Vec<ValueId> {
        let node = self.insert(Prim::TupleUnpack.name(), &[tuple], types);
        self.graph.node_outputs(node).to_vec()
    }

    /// `f"{a} and {b + 1}"` → `aten::format("{} and {}", a, b + 1)`, as PyTorch emits it.
    fn emit_fstring(
        &mut self,
        template: &str,
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        let mut format = String::new();
        let mut fields = Vec::new();
        let mut chars = template.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    format.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    format.push('}');
                }
                '{' => {
                    let mut depth = 0usize;
                    let mut field = String::new();
                    let mut closed = false;
                    for c in chars.by_ref() {
                        match c {
                            '{' | '[' | '(' => depth += 1,
                            ']' | ')' => depth = depth.saturating_sub(1),
                            '}' if depth == 0 => {
                                closed = true;
                                break;
                            }
                            '}' => depth -= 1,
                            _ => {}
                        }
                        field.push(c);
                    }
                    if !closed {
                        return Err(self.error("f-string: expecting '}'", range));
                    }
                    if field.contains('!') || (field.contains(':') && !field.contains('[')) {
                        return Err(self.error(
                            "conversions and format specifications in f-strings are not supported",
                            range,
                        ));
                    }
                    fields.push(field);
                    format.push_str("{}");
                }
                '}' => return Err(self.error("f-string: single '}' is not allowed", range)),
                other => format.push(other),
            }
        }
        let format_value = self.str_constant(&format);
        let mut inputs = vec![format_value];
        for field in fields {
            let parsed = crate::parser::parse_expression_str("<f-string>", field.trim())?;
            inputs.push(self.emit_expr(&parsed, None)?);
        }
        self.location = Some(range.clone());
        self.emit_builtin("aten::format", &inputs, range)
    }

    /// `*t` inside a tuple literal or call: the elements of tuple `t`.
    pub(crate) fn emit_starred(&mut self, inner: &Expr) -> Result<Vec<ValueId>, FrontendError> {
        let value = self.emit_expr(inner, None)?;
        match self.graph.value_type(value).clone() {
            Type::Tuple(types) => {
                self.location = Some(inner.range.clone());
                Ok(self.tuple_items(value, &types))
            }
            other => Err(self.error(
                format!(
                    "starred expressions are only supported on tuples, not {}",
                    other.annotation_str()
                ),
                &inner.range,
            )),
        }
    }

    /// `t[1:]` on a tuple: the bounds must be constants, and the result is a new tuple.
    fn emit_tuple_slice(
        &mut self,
        tuple: ValueId,
        elements: &[Type],
        bounds: [&Option<Box<Expr>>; 3],
        index: &Expr,
    ) -> Result<ValueId, FrontendError> {
        let constant = |bound: &Option<Box<Expr>>| -> Result<Option<i64>, ()> {
            match bound.as_deref().map(|e| &e.kind) {
                None | Some(ExprKind::None) => Ok(None),
                Some(ExprKind::Int(v)) => i64::try_from(*v).map(Some).map_err(|_| ()),
                Some(ExprKind::UnaryOp {
                    op: UnaryOpKind::Neg,
                    operand,
                }) => match operand.kind {
                    ExprKind::Int(v) => i64::try_from(v).map(|v| Some(-v)).map_err(|_| ()),
                    _ => Err(()),
                },
                _ => Err(()),
            }
        };
        let not_constant = || {
            self.error(
                "tuple slice indices must be integer constants",
                &index.range,
            )
        };
        let [lower, upper, step] = bounds;
        let (lower, upper, step) = (
            constant(lower).map_err(|_| not_constant())?,
            constant(upper).map_err(|_| not_constant())?,
            constant(step).map_err(|_| not_constant())?.unwrap_or(1),
        );
        if step == 0 {
            return Err(self.error("slice step cannot be zero", &index.range));
        }
        let length = elements.len() as i64;
        let clamp = |bound: i64, low: i64, high: i64| {
            let bound = if bound < 0 { bound + length } else { bound };
            bound.clamp(low, high)
        };
        let mut positions = Vec::new();
        if step > 0 {
            let start = lower.map_or(0, |b| clamp(b, 0, length));
            let stop = upper.map_or(length, |b| clamp(b, 0, length));
            let mut position = start;
            while position < stop {
                positions.push(position);
                position += step;
            }
        } else {
            let start = lower.map_or(length - 1, |b| clamp(b, -1, length - 1));
            let stop = upper.map_or(-1, |b| clamp(b, -1, length - 1));
            let mut position = start;
            while position > stop {
                positions.push(position);
                position += step;
            }
        }
        let items = self.tuple_items(tuple, elements);
        let selected: Vec<ValueId> = positions.iter().map(|&p| items[p as usize]).collect();
        let types = positions
            .iter()
            .map(|&p| elements[p as usize].clone())
            .collect();
        Ok(self.insert_one(Prim::TupleConstruct.name(), &selected, Type::Tuple(types)))
    }

    /// `a < b < c`: `a < b and b < c`, with `b` evaluated once and each later comparison
    /// (and its operand) evaluated only when the earlier ones hold, in nested `prim::If`s.
    fn emit_chained_comparison(
        &mut self,
        expr: &Expr,
        left_value: ValueId,
        ops: &[CmpOpKind],
        comparators: &[Expr],
    ) -> Result<ValueId, FrontendError> {
        // Iterative (chains can be long): each `prim::If` is emitted inside the true block
        // of the previous one, then the blocks are closed innermost first.
        let mut open_ifs = Vec::new();
        let mut left_value = left_value;
        let mut result = None;
        for (index, (op, comparator)) in ops.iter().zip(comparators).enumerate() {
            let right_value = self.emit_expr(comparator, None)?;
            self.location = Some(expr.range.clone());
            let compared = self.emit_comparison(*op, left_value, right_value, &expr.range)?;
            if index + 1 == ops.len() {
                result = Some(compared);
                break;
            }
            self.location = Some(expr.range.clone());
            let node = self.insert(Prim::If.name(), &[compared], &[Type::Bool]);
            let true_block = self.graph.add_node_block(node);
            let false_block = self.graph.add_node_block(node);
            self.push_frame(false_block);
            let false_value = self.bool_constant(false);
            self.graph.add_block_output(false_block, false_value);
            self.pop_frame();
            self.push_frame(true_block);
            open_ifs.push((node, true_block));
            left_value = right_value;
        }
        let mut result = match result {
            Some(value) => value,
            None => self.bool_constant(true),
        };
        while let Some((node, true_block)) = open_ifs.pop() {
            self.graph.add_block_output(true_block, result);
            self.pop_frame();
            result = self.graph.node_output(node, 0);
        }
        Ok(result)
    }

    /// A chained comparison step (`a < b`), `in` and `not in`.
    fn emit_comparison(
        &mut self,
        op: CmpOpKind,
        left: ValueId,
        right: ValueId,
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        let name = match op {
            CmpOpKind::Eq => "aten::eq",
            CmpOpKind::NotEq => "aten::ne",
            CmpOpKind::Lt => "aten::lt",
            CmpOpKind::Le => "aten::le",
            CmpOpKind::Gt => "aten::gt",
            CmpOpKind::Ge => "aten::ge",
            CmpOpKind::Is => "aten::__is__",
            CmpOpKind::IsNot => "aten::__isnot__",
            CmpOpKind::In | CmpOpKind::NotIn
                if *self.graph.value_type(left) == Type::Str
                    && *self.graph.value_type(right) == Type::Str =>
            {
                // Substring test: PyTorch emits `find(s, sub, 0, len(s)) != -1`.
                let zero = self.int_constant(0);
                let length = self.emit_builtin("aten::len", &[right], range)?;
                let found = self.emit_builtin("aten::find", &[right, left, zero, length], range)?;
                let missing = self.int_constant(-1);
                let name = if op == CmpOpKind::In {
                    "aten::ne"
                } else {
                    "aten::eq"
                };
                return self.emit_builtin(name, &[found, missing], range);
            }
            CmpOpKind::In | CmpOpKind::NotIn => {
                let contains = self.emit_builtin("aten::__contains__", &[right, left], range)?;
                return if op == CmpOpKind::NotIn {
                    self.emit_builtin("aten::__not__", &[contains], range)
                } else {
                    Ok(contains)
                };
            }
        };
        self.emit_builtin(name, &[left, right], range)
    }

    fn emit_is(
        &mut self,
        expr: &Expr,
        left: &Expr,
        right: &Expr,
        is: bool,
    ) -> Result<Condition, FrontendError> {
        let left_value = self.emit_expr(left, None)?;
        let right_value = self.emit_expr(right, None)?;
        let left_type = self.graph.value_type(left_value).clone();
        let right_type = self.graph.value_type(right_value).clone();
        let none_check = match (&left_type, &right_type, &left.kind, &right.kind) {
            (_, Type::NoneType, _, _) => Some((left_type.clone(), left)),
            (Type::NoneType, _, _, _) => Some((right_type.clone(), right)),
            _ => None,
        };
        let mut condition = Condition {
            value: None,
            static_value: None,
            true_refinements: Vec::new(),
            false_refinements: Vec::new(),
        };
        if let Some((checked_type, checked_expr)) = none_check {
            match checked_type {
                Type::NoneType => condition.static_value = Some(is),
                Type::Optional(inner) => {
                    if let ExprKind::Name(name) = &checked_expr.kind {
                        let refinement = vec![(name.clone(), inner.as_ref().clone())];
                        if is {
                            condition.false_refinements = refinement;
                        } else {
                            condition.true_refinements = refinement;
                        }
                    }
                }
                Type::Any => {}
                _ => condition.static_value = Some(!is),
            }
        }
        if condition.static_value.is_none() {
            self.location = Some(expr.range.clone());
            let name = if is {
                "aten::__is__"
            } else {
                "aten::__isnot__"
            };
            condition.value =
                Some(self.emit_builtin(name, &[left_value, right_value], &expr.range)?);
        }
        Ok(condition)
    }

    fn emit_bool_op(
        &mut self,
        expr: &Expr,
        op: BoolOpKind,
        values: &[Expr],
    ) -> Result<Condition, FrontendError> {
        let Some((first, others)) = values.split_first() else {
            return Err(self.error("empty boolean expression", &expr.range));
        };
        let mut condition = self.emit_condition(first)?;
        for operand in others {
            // Static answers short-circuit at compile time, as PyTorch does for `is None`.
            match (op, condition.static_value) {
                (BoolOpKind::And, Some(false)) | (BoolOpKind::Or, Some(true)) => continue,
                (BoolOpKind::And, Some(true)) | (BoolOpKind::Or, Some(false)) => {
                    let refinements = if op == BoolOpKind::And {
                        condition.true_refinements.clone()
                    } else {
                        condition.false_refinements.clone()
                    };
                    let saved = self.frames.last().map(|f| f.vars.clone());
                    self.apply_refinements_for_expression(&refinements, &expr.range)?;
                    let next = self.emit_condition(operand);
                    if let (Some(saved), Some(frame)) = (saved, self.frames.last_mut()) {
                        frame.vars = saved;
                    }
                    condition = next?;
                    continue;
                }
                _ => {}
            }
            let Some(left_value) = condition.value else {
                return Err(self.error(
                    "internal compiler error: condition without a value",
                    &expr.range,
                ));
            };
            self.location = Some(expr.range.clone());
            let node = self.insert(Prim::If.name(), &[left_value], &[Type::Bool]);
            let true_block = self.graph.add_node_block(node);
            let false_block = self.graph.add_node_block(node);
            let (evaluate_block, constant_block, refinements) = if op == BoolOpKind::And {
                (true_block, false_block, condition.true_refinements.clone())
            } else {
                (false_block, true_block, condition.false_refinements.clone())
            };
            self.push_frame(constant_block);
            let constant = self.bool_constant(op == BoolOpKind::Or);
            self.graph.add_block_output(constant_block, constant);
            self.pop_frame();
            self.push_frame(evaluate_block);
            self.apply_refinements_for_expression(&refinements, &expr.range)?;
            let right = self.emit_condition(operand)?;
            let right_value = match (right.value, right.static_value) {
                (Some(value), _) => value,
                (None, Some(constant)) => self.bool_constant(constant),
                (None, None) => self.bool_constant(false),
            };
            self.graph.add_block_output(evaluate_block, right_value);
            self.pop_frame();
            let mut true_refinements = Vec::new();
            let mut false_refinements = Vec::new();
            if op == BoolOpKind::And {
                true_refinements.extend(condition.true_refinements.iter().cloned());
                true_refinements.extend(right.true_refinements);
            } else {
                false_refinements.extend(condition.false_refinements.iter().cloned());
                false_refinements.extend(right.false_refinements);
            }
            condition = Condition {
                value: Some(self.graph.node_output(node, 0)),
                static_value: None,
                true_refinements,
                false_refinements,
            };
        }
        Ok(condition)
    }

    fn apply_refinements_for_expression(
        &mut self,
        refinements: &[(String, Type)],
        _range: &SourceRange,
    ) -> Result<(), FrontendError> {
        for (name, ty) in refinements {
            if let Some(value) = self.lookup(name) {
                let cast = self.insert_one(Prim::UncheckedCast.name(), &[value], ty.clone());
                if let Some(frame) = self.frames.last_mut() {
                    frame.vars.insert(name.clone(), cast);
                }
            }
        }
        Ok(())
    }

    fn emit_if_expression(
        &mut self,
        expr: &Expr,
        test: &Expr,
        body: &Expr,
        orelse: &Expr,
        hint: Option<&Type>,
    ) -> Result<ValueId, FrontendError> {
        let condition = self.emit_condition(test)?;
        if let Some(taken) = condition.static_value {
            return self.emit_expr(if taken { body } else { orelse }, hint);
        }
        let Some(condition_value) = condition.value else {
            return Err(self.error(
                "internal compiler error: condition without a value",
                &expr.range,
            ));
        };
        self.location = Some(expr.range.clone());
        let node = self.insert(Prim::If.name(), &[condition_value], &[]);
        let true_block = self.graph.add_node_block(node);
        let false_block = self.graph.add_node_block(node);
        let mut outputs = Vec::new();
        for (block, branch, refinements) in [
            (true_block, body, &condition.true_refinements),
            (false_block, orelse, &condition.false_refinements),
        ] {
            self.push_frame(block);
            self.apply_refinements_for_expression(refinements, &expr.range)?;
            let value = self.emit_expr(branch, hint)?;
            self.graph.add_block_output(block, value);
            outputs.push(value);
            self.pop_frame();
        }
        let (t, f) = (
            self.graph.value_type(outputs[0]).clone(),
            self.graph.value_type(outputs[1]).clone(),
        );
        let ty = unify_types(&t, &f).ok_or_else(|| {
            self.error(
                format!(
                    "Ternary expression branches have different types: true branch is {} and false branch is {}",
                    t.annotation_str(),
                    f.annotation_str()
                ),
                &expr.range,
            )
        })?;
        Ok(self.graph.add_node_output(node, ty))
    }

    fn emit_attribute(
        &mut self,
        expr: &Expr,
        object_expr: &Expr,
        name: &str,
    ) -> Result<ValueId, FrontendError> {
        if let Some(dotted) = expr.dotted_name() {
            let root = dotted.split('.').next().unwrap_or("");
            if self.lookup(root).is_none() {
                if let Some(index) = dotted.strip_prefix("CONSTANTS.c") {
                    let index: usize = index.parse().map_err(|_| {
                        self.error(format!("unknown constant {dotted}"), &expr.range)
                    })?;
                    let Some((value, ty)) = self.context.unit.constant(index) else {
                        return Err(self.error(format!("unknown constant {dotted}"), &expr.range));
                    };
                    return Ok(self.constant(value, ty));
                }
                match dotted.as_str() {
                    "math.inf" => return Ok(self.float_constant(f64::INFINITY)),
                    "math.nan" => return Ok(self.float_constant(f64::NAN)),
                    "math.pi" => return Ok(self.float_constant(std::f64::consts::PI)),
                    "math.e" => return Ok(self.float_constant(std::f64::consts::E)),
                    "math.tau" => return Ok(self.float_constant(std::f64::consts::TAU)),
                    "torch.contiguous_format" => return Ok(self.int_constant(0)),
                    "torch.preserve_format" => return Ok(self.int_constant(1)),
                    "torch.channels_last" => return Ok(self.int_constant(2)),
                    "torch.strided" => return Ok(self.int_constant(0)),
                    _ => {}
                }
                if let Some(dtype) = dotted.strip_prefix("torch.").and_then(dtype_constant) {
                    return Ok(self.int_constant(dtype));
                }
                if let Some(sugared) = self.resolve_sugared(object_expr)? {
                    return self.emit_sugared_attribute(&sugared, name, &expr.range);
                }
                if let Some(sugared) = self.resolve_sugared(expr)? {
                    return self.emit_sugared_value(&sugared, &expr.range);
                }
                if !matches!(object_expr.kind, ExprKind::Attribute { .. }) {
                    return Err(self.error(format!("undefined value {dotted}"), &expr.range));
                }
            }
        }
        let object = self.emit_expr(object_expr, None)?;
        self.location = Some(expr.range.clone());
        let object_type = self.graph.value_type(object).clone();
        match &object_type {
            Type::Class(class) => {
                if self.context.unit.is_property(class.qualified_name(), name) {
                    let class_name = class.qualified_name().to_string();
                    return self.emit_method_call(object, &class_name, name, &[], &[], &expr.range);
                }
                self.emit_get_attr(object, class.qualified_name(), name, &expr.range)
            }
            Type::Enum(enum_name) => self.emit_enum_attribute(object, enum_name, name, &expr.range),
            Type::NamedTuple(named) => {
                let Some(index) = named.fields.iter().position(|(field, _)| field == name) else {
                    return Err(self.error(
                        format!(
                            "'{}' object has no attribute or method '{name}'",
                            object_type.annotation_str()
                        ),
                        &expr.range,
                    ));
                };
                let element_type = named.fields[index].1.clone();
                let index_value = self.int_constant(index as i64);
                self.location = Some(expr.range.clone());
                Ok(self.insert_one(
                    Prim::TupleIndex.name(),
                    &[object, index_value],
                    element_type,
                ))
            }
            Type::Tensor => {
                let (kind, ty) = match name {
                    "shape" => return self.emit_builtin("aten::size", &[object], &expr.range),
                    "dtype" => ("prim::dtype", Type::Int),
                    "device" => ("prim::device", Type::Device),
                    "is_cuda" => ("prim::is_cuda", Type::Bool),
                    "requires_grad" => ("prim::requires_grad", Type::Bool),
                    // `tensor.grad` (None when undefined) and `is_leaf`, as PyTorch compiles them.
                    "grad" => ("prim::grad", Type::Tensor),
                    "is_leaf" => return self.emit_builtin("aten::is_leaf", &[object], &expr.range),
                    "ndim" => return self.emit_builtin("aten::dim", &[object], &expr.range),
                    // The properties PyTorch's frontend maps to builtins (builtinProperties
                    // in torch/csrc/jit/frontend/sugared_value.cpp).
                    "T" => return self.emit_builtin("aten::numpy_T", &[object], &expr.range),
                    "H" => return self.emit_builtin("aten::matrix_H", &[object], &expr.range),
                    "mT" => return self.emit_builtin("aten::mT", &[object], &expr.range),
                    "mH" => return self.emit_builtin("aten::mH", &[object], &expr.range),
                    "real" => return self.emit_builtin("aten::real", &[object], &expr.range),
                    "imag" => return self.emit_builtin("aten::imag", &[object], &expr.range),
                    "data" => ("prim::data", Type::Tensor),
                    "layout" => ("prim::layout", Type::Int),
                    "name" => ("prim::name", Type::Optional(Box::new(Type::Str))),
                    "itemsize" => ("prim::itemsize", Type::Int),
                    "nbytes" => ("prim::nbytes", Type::Int),
                    "is_cpu" | "is_xpu" | "is_mps" | "is_ipu" | "is_maia" | "is_mtia"
                    | "is_xla" | "is_vulkan" | "is_sparse" | "is_sparse_csr" | "is_quantized"
                    | "is_meta" | "is_mkldnn" | "is_nested" => {
                        let kind = format!("prim::{name}");
                        return Ok(self.insert_one(&kind, &[object], Type::Bool));
                    }
                    _ => {
                        return Err(self.error(
                            format!("Tensor object has no attribute '{name}'"),
                            &expr.range,
                        ));
                    }
                };
                Ok(self.insert_one(kind, &[object], ty))
            }
            // `device.type` and `device.index`, as PyTorch compiles them.
            Type::Device if name == "type" => {
                Ok(self.insert_one("prim::type", &[object], Type::Str))
            }
            Type::Device if name == "index" => Ok(self.insert_one(
                "prim::index",
                &[object],
                Type::Optional(Box::new(Type::Int)),
            )),
            // PyTorch's SimpleValue::attr message, period included.
            other => Err(self.error(
                format!(
                    "'{}' object has no attribute or method '{name}'.",
                    other.annotation_str()
                ),
                &expr.range,
            )),
        }
    }

    /// `obj.name` on a class-typed value: a class constant or `prim::GetAttr`.
    pub fn emit_get_attr(
        &mut self,
        object: ValueId,
        class_name: &str,
        name: &str,
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        let class = self.context.unit.resolve_class(class_name)?;
        if let Some(attribute) = class.attribute(name) {
            let node = self.insert(
                Prim::GetAttr.name(),
                &[object],
                std::slice::from_ref(&attribute.ty),
            );
            self.graph
                .set_attribute(node, "name", AttributeValue::Str(name.to_string()));
            return Ok(self.graph.node_output(node, 0));
        }
        if let Some(constant) = self.context.unit.class_constant(class_name, name) {
            return Ok(self.emit_constant_value(&constant));
        }
        Err(self.error(
            format!("Module '{}' has no attribute '{name}'", class.short_name()),
            range,
        ))
    }

    fn emit_constant_value(
        &mut self,
        constant: &crate::compilation_unit::ConstantValue,
    ) -> ValueId {
        match constant {
            crate::compilation_unit::ConstantValue::Scalar(value, ty) => {
                self.constant(value.clone(), ty.clone())
            }
            crate::compilation_unit::ConstantValue::Tuple(items) => {
                let values: Vec<ValueId> = items
                    .iter()
                    .map(|item| self.emit_constant_value(item))
                    .collect();
                self.insert_one(Prim::TupleConstruct.name(), &values, constant.ty())
            }
        }
    }

    fn emit_subscript(
        &mut self,
        expr: &Expr,
        value_expr: &Expr,
        index: &Expr,
    ) -> Result<ValueId, FrontendError> {
        let value = self.emit_expr(value_expr, None)?;
        let value_type = self.graph.value_type(value).clone();
        self.location = Some(expr.range.clone());
        let tuple_elements = match &value_type {
            Type::NamedTuple(named) => Some(named.fields.iter().map(|(_, t)| t.clone()).collect()),
            Type::Tuple(elements) => Some(elements.clone()),
            _ => None,
        };
        match &value_type {
            Type::Tuple(_) | Type::NamedTuple(_) => {
                let elements = tuple_elements.unwrap_or_default();
                let constant_index = match &index.kind {
                    ExprKind::Int(v) => i64::try_from(*v).ok(),
                    ExprKind::UnaryOp {
                        op: UnaryOpKind::Neg,
                        operand,
                    } => match operand.kind {
                        ExprKind::Int(v) => i64::try_from(v).ok().map(|v| -v),
                        _ => None,
                    },
                    _ => None,
                };
                if let ExprKind::Slice { lower, upper, step } = &index.kind {
                    return self.emit_tuple_slice(value, &elements, [lower, upper, step], index);
                }
                let Some(raw) = constant_index else {
                    return Err(self.error("tuple indices must be integer constants", &index.range));
                };
                let length = elements.len() as i64;
                let normalized = if raw < 0 { raw + length } else { raw };
                if normalized < 0 || normalized >= length {
                    return Err(self.error(
                        format!(
                            "Tuple index out of range. Tuple is length {length} and index is {raw}"
                        ),
                        &index.range,
                    ));
                }
                let element_type = elements[normalized as usize].clone();
                let index_value = self.int_constant(normalized);
                self.location = Some(expr.range.clone());
                Ok(self.insert_one(Prim::TupleIndex.name(), &[value, index_value], element_type))
            }
            Type::Tensor => self.emit_tensor_indexing(value, index, &expr.range),
            Type::List(_) | Type::Str => {
                if let ExprKind::Slice { lower, upper, step } = &index.kind {
                    let mut inputs = vec![value];
                    for bound in [lower, upper] {
                        inputs.push(match bound {
                            Some(bound) => self.emit_expr(bound, None)?,
                            None => self.none_constant(),
                        });
                    }
                    inputs.push(match step {
                        Some(step) => self.emit_expr(step, None)?,
                        None => self.int_constant(1),
                    });
                    self.location = Some(expr.range.clone());
                    return self.emit_builtin("aten::slice", &inputs, &expr.range);
                }
                let index_value = self.emit_expr(index, None)?;
                self.location = Some(expr.range.clone());
                self.emit_builtin("aten::__getitem__", &[value, index_value], &expr.range)
            }
            Type::Dict(..) => {
                let index_value = self.emit_expr(index, None)?;
                self.location = Some(expr.range.clone());
                self.emit_builtin("aten::__getitem__", &[value, index_value], &expr.range)
            }
            Type::Class(class) => {
                let class_name = class.qualified_name().to_string();
                let index_value = self.emit_expr(index, None)?;
                self.location = Some(expr.range.clone());
                self.emit_method_call(
                    value,
                    &class_name,
                    "__getitem__",
                    &[(index_value, index.range.clone())],
                    &[],
                    &expr.range,
                )
            }
            other => Err(self.error(
                format!("'{}' object is not subscriptable", other.annotation_str()),
                &value_expr.range,
            )),
        }
    }

    /// `x[0]`, `x[1:3]`, `x[:, 0]`, `x[None]`, `x[..., 0]`, `x[mask]`: select / slice /
    /// unsqueeze per dimension, then `aten::index` with the tensor indices.
    pub fn emit_tensor_indexing(
        &mut self,
        tensor: ValueId,
        index: &Expr,
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        let (current, tensor_indices) = self.emit_tensor_index_parts(tensor, index, range)?;
        if tensor_indices.is_empty() {
            return Ok(current);
        }
        let indices = self.optional_tensor_list(&tensor_indices, range);
        self.location = Some(range.clone());
        self.emit_builtin("aten::index", &[current, indices], range)
    }

    /// `List[Optional[Tensor]]` of tensor indices, `None` for dimensions not indexed.
    pub(crate) fn optional_tensor_list(
        &mut self,
        indices: &[Option<ValueId>],
        range: &SourceRange,
    ) -> ValueId {
        let element = Type::optional(Type::Tensor);
        let mut values = Vec::new();
        for index in indices {
            values.push(match index {
                Some(value) => *value,
                None => self.constant(None, element.clone()),
            });
        }
        self.location = Some(range.clone());
        self.insert_one(Prim::ListConstruct.name(), &values, Type::list(element))
    }

    /// Applies the slices, selects and `None`s of an index expression; returns the view and
    /// the tensor indices still to apply (by dimension of the view).
    pub(crate) fn emit_tensor_index_parts(
        &mut self,
        tensor: ValueId,
        index: &Expr,
        range: &SourceRange,
    ) -> Result<(ValueId, Vec<Option<ValueId>>), FrontendError> {
        let items: Vec<&Expr> = match &index.kind {
            ExprKind::Tuple(items) => items.iter().collect(),
            _ => vec![index],
        };
        if items
            .iter()
            .filter(|item| matches!(item.kind, ExprKind::Ellipsis))
            .count()
            > 1
        {
            return Err(self.error(
                "an index can only have a single ellipsis ('...')",
                &index.range,
            ));
        }
        let mut current = tensor;
        let mut tensor_indices: Vec<Option<ValueId>> = Vec::new();
        let mut dim: i64 = 0;
        for (position, item) in items.iter().enumerate() {
            match &item.kind {
                ExprKind::Slice { lower, upper, step } => {
                    let dim_value = self.int_constant(dim);
                    let start = match lower {
                        Some(e) => self.emit_expr(e, None)?,
                        None => self.none_constant(),
                    };
                    let end = match upper {
                        Some(e) => self.emit_expr(e, None)?,
                        None => self.none_constant(),
                    };
                    let step = match step {
                        Some(e) => self.emit_expr(e, None)?,
                        None => self.int_constant(1),
                    };
                    self.location = Some(range.clone());
                    current = self.emit_builtin(
                        "aten::slice",
                        &[current, dim_value, start, end, step],
                        range,
                    )?;
                    dim += 1;
                }
                ExprKind::None => {
                    if dim < 0 {
                        return Err(self.error(
                            "None after '...' in tensor indexing is not supported yet",
                            &item.range,
                        ));
                    }
                    let dim_value = self.int_constant(dim);
                    self.location = Some(range.clone());
                    current = self.emit_builtin("aten::unsqueeze", &[current, dim_value], range)?;
                    dim += 1;
                }
                ExprKind::Ellipsis => {
                    // The remaining items index the last dimensions: count them from the end.
                    let remaining = items[position + 1..]
                        .iter()
                        .filter(|item| !matches!(item.kind, ExprKind::None))
                        .count() as i64;
                    if remaining > 0 && !tensor_indices.is_empty() {
                        return Err(self.error(
                            "tensor indices before '...' are not supported yet",
                            &item.range,
                        ));
                    }
                    dim = -remaining;
                }
                _ => {
                    let index_value = self.emit_expr(item, None)?;
                    let index_type = self.graph.value_type(index_value).clone();
                    if index_type.is_tensor() {
                        if dim < 0 {
                            return Err(self.error(
                                "tensor indices after '...' are not supported yet",
                                &item.range,
                            ));
                        }
                        while tensor_indices.len() < dim as usize {
                            tensor_indices.push(None);
                        }
                        tensor_indices.push(Some(index_value));
                        dim += 1;
                        continue;
                    }
                    if index_type != Type::Int {
                        return Err(self.error(
                            format!(
                                "indexing a tensor with a value of type {} is not supported yet",
                                index_type.annotation_str()
                            ),
                            &item.range,
                        ));
                    }
                    let dim_value = self.int_constant(dim);
                    self.location = Some(range.clone());
                    current = self.emit_builtin(
                        "aten::select",
                        &[current, dim_value, index_value],
                        range,
                    )?;
                    // Selecting removes the dimension; counted from the end, the next item's
                    // dimension moves up by one.
                    if dim < 0 {
                        dim += 1;
                    }
                }
            }
        }
        Ok((current, tensor_indices))
    }
}
