//! `ferrojit::load` on both formats: the same model scripted and exported gives PyTorch's
//! result through one interface, `.pt2` programs from the export fixtures run with their
//! saved inputs, and files of the wrong kind give typed, one-line errors.

use std::path::PathBuf;

use ferrojit::{Error, IValue, Model, ModelFormat};
use ferrojit_conformance::Comparison;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn compare(actual: &IValue, expected: &IValue, label: &str) {
    ferrojit_conformance::compare_with(actual, expected, label, Comparison::models(1e-4, 1e-5))
        .unwrap_or_else(|message| panic!("{label}: {message}"));
}

#[test]
fn both_formats_of_the_example_give_pytorchs_result() {
    let examples = repo().join("examples");
    let arguments = ferrojit::load_arguments(examples.join("mlp_inputs.pt")).unwrap();
    let expected = ferrojit::load_values(examples.join("mlp_expected.pt")).unwrap();
    for (file, format) in [
        ("mlp.pt", ModelFormat::TorchScript),
        ("mlp.pt2", ModelFormat::ExportedProgram),
    ] {
        let model = ferrojit::load(examples.join(file)).unwrap();
        assert_eq!(model.format(), format, "{file}");
        assert!(model.method_names().contains(&"forward".to_string()));
        let output = model.run(arguments.clone()).unwrap();
        compare(&output, &expected, file);
        // Twice: nothing in the first call may change the second.
        compare(&model.run(arguments.clone()).unwrap(), &expected, file);
    }
}

#[test]
fn the_format_is_read_from_the_file_not_its_name() {
    let directory = std::env::temp_dir().join(format!("ferrojit-facade-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let renamed = directory.join("really_a_pt2.pt");
    std::fs::copy(repo().join("examples/mlp.pt2"), &renamed).unwrap();
    let model = ferrojit::load(&renamed).unwrap();
    assert_eq!(model.format(), ModelFormat::ExportedProgram);
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn exported_fixture_programs_run_through_the_facade() {
    let fixtures = repo().join("tests/fixtures/export");
    let mut ran = 0;
    for name in [
        "mlp",
        "convnet",
        "transformer_encoder",
        "dict_output",
        "nested_input",
    ] {
        let model = ferrojit::load(fixtures.join(format!("{name}.pt2"))).unwrap();
        let arguments = match ferrojit::load_values(
            fixtures.join(format!("{name}.call0.inputs.pt")),
        )
        .unwrap()
        {
            IValue::Tuple(tuple) => tuple.items.to_vec(),
            other => vec![other],
        };
        let expected =
            ferrojit::load_values(fixtures.join(format!("{name}.call0.expected.pt"))).unwrap();
        compare(&model.run(arguments).unwrap(), &expected, name);
        ran += 1;
    }
    assert_eq!(ran, 5);
}

#[test]
fn a_pt2_program_offers_its_saved_example_inputs() {
    let model = ferrojit::load(repo().join("examples/mlp.pt2")).unwrap();
    let inputs = model
        .sample_inputs()
        .expect("torch.export.save stores them");
    assert_eq!(inputs.len(), 2);
    assert_eq!(inputs[0].to_tensor().unwrap().sizes(), &[2, 4]);
    model.run(inputs).unwrap();
    let scripted = ferrojit::load(repo().join("examples/mlp.pt")).unwrap();
    assert!(scripted.sample_inputs().is_none());
    assert!(scripted.torchscript_module().is_some());
}

#[test]
fn wrong_files_and_calls_are_typed_errors() {
    let missing = ferrojit::load(repo().join("examples/no_such_model.pt"))
        .err()
        .unwrap();
    assert!(matches!(missing, Error::Read { .. }), "{missing}");
    assert!(missing.to_string().contains("no_such_model.pt"));

    let not_zip = ferrojit::load(repo().join("examples/mlp_inputs.json"))
        .err()
        .unwrap();
    assert!(matches!(not_zip, Error::Read { .. }), "{not_zip}");

    // A torch.save file is a zip, but holds values, not a program.
    let values = ferrojit::load(repo().join("examples/mlp_inputs.pt"))
        .err()
        .unwrap();
    assert!(!values.to_string().contains('\n'), "{values}");
    assert!(
        matches!(
            values,
            Error::UnknownFormat { .. } | Error::TorchScript { .. }
        ),
        "{values}"
    );

    let model = ferrojit::load(repo().join("examples/mlp.pt2")).unwrap();
    let error = model.run_method("predict", vec![]).unwrap_err();
    assert!(matches!(error, Error::NoSuchMethod { .. }));
    assert_eq!(
        error.to_string(),
        "the model has no method 'predict'; its methods are: forward"
    );
    // A wrong input is the program's input check, not a panic.
    let wrong = ferrojit::Tensor::from_vec(vec![0.0_f32; 6], &[2, 3]).unwrap();
    let error = model.run(vec![wrong.into(), 0.5.into()]).unwrap_err();
    assert!(matches!(error, Error::RunExported(_)), "{error}");

    let scripted = ferrojit::load(repo().join("examples/mlp.pt")).unwrap();
    let error = scripted.run(vec![]).unwrap_err();
    assert!(matches!(error, Error::Run { .. }), "{error}");
}

#[test]
fn models_can_be_shared_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Model>();
    let model = std::sync::Arc::new(ferrojit::load(repo().join("examples/mlp.pt2")).unwrap());
    let arguments = ferrojit::load_arguments(repo().join("examples/mlp_inputs.pt")).unwrap();
    let expected = ferrojit::load_values(repo().join("examples/mlp_expected.pt")).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (model, arguments) = (model.clone(), arguments.clone());
            std::thread::spawn(move || model.run(arguments).unwrap())
        })
        .collect();
    for handle in handles {
        compare(&handle.join().unwrap(), &expected, "threaded");
    }
}

#[test]
fn a_state_dict_is_recognised_and_the_error_says_how_to_save_a_model() {
    let path = repo().join("tests/fixtures/not_models/state_dict.pt");
    let error = ferrojit::load(&path).err().unwrap();
    assert!(matches!(error, Error::TorchScript { .. }), "{error}");
    let text = error.to_string();
    assert!(text.contains("a state dict"), "{text}");
    assert!(text.contains("torch.export.save"), "{text}");
}
