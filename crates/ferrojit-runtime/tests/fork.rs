//! `prim::fork` / `aten::wait`: forked calls run in parallel on the inter-op pool, errors
//! and grad mode cross the fork, the step budget is shared, and deep nesting still works.

mod common;

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use ferrojit_ir::{AttributeValue, Graph, Type};
use ferrojit_runtime::interpreter::{run_graph, run_graph_with_options, RunOptions};
use ferrojit_runtime::object::NoMethods;
use ferrojit_runtime::registry::{pop_arguments, register_operator};
use ferrojit_runtime::{IValue, RuntimeError};

use common::{calls, fork, int, wait};

/// Arrivals at the rendezvous; each caller waits (at most 60 s) until two have arrived.
static ARRIVED: Mutex<usize> = Mutex::new(0);
static ARRIVAL: Condvar = Condvar::new();

/// `fork_test::rendezvous(int x) -> int`: 1 when a second caller arrived while this one
/// waited, 0 when it waited alone for the whole minute. Two forks can only both see 1 if
/// they ran at the same time: in sequence, the first would wait alone.
fn register_rendezvous() {
    let _ = register_operator("fork_test::rendezvous(int x) -> int", |stack| {
        let [_] = pop_arguments::<1>(stack)?;
        let mut arrived = ARRIVED.lock().unwrap();
        *arrived += 1;
        let (arrived, timeout) = ARRIVAL
            .wait_timeout_while(arrived, Duration::from_secs(60), |count| *count < 2)
            .unwrap();
        drop(arrived);
        ARRIVAL.notify_all();
        stack.push(IValue::Int(i64::from(!timeout.timed_out())));
        Ok(())
    });
}

#[test]
fn forked_calls_run_at_the_same_time() {
    register_rendezvous();
    let mut graph = Graph::new();
    let first = fork(&mut graph, calls("fork_test::rendezvous", 1));
    let second = fork(&mut graph, calls("fork_test::rendezvous", 2));
    let first = wait(&mut graph, first);
    let second = wait(&mut graph, second);
    graph.register_output(first);
    graph.register_output(second);
    let outputs = run_graph(&graph, Vec::new(), &NoMethods).unwrap();
    assert!(
        matches!(outputs.as_slice(), [IValue::Int(1), IValue::Int(1)]),
        "both forks must meet at the rendezvous: {outputs:?}"
    );
}

#[test]
fn errors_raise_at_every_wait_and_not_without_one() {
    let mut failing = Graph::new();
    let message = failing.insert_constant(Some(AttributeValue::Str("bad".into())), Type::Str);
    let class = failing.insert_constant(
        Some(AttributeValue::Str("builtins.ValueError".into())),
        Type::Str,
    );
    failing.insert("prim::RaiseException", &[message, class], &[]);
    let never = failing.insert("prim::Uninitialized", &[], &[Type::Int]);
    let never = failing.node_output(never, 0);
    failing.register_output(never);

    let mut unwaited = Graph::new();
    fork(&mut unwaited, failing.clone());
    let seven = int(&mut unwaited, 7);
    unwaited.register_output(seven);
    let outputs = run_graph(&unwaited, Vec::new(), &NoMethods).unwrap();
    assert!(matches!(outputs.as_slice(), [IValue::Int(7)]));

    let mut twice = Graph::new();
    let future = fork(&mut twice, failing);
    let first = wait(&mut twice, future);
    let second = wait(&mut twice, future);
    twice.register_output(first);
    twice.register_output(second);
    let error = run_graph(&twice, Vec::new(), &NoMethods).unwrap_err();
    assert_eq!(
        error,
        RuntimeError::Exception {
            class_name: "builtins.ValueError".into(),
            message: "bad".into()
        }
    );
}

#[test]
fn forked_code_runs_under_the_forking_threads_grad_mode() {
    let mut reads = Graph::new();
    let node = reads.insert("aten::is_grad_enabled", &[], &[Type::Bool]);
    let flag = reads.node_output(node, 0);
    reads.register_output(flag);

    let mut graph = Graph::new();
    let off = graph.insert_constant(Some(AttributeValue::Int(0)), Type::Bool);
    graph.insert("aten::set_grad_enabled", &[off], &[]);
    let node = graph.insert("prim::fork", &[], &[Type::Future(Box::new(Type::Bool))]);
    graph.set_attribute(node, "Subgraph", AttributeValue::Graph(Box::new(reads)));
    let future = graph.node_output(node, 0);
    let node = graph.insert("aten::wait", &[future], &[Type::Bool]);
    let seen = graph.node_output(node, 0);
    let on = graph.insert_constant(Some(AttributeValue::Int(1)), Type::Bool);
    graph.insert("aten::set_grad_enabled", &[on], &[]);
    graph.register_output(seen);
    let outputs = run_graph(&graph, Vec::new(), &NoMethods).unwrap();
    assert!(
        matches!(outputs.as_slice(), [IValue::Bool(false)]),
        "{outputs:?}"
    );
}

/// A forked `while True` loop.
fn spins() -> Graph {
    let mut graph = Graph::new();
    let max = int(&mut graph, i64::MAX);
    let yes = graph.insert_constant(Some(AttributeValue::Int(1)), Type::Bool);
    let loop_node = graph.insert("prim::Loop", &[max, yes], &[]);
    let body = graph.add_node_block(loop_node);
    graph.add_block_parameter(body, Type::Int);
    graph.set_insert_point(ferrojit_ir::InsertPoint::EndOf(body));
    let again = graph.insert_constant(Some(AttributeValue::Int(1)), Type::Bool);
    graph.add_block_output(body, again);
    let top = graph.top_block();
    graph.set_insert_point(ferrojit_ir::InsertPoint::EndOf(top));
    let one = int(&mut graph, 1);
    graph.register_output(one);
    graph
}

#[test]
fn forked_tasks_draw_on_the_callers_step_budget() {
    let mut graph = Graph::new();
    let future = fork(&mut graph, spins());
    let value = wait(&mut graph, future);
    graph.register_output(value);
    let options = RunOptions {
        max_steps: Some(100_000),
        ..RunOptions::default()
    };
    let error = run_graph_with_options(&graph, Vec::new(), &NoMethods, &options).unwrap_err();
    assert_eq!(error, RuntimeError::StepBudgetExceeded(100_000));
}

#[test]
fn deeply_nested_forks_finish() {
    // fork(fork(fork(... 100 deep ... 5))): past the pool's nesting bound forks run in place.
    let mut inner = Graph::new();
    let five = int(&mut inner, 5);
    inner.register_output(five);
    for _ in 0..100 {
        let mut outer = Graph::new();
        let future = fork(&mut outer, inner);
        let value = wait(&mut outer, future);
        outer.register_output(value);
        inner = outer;
    }
    let outputs = run_graph(&inner, Vec::new(), &NoMethods).unwrap();
    assert!(matches!(outputs.as_slice(), [IValue::Int(5)]));
}
