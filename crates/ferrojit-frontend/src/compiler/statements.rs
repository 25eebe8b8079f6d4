//! Statements: assignments, `if` (with early-return merging and raise handling), loops,
//! `raise`, `assert` and `return`.

use ferrojit_ir::Prim;
use std::collections::BTreeSet;
use std::sync::Arc;

use ferrojit_ir::{AttributeValue, Type, ValueId};

use super::types::unify_types;
use super::{meaningful_name, Emitter, Exit, LoopContext, Sugared, DID_RETURN, RETURN_VALUE};
use crate::ast::{
    Assign, AugAssign, BinOpKind, Expr, ExprKind, If, Raise, Stmt, StmtKind, While, With,
};
use crate::error::FrontendError;
use crate::source::SourceRange;

/// A variable whose type is narrowed on one side of a condition (`x is not None`).
pub(crate) type Refinement = (String, Type);

/// A branch condition: a bool value or a statically known answer, plus refinements.
pub(crate) struct Condition {
    pub value: Option<ValueId>,
    pub static_value: Option<bool>,
    pub true_refinements: Vec<Refinement>,
    pub false_refinements: Vec<Refinement>,
}

/// Names assigned anywhere in `stmts` (not inside nested definitions).
pub(crate) fn assigned_names(stmts: &[Stmt], names: &mut BTreeSet<String>) {
    fn target_names(target: &Expr, names: &mut BTreeSet<String>) {
        match &target.kind {
            ExprKind::Name(name) => {
                names.insert(name.clone());
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                for item in items {
                    target_names(item, names);
                }
            }
            ExprKind::Starred(inner) => target_names(inner, names),
            _ => {}
        }
    }
    for stmt in stmts {
        match &stmt.kind {
            StmtKind::Assign(assign) if assign.value.is_some() => {
                for target in &assign.targets {
                    target_names(target, names);
                }
            }
            StmtKind::AugAssign(aug) => target_names(&aug.target, names),
            StmtKind::If(stmt_if) => {
                assigned_names(&stmt_if.body, names);
                assigned_names(&stmt_if.orelse, names);
            }
            StmtKind::While(stmt_while) => assigned_names(&stmt_while.body, names),
            StmtKind::For(stmt_for) => {
                target_names(&stmt_for.target, names);
                assigned_names(&stmt_for.body, names);
            }
            StmtKind::With(with) => assigned_names(&with.body, names),
            _ => {}
        }
    }
}

/// Whether a `return` appears anywhere in `stmts` (not inside nested definitions).
pub(crate) fn contains_return(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|stmt| match &stmt.kind {
        StmtKind::Return(_) => true,
        StmtKind::If(stmt_if) => contains_return(&stmt_if.body) || contains_return(&stmt_if.orelse),
        StmtKind::While(w) => contains_return(&w.body),
        StmtKind::For(f) => contains_return(&f.body),
        StmtKind::With(w) => contains_return(&w.body),
        _ => false,
    })
}

/// Whether `stmts` contain a `break` or `continue` of the loop they are in.
pub(crate) fn has_break_or_continue(stmts: &[Stmt]) -> bool {
    find_break_or_continue(stmts).is_some()
}

fn find_break_or_continue(stmts: &[Stmt]) -> Option<&Stmt> {
    stmts.iter().find_map(|stmt| match &stmt.kind {
        StmtKind::Break | StmtKind::Continue => Some(stmt),
        StmtKind::If(stmt_if) => find_break_or_continue(&stmt_if.body)
            .or_else(|| find_break_or_continue(&stmt_if.orelse)),
        StmtKind::With(w) => find_break_or_continue(&w.body),
        _ => None,
    })
}

/// Whether an expression statement is `ops.prim.RaiseException(...)` (printed raise).
fn is_raise_call(expr: &Expr) -> bool {
    if let ExprKind::Call { func, .. } = &expr.kind {
        return matches!(
            func.dotted_name().as_deref(),
            Some("ops.prim.RaiseException") | Some("torch.ops.prim.RaiseException")
        );
    }
    false
}

impl<'a> Emitter<'a> {
    /// Emits `stmts` into the current block; when they fall through, goes on with the
    /// `continuation` lists (code after enclosing `if`s merged because of early returns).
    /// `reaches_end` says that falling through means leaving the function (no loop around).
    pub fn emit_statements(
        &mut self,
        stmts: &[Stmt],
        continuation: &[&[Stmt]],
        reaches_end: bool,
    ) -> Result<Exit, FrontendError> {
        for (index, stmt) in stmts.iter().enumerate() {
            self.location = Some(stmt.range.clone());
            match &stmt.kind {
                StmtKind::If(stmt_if) => {
                    let rest = &stmts[index + 1..];
                    let (exit, consumed) =
                        self.emit_if(stmt_if, &stmt.range, rest, continuation, reaches_end)?;
                    if consumed || !matches!(exit, Exit::FallsThrough) {
                        return Ok(exit);
                    }
                }
                StmtKind::Return(value) => {
                    let result = match value {
                        Some(expr) => {
                            let hint = self.declared_return.clone();
                            let value = self.emit_expr(expr, hint.as_ref())?;
                            match hint {
                                Some(declared) => {
                                    self.convert_for_return(value, &declared, &stmt.range)
                                }
                                None => value,
                            }
                        }
                        None => self.none_constant(),
                    };
                    self.check_return_type(result, &stmt.range)?;
                    if !self.loops.is_empty() {
                        return self.loop_return(result, &stmt.range);
                    }
                    return Ok(Exit::Returns(result));
                }
                StmtKind::Raise(raise) => {
                    self.emit_raise(raise, &stmt.range)?;
                    return Ok(Exit::Raises);
                }
                StmtKind::Expr(expr) => {
                    if matches!(expr.kind, ExprKind::Str(_)) {
                        continue; // docstring
                    }
                    self.emit_expr(expr, None)?;
                    if is_raise_call(expr) {
                        return Ok(Exit::Raises);
                    }
                }
                StmtKind::Assign(assign) => self.emit_assign(assign, &stmt.range)?,
                StmtKind::AugAssign(aug) => self.emit_aug_assign(aug, &stmt.range)?,
                StmtKind::While(stmt_while) => {
                    self.emit_while(stmt_while, &stmt.range)?;
                    if contains_return(&stmt_while.body) {
                        let rest = &stmts[index + 1..];
                        return self.after_returning_loop(
                            rest,
                            continuation,
                            reaches_end,
                            &stmt.range,
                        );
                    }
                }
                StmtKind::For(stmt_for) => {
                    self.emit_for(stmt_for, &stmt.range)?;
                    if contains_return(&stmt_for.body) {
                        let rest = &stmts[index + 1..];
                        return self.after_returning_loop(
                            rest,
                            continuation,
                            reaches_end,
                            &stmt.range,
                        );
                    }
                }
                StmtKind::Assert(assert) => {
                    self.emit_assert(&assert.test, assert.msg.as_ref(), &stmt.range)?
                }
                StmtKind::Pass => {}
                StmtKind::Break | StmtKind::Continue => {
                    let is_break = matches!(stmt.kind, StmtKind::Break);
                    if self.loops.is_empty() {
                        let keyword = if is_break { "break" } else { "continue" };
                        return Err(self.error(
                            format!("SyntaxError: '{keyword}' outside loop"),
                            &stmt.range,
                        ));
                    }
                    let forced = if is_break { Some(false) } else { None };
                    return Ok(Exit::LoopEnd(self.loop_end(forced, &stmt.range)?));
                }
                StmtKind::Def(def) => {
                    // A closure: usable as the function `fork` runs.
                    if let Some(frame) = self.frames.last_mut() {
                        frame.sugared.insert(
                            def.name.name.clone(),
                            Sugared::Closure(Arc::new(def.clone())),
                        );
                    }
                }
                StmtKind::ClassDef(_) => {
                    return Err(self.error(
                        "class definitions inside functions are not supported",
                        &stmt.range,
                    ));
                }
                StmtKind::With(with) => match self.emit_with(with, &stmt.range)? {
                    Exit::FallsThrough => {}
                    other => return Ok(other),
                },
                StmtKind::Del(targets) => {
                    for target in targets {
                        self.emit_delete(target)?;
                    }
                }
                StmtKind::Global(_) | StmtKind::Nonlocal(_) => {
                    return Err(self.error(
                        "global and nonlocal are not supported in TorchScript",
                        &stmt.range,
                    ));
                }
                StmtKind::Import(_) | StmtKind::ImportFrom(_) => {
                    return Err(self.error(
                        "import statements are not supported inside functions",
                        &stmt.range,
                    ));
                }
            }
        }
        match continuation.split_first() {
            Some((next, later)) => self.emit_statements(next, later, reaches_end),
            None => Ok(Exit::FallsThrough),
        }
    }

    // ----- if ------------------------------------------------------------------------------

    pub(crate) fn apply_refinements(
        &mut self,
        refinements: &[(String, Type)],
        range: &SourceRange,
    ) -> Result<(), FrontendError> {
        for (name, ty) in refinements {
            if let Some(value) = self.lookup(name) {
                let cast = self.insert_one(Prim::UncheckedCast.name(), &[value], ty.clone());
                if let Some(node) = self.graph.producer(cast) {
                    self.graph.set_source_location(node, None);
                }
                self.set_var(name, cast, range)?;
            }
        }
        Ok(())
    }

    /// Returns the exit of the `if` and whether `rest` (and the continuation) were emitted
    /// inside it.
    fn emit_if(
        &mut self,
        stmt_if: &If,
        range: &SourceRange,
        rest: &[Stmt],
        continuation: &[&[Stmt]],
        reaches_end: bool,
    ) -> Result<(Exit, bool), FrontendError> {
        let condition = self.emit_condition(&stmt_if.test)?;
        let in_loop = !self.loops.is_empty();
        let has_exit = contains_return(&stmt_if.body)
            || contains_return(&stmt_if.orelse)
            || (in_loop
                && (find_break_or_continue(&stmt_if.body).is_some()
                    || find_break_or_continue(&stmt_if.orelse).is_some()));
        let mut merged: Vec<&[Stmt]> = Vec::with_capacity(continuation.len() + 1);
        merged.push(rest);
        merged.extend_from_slice(continuation);

        if let Some(taken) = condition.static_value {
            let (branch, refinements) = if taken {
                (&stmt_if.body, &condition.true_refinements)
            } else {
                (&stmt_if.orelse, &condition.false_refinements)
            };
            self.apply_refinements(refinements, range)?;
            let exit = self.emit_statements(branch, &merged, reaches_end)?;
            return Ok((exit, true));
        }
        let Some(condition_value) = condition.value else {
            return Err(self.error("internal compiler error: condition without a value", range));
        };
        let branch_continuation: &[&[Stmt]] = if has_exit { &merged } else { &[] };

        self.location = Some(range.clone());
        let node = self.insert(Prim::If.name(), &[condition_value], &[]);
        let true_block = self.graph.add_node_block(node);
        let false_block = self.graph.add_node_block(node);

        self.push_frame(true_block);
        self.apply_refinements(&condition.true_refinements, range)?;
        let mut true_exit =
            self.emit_statements(&stmt_if.body, branch_continuation, reaches_end || has_exit)?;
        if has_exit {
            true_exit = self.close_merged_branch(true_exit, range)?;
        }
        let true_frame = self.pop_frame();

        self.push_frame(false_block);
        self.apply_refinements(&condition.false_refinements, range)?;
        let mut false_exit = self.emit_statements(
            &stmt_if.orelse,
            branch_continuation,
            reaches_end || has_exit,
        )?;
        if has_exit {
            false_exit = self.close_merged_branch(false_exit, range)?;
        }
        let false_frame = self.pop_frame();
        self.location = Some(range.clone());
        let exit = self.merge_branches(
            node,
            (true_block, true_exit, true_frame),
            (false_block, false_exit, false_frame),
            range,
        )?;
        Ok((exit, has_exit))
    }

    /// A branch that had the rest of its function or loop body merged into it ends by
    /// leaving: falling off its end returns None (function) or ends the loop body.
    fn close_merged_branch(
        &mut self,
        exit: Exit,
        range: &SourceRange,
    ) -> Result<Exit, FrontendError> {
        match exit {
            Exit::FallsThrough if self.loops.is_empty() => {
                let none = self.none_constant();
                self.check_return_type(none, range)?;
                Ok(Exit::Returns(none))
            }
            Exit::FallsThrough => Ok(Exit::LoopEnd(self.loop_end(None, range)?)),
            other => Ok(other),
        }
    }

    /// The outputs of a loop body ending here: the continue condition (`forced`, or the
    /// `while` test / true) and the current values of the carried variables.
    pub(crate) fn loop_end(
        &mut self,
        forced: Option<bool>,
        range: &SourceRange,
    ) -> Result<Vec<ValueId>, FrontendError> {
        let Some(context) = self.loops.last() else {
            return Err(self.error(
                "internal compiler error: loop exit outside of a loop",
                range,
            ));
        };
        let carried = context.carried.clone();
        let while_test = context.while_test.clone();
        let condition = match (forced, while_test) {
            (Some(value), _) => self.bool_constant(value),
            (None, Some(test)) => {
                let condition = self.emit_condition(&test)?;
                match (condition.value, condition.static_value) {
                    (Some(value), _) => value,
                    (None, Some(constant)) => self.bool_constant(constant),
                    (None, None) => self.bool_constant(true),
                }
            }
            (None, None) => self.bool_constant(true),
        };
        let mut values = vec![condition];
        for name in carried {
            let value = self.lookup(&name).ok_or_else(|| {
                self.error(
                    format!("internal compiler error: lost loop variable {name}"),
                    range,
                )
            })?;
            values.push(value);
        }
        Ok(values)
    }

    /// `return v` inside a loop: remember the value, and leave every enclosing loop.
    fn loop_return(&mut self, value: ValueId, range: &SourceRange) -> Result<Exit, FrontendError> {
        self.set_var_without_naming(RETURN_VALUE, value, range)?;
        let did_return = self.bool_constant(true);
        self.set_var_without_naming(DID_RETURN, did_return, range)?;
        Ok(Exit::LoopEnd(self.loop_end(Some(false), range)?))
    }

    /// Before a loop whose body returns: the hidden flag and value it sets.
    fn prepare_loop_return(
        &mut self,
        body: &[Stmt],
        range: &SourceRange,
    ) -> Result<(), FrontendError> {
        if !contains_return(body) || self.lookup(DID_RETURN).is_some() {
            return Ok(());
        }
        let Some(ty) = self.declared_return.clone() else {
            return Err(self.error(
                "return inside a loop needs the function's return type to be annotated",
                range,
            ));
        };
        let did_return = self.bool_constant(false);
        self.set_var_without_naming(DID_RETURN, did_return, range)?;
        let value = self.uninitialized(ty);
        self.set_var_without_naming(RETURN_VALUE, value, range)
    }

    /// After a loop whose body returns: `if $did_return: return $return_value` (or leave
    /// the enclosing loop too), else the rest of the code.
    fn after_returning_loop(
        &mut self,
        rest: &[Stmt],
        continuation: &[&[Stmt]],
        reaches_end: bool,
        range: &SourceRange,
    ) -> Result<Exit, FrontendError> {
        let Some(flag) = self.lookup(DID_RETURN) else {
            return Err(self.error("internal compiler error: lost return flag", range));
        };
        self.location = Some(range.clone());
        let node = self.insert(Prim::If.name(), &[flag], &[]);
        let true_block = self.graph.add_node_block(node);
        let false_block = self.graph.add_node_block(node);
        self.push_frame(true_block);
        let true_exit = if self.loops.is_empty() {
            match self.lookup(RETURN_VALUE) {
                Some(value) => Exit::Returns(value),
                None => return Err(self.error("internal compiler error: lost return value", range)),
            }
        } else {
            Exit::LoopEnd(self.loop_end(Some(false), range)?)
        };
        let true_frame = self.pop_frame();
        self.push_frame(false_block);
        let false_exit = self.emit_statements(rest, continuation, true)?;
        let false_exit = self.close_merged_branch(false_exit, range)?;
        let false_frame = self.pop_frame();
        let _ = reaches_end;
        self.location = Some(range.clone());
        self.merge_branches(
            node,
            (true_block, true_exit, true_frame),
            (false_block, false_exit, false_frame),
            range,
        )
    }

    /// One branch ends the loop body with `values`, the other raises.
    fn merge_loop_end_with_raise(
        &mut self,
        node: ferrojit_ir::NodeId,
        values: Vec<ValueId>,
        ending_block: ferrojit_ir::BlockId,
        raising_block: ferrojit_ir::BlockId,
    ) -> Exit {
        let true_block_first = self.graph.node_blocks(node).first() == Some(&ending_block);
        let mut outputs = Vec::new();
        for value in values {
            let ty = self.graph.value_type(value).clone();
            let other = self.uninitialized(ty.clone());
            let (t, f) = if true_block_first {
                (value, other)
            } else {
                (other, value)
            };
            let (tb, fb) = if true_block_first {
                (ending_block, raising_block)
            } else {
                (raising_block, ending_block)
            };
            self.graph.add_block_output(tb, t);
            self.graph.add_block_output(fb, f);
            outputs.push(self.graph.add_node_output(node, ty));
        }
        Exit::LoopEnd(outputs)
    }

    /// Gives the `prim::If` `node` its outputs from the exits of its two branches.
    fn merge_branches(
        &mut self,
        node: ferrojit_ir::NodeId,
        (true_block, true_exit, true_frame): (ferrojit_ir::BlockId, Exit, super::Frame),
        (false_block, false_exit, false_frame): (ferrojit_ir::BlockId, Exit, super::Frame),
        range: &SourceRange,
    ) -> Result<Exit, FrontendError> {
        match (true_exit, false_exit) {
            (Exit::Raises, Exit::Raises) => Ok(Exit::Raises),
            (Exit::LoopEnd(t), Exit::LoopEnd(f)) if t.len() == f.len() => {
                let mut outputs = Vec::new();
                for (tv, fv) in t.into_iter().zip(f) {
                    let (tt, ft) = (
                        self.graph.value_type(tv).clone(),
                        self.graph.value_type(fv).clone(),
                    );
                    let ty = unify_types(&tt, &ft).ok_or_else(|| {
                        self.error(
                            format!(
                                "Type mismatch: a loop variable is set to type {} on one path and type {} on another",
                                tt.annotation_str(),
                                ft.annotation_str()
                            ),
                            range,
                        )
                    })?;
                    self.graph.add_block_output(true_block, tv);
                    self.graph.add_block_output(false_block, fv);
                    outputs.push(self.graph.add_node_output(node, ty));
                }
                Ok(Exit::LoopEnd(outputs))
            }
            (Exit::LoopEnd(values), Exit::Raises) => {
                Ok(self.merge_loop_end_with_raise(node, values, true_block, false_block))
            }
            (Exit::Raises, Exit::LoopEnd(values)) => {
                Ok(self.merge_loop_end_with_raise(node, values, false_block, true_block))
            }
            (Exit::LoopEnd(_), _) | (_, Exit::LoopEnd(_)) => Err(self.error(
                "internal compiler error: a loop exit met a function exit",
                range,
            )),
            (true_exit @ Exit::Returns(_), false_exit)
            | (true_exit, false_exit @ Exit::Returns(_)) => {
                let true_value = match true_exit {
                    Exit::Returns(v) => Some(v),
                    _ => None,
                };
                let false_value = match false_exit {
                    Exit::Returns(v) => Some(v),
                    _ => None,
                };
                let ty = match (true_value, false_value) {
                    (Some(t), Some(f)) => {
                        let (tt, ft) = (
                            self.graph.value_type(t).clone(),
                            self.graph.value_type(f).clone(),
                        );
                        unify_types(&tt, &ft).ok_or_else(|| {
                            self.error(
                                format!(
                                    "Previous return statement returned a value of type {} but this return statement returns a value of type {}",
                                    tt.annotation_str(),
                                    ft.annotation_str()
                                ),
                                range,
                            )
                        })?
                    }
                    (Some(v), None) | (None, Some(v)) => self.graph.value_type(v).clone(),
                    (None, None) => {
                        return Err(self.error("internal compiler error: lost return value", range))
                    }
                };
                let true_value = match true_value {
                    Some(v) => v,
                    None => self.uninitialized(ty.clone()),
                };
                let false_value = match false_value {
                    Some(v) => v,
                    None => self.uninitialized(ty.clone()),
                };
                self.graph.add_block_output(true_block, true_value);
                self.graph.add_block_output(false_block, false_value);
                let output = self.graph.add_node_output(node, ty);
                self.check_return_type(output, range)?;
                Ok(Exit::Returns(output))
            }
            (true_exit, false_exit) => {
                let true_raises = matches!(true_exit, Exit::Raises);
                let false_raises = matches!(false_exit, Exit::Raises);
                let mut names: BTreeSet<String> = true_frame.vars.keys().cloned().collect();
                names.extend(false_frame.vars.keys().cloned());
                for name in names {
                    let outer = self.lookup(&name);
                    let true_value = true_frame.vars.get(&name).copied().or(outer);
                    let false_value = false_frame.vars.get(&name).copied().or(outer);
                    let (true_value, false_value, ty) = if true_raises {
                        let Some(f) = false_value else { continue };
                        let ty = self.graph.value_type(f).clone();
                        (self.uninitialized(ty.clone()), f, ty)
                    } else if false_raises {
                        let Some(t) = true_value else { continue };
                        let ty = self.graph.value_type(t).clone();
                        (t, self.uninitialized(ty.clone()), ty)
                    } else {
                        let (t, f) = match (true_value, false_value) {
                            (Some(t), Some(f)) => (t, f),
                            (Some(_), None) | (None, Some(_)) => {
                                let side = if true_value.is_some() {
                                    "false"
                                } else {
                                    "true"
                                };
                                if let Some(frame) = self.frames.last_mut() {
                                    frame.partly_defined.insert(
                                        name.clone(),
                                        (
                                            if side == "false" {
                                                "false branch"
                                            } else {
                                                "true branch"
                                            },
                                            range.clone(),
                                        ),
                                    );
                                }
                                continue;
                            }
                            (None, None) => continue,
                        };
                        let (tt, ft) = (
                            self.graph.value_type(t).clone(),
                            self.graph.value_type(f).clone(),
                        );
                        // A variable declared `Union[int, str]` (or any type both branch
                        // values fit) keeps its declared type where the two values have no
                        // common type of their own, as in PyTorch.
                        let declared = self.lookup_declared(&name).filter(|declared| {
                            tt.is_subtype_of(declared) && ft.is_subtype_of(declared)
                        });
                        let Some(ty) = unify_types(&tt, &ft).or(declared) else {
                            if name.starts_with('$') {
                                continue;
                            }
                            return Err(self.error(
                                format!(
                                    "Type mismatch: {name} is set to type {} in the true branch and type {} in the false branch",
                                    tt.annotation_str(),
                                    ft.annotation_str()
                                ),
                                range,
                            ));
                        };
                        (t, f, ty)
                    };
                    self.graph.add_block_output(true_block, true_value);
                    self.graph.add_block_output(false_block, false_value);
                    let output = self.graph.add_node_output(node, ty);
                    if meaningful_name(&name) {
                        self.graph.set_debug_name(output, &name);
                    }
                    self.set_var(&name, output, range)?;
                }
                Ok(Exit::FallsThrough)
            }
        }
    }

    // ----- loops ---------------------------------------------------------------------------

    pub(crate) fn check_loop_body(
        &mut self,
        body: &[Stmt],
        orelse: &[Stmt],
        range: &SourceRange,
    ) -> Result<(), FrontendError> {
        if !orelse.is_empty() {
            return Err(self.error(
                "else branches of loops are not supported in TorchScript",
                range,
            ));
        }
        self.prepare_loop_return(body, range)
    }

    /// Emits a `prim::Loop`. `bind` runs first in the body with the iteration counter;
    /// `while_test` is re-evaluated at the end of the body and at `continue`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn emit_loop(
        &mut self,
        trip_count: ValueId,
        start_condition: ValueId,
        extra_assigned: Option<&Expr>,
        body: &[Stmt],
        range: &SourceRange,
        bind: &mut dyn FnMut(&mut Self, ValueId) -> Result<(), FrontendError>,
        while_test: Option<&Expr>,
    ) -> Result<(), FrontendError> {
        let mut names = BTreeSet::new();
        assigned_names(body, &mut names);
        if contains_return(body) {
            names.insert(DID_RETURN.to_string());
            names.insert(RETURN_VALUE.to_string());
        }
        if let Some(target) = extra_assigned {
            let fake = Stmt {
                kind: StmtKind::Assign(Assign {
                    targets: vec![target.clone()],
                    annotation: None,
                    value: Some(target.clone()),
                    type_comment: None,
                }),
                range: target.range.clone(),
            };
            assigned_names(std::slice::from_ref(&fake), &mut names);
        }
        let carried: Vec<(String, ValueId)> = names
            .into_iter()
            .filter_map(|name| self.lookup(&name).map(|value| (name, value)))
            .collect();
        let mut inputs = vec![trip_count, start_condition];
        inputs.extend(carried.iter().map(|(_, v)| *v));
        let types: Vec<Type> = carried
            .iter()
            .map(|(name, v)| {
                self.lookup_declared(name)
                    .unwrap_or_else(|| self.graph.value_type(*v).clone())
            })
            .collect();
        self.location = Some(range.clone());
        let node = self.insert(Prim::Loop.name(), &inputs, &types);
        let body_block = self.graph.add_node_block(node);
        let iteration = self.graph.add_block_parameter(body_block, Type::Int);
        self.push_frame(body_block);
        for ((name, _), ty) in carried.iter().zip(&types) {
            let parameter = self.graph.add_block_parameter(body_block, ty.clone());
            if meaningful_name(name) {
                self.graph.set_debug_name(parameter, name);
            }
            if let Some(frame) = self.frames.last_mut() {
                frame.vars.insert(name.clone(), parameter);
            }
        }
        self.loop_depth += 1;
        self.loops.push(LoopContext {
            carried: carried.iter().map(|(name, _)| name.clone()).collect(),
            while_test: while_test.cloned(),
        });
        let result = (|| {
            bind(self, iteration)?;
            let exit = self.emit_statements(body, &[], false)?;
            self.location = Some(range.clone());
            match exit {
                Exit::FallsThrough => self.loop_end(None, range),
                Exit::LoopEnd(values) => Ok(values),
                Exit::Raises => self.loop_end(Some(true), range),
                Exit::Returns(_) => {
                    Err(self.error("internal compiler error: return escaped its loop", range))
                }
            }
        })();
        self.loop_depth -= 1;
        self.loops.pop();
        let values = result?;
        for value in values {
            self.graph.add_block_output(body_block, value);
        }
        self.pop_frame();
        for (index, (name, _)) in carried.iter().enumerate() {
            let output = self.graph.node_output(node, index);
            if meaningful_name(name) {
                self.graph.set_debug_name(output, name);
            }
            self.set_var(name, output, range)?;
        }
        Ok(())
    }

    fn emit_while(&mut self, stmt_while: &While, range: &SourceRange) -> Result<(), FrontendError> {
        self.check_loop_body(&stmt_while.body, &stmt_while.orelse, range)?;
        let condition = self.emit_condition(&stmt_while.test)?;
        let start = match (condition.value, condition.static_value) {
            (Some(value), _) => value,
            (None, Some(constant)) => self.bool_constant(constant),
            (None, None) => {
                return Err(self.error("internal compiler error: condition without a value", range))
            }
        };
        self.location = Some(range.clone());
        let max_trip_count = self.int_constant(i64::MAX);
        let test = &stmt_while.test;
        self.emit_loop(
            max_trip_count,
            start,
            None,
            &stmt_while.body,
            range,
            &mut |_, _| Ok(()),
            Some(test),
        )
    }

    /// `del xs[i]`, `del d[k]` (`aten::Delete`) and `del name`.
    fn emit_delete(&mut self, target: &Expr) -> Result<(), FrontendError> {
        match &target.kind {
            ExprKind::Subscript { value, index } => {
                let container = self.emit_expr(value, None)?;
                match self.graph.value_type(container).clone() {
                    Type::List(_) | Type::Dict(..) => {
                        let key = self.emit_expr(index, None)?;
                        self.location = Some(target.range.clone());
                        self.emit_builtin("aten::Delete", &[container, key], &target.range)?;
                        Ok(())
                    }
                    Type::Class(class) if class.has_method("__delitem__") => {
                        let key = self.emit_expr(index, None)?;
                        let class_name = class.qualified_name().to_string();
                        self.emit_method_call(
                            container,
                            &class_name,
                            "__delitem__",
                            &[(key, index.range.clone())],
                            &[],
                            &target.range,
                        )?;
                        Ok(())
                    }
                    other => Err(self.error(
                        format!(
                            "'{}' object does not support item deletion",
                            other.annotation_str()
                        ),
                        &target.range,
                    )),
                }
            }
            ExprKind::Name(name) => {
                if self.lookup(name).is_none() {
                    return Err(self.error(format!("undefined value {name}"), &target.range));
                }
                for frame in &mut self.frames {
                    frame.vars.remove(name);
                    frame.declared.remove(name);
                }
                Ok(())
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                for item in items {
                    self.emit_delete(item)?;
                }
                Ok(())
            }
            _ => Err(self.error(
                "del statements only support names and subscripts",
                &target.range,
            )),
        }
    }

    /// PyTorch's return conversions: a number or tensor becomes the declared int/float,
    /// element-wise inside a tuple.
    fn convert_for_return(
        &mut self,
        value: ValueId,
        declared: &Type,
        range: &SourceRange,
    ) -> ValueId {
        let actual = self.graph.value_type(value).clone();
        if actual.is_subtype_of(declared) {
            return value;
        }
        if let (Type::Tuple(elements), Type::Tuple(formal)) = (&actual, declared) {
            if elements.len() == formal.len() {
                self.location = Some(range.clone());
                let node = self.insert(Prim::TupleUnpack.name(), &[value], elements);
                let items = self.graph.node_outputs(node).to_vec();
                let converted: Vec<ValueId> = items
                    .iter()
                    .zip(formal)
                    .map(|(&item, ty)| self.convert_for_return(item, ty, range))
                    .collect();
                let types = converted
                    .iter()
                    .map(|v| self.graph.value_type(*v).clone())
                    .collect();
                return self.insert_one(
                    Prim::TupleConstruct.name(),
                    &converted,
                    Type::Tuple(types),
                );
            }
        }
        self.location = Some(range.clone());
        self.convert_value(value, declared, range).unwrap_or(value)
    }

    // ----- with ----------------------------------------------------------------------------

    /// `with a, b as x: body`: `__enter__` in order, the body, `__exit__(None, None, None)` in
    /// reverse order. `torch.no_grad()` saves, clears and restores the grad mode.
    fn emit_with(&mut self, with: &With, range: &SourceRange) -> Result<Exit, FrontendError> {
        // Leaving the body early is supported as its last statement, where the `__exit__`
        // calls can follow the code that computes the exit.
        let (last, before) = match with.body.split_last() {
            Some((last, before)) => (Some(last), before),
            None => (None, &with.body[..]),
        };
        let last_leaves = last.is_some_and(|stmt| {
            matches!(
                stmt.kind,
                StmtKind::Return(_) | StmtKind::Break | StmtKind::Continue
            )
        });
        let nested_exit =
            |stmts: &[Stmt]| contains_return(stmts) || find_break_or_continue(stmts).is_some();
        if nested_exit(before)
            || (!last_leaves && last.is_some_and(|stmt| nested_exit(std::slice::from_ref(stmt))))
        {
            return Err(self.error(
                "return, break and continue inside a with statement are only supported as its last statement",
                range,
            ));
        }
        enum Manager {
            Object(ValueId, String),
            GradMode(ValueId),
        }
        let mut managers = Vec::new();
        for item in &with.items {
            let builtin = match &item.context.kind {
                ExprKind::Call { func, args, .. } if args.is_empty() => {
                    match self.resolve_sugared(func)? {
                        Some(Sugared::Builtin(name))
                            if name == "no_grad" || name == "enable_grad" =>
                        {
                            Some(name)
                        }
                        _ => None,
                    }
                }
                _ => None,
            };
            if let Some(name) = builtin {
                self.location = Some(item.range.clone());
                let previous = self.emit_builtin("aten::is_grad_enabled", &[], &item.range)?;
                let enabled = self.bool_constant(name == "enable_grad");
                self.emit_builtin("aten::set_grad_enabled", &[enabled], &item.range)?;
                if let Some(target) = &item.target {
                    let none = self.none_constant();
                    self.assign_to_target(target, none)?;
                }
                managers.push(Manager::GradMode(previous));
                continue;
            }
            let object = self.emit_expr(&item.context, None)?;
            let Type::Class(class) = self.graph.value_type(object).clone() else {
                return Err(self.error(
                    format!(
                        "with statements need an object with __enter__ and __exit__, not a value of type {}",
                        self.graph.value_type(object).annotation_str()
                    ),
                    &item.context.range,
                ));
            };
            let class_name = class.qualified_name().to_string();
            for method in ["__enter__", "__exit__"] {
                if !class.has_method(method) {
                    return Err(self.error(
                        format!("object of type {class_name} has no method {method} and cannot be used as a context manager"),
                        &item.context.range,
                    ));
                }
            }
            self.location = Some(item.range.clone());
            let entered =
                self.emit_method_call(object, &class_name, "__enter__", &[], &[], &item.range)?;
            if let Some(target) = &item.target {
                self.assign_to_target(target, entered)?;
            }
            managers.push(Manager::Object(object, class_name));
        }
        let exit = self.emit_statements(&with.body, &[], false)?;
        for manager in managers.into_iter().rev() {
            self.location = Some(range.clone());
            match manager {
                Manager::GradMode(previous) => {
                    self.emit_builtin("aten::set_grad_enabled", &[previous], range)?;
                }
                Manager::Object(object, class_name) => {
                    let none = self.none_constant();
                    let arguments = vec![(none, range.clone()); 3];
                    self.emit_method_call(object, &class_name, "__exit__", &arguments, &[], range)?;
                }
            }
        }
        Ok(exit)
    }

    // ----- raise / assert ------------------------------------------------------------------

    fn emit_raise(&mut self, raise: &Raise, range: &SourceRange) -> Result<(), FrontendError> {
        let Some(exception) = &raise.exc else {
            return Err(self.error("bare raise is not supported", range));
        };
        let (class_name, message_expr) = match &exception.kind {
            ExprKind::Call { func, args, .. } => (func.dotted_name(), args.first()),
            _ => (exception.dotted_name(), None),
        };
        let class_name = class_name.unwrap_or_else(|| "Exception".to_string());
        let qualified_class = match class_name.strip_prefix("builtins.") {
            Some(_) => class_name.clone(),
            None => format!("builtins.{class_name}"),
        };
        let message = match message_expr {
            Some(expr) => {
                let value = self.emit_expr(expr, None)?;
                if *self.graph.value_type(value) == Type::Str {
                    value
                } else {
                    self.emit_builtin("aten::str", &[value], &expr.range)?
                }
            }
            None => self.str_constant(""),
        };
        self.location = Some(range.clone());
        let class_value = self.str_constant(&qualified_class);
        self.insert(Prim::RaiseException.name(), &[message, class_value], &[]);
        Ok(())
    }

    fn emit_assert(
        &mut self,
        test: &Expr,
        message: Option<&Expr>,
        range: &SourceRange,
    ) -> Result<(), FrontendError> {
        let condition = self.emit_condition(test)?;
        if condition.static_value == Some(true) {
            return self.apply_refinements(&condition.true_refinements, range);
        }
        self.location = Some(range.clone());
        let condition_value = match condition.value {
            Some(value) => value,
            None => self.bool_constant(false),
        };
        let node = self.insert(Prim::If.name(), &[condition_value], &[]);
        let _true_block = self.graph.add_node_block(node);
        let false_block = self.graph.add_node_block(node);
        self.push_frame(false_block);
        let text = match message {
            Some(expr) => match &expr.kind {
                ExprKind::Str(text) => Ok(format!("AssertionError: {text}")),
                _ => Err(expr),
            },
            None => Ok("AssertionError: ".to_string()),
        };
        let message_value = match text {
            Ok(text) => {
                self.location = None;
                self.str_constant(&text)
            }
            Err(expr) => {
                let value = self.emit_expr(expr, None)?;
                let value = if *self.graph.value_type(value) == Type::Str {
                    value
                } else {
                    self.emit_builtin("aten::str", &[value], &expr.range)?
                };
                let prefix = self.str_constant("AssertionError: ");
                self.emit_builtin("aten::add", &[prefix, value], &expr.range)?
            }
        };
        let none = self.none_constant();
        self.location = Some(range.clone());
        self.insert(Prim::RaiseException.name(), &[message_value, none], &[]);
        self.pop_frame();
        self.apply_refinements(&condition.true_refinements, range)
    }

    // ----- assignment ----------------------------------------------------------------------

    fn emit_assign(&mut self, assign: &Assign, range: &SourceRange) -> Result<(), FrontendError> {
        let Some(value_expr) = &assign.value else {
            return Ok(()); // bare annotation `x : int`
        };
        if let Some(annotation) = &assign.annotation {
            let ty = self.type_resolver().resolve(annotation)?;
            let value = self.emit_expr(value_expr, Some(&ty))?;
            let actual = self.graph.value_type(value).clone();
            if !actual.is_subtype_of(&ty) {
                let name = assign
                    .targets
                    .first()
                    .and_then(Expr::dotted_name)
                    .unwrap_or_default();
                return Err(self.error(
                    format!(
                        "Variable '{name}' is annotated with type {} but is being assigned to a value of type {}",
                        ty.annotation_str(),
                        actual.annotation_str()
                    ),
                    range,
                ));
            }
            for target in &assign.targets {
                self.pending_attribute_type = Some(ty.clone());
                let assigned = self.assign_to_target(target, value);
                self.pending_attribute_type = None;
                assigned?;
                if let ExprKind::Name(name) = &target.kind {
                    if let Some(frame) = self.frames.last_mut() {
                        frame.declared.insert(name.clone(), ty.clone());
                    }
                }
            }
            return Ok(());
        }
        // `a, b = x, y`: bind element-wise without building a tuple.
        if let [target] = assign.targets.as_slice() {
            if let (ExprKind::Tuple(targets) | ExprKind::List(targets), ExprKind::Tuple(values)) =
                (&target.kind, &value_expr.kind)
            {
                if targets.len() == values.len()
                    && !targets
                        .iter()
                        .any(|t| matches!(t.kind, ExprKind::Starred(_)))
                {
                    let mut emitted = Vec::new();
                    for value in values {
                        emitted.push(self.emit_expr(value, None)?);
                    }
                    for ((target, value), value_expr) in targets.iter().zip(emitted).zip(values) {
                        self.assign_value_from(target, value, value_expr)?;
                    }
                    return Ok(());
                }
            }
        }
        // `_0 = __torch__.m.helper`: the name stands for the function from now on.
        if let ([target], ExprKind::Name(_) | ExprKind::Attribute { .. }) =
            (assign.targets.as_slice(), &value_expr.kind)
        {
            if let ExprKind::Name(name) = &target.kind {
                if let Some(sugared) = self.resolve_sugared(value_expr)? {
                    if !matches!(sugared, Sugared::Enum(_)) {
                        if let Some(frame) = self.frames.last_mut() {
                            frame.sugared.insert(name.clone(), sugared);
                        }
                        return Ok(());
                    }
                }
            }
        }
        let value = self.emit_expr(value_expr, None)?;
        for target in &assign.targets {
            self.assign_value_from(target, value, value_expr)?;
        }
        Ok(())
    }

    /// Assigns `value`, computed by `value_expr`. Copying a variable (`x0 = x`) names
    /// nothing: in PyTorch the right side is a `prim::Load` whose name disappears.
    fn assign_value_from(
        &mut self,
        target: &Expr,
        value: ValueId,
        value_expr: &Expr,
    ) -> Result<(), FrontendError> {
        match (&target.kind, &value_expr.kind) {
            (ExprKind::Name(name), ExprKind::Name(_)) => {
                self.set_var_without_naming(name, value, &target.range)
            }
            _ => self.assign_to_target(target, value),
        }
    }

    pub(crate) fn assign_to_target(
        &mut self,
        target: &Expr,
        value: ValueId,
    ) -> Result<(), FrontendError> {
        match &target.kind {
            ExprKind::Name(name) => self.set_var(name, value, &target.range),
            ExprKind::Tuple(targets) | ExprKind::List(targets) => {
                let ty = self.graph.value_type(value).clone();
                self.location = Some(target.range.clone());
                let ty = match ty {
                    Type::NamedTuple(named) => {
                        Type::Tuple(named.fields.iter().map(|(_, t)| t.clone()).collect())
                    }
                    other => other,
                };
                let constructed = self.graph.producer(value).filter(|&node| {
                    self.graph.kind(node).prim() == Some(Prim::TupleConstruct)
                        && self.graph.node_inputs(node).len() == targets.len()
                });
                let elements = match &ty {
                    // As PyTorch's emitter: unpacking a tuple just built (a multi-output
                    // call such as divmod, or a literal) takes its items, with no
                    // construct/unpack pair; printed back, the pair would read as a new
                    // tuple each save and the names would drift (issue 20, item 7).
                    Type::Tuple(_) if constructed.is_some() => constructed
                        .map(|node| self.graph.node_inputs(node).to_vec())
                        .unwrap_or_default(),
                    Type::Tuple(types) if types.len() == targets.len() => {
                        let node = self.insert(Prim::TupleUnpack.name(), &[value], types);
                        self.graph.node_outputs(node).to_vec()
                    }
                    Type::Tuple(types) => {
                        return Err(self.error(
                            format!(
                                "too many values to unpack: need {} but found {}",
                                targets.len(),
                                types.len()
                            ),
                            &target.range,
                        ))
                    }
                    Type::List(element) => {
                        let types = vec![element.as_ref().clone(); targets.len()];
                        let node = self.insert(Prim::ListUnpack.name(), &[value], &types);
                        self.graph.node_outputs(node).to_vec()
                    }
                    other => {
                        return Err(self.error(
                            format!("cannot unpack a value of type {}", other.annotation_str()),
                            &target.range,
                        ))
                    }
                };
                for (target, element) in targets.iter().zip(elements) {
                    self.assign_to_target(target, element)?;
                }
                Ok(())
            }
            ExprKind::Attribute {
                value: object_expr,
                attr,
            } => {
                let object = self.emit_expr(object_expr, None)?;
                let Some(class) = self.graph.value_type(object).class_type().cloned() else {
                    return Err(self.error(
                        format!(
                            "cannot assign attribute '{}' of a value of type {}",
                            attr.name,
                            self.graph.value_type(object).annotation_str()
                        ),
                        &target.range,
                    ));
                };
                let class = self.context.unit.resolve_class(class.qualified_name())?;
                if class.attribute(&attr.name).is_none() && self.is_init_self(object, &class) {
                    // PyTorch infers script-class attributes from `self.x = ...` in __init__.
                    let ty = self
                        .pending_attribute_type
                        .take()
                        .unwrap_or_else(|| self.graph.value_type(value).clone());
                    class.add_attribute(&attr.name, ty, ferrojit_ir::AttributeKind::Regular);
                }
                let Some(attribute) = class.attribute(&attr.name) else {
                    return Err(self.error(
                        format!("Tried to set nonexistent attribute: {}. Did you forget to initialize it in __init__()?", attr.name),
                        &target.range,
                    ));
                };
                let actual = self.graph.value_type(value).clone();
                if !actual.is_subtype_of(&attribute.ty) {
                    return Err(self.error(
                        format!(
                            "Wrong type for attribute assignment. Expected {} but got {}",
                            attribute.ty.annotation_str(),
                            actual.annotation_str()
                        ),
                        &target.range,
                    ));
                }
                self.location = Some(target.range.clone());
                let node = self.insert(Prim::SetAttr.name(), &[object, value], &[]);
                self.graph
                    .set_attribute(node, "name", AttributeValue::Str(attr.name.clone()));
                Ok(())
            }
            ExprKind::Subscript {
                value: container,
                index,
            } => self.emit_subscript_assign(container, index, value, target),
            _ => Err(self.error("unsupported assignment target", &target.range)),
        }
    }

    fn emit_subscript_assign(
        &mut self,
        container_expr: &Expr,
        index: &Expr,
        value: ValueId,
        target: &Expr,
    ) -> Result<(), FrontendError> {
        let container = self.emit_expr(container_expr, None)?;
        let container_type = self.graph.value_type(container).clone();
        match container_type {
            Type::List(_) | Type::Dict(..) => {
                let index_value = self.emit_expr(index, None)?;
                self.location = Some(target.range.clone());
                self.emit_builtin(
                    "aten::_set_item",
                    &[container, index_value, value],
                    &target.range,
                )?;
                Ok(())
            }
            Type::Tensor => {
                let (view, tensor_indices) =
                    self.emit_tensor_index_parts(container, index, &target.range)?;
                self.location = Some(target.range.clone());
                if !tensor_indices.is_empty() {
                    // `x[mask] = v`: `index_put_` with `v` as a tensor of `x`'s dtype and device.
                    let values = if self.graph.value_type(value).is_tensor() {
                        value
                    } else {
                        let dtype = self.insert_one("prim::dtype", &[view], Type::Int);
                        let device = self.insert_one("prim::device", &[view], Type::Device);
                        self.emit_builtin_call(
                            "aten::tensor",
                            &[(value, target.range.clone())],
                            &[
                                super::calls::KeywordArgument {
                                    name: "dtype".to_string(),
                                    value: dtype,
                                },
                                super::calls::KeywordArgument {
                                    name: "device".to_string(),
                                    value: device,
                                },
                            ],
                            &target.range,
                        )?
                    };
                    let indices = self.optional_tensor_list(&tensor_indices, &target.range);
                    self.emit_builtin("aten::index_put_", &[view, indices, values], &target.range)?;
                    return Ok(());
                }
                if *self.graph.value_type(value) == Type::Tensor {
                    self.emit_builtin("aten::copy_", &[view, value], &target.range)?;
                } else {
                    self.emit_builtin("aten::fill_", &[view, value], &target.range)?;
                }
                Ok(())
            }
            Type::Class(class) if !class.is_module() => {
                let index_value = self.emit_expr(index, None)?;
                self.location = Some(target.range.clone());
                let class_name = class.qualified_name().to_string();
                self.emit_method_call(
                    container,
                    &class_name,
                    "__setitem__",
                    &[
                        (index_value, index.range.clone()),
                        (value, target.range.clone()),
                    ],
                    &[],
                    &target.range,
                )?;
                Ok(())
            }
            other => Err(self.error(
                format!(
                    "'{}' object does not support item assignment",
                    other.annotation_str()
                ),
                &target.range,
            )),
        }
    }

    fn emit_aug_assign(
        &mut self,
        aug: &AugAssign,
        range: &SourceRange,
    ) -> Result<(), FrontendError> {
        let current = self.emit_expr(&aug.target, None)?;
        let right = self.emit_expr(&aug.value, None)?;
        let ty = self.graph.value_type(current).clone();
        let base = binary_operator_name(aug.op);
        self.location = Some(range.clone());
        let in_place = matches!(ty, Type::Tensor | Type::List(_));
        let result = if in_place {
            let name = format!("{}_", base);
            self.emit_builtin(&name, &[current, right], range)?
        } else {
            self.emit_builtin(base, &[current, right], range)?
        };
        match &aug.target.kind {
            ExprKind::Subscript { .. } if in_place => Ok(()),
            _ => self.assign_to_target(&aug.target, result),
        }
    }
}

/// The `aten::` operator for a binary Python operator.
pub(crate) fn binary_operator_name(op: BinOpKind) -> &'static str {
    match op {
        BinOpKind::Add => "aten::add",
        BinOpKind::Sub => "aten::sub",
        BinOpKind::Mul => "aten::mul",
        BinOpKind::Div => "aten::div",
        BinOpKind::FloorDiv => "aten::floordiv",
        BinOpKind::Mod => "aten::remainder",
        BinOpKind::Pow => "aten::pow",
        BinOpKind::MatMul => "aten::matmul",
        BinOpKind::BitAnd => "aten::__and__",
        BinOpKind::BitOr => "aten::__or__",
        BinOpKind::BitXor => "aten::__xor__",
        BinOpKind::LShift => "aten::__lshift__",
        BinOpKind::RShift => "aten::__rshift__",
    }
}
