//! The bodies of the fuzz targets, shared by the cargo-fuzz binaries (`fuzz/fuzz_targets/*`)
//! and by `crates/ferrojit-cli/tests/fuzz_regressions.rs`, which replays every committed
//! finding through the same code without a fuzzer. Each function accepts any bytes; the only
//! failures are panics, aborts, hangs and memory blow-ups, which the fuzzer reports.
//!
//! Each user loads this file as a module with `#[path]`; it names every path in full.

/// Step budget for `__setstate__` methods run while loading a fuzzed archive.
pub const FUZZ_SETSTATE_STEPS: u64 = 10_000;

/// Opens `data` as a zip archive and reads every record (caps enforced by the reader).
pub fn fuzz_zip_reader(data: &[u8]) {
    use ferrojit_archive::zip_archive::ArchiveReader;
    let Ok(archive) = ArchiveReader::from_bytes(data.to_vec()) else {
        return;
    };
    let _ = archive.root_name();
    for name in archive.record_names().to_vec() {
        let _ = archive.record_size(&name);
        let _ = archive.stored_data_range(&name);
        if let Ok(bytes) = archive.read_record(&name) {
            assert_eq!(Some(bytes.len() as u64), archive.record_size(&name));
        }
    }
}

/// Unpickles `data` with both allowlists; a value that loads is printed, compared with
/// itself, and written back by the pickler, whose output must load to an equal value.
pub fn fuzz_pickle_vm(data: &[u8]) {
    use ferrojit_archive::pickler::pickle;
    use ferrojit_archive::unpickler::{unpickle, unpickle_prefix, UnpicklerOptions};
    for options in [
        UnpicklerOptions::torchscript_data(),
        UnpicklerOptions::torch_save(),
    ] {
        let _ = unpickle_prefix(data, &options);
        let Ok(value) = unpickle(data, &options) else {
            continue;
        };
        let printed = format!("{value:?}");
        assert!(!printed.is_empty());
        assert!(value.structurally_equal(&value));
        if let Ok(bytes) = pickle(&value) {
            // The pickler spells `bytes` as `_codecs.encode`, which the TorchScript allowlist
            // (rightly) refuses, so the round trip is read back with every global allowed.
            let again = unpickle(&bytes, &UnpicklerOptions::new(|_, _| true))
                .expect("the pickler's output must load");
            assert!(
                value.structurally_equal(&again),
                "pickle round trip changed the value"
            );
        }
    }
}

/// Loads `data` as a TorchScript archive (with a small `__setstate__` step budget, and
/// without calling any other method) and as a `torch.save` file.
pub fn fuzz_archive_load(data: &[u8]) {
    use ferrojit_runtime::interpreter::RunOptions;
    use ferrojit_serialize::import::load_module_from_bytes_with_options;
    use ferrojit_serialize::torch_save::load_bytes;
    let options = RunOptions {
        max_steps: Some(FUZZ_SETSTATE_STEPS),
        ..RunOptions::default()
    };
    if let Ok(loaded) = load_module_from_bytes_with_options(data.to_vec(), &options) {
        let _ = loaded.module.object().class().method_names();
    }
    if let Ok(value) = load_bytes(data.to_vec()) {
        let _ = value.python_repr();
    }
}

/// Parses `data` (when it is UTF-8) as a TorchScript source file and as an expression.
pub fn fuzz_torchscript_parse(data: &[u8]) {
    use ferrojit_frontend::parser::{parse_expression_str, parse_file};
    use ferrojit_frontend::source::SourceFile;
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(error) = parse_file(SourceFile::new("fuzz.py", text)) {
        let _ = error.to_string();
    }
    if let Err(error) = parse_expression_str("fuzz", text) {
        let _ = error.to_string();
    }
}

/// Defines `data` (when it is UTF-8) as a TorchScript source file and compiles every
/// function and method it defines against the real operator registry; nothing is run.
pub fn fuzz_torchscript_compile(data: &[u8]) {
    use ferrojit_frontend::compile_source;
    use ferrojit_serialize::import::RegistrySchemas;
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let unit = match compile_source(text, RegistrySchemas::builtins()) {
        Ok(unit) => unit,
        Err(error) => {
            let _ = error.to_string();
            return;
        }
    };
    for name in unit.function_names() {
        match unit.function(&name) {
            Ok(function) => {
                if let Err(error) = function.graph(&unit) {
                    let _ = error.to_string();
                }
            }
            Err(error) => {
                let _ = error.to_string();
            }
        }
    }
}

/// Parses `data` (when it is UTF-8) as an operator schema; a schema that parses is printed,
/// and the printed text must parse too. (Printing is not checked for being a fixed point:
/// alias annotations on nested lists, `t[](a!)[]`, print differently on the second round;
/// see FUZZING.md, an open finding in `ferrojit-ir`'s printer.)
pub fn fuzz_schema_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(schema) = ferrojit_ir::parse_schema(text) {
        let printed = schema.to_string();
        let again = ferrojit_ir::parse_schema(&printed)
            .unwrap_or_else(|error| panic!("printed schema {printed:?} does not parse: {error}"));
        assert_eq!(again.to_string(), printed, "schema printing is not stable");
    }
}

/// Parses `data` as graph text (`graph(%x : Tensor): ...`); a graph that parses is
/// verified (errors are fine, panics are not), and its printed text must parse again and
/// print the same: the text form round-trips exactly.
pub fn fuzz_ir_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(graph) = ferrojit_ir::parse_graph(text) {
        let _ = ferrojit_ir::verifier::verify(&graph);
        let printed = graph.to_ir_string();
        let again = ferrojit_ir::parse_graph(&printed)
            .unwrap_or_else(|error| panic!("printed graph does not parse: {error}\n{printed}"));
        assert_eq!(
            again.to_ir_string(),
            printed,
            "graph printing is not stable"
        );
    }
}

/// Opens `data` as a `.pt2` archive and, for every program it names, reads the program with
/// its weights and constants, prepares it to run (pytree specs, operator check), prints its
/// graph and code as `inspect` does, and reads its sample inputs. Nothing is run.
pub fn fuzz_pt2_archive(data: &[u8]) {
    use ferrojit_export::Pt2Archive;
    let Ok(archive) = Pt2Archive::from_bytes(data.to_vec()) else {
        return;
    };
    for name in archive.model_names().to_vec() {
        if let Ok(Some(inputs)) = archive.sample_inputs(&name) {
            let _ = (inputs.args.len(), inputs.kwargs.len());
        }
        let Ok(loaded) = archive.load(&name) else {
            continue;
        };
        pt2_print_and_prepare(loaded);
    }
}

/// Reads `data` as the JSON of one exported program (`models/NAME.json`), with no weights,
/// prints it and prepares it to run. The fuzzer mutates the JSON directly here, which it
/// cannot do well through a zip archive's compression and CRCs.
pub fn fuzz_pt2_program_json(data: &[u8]) {
    use ferrojit_export::json::{parse_json, Node};
    use ferrojit_export::{ExportedProgram, LoadedProgram};
    let Ok(value) = parse_json("models/model.json", data) else {
        return;
    };
    let Ok(program) = ExportedProgram::from_json(&Node::new(&value, "models/model.json")) else {
        return;
    };
    pt2_print_and_prepare(LoadedProgram {
        name: "model".to_string(),
        program,
        state_dict: Default::default(),
        constants: Default::default(),
    });
}

fn pt2_print_and_prepare(loaded: ferrojit_export::LoadedProgram) {
    let graph = ferrojit_export::fx_text::print_graph(&loaded.program);
    let code = ferrojit_export::fx_text::print_code(&loaded.program);
    assert!(!graph.is_empty() && !code.is_empty());
    if let Err(error) = ferrojit_export::ExportedModule::new(loaded) {
        assert!(!error.to_string().is_empty());
    }
}

/// Parses `data` (when it is UTF-8) as a sympy expression string, the form `.pt2` files
/// give symbolic sizes in, and evaluates it with every symbol bound to a few values.
/// Overflow and division by zero must be errors, never panics.
pub fn fuzz_sym_expression(data: &[u8]) {
    use ferrojit_export::symbolic::{parse_expression, SymbolicValue};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(expression) = parse_expression(text) else {
        return;
    };
    let mut symbols = std::collections::HashMap::new();
    let _ = expression.evaluate(&symbols);
    for value in [0_i64, 1, 7, -3, i64::MAX] {
        for name in ["s0", "s1", "s2", "s77", "u0", "u1", "x", "y"] {
            symbols.insert(name.to_string(), SymbolicValue::Int(value));
        }
        let _ = expression.evaluate(&symbols);
    }
}
