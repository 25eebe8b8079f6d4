//! Property test: random graphs of pointwise operators (a seeded generator, so every run
//! sees the same graphs) run through generated code and, op by op, through ferrojit-tensor's
//! own kernels; results must agree element by element.
//!
//! Agreement: ULP distance at most `CHAIN_ULP`, or, where a chain has cancelled (a result far
//! smaller than the values it came from), an absolute difference at most `1e-5 * max(1,
//! |reference|)`. Per-function bounds against PyTorch are in `math_accuracy.rs`; a chain of
//! several steps compounds them, hence the wider `CHAIN_ULP`.
//! Shapes include broadcasting (size-1 dims, 0-dim and missing leading dims), non-contiguous
//! inputs (transposed and strided views, which run the strided class) and zero-size tensors.
//!
//! Every graph is also run a second time with a trailing softmax or log_softmax over the
//! last dimension (a row-reduction group). Its reference is ferrojit-tensor's softmax of
//! the pointwise group's own fused output, so the comparison isolates the row kernel:
//! within `ROW_ULP`, or an absolute difference of `ROW_ABSOLUTE` scaled by max(1, |x|).

mod common;

use common::ulp_distance;
use ferrojit_codegen::GroupCache;
use ferrojit_ir::parse_graph;
use ferrojit_tensor::ops::pointwise::UnaryOp;
use ferrojit_tensor::{DType, Scalar, Tensor};

const CHAIN_ULP: u64 = 64;
const ROW_ULP: u64 = 16;
const ROW_ABSOLUTE: f32 = 1e-6;

/// xorshift64*: a small deterministic generator (no extra dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn uniform(&mut self, low: f32, high: f32) -> f32 {
        let unit = (self.next() >> 40) as f32 / (1u64 << 24) as f32;
        low + (high - low) * unit
    }
}

/// One operation of a random graph, over earlier values (by index).
#[derive(Debug, Clone)]
enum Op {
    Unary(&'static str, usize),
    Gelu(&'static str, usize),
    Pow(usize, f64),
    Binary(&'static str, usize, usize),
    AddAlpha(&'static str, usize, usize, f64),
    ScalarRight(&'static str, usize, f64),
    Clamp(usize, Option<f64>, Option<f64>),
    Where(usize, usize),
}

const UNARY: &[&str] = &[
    "neg",
    "abs",
    "relu",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "exp",
    "log",
    "tanh",
    "sigmoid",
    "silu",
    "erf",
];
const BINARY: &[&str] = &["add", "sub", "mul", "div", "minimum", "maximum"];

/// Names the `prim::Constant` lines of a generated graph.
struct Constants {
    count: usize,
}

impl Constants {
    fn add(&mut self, lines: &mut Vec<String>, ty: &str, attribute: &str) -> String {
        self.count += 1;
        lines.push(format!(
            "%c{} : {ty} = prim::Constant{attribute}()",
            self.count
        ));
        format!("%c{}", self.count)
    }
    fn number(&mut self, lines: &mut Vec<String>, value: f64) -> String {
        self.add(lines, "float", &format!("[value={value:?}]"))
    }
}

struct Case {
    text: String,
    inputs: Vec<Tensor>,
    ops: Vec<Op>,
    /// Number of data (f32) inputs; a bool condition input, if any, comes last.
    data_inputs: usize,
    condition: Option<usize>,
}

/// A tensor of `sizes` laid out as asked: contiguous, transposed or strided (non-contiguous).
fn make_input(rng: &mut Rng, sizes: &[usize], layout: usize) -> Tensor {
    let numel: usize = sizes.iter().product();
    let values =
        |rng: &mut Rng, n: usize| -> Vec<f32> { (0..n).map(|_| rng.uniform(-3.0, 3.0)).collect() };
    match layout {
        // Transposed: build the reversed-last-two-dims tensor and transpose it back.
        1 if sizes.len() >= 2 => {
            let mut swapped = sizes.to_vec();
            let n = swapped.len();
            swapped.swap(n - 1, n - 2);
            let base = Tensor::from_vec(values(rng, numel), &swapped).unwrap();
            base.transpose(-1, -2).unwrap()
        }
        // Strided: every other element of a tensor twice as long in the last dim.
        2 if !sizes.is_empty() => {
            let mut doubled = sizes.to_vec();
            let n = doubled.len();
            doubled[n - 1] *= 2;
            let base = Tensor::from_vec(values(rng, numel * 2), &doubled).unwrap();
            base.slice(-1, Some(0), None, 2).unwrap()
        }
        _ => Tensor::from_vec(values(rng, numel), sizes).unwrap(),
    }
}

/// Shapes that broadcast to `full`: itself, size-1 dims, fewer leading dims, or 0-dim.
fn broadcast_variant(rng: &mut Rng, full: &[usize]) -> Vec<usize> {
    match rng.below(5) {
        0 => full
            .iter()
            .map(|&s| if rng.below(2) == 0 { 1 } else { s })
            .collect(),
        1 if !full.is_empty() => full[1..].to_vec(),
        2 => Vec::new(),
        _ => full.to_vec(),
    }
}

fn generate(rng: &mut Rng, full: &[usize]) -> Case {
    let data_inputs = 1 + rng.below(3);
    let mut inputs = Vec::new();
    let mut lines = Vec::new();
    let mut header = Vec::new();
    for index in 0..data_inputs {
        // The first input always has the full shape so that the output has it too.
        let sizes = if index == 0 {
            full.to_vec()
        } else {
            broadcast_variant(rng, full)
        };
        let layout = rng.below(4);
        inputs.push(make_input(rng, &sizes, layout));
        header.push(format!("%v{index} : Tensor"));
    }
    let condition = if rng.below(3) == 0 {
        let sizes = broadcast_variant(rng, full);
        let data = make_input(rng, &sizes, 0);
        let mask = data
            .gt(&Tensor::scalar_tensor(Scalar::Float(0.0), DType::Float32))
            .unwrap();
        inputs.push(mask);
        header.push("%cond : Tensor".to_string());
        Some(inputs.len() - 1)
    } else {
        None
    };
    let mut values = data_inputs;
    let mut ops = Vec::new();
    let mut constants = Constants { count: 0 };
    let steps = 2 + rng.below(6);
    for _ in 0..steps {
        let a = rng.below(values);
        let b = rng.below(values);
        let op = match rng.below(9) {
            0 | 1 => Op::Unary(UNARY[rng.below(UNARY.len())], a),
            2 => Op::Gelu(["none", "tanh"][rng.below(2)], a),
            3 => Op::Pow(a, [2.0, 3.0, 0.5, -1.0, 2.5][rng.below(5)]),
            4 | 5 => Op::Binary(BINARY[rng.below(BINARY.len())], a, b),
            6 => Op::AddAlpha(
                ["add", "sub"][rng.below(2)],
                a,
                b,
                [1.0, 0.5, -2.0][rng.below(3)],
            ),
            7 => Op::ScalarRight(
                ["add", "mul", "div"][rng.below(3)],
                a,
                [1.5, -0.75][rng.below(2)],
            ),
            _ => match condition {
                Some(_) => Op::Where(a, b),
                None => Op::Clamp(
                    a,
                    [Some(-1.0), None][rng.below(2)],
                    Some(0.5 + rng.below(3) as f64),
                ),
            },
        };
        let out = format!("%v{values}");
        let line = match &op {
            Op::Unary(name, a) => format!("{out} : Tensor = aten::{name}(%v{a})"),
            Op::Gelu(approximate, a) => {
                let c = constants.add(&mut lines, "str", &format!("[value=\"{approximate}\"]"));
                format!("{out} : Tensor = aten::gelu(%v{a}, {c})")
            }
            Op::Pow(a, exponent) => {
                let c = constants.number(&mut lines, *exponent);
                format!("{out} : Tensor = aten::pow(%v{a}, {c})")
            }
            Op::Binary(name, a, b) => format!("{out} : Tensor = aten::{name}(%v{a}, %v{b})"),
            Op::AddAlpha(name, a, b, alpha) => {
                let c = constants.number(&mut lines, *alpha);
                format!("{out} : Tensor = aten::{name}(%v{a}, %v{b}, {c})")
            }
            Op::ScalarRight(name, a, value) => {
                let c = constants.number(&mut lines, *value);
                if *name == "add" {
                    let one = constants.add(&mut lines, "int", "[value=1]");
                    format!("{out} : Tensor = aten::add(%v{a}, {c}, {one})")
                } else {
                    format!("{out} : Tensor = aten::{name}(%v{a}, {c})")
                }
            }
            Op::Clamp(a, low, high) => {
                let mut bound = |lines: &mut Vec<String>, v: &Option<f64>| match v {
                    Some(v) => constants.number(lines, *v),
                    None => constants.add(lines, "NoneType", ""),
                };
                let low = bound(&mut lines, low);
                let high = bound(&mut lines, high);
                format!("{out} : Tensor = aten::clamp(%v{a}, {low}, {high})")
            }
            Op::Where(a, b) => format!("{out} : Tensor = aten::where(%cond, %v{a}, %v{b})"),
        };
        lines.push(line);
        ops.push(op);
        values += 1;
    }
    // The output combines the last value with the first input, so it has the full shape.
    let last = values - 1;
    lines.push(format!("%v{values} : Tensor = aten::mul(%v{last}, %v0)"));
    ops.push(Op::Binary("mul", last, 0));
    let text = format!(
        "graph({}):\n  {}\n  return (%v{values})\n",
        header.join(", "),
        lines.join("\n  ")
    );
    Case {
        text,
        inputs,
        ops,
        data_inputs,
        condition,
    }
}

/// The reference: ferrojit-tensor's kernels, one op at a time.
fn reference(case: &Case) -> Tensor {
    let mut values: Vec<Tensor> = case.inputs[..case.data_inputs].to_vec();
    let float = |v: f64| Scalar::Float(v);
    for op in &case.ops {
        let result = match op {
            Op::Unary(name, a) => {
                let x = &values[*a];
                match *name {
                    "neg" => x.neg(),
                    "abs" => x.abs(),
                    "relu" => x.relu(),
                    "sqrt" => x.sqrt(),
                    "rsqrt" => x.unary(UnaryOp::Rsqrt),
                    "reciprocal" => x.unary(UnaryOp::Reciprocal),
                    "exp" => x.exp(),
                    "log" => x.log(),
                    "tanh" => x.tanh(),
                    "sigmoid" => x.sigmoid(),
                    "silu" => x.unary(UnaryOp::Silu),
                    "erf" => x.unary(UnaryOp::Erf),
                    other => unreachable!("{other}"),
                }
            }
            Op::Gelu(approximate, a) => values[*a].unary(UnaryOp::Gelu(*approximate == "tanh")),
            Op::Pow(a, exponent) => values[*a].pow_scalar(&float(*exponent)),
            Op::Binary(name, a, b) => {
                let (x, y) = (&values[*a], &values[*b]);
                match *name {
                    "add" => x.add(y, &Scalar::Int(1)),
                    "sub" => x.sub(y, &Scalar::Int(1)),
                    "mul" => x.mul(y),
                    "div" => x.div(y, None),
                    "minimum" => x.minimum(y),
                    "maximum" => x.maximum(y),
                    other => unreachable!("{other}"),
                }
            }
            Op::AddAlpha(name, a, b, alpha) => {
                if *name == "add" {
                    values[*a].add(&values[*b], &float(*alpha))
                } else {
                    values[*a].sub(&values[*b], &float(*alpha))
                }
            }
            Op::ScalarRight(name, a, value) => {
                let s = Tensor::wrapped_scalar(float(*value));
                match *name {
                    "add" => values[*a].add(&s, &Scalar::Int(1)),
                    "mul" => values[*a].mul(&s),
                    _ => values[*a].div(&s, None),
                }
            }
            Op::Clamp(a, low, high) => {
                let low = low.map(float);
                let high = high.map(float);
                values[*a].clamp(low.as_ref(), high.as_ref())
            }
            Op::Where(a, b) => {
                let condition = &case.inputs[case.condition.expect("where has a condition")];
                Tensor::where_(condition, &values[*a], &values[*b])
            }
        };
        values.push(result.expect("reference op runs"));
    }
    values.pop().expect("at least one op")
}

fn agree(actual: f32, expected: f32) -> bool {
    if ulp_distance(actual, expected) <= CHAIN_ULP {
        return true;
    }
    actual.is_finite()
        && expected.is_finite()
        && (actual - expected).abs() <= 1e-5 * expected.abs().max(1.0)
}

#[test]
fn random_pointwise_graphs_match_ferrojit_tensor_kernels() {
    let shapes: &[&[usize]] = &[
        &[37],
        &[4, 9],
        &[2, 3, 5],
        &[3, 1, 7],
        &[0, 3],
        &[1],
        &[257, 3],
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let cache = GroupCache::new();
    let mut compiled_runs = 0;
    let mut strided_cases = 0;
    let mut declined = Vec::new();
    for case_number in 0..300u64 {
        let full = shapes[case_number as usize % shapes.len()];
        let case = generate(&mut rng, full);
        let graph = parse_graph(&case.text).unwrap_or_else(|e| panic!("{e}\n{}", case.text));
        let expected = reference(&case);
        let flat = case
            .inputs
            .iter()
            .all(|t| (t.sizes() == expected.sizes() && t.is_contiguous()) || t.numel() == 1);
        let before = cache.stats().strided_runs;
        let result = cache
            .run_group(case_number, &graph, &case.inputs)
            .unwrap_or_else(|e| panic!("case {case_number}: {e}\n{}", case.text));
        let Some(outputs) = result else {
            // The only thing this generator can produce that the code generator declines
            // is a math function of a broadcast scalar input.
            let reason = cache
                .unsupported_reason(case_number, &case.inputs)
                .unwrap_or_default();
            assert!(
                reason.starts_with("a math function"),
                "case {case_number} declined for {reason:?}:\n{}",
                case.text
            );
            declined.push(case_number);
            continue;
        };
        compiled_runs += 1;
        if !flat {
            strided_cases += 1;
            assert_eq!(
                cache.stats().strided_runs,
                before + 1,
                "case {case_number} ran strided"
            );
        }
        assert_eq!(outputs.len(), 1);
        assert_eq!(
            outputs[0].sizes(),
            expected.sizes(),
            "case {case_number} shape"
        );
        assert_eq!(outputs[0].dtype(), DType::Float32);
        let actual = outputs[0].to_vec::<f32>().unwrap();
        let wanted = expected.to_vec::<f32>().unwrap();
        for (i, (&a, &e)) in actual.iter().zip(&wanted).enumerate() {
            assert!(
                agree(a, e),
                "case {case_number} element {i}: generated {a:e}, ferrojit-tensor {e:e} ({} ulp)\n{}",
                ulp_distance(a, e),
                case.text
            );
        }
    }
    eprintln!(
        "{compiled_runs} compiled runs ({strided_cases} strided), {} declined",
        declined.len()
    );
    assert!(
        compiled_runs >= 200,
        "too few cases compiled: {compiled_runs}"
    );
    assert!(
        strided_cases >= 20,
        "too few strided cases: {strided_cases}"
    );
}

/// `text` with its single output `%vN` sent through `reduction` (`softmax` or
/// `log_softmax`) over dim -1.
fn with_trailing_reduction(text: &str, reduction: &str) -> String {
    let (body, last_line) = text
        .trim_end()
        .rsplit_once('\n')
        .expect("a graph has a return line");
    let output = last_line
        .trim()
        .strip_prefix("return (")
        .and_then(|rest| rest.strip_suffix(')'))
        .expect("one returned value");
    format!(
        "{body}\n  %rdim : int = prim::Constant[value=-1]()\n  %rnone : NoneType = prim::Constant()\n  \
         %reduced : Tensor = aten::{reduction}({output}, %rdim, %rnone)\n  return (%reduced)\n"
    )
}

fn row_agree(actual: f32, expected: f32) -> bool {
    ulp_distance(actual, expected) <= ROW_ULP
        || (actual.is_finite()
            && expected.is_finite()
            && (actual - expected).abs() <= ROW_ABSOLUTE * expected.abs().max(1.0))
}

#[test]
fn random_pointwise_graphs_with_a_trailing_softmax_match_ferrojit_tensor() {
    let shapes: &[&[usize]] = &[
        &[37],
        &[4, 9],
        &[2, 3, 5],
        &[3, 1, 7],
        &[0, 3],
        &[257, 3],
        &[64, 300],
    ];
    let mut rng = Rng(0x51f1_5eed_0022_0001);
    let cache = GroupCache::new();
    let mut compared = 0;
    for case_number in 0..120u64 {
        let full = shapes[case_number as usize % shapes.len()];
        let case = generate(&mut rng, full);
        let reduction = ["softmax", "log_softmax"][case_number as usize % 2];
        let pointwise = parse_graph(&case.text).unwrap();
        let reduced_text = with_trailing_reduction(&case.text, reduction);
        let reduced = parse_graph(&reduced_text).unwrap_or_else(|e| panic!("{e}\n{reduced_text}"));
        let base = cache
            .run_group(2 * case_number, &pointwise, &case.inputs)
            .unwrap_or_else(|e| panic!("case {case_number}: {e}"));
        let fused = cache
            .run_group(2 * case_number + 1, &reduced, &case.inputs)
            .unwrap_or_else(|e| panic!("case {case_number}: {e}\n{reduced_text}"));
        // The reduction compiles exactly when its pointwise chain does.
        let (Some(base), Some(fused)) = (base, fused) else {
            assert!(
                cache
                    .unsupported_reason(2 * case_number + 1, &case.inputs)
                    .is_some_and(|reason| reason.starts_with("a math function")),
                "case {case_number} declined:\n{reduced_text}"
            );
            continue;
        };
        let expected = if reduction == "softmax" {
            base[0].softmax(-1, None)
        } else {
            base[0].log_softmax(-1, None)
        }
        .expect("reference softmax runs");
        assert_eq!(
            fused[0].sizes(),
            expected.sizes(),
            "case {case_number} shape"
        );
        let actual = fused[0].to_vec::<f32>().unwrap();
        let wanted = expected.to_vec::<f32>().unwrap();
        let before = base[0].to_vec::<f32>().unwrap();
        let length = full.last().copied().unwrap_or(1).max(1);
        for (row, ((got, want), input)) in actual
            .chunks(length)
            .zip(wanted.chunks(length))
            .zip(before.chunks(length))
            .enumerate()
        {
            // PyTorch 2.15 gives a whole row of NaN when the row holds NaN or +inf (its
            // maximum is NaN or inf, and inf - inf is NaN); ferrojit-tensor's softmax does
            // not, so such rows are checked against PyTorch's rule instead.
            if input.iter().any(|v| v.is_nan() || *v == f32::INFINITY) {
                assert!(
                    got.iter().all(|v| v.is_nan()),
                    "case {case_number} row {row}: {got:?} from {input:?}"
                );
                continue;
            }
            for (i, (&a, &e)) in got.iter().zip(want).enumerate() {
                assert!(
                    row_agree(a, e),
                    "case {case_number} row {row} element {i}: fused {reduction} {a:e}, ferrojit-tensor {e:e} ({} ulp)\n{reduced_text}",
                    ulp_distance(a, e)
                );
            }
        }
        compared += 1;
    }
    eprintln!("{compared} reduction groups compared");
    assert!(
        compared >= 80,
        "too few reduction groups compiled: {compared}"
    );
}
