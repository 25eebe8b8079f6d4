//! Checking a trace against other inputs, as `torch.jit.trace(..., check_inputs=[...])`
//! does (`_check_trace` in torch/jit/_trace.py): the function is traced again on each check
//! input set and the two graphs are compared (canonicalized and printed); the first trace
//! is run on the check inputs and its tensor outputs compared with an eager run of the
//! function. A graph that differs is a `TracingCheckError` with PyTorch's message layout; an
//! output that differs is a TracerWarning, as in PyTorch.
//!
//! Differences from PyTorch's text: the diff is a plain line diff (`- `, `+ `, `  ` lines)
//! without difflib's `? ` hint lines, and nodes carry no source locations, so the
//! "Trace source location" / "Check source location" sections are left out.

use ferrojit_ir::{AttributeValue, Graph, NodeId};
use ferrojit_runtime::IValue;
use ferrojit_tensor::Tensor;

use crate::error::Result;
use crate::traced_module::TracedFunction;

/// PyTorch's `indent`: a tab before every line.
fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("\t{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What checking a trace found.
#[derive(Debug, Clone, Default)]
pub struct CheckReport {
    /// The TracerWarnings of the check, in order: each retrace's own, then outputs that
    /// do not match.
    pub warnings: Vec<String>,
    /// PyTorch's `TracingCheckError` message, when the check failed (it stops there).
    pub error: Option<String>,
}

/// Checks `traced` on each of `check_inputs` (positional argument lists). A retrace that
/// fails outright is an `Err`; a check that fails is reported in [`CheckReport::error`].
pub fn check_trace(traced: &TracedFunction, check_inputs: &[Vec<IValue>]) -> Result<CheckReport> {
    let mut warnings = Vec::new();
    for inputs in check_inputs {
        let check = traced.retrace(clone_inputs(inputs))?;
        warnings.extend(check.warnings.iter().cloned());
        let traced_outputs = match traced.run(clone_inputs(inputs)) {
            Ok(outputs) => outputs,
            Err(message) => {
                return Ok(CheckReport {
                    warnings,
                    error: Some(check_error(
                        traced,
                        &check,
                        Some(format!(
                            "encountered an exception while running the trace with test inputs.\nException:\n{}",
                            indent(&message)
                        )),
                    )),
                })
            }
        };
        let eager_outputs = match traced.run_eagerly(clone_inputs(inputs)) {
            Ok(outputs) => outputs,
            Err(message) => {
                return Ok(CheckReport {
                    warnings,
                    error: Some(check_error(
                        traced,
                        &check,
                        Some(format!(
                            "encountered an exception while running the Python function with test inputs.\nException:\n{}",
                            indent(&message)
                        )),
                    )),
                })
            }
        };
        let traced_tensors = tensor_outputs(&traced_outputs);
        let eager_tensors = tensor_outputs(&eager_outputs);
        let mut all_close = true;
        for (index, (actual, expected)) in traced_tensors.iter().zip(&eager_tensors).enumerate() {
            if let Some(difference) = not_close(actual, expected, 1e-5, 1e-5) {
                all_close = false;
                warnings.push(format!(
                    "Output nr {}. of the traced function does not match the corresponding \
                     output of the Python function. Detailed error:\n{difference}",
                    index + 1
                ));
            }
        }
        if all_close {
            if let Ok(check_outputs) = check.run(clone_inputs(inputs)) {
                let check_tensors = tensor_outputs(&check_outputs);
                for (index, (actual, expected)) in
                    traced_tensors.iter().zip(&check_tensors).enumerate()
                {
                    if let Some(difference) = not_close(actual, expected, 1e-5, 1e-5) {
                        warnings.push(format!(
                            "Output nr {}. of the traced function does not match the \
                             corresponding output of the repeated trace. Detailed error:\n{difference}",
                            index + 1
                        ));
                    }
                }
            }
        }
        let (graph_diff, constant_diff) = graph_diagnostics(&traced.graph, &check.graph);
        if graph_diff.is_some() || constant_diff.is_some() {
            return Ok(CheckReport {
                warnings,
                error: Some(tracing_check_message(graph_diff, constant_diff, None)),
            });
        }
    }
    Ok(CheckReport {
        warnings,
        error: None,
    })
}

fn check_error(traced: &TracedFunction, check: &TracedFunction, extra: Option<String>) -> String {
    let (graph_diff, constant_diff) = graph_diagnostics(&traced.graph, &check.graph);
    tracing_check_message(graph_diff, constant_diff, extra)
}

/// `TracingCheckError.__init__`'s message.
fn tracing_check_message(
    graph_diff: Option<String>,
    constant_diff: Option<String>,
    extra: Option<String>,
) -> String {
    let mut message = "Tracing failed sanity checks!\n".to_string();
    if let Some(extra) = extra {
        message += &format!("{extra}\n");
    }
    if let Some(diff) = graph_diff {
        message += "ERROR: Graphs differed across invocations!\n";
        message += &format!("{}\n", indent(&diff));
    }
    if let Some(diff) = constant_diff {
        message += "ERROR: Tensor-valued Constant nodes differed in value across invocations. \
                    This often indicates that the tracer has encountered untraceable code.\n";
        message += &format!("{}\n", indent(&diff));
    }
    message
}

fn clone_inputs(inputs: &[IValue]) -> Vec<IValue> {
    inputs.iter().map(deep_copy).collect()
}

/// A copy whose tensors are new tensors (PyTorch's `_clone_inputs`), so that a function
/// that writes its inputs cannot change the next run's.
fn deep_copy(value: &IValue) -> IValue {
    match value {
        IValue::Tensor(_) => match value.to_tensor() {
            Ok(tensor) => IValue::from(tensor.clone_tensor()),
            Err(_) => value.clone(),
        },
        IValue::Tuple(tuple) => IValue::tuple(tuple.items.iter().map(deep_copy).collect()),
        IValue::List(list) => IValue::list(
            list.element_type().clone(),
            list.to_vec().iter().map(deep_copy).collect(),
        ),
        other => other.clone(),
    }
}

/// The tensors among a result's top-level values (`wrap_retval` then a tensor filter).
fn tensor_outputs(value: &IValue) -> Vec<Tensor> {
    let items = match value {
        IValue::Tuple(tuple) => tuple.items.to_vec(),
        other => vec![other.clone()],
    };
    items
        .iter()
        .filter_map(|item| item.to_tensor().ok().map(|t| t.as_ref().clone()))
        .collect()
}

/// `torch.testing.assert_close(actual.double(), expected.double(), rtol, atol)`'s message
/// when the two differ; `None` when they are close.
fn not_close(actual: &Tensor, expected: &Tensor, rtol: f64, atol: f64) -> Option<String> {
    if actual.sizes() != expected.sizes() {
        return Some(format!(
            "The values for attribute 'shape' do not match: torch.Size({:?}) != torch.Size({:?}).",
            actual.sizes(),
            expected.sizes()
        ));
    }
    let a = actual.to_f64_vec();
    let e = expected.to_f64_vec();
    let mut mismatched = 0;
    let mut greatest_absolute = (0.0f64, 0usize);
    let mut greatest_relative = (0.0f64, 0usize);
    for (index, (x, y)) in a.iter().zip(&e).enumerate() {
        let both_nan = x.is_nan() && y.is_nan();
        let difference = (x - y).abs();
        // A NaN difference (one side NaN) is not close: compare with partial_cmp.
        let close = matches!(
            difference.partial_cmp(&(atol + rtol * y.abs())),
            Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)
        );
        if !both_nan && !close {
            mismatched += 1;
        }
        if difference > greatest_absolute.0 {
            greatest_absolute = (difference, index);
        }
        let relative = match (*y == 0.0, difference == 0.0) {
            (_, true) => 0.0,
            (true, false) => f64::INFINITY,
            (false, false) => difference / y.abs(),
        };
        if relative > greatest_relative.0 {
            greatest_relative = (relative, index);
        }
    }
    if mismatched == 0 {
        return None;
    }
    // Integer tensors are compared exactly, and assert_close says so.
    if !actual.dtype().is_floating_point() && rtol == 0.0 && atol == 0.0 {
        let whole = |v: f64| format!("{}", v as i64);
        if a.len() == 1 {
            return Some(format!(
                "Scalars are not equal!\n\nExpected {} but got {}.\nAbsolute difference: {}\nRelative difference: {}",
                whole(e[0]),
                whole(a[0]),
                whole(greatest_absolute.0),
                python_float(greatest_relative.0)
            ));
        }
        return Some(format!(
            "Tensor-likes are not equal!\n\nMismatched elements: {mismatched} / {} ({:.1}%)\nGreatest absolute difference: {} at index {}\nGreatest relative difference: {} at index {}",
            a.len(),
            100.0 * mismatched as f64 / a.len() as f64,
            whole(greatest_absolute.0),
            index_text(actual.sizes(), greatest_absolute.1),
            python_float(greatest_relative.0),
            index_text(actual.sizes(), greatest_relative.1),
        ));
    }
    if a.len() == 1 {
        return Some(format!(
            "Scalars are not close!\n\nExpected {} but got {}.\nAbsolute difference: {} (up to {} allowed)\nRelative difference: {} (up to {} allowed)",
            python_float(e[0]),
            python_float(a[0]),
            python_float(greatest_absolute.0),
            python_float(atol),
            python_float(greatest_relative.0),
            python_float(rtol)
        ));
    }
    Some(format!(
        "Tensor-likes are not close!\n\nMismatched elements: {mismatched} / {} ({:.1}%)\nGreatest absolute difference: {} at index {} (up to {} allowed)\nGreatest relative difference: {} at index {} (up to {} allowed)",
        a.len(),
        100.0 * mismatched as f64 / a.len() as f64,
        python_float(greatest_absolute.0),
        index_text(actual.sizes(), greatest_absolute.1),
        python_float(atol),
        python_float(greatest_relative.0),
        index_text(actual.sizes(), greatest_relative.1),
        python_float(rtol),
    ))
}

/// A flat element index as the tuple Python prints (`(0, 3)`, `(2,)`).
fn index_text(sizes: &[usize], flat: usize) -> String {
    let mut remaining = flat;
    let mut index = vec![0; sizes.len()];
    for (dim, size) in sizes.iter().enumerate().rev() {
        let size = (*size).max(1);
        index[dim] = remaining % size;
        remaining /= size;
    }
    match index.len() {
        1 => format!("({},)", index[0]),
        _ => format!(
            "({})",
            index
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A float as Python's `repr` writes it (`2.0`, `1e-05`, `0.5`).
fn python_float(value: f64) -> String {
    if value.is_infinite() {
        return if value > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if value.is_nan() {
        return "nan".into();
    }
    if value != 0.0 && (value.abs() < 1e-4 || value.abs() >= 1e16) {
        let text = format!("{value:e}");
        // Rust writes `1e-5`; Python `1e-05`.
        if let Some((mantissa, exponent)) = text.split_once('e') {
            let (sign, digits) = match exponent.strip_prefix('-') {
                Some(digits) => ("-", digits),
                None => ("+", exponent),
            };
            return format!("{mantissa}e{sign}{digits:0>2}");
        }
        return text;
    }
    let text = format!("{value}");
    if text.contains('.') {
        text
    } else {
        format!("{text}.0")
    }
}

/// `graph_diagnostic_info`: the graph diff (and first diverging node), and the first
/// tensor constant whose value differs while the graphs agree up to it.
fn graph_diagnostics(traced: &Graph, check: &Graph) -> (Option<String>, Option<String>) {
    let mut traced = traced.clone();
    let mut check = check.clone();
    if ferrojit_opt::canonicalize::canonicalize(&mut traced).is_err()
        || ferrojit_opt::canonicalize::canonicalize(&mut check).is_err()
    {
        return (None, None);
    }
    let traced_text = traced.to_string();
    let check_text = check.to_string();
    let traced_nodes = traced.block_nodes(traced.top_block());
    let check_nodes = check.block_nodes(check.top_block());
    let mut graph_diff = None;
    if traced_text != check_text {
        let mut text = format!(
            "Graph diff:\n{}\n",
            indent(&line_diff(&traced_text, &check_text))
        );
        for (a, b) in traced_nodes.iter().zip(&check_nodes) {
            let (a_text, b_text) = (node_text(&traced, *a), node_text(&check, *b));
            if a_text != b_text {
                text += "First diverging operator:\n";
                text += &format!("Node diff:\n{}\n", indent(&line_diff(&a_text, &b_text)));
                break;
            }
        }
        graph_diff = Some(text);
    }
    let mut constant_diff = None;
    for (a, b) in traced_nodes.iter().zip(&check_nodes) {
        if traced.kind(*a) != check.kind(*b) {
            break;
        }
        if traced.kind(*a).as_str() != "prim::Constant" {
            continue;
        }
        let (Some(AttributeValue::Tensor(x)), Some(AttributeValue::Tensor(y))) =
            (traced.attribute(*a, "value"), check.attribute(*b, "value"))
        else {
            continue;
        };
        if let Some(difference) = constant_difference(x, y) {
            constant_diff = Some(format!(
                "Node:\n{}\nComparison exception: {}",
                indent(&node_text(&traced, *a)),
                indent(&difference)
            ));
            break;
        }
    }
    (graph_diff, constant_diff)
}

/// `assert_close` of two constants with its default tolerances for their dtype.
fn constant_difference(x: &Tensor, y: &Tensor) -> Option<String> {
    use ferrojit_tensor::DType;
    let (rtol, atol) = match x.dtype() {
        DType::Float64 => (1e-7, 1e-7),
        DType::Float32 => (1.3e-6, 1e-5),
        DType::Float16 | DType::BFloat16 => (1e-3, 1e-5),
        _ => (0.0, 0.0),
    };
    not_close(x, y, rtol, atol)
}

/// One node printed as the graph prints it.
fn node_text(graph: &Graph, node: NodeId) -> String {
    let text = graph.to_string();
    let position = graph
        .block_nodes(graph.top_block())
        .iter()
        .position(|n| *n == node)
        .unwrap_or(0);
    // The graph's text has one line per top-level node after the header line.
    text.lines()
        .nth(position + 1)
        .map(|line| line.trim_start().to_string())
        .unwrap_or_default()
}

/// A line diff in `difflib.ndiff`'s notation, without its `? ` hint lines.
fn line_diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    // Longest common subsequence table.
    let mut table = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            table[i][j] = if a[i] == b[j] {
                table[i + 1][j + 1] + 1
            } else {
                table[i + 1][j].max(table[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut lines = Vec::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            lines.push(format!("  {}", a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || table[i][j + 1] >= table[i + 1][j]) {
            lines.push(format!("+ {}", b[j]));
            j += 1;
        } else {
            lines.push(format!("- {}", a[i]));
            i += 1;
        }
    }
    lines.join("\n")
}
