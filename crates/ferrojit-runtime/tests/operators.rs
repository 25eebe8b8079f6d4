//! Builtin operator tests: the registry's schemas, list/dict/str/tensor kernels.

mod common;

/// The test code's one kernel-call helper, shared with the conformance harness (included by
/// path: that crate depends on this one, so it cannot be a dependency here).
#[allow(dead_code)]
#[path = "../../ferrojit-conformance/src/kernel_call.rs"]
mod kernel_call;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use common::*;
use ferrojit_ir::{parse_schema, Type};
use ferrojit_runtime::ops::builtin_families;
use ferrojit_runtime::{IValue, OperatorRegistry, RuntimeError};
use ferrojit_tensor::{DType, Tensor};
use kernel_call::{call_operator, single, CallError};

/// Calls `full_name` with positional arguments (defaults fill the rest). Only the kernel's
/// own error is an `Err`: a missing operator or arguments that do not bind fail the test, so
/// a check that the kernel refuses something cannot pass on a typo.
fn call(full_name: &str, args: Vec<IValue>) -> Result<Vec<IValue>, RuntimeError> {
    match call_operator(full_name, args, &[]) {
        Ok(outputs) => Ok(outputs),
        Err(CallError::Kernel(error)) => Err(error),
        Err(other) => panic!("{other}"),
    }
}

/// [`call`] of an operator that returns one value.
fn call1(full_name: &str, args: Vec<IValue>) -> IValue {
    let outputs = call(full_name, args).unwrap_or_else(|e| panic!("{full_name}: {e}"));
    single(full_name, outputs).unwrap_or_else(|e| panic!("{e}"))
}

/// Every operator the registry holds, builtin and added, under a full name no other has,
/// with a schema that parses back from its printed form to the same schema and prints the
/// same text again; and no builtin registration failed (a duplicate full name or a malformed
/// schema in a table is recorded as a registration error).
#[test]
fn every_registered_schema_is_unique_and_prints_back_unchanged() {
    let registry = OperatorRegistry::global();
    assert!(
        registry.registration_errors().is_empty(),
        "{:#?}",
        registry.registration_errors()
    );
    let mut operators = registry.operators().to_vec();
    operators.extend(registry.added_operators());
    assert!(
        operators.len() >= 1400,
        "only {} operators registered",
        operators.len()
    );
    let mut seen = BTreeSet::new();
    for operator in &operators {
        let full_name = operator.schema.full_name();
        assert!(
            seen.insert(full_name.clone()),
            "{full_name} is registered twice"
        );
        let found = registry
            .lookup(&full_name)
            .unwrap_or_else(|| panic!("{full_name} is not found by its own name"));
        assert!(
            Arc::ptr_eq(&found.schema, &operator.schema),
            "{full_name} finds another operator"
        );
        // String defaults with control characters (the `strip` family's `' \n\t\f\v'`) and
        // lone list-of-tuple returns (the dicts' `items`) included.
        let printed = operator.schema.to_string();
        let reparsed = parse_schema(&printed).unwrap_or_else(|e| panic!("{printed}: {e}"));
        assert_eq!(reparsed, *operator.schema, "{printed}");
        assert_eq!(reparsed.to_string(), printed);
    }
}

/// Each family registered on its own: no registration errors, every declaration under its
/// own full name with the schema its text parses to, and no full name in two families.
/// Together the families and the aliases are exactly the builtin registry.
#[test]
fn every_family_registers_its_own_operators() {
    let mut families: Vec<(&str, OperatorRegistry)> = Vec::new();
    for (family, rank, declarations) in builtin_families() {
        let texts: Vec<String> = declarations
            .iter()
            .map(|declaration| declaration.schema.to_string())
            .collect();
        let mut registry = OperatorRegistry::new();
        for declaration in declarations {
            let text = declaration.schema.to_string();
            registry
                .register_declaration(rank, declaration)
                .unwrap_or_else(|e| panic!("{family}: {text}: {e}"));
        }
        for text in &texts {
            let parsed = parse_schema(text).unwrap_or_else(|e| panic!("{family}: {text}: {e}"));
            let operator = registry
                .lookup(&parsed.full_name())
                .unwrap_or_else(|| panic!("{family}: {text} is not registered"));
            assert_eq!(*operator.schema, parsed, "{family}: {text}");
        }
        assert_eq!(registry.operators().len(), texts.len(), "{family}");
        families.push((family, registry));
    }
    let mut owner: BTreeMap<String, &str> = BTreeMap::new();
    for (family, registry) in &families {
        assert!(
            registry.registration_errors().is_empty(),
            "{family}: {:#?}",
            registry.registration_errors()
        );
        for operator in registry.operators() {
            let full_name = operator.schema.full_name();
            if let Some(first) = owner.insert(full_name.clone(), family) {
                panic!("{full_name} is registered by {first} and by {family}");
            }
        }
    }
    let builtins = OperatorRegistry::with_builtins();
    let aliases: BTreeSet<&str> = ferrojit_ir::aliases::OPERATOR_ALIASES
        .iter()
        .map(|(alias, _)| *alias)
        .collect();
    // In-place and out= forms the registry builds from a family's functional kernel.
    let derived_variants: BTreeSet<String> =
        ferrojit_runtime::ops::derived_variants::listed_variant_names()
            .into_iter()
            .collect();
    let mut from_families = 0;
    for operator in builtins.operators() {
        let full_name = operator.schema.full_name();
        if owner.contains_key(&full_name) {
            from_families += 1;
        } else {
            assert!(
                aliases.contains(operator.schema.name.as_str())
                    || derived_variants.contains(&full_name),
                "{full_name} comes from no family, is no alias and is no derived variant"
            );
        }
    }
    assert_eq!(
        from_families,
        owner.len(),
        "family operators missing from the builtins"
    );
}

/// The compiler takes the first overload that matches, so within one name PyTorch's order
/// matters: native (Tensor) overloads first, then int before float before the mixed forms,
/// and the catch-all `Scalar` overload after every more specific one.
#[test]
fn overloads_come_in_registration_order() {
    let position = |name: &str, full_name: &str| -> usize {
        OperatorRegistry::global()
            .overloads(name)
            .iter()
            .position(|s| s.full_name() == full_name)
            .unwrap_or_else(|| panic!("{full_name} is an overload of {name}"))
    };
    let ordered = |name: &str, full_names: &[&str]| {
        let positions: Vec<usize> = full_names.iter().map(|f| position(name, f)).collect();
        assert!(
            positions.windows(2).all(|w| w[0] < w[1]),
            "{name}: {full_names:?} at {positions:?}"
        );
    };
    ordered(
        "aten::add",
        &[
            "aten::add.Tensor",
            "aten::add.Scalar",
            "aten::add.int",
            "aten::add.float",
            "aten::add.int_float",
            "aten::add.float_int",
            "aten::add",
        ],
    );
    ordered(
        "aten::sqrt",
        &[
            "aten::sqrt",
            "aten::sqrt.int",
            "aten::sqrt.float",
            "aten::sqrt.Scalar",
        ],
    );
    ordered(
        "aten::log",
        &[
            "aten::log",
            "aten::log.int",
            "aten::log.float",
            "aten::log.Scalar",
            "aten::log.int_int",
            "aten::log.Scalar_Scalar",
        ],
    );
    ordered(
        "prim::min",
        &["prim::min.int", "prim::min.float", "prim::min"],
    );
    let add_names: Vec<String> = OperatorRegistry::global()
        .overloads("aten::add")
        .iter()
        .map(|s| s.full_name())
        .collect();
    assert!(add_names.contains(&"aten::add.t".to_string()));
    assert!(add_names.contains(&"aten::add.str".to_string()));
    assert!(OperatorRegistry::global()
        .overloads("aten::nothing")
        .is_empty());
}

#[test]
fn string_list_and_math_builtins_through_the_registry() {
    let text = |value: IValue| value.to_str().unwrap().to_string();
    let s = IValue::from;
    assert!(matches!(
        call1(
            "aten::find",
            vec![s("banana"), s("an"), IValue::Int(0), IValue::Int(-1)]
        ),
        IValue::Int(1)
    ));
    let parts = call1(
        "aten::split.str",
        vec![s("a,b,,c"), s(","), IValue::Int(-1)],
    );
    assert_eq!(parts.to_list().unwrap().len(), 4);
    let formatted = call1(
        "aten::percentFormat",
        vec![s("%d and %s"), IValue::tuple(vec![IValue::Int(5), s("x")])],
    );
    assert_eq!(text(formatted), "5 and x");
    let outputs = call("aten::partition", vec![s("key=value"), s("=")]).unwrap();
    assert_eq!(outputs.len(), 3, "one stack value per tuple element");
    let outputs = call("aten::divmod.int", vec![IValue::Int(-7), IValue::Int(2)]).unwrap();
    assert!(matches!(outputs[..], [IValue::Int(-4), IValue::Int(1)]));
    assert!(matches!(
        call1("aten::sqrt.int", vec![IValue::Int(4)]),
        IValue::Double(v) if v == 2.0
    ));
    assert!(matches!(
        call1("aten::isfinite.float", vec![IValue::Double(f64::NAN)]),
        IValue::Bool(false)
    ));

    let list = IValue::int_list(&[3, 1, 2, 1]);
    let alias = list.clone();
    assert!(matches!(
        call1("aten::index.list_int", vec![list.clone(), IValue::Int(2)]),
        IValue::Int(2)
    ));
    assert!(matches!(
        call1("aten::count.int", vec![list.clone(), IValue::Int(1)]),
        IValue::Int(2)
    ));
    let sorted = call1("aten::sorted.int", vec![list.clone()]);
    assert_eq!(sorted.to_int_vec().unwrap(), vec![1, 1, 2, 3]);
    assert_eq!(
        alias.to_int_vec().unwrap(),
        vec![3, 1, 2, 1],
        "sorted copies"
    );
    call("aten::remove.int", vec![list.clone(), IValue::Int(1)]).unwrap();
    assert_eq!(alias.to_int_vec().unwrap(), vec![3, 2, 1], "remove mutates");
    let error = call("aten::remove.int", vec![list.clone(), IValue::Int(9)]).unwrap_err();
    assert_eq!(error.to_string(), "list.remove(x): x not in list");
    let error = call(
        "aten::index.list_float",
        vec![
            IValue::list(Type::Float, vec![IValue::Double(1.0)]),
            IValue::Double(2.5),
        ],
    )
    .unwrap_err();
    assert_eq!(error.to_string(), "'2.5' is not in list");
    let floats = IValue::list(
        Type::Float,
        vec![
            IValue::Double(2.0),
            IValue::Double(f64::NAN),
            IValue::Double(-1.0),
        ],
    );
    call(
        "aten::sort.float",
        vec![floats.clone(), IValue::Bool(false)],
    )
    .unwrap();
    let sorted = floats.to_double_vec().unwrap();
    assert_eq!(sorted[..2], [-1.0, 2.0]);
    assert!(sorted[2].is_nan());
    assert!(call("aten::mul.left_t", vec![list.clone(), IValue::Int(1 << 40)]).is_err());
    let shorter = IValue::int_list(&[3, 2]);
    let picked = call1("prim::min.int_list", vec![list.clone(), shorter.clone()]);
    assert!(
        picked.is_same_identity(&shorter),
        "equal prefix: the shorter list"
    );
    let picked = call1(
        "prim::max.int_list",
        vec![IValue::int_list(&[1, 9]), IValue::int_list(&[2])],
    );
    assert_eq!(picked.to_int_vec().unwrap(), vec![2]);
    let bools = IValue::list(Type::Bool, vec![IValue::Bool(true), IValue::Bool(false)]);
    assert!(matches!(
        call1("aten::any.bool", vec![bools.clone()]),
        IValue::Bool(true)
    ));
    assert!(matches!(
        call1("aten::all.bool", vec![bools.clone()]),
        IValue::Bool(false)
    ));
    assert!(matches!(
        call1("aten::sum.bool", vec![bools]),
        IValue::Int(1)
    ));
}

#[test]
fn implicit_tensor_to_number_conversions() {
    let float_scalar = IValue::from(Tensor::from_vec(vec![2.5f64], &[]).unwrap());
    let int_scalar = IValue::from(Tensor::from_vec(vec![7i64], &[]).unwrap());
    let vector = IValue::from(Tensor::from_vec(vec![1i64, 2], &[2]).unwrap());
    assert!(matches!(
        call1("aten::IntImplicit", vec![int_scalar.clone()]),
        IValue::Int(7)
    ));
    assert!(matches!(
        call1("aten::FloatImplicit", vec![int_scalar]),
        IValue::Double(v) if v == 7.0
    ));
    assert!(matches!(
        call1("aten::ScalarImplicit", vec![float_scalar.clone()]),
        IValue::Double(v) if v == 2.5
    ));
    let error = call("aten::IntImplicit", vec![float_scalar]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "Cannot input a tensor of type Double as an integral argument"
    );
    let error = call("aten::FloatImplicit", vec![vector]).unwrap_err();
    assert!(error.to_string().contains("dimension other than 0"));
    let empty = call1("aten::dict", vec![]);
    assert_eq!(empty.to_dict().unwrap().len(), 0);
}

#[test]
fn tolist_follows_the_annotation() {
    use ferrojit_runtime::ops::list_ops::tensor_to_list;
    let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let nested = tensor_to_list(&t, 2, 1).unwrap();
    let rows = nested.to_list().unwrap().to_vec();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].to_double_vec().unwrap(), vec![4.0, 5.0, 6.0]);
    assert_eq!(
        *nested.to_list().unwrap().element_type(),
        Type::list(Type::Float)
    );
    let error = tensor_to_list(&t, 1, 1).unwrap_err();
    assert!(error
        .to_string()
        .contains("dimension must match for tolist()"));
    let error = tensor_to_list(&t, 2, 0).unwrap_err();
    assert!(error
        .to_string()
        .contains("element type must match for tolist()"));
    let scalar = Tensor::from_vec(vec![7i64], &[]).unwrap();
    assert!(matches!(
        tensor_to_list(&scalar, 0, 0).unwrap(),
        IValue::Int(7)
    ));
}

#[test]
fn list_kernels_mutate_shared_lists() {
    let list = IValue::int_list(&[1, 2, 3]);
    let alias = list.clone();
    let returned = call1("aten::append.t", vec![list.clone(), IValue::Int(4)]);
    assert!(returned.is_same_identity(&alias));
    assert_eq!(alias.to_int_vec().unwrap(), vec![1, 2, 3, 4]);
    assert!(matches!(
        call1("aten::len.t", vec![list.clone()]),
        IValue::Int(4)
    ));
    assert!(matches!(
        call1("aten::__getitem__.t", vec![list.clone(), IValue::Int(-1)]),
        IValue::Int(4)
    ));
    let error = call("aten::__getitem__.t", vec![list.clone(), IValue::Int(4)]).unwrap_err();
    assert_eq!(
        error,
        RuntimeError::IndexError("list index out of range".to_string())
    );
    call(
        "aten::_set_item.t",
        vec![list.clone(), IValue::Int(0), IValue::Int(10)],
    )
    .unwrap();
    assert_eq!(alias.to_int_vec().unwrap(), vec![10, 2, 3, 4]);
    let sliced = call1(
        "aten::slice.t",
        vec![list.clone(), IValue::Int(1), IValue::None, IValue::Int(2)],
    );
    assert_eq!(sliced.to_int_vec().unwrap(), vec![2, 4]);
    let reversed = call1(
        "aten::slice.t",
        vec![list.clone(), IValue::None, IValue::None, IValue::Int(-1)],
    );
    assert_eq!(reversed.to_int_vec().unwrap(), vec![4, 3, 2, 10]);
    assert!(matches!(
        call1("aten::pop.t", vec![list.clone(), IValue::Int(-1)]),
        IValue::Int(4)
    ));
    call(
        "aten::insert.t",
        vec![list.clone(), IValue::Int(-100), IValue::Int(0)],
    )
    .unwrap();
    assert_eq!(alias.to_int_vec().unwrap(), vec![0, 10, 2, 3]);
    let joined = call1("aten::add.t", vec![list.clone(), IValue::int_list(&[7])]);
    assert_eq!(joined.to_int_vec().unwrap(), vec![0, 10, 2, 3, 7]);
    assert_eq!(
        alias.to_int_vec().unwrap(),
        vec![0, 10, 2, 3],
        "add.t makes a new list"
    );
    assert!(matches!(
        call1(
            "aten::__contains__.int_list",
            vec![list.clone(), IValue::Int(3)]
        ),
        IValue::Bool(true)
    ));
    assert!(matches!(
        call1(
            "aten::eq.int_list",
            vec![list.clone(), IValue::int_list(&[0, 10, 2, 3])]
        ),
        IValue::Bool(true)
    ));
    let repeated = call1(
        "aten::mul.left_t",
        vec![IValue::int_list(&[1, 2]), IValue::Int(2)],
    );
    assert_eq!(repeated.to_int_vec().unwrap(), vec![1, 2, 1, 2]);
    let empty = IValue::list(Type::Int, vec![]);
    let error = call("aten::pop.t", vec![empty, IValue::Int(-1)]).unwrap_err();
    assert_eq!(error.to_string(), "pop from empty list");
    call("aten::sort.int", vec![list.clone(), IValue::Bool(true)]).unwrap();
    assert_eq!(alias.to_int_vec().unwrap(), vec![10, 3, 2, 0]);
}

#[test]
fn dict_kernels_keep_insertion_order() {
    let dict = ferrojit_runtime::DictValue::new(Type::Str, Type::Int);
    let dict = IValue::Dict(dict);
    for (key, value) in [("b", 2), ("a", 1)] {
        call(
            "aten::_set_item.str",
            vec![dict.clone(), IValue::from(key), IValue::Int(value)],
        )
        .unwrap();
    }
    let keys = call1("aten::keys.str", vec![dict.clone()]);
    assert_eq!(keys.python_repr(), "['b', 'a']");
    assert!(matches!(
        call1(
            "aten::__getitem__.Dict_str",
            vec![dict.clone(), IValue::from("a")]
        ),
        IValue::Int(1)
    ));
    let error = call(
        "aten::__getitem__.Dict_str",
        vec![dict.clone(), IValue::from("z")],
    )
    .unwrap_err();
    assert_eq!(error.to_string(), "KeyError: z");
    assert!(call1("aten::get.str", vec![dict.clone(), IValue::from("z")]).is_none());
    let items = call1("aten::items.str", vec![dict.clone()]);
    assert_eq!(items.python_repr(), "[('b', 2), ('a', 1)]");
    assert!(matches!(
        call1("aten::pop.Dict_str", vec![dict.clone(), IValue::from("b")]),
        IValue::Int(2)
    ));
    assert!(matches!(
        call1("aten::len.Dict_str", vec![dict.clone()]),
        IValue::Int(1)
    ));
}

#[test]
fn string_and_generic_kernels() {
    let text = call1(
        "aten::format",
        vec![
            IValue::from("{} + {} = {}"),
            IValue::Int(1),
            IValue::Double(1.5),
            IValue::Double(2.5),
        ],
    );
    assert_eq!(text.to_str().unwrap(), "1 + 1.5 = 2.5");
    let list = IValue::int_list(&[1]);
    assert!(matches!(
        call1("aten::__is__", vec![list.clone(), list.clone()]),
        IValue::Bool(true)
    ));
    assert!(matches!(
        call1(
            "aten::__isnot__",
            vec![list.clone(), IValue::int_list(&[1])]
        ),
        IValue::Bool(true)
    ));
    assert!(matches!(
        call1("aten::__is__", vec![IValue::None, IValue::None]),
        IValue::Bool(true)
    ));
    let text = call1(
        "aten::str",
        vec![IValue::list(Type::Float, vec![IValue::Double(1.0)])],
    );
    assert_eq!(text.to_str().unwrap(), "[1.]");
    assert!(matches!(
        call1("aten::eq.str", vec![IValue::from("a"), IValue::from("a")]),
        IValue::Bool(true)
    ));
    assert_eq!(
        call1("aten::add.str", vec![IValue::from("ab"), IValue::from("c")])
            .to_str()
            .unwrap(),
        "abc"
    );
    assert!(matches!(
        call1(
            "aten::__range_length",
            vec![IValue::Int(0), IValue::Int(10), IValue::Int(3)]
        ),
        IValue::Int(4)
    ));
    assert!(matches!(
        call1(
            "aten::__derive_index",
            vec![IValue::Int(2), IValue::Int(5), IValue::Int(-2)]
        ),
        IValue::Int(1)
    ));
    let error = call(
        "aten::__range_length",
        vec![IValue::Int(0), IValue::Int(10), IValue::Int(0)],
    )
    .unwrap_err();
    assert_eq!(error.to_string(), "range() arg 3 must not be zero");
    assert!(matches!(
        call1("aten::Int.float", vec![IValue::Double(-3.9)]),
        IValue::Int(-3)
    ));
    assert!(matches!(
        call1("aten::pow.int", vec![IValue::Int(2), IValue::Int(3)]),
        IValue::Double(v) if v == 8.0
    ));
    assert!(matches!(
        call1("aten::__not__", vec![IValue::Bool(true)]),
        IValue::Bool(false)
    ));
}

#[test]
fn tensor_kernels_follow_pytorch_promotion() {
    let ints = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    // int64 tensor + 2.5 (a Python float) -> float32 (the default dtype)
    let out = call1(
        "aten::add.Scalar",
        vec![
            IValue::from(ints.clone()),
            IValue::Double(2.5),
            IValue::Int(1),
        ],
    );
    let out = out.to_tensor().unwrap();
    assert_eq!(out.dtype(), DType::Float32);
    assert_eq!(values_f32(&out), vec![3.5, 4.5]);
    // x + 2 * y
    let x = tensor_f32(&[1.0, 2.0], &[2]);
    let y = tensor_f32(&[10.0, 20.0], &[2]);
    let out = call1(
        "aten::add.Tensor",
        vec![
            IValue::from(x.clone()),
            IValue::from(y.clone()),
            IValue::Int(2),
        ],
    );
    assert_eq!(values_f32(&out.to_tensor().unwrap()), vec![21.0, 42.0]);
    // 1 - x via rsub
    let out = call1(
        "aten::rsub.Scalar",
        vec![IValue::from(x.clone()), IValue::Int(1), IValue::Int(1)],
    );
    assert_eq!(values_f32(&out.to_tensor().unwrap()), vec![0.0, -1.0]);
    // linear: [1, 2] @ [[1, 0], [1, 1]]^T + [0.5, -0.5] = [1.5, 2.5]
    let weight = tensor_f32(&[1.0, 0.0, 1.0, 1.0], &[2, 2]);
    let bias = tensor_f32(&[0.5, -0.5], &[2]);
    let out = call1(
        "aten::linear",
        vec![
            IValue::from(x.clone().view(&[1, 2]).unwrap()),
            IValue::from(weight),
            IValue::from(bias),
        ],
    );
    let out = out.to_tensor().unwrap();
    assert_eq!(out.sizes(), &[1, 2]);
    assert_eq!(values_f32(&out), vec![1.5, 2.5]);
    // sizes, sums, conversions
    let matrix = tensor_f32(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    assert_eq!(
        call1("aten::size", vec![IValue::from(matrix.clone())])
            .to_int_vec()
            .unwrap(),
        vec![2, 3]
    );
    assert!(matches!(
        call1(
            "aten::size.int",
            vec![IValue::from(matrix.clone()), IValue::Int(-1)]
        ),
        IValue::Int(3)
    ));
    let rows = call1(
        "aten::sum.dim_IntList",
        vec![
            IValue::from(matrix.clone()),
            IValue::int_list(&[1]),
            IValue::Bool(false),
            IValue::None,
        ],
    );
    assert_eq!(values_f32(&rows.to_tensor().unwrap()), vec![6.0, 15.0]);
    let total = call1(
        "aten::sum",
        vec![IValue::from(matrix.clone()), IValue::None],
    );
    assert!(matches!(
        call1("aten::Float.Tensor", vec![total.clone()]),
        IValue::Double(v) if v == 21.0
    ));
    assert!(matches!(
        call1("aten::Int.Tensor", vec![total]),
        IValue::Int(21)
    ));
    let error = call("aten::Bool.Tensor", vec![IValue::from(matrix.clone())]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "Boolean value of Tensor with more than one value is ambiguous"
    );
    // softmax of [0, ln 3] = [0.25, 0.75]
    let logits = tensor_f32(&[0.0, 3f32.ln()], &[2]);
    let probabilities = call1(
        "aten::softmax.int",
        vec![IValue::from(logits), IValue::Int(0), IValue::None],
    );
    let probabilities = values_f32(&probabilities.to_tensor().unwrap());
    assert!((probabilities[0] - 0.25).abs() < 1e-6 && (probabilities[1] - 0.75).abs() < 1e-6);
    // zeros with an explicit dtype (4 = int64), tensor from a nested list
    let zeros = call1(
        "aten::zeros",
        vec![
            IValue::int_list(&[2]),
            IValue::Int(4),
            IValue::None,
            IValue::None,
            IValue::None,
        ],
    );
    assert_eq!(zeros.to_tensor().unwrap().dtype(), DType::Int64);
    let nested = IValue::list(
        Type::list(Type::Float),
        vec![
            IValue::list(Type::Float, vec![IValue::Double(1.0), IValue::Double(2.0)]),
            IValue::list(Type::Float, vec![IValue::Double(3.0), IValue::Double(4.0)]),
        ],
    );
    let built = call1(
        "aten::tensor",
        vec![nested, IValue::None, IValue::None, IValue::Bool(false)],
    );
    let built = built.to_tensor().unwrap();
    assert_eq!(built.sizes(), &[2, 2]);
    assert_eq!(built.dtype(), DType::Float32);
    assert_eq!(values_f32(&built), vec![1.0, 2.0, 3.0, 4.0]);
    // in-place ops return self
    let target = IValue::from(tensor_f32(&[0.0, 0.0], &[2]));
    let returned = call1(
        "aten::fill_.Scalar",
        vec![target.clone(), IValue::Double(7.0)],
    );
    assert!(returned.is_same_identity(&target));
    assert_eq!(values_f32(&target.to_tensor().unwrap()), vec![7.0, 7.0]);
}

#[test]
fn tensor_errors_name_the_operator_in_the_interpreter() {
    let mut g = ferrojit_ir::Graph::new();
    let a = g.add_input(Type::Tensor, Some("a"));
    let b = g.add_input(Type::Tensor, Some("b"));
    let c = op1(
        &mut g,
        "aten::mm(Tensor self, Tensor mat2) -> Tensor",
        &[a, b],
        Type::Tensor,
    );
    g.register_output(c);
    let error = ferrojit_runtime::run_graph(
        &g,
        vec![
            IValue::from(tensor_f32(&[1.0, 2.0], &[1, 2])),
            IValue::from(tensor_f32(&[1.0, 2.0, 3.0], &[3, 1])),
        ],
        &ferrojit_runtime::NoMethods,
    )
    .unwrap_err();
    match error {
        RuntimeError::Tensor { operator, .. } => assert_eq!(operator, "aten::mm"),
        other => panic!("unexpected error {other:?}"),
    }
}

/// An operator that writes a tensor argument and returns it changes that one tensor for every
/// handle, as PyTorch changes one `TensorImpl`: a resized `out=`, an `unsqueeze_`, and a custom
/// operator's `Tensor(a!)` argument alike.
#[test]
fn written_tensor_arguments_change_for_every_handle() {
    let floats =
        |values: Vec<f32>| IValue::from(Tensor::from_vec(values.clone(), &[values.len()]).unwrap());

    // `out=` of another shape: a second handle (a list element, a caller's variable) sees it.
    let out = IValue::from(Tensor::zeros(&[5], DType::Float32).unwrap());
    let other_handle = out.clone();
    let result = call1(
        "aten::add.out",
        vec![
            floats(vec![1.0, 2.0]),
            floats(vec![10.0, 20.0]),
            IValue::Int(1),
            out.clone(),
        ],
    );
    assert!(
        result.is_same_identity(&out),
        "add.out returns its out argument itself"
    );
    let seen = other_handle.to_tensor().unwrap();
    assert_eq!(seen.sizes(), &[2]);
    assert_eq!(seen.to_f64_vec(), vec![11.0, 22.0]);

    // The storage was large enough, so the resize kept it (a view made before sees the write).
    let big = IValue::from(Tensor::zeros(&[6], DType::Float32).unwrap());
    let tail = big.to_tensor().unwrap().narrow(0, 1, 5).unwrap();
    call1(
        "aten::mul.Scalar_out",
        vec![floats(vec![3.0, 4.0]), IValue::Double(2.0), big.clone()],
    );
    assert_eq!(tail.to_f64_vec(), vec![8.0, 0.0, 0.0, 0.0, 0.0]);

    // In-place geometry ops.
    let x = floats(vec![1.0, 2.0, 3.0]);
    let alias = x.clone();
    call1("aten::unsqueeze_", vec![x.clone(), IValue::Int(0)]);
    assert_eq!(alias.to_tensor().unwrap().sizes(), &[1, 3]);
    call1("aten::t_", vec![x.clone()]);
    assert_eq!(alias.to_tensor().unwrap().sizes(), &[3, 1]);
    assert_eq!(alias.to_tensor().unwrap().strides(), &[1, 3]);
    call1(
        "aten::resize_",
        vec![x.clone(), IValue::int_list(&[2, 2]), IValue::None],
    );
    let grown = alias.to_tensor().unwrap();
    assert_eq!(grown.sizes(), &[2, 2]);
    assert_eq!(&grown.to_f64_vec()[..3], &[1.0, 2.0, 3.0]);
    let error = call(
        "aten::resize_",
        vec![x.clone(), IValue::int_list(&[-1]), IValue::None],
    );
    assert!(error
        .unwrap_err()
        .to_string()
        .contains("negative dimension -1"));

    // A custom operator gets the same write-back from its schema.
    ferrojit_runtime::register_operator(
        "alias_test::append_dim_(Tensor(a!) self) -> Tensor(a!)",
        |stack: &mut ferrojit_runtime::Stack| {
            let [x] = ferrojit_runtime::registry::pop_arguments::<1>(stack)?;
            let grown = x.to_tensor()?.unsqueeze(-1)?;
            stack.push(IValue::from(grown));
            Ok(())
        },
    )
    .unwrap();
    let y = floats(vec![5.0, 6.0]);
    let y_alias = y.clone();
    let returned = call1("alias_test::append_dim_", vec![y.clone()]);
    assert!(returned.is_same_identity(&y_alias));
    assert_eq!(y_alias.to_tensor().unwrap().sizes(), &[2, 1]);

    // Too few arguments on the stack is an error from the wrapper, not a panic.
    let short = OperatorRegistry::global()
        .lookup("aten::unsqueeze_")
        .unwrap();
    let mut stack = vec![IValue::Int(0)];
    assert!((short.kernel)(&mut stack).is_err());
}

/// Strings are bytes, as in PyTorch; a result that would cut a UTF-8 character is an error
/// naming the byte, not a panic or a silently different string.
#[test]
fn string_positions_count_bytes_and_never_cut_a_character() {
    let text = IValue::from("h\u{e9}llo");
    assert_eq!(
        call1("aten::len.str", vec![text.clone()]).to_int().unwrap(),
        6
    );
    let cut = call(
        "aten::slice.str",
        vec![text.clone(), IValue::Int(0), IValue::Int(2), IValue::Int(1)],
    );
    let message = cut.unwrap_err().to_string();
    assert!(
        message.contains("not valid UTF-8") && message.contains("byte 1"),
        "{message}"
    );
    let whole = call1(
        "aten::slice.str",
        vec![text.clone(), IValue::Int(1), IValue::Int(3), IValue::Int(1)],
    );
    assert_eq!(whole.to_str().unwrap(), "\u{e9}");
    assert!(call("aten::__getitem__.str", vec![text.clone(), IValue::Int(1)]).is_err());
    assert!(call("aten::list", vec![text]).is_err());
    assert!(call("aten::chr", vec![IValue::Int(233)]).is_err());
    assert_eq!(
        call1("aten::chr", vec![IValue::Int(65)]).to_str().unwrap(),
        "A"
    );
}
