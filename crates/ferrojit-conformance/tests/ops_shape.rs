//! Shape operators against cases PyTorch computed (tests/fixtures/ops_shape, made by
//! generate.py there): the `*_copy` forms of the views, the scatters into views, diagonal
//! embedding, the composite joins and splits, trapezoid/cumulative_trapezoid/gradient with
//! every overload, the native normalization forms, addmv/addr, lu_unpack, linalg.vander and
//! the bugs PyTorch's OpInfo samples found (int32 gather/scatter indices, integer
//! addbmm/baddbmm coefficients, tensor copysign/ldexp/frexp/gcd, linalg.pinv with hermitian
//! inputs and tensor tolerances). Values within the dtype tolerances, errors with PyTorch's
//! message.

use ferrojit_conformance::{call_operator, repo_root, run_case_file, CaseFileOptions};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_tensor::{DType, Tensor};

#[test]
fn shape_operators_match_pytorch() {
    let report = run_case_file(
        &repo_root().join("tests/fixtures/ops_shape/shape.pt"),
        &CaseFileOptions {
            minimum_cases: 352,
            // native_batch_norm writes its running statistics in place.
            copy_arguments: true,
            known_message_differences: &[],
            known_missing_operators: &[],
        },
    );
    report.assert_all_passed("ops_shape/shape.pt");
}

/// A `*_copy` result owns its storage: writing into it leaves the input as it was, where the
/// view itself would have changed it.
#[test]
fn copy_forms_never_alias_their_input() {
    let input = Tensor::from_vec((0..12).map(|v| v as f32).collect::<Vec<_>>(), &[3, 4])
        .expect("a 3x4 tensor");
    let before = input.to_f64_vec();
    let calls: [(&str, Vec<IValue>); 4] = [
        ("aten::t_copy", vec![]),
        ("aten::alias_copy", vec![]),
        ("aten::view_copy", vec![IValue::int_list(&[2, 6])]),
        (
            "aten::narrow_copy",
            vec![IValue::Int(1), IValue::Int(1), IValue::Int(2)],
        ),
    ];
    for (op, rest) in calls {
        let mut args = vec![IValue::from(input.clone())];
        args.extend(rest);
        let results = call_operator(op, args, &[]).unwrap_or_else(|e| panic!("{op}: {e}"));
        let result = results[0].to_tensor().expect("a tensor result");
        assert!(!result.shares_storage(&input), "{op} aliases its input");
        result
            .fill_(&ferrojit_tensor::Scalar::Float(-1.0))
            .expect("the copy is writable");
        assert_eq!(
            input.to_f64_vec(),
            before,
            "{op}: writing the copy changed the input"
        );
        assert_eq!(result.dtype(), DType::Float32);
    }
}
