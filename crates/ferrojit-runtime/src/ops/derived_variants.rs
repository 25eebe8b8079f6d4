//! The in-place (`f_`) and out= (`f.out`) overloads of PyTorch's public operators that are
//! their functional overload followed by a write, registered from the functional kernel
//! ferrojit already has (a factory's out= overload calls it with `out`'s dtype). `data/derived_variants.txt` (written from torch's own schemas by
//! `data/derive_variants.py`) pairs each variant with its functional; a variant some family
//! declares itself keeps that declaration, and one whose functional is not registered stays
//! missing (`ferrojit ops --missing` lists it).

use ferrojit_tensor::TensorError;

use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;
use crate::registry::{Kernel, OperatorRegistry, Stack};

const DERIVED_VARIANTS: &str = include_str!("../../data/derived_variants.txt");

/// How a variant writes the functional's results.
#[derive(Clone, Copy)]
enum VariantKind {
    /// Into `self`, which must already have the result's shape (ATen's in-place rule).
    InPlace,
    /// Into the trailing `out` tensors, each resized to its result's shape when it differs.
    Out,
    /// Into the trailing `out` tensor, from a factory called with `out`'s dtype for its
    /// `dtype` option (and None for its layout, device and pinning), as ATen's generated
    /// out= kernels take a factory's options from `out`.
    OutOptions,
}

/// A factory's tensor options, which its out= overload takes from `out`.
const TENSOR_OPTIONS: [&str; 4] = ["dtype", "layout", "device", "pin_memory"];

/// One line of the data file.
struct DerivedVariant<'a> {
    kind: VariantKind,
    functional: &'a str,
    schema: &'a str,
}

fn parse_line(line: &str) -> Result<DerivedVariant<'_>> {
    let mut columns = line.splitn(3, '\t');
    let (Some(kind), Some(functional), Some(schema)) =
        (columns.next(), columns.next(), columns.next())
    else {
        return Err(RuntimeError::Registration(format!(
            "derived_variants.txt: a line needs three tab-separated columns: {line}"
        )));
    };
    let kind = match kind {
        "in_place" => VariantKind::InPlace,
        "out" => VariantKind::Out,
        "out_options" => VariantKind::OutOptions,
        other => {
            return Err(RuntimeError::Registration(format!(
                "derived_variants.txt: unknown kind {other:?} in: {line}"
            )))
        }
    };
    Ok(DerivedVariant {
        kind,
        functional,
        schema,
    })
}

/// Runs the functional kernel on the first `functional_arity` arguments and returns what it
/// pushed.
fn run_functional(
    functional: &Kernel,
    arguments: &[IValue],
    functional_arity: usize,
) -> Result<Stack> {
    let inputs = arguments.get(..functional_arity).ok_or_else(|| {
        RuntimeError::InvalidGraph("operand stack underflow in an operator".to_string())
    })?;
    let mut stack: Stack = inputs.to_vec();
    functional(&mut stack)?;
    Ok(stack)
}

/// Where each argument of a factory comes from when its out= overload calls it: the variant's
/// argument of the same name, or one of the tensor options.
#[derive(Clone, Copy)]
enum FactoryArgument {
    Variant(usize),
    Dtype,
    NoOption,
}

/// Pairs the functional's arguments with the variant's, by name.
fn factory_arguments(
    functional: &ferrojit_ir::FunctionSchema,
    variant_schema: &str,
) -> Result<Vec<FactoryArgument>> {
    let variant = ferrojit_ir::parse_schema(variant_schema)
        .map_err(|error| RuntimeError::Registration(error.to_string()))?;
    functional
        .arguments
        .iter()
        .map(|argument| match argument.name.as_str() {
            "dtype" => Ok(FactoryArgument::Dtype),
            name if TENSOR_OPTIONS.contains(&name) => Ok(FactoryArgument::NoOption),
            name => variant
                .arguments
                .iter()
                .position(|candidate| candidate.name == name)
                .map(FactoryArgument::Variant)
                .ok_or_else(|| {
                    RuntimeError::Registration(format!(
                        "derived_variants.txt: {variant_schema} lacks the argument {name} of \
                         {}",
                        functional.full_name()
                    ))
                }),
        })
        .collect()
}

/// The out= overload of a factory: the factory called with `out`'s dtype, its result written
/// into `out` (resized when its shape differs).
fn factory_out_declaration(
    schema: &str,
    functional: Kernel,
    mapping: Vec<FactoryArgument>,
) -> OperatorDeclaration {
    OperatorDeclaration::arguments(schema.to_string(), move |arguments: &[IValue]| {
        let out_value = arguments.last().ok_or_else(|| {
            RuntimeError::InvalidGraph("operand stack underflow in an operator".to_string())
        })?;
        let out = out_value.to_tensor()?;
        let mut stack: Stack = mapping
            .iter()
            .map(|source| match source {
                FactoryArgument::Variant(index) => arguments[*index].clone(),
                FactoryArgument::Dtype => IValue::Int(out.dtype().scalar_type_index()),
                FactoryArgument::NoOption => IValue::None,
            })
            .collect();
        functional(&mut stack)?;
        let [result] = stack.as_slice() else {
            return Err(RuntimeError::InvalidGraph(format!(
                "a factory's out= overload got {} results from the factory, not 1",
                stack.len()
            )));
        };
        let written = result.to_tensor()?.write_into_out(&out)?;
        Ok(vec![IValue::from(written)])
    })
}

fn variant_declaration(
    kind: VariantKind,
    schema: &str,
    functional_name: &str,
    functional: Kernel,
    functional_arity: usize,
) -> OperatorDeclaration {
    let schema = schema.to_string();
    // ATen's structured matrix products check an in-place call's shape in their meta
    // function, with their own message; the others refuse as TensorIterator does.
    let structured_product = matches!(
        functional_name,
        "aten::addmm" | "aten::addmv" | "aten::baddbmm"
    );
    // Their out= forms are structured too: `out` must already have the result's dtype
    // exactly (the structured kernel's `resize_out` check), not one it casts to.
    let exact_out_dtype = structured_product || matches!(functional_name, "aten::mm" | "aten::bmm");
    match kind {
        VariantKind::InPlace => {
            OperatorDeclaration::arguments(schema, move |arguments: &[IValue]| {
                let results = run_functional(&functional, arguments, functional_arity)?;
                let [result] = results.as_slice() else {
                    return Err(RuntimeError::InvalidGraph(format!(
                        "an in-place operator's functional form gave {} results, not 1",
                        results.len()
                    )));
                };
                let result = result.to_tensor()?;
                let target = arguments[0].to_tensor()?;
                if result.sizes() != target.sizes() && structured_product {
                    return Err(RuntimeError::Other(format!(
                        "Bad in-place call: input tensor size {:?} and output tensor size {:?} \
                         should match",
                        target.sizes(),
                        result.sizes()
                    )));
                }
                if result.sizes() != target.sizes() {
                    return Err(TensorError::OutputShapeMismatch {
                        output: target.sizes().to_vec(),
                        broadcast: result.sizes().to_vec(),
                    }
                    .into());
                }
                result.write_into_out(&target)?;
                Ok(vec![arguments[0].clone()])
            })
        }
        VariantKind::Out | VariantKind::OutOptions => {
            OperatorDeclaration::arguments(schema, move |arguments: &[IValue]| {
                let results = run_functional(&functional, arguments, functional_arity)?;
                let outputs = &arguments[functional_arity..];
                if results.len() != outputs.len() {
                    return Err(RuntimeError::InvalidGraph(format!(
                        "an out= operator's functional form gave {} results for {} outputs",
                        results.len(),
                        outputs.len()
                    )));
                }
                results
                    .iter()
                    .zip(outputs)
                    .map(|(result, out)| {
                        let result = result.to_tensor()?;
                        let out = out.to_tensor()?;
                        if exact_out_dtype && result.dtype() != out.dtype() {
                            return Err(TensorError::InvalidArgument(format!(
                                "Expected out tensor to have dtype {}, but got {} instead",
                                super::core_ops::cpp_type_name(result.dtype()),
                                super::core_ops::cpp_type_name(out.dtype())
                            ))
                            .into());
                        }
                        let written = result.write_into_out(&out)?;
                        Ok(IValue::from(written))
                    })
                    .collect()
            })
        }
    }
}

/// The full names (`aten::addmm_`, `aten::max.dim_max`) of every variant the data file
/// lists, registered or not.
pub fn listed_variant_names() -> Vec<String> {
    DERIVED_VARIANTS
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(|line| line.splitn(3, '\t').nth(2))
        .map(|schema| schema.split('(').next().unwrap_or(schema).to_string())
        .collect()
}

/// Registers every variant of the data file that is not registered yet and whose functional
/// overload is, with its functional's rank; one result per registration attempted. The
/// registry calls it after the native families and again after all families, so that a
/// variant of a composite operator comes after its name's builtin overloads.
pub(crate) fn register(registry: &mut OperatorRegistry) -> Vec<Result<()>> {
    let mut outcomes = Vec::new();
    for line in DERIVED_VARIANTS.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let variant = match parse_line(line) {
            Ok(variant) => variant,
            Err(error) => {
                outcomes.push(Err(error));
                continue;
            }
        };
        let variant_name = variant.schema.split('(').next().unwrap_or(variant.schema);
        if registry.lookup(variant_name).is_some() {
            continue;
        }
        let Some(functional) = registry.lookup(variant.functional) else {
            continue;
        };
        let functional_arity = functional.schema.arguments.len();
        // The variant ranks with its functional among the overloads of its name.
        let rank = functional.overload_rank;
        if let VariantKind::OutOptions = variant.kind {
            let declaration =
                factory_arguments(&functional.schema, variant.schema).map(|mapping| {
                    factory_out_declaration(variant.schema, functional.kernel.clone(), mapping)
                });
            outcomes.push(
                declaration
                    .and_then(|declaration| registry.register_declaration(rank, declaration)),
            );
            continue;
        }
        let declaration = variant_declaration(
            variant.kind,
            variant.schema,
            variant.functional,
            functional.kernel.clone(),
            functional_arity,
        );
        outcomes.push(registry.register_declaration(rank, declaration));
    }
    outcomes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_data_line_parses() {
        for line in DERIVED_VARIANTS.lines().filter(|l| !l.starts_with('#')) {
            let variant = parse_line(line).unwrap_or_else(|e| panic!("{e}"));
            assert!(variant.functional.starts_with("aten::"), "{line}");
            assert!(variant.schema.starts_with("aten::"), "{line}");
        }
    }

    #[test]
    fn a_malformed_line_is_an_error() {
        assert!(parse_line("in_place\taten::abs").is_err());
        assert!(
            parse_line("sideways\taten::abs\taten::abs_(Tensor(a!) self) -> Tensor(a!)").is_err()
        );
    }
}
