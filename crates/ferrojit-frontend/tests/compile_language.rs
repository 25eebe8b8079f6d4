//! Language features beyond plain functions: script classes, enums, NamedTuples, unions
//! with `isinstance`, `with`, `fork`/`wait`, comprehensions and f-strings compile to the
//! nodes the interpreter runs (their results are checked against PyTorch by the language
//! corpus in ferrojit-conformance).

#[path = "compile_support.rs"]
mod compile_support;

use std::collections::HashMap;
use std::sync::Arc;

use ferrojit_frontend::operators::OperatorSchemas;
use ferrojit_frontend::{compile_source, FrontendError};
use ferrojit_ir::{parse_schema, FunctionSchema};

/// PyTorch's schemas for the language-support operators, on top of the test registry.
const EXTRA_SCHEMAS: &[&str] = &[
    "aten::append.t(t[](a!) self, t(c -> *) el) -> t[](a!)",
    "aten::format(str self, ...) -> str",
    "aten::is_grad_enabled() -> bool",
    "aten::set_grad_enabled(bool val) -> ()",
    "aten::wait(Future(t) self) -> t",
    "aten::__range_length(int lo, int hi, int step) -> int",
    "aten::__derive_index(int index, int start, int step) -> int",
];

struct Operators {
    base: Arc<dyn OperatorSchemas>,
    extra: HashMap<String, Vec<Arc<FunctionSchema>>>,
}

impl OperatorSchemas for Operators {
    fn overloads(&self, qualified_name: &str) -> Vec<Arc<FunctionSchema>> {
        let mut found = self.base.overloads(qualified_name);
        if found.is_empty() {
            found = self.extra.get(qualified_name).cloned().unwrap_or_default();
        }
        found
    }
}

fn operators() -> Arc<dyn OperatorSchemas> {
    let mut extra: HashMap<String, Vec<Arc<FunctionSchema>>> = HashMap::new();
    for text in EXTRA_SCHEMAS {
        let schema = parse_schema(text).expect("valid schema");
        extra
            .entry(schema.name.clone())
            .or_default()
            .push(Arc::new(schema));
    }
    Arc::new(Operators {
        base: compile_support::operators(),
        extra,
    })
}

fn compile(source: &str) -> Result<String, FrontendError> {
    let unit = compile_source(source, operators())?;
    let function = unit.function("__torch__.f")?;
    Ok(function.graph(&unit)?.to_ir_string())
}

fn graph_of(source: &str) -> String {
    match compile(source) {
        Ok(graph) => graph,
        Err(error) => panic!("compile failed:\n{error}"),
    }
}

#[test]
fn script_class_attributes_come_from_init() {
    let graph = graph_of(
        "class Box:\n    def __init__(self, w: int):\n        self.w = w\n        self.tags: List[str] = []\n\n    @property\n    def double(self) -> int:\n        return self.w * 2\n\n    def __add__(self, other: \"Box\") -> int:\n        return self.w + other.w\n\n\ndef f(x: int) -> int:\n    b = Box(x)\n    b.tags.append(\"a\")\n    return b.double + (b + b)\n",
    );
    assert!(graph.contains("prim::CreateObject"), "{graph}");
    assert!(
        graph.contains("prim::CallMethod[name=\"__init__\"]"),
        "{graph}"
    );
    assert!(
        graph.contains("prim::CallMethod[name=\"double\"]"),
        "{graph}"
    );
    assert!(
        graph.contains("prim::CallMethod[name=\"__add__\"]"),
        "{graph}"
    );
    assert!(graph.contains("prim::GetAttr[name=\"tags\"]"), "{graph}");
}

#[test]
fn setting_an_unknown_attribute_outside_init_fails() {
    let error = compile(
        "class P:\n    def __init__(self):\n        self.a = 1\n\n\ndef f(x: int) -> int:\n    p = P()\n    p.b = x\n    return x\n",
    )
    .unwrap_err();
    assert!(
        error
            .message
            .starts_with("Tried to set nonexistent attribute: b."),
        "{error}"
    );
}

#[test]
fn enum_members_names_and_values() {
    let graph = graph_of(
        "class Color(Enum):\n    RED = 1\n    GREEN = 2\n\n\ndef f(x: int) -> int:\n    total = 0\n    for c in Color:\n        if c == Color.RED:\n            total += c.value\n    return total + len(Color.GREEN.name)\n",
    );
    assert!(
        graph.contains("prim::EnumConstant[name=\"RED\"]"),
        "{graph}"
    );
    assert!(graph.contains("prim::EnumValue"), "{graph}");
    assert!(graph.contains("prim::EnumName"), "{graph}");
    assert!(graph.contains("aten::eq"), "{graph}");
}

#[test]
fn named_tuples_take_keywords_and_unpack() {
    let graph = graph_of(
        "class Pair(NamedTuple):\n    first: int\n    second: int\n\n\ndef f(a: int) -> int:\n    p = Pair(second=a, first=a + 1)\n    x, y = p\n    return p.first + p[1] + x + y\n",
    );
    assert!(graph.contains("prim::TupleConstruct"), "{graph}");
    assert!(graph.contains("prim::TupleIndex"), "{graph}");
}

#[test]
fn isinstance_refines_union_members() {
    let graph = graph_of(
        "def f(x: Union[int, str]) -> str:\n    if isinstance(x, int):\n        return str(x + 1)\n    return x\n",
    );
    assert!(graph.contains("prim::isinstance[types=[int]]"), "{graph}");
    assert!(graph.contains(": int = prim::unchecked_cast"), "{graph}");
    assert!(graph.contains(": str = prim::unchecked_cast"), "{graph}");
}

#[test]
fn isinstance_is_static_when_the_type_decides() {
    let graph = graph_of("def f(x: int) -> bool:\n    return isinstance(x, (int, float))\n");
    assert!(!graph.contains("prim::isinstance"), "{graph}");
}

#[test]
fn with_calls_enter_and_exit_around_a_final_return() {
    let graph = graph_of(
        "class Guard:\n    def __init__(self):\n        self.n = 0\n\n    def __enter__(self):\n        self.n += 1\n\n    def __exit__(self, a: Any, b: Any, c: Any):\n        self.n -= 1\n\n\ndef f(x: int) -> int:\n    g = Guard()\n    with g:\n        return x + 1\n",
    );
    let enter = graph.find("name=\"__enter__\"").expect("enter");
    let add = graph.find("aten::add").expect("add");
    let exit = graph.find("name=\"__exit__\"").expect("exit");
    assert!(enter < add && add < exit, "{graph}");
}

#[test]
fn no_grad_blocks_compile_and_keep_their_variables() {
    // (The grad-mode calls are emitted too, but dead code elimination drops them: they
    // have no schema side effects, and ferrojit records no autograd history.)
    let graph = graph_of(
        "def f(x: Tensor) -> Tensor:\n    with torch.no_grad():\n        y = x * 2\n    return y\n",
    );
    assert!(graph.contains("%y : Tensor = aten::mul"), "{graph}");
}

#[test]
fn fork_builds_a_subgraph_and_wait_reads_the_future() {
    let graph = graph_of(
        "def work(x: int) -> int:\n    return x * 2\n\n\ndef f(x: int) -> int:\n    fut = torch.jit.fork(work, x)\n    return torch.jit.wait(fut)\n",
    );
    assert!(graph.contains("Future[int] = prim::fork"), "{graph}");
    assert!(graph.contains("aten::wait"), "{graph}");
}

#[test]
fn comprehensions_and_fstrings() {
    let graph = graph_of(
        "def f(n: int) -> str:\n    squares = [i * i for i in range(n) if i > 1]\n    return f\"{n} gives {squares}\"\n",
    );
    assert!(graph.contains(": int[] = prim::ListConstruct"), "{graph}");
    assert!(graph.contains("aten::append"), "{graph}");
    assert!(graph.contains("aten::format"), "{graph}");
}

#[test]
fn conditionally_defined_variables_report_pytorchs_message() {
    let error =
        compile("def f(x: int) -> int:\n    if x > 0:\n        y = 1\n    return y\n").unwrap_err();
    assert_eq!(error.message, "y is not defined in the false branch");
}

#[test]
fn chained_comparisons_evaluate_later_operands_only_when_needed() {
    let graph = graph_of("def f(a: int, b: int, c: int) -> bool:\n    return a < b < c\n");
    assert_eq!(graph.matches("prim::If").count(), 1, "{graph}");
    let long_chain = format!(
        "def f(a: int) -> bool:\n    return a{}\n",
        " < a".repeat(2000)
    );
    assert!(compile(&long_chain).is_ok());
}
