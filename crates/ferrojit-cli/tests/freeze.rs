//! Freezing (issue 19, items 3 and 6): every zoo model that `torch.jit.freeze` accepts is
//! frozen by ferrojit, saved, loaded again by ferrojit, run, and compared with the outputs
//! PyTorch recorded for the unfrozen model (tests/fixtures/zoo/generate.py; float: rtol
//! 1e-4, atol 1e-5). The frozen graphs are checked for what freezing must remove (batch
//! norms folded into convolutions, dropouts, attribute reads), and the command's errors
//! for what PyTorch refuses.

use std::path::PathBuf;
use std::process::Command;

use ferrojit_conformance::{compare_with, repo_root, Comparison};
use ferrojit_ir::Graph;
use ferrojit_opt::freezing::{freeze, FreezeError, FreezeOptions, FrozenModule};
use ferrojit_opt::inliner::{inline_calls, MethodSourceCallees};
use ferrojit_runtime::IValue;
use ferrojit_serialize::export::save_object_with_graph_methods_to_bytes;
use ferrojit_serialize::import::{load_module, load_module_from_bytes, LoadedModule};
use ferrojit_serialize::torch_save;

const RTOL: f64 = 1e-4;
const ATOL: f64 = 1e-5;

fn zoo_file(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/zoo").join(name)
}

fn register_operators() {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        ferrojit_torchvision::register().expect("torchvision operators register");
    });
}

/// Loads zoo model `name`, puts it in eval mode when asked (as `module.eval()`), freezes it.
fn load_and_freeze(name: &str, eval: bool) -> Result<(LoadedModule, FrozenModule), String> {
    register_operators();
    let loaded =
        load_module(&zoo_file(&format!("{name}.pt"))).map_err(|e| format!("{name}: load: {e}"))?;
    if eval {
        for (_, module) in loaded.module.named_modules() {
            if module.class().attribute_index("training").is_some() {
                module
                    .set_attr("training", IValue::Bool(false))
                    .map_err(|e| format!("{name}: eval: {e}"))?;
            }
        }
    }
    let frozen = freeze(&loaded.module, &FreezeOptions::default())
        .map_err(|e| format!("{name}: freeze: {e}"))?;
    Ok((loaded, frozen))
}

/// Saves a frozen module as an archive and loads it back.
fn save_and_reload(
    name: &str,
    loaded: &LoadedModule,
    frozen: &FrozenModule,
) -> Result<LoadedModule, String> {
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
    .map_err(|e| format!("{name}: save: {e}"))?;
    load_module_from_bytes(bytes).map_err(|e| format!("{name}: reload: {e}"))
}

fn run_frozen_against_pytorch(name: &str, eval: bool) -> Result<(), String> {
    let (loaded, frozen) = load_and_freeze(name, eval)?;
    let reloaded = save_and_reload(name, &loaded, &frozen)?;
    let arguments = match torch_save::load_file(&zoo_file(&format!("{name}.inputs.pt")))
        .map_err(|e| format!("{name}: inputs: {e}"))?
    {
        IValue::Tuple(tuple) => tuple.items.to_vec(),
        other => vec![other],
    };
    let expected = torch_save::load_file(&zoo_file(&format!("{name}.expected.pt")))
        .map_err(|e| format!("{name}: expected: {e}"))?;
    let actual = reloaded
        .module
        .forward(arguments)
        .map_err(|e| format!("{name}: forward of the frozen module: {e}"))?;
    compare_with(&actual, &expected, name, Comparison::models(RTOL, ATOL))
        .map_err(|problem| format!("{name}: frozen result differs from PyTorch's: {problem}"))
}

fn check(name: &str) {
    if let Err(message) = run_frozen_against_pytorch(name, false) {
        panic!("{message}");
    }
}

#[test]
fn frozen_bert_tiny_matches_pytorch() {
    check("bert_tiny");
}

#[test]
fn frozen_encoder_layer_tiny_matches_pytorch() {
    check("encoder_layer_tiny");
}

#[test]
fn frozen_gpt_loop_tiny_matches_pytorch() {
    check("gpt_loop_tiny");
}

/// Saved in training mode: frozen after `eval()`, as PyTorch must be asked to.
#[test]
fn frozen_lstm_1layer_after_eval_matches_pytorch() {
    if let Err(message) = run_frozen_against_pytorch("lstm_1layer", true) {
        panic!("{message}");
    }
}

#[test]
fn frozen_nn_layers_tiny_matches_pytorch() {
    check("nn_layers_tiny");
}

#[test]
fn frozen_small_cnn_scripted_matches_pytorch() {
    check("small_cnn_scripted");
}

#[test]
fn frozen_small_cnn_traced_matches_pytorch() {
    check("small_cnn_traced");
}

/// Saved in training mode: frozen after `eval()`, as PyTorch must be asked to.
#[test]
fn frozen_torchvision_ops_after_eval_matches_pytorch() {
    if let Err(message) = run_frozen_against_pytorch("torchvision_ops", true) {
        panic!("{message}");
    }
}

fn kinds(graph: &Graph) -> Vec<String> {
    graph
        .all_nodes()
        .into_iter()
        .map(|node| graph.kind(node).as_str().to_string())
        .collect()
}

/// The forward graph of `loaded` with every call inlined: what the model runs unfrozen.
fn inlined_forward(loaded: &LoadedModule) -> Graph {
    let methods = loaded.module.object().methods().clone();
    let graph = methods
        .method_graph(loaded.module.class(), "forward")
        .expect("forward has a graph");
    let mut graph = graph.as_ref().clone();
    inline_calls(&mut graph, &MethodSourceCallees(methods.as_ref())).expect("forward inlines");
    graph
}

#[test]
fn frozen_conv_bn_model_has_no_batch_norm_dropout_or_attribute_left() {
    let (loaded, frozen) = load_and_freeze("small_cnn_scripted", false).unwrap();
    let before = kinds(&inlined_forward(&loaded));
    for kind in ["aten::batch_norm", "aten::dropout", "prim::GetAttr"] {
        assert!(
            before.iter().any(|k| k == kind),
            "the unfrozen model should have {kind}"
        );
    }
    let forward = &frozen.methods[0];
    assert_eq!(forward.name, "forward");
    let after = kinds(&forward.graph);
    for kind in ["aten::batch_norm", "aten::dropout", "prim::GetAttr"] {
        assert!(
            !after.iter().any(|k| k == kind),
            "the frozen graph still has {kind}:\n{}",
            forward.graph.to_ir_string()
        );
    }
    assert!(after.iter().any(|k| k == "aten::conv2d"));
    // Nothing is left to read from the module: the frozen class holds no attributes.
    assert!(frozen.class.attributes().is_empty());
    assert!(frozen.class.qualified_name().contains("___torch_mangle_"));
    // The reloaded archive's forward is the frozen graph too.
    let reloaded = save_and_reload("small_cnn_scripted", &loaded, &frozen).unwrap();
    let reloaded_graph = reloaded
        .module
        .object()
        .methods()
        .method_graph(reloaded.module.class(), "forward")
        .unwrap();
    let reloaded_kinds = kinds(&reloaded_graph);
    assert!(!reloaded_kinds.iter().any(|k| k == "aten::batch_norm"));
    assert!(!reloaded_kinds.iter().any(|k| k == "aten::dropout"));
}

#[test]
fn freezing_a_module_in_training_mode_is_refused_with_pytorchs_message() {
    let error = match load_and_freeze("torchvision_ops", false) {
        Ok(_) => panic!("a module in training mode froze"),
        Err(error) => error,
    };
    assert!(
        error.contains(&FreezeError::TrainingMode.to_string()),
        "{error}"
    );
    assert!(error.contains("Please call .eval()"), "{error}");
}

/// `torch.jit.freeze(torch.jit.load(frozen).eval())` freezes a frozen module again (its
/// C++ half accepts a module without `training`); ferrojit's result matches too.
#[test]
fn frozen_small_cnn_frozen_again_matches_pytorch() {
    check("small_cnn_frozen");
}

fn ferrojit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ferrojit"))
}

fn temporary(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrojit-freeze-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn freeze_command_writes_an_archive_that_runs() {
    let output = temporary("small_cnn_traced.frozen.pt");
    let status = ferrojit()
        .args(["freeze"])
        .arg(zoo_file("small_cnn_traced.pt"))
        .arg("-o")
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let frozen = load_module(&output).unwrap();
    assert!(frozen.module.attr("training").is_err());
    let run = ferrojit()
        .arg("run")
        .arg(&output)
        .arg("--inputs")
        .arg(zoo_file("small_cnn_traced.inputs.pt"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn freeze_command_errors_are_one_line() {
    let output = temporary("refused.pt");
    for (model, expected) in [
        (
            "torchvision_ops.pt",
            "Please call .eval() on your module before freezing.",
        ),
        (
            "small_cnn_scripted.inputs.pt",
            "Freezing expects a ScriptModule as input.",
        ),
    ] {
        let result = ferrojit()
            .arg("freeze")
            .arg(zoo_file(model))
            .arg("-o")
            .arg(&output)
            .output()
            .unwrap();
        assert!(!result.status.success());
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
    let evaluated = ferrojit()
        .arg("freeze")
        .arg(zoo_file("torchvision_ops.pt"))
        .arg("--eval")
        .arg("-o")
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        evaluated.status.success(),
        "{}",
        String::from_utf8_lossy(&evaluated.stderr)
    );
}

/// A module written as archive code: `scale` is never mutated (it must become a
/// constant), `count` is set and `buf` written in place (both must stay attributes, and the
/// frozen module must go on updating them).
fn counter_module() -> LoadedModule {
    use ferrojit_frontend::source::SourceFile;
    use ferrojit_serialize::import::{CompiledMethods, RegistrySchemas};
    use std::sync::Arc;
    let source = "class Counter(Module):\n  __parameters__ = []\n  __buffers__ = [\"buf\", ]\n  \
                  buf : Tensor\n  count : int\n  scale : float\n  training : bool\n  \
                  def forward(self, x: Tensor) -> Tensor:\n    \
                  self.count = torch.add(self.count, 1)\n    \
                  _0 = torch.add_(self.buf, x)\n    \
                  _1 = torch.mul(torch.add(x, self.buf), self.scale)\n    \
                  return torch.add(_1, self.count)\n";
    let unit =
        ferrojit_frontend::compilation_unit::CompilationUnit::new(RegistrySchemas::builtins());
    unit.define_source(
        SourceFile::new("counter.py", source.to_string()),
        "__torch__",
    )
    .expect("the counter module compiles");
    let unit = Arc::new(unit);
    let class = unit.resolve_class("__torch__.Counter").expect("class");
    let object = ferrojit_runtime::object::Object::new(class, CompiledMethods::new(unit.clone()));
    let buffer = ferrojit_tensor::Tensor::from_vec(vec![1.0_f32, 2.0], &[2]).unwrap();
    object.set_attr("buf", IValue::from(buffer)).unwrap();
    object.set_attr("count", IValue::Int(0)).unwrap();
    object.set_attr("scale", IValue::Double(0.5)).unwrap();
    object.set_attr("training", IValue::Bool(false)).unwrap();
    LoadedModule {
        module: ferrojit_runtime::module::Module::new(object),
        unit,
    }
}

#[test]
fn mutated_attributes_stay_attributes_and_keep_changing() {
    let loaded = counter_module();
    let frozen = freeze(&loaded.module, &FreezeOptions::default()).unwrap();
    let names: Vec<String> = frozen
        .class
        .attributes()
        .into_iter()
        .map(|attribute| attribute.name)
        .collect();
    assert_eq!(names, ["buf", "count"]);
    let graph = &frozen.methods[0].graph;
    let text = graph.to_ir_string();
    assert!(!text.contains("name=\"scale\""), "{text}");
    assert!(text.contains("prim::SetAttr[name=\"count\"]"), "{text}");
    let reloaded = save_and_reload("counter", &loaded, &frozen).unwrap();
    let fresh = counter_module();
    let x = || IValue::from(ferrojit_tensor::Tensor::from_vec(vec![0.5_f32, -1.0], &[2]).unwrap());
    for call in 0..3 {
        let expected = fresh.module.forward(vec![x()]).unwrap();
        let actual = reloaded.module.forward(vec![x()]).unwrap();
        compare_with(
            &actual,
            &expected,
            &format!("call {call}"),
            Comparison::models(0.0, 0.0),
        )
        .unwrap();
    }
    assert_eq!(reloaded.module.attr("count").unwrap().to_int().unwrap(), 3);
}

#[test]
fn preserved_attributes_and_methods_stay() {
    let loaded = counter_module();
    let options = FreezeOptions {
        preserved: vec!["scale".to_string()],
        ..FreezeOptions::default()
    };
    let frozen = freeze(&loaded.module, &options).unwrap();
    assert!(frozen.class.attribute_index("scale").is_some());
    let unknown = FreezeOptions {
        preserved: vec!["no_such_name".to_string()],
        ..FreezeOptions::default()
    };
    let error = freeze(&loaded.module, &unknown).unwrap_err();
    assert!(error.to_string().contains("no_such_name"), "{error}");
}
