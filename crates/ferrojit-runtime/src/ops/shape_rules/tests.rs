//! Each rule against its kernel: the rule's prediction from the inputs' facts must be the
//! dtype and sizes of what the kernel returns for those inputs.

use ferrojit_tensor::{DType, Scalar, Tensor};

use super::*;
use crate::ivalue::IValue;
use crate::opdef::{ArgumentFact, TensorFact};
use crate::registry::OperatorRegistry;

fn tensor(sizes: &[usize], dtype: DType) -> IValue {
    let value = match dtype {
        DType::Bool => Scalar::Bool(true),
        dtype if dtype.is_floating_point() => Scalar::Float(0.5),
        _ => Scalar::Int(1),
    };
    IValue::from(Tensor::full(sizes, value, dtype).unwrap())
}

fn float(sizes: &[usize]) -> IValue {
    tensor(sizes, DType::Float32)
}

fn ints(values: &[i64]) -> IValue {
    IValue::list(
        ferrojit_ir::Type::Int,
        values.iter().map(|&v| IValue::Int(v)).collect(),
    )
}

fn dtype_index(dtype: DType) -> IValue {
    IValue::Int(dtype.scalar_type_index())
}

/// What the kernel of `full_name` returns for `arguments`, against what its rule predicts.
/// Returns false (checking nothing) where the kernel refuses the inputs.
fn check(full_name: &str, arguments: Vec<IValue>) -> bool {
    let operator = OperatorRegistry::global()
        .lookup(full_name)
        .unwrap_or_else(|| panic!("{full_name} is registered"));
    let rule = operator
        .shape_rule
        .unwrap_or_else(|| panic!("{full_name} has a shape rule"));
    let facts: Vec<ArgumentFact> = arguments.iter().map(ArgumentFact::of_value).collect();
    let mut stack = arguments;
    if let Err(error) = (operator.kernel)(&mut stack) {
        // The rule need not refuse what the kernel refuses, but must not claim a result
        // for shapes that cannot go together; those cases are tested separately.
        let _ = error;
        return false;
    }
    let predicted = rule
        .apply(&facts)
        .unwrap_or_else(|error| panic!("{full_name}: rule failed where the kernel ran: {error}"));
    let actual: Vec<TensorFact> = stack
        .iter()
        .map(|value| {
            let tensor = value.to_tensor().unwrap();
            TensorFact::known(tensor.dtype(), tensor.sizes())
        })
        .collect();
    assert_eq!(predicted.len(), actual.len(), "{full_name}: result count");
    for (index, (predicted, actual)) in predicted.iter().zip(&actual).enumerate() {
        assert_eq!(
            predicted.dtype, actual.dtype,
            "{full_name} result {index}: dtype; facts {facts:?}"
        );
        assert_eq!(
            predicted.sizes, actual.sizes,
            "{full_name} result {index}: sizes; facts {facts:?}"
        );
    }
    true
}

const DTYPES: [DType; 4] = [DType::Float32, DType::Float64, DType::Int64, DType::Bool];

#[test]
fn unary_rules_match_their_kernels() {
    let mut checked = 0;
    for names in [UNARY_SAME_DTYPE, UNARY_FLOAT_RESULT, UNARY_PREDICATE] {
        for name in names {
            let full_name = format!("aten::{name}");
            let schema = OperatorRegistry::global()
                .lookup(&full_name)
                .unwrap()
                .schema
                .clone();
            for dtype in DTYPES {
                for sizes in [&[2usize, 3][..], &[], &[0, 4]] {
                    // Trailing arguments take their schema defaults.
                    let mut arguments = vec![tensor(sizes, dtype)];
                    for argument in &schema.arguments[1..] {
                        let default = argument.default.as_ref().unwrap();
                        arguments.push(
                            crate::interpreter::default_value(default, &argument.ty).unwrap(),
                        );
                    }
                    if check(&full_name, arguments.clone()) {
                        checked += 1;
                    }
                    let in_place = format!("aten::{name}_");
                    if OperatorRegistry::global()
                        .lookup(&in_place)
                        .is_some_and(|op| op.shape_rule.is_some())
                    {
                        check(&in_place, arguments.clone());
                    }
                    let out = format!("aten::{name}.out");
                    if OperatorRegistry::global()
                        .lookup(&out)
                        .is_some_and(|op| op.shape_rule.is_some())
                    {
                        arguments.push(tensor(&[1], DType::Float64));
                        check(&out, arguments);
                    }
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} unary cases ran");
}

#[test]
fn binary_rules_match_their_kernels_with_broadcasting_and_scalars() {
    let shapes: [(&[usize], &[usize]); 4] = [
        (&[2, 3], &[2, 3]),
        (&[4, 1, 3], &[2, 1]),
        (&[2, 3], &[]),
        (&[], &[5]),
    ];
    let mut checked = 0;
    for name in BINARY_PROMOTING.iter().chain(COMPARISONS).chain(
        [
            "aten::div.Tensor",
            "aten::div.Scalar",
            "aten::atan2",
            "aten::div.Tensor_mode",
            "aten::div.Scalar_mode",
        ]
        .iter(),
    ) {
        let schema = OperatorRegistry::global()
            .lookup(name)
            .unwrap()
            .schema
            .clone();
        let other_is_scalar = !schema.arguments[1].ty.is_tensor();
        let self_is_scalar = !schema.arguments[0].ty.is_tensor();
        for &left in &DTYPES {
            for &right in &DTYPES {
                for (left_sizes, right_sizes) in shapes {
                    let left_value = if self_is_scalar {
                        scalar_of(left)
                    } else {
                        tensor(left_sizes, left)
                    };
                    let right_value = if other_is_scalar {
                        scalar_of(right)
                    } else {
                        tensor(right_sizes, right)
                    };
                    let mut arguments = vec![left_value, right_value];
                    for argument in &schema.arguments[2..] {
                        arguments.push(match argument.name.as_str() {
                            "rounding_mode" => IValue::from("floor"),
                            _ => crate::interpreter::default_value(
                                argument.default.as_ref().unwrap(),
                                &argument.ty,
                            )
                            .unwrap(),
                        });
                    }
                    if check(name, arguments.clone()) {
                        checked += 1;
                    }
                    if name.ends_with("_mode") {
                        arguments[2] = IValue::None;
                        check(name, arguments);
                    }
                }
            }
        }
    }
    assert!(checked > 400, "only {checked} binary cases ran");
}

fn scalar_of(dtype: DType) -> IValue {
    match dtype {
        DType::Bool => IValue::Bool(true),
        dtype if dtype.is_floating_point() => IValue::Double(2.5),
        _ => IValue::Int(3),
    }
}

#[test]
fn in_place_and_out_rules_follow_self_and_out() {
    // In place: self's dtype and sizes, even where promotion would give another dtype.
    assert!(check(
        "aten::add_.Tensor",
        vec![float(&[2, 3]), tensor(&[3], DType::Int64), IValue::Int(1)]
    ));
    assert!(check(
        "aten::mul_.Scalar",
        vec![float(&[2]), IValue::Int(3)]
    ));
    assert!(check("aten::eq_.Tensor", vec![float(&[2, 3]), float(&[3])]));
    // out=: the out tensor's dtype, the broadcast sizes (out is resized to them).
    assert!(check(
        "aten::add.out",
        vec![float(&[4, 1]), float(&[3]), IValue::Int(1), float(&[7])]
    ));
    assert!(check(
        "aten::eq.Tensor_out",
        vec![float(&[4, 1]), float(&[3]), tensor(&[0], DType::Int64)]
    ));
    assert!(check(
        "aten::abs.out",
        vec![tensor(&[2, 2], DType::Int64), tensor(&[1], DType::Float64)]
    ));
    // An in-place form whose self cannot hold the broadcast result is refused by both.
    let facts: Vec<ArgumentFact> = [float(&[3]), float(&[2, 3]), IValue::Int(1)]
        .iter()
        .map(ArgumentFact::of_value)
        .collect();
    let rule = OperatorRegistry::global()
        .lookup("aten::add_.Tensor")
        .unwrap()
        .shape_rule
        .unwrap();
    assert!(rule.apply(&facts).is_err());
}

#[test]
fn broadcast_failures_and_unknowns_are_reported() {
    let rule = OperatorRegistry::global()
        .lookup("aten::add.Tensor")
        .unwrap()
        .shape_rule
        .unwrap();
    let fact = |sizes: &[usize]| ArgumentFact::Tensor(TensorFact::known(DType::Float32, sizes));
    assert!(rule
        .apply(&[
            fact(&[2, 3]),
            fact(&[4]),
            ArgumentFact::Constant(IValue::Int(1))
        ])
        .is_err());
    // Unknown sizes: the dtype is still known where the rank cannot change it.
    let unknown_sizes = ArgumentFact::Tensor(TensorFact {
        dtype: Some(DType::Float32),
        sizes: None,
        is_wrapped_number: false,
    });
    let results = rule
        .apply(&[unknown_sizes.clone(), fact(&[3]), ArgumentFact::Unknown])
        .unwrap();
    assert_eq!(results[0].dtype, Some(DType::Float32));
    assert_eq!(results[0].sizes, None);
    // int32 of unknown rank with a zero-dim int64: int32 if it has dimensions (they take
    // priority within a category), int64 if it is zero-dim too; so the dtype is unknown.
    let unknown_int = ArgumentFact::Tensor(TensorFact {
        dtype: Some(DType::Int32),
        sizes: None,
        is_wrapped_number: false,
    });
    let zero_dim_long = ArgumentFact::Tensor(TensorFact::known(DType::Int64, &[]));
    let results = rule
        .apply(&[unknown_int, zero_dim_long, ArgumentFact::Unknown])
        .unwrap();
    assert_eq!(results[0].dtype, None);
}

#[test]
fn reduction_rules_match_their_kernels() {
    let mut checked = 0;
    let dims_cases: [&[i64]; 5] = [&[], &[0], &[-1], &[0, 2], &[-3, 1]];
    for dtype in DTYPES {
        let input = || tensor(&[2, 3, 4], dtype);
        let dtypes = [
            IValue::None,
            dtype_index(DType::Float64),
            dtype_index(DType::Int32),
        ];
        for dtype_argument in dtypes.clone() {
            checked += usize::from(check("aten::sum", vec![input(), dtype_argument.clone()]));
            checked += usize::from(check("aten::prod", vec![input(), dtype_argument.clone()]));
            checked += usize::from(check("aten::mean", vec![input(), dtype_argument.clone()]));
        }
        for keepdim in [false, true] {
            let keep = IValue::Bool(keepdim);
            for dims in dims_cases {
                for dtype_argument in dtypes.clone() {
                    for name in ["aten::sum.dim_IntList", "aten::mean.dim"] {
                        checked += usize::from(check(
                            name,
                            vec![input(), ints(dims), keep.clone(), dtype_argument.clone()],
                        ));
                    }
                }
                for name in [
                    "aten::amax",
                    "aten::amin",
                    "aten::logsumexp",
                    "aten::all.dims",
                ] {
                    checked += usize::from(check(name, vec![input(), ints(dims), keep.clone()]));
                }
                checked += usize::from(check(
                    "aten::std.dim",
                    vec![input(), ints(dims), IValue::Bool(true), keep.clone()],
                ));
            }
            checked += usize::from(check(
                "aten::sum.dim_IntList",
                vec![input(), IValue::None, keep.clone(), IValue::None],
            ));
            for dim in [0, -1, 1] {
                for name in [
                    "aten::max.dim",
                    "aten::min.dim",
                    "aten::any.dim",
                    "aten::prod.dim_int",
                ] {
                    let mut arguments = vec![input(), IValue::Int(dim), keep.clone()];
                    if name == "aten::prod.dim_int" {
                        arguments.push(IValue::None);
                    }
                    checked += usize::from(check(name, arguments));
                }
                checked += usize::from(check(
                    "aten::argmax",
                    vec![input(), IValue::Int(dim), keep.clone()],
                ));
            }
            checked += usize::from(check("aten::argmin", vec![input(), IValue::None, keep]));
        }
        for name in ["aten::max", "aten::min", "aten::any", "aten::all"] {
            checked += usize::from(check(name, vec![input()]));
        }
        // Zero-dim input: dim 0 and -1 are allowed.
        checked += usize::from(check(
            "aten::sum.dim_IntList",
            vec![
                tensor(&[], dtype),
                ints(&[-1]),
                IValue::Bool(true),
                IValue::None,
            ],
        ));
    }
    assert!(checked > 300, "only {checked} reduction cases ran");
    // A dim out of range is refused by the rule as by the kernel.
    let rule = OperatorRegistry::global()
        .lookup("aten::sum.dim_IntList")
        .unwrap()
        .shape_rule
        .unwrap();
    let facts: Vec<ArgumentFact> = [
        float(&[2, 3]),
        ints(&[2]),
        IValue::Bool(false),
        IValue::None,
    ]
    .iter()
    .map(ArgumentFact::of_value)
    .collect();
    assert!(rule.apply(&facts).is_err());
}

#[test]
fn matrix_product_rules_match_their_kernels() {
    for dtype in [DType::Float32, DType::Float64, DType::Int64] {
        let t = |sizes: &[usize]| tensor(sizes, dtype);
        assert!(check("aten::mm", vec![t(&[2, 3]), t(&[3, 4])]));
        assert!(check("aten::bmm", vec![t(&[5, 2, 3]), t(&[5, 3, 4])]));
        let matmul_cases: [(&[usize], &[usize]); 7] = [
            (&[3], &[3]),
            (&[2, 3], &[3]),
            (&[3], &[3, 4]),
            (&[2, 3], &[3, 4]),
            (&[5, 2, 3], &[3, 4]),
            (&[3], &[5, 3, 4]),
            (&[7, 1, 2, 3], &[5, 3, 4]),
        ];
        for (left, right) in matmul_cases {
            assert!(
                check("aten::matmul", vec![t(left), t(right)]),
                "{left:?} @ {right:?}"
            );
        }
        if dtype.is_floating_point() {
            assert!(check(
                "aten::addmm",
                vec![
                    t(&[4]),
                    t(&[2, 3]),
                    t(&[3, 4]),
                    IValue::Int(1),
                    IValue::Int(1)
                ]
            ));
            assert!(check(
                "aten::linear",
                vec![t(&[5, 2, 3]), t(&[4, 3]), t(&[4])]
            ));
            assert!(check(
                "aten::linear",
                vec![t(&[2, 3]), t(&[4, 3]), IValue::None]
            ));
            assert!(check(
                "aten::linear",
                vec![t(&[3]), t(&[4, 3]), IValue::None]
            ));
        }
    }
    let rule = OperatorRegistry::global()
        .lookup("aten::mm")
        .unwrap()
        .shape_rule
        .unwrap();
    let facts: Vec<ArgumentFact> = [float(&[2, 3]), float(&[4, 5])]
        .iter()
        .map(ArgumentFact::of_value)
        .collect();
    assert!(rule.apply(&facts).is_err());
}

/// (input sizes, weight sizes, stride, padding, dilation, groups)
type ConvolutionCase = (
    &'static [usize],
    &'static [usize],
    &'static [i64],
    &'static [i64],
    &'static [i64],
    i64,
);

#[test]
fn convolution_rules_match_their_kernels() {
    let mut checked = 0;
    let cases: [ConvolutionCase; 9] = [
        (&[1, 2, 9], &[4, 2, 3], &[1], &[0], &[1], 1),
        (&[2, 4, 10], &[6, 2, 3], &[2], &[1], &[2], 2),
        (&[4, 10], &[6, 4, 3], &[1], &[0], &[1], 1),
        (&[1, 3, 8, 7], &[5, 3, 3, 2], &[1, 1], &[0, 0], &[1, 1], 1),
        (&[2, 4, 9, 8], &[4, 1, 3, 3], &[2, 3], &[1, 2], &[1, 2], 4),
        (&[1, 3, 8, 7], &[6, 3, 1, 1], &[2], &[1], &[1], 1),
        (&[3, 8, 7], &[6, 3, 3, 3], &[1, 1], &[1, 1], &[1, 1], 1),
        (
            &[1, 2, 5, 6, 7],
            &[4, 2, 3, 2, 1],
            &[1, 2, 1],
            &[1, 0, 2],
            &[1, 1, 2],
            1,
        ),
        (
            &[1, 4, 5, 6, 7],
            &[4, 2, 1, 3, 3],
            &[2, 1, 1],
            &[0, 1, 1],
            &[1, 1, 1],
            2,
        ),
    ];
    for (input, weight, stride, padding, dilation, groups) in cases {
        let spatial = weight.len() - 2;
        let name = format!("aten::conv{spatial}d");
        let bias = tensor(&[weight[0]], DType::Float32);
        for bias in [IValue::None, bias] {
            checked += usize::from(check(
                &name,
                vec![
                    float(input),
                    float(weight),
                    bias.clone(),
                    ints(stride),
                    ints(padding),
                    ints(dilation),
                    IValue::Int(groups),
                ],
            ));
            for mode in ["same", "valid"] {
                checked += usize::from(check(
                    &format!("{name}.padding"),
                    vec![
                        float(input),
                        float(weight),
                        bias.clone(),
                        if mode == "same" {
                            ints(&vec![1; spatial])
                        } else {
                            ints(stride)
                        },
                        IValue::from(mode),
                        ints(dilation),
                        IValue::Int(groups),
                    ],
                ));
            }
            // The general forms, with the same geometry spelled out per dimension.
            let full = |values: &[i64]| ints(&per_dimension(values, spatial, "x").unwrap());
            let general = vec![
                float(input),
                float(weight),
                bias.clone(),
                full(stride),
                full(padding),
                full(dilation),
                IValue::Bool(false),
                ints(&vec![0; spatial]),
                IValue::Int(groups),
            ];
            checked += usize::from(check("aten::convolution", general.clone()));
            let mut private = general;
            private.extend([
                IValue::Bool(false),
                IValue::Bool(false),
                IValue::Bool(false),
                IValue::Bool(true),
            ]);
            checked += usize::from(check("aten::_convolution", private));
        }
    }
    // Transposed: weight [in, out / groups, *kernel].
    let transposed = vec![
        float(&[1, 4, 5, 6]),
        float(&[4, 3, 3, 2]),
        IValue::None,
        ints(&[2, 1]),
        ints(&[1, 0]),
        ints(&[1, 2]),
        IValue::Bool(true),
        ints(&[1, 0]),
        IValue::Int(2),
    ];
    checked += usize::from(check("aten::convolution", transposed));
    assert!(checked >= 60, "only {checked} convolution cases ran");
}

#[test]
fn every_rule_names_a_registered_overload() {
    assert!(OperatorRegistry::try_with_builtins().is_ok());
    for (name, _, _) in functional_rules() {
        let operator = OperatorRegistry::global().lookup(&name).unwrap();
        assert!(operator.shape_rule.is_some(), "{name}");
        assert!(operator.fuser_category.is_some(), "{name}");
    }
    let out = OperatorRegistry::global()
        .lookup("aten::add.Scalar_out")
        .unwrap();
    assert!(matches!(out.shape_rule, Some(ShapeRule::Out(_))));
}
