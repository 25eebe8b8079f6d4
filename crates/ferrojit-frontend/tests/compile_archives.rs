//! Compiles the `code/` files of real archives (written by PyTorch's `torch.jit.save`, copied
//! to `data/archives/NAME/` by `data/generate_graphs.py`) through the source loader, and
//! compares the root module's `forward` graph with the one PyTorch builds when it loads the
//! same archive (`data/archives/NAME.expected.txt`).

#[path = "compile_support.rs"]
mod compile_support;

use std::sync::Arc;

use compile_support::{data_dir, normalize, operators};
use ferrojit_frontend::source::SourceFile;
use ferrojit_frontend::CompilationUnit;
use ferrojit_ir::AttributeKind;

fn unit_for(name: &str) -> CompilationUnit {
    let root = data_dir().join("archives").join(name);
    let mut unit = CompilationUnit::new(operators());
    unit.set_source_loader(Box::new(move |qualifier: &str| {
        let relative = format!("{}.py", qualifier.replace('.', "/"));
        let text = std::fs::read_to_string(root.join(&relative)).ok()?;
        Some(SourceFile::new(format!("code/{relative}"), text))
    }));
    unit
}

fn root_class(expected: &str) -> String {
    let first = expected.lines().next().unwrap_or_default();
    let (_, rest) = first.split_once(" : ").expect("typed self input");
    rest.trim_end_matches(',').to_string()
}

fn check(name: &str) {
    let expected = std::fs::read_to_string(
        data_dir()
            .join("archives")
            .join(format!("{name}.expected.txt")),
    )
    .unwrap();
    let unit = unit_for(name);
    let class = unit
        .resolve_class(&root_class(&expected))
        .unwrap_or_else(|e| panic!("{e}"));
    let forward = unit
        .method(&class, "forward")
        .unwrap_or_else(|e| panic!("{e}"));
    let graph = forward
        .graph(&unit)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    ferrojit_ir::verifier::verify(&graph).unwrap();
    let ours = graph.to_ir_string();
    assert_eq!(
        normalize(&ours),
        normalize(&expected),
        "{name}: graphs differ\n--- ours ---\n{ours}\n--- PyTorch ---\n{expected}"
    );
}

#[test]
fn scripted_module_forward_matches_pytorch() {
    check("scripted_module");
}

#[test]
fn scripted_fn_forward_matches_pytorch() {
    check("scripted_fn");
}

#[test]
fn int_promotion_forward_matches_pytorch() {
    check("int_promotion");
}

#[test]
fn raises_forward_matches_pytorch() {
    check("raises");
}

#[test]
fn while_loop_forward_matches_pytorch() {
    check("while_loop");
}

#[test]
fn traced_mlp_forward_matches_pytorch() {
    check("traced_mlp");
}

#[test]
fn views_inplace_forward_matches_pytorch() {
    check("views_inplace");
}

#[test]
fn archive_classes_resolve_with_attribute_kinds_and_submodules() {
    let unit = unit_for("scripted_module");
    let class = unit.resolve_class("__torch__.ScriptedModule").unwrap();
    assert!(class.is_module());
    let offset = class.attribute("offset").unwrap();
    assert_eq!(offset.kind, AttributeKind::Buffer);
    let fc1 = class.attribute("fc1").unwrap();
    let linear = fc1.ty.class_type().unwrap().clone();
    assert_eq!(
        linear.qualified_name(),
        "__torch__.torch.nn.modules.linear.Linear"
    );
    // Resolved on demand, recursively: the submodule's own attributes are known.
    assert_eq!(
        linear.attribute("weight").unwrap().kind,
        AttributeKind::Parameter
    );
    assert_eq!(
        linear.attribute("bias").unwrap().kind,
        AttributeKind::Parameter
    );
    assert_eq!(
        linear.attribute("training").unwrap().kind,
        AttributeKind::Regular
    );
    // `in_features : Final[int] = 4` is a class constant, not an attribute.
    assert!(linear.attribute("in_features").is_none());
    let fc2 = class.attribute("fc2").unwrap();
    assert_eq!(
        fc2.ty.class_type().unwrap().qualified_name(),
        "__torch__.torch.nn.modules.linear.___torch_mangle_0.Linear"
    );
    // The ReLU submodule calls a free function of another file.
    let relu = class
        .attribute("relu")
        .unwrap()
        .ty
        .class_type()
        .unwrap()
        .clone();
    let relu_forward = unit.method(&relu, "forward").unwrap();
    let graph = relu_forward.graph(&unit).unwrap();
    let text = graph.to_ir_string();
    assert!(
        text.contains("prim::CallFunction[name=\"__torch__.torch.nn.functional.relu\"](%input"),
        "{text}"
    );
    let functional = unit.function("__torch__.torch.nn.functional.relu").unwrap();
    assert_eq!(
        functional.schema().to_string(),
        "__torch__.torch.nn.functional.relu(Tensor input, bool inplace=False) -> Tensor"
    );
    // Method schemas include self.
    assert_eq!(
        unit.method(&linear, "forward")
            .unwrap()
            .schema()
            .to_string(),
        "forward(__torch__.torch.nn.modules.linear.Linear self, Tensor input) -> Tensor"
    );
    let unit = Arc::new(unit);
    let shared = unit.clone();
    let handle = std::thread::spawn(move || {
        shared
            .method(&linear, "forward")
            .unwrap()
            .graph(&shared)
            .is_ok()
    });
    assert!(handle.join().unwrap());
}

/// The hand-picked `code/` files in `data/` (a module with a ModuleList, Linear submodules,
/// a free function, while loops and string formatting) all compile to verified graphs.
#[test]
fn net_code_files_compile() {
    let data = data_dir();
    let mut unit = CompilationUnit::new(operators());
    unit.set_source_loader(Box::new(move |qualifier: &str| {
        let file = match qualifier {
            "__torch__" => "net_root.py",
            "__torch__.torch.nn.modules.linear"
            | "__torch__.torch.nn.modules.linear.___torch_mangle_0" => "linear.py",
            "__torch__.torch.nn.modules.container" => "container.py",
            _ => return None,
        };
        let mut text = std::fs::read_to_string(data.join(file)).ok()?;
        if qualifier.ends_with("___torch_mangle_0") {
            // The mangled copy of Linear names its own (mangled) class in `self`.
            text = text.replace("linear.Linear", "linear.___torch_mangle_0.Linear");
        }
        Some(SourceFile::new(file, text))
    }));
    let net = unit.resolve_class("__torch__.Net").unwrap();
    let blocks = net
        .attribute("blocks")
        .unwrap()
        .ty
        .class_type()
        .unwrap()
        .clone();
    assert_eq!(
        blocks.attribute("0").unwrap().ty.to_string(),
        "__torch__.Block"
    );
    for (class, method) in [
        ("__torch__.Net", "forward"),
        ("__torch__.Net", "describe"),
        ("__torch__.Block", "forward"),
        ("__torch__.torch.nn.modules.container.ModuleList", "__len__"),
    ] {
        let class = unit.resolve_class(class).unwrap();
        let graph = unit
            .method(&class, method)
            .and_then(|m| m.graph(&unit))
            .unwrap_or_else(|e| panic!("{method}: {e}"));
        ferrojit_ir::verifier::verify(&graph).unwrap();
    }
    let scale_and_sum = unit.function("__torch__.scale_and_sum").unwrap();
    assert_eq!(
        scale_and_sum.schema().to_string(),
        "__torch__.scale_and_sum(Tensor[] xs, float factor=2.) -> ((Tensor, int))"
    );
    let forward = unit.method(&net, "forward").unwrap().graph(&unit).unwrap();
    let text = forward.to_ir_string();
    assert!(
        text.contains("prim::CallFunction[name=\"__torch__.scale_and_sum\"]"),
        "{text}"
    );
    assert!(text.contains("prim::ListUnpack"), "{text}");
    assert!(text.contains("prim::TupleIndex"), "{text}");
}
