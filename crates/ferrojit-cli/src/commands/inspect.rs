//! `ferrojit inspect MODEL.pt`: show what an archive holds: a method's compiled graph
//! (`--graph`), the Python-printed code of the model's class (`--code`), or the module tree
//! with parameters, buffers and attributes, their types and shapes (`--summary`).

use std::path::Path;

use std::collections::BTreeMap;

use ferrojit_ir::{AttributeKind, Type};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_runtime::Module;
use ferrojit_serialize::import::load_module;
use ferrojit_serialize::python_printer::print_program;

/// What `inspect` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InspectView {
    Graph,
    Code,
    Summary,
}

/// `inspect --graph --optimized --inputs ARGS.pt`: the graph the optimizing executor runs
/// for those inputs (PyTorch's `graph_for`), or an error saying why the general graph runs.
/// With `grad` (`--grad`), the plan of a call that records gradients, as `run --grad` runs it.
pub fn print_optimized_graph(
    model: &Path,
    method: &str,
    inputs: Option<&Path>,
    grad: bool,
) -> Result<(), String> {
    if grad {
        ferrojit_autograd::register().map_err(|e| format!("autograd: {e}"))?;
        ferrojit_runtime::autograd::set_grad_enabled(true);
    }
    let loaded = load_module(model).map_err(|e| super::not_a_model::model_load_error(model, &e))?;
    let class = loaded.module.class().clone();
    if !class.has_method(method) {
        return Err(format!(
            "the model ({}) has no method '{method}'",
            class.qualified_name()
        ));
    }
    let arguments = super::bench::read_arguments(inputs)?;
    let optimizer = ferrojit_opt::graph_executor::SpecializingOptimizer;
    let graph = loaded
        .module
        .graph_for(method, arguments, &optimizer)
        .map_err(|e| format!("{method}() cannot take these inputs: {e}"))?
        .map_err(|reason| format!("no optimized graph for these inputs: {reason}"))?;
    print!("{}", graph.to_ir_string());
    Ok(())
}

pub fn inspect_model(model: &Path, method: &str, view: InspectView) -> Result<(), String> {
    let loaded = load_module(model).map_err(|e| super::not_a_model::model_load_error(model, &e))?;
    let class = loaded.module.class().clone();
    match view {
        InspectView::Graph => {
            if !class.has_method(method) {
                let mut methods = class.method_names();
                methods.sort();
                return Err(format!(
                    "the model ({}) has no method '{method}'; its methods are: {}",
                    class.qualified_name(),
                    methods.join(", ")
                ));
            }
            let function = loaded
                .unit
                .method(&class, method)
                .map_err(|e| format!("cannot find {method}: {e}"))?;
            let graph = function
                .graph(&loaded.unit)
                .map_err(|e| format!("cannot compile {method}: {e}"))?;
            print!("{}", graph.to_ir_string());
        }
        InspectView::Code => {
            let printed = print_program(&loaded.unit, &[class.qualified_name().to_string()], &[])
                .map_err(|e| {
                format!("cannot print the code of {}: {e}", class.qualified_name())
            })?;
            for (qualifier, text) in &printed.files {
                if printed.files.len() > 1 {
                    println!("# {qualifier}");
                }
                print!("{text}");
                if !text.ends_with('\n') {
                    println!();
                }
            }
        }
        InspectView::Summary => print!("{}", module_summary(&loaded.module)),
    }
    Ok(())
}

/// The module tree: one line per module (`name: class`, the class name without TorchScript's
/// `__torch__.` prefix and `___torch_mangle_N` parts), then its parameters, buffers and
/// plain attributes with their types, and tensor dtypes and shapes. Attributes repeated on
/// every module with one value (`training=False` on all of them, typically) are shown once
/// on a first line, `all N modules: training=False`; otherwise `training` is shown at the
/// root and then only where a module differs from its parent, and `_is_full_backward_hook`
/// only when it is set.
pub fn module_summary(root: &Module) -> String {
    let common = attributes_common_to_every_module(root);
    let mut out = String::new();
    if !common.is_empty() {
        let (count, shown): (usize, Vec<String>) = (
            common.values().next().map_or(0, |(count, _)| *count),
            common
                .iter()
                .map(|(name, (_, repr))| format!("{name}={repr}"))
                .collect(),
        );
        out.push_str(&format!("all {count} modules: {}\n", shown.join(", ")));
    }
    // Module trees are as deep as the archive made them; walk with an explicit stack.
    let mut pending: Vec<(usize, String, Module, Option<bool>)> =
        vec![(0, "<root>".to_string(), root.clone(), None)];
    while let Some((depth, name, module, parent_training)) = pending.pop() {
        let indent = "  ".repeat(depth);
        out.push_str(&format!(
            "{indent}{name}: {}\n",
            readable_class_name(module.class().qualified_name())
        ));
        let class = module.class().clone();
        let mut training = parent_training;
        for attribute in class.attributes() {
            let Ok(value) = module.attr(&attribute.name) else {
                continue;
            };
            if matches!(&value, IValue::Object(object) if object.class().is_module()) {
                continue;
            }
            if attribute.kind == AttributeKind::Regular {
                if common.contains_key(&attribute.name) {
                    continue;
                }
                match (attribute.name.as_str(), &value) {
                    ("training", IValue::Bool(flag)) => {
                        training = Some(*flag);
                        if parent_training == Some(*flag) {
                            continue;
                        }
                    }
                    ("_is_full_backward_hook", IValue::None) => continue,
                    _ => {}
                }
            }
            let label = match attribute.kind {
                AttributeKind::Parameter => "parameter",
                AttributeKind::Buffer => "buffer",
                AttributeKind::Regular => "attribute",
            };
            out.push_str(&format!(
                "{indent}  {label} {}: {}\n",
                attribute.name,
                describe_value(&attribute.ty, &value)
            ));
        }
        for (child_name, child) in module.named_children().into_iter().rev() {
            pending.push((depth + 1, child_name, child, training));
        }
    }
    out
}

/// The plain (non-module, non-tensor-slot) attributes that every module of the tree has,
/// each with one value: name → (number of modules, value repr). Empty for a tree of one
/// module, where there is nothing to fold.
fn attributes_common_to_every_module(root: &Module) -> BTreeMap<String, (usize, String)> {
    let mut modules = 0usize;
    let mut seen: BTreeMap<String, (usize, Option<String>)> = BTreeMap::new();
    let mut pending = vec![root.clone()];
    while let Some(module) = pending.pop() {
        modules += 1;
        for attribute in module.class().attributes() {
            if attribute.kind != AttributeKind::Regular {
                continue;
            }
            let Ok(value) = module.attr(&attribute.name) else {
                continue;
            };
            if matches!(&value, IValue::Object(_) | IValue::Tensor(_)) {
                continue;
            }
            // Unset hook flags are noise: never shown (see the per-module listing).
            if attribute.name == "_is_full_backward_hook" && value.is_none() {
                continue;
            }
            let repr = value.python_repr();
            let entry = seen
                .entry(attribute.name.clone())
                .or_insert((0, Some(repr.clone())));
            entry.0 += 1;
            if entry.1.as_deref() != Some(repr.as_str()) {
                entry.1 = None;
            }
        }
        pending.extend(module.named_children().into_iter().map(|(_, child)| child));
    }
    if modules < 2 {
        return BTreeMap::new();
    }
    seen.into_iter()
        .filter_map(|(name, (count, repr))| {
            (count == modules).then_some(())?;
            Some((name, (count, repr?)))
        })
        .collect()
}

/// `__torch__.torch.nn.modules.linear.___torch_mangle_3.Linear` as a user wrote it:
/// `torch.nn.modules.linear.Linear`.
pub(crate) fn readable_class_name(qualified: &str) -> String {
    let name = qualified.strip_prefix("__torch__.").unwrap_or(qualified);
    name.split('.')
        .filter(|part| {
            !part
                .strip_prefix("___torch_mangle_")
                .is_some_and(|number| number.chars().all(|c| c.is_ascii_digit()))
        })
        .collect::<Vec<_>>()
        .join(".")
}

fn describe_value(declared: &Type, value: &IValue) -> String {
    match value {
        IValue::Tensor(tensor) => {
            let tensor = tensor.get();
            let sizes: Vec<String> = tensor.sizes().iter().map(|s| s.to_string()).collect();
            format!("Tensor {} [{}]", tensor.dtype(), sizes.join(", "))
        }
        IValue::None if !matches!(declared, Type::NoneType) => {
            format!("{} = None", declared.annotation_str())
        }
        other => {
            let mut repr = other.python_repr();
            if repr.len() > 60 {
                let cut = (0..=60)
                    .rev()
                    .find(|&i| repr.is_char_boundary(i))
                    .unwrap_or(0);
                repr.truncate(cut);
                repr.push_str("...");
            }
            format!("{} = {repr}", declared.annotation_str())
        }
    }
}
