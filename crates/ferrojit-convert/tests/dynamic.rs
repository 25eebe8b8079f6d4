//! `--dynamic` dimensions: a program converted with a dynamic batch runs at two batch sizes
//! with PyTorch's results (tests/fixtures/generate.py records the TorchScript module's
//! results at batch 3, 5 and 9), its metadata and size arguments follow the symbol, the
//! range is enforced by the runner's input check, and sizes the converter cannot express
//! symbolically are refused with an error naming the node.

use std::path::PathBuf;

use ferrojit_conformance::{compare_with, Comparison};
use ferrojit_convert::{convert_file_dynamic, ConvertError, DynamicDim, PROGRAM_NAME};
use ferrojit_export::model::{Argument, SymArgument, SymInt};
use ferrojit_export::{save_program_to_bytes, ExportedModule, LoadedProgram, Pt2Archive};
use ferrojit_runtime::IValue;
use ferrojit_serialize::torch_save;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/{name}"))
}

fn calls(name: &str) -> Vec<Vec<IValue>> {
    torch_save::load_file(&fixture(&format!("{name}.inputs.pt")))
        .expect("inputs load")
        .to_list()
        .expect("a list of calls")
        .to_vec()
        .into_iter()
        .map(|call| call.to_tuple().expect("a tuple per call").items.clone())
        .collect()
}

fn expected(name: &str) -> Vec<IValue> {
    torch_save::load_file(&fixture(&format!("{name}.expected.pt")))
        .expect("expected loads")
        .to_list()
        .expect("a list of results")
        .to_vec()
}

fn convert(name: &str, specs: &[&str]) -> Result<LoadedProgram, ConvertError> {
    let dynamic: Vec<DynamicDim> = specs
        .iter()
        .map(|spec| DynamicDim::parse(spec).expect("the spec parses"))
        .collect();
    let example = calls(name).remove(0);
    let program = convert_file_dynamic(
        &fixture(&format!("{name}.pt")),
        "forward",
        example,
        &dynamic,
    )?;
    if let Ok(directory) = std::env::var("FERROJIT_CONVERT_SAVE_TO") {
        let suffix = if specs.is_empty() { "_static" } else { "" };
        let path = PathBuf::from(directory).join(format!("{name}{suffix}.pt2"));
        ferrojit_export::save_program(&program, None, &path).expect("the program saves");
    }
    Ok(program)
}

fn reloaded(program: &LoadedProgram) -> ExportedModule {
    let bytes = save_program_to_bytes(program, None).expect("the program saves");
    let archive = Pt2Archive::from_bytes(bytes).expect("the archive reads");
    ExportedModule::new(archive.load(PROGRAM_NAME).expect("the program loads"))
        .expect("the program prepares")
}

fn symbolic(text: &str) -> bool {
    matches!(text, "s0" | "2*s0")
}

#[test]
fn dynamic_batch_runs_at_two_batch_sizes_and_enforces_its_range() {
    let program = convert("dynamic_batch", &["x:0=batch[2,8]"]).expect("converts");
    let exported = &program.program;
    let range = exported
        .range_constraints
        .get("s0")
        .expect("s0 has a range");
    assert_eq!((range.min_val, range.max_val), (Some(2), Some(8)));

    let graph = &exported.graph_module.graph;
    // The placeholder's batch is the symbol; its other sizes stay static.
    let x_meta = &graph.tensor_values["x"];
    assert!(matches!(&x_meta.sizes[0], SymInt::Expr(e) if e.expr_str == "s0"));
    assert_eq!(
        x_meta.sizes[1..],
        [SymInt::Int(2), SymInt::Int(4), SymInt::Int(4)]
    );
    // Strides follow: every stride but the innermost ones is static here (batch outermost).
    assert_eq!(x_meta.strides[0], SymInt::Int(32));

    // `y.size(0)` reads the symbol, `b * 2` is _operator.mul, and the view takes them.
    let targets: Vec<&str> = graph.nodes.iter().map(|n| n.target.as_str()).collect();
    assert!(
        targets.contains(&"torch.ops.aten.sym_size.int"),
        "{targets:?}"
    );
    assert!(targets.contains(&"_operator.mul"), "{targets:?}");
    let view_sizes = graph
        .nodes
        .iter()
        .filter(|n| n.target == "torch.ops.aten.view.default")
        .find_map(|n| match &n.inputs[1].arg {
            Argument::SymInts(sizes) => Some(sizes.clone()),
            _ => None,
        })
        .expect("a view with symbolic sizes");
    assert!(matches!(&view_sizes[0], SymArgument::Name(name) if name.starts_with("sym_size_int")));
    assert_eq!(view_sizes[1], SymArgument::Literal(-1));
    let sym_values: Vec<String> = graph
        .sym_int_values
        .values()
        .filter_map(|v| match v {
            SymInt::Expr(e) => Some(e.expr_str.clone()),
            SymInt::Int(_) => None,
        })
        .collect();
    assert!(sym_values.iter().any(|e| e == "2*s0"), "{sym_values:?}");
    // Every tensor in the graph whose example batch is 3 carries a symbolic size for it.
    for (name, meta) in &graph.tensor_values {
        if name.starts_with('p') {
            continue;
        }
        for size in &meta.sizes {
            if let SymInt::Expr(e) = size {
                assert!(symbolic(&e.expr_str), "{name}: {}", e.expr_str);
            }
        }
    }
    let results = &graph.outputs;
    let matmul = results
        .iter()
        .find_map(|a| match a {
            Argument::Tensor(name)
                if graph.tensor_values[name].sizes.len() == 2
                    && graph.tensor_values[name].sizes[1] != SymInt::Int(1) =>
            {
                Some(name.clone())
            }
            _ => None,
        })
        .expect("the matmul result");
    let sizes = &graph.tensor_values[&matmul].sizes;
    assert!(
        sizes
            .iter()
            .all(|s| matches!(s, SymInt::Expr(e) if e.expr_str == "s0")),
        "{sizes:?}"
    );

    let mut module = reloaded(&program);
    let all_calls = calls("dynamic_batch");
    let all_expected = expected("dynamic_batch");
    for index in 0..2 {
        let actual = module
            .run(all_calls[index].clone())
            .unwrap_or_else(|e| panic!("call {index}: {e}"));
        compare_with(
            &actual,
            &all_expected[index],
            "dynamic_batch",
            Comparison::models(1e-5, 1e-6),
        )
        .unwrap_or_else(|e| panic!("call {index}: {e}"));
    }
    // Batch 9 is outside [2, 8]: the runner's input check refuses it.
    let error = module
        .run(all_calls[2].clone())
        .expect_err("batch 9 is out of range")
        .to_string();
    assert!(error.contains('9') && error.contains('8'), "{error}");
}

#[test]
fn without_dynamic_the_batch_is_static() {
    let program = convert("dynamic_batch", &[]).expect("converts");
    let graph = &program.program.graph_module.graph;
    assert!(program.program.range_constraints.is_empty());
    assert!(graph
        .nodes
        .iter()
        .all(|n| n.target != "torch.ops.aten.sym_size.int"));
    assert_eq!(graph.tensor_values["x"].sizes[0], SymInt::Int(3));
    let mut module = reloaded(&program);
    assert!(module.run(calls("dynamic_batch")[1].clone()).is_err());
}

#[test]
fn sizes_not_of_the_form_k_times_symbol_are_refused_naming_the_node() {
    let error = convert("dynamic_off_by_one", &["x:0=n"]).expect_err("batch + 1 is refused");
    let text = error.to_string();
    assert!(text.contains("aten::add"), "{text}");
    assert!(
        text.contains("dynamic dimension") && text.contains("s0"),
        "{text}"
    );
    // The line is the original Python source's (the archive's .debug_pkl), not the
    // generated code/__torch__.py's.
    let generator = std::fs::read_to_string(fixture("generate.py")).expect("generate.py reads");
    let line = generator
        .lines()
        .position(|l| l.contains("x.view(x.size(0) + 1 - 1, -1)"))
        .expect("the module's line")
        + 1;
    assert!(text.contains(&format!("generate.py:{line}")), "{text}");
    // The same program with a static batch converts.
    assert!(convert("dynamic_off_by_one", &[]).is_ok());
}

#[test]
fn bad_dynamic_requests_are_input_errors() {
    let unknown = convert("dynamic_batch", &["y:0=batch"]).expect_err("no argument y");
    assert!(
        unknown.to_string().contains("no tensor argument named 'y'"),
        "{unknown}"
    );
    let rank = convert("dynamic_batch", &["x:7=batch"]).expect_err("x has 4 dims");
    assert!(rank.to_string().contains("no dimension 7"), "{rank}");
    let range = convert("dynamic_batch", &["x:0=batch[4,8]"]).expect_err("3 is below 4");
    assert!(
        range.to_string().contains("outside the range [4, 8]"),
        "{range}"
    );
}

#[test]
fn two_symbols_follow_embedding_transpose_flatten_sum_expand_and_factories() {
    let specs = ["tokens:0=batch[2,16]", "tokens:1=length[2,32]", "x:0=batch"];
    let program = convert("dynamic_shape_ops", &specs).expect("converts");
    let exported = &program.program;
    let ranges: Vec<&str> = exported
        .range_constraints
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(ranges, ["s0", "s1"]);
    let graph = &exported.graph_module.graph;
    let expressions = |name: &str| -> Vec<String> {
        graph.tensor_values[name]
            .sizes
            .iter()
            .map(|s| match s {
                SymInt::Expr(e) => e.expr_str.clone(),
                SymInt::Int(v) => v.to_string(),
            })
            .collect()
    };
    assert_eq!(expressions("tokens"), ["s0", "s1"]);
    assert_eq!(expressions("x"), ["s0"]);
    let zeros = graph
        .nodes
        .iter()
        .find(|n| n.target == "torch.ops.aten.zeros.default")
        .expect("the factory is a node, not a constant");
    let Argument::Tensor(zeros_name) = &zeros.outputs[0] else {
        panic!("zeros returns a tensor");
    };
    assert_eq!(expressions(zeros_name), ["s0", "4"]);
    let permute = graph
        .nodes
        .iter()
        .find(|n| n.target == "torch.ops.aten.permute.default")
        .expect("permute");
    let Argument::Tensor(permute_name) = &permute.outputs[0] else {
        panic!("permute returns a tensor");
    };
    assert_eq!(expressions(permute_name), ["4", "s0", "s1"]);
    let slice = graph
        .nodes
        .iter()
        .find(|n| {
            n.target == "torch.ops.aten.slice.Tensor" && {
                let Argument::Tensor(name) = &n.outputs[0] else {
                    return false;
                };
                expressions(name).last().map(String::as_str) == Some("2")
            }
        })
        .expect("the slice of the static dimension");
    let Argument::Tensor(slice_name) = &slice.outputs[0] else {
        panic!("slice returns a tensor");
    };
    assert_eq!(expressions(slice_name), ["s0", "s1", "2"]);

    let mut module = reloaded(&program);
    let all_calls = calls("dynamic_shape_ops");
    let all_expected = expected("dynamic_shape_ops");
    for (index, (call, expected)) in all_calls.into_iter().zip(all_expected).enumerate() {
        let actual = module
            .run(call)
            .unwrap_or_else(|e| panic!("call {index}: {e}"));
        compare_with(
            &actual,
            &expected,
            "dynamic_shape_ops",
            Comparison::models(1e-5, 1e-6),
        )
        .unwrap_or_else(|e| panic!("call {index}: {e}"));
    }
}

#[test]
fn cond_and_while_loop_carry_the_symbol() {
    for (name, spec) in [
        ("tensor_cond", "x:0=batch"),
        ("while_on_data", "x:0=n[2,100]"),
    ] {
        let program = convert(name, &[spec]).unwrap_or_else(|e| panic!("{name}: {e}"));
        let graph = &program.program.graph_module.graph;
        let symbolic_results = graph
            .outputs
            .iter()
            .filter(|a| {
                matches!(a, Argument::Tensor(t)
                    if matches!(&graph.tensor_values[t].sizes[0], SymInt::Expr(e) if e.expr_str == "s0"))
            })
            .count();
        assert!(symbolic_results >= 1, "{name}: {:?}", graph.outputs);
        let mut module = reloaded(&program);
        for (index, (call, expected)) in calls(name).into_iter().zip(expected(name)).enumerate() {
            let actual = module
                .run(call)
                .unwrap_or_else(|e| panic!("{name} call {index}: {e}"));
            compare_with(&actual, &expected, name, Comparison::models(1e-5, 1e-6))
                .unwrap_or_else(|e| panic!("{name} call {index}: {e}"));
        }
    }
}
