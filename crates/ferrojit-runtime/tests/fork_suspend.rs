//! `wait` in a forked task suspends it and frees its inter-op thread, as PyTorch's
//! interpreter does, instead of blocking the thread. Its own test binary: the pool's size
//! (2) is set before the pool starts.

mod common;

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use ferrojit_ir::{Graph, Type, ValueId};
use ferrojit_runtime::interpreter::run_graph;
use ferrojit_runtime::object::NoMethods;
use ferrojit_runtime::registry::{pop_arguments, register_operator};
use ferrojit_runtime::IValue;

use common::{call_int, calls, fork, int, wait};

/// Which marks have been set (`suspend_test::mark`), and whether `release` ran.
struct Flags {
    marks: [bool; 2],
    released: bool,
}

static FLAGS: Mutex<Flags> = Mutex::new(Flags {
    marks: [false; 2],
    released: false,
});
static CHANGED: Condvar = Condvar::new();
/// How long an operator waits for another before giving up (only reached on failure).
const PATIENCE: Duration = Duration::from_secs(20);
const OUTER_STARTED: i64 = 0;
const HOLD_STARTED: i64 = 1;

fn set_mark(which: i64) {
    FLAGS.lock().unwrap().marks[which as usize] = true;
    CHANGED.notify_all();
}

/// Waits for `ready`; true when it held before `PATIENCE` ran out.
fn wait_for(ready: impl Fn(&Flags) -> bool) -> bool {
    let flags = FLAGS.lock().unwrap();
    let (_flags, timeout) = CHANGED
        .wait_timeout_while(flags, PATIENCE, |flags| !ready(flags))
        .unwrap();
    !timeout.timed_out()
}

fn register_operators() {
    // mark(i): records that code reached this point.
    register_operator("suspend_test::mark(int which) -> int", |stack| {
        let [which] = pop_arguments::<1>(stack)?;
        set_mark(which.to_int()?);
        stack.push(IValue::Int(0));
        Ok(())
    })
    .unwrap();
    // await_mark(i): blocks until mark i is set; returns 0 (or 1000 after giving up).
    register_operator("suspend_test::await_mark(int which) -> int", |stack| {
        let [which] = pop_arguments::<1>(stack)?;
        let which = which.to_int()? as usize;
        let seen = wait_for(|flags| flags.marks[which]);
        stack.push(IValue::Int(if seen { 0 } else { 1000 }));
        Ok(())
    })
    .unwrap();
    // hold(): marks HOLD_STARTED, then blocks its thread until release() runs: 1, or -1
    // when release() never ran.
    register_operator("suspend_test::hold(int x) -> int", |stack| {
        let [_] = pop_arguments::<1>(stack)?;
        set_mark(HOLD_STARTED);
        let released = wait_for(|flags| flags.released);
        stack.push(IValue::Int(if released { 1 } else { -1 }));
        Ok(())
    })
    .unwrap();
    register_operator("suspend_test::release(int x) -> int", |stack| {
        let [x] = pop_arguments::<1>(stack)?;
        FLAGS.lock().unwrap().released = true;
        CHANGED.notify_all();
        stack.push(x);
        Ok(())
    })
    .unwrap();
}

fn add(graph: &mut Graph, a: ValueId, b: ValueId) -> ValueId {
    let node = graph.insert("aten::add", &[a, b], &[Type::Int]);
    graph.node_output(node, 0)
}

/// With two inter-op threads: `outer` runs on one and forks `hold`, which takes the other
/// and blocks it until `release` runs. `outer` then waits on `hold`. `release`, forked
/// afterwards, can only run if `outer`'s wait gave its thread back: a blocking wait would
/// leave both threads stuck, and `hold` would give up and return -1.
#[test]
fn wait_in_a_forked_task_frees_its_thread() {
    std::env::set_var("FERROJIT_INTEROP_THREADS", "2");
    register_operators();

    // outer: mark(OUTER_STARTED); h = fork(hold); await_mark(HOLD_STARTED); wait(h)
    let mut outer = Graph::new();
    let started = call_int(&mut outer, "suspend_test::mark", OUTER_STARTED);
    let held = fork(&mut outer, calls("suspend_test::hold", 0));
    // Only once `hold` runs on a pool thread (not inline in this wait) does outer wait.
    let hold_running = call_int(&mut outer, "suspend_test::await_mark", HOLD_STARTED);
    let value = wait(&mut outer, held);
    let value = add(&mut outer, value, hold_running);
    let value = add(&mut outer, value, started);
    outer.register_output(value);

    // main: f = fork(outer); await_mark(OUTER_STARTED); wait(f). The caller's thread waits
    // until a pool thread runs outer, so it does not run outer itself.
    let mut main = Graph::new();
    let future = fork(&mut main, outer);
    let outer_running = call_int(&mut main, "suspend_test::await_mark", OUTER_STARTED);
    let value = wait(&mut main, future);
    let value = add(&mut main, value, outer_running);
    main.register_output(value);

    let caller = std::thread::spawn(move || run_graph(&main, Vec::new(), &NoMethods));
    // Once hold has a pool thread, fork release from a third thread, without waiting on it
    // (a wait would run it on that thread).
    if !wait_for(|flags| flags.marks[HOLD_STARTED as usize]) {
        panic!("hold never started: {:?}", caller.join().unwrap());
    }
    let mut releaser = Graph::new();
    let _ = fork(&mut releaser, calls("suspend_test::release", 0));
    let zero = int(&mut releaser, 0);
    releaser.register_output(zero);
    run_graph(&releaser, Vec::new(), &NoMethods).unwrap();

    let outputs = caller.join().unwrap().unwrap();
    assert!(
        matches!(outputs.as_slice(), [IValue::Int(1)]),
        "release must run on the thread outer's wait gave back (-1: it never ran; 1000+: a \
         mark was never reached): {outputs:?}"
    );
}
