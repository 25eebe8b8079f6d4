//! The `CompilationUnit` API on hand-written TorchScript: function lookup, schemas from
//! signatures, calls between functions and methods, class attributes and constants.

#[path = "compile_support.rs"]
mod compile_support;

use std::sync::Arc;

use compile_support::operators;
use ferrojit_frontend::source::SourceFile;
use ferrojit_frontend::{compile_source, CompilationUnit};
use ferrojit_ir::{AttributeKind, AttributeValue, Type};

const MODULE_SOURCE: &str = "\
class M(Module):
  __parameters__ = [\"weight\", ]
  __buffers__ = []
  weight : Tensor
  training : bool
  scale : Final[int] = 3
  def forward(self, x: Tensor) -> Tensor:
    y = self.helper(x)
    self.weight = y
    return y * self.scale
  def helper(self, x: Tensor) -> Tensor:
    return torch.linear(x, self.weight)

def twice(x: Tensor, times: int = 2) -> Tensor:
  return x * times

def caller(x):
  return twice(x), __torch__.twice(x, 3)

def infer(x):
  return x.size(0)
";

#[test]
fn free_functions_have_schemas_and_call_each_other() {
    let unit = compile_source(MODULE_SOURCE, operators()).unwrap();
    assert_eq!(
        unit.function_names(),
        vec![
            "__torch__.twice".to_string(),
            "__torch__.caller".to_string(),
            "__torch__.infer".to_string()
        ]
    );
    let twice = unit.function("__torch__.twice").unwrap();
    assert_eq!(twice.name(), "twice");
    assert_eq!(twice.qualified_name(), "__torch__.twice");
    assert_eq!(
        twice.schema().to_string(),
        "__torch__.twice(Tensor x, int times=2) -> Tensor"
    );

    // Unannotated return types are inferred from the body.
    let infer = unit.function("__torch__.infer").unwrap();
    assert_eq!(
        infer.schema().to_string(),
        "__torch__.infer(Tensor x) -> int"
    );

    let caller = unit.function("__torch__.caller").unwrap();
    let graph = caller.graph(&unit).unwrap();
    ferrojit_ir::verifier::verify(&graph).unwrap();
    let text = graph.to_ir_string();
    // The default argument is filled in at the call site.
    let expected = "graph(%x : Tensor):
  %2 : int = prim::Constant[value=3]() # <string>:18:38
  %1 : int = prim::Constant[value=2]()
  %3 : Tensor = prim::CallFunction[name=\"__torch__.twice\"](%x, %1) # <string>:18:9
  %4 : Tensor = prim::CallFunction[name=\"__torch__.twice\"](%x, %2) # <string>:18:19
  %5 : (Tensor, Tensor) = prim::TupleConstruct(%3, %4) # <string>:18:9
  return (%5)
";
    assert_eq!(strip_numbers(&text), strip_numbers(expected), "{text}");
}

/// Value numbers of unnamed values depend on emission order; compare without them.
fn strip_numbers(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '%' {
            while chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                chars.next();
            }
        }
    }
    out
}

#[test]
fn methods_attributes_and_class_constants() {
    let unit = compile_source(MODULE_SOURCE, operators()).unwrap();
    let class = unit.resolve_class("__torch__.M").unwrap();
    assert!(class.is_module());
    assert_eq!(
        class.attribute("weight").unwrap().kind,
        AttributeKind::Parameter
    );
    assert_eq!(class.attribute("training").unwrap().ty, Type::Bool);
    assert!(class.attribute("scale").is_none());
    let forward = unit.method(&class, "forward").unwrap();
    assert_eq!(
        forward.schema().to_string(),
        "forward(__torch__.M self, Tensor x) -> Tensor"
    );
    assert_eq!(
        forward.owner_class().unwrap().qualified_name(),
        "__torch__.M"
    );
    let graph = forward.graph(&unit).unwrap();
    ferrojit_ir::verifier::verify(&graph).unwrap();
    let text = strip_numbers(&graph.to_ir_string());
    let expected = "graph(%self : __torch__.M,
      %x : Tensor):
  % : int = prim::Constant[value=3]() # <string>:10:15
  %y : Tensor = prim::CallMethod[name=\"helper\"](%self, %x) # <string>:8:8
   = prim::SetAttr[name=\"weight\"](%self, %y) # <string>:9:4
  % : Tensor = aten::mul(%y, %) # <string>:10:11
  return (%)
";
    assert_eq!(text, expected);
    let helper = unit.method(&class, "helper").unwrap().graph(&unit).unwrap();
    let text = strip_numbers(&helper.to_ir_string());
    assert!(
        text.contains("prim::GetAttr[name=\"weight\"](%self)"),
        "{text}"
    );
    assert!(text.contains("aten::linear(%x, %, %)"), "{text}");
    assert!(unit.method(&class, "missing").is_err());
}

#[test]
fn constants_table_and_source_loader() {
    let mut unit = CompilationUnit::new(operators());
    unit.set_constants(vec![
        (Some(AttributeValue::Int(7)), Type::Int),
        (None, Type::NoneType),
    ]);
    unit.set_source_loader(Box::new(|qualifier: &str| match qualifier {
        "__torch__.lib" => Some(SourceFile::new(
            "code/__torch__/lib.py",
            "def seven() -> int:\n  return CONSTANTS.c0\n",
        )),
        _ => None,
    }));
    unit.define_source(
        SourceFile::new(
            "code/__torch__.py",
            "def f(x: int) -> int:\n  return torch.add(x, __torch__.lib.seven())\n",
        ),
        "__torch__",
    )
    .unwrap();
    let seven = unit
        .function("__torch__.lib.seven")
        .unwrap()
        .graph(&unit)
        .unwrap();
    assert!(
        seven.to_ir_string().contains("prim::Constant[value=7]"),
        "{seven}"
    );
    let f = unit.function("__torch__.f").unwrap().graph(&unit).unwrap();
    assert!(
        f.to_ir_string()
            .contains("prim::CallFunction[name=\"__torch__.lib.seven\"]()"),
        "{f}"
    );
    assert!(unit.function("__torch__.nothing.here").is_err());
    assert!(unit.resolve_class("__torch__.Missing").is_err());
}

#[test]
fn recursion_is_rejected() {
    let unit = compile_source("def f(x):\n  return f(x)\n", operators()).unwrap();
    let error = unit.function("__torch__.f").unwrap_err();
    assert!(
        error.to_string().contains("recursion is not supported"),
        "{error}"
    );
}

#[test]
fn unit_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<CompilationUnit>();
    check::<ferrojit_frontend::Function>();
    // Threads that start together on a fresh unit race to compile the same function;
    // none may see another's compilation as recursion or a half-loaded definition.
    const THREADS: usize = 8;
    for _round in 0..50 {
        let unit = Arc::new(compile_source(MODULE_SOURCE, operators()).unwrap());
        let start = Arc::new(std::sync::Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let unit = unit.clone();
                let start = start.clone();
                std::thread::spawn(move || {
                    start.wait();
                    let twice = unit.function("__torch__.twice").unwrap();
                    twice.graph(&unit).unwrap().to_ir_string()
                })
            })
            .collect();
        let texts: Vec<String> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(texts.windows(2).all(|w| w[0] == w[1]));
    }
}

/// torch/functional.py's scripted functions: `torch.norm` and `torch.tensordot` call the
/// first overload their argument types match, `torch.unique` the function its constant
/// flags choose (which sets what it returns); a flag that is not a constant is refused.
#[test]
fn torch_functional_calls_pick_overloads_and_flag_dispatches() {
    let source = "\
def norms(x: Tensor):
  return torch.norm(x), torch.norm(x, 'nuc', [0, 1]), torch.norm(x, 3), torch.norm(x, 2.5, 1)

def dots(a: Tensor, b: Tensor):
  return torch.tensordot(a, b, dims=1), torch.tensordot(a, b, ([0], [1]))

def uniques(x: Tensor):
  return torch.unique(x), torch.unique(x, return_counts=True), torch.unique_consecutive(x, True, True)
";
    let unit = compile_source(source, operators()).unwrap();
    let called = |function: &str| -> Vec<String> {
        let graph = unit
            .function(&format!("__torch__.{function}"))
            .unwrap()
            .graph(&unit)
            .unwrap();
        let text = graph.to_ir_string();
        text.split("name=\"__torch__.torch.functional.")
            .skip(1)
            .map(|rest| rest.split('"').next().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(
        called("norms"),
        [
            "_norm_str",
            "_norm_str",
            "_norm_number",
            "_norm_number_int_dim"
        ]
    );
    assert_eq!(called("dots"), ["_tensordot_count", "_tensordot_tuple"]);
    assert_eq!(
        called("uniques"),
        [
            "_return_output",
            "_return_counts",
            "_consecutive_return_inverse_and_counts"
        ]
    );
    let uniques = unit.function("__torch__.uniques").unwrap();
    assert_eq!(
        uniques.schema().returns[0].ty.annotation_str(),
        "Tuple[Tensor, Tuple[Tensor, Tensor], Tuple[Tensor, Tensor, Tensor]]"
    );

    let flag = "def f(x: Tensor, b: bool):\n  return torch.unique(x, return_inverse=b)\n";
    let unit = compile_source(flag, operators()).unwrap();
    // The function compiles on lookup (its return type is inferred), so either step refuses.
    let error = unit
        .function("__torch__.f")
        .and_then(|function| function.graph(&unit))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("return_inverse must be a constant"),
        "{error}"
    );
}
