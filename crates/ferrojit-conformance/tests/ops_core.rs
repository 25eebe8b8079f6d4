//! Core operator conformance: unary, binary/ternary, reduction and view operators against
//! cases PyTorch computed (tests/fixtures/ops_core, made by generate.py there), the core ATen
//! overloads of issue 18 (core_aten.pt: pooling, normalization, embedding and convolution
//! gradients, distances, col2im, grid sampling, 3-D pooling and padding, batch norm with its
//! saved and running statistics), and the order of equal elements in sort/topk/kthvalue
//! (tests/fixtures/tie_order).

use ferrojit_conformance::known_difference as known;
use ferrojit_conformance::{
    call_operator, compare, fresh_copy, repo_root, run_case_file, CaseFileOptions,
    KnownMessageDifference, KnownMissingOperator,
};
use ferrojit_runtime::ivalue::IValue;

/// PyTorch's AT_DISPATCH error names the CPU kernel function (`elu_cpu`, `floor_vml_cpu`);
/// ferrojit's dtype check names the operator.
const DISPATCH_NAME: &str =
    "PyTorch's dispatch error names its CPU kernel function; ferrojit's names the operator";

/// PyTorch's structured `out=` kernels require the result dtype exactly and say so; ferrojit
/// refuses the same calls through the `out=` cast rule of its unstructured kernels.
const OUT_DTYPE: &str = "PyTorch's structured out= check and ferrojit's out= cast rule refuse the same calls in other words";

/// Error cases of unary.pt whose message is not PyTorch's yet. Each entry must explain a case.
fn unary_differences() -> Vec<KnownMessageDifference> {
    vec![
        known(
            "\"{}_cpu\" not implemented",
            "\"{}\" not implemented",
            DISPATCH_NAME,
        ),
        known(
            "\"{}_vml_cpu\" not implemented",
            "\"{}\" not implemented",
            DISPATCH_NAME,
        ),
        known(
            "\"elu_cpu\" not implemented",
            "\"selu\" not implemented",
            "PyTorch runs selu through the elu kernel, whose name its dispatch error shows",
        ),
        known(
            "\"elu_cpu\" not implemented",
            "\"celu\" not implemented",
            "PyTorch runs celu through the elu kernel, whose name its dispatch error shows",
        ),
        known(
            "\"GeluKernelImpl\" not implemented",
            "\"gelu\" not implemented",
            DISPATCH_NAME,
        ),
        known(
            "Boolean inputs not supported for relu",
            "\"relu\" not implemented for 'Bool'",
            "PyTorch's relu has its own bool check; ferrojit refuses bool in its dtype dispatch",
        ),
        known(
            "Bool inputs not supported for hardtanh",
            "\"hardtanh\" not implemented for 'Bool'",
            "PyTorch's hardtanh (and relu6, which runs it) has its own bool check; ferrojit \
             refuses bool in its dtype dispatch",
        ),
        known(
            "Found dtype Long but expected Float",
            "result type Float can't be cast to the desired output type Long",
            OUT_DTYPE,
        ),
        known(
            "Expected out tensor to have dtype float, but got long int instead",
            "result type Float can't be cast to the desired output type Long",
            OUT_DTYPE,
        ),
        known(
            "nan_to_num: dtype of out: Long should be same as input: Float",
            "result type Float can't be cast to the desired output type Long",
            OUT_DTYPE,
        ),
        known(
            "Found dtype Long but expected Float",
            "\"bitwise_not\" not implemented for 'Float'",
            "bitwise_not.out of a float tensor into a long one: ferrojit checks the input's \
             dtype before the out tensor's, PyTorch the other way round",
        ),
    ]
}

/// The bitwise kernels check the dtype before broadcasting; PyTorch broadcasts first.
const DTYPE_BEFORE_SHAPE: &str =
    "ferrojit's bitwise kernels check the dtype before the shapes; PyTorch the shapes first";

fn binary_differences() -> Vec<KnownMessageDifference> {
    let shape =
        "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0";
    vec![
        known(
            "\"div_floor_cpu\" not implemented",
            "\"div_cpu\" not implemented",
            "ferrojit's floor_divide checks the dtype in the kernel it shares with div, under \
             div's name",
        ),
        known(
            "\"lerp_kernel_tensor\" not implemented",
            "\"lerp_kernel_scalar\" not implemented",
            "ferrojit's lerp.Tensor reports the dtype under the scalar-weight kernel's name",
        ),
        known(
            shape,
            "\"bitwise_and_cpu\" not implemented for 'Float'",
            DTYPE_BEFORE_SHAPE,
        ),
        known(
            shape,
            "\"bitwise_or_cpu\" not implemented for 'Float'",
            DTYPE_BEFORE_SHAPE,
        ),
        known(
            shape,
            "\"bitwise_xor_cpu\" not implemented for 'Float'",
            DTYPE_BEFORE_SHAPE,
        ),
        known(
            shape,
            "\"lshift_cpu\" not implemented for 'Float'",
            DTYPE_BEFORE_SHAPE,
        ),
        known(
            shape,
            "\"rshift_cpu\" not implemented for 'Float'",
            DTYPE_BEFORE_SHAPE,
        ),
        known(
            "output with shape [3] doesn't match the broadcast shape [2, 3]",
            "\"bitwise_and_cpu\" not implemented for 'Float'",
            DTYPE_BEFORE_SHAPE,
        ),
    ]
}

fn reduction_differences() -> Vec<KnownMessageDifference> {
    vec![
        known(
            "{}(): Expected reduction dim to be specified for input.numel() == 0. Specify the \
             reduction dim with the 'dim' argument.",
            "{}(): Expected reduction dim 0 to have non-zero size.",
            "amin/amax of an empty tensor over every dim: PyTorch asks for a dim first, \
             ferrojit reports the empty dim it would reduce",
        ),
        known(
            "kthvalue(): Expected reduction dim 0 to have non-zero size.",
            "kthvalue(): selected number k out of range for dimension 0",
            "kthvalue over an empty dim: ferrojit checks k's range before the dim's size",
        ),
        known(
            "norm(): input dtype should be either floating point or complex. Got {} instead.",
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
            "ferrojit's norm.Scalar kernel (crates/ferrojit-runtime/src/ops/core_ops.rs) runs \
             linalg_vector_norm and reports that operator's dtype check",
        ),
    ]
}

fn view_differences() -> Vec<KnownMessageDifference> {
    vec![known(
        "setStorage: sizes",
        "sizes",
        "ferrojit's storage-bounds error is shared by every view; PyTorch's as_strided \
         raises it from setStorage, which prefixes its name",
    )]
}

/// Operators of unary.pt that ferrojit does not register; only their error cases exist.
/// None now: `isnan.out` and `isinf.out` (listed here until issue 17) are registered, and
/// their cases (all refusals of a non-bool `out`) must pass with PyTorch's messages.
const UNARY_MISSING: &[KnownMissingOperator] = &[];

fn check(file: &str, minimum_cases: usize, differences: &[KnownMessageDifference]) {
    check_in(
        "tests/fixtures/ops_core",
        file,
        minimum_cases,
        differences,
        &[],
    );
}

fn check_in(
    dir: &str,
    file: &str,
    minimum_cases: usize,
    differences: &[KnownMessageDifference],
    missing: &[KnownMissingOperator],
) {
    let path = repo_root().join(dir).join(file);
    let report = run_case_file(
        &path,
        &CaseFileOptions {
            minimum_cases,
            copy_arguments: false,
            known_message_differences: differences,
            known_missing_operators: missing,
        },
    );
    report.assert_all_passed(file);
}

#[test]
fn unary_operators_match_pytorch() {
    check_in(
        "tests/fixtures/ops_core",
        "unary.pt",
        2339,
        &unary_differences(),
        UNARY_MISSING,
    );
}

#[test]
fn binary_and_ternary_operators_match_pytorch() {
    check("binary.pt", 1765, &binary_differences());
}

#[test]
fn reductions_match_pytorch() {
    check("reductions.pt", 1418, &reduction_differences());
}

#[test]
fn views_match_pytorch() {
    check("views.pt", 88, &view_differences());
}

/// Ties come out in PyTorch's CPU order: `sort` (stable=False) as libstdc++'s `std::sort`,
/// `topk` as its `std::partial_sort` / `std::nth_element` + `std::sort`, `kthvalue` as
/// PyTorch's quickselect; indices are compared exactly.
#[test]
fn tie_order_matches_pytorch() {
    check_in("tests/fixtures/tie_order", "ops.pt", 339, &[], &[]);
}

/// Error cases of core_aten.pt whose message is not PyTorch's yet.
fn core_aten_differences() -> Vec<KnownMessageDifference> {
    vec![]
}

/// The core ATen overloads that issue 18 added, against PyTorch's values and refusals.
#[test]
fn core_aten_overloads_match_pytorch() {
    check_in(
        "tests/fixtures/ops_core",
        "core_aten.pt",
        236,
        &core_aten_differences(),
        &[],
    );
}

/// `_native_batch_norm_legit` in training updates `running_mean` and `running_var` in place
/// (momentum-weighted, the variance unbiased) and leaves them alone in evaluation: each case
/// that recorded its arguments after PyTorch's call ("mutated") is run on fresh copies, and
/// the copies must then hold PyTorch's values.
#[test]
fn batch_norm_updates_running_statistics_as_pytorch_does() {
    let path = repo_root().join("tests/fixtures/ops_core/core_aten.pt");
    let cases = ferrojit_serialize::torch_save::load_file(&path).unwrap();
    let mut checked = 0;
    for case in cases.to_list().unwrap().to_vec() {
        let dict = case.to_dict().unwrap();
        let Some(IValue::Dict(mutated)) = dict.get(&IValue::string("mutated")) else {
            continue;
        };
        let name = dict.get(&IValue::string("name")).unwrap();
        let op = dict.get(&IValue::string("op")).unwrap();
        let args: Vec<IValue> = dict
            .get(&IValue::string("args"))
            .unwrap()
            .to_list()
            .unwrap()
            .to_vec()
            .iter()
            .map(fresh_copy)
            .collect();
        call_operator(op.to_str().unwrap(), args.clone(), &[]).unwrap();
        for (index, expected) in mutated.entries() {
            let index = usize::try_from(index.to_int().unwrap()).unwrap();
            let label = format!("{} argument {index}", name.python_repr());
            compare(&args[index], &expected, &label).unwrap();
            checked += 1;
        }
    }
    assert!(checked >= 26, "only {checked} mutated arguments checked");
}
