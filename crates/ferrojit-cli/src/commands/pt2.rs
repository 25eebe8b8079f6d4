//! `ferrojit run` and `ferrojit inspect` for torch.export `.pt2` programs (through
//! `ferrojit-export`): the same contract as for TorchScript archives.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use ferrojit_archive::zip_archive::ArchiveReader;
use ferrojit_export::fx_text::{print_code, print_graph};
use ferrojit_export::model::{
    scalar_type_name, Argument, ConstantValue, Graph, InputSpec, OutputSpec, SymArgument, SymInt,
};
use ferrojit_export::symbolic::{parse_expression, BinaryOperator, Expression};
use ferrojit_export::{ExportedModule, Pt2Archive};
use ferrojit_runtime::ivalue::IValue;

/// Whether `path` is a `.pt2` archive rather than a TorchScript one.
pub fn is_pt2(path: &Path) -> bool {
    if path.extension().is_some_and(|extension| extension == "pt2") {
        return true;
    }
    ArchiveReader::open(path)
        .map(|reader| reader.has_record("archive_format"))
        .unwrap_or(false)
}

/// Writes `text` to standard output. A reader that stops early (`ferrojit inspect … | head`)
/// closes the pipe: that ends the output cleanly rather than as an error (or, with
/// `print!`, a panic).
pub fn write_stdout(text: &str) -> Result<(), String> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(error) => Err(format!("writing to standard output: {error}")),
    }
}

/// Loads program `name` of `model` and runs it on `arguments`; `run` prints and saves the
/// result.
pub fn run_program(model: &Path, name: &str, arguments: Vec<IValue>) -> Result<IValue, String> {
    let cannot_load = |e: &dyn std::fmt::Display| super::not_a_model::model_load_error(model, e);
    let archive = Pt2Archive::open(model).map_err(|e| cannot_load(&e))?;
    let loaded = archive.load(name).map_err(|e| cannot_load(&e))?;
    let mut module = ExportedModule::new(loaded).map_err(|e| cannot_load(&e))?;
    module
        .run(arguments)
        .map_err(|e| format!("forward() failed: {e}"))
}

/// What `inspect` prints for a `.pt2` program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pt2View {
    /// `print(torch.export.load(path).graph)`
    Graph,
    /// `torch.export.load(path).graph_module.code`
    Code,
    /// The signature, state dict and range constraints.
    Summary,
}

/// Prints program `name`'s graph, code or summary.
pub fn inspect_program(model: &Path, name: &str, view: Pt2View) -> Result<(), String> {
    let cannot_load =
        |e: &dyn std::fmt::Display| format!("cannot load model {}: {e}", model.display());
    let archive = Pt2Archive::open(model).map_err(|e| cannot_load(&e))?;
    let text = match view {
        Pt2View::Graph => {
            let program = archive.program(name).map_err(|e| cannot_load(&e))?;
            format!("{}\n", print_graph(&program))
        }
        Pt2View::Code => {
            let program = archive.program(name).map_err(|e| cannot_load(&e))?;
            print_code(&program)
        }
        Pt2View::Summary => {
            let loaded = archive.load(name).map_err(|e| cannot_load(&e))?;
            let mut text = program_summary(&loaded, archive.model_names());
            // The example inputs saved with the program (read on request: they may hold
            // values ferrojit does not load, which must not stop the summary).
            text.push_str(&match archive.sample_inputs(name) {
                Ok(Some(samples)) => format!(
                    "sample inputs: {} positional, {} keyword\n",
                    samples.args.len(),
                    samples.kwargs.len()
                ),
                Ok(None) => "sample inputs: none\n".to_string(),
                Err(error) => format!("sample inputs: not readable ({error})\n"),
            });
            text
        }
    };
    write_stdout(&text)
}

/// `--summary`: which program of the archive, the call signature with each user input's and
/// output's dtype and sizes, the graph signature (PyTorch's `# inputs` / `# outputs` lines,
/// as `print(ep.graph_signature)` writes them), the state dict and constants with dtypes and
/// shapes, and the range of each symbol.
pub fn program_summary(loaded: &ferrojit_export::LoadedProgram, models: &[String]) -> String {
    let program = &loaded.program;
    let graph = &program.graph_module.graph;
    let signature = &program.graph_module.signature;
    let mut text = String::new();
    // `write!` into a String cannot fail.
    let _ = writeln!(
        text,
        "program: {} (the archive holds: {})",
        loaded.name,
        models.join(", ")
    );
    let _ = writeln!(
        text,
        "schema {}.{}, torch {}, dialect {}",
        program.schema_version.major,
        program.schema_version.minor,
        program.torch_version,
        program.verifiers.join(", ")
    );
    let user_inputs: Vec<String> = signature
        .input_specs
        .iter()
        .filter_map(|spec| match spec {
            InputSpec::UserInput { arg } => Some(match arg.name() {
                Some(name) => format!("{name}: {}", value_type(graph, arg)),
                None => value_type(graph, arg),
            }),
            InputSpec::ConstantInput { name, value } => {
                Some(format!("{name}={}", constant_text(value)))
            }
            _ => None,
        })
        .collect();
    let user_outputs: Vec<String> = signature
        .output_specs
        .iter()
        .filter_map(|spec| match spec {
            OutputSpec::UserOutput { arg } => Some(value_type(graph, arg)),
            _ => None,
        })
        .collect();
    let _ = writeln!(
        text,
        "signature: forward({}) -> ({})",
        user_inputs.join(", "),
        user_outputs.join(", ")
    );
    let _ = writeln!(text, "# inputs");
    for spec in &signature.input_specs {
        let _ = writeln!(text, "{}", input_spec_text(spec));
    }
    let _ = writeln!(text, "# outputs");
    for spec in &signature.output_specs {
        let _ = writeln!(text, "{}", output_spec_text(spec));
    }
    let _ = writeln!(text, "state dict ({} tensors):", loaded.state_dict.len());
    for (key, tensor) in &loaded.state_dict {
        let _ = writeln!(
            text,
            "  {key}: {}{:?}",
            tensor.dtype().name(),
            tensor.sizes()
        );
    }
    let _ = writeln!(text, "constants ({} tensors):", loaded.constants.len());
    for (key, tensor) in &loaded.constants {
        let _ = writeln!(
            text,
            "  {key}: {}{:?}",
            tensor.dtype().name(),
            tensor.sizes()
        );
    }
    let _ = writeln!(text, "range constraints:");
    for (symbol, range) in &program.range_constraints {
        let bound = |value: Option<i64>| value.map_or("oo".to_string(), |v| v.to_string());
        let _ = writeln!(
            text,
            "  {symbol}: [{}, {}]",
            bound(range.min_val),
            bound(range.max_val)
        );
    }
    text
}

fn sym_int_text(size: &SymInt) -> String {
    match size {
        SymInt::Int(value) => value.to_string(),
        SymInt::Expr(expression) => match parse_expression(&expression.expr_str) {
            Ok(parsed) => expression_text(&parsed),
            // Shown as written: the summary is for reading, the runner checks it.
            Err(_) => expression.expr_str.clone(),
        },
    }
}

/// A sympy expression in its printed form (`2*s27`, `s0 + 1`) rather than the `srepr` form
/// the archive holds (`Mul(Integer(2), Symbol('s27', ...))`).
fn expression_text(expression: &Expression) -> String {
    let operand = |inner: &Expression| match inner {
        Expression::Call(name, _) if name == "Add" => format!("({})", expression_text(inner)),
        Expression::Binary(..) => format!("({})", expression_text(inner)),
        _ => expression_text(inner),
    };
    match expression {
        Expression::Integer(value) => value.to_string(),
        Expression::Float(value) => format!("{value:?}"),
        Expression::Boolean(value) => python_bool(*value).to_string(),
        Expression::Symbol(name) => name.clone(),
        Expression::Call(name, arguments) if name == "Add" => arguments
            .iter()
            .map(expression_text)
            .collect::<Vec<_>>()
            .join(" + "),
        Expression::Call(name, arguments) if name == "Mul" => {
            arguments.iter().map(operand).collect::<Vec<_>>().join("*")
        }
        Expression::Call(name, arguments) if name == "FloorDiv" && arguments.len() == 2 => {
            format!("({}//{})", operand(&arguments[0]), operand(&arguments[1]))
        }
        Expression::Call(name, arguments) => format!(
            "{name}({})",
            arguments
                .iter()
                .map(expression_text)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Expression::Binary(operator, left, right) => {
            format!(
                "{} {} {}",
                operand(left),
                operator_text(*operator),
                operand(right)
            )
        }
        Expression::Negate(inner) => format!("-{}", operand(inner)),
        Expression::Not(inner) => format!("~{}", operand(inner)),
    }
}

/// `float32[s0, 6]` for a tensor, `int`/`float`/`bool` for a symbol, the literal otherwise.
fn value_type(graph: &Graph, argument: &Argument) -> String {
    match argument {
        Argument::Tensor(name) => match graph.tensor_values.get(name) {
            Some(meta) => format!(
                "{}[{}]",
                scalar_type_name(meta.dtype),
                meta.sizes
                    .iter()
                    .map(sym_int_text)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => "Tensor".to_string(),
        },
        Argument::SymInt(SymArgument::Name(_)) => "int".to_string(),
        Argument::SymFloat(SymArgument::Name(_)) => "float".to_string(),
        Argument::SymBool(SymArgument::Name(_)) => "bool".to_string(),
        Argument::SymInt(SymArgument::Literal(value)) | Argument::Int(value) => value.to_string(),
        Argument::SymFloat(SymArgument::Literal(value)) | Argument::Float(value) => {
            format!("{value:?}")
        }
        Argument::SymBool(SymArgument::Literal(value)) | Argument::Bool(value) => {
            python_bool(*value).to_string()
        }
        Argument::None => "None".to_string(),
        Argument::String(value) => format!("{value:?}"),
        Argument::CustomObj(object) => object.class_fqn.clone(),
        Argument::Token(_) => "token".to_string(),
        other => format!("{other:?}"),
    }
}

fn operator_text(operator: BinaryOperator) -> &'static str {
    match operator {
        BinaryOperator::Add => "+",
        BinaryOperator::Subtract => "-",
        BinaryOperator::Multiply => "*",
        BinaryOperator::TrueDivide => "/",
        BinaryOperator::FloorDivide => "//",
        BinaryOperator::Modulo => "%",
        BinaryOperator::Power => "**",
        BinaryOperator::Equal => "==",
        BinaryOperator::NotEqual => "!=",
        BinaryOperator::Less => "<",
        BinaryOperator::LessEqual => "<=",
        BinaryOperator::Greater => ">",
        BinaryOperator::GreaterEqual => ">=",
        BinaryOperator::And => "&",
        BinaryOperator::Or => "|",
    }
}

fn python_bool(value: bool) -> &'static str {
    if value {
        "True"
    } else {
        "False"
    }
}

fn constant_text(value: &ConstantValue) -> String {
    match value {
        ConstantValue::None => "None".to_string(),
        ConstantValue::Int(value) => value.to_string(),
        ConstantValue::Float(value) => format!("{value:?}"),
        ConstantValue::String(value) => format!("{value:?}"),
        ConstantValue::Bool(value) => python_bool(*value).to_string(),
    }
}

fn argument_name(argument: &Argument) -> String {
    match argument.name() {
        Some(name) => name.to_string(),
        None => format!("{argument:?}"),
    }
}

/// One line of `print(ep.graph_signature)`'s `# inputs` block.
fn input_spec_text(spec: &InputSpec) -> String {
    match spec {
        InputSpec::UserInput { arg } => format!("{}: USER_INPUT", argument_name(arg)),
        InputSpec::Parameter {
            arg,
            parameter_name,
        } => format!("{arg}: PARAMETER target='{parameter_name}'"),
        InputSpec::Buffer {
            arg,
            buffer_name,
            persistent,
        } => format!(
            "{arg}: BUFFER target='{buffer_name}' persistent={}",
            python_bool(*persistent)
        ),
        InputSpec::TensorConstant {
            arg,
            tensor_constant_name,
        } => format!("{arg}: CONSTANT_TENSOR target='{tensor_constant_name}'"),
        InputSpec::CustomObj {
            arg,
            custom_obj_name,
        } => format!("{}: CUSTOM_OBJ target='{custom_obj_name}'", arg.name),
        InputSpec::Token { arg } => format!("{arg}: TOKEN"),
        InputSpec::ConstantInput { name, value } => {
            format!("{name}: USER_INPUT (constant {})", constant_text(value))
        }
    }
}

/// One line of `print(ep.graph_signature)`'s `# outputs` block.
fn output_spec_text(spec: &OutputSpec) -> String {
    match spec {
        OutputSpec::UserOutput { arg } => match arg.name() {
            Some(name) => format!("{name}: USER_OUTPUT"),
            None => format!("{}: USER_OUTPUT", value_type(&Graph::default(), arg)),
        },
        OutputSpec::LossOutput { arg } => format!("{arg}: LOSS_OUTPUT"),
        OutputSpec::BufferMutation { arg, buffer_name } => {
            format!("{arg}: BUFFER_MUTATION target='{buffer_name}'")
        }
        OutputSpec::ParameterMutation {
            arg,
            parameter_name,
        } => format!("{arg}: PARAMETER_MUTATION target='{parameter_name}'"),
        OutputSpec::GradientToParameter {
            arg,
            parameter_name,
        } => format!("{arg}: GRADIENT_TO_PARAMETER target='{parameter_name}'"),
        OutputSpec::GradientToUserInput {
            arg,
            user_input_name,
        } => format!("{arg}: GRADIENT_TO_USER_INPUT target='{user_input_name}'"),
        OutputSpec::UserInputMutation {
            arg,
            user_input_name,
        } => format!("{arg}: USER_INPUT_MUTATION target='{user_input_name}'"),
        OutputSpec::Token { arg } => format!("{arg}: TOKEN"),
    }
}
