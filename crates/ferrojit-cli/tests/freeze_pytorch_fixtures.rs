//! Freezing compared with what PyTorch's freezing made of the same modules
//! (tests/fixtures/passes/freezing/, written by its generate.py): interface-typed submodules
//! (`freeze_interfaces`, on and off) and tuple, list, dict, string and None attributes.
//!
//! For each module the frozen forward must have PyTorch's operations in PyTorch's order
//! (constants aside), fold the same attributes into constants (by PyTorch's `self.…`
//! names), keep the same attributes on the frozen module, and, saved and loaded again, give
//! the outputs of PyTorch's frozen module. Where PyTorch refuses, ferrojit refuses with
//! PyTorch's message.

use std::path::PathBuf;
use std::process::Command;

use ferrojit_conformance::{compare_with, repo_root, Comparison};
use ferrojit_ir::{Graph, Prim, ValueId};
use ferrojit_opt::freezing::{freeze, FreezeOptions, FrozenModule};
use ferrojit_runtime::IValue;
use ferrojit_serialize::export::save_object_with_graph_methods_to_bytes;
use ferrojit_serialize::import::{load_module, load_module_from_bytes, LoadedModule};
use ferrojit_serialize::torch_save;

fn fixture(name: &str) -> PathBuf {
    repo_root()
        .join("tests/fixtures/passes/freezing")
        .join(name)
}

/// What PyTorch recorded for one `freeze_interfaces` setting.
fn recorded(name: &str, freeze_interfaces: bool) -> serde_json::Value {
    let text = std::fs::read_to_string(fixture(&format!("{name}.frozen.json"))).unwrap();
    let record: serde_json::Value = serde_json::from_str(&text).unwrap();
    let key = if freeze_interfaces {
        "freeze_interfaces"
    } else {
        "no_freeze_interfaces"
    };
    record[key].clone()
}

fn strings(value: &serde_json::Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {value}"))
        .iter()
        .map(|item| item.as_str().unwrap().to_string())
        .collect()
}

fn load(name: &str) -> LoadedModule {
    load_module(&fixture(&format!("{name}.pt"))).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn freeze_with(loaded: &LoadedModule, freeze_interfaces: bool) -> Result<FrozenModule, String> {
    let options = FreezeOptions {
        freeze_interfaces,
        ..FreezeOptions::default()
    };
    freeze(&loaded.module, &options).map_err(|e| e.to_string())
}

/// Whether `value` is a constant, or a tuple/list/dict construct of such values: what
/// PyTorch holds in one `prim::Constant` (ferrojit's IR has no tuple or dict constant).
fn is_constant_expression(graph: &Graph, value: ValueId) -> bool {
    let Some(node) = graph.producer(value) else {
        return false;
    };
    let kind = graph.kind(node);
    if kind.is_prim(Prim::Constant) {
        return true;
    }
    let construct = kind.is_prim(Prim::TupleConstruct)
        || kind.is_prim(Prim::ListConstruct)
        || kind.is_prim(Prim::DictConstruct);
    construct
        && graph
            .node_inputs(node)
            .iter()
            .all(|&input| is_constant_expression(graph, input))
}

/// The top-level node kinds of `graph` in order, constants (and constant constructs) left
/// out, and the sorted names of the folded attributes (`self.…` constants).
fn summary(graph: &Graph) -> (Vec<String>, Vec<String>) {
    let mut kinds = Vec::new();
    let mut folded = Vec::new();
    for node in graph.block_nodes(graph.top_block()) {
        let output = graph.node_outputs(node).first().copied();
        let constant = output.is_some_and(|value| is_constant_expression(graph, value));
        if !constant {
            kinds.push(graph.kind(node).as_str().to_string());
            continue;
        }
        let name = graph.debug_name(output.unwrap());
        if let Some(name) = name.filter(|name| name.starts_with("self.")) {
            folded.push(name.to_string());
        }
    }
    folded.sort();
    (kinds, folded)
}

fn save_and_reload(name: &str, loaded: &LoadedModule, frozen: &FrozenModule) -> LoadedModule {
    let methods: Vec<(String, Graph)> = frozen
        .methods
        .iter()
        .map(|method| (method.name.clone(), method.graph.clone()))
        .collect();
    let bytes = save_object_with_graph_methods_to_bytes(
        loaded,
        &frozen.object,
        &frozen.original_class,
        &methods,
        name,
    )
    .unwrap_or_else(|e| panic!("{name}: save: {e}"));
    load_module_from_bytes(bytes).unwrap_or_else(|e| panic!("{name}: reload: {e}"))
}

/// Freezes fixture `name` and checks it against PyTorch's record and outputs.
fn check_like_pytorch(name: &str) {
    let loaded = load(name);
    let frozen = freeze_with(&loaded, true).unwrap_or_else(|e| panic!("{name}: {e}"));
    let record = recorded(name, true);
    let graph = &frozen.methods[0].graph;
    let (kinds, folded) = summary(graph);
    let text = graph.to_ir_string();
    assert_eq!(
        kinds,
        strings(&record["kinds"]),
        "{name}: operations\n{text}"
    );
    assert_eq!(
        folded,
        strings(&record["folded_attributes"]),
        "{name}: folded attributes\n{text}"
    );
    let mut kept: Vec<String> = frozen
        .class
        .attributes()
        .into_iter()
        .map(|attribute| attribute.name)
        .collect();
    kept.sort();
    assert_eq!(
        kept,
        strings(&record["attributes"]),
        "{name}: attributes kept"
    );

    let reloaded = save_and_reload(name, &loaded, &frozen);
    let arguments = match torch_save::load_file(&fixture(&format!("{name}.inputs.pt"))).unwrap() {
        IValue::Tuple(tuple) => tuple.items.to_vec(),
        other => vec![other],
    };
    let expected = torch_save::load_file(&fixture(&format!("{name}.expected.pt"))).unwrap();
    let actual = reloaded
        .module
        .forward(arguments)
        .unwrap_or_else(|e| panic!("{name}: forward of the frozen module: {e}"));
    compare_with(&actual, &expected, name, Comparison::models(1e-5, 1e-6)).unwrap_or_else(
        |problem| panic!("{name}: differs from PyTorch's frozen module: {problem}"),
    );
}

#[test]
fn interface_submodules_are_inlined_as_pytorch_inlines_them() {
    check_like_pytorch("interface_module");
}

#[test]
fn interface_modules_are_refused_when_interfaces_are_not_frozen() {
    let loaded = load("interface_module");
    let Err(error) = freeze_with(&loaded, false) else {
        panic!("froze with interfaces off");
    };
    let pytorch = recorded("interface_module", false)["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(error, pytorch);
}

#[test]
fn setting_an_interface_attribute_is_refused_with_pytorchs_message() {
    let loaded = load("interface_reassigned");
    let Err(error) = freeze_with(&loaded, true) else {
        panic!("froze a SetAttr of an interface");
    };
    let pytorch = recorded("interface_reassigned", true)["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        pytorch.ends_with(&error),
        "ferrojit: {error}\nPyTorch: {pytorch}"
    );
}

#[test]
fn tuple_list_dict_string_and_none_attributes_fold_as_in_pytorch() {
    check_like_pytorch("container_attributes");
}

#[test]
fn freeze_command_freezes_interfaces_unless_told_not_to() {
    let dir = std::env::temp_dir().join(format!("ferrojit-freeze-iface-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let output = dir.join("interface_module.frozen.pt");
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ferrojit"))
            .arg("freeze")
            .args(extra)
            .arg(fixture("interface_module.pt"))
            .arg("-o")
            .arg(&output)
            .output()
            .unwrap()
    };
    let frozen = run(&[]);
    assert!(
        frozen.status.success(),
        "{}",
        String::from_utf8_lossy(&frozen.stderr)
    );
    let reloaded = load_module(&output).unwrap();
    assert!(reloaded.module.class().attributes().is_empty());
    let refused = run(&["--no-freeze-interfaces"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("attempted to freeze a module that uses interface attributes"),
        "{stderr}"
    );
}
