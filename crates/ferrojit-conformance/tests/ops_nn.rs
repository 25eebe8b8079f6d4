//! Conformance of the linear-algebra, neural-network, indexing and creation operators with
//! PyTorch (cases from tests/fixtures/ops_nn/generate.py), and of the random operators: the
//! values PyTorch draws after the same `manual_seed` (tests/fixtures/random/generate.py), plus
//! distribution checks over larger samples.

use std::sync::{Mutex, PoisonError};

use ferrojit_conformance::known_difference as known;
use ferrojit_conformance::{
    as_value, call_operator, kernel_refusal, repo_root, run_case, run_case_file, CaseFileOptions,
    KnownMessageDifference, OpCase,
};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_tensor::{DType, Tensor};

/// The random tests draw from the one default generator; each holds this while it does, so
/// tests running in parallel threads do not interleave their draws.
static DEFAULT_GENERATOR: Mutex<()> = Mutex::new(());

/// The error cases of ops_nn whose message is not PyTorch's yet, by file; each entry must
/// explain a case of its file, and every other error case must carry PyTorch's message.
fn known_differences(file: &str) -> Vec<KnownMessageDifference> {
    match file {
        "conv_pool.pt" => vec![
            known(
                "expected scalar type Float but found Double",
                "Input type (Float) and weight type (Double) should be the same",
                "ferrojit compares the input's and the weight's dtypes up front, with the \
                 message of PyTorch's mkldnn path; PyTorch's CPU path fails later, in the GEMM",
            ),
            known(
                "output padding must be smaller than either stride or dilation, but got \
                 output_padding_height: 1 output_padding_width: 1 stride_height: 1 \
                 stride_width: 1 dilation_height: 1 dilation_width: 1",
                "output padding must be smaller than either stride or dilation",
                "ferrojit's message leaves out the values PyTorch's lists",
            ),
            known(
                "Given input size: (1x2x2). Calculated output size: (1x0x0).",
                "Given input size: (2). Calculated output size: (0).",
                "ferrojit reports the one spatial dimension that is too small; PyTorch the \
                 whole (channels x height x width) shape",
            ),
            known(
                "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch \
                 dimensions, but input has sizes [1, 2, 0, 3] with dimension 2 being empty",
                "adaptive_avg_pool2d: Expected input's non-batch dimensions to have positive \
                 length, but input has a shape of [1, 2, 0, 3]",
                "ferrojit words the empty-dimension check as an older PyTorch did",
            ),
        ],
        "creation.pt" => vec![
            known(
                "Repeats must be non-negative",
                "repeats can not be negative",
                "ferrojit words the check as PyTorch's repeat_interleave.self_int path does; \
                 the Tensor-repeats path PyTorch took here says it otherwise",
            ),
            known(
                ", but got repeats.size(0) = 2 and input.size(0) = 3",
                "",
                "ferrojit's message leaves out the two sizes PyTorch's gives",
            ),
            known(
                "but got: -1.9466 -1.0779",
                "but got: [2, 2]",
                "PyTorch prints the offending tensor's values; ferrojit its shape",
            ),
        ],
        "indexing.pt" => vec![
            known(
                "Expected index [2, 5] to be no larger than self [3, 4] apart from dimension 0 \
                 and to be no larger size than src [2, 5]",
                "Size does not match at dimension 1 expected index [2, 5] to be no larger than \
                 self [3, 4] apart from dimension 0",
                "ferrojit's scatter shape check words it as PyTorch's gather check does",
            ),
            known(
                "Number of elements of source < number of ones in mask",
                "masked_scatter: expected source to have at least as many elements as ones in \
                 mask",
                "ferrojit words the check as PyTorch's CUDA kernel does",
            ),
        ],
        "linalg.pt" => vec![
            known(
                "outer: Expected 1-D argument self, but got 2-D",
                "outer: expected 1-D tensors, but got 2-D and 1-D tensors",
                "ferrojit checks both arguments of outer in one message",
            ),
            known(
                "einsum(): subscript j has size 5 for operand 1 which does not broadcast with \
                 previously seen size 4",
                "einsum(): operands do not broadcast with remapped shapes \
                 (original->remapped): [5, 5] and [4]",
                "ferrojit's einsum finds the size clash when it broadcasts the operands, \
                 PyTorch's while it parses the subscripts",
            ),
        ],
        "misc_nn.pt" => vec![
            known(
                " (while checking arguments for embedding)",
                "",
                "ferrojit's argument check does not name the operator it checks for",
            ),
            known(
                "\"compute_index_ranges_weights\" not implemented",
                "\"upsample_aa\" not implemented",
                "PyTorch's dispatch error names its CPU kernel function; ferrojit's names the \
                 operator family",
            ),
            known(
                "\"upsample_bilinear2d_channels_last\" not implemented",
                "\"upsample\" not implemented",
                "PyTorch's dispatch error names its CPU kernel function; ferrojit's names the \
                 operator family",
            ),
            known(
                "Expected static_cast<int64_t>(output_size->size()) == spatial_dimensions to be \
                 true, but got false.  (Could this error message be improved?  If so, please \
                 report an enhancement request to PyTorch.)",
                "Expected 4D input, but got input of size [1, 3, 3]",
                "PyTorch fails an internal assertion on the output size first; ferrojit checks \
                 the input's rank first, with a message for users",
            ),
        ],
        "norm_act.pt" => vec![known(
            "running_mean must be defined in evaluation mode",
            "running_mean and running_var must be defined in evaluation mode",
            "ferrojit checks both running statistics in one message",
        )],
        "rnn_attention.pt" => vec![
            known(
                "MatrixRef: ArrayRef size 3 not divisible by stride 4",
                "lstm: expected 4 parameter tensors for 1 layer(s), 1 direction(s) and \
                 has_biases=true, got 3",
                "ferrojit counts the parameter tensors before grouping them; PyTorch fails \
                 while grouping them",
            ),
            known(
                "addmm: mat1 and mat2 shapes cannot be multiplied (15x4 and 6x21)",
                "gru: weight_ih of layer 0 should have shape [21, 4], got [21, 6]",
                "ferrojit checks each weight's shape before running the cell; PyTorch fails \
                 in the first matrix product",
            ),
            known(
                "`embed_dim` must divide evenly by `num_heads`",
                "embed_dim must be divisible by num_heads",
                "ferrojit words the check as torch.nn.MultiheadAttention's Python code does",
            ),
        ],
        _ => Vec::new(),
    }
}

/// Runs every case of a file, each on deep copies of its arguments: the generator calls
/// PyTorch on copies (so in-place cases leave the saved tensors alone), and torch.save keeps
/// one tensor used by several cases as one storage.
fn check_file(name: &str, minimum_cases: usize) {
    let path = repo_root().join("tests/fixtures/ops_nn").join(name);
    let report = run_case_file(
        &path,
        &CaseFileOptions {
            minimum_cases,
            copy_arguments: true,
            known_message_differences: &known_differences(name),
            known_missing_operators: &[],
        },
    );
    report.assert_all_passed(name);
}

#[test]
fn linalg_cases() {
    check_file("linalg.pt", 59);
}

#[test]
fn conv_pool_cases() {
    check_file("conv_pool.pt", 81);
}

#[test]
fn norm_act_cases() {
    check_file("norm_act.pt", 54);
}

#[test]
fn loss_cases() {
    check_file("losses.pt", 117);
}

#[test]
fn misc_nn_cases() {
    check_file("misc_nn.pt", 132);
}

#[test]
fn indexing_cases() {
    check_file("indexing.pt", 123);
}

#[test]
fn creation_cases() {
    check_file("creation.pt", 128);
}

#[test]
fn rnn_and_attention_cases() {
    check_file("rnn_attention.pt", 50);
}

/// Calls `op` with positional arguments; its result, or the test fails.
fn call(op: &str, args: Vec<IValue>) -> IValue {
    call_operator(op, args, &[])
        .map(as_value)
        .unwrap_or_else(|e| panic!("{op} failed: {e}"))
}

fn sizes(values: &[i64]) -> IValue {
    IValue::int_list(values)
}

fn none4() -> Vec<IValue> {
    vec![IValue::None, IValue::None, IValue::None, IValue::None]
}

fn rand_values(op: &str, seed: i64) -> Vec<f64> {
    call("aten::manual_seed", vec![IValue::Int(seed)]);
    let mut args = vec![sizes(&[20000])];
    args.extend(none4());
    call(op, args).to_tensor().unwrap().to_f64_vec()
}

// The random ops share the global generator, so these checks run in one test, in sequence.
#[test]
fn random_ops_are_seeded_and_well_distributed() {
    let _generator = DEFAULT_GENERATOR
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    // rand: uniform [0, 1), mean 1/2, variance 1/12; the same seed gives the same values.
    let a = rand_values("aten::rand", 7);
    let b = rand_values("aten::rand", 7);
    let c = rand_values("aten::rand", 8);
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert!(a.iter().all(|v| (0.0..1.0).contains(v)));
    let mean = a.iter().sum::<f64>() / a.len() as f64;
    let var = a.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / a.len() as f64;
    assert!((mean - 0.5).abs() < 0.01, "rand mean {mean}");
    assert!((var - 1.0 / 12.0).abs() < 0.005, "rand variance {var}");

    // randn: mean 0, variance 1.
    let n = rand_values("aten::randn", 3);
    let mean = n.iter().sum::<f64>() / n.len() as f64;
    let var = n.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n.len() as f64;
    assert!(mean.abs() < 0.03, "randn mean {mean}");
    assert!((var - 1.0).abs() < 0.05, "randn variance {var}");

    // randint(low, high): int64 by default, inside [low, high), every value hit.
    call("aten::manual_seed", vec![IValue::Int(1)]);
    let mut args = vec![IValue::Int(-2), IValue::Int(3), sizes(&[4, 500])];
    args.extend(none4());
    let r = call("aten::randint.low", args);
    let r = r.to_tensor().unwrap();
    assert_eq!(r.dtype(), DType::Int64);
    assert_eq!(r.sizes(), &[4, 500]);
    let values = r.to_i64_vec();
    for v in -2..3 {
        assert!(values.contains(&v));
    }
    assert!(values.iter().all(|v| (-2..3).contains(v)));

    // randperm: a permutation of 0..n.
    let mut args = vec![IValue::Int(50)];
    args.extend(none4());
    let p = call("aten::randperm", args);
    let mut perm = p.to_tensor().unwrap().to_i64_vec();
    perm.sort();
    assert_eq!(perm, (0..50).collect::<Vec<i64>>());

    // normal_ / uniform_ in place, through a view: only the view's elements change.
    let base = Tensor::zeros(&[4, 6], DType::Float64).unwrap();
    let view = base.slice(1, Some(0), Some(6), 2).unwrap();
    let out = call(
        "aten::uniform_",
        vec![
            IValue::from(view.clone()),
            IValue::Double(2.0),
            IValue::Double(3.0),
            IValue::None,
        ],
    );
    assert!(out.to_tensor().unwrap().is_same(&view));
    let all = base.to_f64_vec();
    for (i, v) in all.iter().enumerate() {
        if i % 2 == 0 {
            assert!((2.0..3.0).contains(v));
        } else {
            assert_eq!(*v, 0.0);
        }
    }
    let big = Tensor::zeros(&[20000], DType::Float32).unwrap();
    call(
        "aten::normal_",
        vec![
            IValue::from(big.clone()),
            IValue::Double(5.0),
            IValue::Double(2.0),
            IValue::None,
        ],
    );
    let v = big.to_f64_vec();
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    assert!((mean - 5.0).abs() < 0.06, "normal_ mean {mean}");

    // bernoulli_(p) and dropout in training mode: rate and scaling.
    let t = Tensor::zeros(&[20000], DType::Float32).unwrap();
    call(
        "aten::bernoulli_.float",
        vec![IValue::from(t.clone()), IValue::Double(0.3), IValue::None],
    );
    let ones = t.to_f64_vec().iter().filter(|&&v| v == 1.0).count() as f64 / 20000.0;
    assert!((ones - 0.3).abs() < 0.02, "bernoulli rate {ones}");
    let x = Tensor::full(
        &[20000],
        ferrojit_tensor::Scalar::Float(1.0),
        DType::Float32,
    )
    .unwrap();
    let d = call(
        "aten::dropout",
        vec![IValue::from(x), IValue::Double(0.25), IValue::Bool(true)],
    );
    let d = d.to_tensor().unwrap().to_f64_vec();
    let kept = d.iter().filter(|&&v| v != 0.0).count() as f64 / 20000.0;
    assert!((kept - 0.75).abs() < 0.02, "dropout keep rate {kept}");
    assert!(d.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.75).abs() < 1e-6));
}

/// The spacing of `dtype`'s values around `y` (its unit in the last place).
fn ulp(dtype: DType, y: f64) -> f64 {
    let (mantissa_bits, min_exponent) = match dtype {
        DType::Float64 => (52, -1022),
        DType::Float32 => (23, -126),
        DType::Float16 => (10, -14),
        DType::BFloat16 => (7, -126),
        _ => return 0.0,
    };
    let exponent = if y == 0.0 || !y.is_finite() {
        min_exponent
    } else {
        (y.abs().log2().floor() as i32).max(min_exponent)
    };
    2f64.powi(exponent - mantissa_bits)
}

/// Compares a random result with PyTorch's: bit for bit, or within `max_ulps` units in the
/// last place. Returns the largest difference seen, in ulps.
fn compare_draws(actual: &IValue, expected: &IValue, max_ulps: f64) -> Result<f64, String> {
    let (IValue::Tensor(a), IValue::Tensor(e)) = (actual, expected) else {
        return Err(format!(
            "{} vs PyTorch's {}",
            actual.tag_name(),
            expected.tag_name()
        ));
    };
    let (a, e) = (a.get(), e.get());
    if a.dtype() != e.dtype() || a.sizes() != e.sizes() {
        return Err(format!(
            "{} {:?} vs PyTorch's {} {:?}",
            a.dtype().name(),
            a.sizes(),
            e.dtype().name(),
            e.sizes()
        ));
    }
    if !e.dtype().is_floating_point() {
        let (x, y) = (a.to_i64_vec(), e.to_i64_vec());
        return match x.iter().zip(&y).position(|(p, q)| p != q) {
            None => Ok(0.0),
            Some(i) => Err(format!("element {i} is {}, PyTorch gives {}", x[i], y[i])),
        };
    }
    let mut worst = 0.0f64;
    for (i, (x, y)) in a.to_f64_vec().into_iter().zip(e.to_f64_vec()).enumerate() {
        let ulps = if x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()) {
            0.0
        } else if x.is_finite() && y.is_finite() {
            (x - y).abs() / ulp(e.dtype(), y)
        } else {
            f64::INFINITY
        };
        if ulps > max_ulps {
            return Err(format!(
                "element {i} is {x:e}, PyTorch gives {y:e} ({ulps} ulps)"
            ));
        }
        worst = worst.max(ulps);
    }
    Ok(worst)
}

fn dict_field(dict: &IValue, key: &str) -> IValue {
    dict.to_dict()
        .unwrap()
        .get(&IValue::string(key))
        .unwrap_or_else(|| panic!("fixture entry has no '{key}'"))
}

fn load_random_fixture() -> IValue {
    let path = repo_root().join("tests/fixtures/random/sequences.pt");
    ferrojit_serialize::torch_save::load_file(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Whether this target runs the C library the fixtures were recorded with (glibc on x86-64):
/// there `exponential_`'s `log1p` must agree bit for bit; elsewhere within 2 ulps.
const RECORDED_LIBM: bool = cfg!(all(
    target_os = "linux",
    target_env = "gnu",
    target_arch = "x86_64"
));

/// The ulps a recorded call may differ by: none, or for values through log/sin/cos/log1p
/// (flagged `normal` by the generator) 2, except exponentials where the C library is the
/// recorded one (their only libm call is `log1p`, whose result both sides take from it).
fn allowed_ulps(op: &str, normal: bool) -> f64 {
    if !normal || (RECORDED_LIBM && op.starts_with("aten::exponential")) {
        0.0
    } else {
        2.0
    }
}

/// After the same `manual_seed`, every call of each recorded sequence returns what PyTorch
/// returned: rand, randint, randperm, uniform_, bernoulli, dropout and multinomial bit for
/// bit; normals (randn, normal_, randn_like) within 2 ulps, since they go through log/sin/cos
/// (PyTorch's AVX2 Cephes polynomials for float, reproduced exactly, and the C library's for
/// double and the per-element path, which can differ by an ulp between platforms);
/// exponentials bit for bit with glibc on x86-64 (see [`allowed_ulps`]). Calls flagged
/// `generator` draw from one `torch.Generator` per sequence, seeded with its
/// `generator_seed`. A mismatch ends its sequence, since every later call depends on the
/// generator state.
#[test]
fn random_ops_match_pytorch() {
    let _generator = DEFAULT_GENERATOR
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let data = load_random_fixture();
    let sequences = dict_field(&data, "sequences").to_list().unwrap().to_vec();
    assert!(sequences.len() >= 8, "{} sequences", sequences.len());
    let mut failures = Vec::new();
    let (mut calls, mut worst_normal) = (0, 0.0f64);
    for sequence in &sequences {
        let name = dict_field(sequence, "name").to_str().unwrap().to_string();
        let seed = dict_field(sequence, "seed");
        call("aten::manual_seed", vec![seed]);
        let generator = match dict_field(sequence, "generator_seed") {
            IValue::None => None,
            seed => Some(IValue::Generator(
                ferrojit_tensor::ops::random::new_generator(seed.to_int().unwrap() as u64),
            )),
        };
        for (index, entry) in dict_field(sequence, "calls")
            .to_list()
            .unwrap()
            .to_vec()
            .iter()
            .enumerate()
        {
            let op = dict_field(entry, "op").to_str().unwrap().to_string();
            let mut kwargs = fixture_kwargs(entry);
            if dict_field(entry, "generator").to_bool().unwrap() {
                let generator = generator.clone().expect("a generator call needs a seed");
                kwargs.push(("generator".to_string(), generator));
            }
            let case = OpCase {
                name: format!("{name} #{index}"),
                op: op.clone(),
                args: dict_field(entry, "args").to_list().unwrap().to_vec(),
                kwargs,
                expected: Ok(dict_field(entry, "expected")),
            };
            let normal = dict_field(entry, "normal").to_bool().unwrap();
            calls += 1;
            let outcome = run_case(&case)
                .map_err(|e| e.to_string())
                .and_then(|actual| {
                    compare_draws(
                        &actual,
                        &dict_field(entry, "expected"),
                        allowed_ulps(&op, normal),
                    )
                });
            match outcome {
                Ok(ulps) => worst_normal = worst_normal.max(ulps),
                Err(message) => {
                    failures.push(format!("{name}, call {index} ({op}): {message}"));
                    break;
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} sequence(s) diverge from PyTorch:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(calls >= 600, "only {calls} calls checked");
    eprintln!("{calls} random calls match PyTorch; normals within {worst_normal} ulps");
}

/// A fixture entry's keyword arguments, by name.
fn fixture_kwargs(entry: &IValue) -> Vec<(String, IValue)> {
    match dict_field(entry, "kwargs") {
        IValue::Dict(map) => map
            .entries()
            .into_iter()
            .map(|(k, v)| (k.to_str().unwrap().to_string(), v))
            .collect(),
        _ => Vec::new(),
    }
}

/// The calls PyTorch rejects (multinomial's and exponential_'s argument checks) fail here
/// too, in the kernel, each with PyTorch's message (the first line of it).
#[test]
fn random_op_errors_match_pytorch() {
    let _generator = DEFAULT_GENERATOR
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let cases = dict_field(&load_random_fixture(), "errors")
        .to_list()
        .unwrap()
        .to_vec();
    assert!(cases.len() >= 30, "only {} error cases", cases.len());
    let mut failures = Vec::new();
    for (index, entry) in cases.iter().enumerate() {
        let op = dict_field(entry, "op").to_str().unwrap().to_string();
        let expected = dict_field(entry, "message").to_str().unwrap().to_string();
        let case = OpCase {
            name: format!("error #{index}"),
            op: op.clone(),
            args: dict_field(entry, "args").to_list().unwrap().to_vec(),
            kwargs: fixture_kwargs(entry),
            expected: Err(expected.clone()),
        };
        match run_case(&case).map_err(|error| kernel_refusal(&error)) {
            Err(Ok(message)) if message == expected => {}
            Err(Ok(message)) => failures.push(format!(
                "#{index} {op}: '{message}', PyTorch says '{expected}'"
            )),
            Err(Err(difference)) => failures.push(format!("#{index} {op}: {difference}")),
            Ok(value) => failures.push(format!(
                "#{index} {op}: returned {}, PyTorch says '{expected}'",
                value.python_repr()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `Generator.seed()` (`aten::seed`) and `torch.seed()` reseed with a seed nobody chose and
/// return it; that seed, given to `manual_seed`, replays the same draws. (No fixture can hold
/// the value itself.)
#[test]
fn seed_returns_a_seed_that_replays_the_draws() {
    let _generator = DEFAULT_GENERATOR
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let generator = call("aten::Generator", vec![IValue::None, IValue::None]);
    let draw = |generator: &IValue| {
        let t = Tensor::zeros(&[8], DType::Float64).unwrap();
        call(
            "aten::exponential_",
            vec![IValue::from(t), IValue::Double(1.0), generator.clone()],
        )
        .to_tensor()
        .unwrap()
        .to_f64_vec()
    };
    let seed = call("aten::seed", vec![generator.clone()])
        .to_int()
        .unwrap();
    let initial = call("aten::initial_seed", vec![generator.clone()]);
    assert_eq!(initial.to_int().unwrap(), seed);
    let first = draw(&generator);
    call(
        "aten::manual_seed.generator",
        vec![generator.clone(), IValue::Int(seed)],
    );
    assert_eq!(draw(&generator), first);
    let other = call("aten::seed", vec![generator.clone()])
        .to_int()
        .unwrap();
    assert_ne!(
        other, seed,
        "two non-deterministic seeds in a row are equal"
    );

    // torch.seed(): the default generator.
    let seed = ferrojit_tensor::ops::random::seed();
    assert_eq!(ferrojit_tensor::ops::random::initial_seed(), seed);
    let first = draw(&IValue::None);
    call("aten::manual_seed", vec![IValue::Int(seed as i64)]);
    assert_eq!(draw(&IValue::None), first);
}

/// A TorchScript function that seeds and draws itself (rand, randn, randint, dropout,
/// randperm, randn_like of a transpose, feature_dropout, normal, multinomial and exponential_,
/// some from a `torch.Generator` it creates), compiled from its source by
/// ferrojit's frontend and interpreted: the same values PyTorch's scripted copy returned. The
/// frontend must keep `aten::manual_seed`, whose only effect is on the generator.
#[test]
fn random_ops_in_torchscript_match_pytorch() {
    use std::sync::Arc;

    use ferrojit_conformance::corpus::run_options;
    use ferrojit_frontend::compile_source;
    use ferrojit_runtime::interpreter::run_shared_graph;
    use ferrojit_runtime::module::single_result;
    use ferrojit_serialize::import::{CompiledMethods, RegistrySchemas};

    let _generator = DEFAULT_GENERATOR
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let script = dict_field(&load_random_fixture(), "script");
    let source = dict_field(&script, "source").to_str().unwrap().to_string();
    let entry = dict_field(&script, "entry").to_str().unwrap().to_string();
    let unit = Arc::new(compile_source(&source, RegistrySchemas::builtins()).unwrap());
    let function = unit.function(&format!("__torch__.{entry}")).unwrap();
    let graph = function.graph(&unit).unwrap();
    let methods = CompiledMethods::new(unit.clone());
    // Whatever state the generator is in, the program reseeds it.
    call("aten::manual_seed", vec![IValue::Int(12345)]);
    let args = dict_field(&script, "inputs").to_list().unwrap().to_vec();
    let result = run_shared_graph(&graph, args, methods.as_ref(), &run_options())
        .map(single_result)
        .unwrap();
    let actual = result.to_list().unwrap().to_vec();
    let expected = dict_field(&script, "expected").to_list().unwrap().to_vec();
    let normal = dict_field(&script, "normal").to_list().unwrap().to_vec();
    assert_eq!(actual.len(), expected.len());
    let exponential = dict_field(&script, "exponential")
        .to_list()
        .unwrap()
        .to_vec();
    for (index, (a, e)) in actual.iter().zip(&expected).enumerate() {
        let op = if exponential[index].to_bool().unwrap() {
            "aten::exponential_"
        } else {
            "aten::normal_"
        };
        let max_ulps = allowed_ulps(op, normal[index].to_bool().unwrap());
        if let Err(message) = compare_draws(a, e, max_ulps) {
            panic!("output {index}: {message}");
        }
    }
}

/// randperm's 64-bit path (n >= 2^32 / 20: the inside-out shuffle with `random64() % (i + 1)`)
/// against a digest of PyTorch's permutation. Ignored by default: it holds ~4 GB.
#[test]
#[ignore = "randperm of 214748364 elements needs about 4 GB"]
fn randperm_large_n_matches_pytorch() {
    let _generator = DEFAULT_GENERATOR
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let data = load_random_fixture();
    let digest = dict_field(&data, "randperm_large");
    let n = dict_field(&digest, "n").to_int().unwrap();
    call("aten::manual_seed", vec![dict_field(&digest, "seed")]);
    let mut args = vec![IValue::Int(n)];
    args.extend(none4());
    let perm = call("aten::randperm", args)
        .to_tensor()
        .unwrap()
        .to_i64_vec();
    let head = dict_field(&digest, "head")
        .to_tensor()
        .unwrap()
        .to_i64_vec();
    let tail = dict_field(&digest, "tail")
        .to_tensor()
        .unwrap()
        .to_i64_vec();
    assert_eq!(&perm[..8], &head[..]);
    assert_eq!(&perm[perm.len() - 8..], &tail[..]);
    let checksum = perm.iter().enumerate().fold(0i64, |acc, (i, &p)| {
        acc.wrapping_add((p % 1_000_003).wrapping_mul((i as i64 + 1) % 1_000_033))
    });
    assert_eq!(checksum, dict_field(&digest, "checksum").to_int().unwrap());
}

#[test]
fn empty_has_the_requested_shape_and_dtype() {
    let mut args = vec![sizes(&[2, 0, 3])];
    args.extend(vec![
        IValue::Int(4),
        IValue::None,
        IValue::None,
        IValue::None,
        IValue::None,
    ]);
    let e = call("aten::empty.memory_format", args);
    let e = e.to_tensor().unwrap();
    assert_eq!(e.sizes(), &[2, 0, 3]);
    assert_eq!(e.dtype(), DType::Int64);
}
