//! `for` loops and comprehensions. The iterable (`range(...)`, a list, string, tensor or
//! dict, `enumerate(...)`, `zip(...)`) becomes a trip count computed before a `prim::Loop`
//! and an element computed from the iteration counter inside it. Loops over tuples are
//! unrolled, since each element may have a different type. Comprehensions are loops that
//! append to (or set items of) a container created before them.

use ferrojit_ir::Prim;
use ferrojit_ir::{Type, ValueId};

use super::statements::contains_return;
use super::types::unify_types;
use super::Emitter;
use crate::ast::{Comprehension, Expr, ExprKind, For};
use crate::error::FrontendError;
use crate::source::SourceRange;

/// What a `for` iterates over, with the values computed before the loop.
enum Iterable {
    Range {
        trip: ValueId,
        start: Option<ValueId>,
        step: Option<ValueId>,
    },
    /// A list, string or dict's keys (`__getitem__`), or a tensor (`select` on dim 0).
    Sequence {
        value: ValueId,
        tensor: bool,
    },
    Enumerate {
        inner: Box<Iterable>,
        start: Option<ValueId>,
    },
    Zip(Vec<Iterable>),
    /// A tuple: the loop is unrolled.
    Tuple {
        value: ValueId,
        types: Vec<Type>,
    },
}

/// The most `for` (or `if`) clauses one comprehension may have: each nests emission.
const MAX_COMPREHENSION_DEPTH: usize = 64;

type BodyEmitter<'b, 'a> = &'b mut dyn FnMut(&mut Emitter<'a>) -> Result<(), FrontendError>;

impl<'a> Emitter<'a> {
    fn is_builtin_name(&self, func: &Expr, name: &str) -> bool {
        matches!(&func.kind, ExprKind::Name(n) if n == name) && self.lookup(name).is_none()
    }

    fn plan_iterable(&mut self, iter: &Expr) -> Result<Iterable, FrontendError> {
        if let ExprKind::Call {
            func,
            args,
            keywords,
        } = &iter.kind
        {
            if self.is_builtin_name(func, "range") {
                return self.plan_range(iter, args, keywords);
            }
            if self.is_builtin_name(func, "enumerate") {
                let (Some(inner), true) = (args.first(), args.len() <= 2) else {
                    return Err(self.error("enumerate expects 1 or 2 arguments", &iter.range));
                };
                let start_expr = args.get(1).or_else(|| {
                    keywords
                        .iter()
                        .find(|k| k.name.as_ref().is_some_and(|n| n.name == "start"))
                        .map(|k| &k.value)
                });
                let inner = self.plan_iterable(inner)?;
                if matches!(inner, Iterable::Tuple { .. }) {
                    return Err(self.error("enumerate over a tuple is not supported", &iter.range));
                }
                let start = match start_expr {
                    Some(expr) => Some(self.emit_expr(expr, None)?),
                    None => None,
                };
                return Ok(Iterable::Enumerate {
                    inner: Box::new(inner),
                    start,
                });
            }
            if self.is_builtin_name(func, "zip") {
                if args.is_empty() {
                    return Err(self.error("zip expects at least one argument", &iter.range));
                }
                let mut parts = Vec::new();
                for arg in args {
                    let part = self.plan_iterable(arg)?;
                    if matches!(part, Iterable::Tuple { .. }) {
                        return Err(self.error("zip over a tuple is not supported", &arg.range));
                    }
                    parts.push(part);
                }
                return Ok(Iterable::Zip(parts));
            }
        }
        let value = self.emit_expr(iter, None)?;
        self.location = Some(iter.range.clone());
        match self.graph.value_type(value).clone() {
            Type::List(_) | Type::Str => Ok(Iterable::Sequence {
                value,
                tensor: false,
            }),
            Type::Tensor | Type::RefinedTensor(_) => Ok(Iterable::Sequence {
                value,
                tensor: true,
            }),
            Type::Dict(..) => {
                let keys = self.emit_builtin("aten::keys", &[value], &iter.range)?;
                Ok(Iterable::Sequence {
                    value: keys,
                    tensor: false,
                })
            }
            Type::Tuple(types) => Ok(Iterable::Tuple { value, types }),
            Type::NamedTuple(named) => Ok(Iterable::Tuple {
                value,
                types: named.fields.iter().map(|(_, t)| t.clone()).collect(),
            }),
            other => Err(self.error(
                format!("'{}' object is not iterable", other.annotation_str()),
                &iter.range,
            )),
        }
    }

    fn plan_range(
        &mut self,
        iter: &Expr,
        args: &[Expr],
        keywords: &[crate::ast::Keyword],
    ) -> Result<Iterable, FrontendError> {
        if !keywords.is_empty() || args.is_empty() || args.len() > 3 {
            return Err(self.error("range expects 1 to 3 positional arguments", &iter.range));
        }
        let mut values = Vec::new();
        for arg in args {
            let value = self.emit_expr(arg, None)?;
            if *self.graph.value_type(value) != Type::Int {
                return Err(self.error(
                    format!(
                        "range expected an int argument but found {}",
                        self.graph.value_type(value).annotation_str()
                    ),
                    &arg.range,
                ));
            }
            values.push(value);
        }
        if values.len() == 1 {
            return Ok(Iterable::Range {
                trip: values[0],
                start: None,
                step: None,
            });
        }
        self.location = Some(iter.range.clone());
        let step = match values.get(2) {
            Some(&step) => step,
            None => self.int_constant(1),
        };
        let trip = self.emit_builtin(
            "aten::__range_length",
            &[values[0], values[1], step],
            &iter.range,
        )?;
        Ok(Iterable::Range {
            trip,
            start: Some(values[0]),
            step: Some(step),
        })
    }

    fn trip_count(
        &mut self,
        iterable: &Iterable,
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        self.location = Some(range.clone());
        match iterable {
            Iterable::Range { trip, .. } => Ok(*trip),
            Iterable::Sequence { value, .. } => self.emit_builtin("aten::len", &[*value], range),
            Iterable::Enumerate { inner, .. } => self.trip_count(inner, range),
            Iterable::Zip(parts) => {
                let mut trip: Option<ValueId> = None;
                for part in parts {
                    let count = self.trip_count(part, range)?;
                    trip = Some(match trip {
                        None => count,
                        Some(previous) => {
                            self.emit_builtin("prim::min", &[previous, count], range)?
                        }
                    });
                }
                trip.ok_or_else(|| self.error("zip expects at least one argument", range))
            }
            Iterable::Tuple { types, .. } => Ok(self.int_constant(types.len() as i64)),
        }
    }

    fn loop_element(
        &mut self,
        iterable: &Iterable,
        iteration: ValueId,
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        self.location = Some(range.clone());
        match iterable {
            Iterable::Range { start, step, .. } => match (start, step) {
                (Some(start), Some(step)) => {
                    self.emit_builtin("aten::__derive_index", &[iteration, *start, *step], range)
                }
                _ => Ok(iteration),
            },
            Iterable::Sequence { value, tensor } => {
                if *tensor {
                    let zero = self.int_constant(0);
                    self.emit_builtin("aten::select", &[*value, zero, iteration], range)
                } else {
                    self.emit_builtin("aten::__getitem__", &[*value, iteration], range)
                }
            }
            Iterable::Enumerate { inner, start } => {
                let index = match start {
                    Some(start) => self.emit_builtin("aten::add", &[iteration, *start], range)?,
                    None => iteration,
                };
                let element = self.loop_element(inner, iteration, range)?;
                Ok(self.tuple_of(&[index, element]))
            }
            Iterable::Zip(parts) => {
                let mut elements = Vec::new();
                for part in parts {
                    elements.push(self.loop_element(part, iteration, range)?);
                }
                Ok(self.tuple_of(&elements))
            }
            Iterable::Tuple { .. } => Err(self.error(
                "internal compiler error: tuples are iterated by unrolling",
                range,
            )),
        }
    }

    fn tuple_of(&mut self, values: &[ValueId]) -> ValueId {
        let types = values
            .iter()
            .map(|v| self.graph.value_type(*v).clone())
            .collect();
        self.insert_one(Prim::TupleConstruct.name(), values, Type::Tuple(types))
    }

    pub(crate) fn emit_for(
        &mut self,
        stmt_for: &For,
        range: &SourceRange,
    ) -> Result<(), FrontendError> {
        self.check_loop_body(&stmt_for.body, &stmt_for.orelse, range)?;
        let target = &stmt_for.target;
        let iterable = self.plan_iterable(&stmt_for.iter)?;
        if let Iterable::Tuple { value, types } = iterable {
            return self.emit_unrolled_for(stmt_for, value, &types, range);
        }
        let trip = self.trip_count(&iterable, range)?;
        let start_condition = self.bool_constant(true);
        self.emit_loop(
            trip,
            start_condition,
            Some(target),
            &stmt_for.body,
            range,
            &mut |emitter, iteration| {
                let element = emitter.loop_element(&iterable, iteration, range)?;
                emitter.assign_to_target(target, element)
            },
            None,
        )
    }

    /// `for v in (a, b, 1.5):` runs the body once per element, as PyTorch unrolls it.
    fn emit_unrolled_for(
        &mut self,
        stmt_for: &For,
        tuple: ValueId,
        types: &[Type],
        range: &SourceRange,
    ) -> Result<(), FrontendError> {
        if contains_return(&stmt_for.body)
            || super::statements::has_break_or_continue(&stmt_for.body)
        {
            return Err(self.error(
                "return, break and continue in a loop over a tuple are not supported yet",
                range,
            ));
        }
        for (index, ty) in types.iter().enumerate() {
            self.location = Some(range.clone());
            let position = self.int_constant(index as i64);
            let element = self.insert_one(Prim::TupleIndex.name(), &[tuple, position], ty.clone());
            self.assign_unrolled_target(&stmt_for.target, element)?;
            match self.emit_statements(&stmt_for.body, &[], false)? {
                super::Exit::FallsThrough => {}
                _ => {
                    return Err(
                        self.error("a loop over a tuple must not leave its body early", range)
                    )
                }
            }
        }
        Ok(())
    }

    /// Each unrolled iteration may bind the target to a value of a different type.
    fn assign_unrolled_target(
        &mut self,
        target: &Expr,
        value: ValueId,
    ) -> Result<(), FrontendError> {
        match &target.kind {
            ExprKind::Name(name) => {
                if let Some(frame) = self.frames.last_mut() {
                    frame.vars.insert(name.clone(), value);
                    frame.declared.remove(name);
                }
                Ok(())
            }
            _ => self.assign_to_target(target, value),
        }
    }

    // ----- comprehensions -------------------------------------------------------------------

    /// `[elt for x in xs if c]`.
    pub(crate) fn emit_list_comprehension(
        &mut self,
        expr: &Expr,
        elt: &Expr,
        generators: &[Comprehension],
        hint: Option<&Type>,
    ) -> Result<ValueId, FrontendError> {
        let element_hint = match hint {
            Some(Type::List(element)) => Some(element.as_ref().clone()),
            _ => None,
        };
        self.location = Some(expr.range.clone());
        // The element type is known once `elt` is emitted inside the loop; until then the
        // list is typed `List[Any]`.
        let placeholder = Type::list(element_hint.clone().unwrap_or(Type::Any));
        let list = self.insert_one(Prim::ListConstruct.name(), &[], placeholder);
        let mut element_type: Option<Type> = None;
        let range = expr.range.clone();
        self.emit_comprehension(generators, &range, &mut |emitter| {
            let value = emitter.emit_expr(elt, element_hint.as_ref())?;
            let ty = emitter.graph.value_type(value).clone();
            element_type = Some(match element_type.take() {
                None => ty,
                Some(previous) => unify_types(&previous, &ty).unwrap_or(previous),
            });
            emitter.location = Some(range.clone());
            emitter.emit_builtin("aten::append", &[list, value], &range)?;
            Ok(())
        })?;
        let element = element_hint.or(element_type).unwrap_or(Type::Tensor);
        self.graph.set_value_type(list, Type::list(element));
        Ok(list)
    }

    /// `{k: v for x in xs if c}`.
    pub(crate) fn emit_dict_comprehension(
        &mut self,
        expr: &Expr,
        key: &Expr,
        value: &Expr,
        generators: &[Comprehension],
        hint: Option<&Type>,
    ) -> Result<ValueId, FrontendError> {
        let (key_hint, value_hint) = match hint {
            Some(Type::Dict(k, v)) => (Some(k.as_ref().clone()), Some(v.as_ref().clone())),
            _ => (None, None),
        };
        self.location = Some(expr.range.clone());
        let placeholder = Type::dict(
            key_hint.clone().unwrap_or(Type::Any),
            value_hint.clone().unwrap_or(Type::Any),
        );
        let dict = self.insert_one(Prim::DictConstruct.name(), &[], placeholder);
        let mut key_type: Option<Type> = None;
        let mut value_type: Option<Type> = None;
        let range = expr.range.clone();
        self.emit_comprehension(generators, &range, &mut |emitter| {
            let k = emitter.emit_expr(key, key_hint.as_ref())?;
            let v = emitter.emit_expr(value, value_hint.as_ref())?;
            key_type = Some(emitter.graph.value_type(k).clone());
            value_type = Some(emitter.graph.value_type(v).clone());
            emitter.location = Some(range.clone());
            emitter.emit_builtin("aten::_set_item", &[dict, k, v], &range)?;
            Ok(())
        })?;
        let ty = Type::dict(
            key_hint.or(key_type).unwrap_or(Type::Str),
            value_hint.or(value_type).unwrap_or(Type::Tensor),
        );
        self.graph.set_value_type(dict, ty);
        Ok(dict)
    }

    /// Emits the loops (and filters) of `generators`, running `body` innermost.
    fn emit_comprehension(
        &mut self,
        generators: &[Comprehension],
        range: &SourceRange,
        body: BodyEmitter<'_, 'a>,
    ) -> Result<(), FrontendError> {
        let Some((first, rest)) = generators.split_first() else {
            return body(self);
        };
        // Each generator nests a loop (and a few Rust frames): bound the depth.
        if generators.len() > MAX_COMPREHENSION_DEPTH {
            return Err(self.error(
                format!("comprehensions with more than {MAX_COMPREHENSION_DEPTH} 'for' or 'if' clauses are not supported"),
                range,
            ));
        }
        let iterable = self.plan_iterable(&first.iter)?;
        if matches!(iterable, Iterable::Tuple { .. }) {
            return Err(self.error(
                "comprehensions over tuples are not supported",
                &first.iter.range,
            ));
        }
        let trip = self.trip_count(&iterable, range)?;
        let start_condition = self.bool_constant(true);
        self.emit_loop(
            trip,
            start_condition,
            None,
            &[],
            range,
            &mut |emitter, iteration| {
                let element = emitter.loop_element(&iterable, iteration, range)?;
                emitter.bind_comprehension_target(&first.target, element)?;
                emitter.emit_comprehension_filters(&first.ifs, range, &mut |inner| {
                    inner.emit_comprehension(rest, range, &mut *body)
                })
            },
            None,
        )
    }

    /// Comprehension variables are local to the comprehension (they may shadow a variable
    /// of another type) and are not carried out of the loop.
    fn bind_comprehension_target(
        &mut self,
        target: &Expr,
        value: ValueId,
    ) -> Result<(), FrontendError> {
        match &target.kind {
            ExprKind::Name(name) => {
                if super::meaningful_name(name) && self.graph.debug_name(value).is_none() {
                    self.graph.set_debug_name(value, name);
                }
                if let Some(frame) = self.frames.last_mut() {
                    frame.vars.insert(name.clone(), value);
                    frame.declared.remove(name);
                }
                Ok(())
            }
            ExprKind::Tuple(targets) | ExprKind::List(targets) => {
                let ty = self.graph.value_type(value).clone();
                let Type::Tuple(types) = ty else {
                    return Err(self.error(
                        format!("cannot unpack a value of type {}", ty.annotation_str()),
                        &target.range,
                    ));
                };
                if types.len() != targets.len() {
                    return Err(self.error(
                        format!(
                            "too many values to unpack: need {} but found {}",
                            targets.len(),
                            types.len()
                        ),
                        &target.range,
                    ));
                }
                self.location = Some(target.range.clone());
                let node = self.insert(Prim::TupleUnpack.name(), &[value], &types);
                let items = self.graph.node_outputs(node).to_vec();
                for (target, item) in targets.iter().zip(items) {
                    self.bind_comprehension_target(target, item)?;
                }
                Ok(())
            }
            _ => Err(self.error("unsupported comprehension target", &target.range)),
        }
    }

    fn emit_comprehension_filters(
        &mut self,
        ifs: &[Expr],
        range: &SourceRange,
        then: BodyEmitter<'_, 'a>,
    ) -> Result<(), FrontendError> {
        let Some((first, rest)) = ifs.split_first() else {
            return then(self);
        };
        if ifs.len() > MAX_COMPREHENSION_DEPTH {
            return Err(self.error(
                format!("comprehensions with more than {MAX_COMPREHENSION_DEPTH} 'for' or 'if' clauses are not supported"),
                range,
            ));
        }
        let condition = self.emit_condition(first)?;
        match (condition.static_value, condition.value) {
            (Some(false), _) => Ok(()),
            (Some(true), _) | (None, None) => {
                self.apply_refinements(&condition.true_refinements, range)?;
                self.emit_comprehension_filters(rest, range, then)
            }
            (None, Some(value)) => {
                self.location = Some(first.range.clone());
                let node = self.insert(Prim::If.name(), &[value], &[]);
                let true_block = self.graph.add_node_block(node);
                let _false_block = self.graph.add_node_block(node);
                self.push_frame(true_block);
                let result = self
                    .apply_refinements(&condition.true_refinements, range)
                    .and_then(|()| self.emit_comprehension_filters(rest, range, then));
                self.pop_frame();
                result
            }
        }
    }
}
