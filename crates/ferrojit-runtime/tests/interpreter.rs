//! Interpreter tests over hand-built graphs: loops, branches, moves, errors, budgets.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use ferrojit_ir::{AttributeValue, Graph, InsertPoint, Type};
use ferrojit_runtime::interpreter::{compile, Instruction};
use ferrojit_runtime::{
    run_graph, run_graph_with_options, IValue, NoMethods, RunOptions, RuntimeError,
};

/// def f(x: Tensor, n: int) -> Tensor:
///     acc = x
///     for i in range(n):
///         if i % 2 == 0:
///             acc = acc + i
///         else:
///             acc = acc - 1
///     return acc
fn loop_with_branch() -> Graph {
    let mut g = Graph::new();
    let x = g.add_input(Type::Tensor, Some("x"));
    let n = g.add_input(Type::Int, Some("n"));
    // Defined outside the loop and read on every iteration: must never be moved out.
    let one = int(&mut g, 1);
    let start = boolean(&mut g, true);
    let top = g.top_block();
    let loop_node = prim(&mut g, "prim::Loop", &[n, start, x], &[Type::Tensor]);
    let body = g.add_node_block(loop_node);
    let i = g.add_block_parameter(body, Type::Int);
    let acc = g.add_block_parameter(body, Type::Tensor);
    g.set_insert_point(InsertPoint::EndOf(body));
    let two = int(&mut g, 2);
    let rem = op1(
        &mut g,
        "aten::remainder.int(int a, int b) -> int",
        &[i, two],
        Type::Int,
    );
    let zero = int(&mut g, 0);
    let is_even = op1(
        &mut g,
        "aten::eq.int(int a, int b) -> bool",
        &[rem, zero],
        Type::Bool,
    );
    let if_node = prim(&mut g, "prim::If", &[is_even], &[Type::Tensor]);
    let then_block = g.add_node_block(if_node);
    let else_block = g.add_node_block(if_node);
    g.set_insert_point(InsertPoint::EndOf(then_block));
    let added = op1(
        &mut g,
        "aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
        &[acc, i, one],
        Type::Tensor,
    );
    g.add_block_output(then_block, added);
    g.set_insert_point(InsertPoint::EndOf(else_block));
    let subtracted = op1(
        &mut g,
        "aten::sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
        &[acc, one, one],
        Type::Tensor,
    );
    g.add_block_output(else_block, subtracted);
    g.set_insert_point(InsertPoint::EndOf(body));
    let keep_going = boolean(&mut g, true);
    g.add_block_output(body, keep_going);
    g.add_block_output(body, g.node_output(if_node, 0));
    g.set_insert_point(InsertPoint::EndOf(top));
    g.register_output(g.node_output(loop_node, 0));
    g
}

#[test]
fn loop_over_range_with_branch() {
    let graph = loop_with_branch();
    let x = tensor_f32(&[1.0, 2.0], &[2]);
    // i = 0..4: +0, -1, +2, -1, +4 -> +4 in total.
    let outputs = run_graph(
        &graph,
        vec![IValue::from(x.clone()), IValue::Int(5)],
        &NoMethods,
    )
    .unwrap();
    assert_eq!(outputs.len(), 1);
    assert_eq!(values_f32(&outputs[0].to_tensor().unwrap()), vec![5.0, 6.0]);
    // Zero iterations return the input unchanged (the very same tensor).
    let outputs = run_graph(
        &graph,
        vec![IValue::from(x.clone()), IValue::Int(0)],
        &NoMethods,
    )
    .unwrap();
    assert!(outputs[0].to_tensor().unwrap().is_same(&x));
    // The out-of-place ops never touched the input.
    assert_eq!(values_f32(&x), vec![1.0, 2.0]);
}

#[test]
fn while_loop_counts_with_carried_condition() {
    // i = 0; while i < 10: i = i + 3  -> 12
    let mut g = Graph::new();
    let top = g.top_block();
    let max = int(&mut g, i64::MAX);
    let zero = int(&mut g, 0);
    let ten = int(&mut g, 10);
    let initial = op1(
        &mut g,
        "aten::lt.int(int a, int b) -> bool",
        &[zero, ten],
        Type::Bool,
    );
    let loop_node = prim(&mut g, "prim::Loop", &[max, initial, zero], &[Type::Int]);
    let body = g.add_node_block(loop_node);
    let _iteration = g.add_block_parameter(body, Type::Int);
    let current = g.add_block_parameter(body, Type::Int);
    g.set_insert_point(InsertPoint::EndOf(body));
    let three = int(&mut g, 3);
    let next = op1(
        &mut g,
        "aten::add.int(int a, int b) -> int",
        &[current, three],
        Type::Int,
    );
    let again = op1(
        &mut g,
        "aten::lt.int(int a, int b) -> bool",
        &[next, ten],
        Type::Bool,
    );
    g.add_block_output(body, again);
    g.add_block_output(body, next);
    g.set_insert_point(InsertPoint::EndOf(top));
    g.register_output(g.node_output(loop_node, 0));
    let outputs = run_graph(&g, vec![], &NoMethods).unwrap();
    assert!(matches!(outputs[0], IValue::Int(12)));
}

#[test]
fn last_use_moves_and_in_place_updates_stay_visible_through_aliases() {
    // def f(x):
    //     l = [x]
    //     y = x.add_(1)      # last use of x: moved, not copied
    //     return l[0], y
    let mut g = Graph::new();
    let x = g.add_input(Type::Tensor, Some("x"));
    let list = g.insert("prim::ListConstruct", &[x], &[Type::list(Type::Tensor)]);
    let list = g.node_output(list, 0);
    let one = int(&mut g, 1);
    let y = op1(
        &mut g,
        "aten::add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
        &[x, one, one],
        Type::Tensor,
    );
    let zero = int(&mut g, 0);
    let first = op1(
        &mut g,
        "aten::__getitem__.t(t[](a) list, int idx) -> t(*)",
        &[list, zero],
        Type::Tensor,
    );
    g.register_output(first);
    g.register_output(y);

    let code = compile(&g).unwrap();
    let x_register = x.index();
    let reads: Vec<&Instruction> = code
        .instructions
        .iter()
        .filter(|i| matches!(i, Instruction::Load(r) | Instruction::Move(r) if *r == x_register))
        .collect();
    assert_eq!(
        reads,
        vec![
            &Instruction::Load(x_register),
            &Instruction::Move(x_register)
        ],
        "x is copied into the list, then moved into add_"
    );

    let caller_alias = tensor_f32(&[1.0, 2.0], &[2]);
    let outputs = run_graph(&g, vec![IValue::from(caller_alias.clone())], &NoMethods).unwrap();
    let through_list = outputs[0].to_tensor().unwrap();
    let returned = outputs[1].to_tensor().unwrap();
    assert_eq!(values_f32(&through_list), vec![2.0, 3.0]);
    assert_eq!(values_f32(&returned), vec![2.0, 3.0]);
    assert_eq!(values_f32(&caller_alias), vec![2.0, 3.0]);
    assert!(returned.is_same(&caller_alias), "add_ returns self");
}

#[test]
fn values_read_inside_loops_are_loaded_and_dropped_after() {
    let graph = loop_with_branch();
    let code = compile(&graph).unwrap();
    // The constant `1` (defined outside the loop) is read in both branches: loads only.
    let one_register = graph
        .all_nodes()
        .into_iter()
        .find(|&n| {
            graph.kind(n).is("prim::Constant")
                && matches!(graph.attribute(n, "value"), Some(AttributeValue::Int(1)))
        })
        .map(|n| graph.node_output(n, 0).index())
        .unwrap();
    assert!(!code.instructions.contains(&Instruction::Move(one_register)));
    assert!(code.instructions.contains(&Instruction::Drop(one_register)));
}

/// def f(x: int) -> int:
///     if x < 0:
///         raise Exception("negative input")
///     return x
fn raising_graph() -> Graph {
    let mut g = Graph::new();
    let top = g.top_block();
    let x = g.add_input(Type::Int, Some("x"));
    let zero = int(&mut g, 0);
    let negative = op1(
        &mut g,
        "aten::lt.int(int a, int b) -> bool",
        &[x, zero],
        Type::Bool,
    );
    let if_node = prim(&mut g, "prim::If", &[negative], &[Type::Int]);
    let then_block = g.add_node_block(if_node);
    let else_block = g.add_node_block(if_node);
    g.set_insert_point(InsertPoint::EndOf(then_block));
    let message = string(&mut g, "negative input");
    let class = string(&mut g, "builtins.Exception");
    prim(&mut g, "prim::RaiseException", &[message, class], &[]);
    let placeholder = prim(&mut g, "prim::Uninitialized", &[], &[Type::Int]);
    g.add_block_output(then_block, g.node_output(placeholder, 0));
    g.add_block_output(else_block, x);
    g.set_insert_point(InsertPoint::EndOf(top));
    g.register_output(g.node_output(if_node, 0));
    g
}

#[test]
fn raise_exception_carries_message_and_class() {
    let graph = raising_graph();
    let outputs = run_graph(&graph, vec![IValue::Int(3)], &NoMethods).unwrap();
    assert!(matches!(outputs[0], IValue::Int(3)));
    let error = run_graph(&graph, vec![IValue::Int(-1)], &NoMethods).unwrap_err();
    assert_eq!(
        error,
        RuntimeError::Exception {
            class_name: "builtins.Exception".to_string(),
            message: "negative input".to_string(),
        }
    );
    assert_eq!(error.to_string(), "builtins.Exception: negative input");
}

#[test]
fn python_integer_division_and_modulo() {
    let mut g = Graph::new();
    let a = g.add_input(Type::Int, Some("a"));
    let b = g.add_input(Type::Int, Some("b"));
    let floor = op1(
        &mut g,
        "aten::floordiv.int(int a, int b) -> int",
        &[a, b],
        Type::Int,
    );
    let rem = op1(
        &mut g,
        "aten::remainder.int(int a, int b) -> int",
        &[a, b],
        Type::Int,
    );
    let div = op1(
        &mut g,
        "aten::div.int(int a, int b) -> float",
        &[a, b],
        Type::Float,
    );
    g.register_output(floor);
    g.register_output(rem);
    g.register_output(div);
    let run = |x: i64, y: i64| {
        let out = run_graph(&g, vec![IValue::Int(x), IValue::Int(y)], &NoMethods).unwrap();
        (
            out[0].to_int().unwrap(),
            out[1].to_int().unwrap(),
            out[2].to_double().unwrap(),
        )
    };
    assert_eq!(run(-7, 2), (-4, 1, -3.5));
    assert_eq!(run(7, -2), (-4, -1, -3.5));
    assert_eq!(run(-7, -2), (3, -1, 3.5));
    assert_eq!(run(7, 2), (3, 1, 3.5));
    let error = run_graph(&g, vec![IValue::Int(1), IValue::Int(0)], &NoMethods).unwrap_err();
    assert!(matches!(error, RuntimeError::ZeroDivision(_)));
}

#[test]
fn nodes_without_schema_resolve_by_input_types() {
    // -7.0 % 2 through `aten::remainder` chosen by (float, int) types, and prim::max.
    let mut g = Graph::new();
    let a = g.add_input(Type::Float, Some("a"));
    let b = g.add_input(Type::Int, Some("b"));
    let rem = g.insert("aten::remainder", &[a, b], &[Type::Float]);
    let biggest = g.insert("prim::max", &[b, b], &[Type::Int]);
    g.register_output(g.node_output(rem, 0));
    g.register_output(g.node_output(biggest, 0));
    let out = run_graph(&g, vec![IValue::Double(-7.0), IValue::Int(2)], &NoMethods).unwrap();
    assert_eq!(out[0].to_double().unwrap(), 1.0);
    assert_eq!(out[1].to_int().unwrap(), 2);
}

#[test]
fn unknown_operators_are_reported() {
    let mut g = Graph::new();
    let x = g.add_input(Type::Tensor, Some("x"));
    let y = op1(
        &mut g,
        "aten::frobnicate(Tensor self) -> Tensor",
        &[x],
        Type::Tensor,
    );
    g.register_output(y);
    let error =
        run_graph(&g, vec![IValue::from(tensor_f32(&[1.0], &[1]))], &NoMethods).unwrap_err();
    assert_eq!(
        error,
        RuntimeError::UnknownOperator("aten::frobnicate".to_string())
    );
    assert_eq!(error.to_string(), "Unknown builtin op: aten::frobnicate");

    let mut g = Graph::new();
    let x = g.add_input(Type::Int, Some("x"));
    let y = g.insert("aten::frobnicate", &[x], &[Type::Int]);
    g.register_output(g.node_output(y, 0));
    let error = run_graph(&g, vec![IValue::Int(1)], &NoMethods).unwrap_err();
    assert!(matches!(error, RuntimeError::UnknownOperator(name) if name == "aten::frobnicate"));

    // Known name, no overload for these types.
    let mut g = Graph::new();
    let x = g.add_input(Type::Str, Some("x"));
    let y = g.insert("aten::neg", &[x], &[Type::Str]);
    g.register_output(g.node_output(y, 0));
    let error = run_graph(&g, vec![IValue::from("a")], &NoMethods).unwrap_err();
    assert!(error
        .to_string()
        .starts_with("Unknown builtin op: aten::neg (no overload"));
}

#[test]
fn step_budget_stops_infinite_loops() {
    // while True: pass
    let mut g = Graph::new();
    let top = g.top_block();
    let max = int(&mut g, i64::MAX);
    let yes = boolean(&mut g, true);
    let loop_node = prim(&mut g, "prim::Loop", &[max, yes], &[]);
    let body = g.add_node_block(loop_node);
    g.add_block_parameter(body, Type::Int);
    g.set_insert_point(InsertPoint::EndOf(body));
    let again = boolean(&mut g, true);
    g.add_block_output(body, again);
    g.set_insert_point(InsertPoint::EndOf(top));
    let options = RunOptions {
        max_steps: Some(1000),
        ..RunOptions::default()
    };
    let error = run_graph_with_options(&g, vec![], &NoMethods, &options).unwrap_err();
    assert_eq!(error, RuntimeError::StepBudgetExceeded(1000));
    assert_eq!(error.to_string(), "step budget of 1000 exceeded");
}

#[test]
fn tuples_lists_dicts_and_print() {
    let mut g = Graph::new();
    let a = g.add_input(Type::Int, Some("a"));
    let b = g.add_input(Type::Float, Some("b"));
    let tuple = prim(
        &mut g,
        "prim::TupleConstruct",
        &[a, b],
        &[Type::Tuple(vec![Type::Int, Type::Float])],
    );
    let tuple = g.node_output(tuple, 0);
    let one = int(&mut g, 1);
    let second = prim(&mut g, "prim::TupleIndex", &[tuple, one], &[Type::Float]);
    let unpacked = prim(
        &mut g,
        "prim::TupleUnpack",
        &[tuple],
        &[Type::Int, Type::Float],
    );
    let key = string(&mut g, "k");
    let dict = prim(
        &mut g,
        "prim::DictConstruct",
        &[key, a],
        &[Type::dict(Type::Str, Type::Int)],
    );
    let dict = g.node_output(dict, 0);
    let looked_up = op1(
        &mut g,
        "aten::__getitem__.Dict_str(Dict(str, t) self, str key) -> t(*)",
        &[dict, key],
        Type::Int,
    );
    let list = prim(
        &mut g,
        "prim::ListConstruct",
        &[a, looked_up],
        &[Type::list(Type::Int)],
    );
    let list = g.node_output(list, 0);
    let pieces = prim(&mut g, "prim::ListUnpack", &[list], &[Type::Int, Type::Int]);
    prim(&mut g, "prim::Print", &[b, key, list, tuple], &[]);
    g.register_output(g.node_output(second, 0));
    g.register_output(g.node_output(unpacked, 0));
    g.register_output(g.node_output(pieces, 1));

    let printed = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = printed.clone();
    let options = RunOptions {
        print: Some(Arc::new(move |line: &str| {
            sink.lock().unwrap().push(line.to_string())
        })),
        ..RunOptions::default()
    };
    let out = run_graph_with_options(
        &g,
        vec![IValue::Int(4), IValue::Double(1.0)],
        &NoMethods,
        &options,
    )
    .unwrap();
    assert_eq!(out[0].to_double().unwrap(), 1.0);
    assert_eq!(out[1].to_int().unwrap(), 4);
    assert_eq!(out[2].to_int().unwrap(), 4);
    assert_eq!(
        *printed.lock().unwrap(),
        vec!["1. k [4, 4] (4, 1.)".to_string()]
    );
}

#[test]
fn list_unpack_length_mismatch_is_an_error() {
    let mut g = Graph::new();
    let l = g.add_input(Type::list(Type::Int), Some("l"));
    let pieces = prim(&mut g, "prim::ListUnpack", &[l], &[Type::Int, Type::Int]);
    g.register_output(g.node_output(pieces, 0));
    let error = run_graph(&g, vec![IValue::int_list(&[1, 2, 3])], &NoMethods).unwrap_err();
    assert_eq!(
        error.to_string(),
        "Expected 2 elements in a list but found 3"
    );
}

#[test]
fn missing_default_arguments_are_filled_from_the_schema() {
    // aten::add.Tensor with the alpha input left out.
    let mut g = Graph::new();
    let x = g.add_input(Type::Tensor, Some("x"));
    let y = op1(
        &mut g,
        "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
        &[x, x],
        Type::Tensor,
    );
    g.register_output(y);
    let out = run_graph(
        &g,
        vec![IValue::from(tensor_f32(&[1.5, -2.0], &[2]))],
        &NoMethods,
    )
    .unwrap();
    assert_eq!(values_f32(&out[0].to_tensor().unwrap()), vec![3.0, -4.0]);
}

#[test]
fn constants_follow_the_output_type() {
    let mut g = Graph::new();
    let ints = g.insert_constant(
        Some(AttributeValue::Ints(vec![1, 2])),
        Type::list(Type::Int),
    );
    let strs = g.insert_constant(
        Some(AttributeValue::Strs(vec!["a".into()])),
        Type::list(Type::Str),
    );
    let device = g.insert_constant(Some(AttributeValue::Str("cpu".into())), Type::Device);
    let nothing = none(&mut g);
    let flag = boolean(&mut g, false);
    for value in [ints, strs, device, nothing, flag] {
        g.register_output(value);
    }
    let out = run_graph(&g, vec![], &NoMethods).unwrap();
    assert_eq!(out[0].to_int_vec().unwrap(), vec![1, 2]);
    assert_eq!(out[1].python_repr(), "['a']");
    assert_eq!(out[2].to_string(), "cpu");
    assert!(out[3].is_none());
    assert!(matches!(out[4], IValue::Bool(false)));

    let mut g = Graph::new();
    let bad = g.insert_constant(Some(AttributeValue::Str("x".into())), Type::Int);
    g.register_output(bad);
    assert!(matches!(
        run_graph(&g, vec![], &NoMethods),
        Err(RuntimeError::InvalidGraph(_))
    ));
}

#[test]
fn wrong_input_count_is_an_argument_error() {
    let graph = raising_graph();
    let error = run_graph(&graph, vec![], &NoMethods).unwrap_err();
    assert!(matches!(error, RuntimeError::Argument(_)));
}

#[test]
fn vararg_and_schemaless_prim_operators() {
    // s = "{} is {}".format(n, NumToTensor(n)); d = prim::dtype(t); dev = prim::device(t)
    let mut g = Graph::new();
    let n = g.add_input(Type::Int, Some("n"));
    let template = string(&mut g, "{} has dtype {} on {}");
    let tensor = g.insert("prim::NumToTensor", &[n], &[Type::Tensor]);
    let tensor = g.node_output(tensor, 0);
    let dtype = g.insert("prim::dtype", &[tensor], &[Type::Int]);
    let dtype = g.node_output(dtype, 0);
    let device = g.insert("prim::device", &[tensor], &[Type::Device]);
    let device = g.node_output(device, 0);
    let text = op1(
        &mut g,
        "aten::format(str self, ...) -> str",
        &[template, n, dtype, device],
        Type::Str,
    );
    g.register_output(text);
    g.register_output(tensor);
    let out = run_graph(&g, vec![IValue::Int(7)], &NoMethods).unwrap();
    // dtype 4 is int64 (c10::ScalarType::Long).
    assert_eq!(out[0].to_str().unwrap(), "7 has dtype 4 on cpu");
    let tensor = out[1].to_tensor().unwrap();
    assert_eq!(tensor.dim(), 0);
    assert_eq!(tensor.to_vec::<i64>().unwrap(), vec![7]);
}

#[test]
fn runtime_values_are_thread_safe() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<IValue>();
    assert_send_sync::<ferrojit_runtime::Module>();
    assert_send_sync::<ferrojit_runtime::Code>();
    assert_send_sync::<ferrojit_runtime::OperatorRegistry>();
}

/// def f(x: Scalar, n: int) -> Scalar:
///     total = x
///     for i in range(n):
///         if total < 10:
///             total = total + x
///         else:
///             total = total - 1
///     return total
fn scalar_loop(while_condition: Option<bool>) -> Graph {
    let mut g = Graph::new();
    let x = g.add_input(Type::Number, Some("x"));
    let n = g.add_input(Type::Int, Some("n"));
    let ten = int(&mut g, 10);
    let one = int(&mut g, 1);
    let start = boolean(&mut g, true);
    let top = g.top_block();
    let loop_node = prim(&mut g, "prim::Loop", &[n, start, x], &[Type::Number]);
    let body = g.add_node_block(loop_node);
    g.add_block_parameter(body, Type::Int);
    let total = g.add_block_parameter(body, Type::Number);
    g.set_insert_point(InsertPoint::EndOf(body));
    let small = op1(
        &mut g,
        "aten::lt(Scalar a, Scalar b) -> bool",
        &[total, ten],
        Type::Bool,
    );
    let if_node = prim(&mut g, "prim::If", &[small], &[Type::Number]);
    let then_block = g.add_node_block(if_node);
    let else_block = g.add_node_block(if_node);
    g.set_insert_point(InsertPoint::EndOf(then_block));
    let added = op1(
        &mut g,
        "aten::add(Scalar a, Scalar b) -> Scalar",
        &[total, x],
        Type::Number,
    );
    g.add_block_output(then_block, added);
    g.set_insert_point(InsertPoint::EndOf(else_block));
    let subtracted = op1(
        &mut g,
        "aten::sub(Scalar a, Scalar b) -> Scalar",
        &[total, one],
        Type::Number,
    );
    g.add_block_output(else_block, subtracted);
    g.set_insert_point(InsertPoint::EndOf(body));
    // A `while` loop's condition is computed in the body; a `for` loop's is constant.
    let keep_going = match while_condition {
        Some(value) => {
            let limit = int(&mut g, if value { 1_000 } else { -1_000 });
            let total = g.node_output(if_node, 0);
            op1(
                &mut g,
                "aten::lt(Scalar a, Scalar b) -> bool",
                &[total, limit],
                Type::Bool,
            )
        }
        None => start,
    };
    g.add_block_output(body, keep_going);
    g.add_block_output(body, g.node_output(if_node, 0));
    g.set_insert_point(InsertPoint::EndOf(top));
    g.register_output(g.node_output(loop_node, 0));
    g
}

/// The fused instructions (compare-and-branch, results straight into registers, the
/// counted back edge) compute numbers inline and fall back to the kernels, with the
/// kernels' results and errors, for other operands.
#[test]
fn fused_number_instructions_match_the_kernels() {
    let graph = scalar_loop(None);
    let code = compile(&graph).unwrap();
    let has = |fused: fn(&Instruction) -> bool| code.instructions.iter().any(fused);
    assert!(
        has(|i| matches!(i, Instruction::NumberJumpIfFalse { .. })),
        "{code}"
    );
    assert!(
        has(|i| matches!(i, Instruction::NumberInto { .. })),
        "{code}"
    );
    assert!(
        has(|i| matches!(i, Instruction::LoopNextCounted { .. })),
        "{code}"
    );
    let run =
        |graph: &Graph, x: IValue, n: i64| run_graph(graph, vec![x, IValue::Int(n)], &NoMethods);
    // 3, 6, 9, 12, 11, 10, 9, 12
    assert!(matches!(
        run(&graph, IValue::Int(3), 7).unwrap()[..],
        [IValue::Int(12)]
    ));
    assert!(matches!(
        run(&graph, IValue::Int(3), 0).unwrap()[..],
        [IValue::Int(3)]
    ));
    let outputs = run(&graph, IValue::Double(2.5), 5).unwrap();
    assert!(
        matches!(outputs[..], [IValue::Double(v)] if v == 11.5),
        "{outputs:?}"
    );
    // Bools are numbers to the kernels only: true + true is the int 2.
    let outputs = run(&graph, IValue::Bool(true), 3).unwrap();
    assert!(matches!(outputs[..], [IValue::Int(4)]), "{outputs:?}");
    let error = run(&graph, IValue::from("a"), 1).unwrap_err();
    assert!(error.to_string().contains("Scalar"), "{error}");

    // A condition computed in the body is checked on every back edge.
    let graph = scalar_loop(Some(true));
    let code = compile(&graph).unwrap();
    assert!(
        code.instructions
            .iter()
            .any(|i| matches!(i, Instruction::LoopNext { .. })),
        "{code}"
    );
    assert!(matches!(
        run(&graph, IValue::Int(3), 7).unwrap()[..],
        [IValue::Int(12)]
    ));
    let graph = scalar_loop(Some(false));
    assert!(matches!(
        run(&graph, IValue::Int(3), 7).unwrap()[..],
        [IValue::Int(6)]
    ));
}
