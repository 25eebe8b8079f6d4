//! Compile errors: PyTorch-style messages with the source excerpt and `<--- HERE` under the
//! offending range (expected texts follow what PyTorch 2.15 prints for the same source).

#[path = "compile_support.rs"]
mod compile_support;

use compile_support::operators;
use ferrojit_frontend::error::ErrorKind;
use ferrojit_frontend::{compile_source, FrontendError};

fn compile_error(source: &str) -> FrontendError {
    let unit = compile_source(source, operators()).expect("source parses");
    // Without a return annotation the body is compiled by `function` (to infer the type).
    match unit
        .function("__torch__.f")
        .and_then(|function| function.graph(&unit))
    {
        Ok(graph) => panic!("expected a compile error, got\n{graph}"),
        Err(error) => error,
    }
}

#[test]
fn undefined_variable_points_at_the_name() {
    let error = compile_error("def f(x):\n    return x + y\n");
    assert_eq!(error.kind, ErrorKind::Semantic);
    assert_eq!(error.line_col(), Some((2, 16)));
    assert_eq!(
        error.to_string(),
        "undefined value y:\n  File \"<string>\", line 2\ndef f(x):\n    return x + y\n               ~ <--- HERE\n"
    );
}

#[test]
fn wrong_argument_type_lists_the_variants() {
    let error = compile_error("def f(x):\n    return torch.add(x, \"s\")\n");
    let text = error.to_string();
    assert!(
        text.starts_with("Arguments for call are not valid.\nThe following variants are available:\n  \n  aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor:\n  Expected a value of type 'Tensor' for argument 'other' but instead found type 'str'.\n  \n  aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor:\n  Expected a value of type 'number' for argument 'other' but instead found type 'str'.\n"),
        "{text}"
    );
    assert!(
        text.contains("  aten::add.int(int a, int b) -> int:\n  Expected a value of type 'int' for argument 'b' but instead found type 'str'.\n"),
        "{text}"
    );
    assert!(
        text.ends_with("\nThe original call is:\n  File \"<string>\", line 2\ndef f(x):\n    return torch.add(x, \"s\")\n           ~~~~~~~~~ <--- HERE\n"),
        "{text}"
    );
}

#[test]
fn too_many_arguments_is_reported_per_overload() {
    let error = compile_error("def f(x):\n    return torch.relu(x, x)\n");
    let text = error.to_string();
    assert!(text.contains("aten::relu(Tensor self) -> Tensor:\n  Expected at most 1 arguments but found 2 positional arguments.\n"), "{text}");
    assert!(text.contains("           ~~~~~~~~~~ <--- HERE"), "{text}");
}

#[test]
fn unknown_operator() {
    // Scripted from Python, `torch.foo` fails as a Python attribute lookup (PyTorch's
    // message in the language corpus's reject_unknown_builtin fixture).
    let error = compile_error("def f(x):\n    y = x\n    return torch.foo(y)\n");
    assert_eq!(
        error.to_string(),
        "object has no attribute foo:\n  File \"<string>\", line 3\ndef f(x):\n    y = x\n    return torch.foo(y)\n           ~~~~~~~~~ <--- HERE\n"
    );
    let error = compile_error("def f(x):\n    return ops.aten.bar(x)\n");
    assert!(
        error.message.starts_with("Unknown builtin op: aten::bar."),
        "{error}"
    );
    assert_eq!(error.line_col(), Some((2, 12)));
}

#[test]
fn variable_defined_in_one_branch_is_not_visible_after() {
    // PyTorch's ir_emitter reports this at the `if`, with a note at the use.
    let error = compile_error("def f(x, c: bool):\n    if c:\n        y = x\n    return y\n");
    assert_eq!(error.message, "y is not defined in the false branch");
    assert_eq!(error.line_col(), Some((2, 5)));
    assert_eq!(error.notes.len(), 1);
    assert_eq!(error.notes[0].message, "and was used here");
    assert_eq!(
        error.notes[0].range.as_ref().map(|r| r.line_col()),
        Some((4, 12))
    );
}

#[test]
fn reassigning_an_outer_variable_with_another_type_fails() {
    let error =
        compile_error("def f(x, c: bool):\n    y = 1\n    if c:\n        y = x\n    return y\n");
    assert_eq!(
        error.message,
        "Variable 'y' previously had type int but is now being assigned to a value of type Tensor"
    );
    assert_eq!(error.line_col(), Some((4, 9)));
}

#[test]
fn return_type_mismatch() {
    // (A tensor would convert: PyTorch's emitReturn applies implicit conversions first.)
    let error = compile_error("def f(x) -> int:\n    return \"s\"\n");
    assert_eq!(
        error.message,
        "Return value was annotated as having type int but is actually of type str"
    );
}

#[test]
fn errors_are_cached() {
    let unit = compile_source("def f(x) -> Tensor:\n    return zzz\n", operators()).unwrap();
    let function = unit.function("__torch__.f").unwrap();
    let first = function.graph(&unit).unwrap_err();
    let second = function.graph(&unit).unwrap_err();
    assert_eq!(first.to_string(), second.to_string());
}

#[test]
fn unsupported_constructs_are_errors_not_panics() {
    // Each of these is rejected by PyTorch's compiler too.
    for source in [
        "def f(x):\n    for i in range(3):\n        pass\n    else:\n        pass\n    return x\n",
        "def f(x):\n    return {1, 2}\n",
        "def f(x):\n    global g\n    return x\n",
        "def f(x):\n    class C:\n        pass\n    return x\n",
        "def f(*args):\n    return 1\n",
        "def f(x):\n    return (1, 2)[5]\n",
        "def f(x):\n    return 9223372036854775808\n",
        "def f(x):\n    return (1, 2)[x]\n",
        "def f(x):\n    return f\"{x!r}\"\n",
    ] {
        let error = compile_error(source);
        assert!(error.range.is_some(), "{error}");
    }
}
