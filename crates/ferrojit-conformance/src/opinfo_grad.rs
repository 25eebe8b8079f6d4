//! Gradient fixtures from PyTorch's OpInfo database (issue 23, item 7): reading the cases
//! tests/fixtures/opinfo_grad/generate.py wrote, preparing their inputs (the leaves that
//! require grad), and the coverage check that lists the operators PyTorch differentiates,
//! ferrojit registers, and no passing case covers.
//!
//! A case is an OpInfo sample's scripted call wrapped in `torch.autograd.grad(outputs,
//! inputs, grad_outputs, allow_unused=True)`; its expected value is PyTorch's list of
//! gradients (`None` where unused). Judging and the known-gap rules are the OpInfo
//! fixtures' own ([`crate::opinfo`]): the gap list only shrinks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ferrojit_runtime::ivalue::IValue;

use crate::opinfo::{load_opinfo_cases, OpInfoCase};
use crate::{fresh_copy, repo_root};

/// The fixture folder.
pub fn opinfo_grad_dir() -> PathBuf {
    repo_root().join("tests/fixtures/opinfo_grad")
}

/// One gradient case: the scripted function and PyTorch's gradients (as an [`OpInfoCase`]),
/// the `aten::` name of its OpInfo, and which input tensors require grad.
#[derive(Debug, Clone)]
pub struct GradCase {
    pub case: OpInfoCase,
    /// `aten::<the OpInfo's aten_name>`.
    pub aten: String,
    /// The `aten::` operators (overloads stripped) the case's scripted graph runs that
    /// PyTorch differentiates there: what a passing case covers. Cases written before the
    /// generator recorded them cover their `aten` name.
    pub operators: Vec<String>,
    /// Per input, one flag per tensor (a tensor list has one per element).
    pub requires_grad: Vec<Vec<bool>>,
}

/// Reads `cases.pt`: the fields every OpInfo case has, then `aten`, `operators` and
/// `requires_grad`.
pub fn load_grad_cases(path: &Path) -> Result<Vec<GradCase>, String> {
    let cases = load_opinfo_cases(path)?;
    let items = crate::load_case_list(path)?;
    if items.len() != cases.len() {
        return Err(format!(
            "{}: {} entries, {} cases read",
            path.display(),
            items.len(),
            cases.len()
        ));
    }
    cases
        .into_iter()
        .zip(&items)
        .map(|(case, item)| {
            let dict = item.to_dict().map_err(|e| format!("{}: {e}", case.name))?;
            let field = |name: &str| {
                dict.get(&IValue::string(name))
                    .ok_or_else(|| format!("{}: missing '{name}'", case.name))
            };
            let aten = field("aten")?
                .to_str()
                .map_err(|e| format!("{}, 'aten': {e}", case.name))?
                .to_string();
            let operators = match dict.get(&IValue::string("operators")) {
                Some(list) => items_of(&list)
                    .and_then(|items| {
                        items
                            .iter()
                            .map(|item| {
                                item.to_str().map(str::to_string).map_err(|e| e.to_string())
                            })
                            .collect::<Result<Vec<String>, String>>()
                    })
                    .map_err(|e| format!("{}, 'operators': {e}", case.name))?,
                None => vec![aten.clone()],
            };
            let requires_grad = read_flags(&field("requires_grad")?)
                .map_err(|e| format!("{}, 'requires_grad': {e}", case.name))?;
            if requires_grad.len() != case.inputs.len() {
                return Err(format!(
                    "{}: {} requires_grad entries for {} inputs",
                    case.name,
                    requires_grad.len(),
                    case.inputs.len()
                ));
            }
            Ok(GradCase {
                case,
                aten,
                operators,
                requires_grad,
            })
        })
        .collect()
}

fn items_of(value: &IValue) -> Result<Vec<IValue>, String> {
    match value {
        IValue::List(list) => Ok(list.to_vec()),
        IValue::Tuple(tuple) => Ok(tuple.items.to_vec()),
        other => Err(format!("a {}, not a list", other.tag_name())),
    }
}

fn read_flags(value: &IValue) -> Result<Vec<Vec<bool>>, String> {
    items_of(value)?
        .iter()
        .map(|entry| -> Result<Vec<bool>, String> {
            items_of(entry)?
                .iter()
                .map(|flag| flag.to_bool().map_err(|e| e.to_string()))
                .collect()
        })
        .collect()
}

/// Fresh copies of the case's inputs, the tensors PyTorch made require grad marked so (new
/// leaves: nothing one case records reaches another).
pub fn prepare_inputs(case: &GradCase) -> Result<Vec<IValue>, String> {
    let leaf = |value: &IValue, flag: bool| -> Result<IValue, String> {
        let tensor = value
            .to_tensor()
            .map_err(|e| format!("{}: {e}", case.case.name))?;
        Ok(IValue::tensor_with_requires_grad(
            tensor.clone_tensor(),
            flag,
        ))
    };
    case.case
        .inputs
        .iter()
        .zip(&case.requires_grad)
        .map(|(input, flags)| match input {
            IValue::Tensor(_) if flags.len() == 1 => leaf(input, flags[0]),
            IValue::List(list) if list.len() == flags.len() => {
                let items = list
                    .to_vec()
                    .iter()
                    .zip(flags)
                    .map(|(item, flag)| leaf(item, *flag))
                    .collect::<Result<Vec<_>, String>>()?;
                Ok(IValue::list(list.element_type().clone(), items))
            }
            IValue::Tensor(_) | IValue::List(_) => Err(format!(
                "{}: requires_grad flags do not match the input's tensors",
                case.case.name
            )),
            other => Ok(fresh_copy(other)),
        })
        .collect()
}

/// Reads differentiable_ops.txt: one `aten::name` a line.
pub fn parse_operator_list(text: &str) -> Result<Vec<String>, String> {
    text.lines()
        .enumerate()
        .map(|(index, line)| (index, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
        .map(|(index, line)| {
            if line.starts_with("aten::") && !line.contains(' ') {
                Ok(line.to_string())
            } else {
                Err(format!(
                    "line {}: '{line}' is not an aten:: name",
                    index + 1
                ))
            }
        })
        .collect()
}

/// The operators PyTorch differentiates (`differentiable`) that ferrojit registers and that
/// no passing case covers, sorted.
pub fn uncovered_operators(
    differentiable: &[String],
    registered: impl Fn(&str) -> bool,
    covered: &BTreeSet<String>,
) -> Vec<String> {
    let mut result: Vec<String> = differentiable
        .iter()
        .filter(|name| registered(name) && !covered.contains(*name))
        .cloned()
        .collect();
    result.sort();
    result.dedup();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_lists_parse_and_reject_other_lines() {
        let names = parse_operator_list("# header\naten::abs\n\naten::sin\n").unwrap();
        assert_eq!(names, vec!["aten::abs", "aten::sin"]);
        assert!(parse_operator_list("abs\n").is_err());
        assert!(parse_operator_list("aten::abs x\n").is_err());
    }

    #[test]
    fn uncovered_operators_are_registered_and_without_a_passing_case() {
        let differentiable: Vec<String> = ["aten::abs", "aten::sin", "aten::cummax", "aten::abs"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let covered: BTreeSet<String> = ["aten::sin".to_string()].into_iter().collect();
        let uncovered =
            uncovered_operators(&differentiable, |name| name != "aten::cummax", &covered);
        assert_eq!(uncovered, vec!["aten::abs".to_string()]);
    }

    #[test]
    fn flags_must_match_the_inputs() {
        let tensor =
            IValue::from(ferrojit_tensor::Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap());
        let mut case = GradCase {
            case: OpInfoCase {
                name: "abs/float64/0".to_string(),
                opinfo: "abs".to_string(),
                dtype: "float64".to_string(),
                source: String::new(),
                inputs: vec![tensor.clone(), tensor],
                rtol: 1e-6,
                atol: 1e-9,
                expected: Ok(IValue::None),
            },
            aten: "aten::abs".to_string(),
            operators: vec!["aten::abs".to_string()],
            requires_grad: vec![vec![true], vec![false]],
        };
        let inputs = prepare_inputs(&case).unwrap();
        assert!(inputs[0].to_tensor_cell().unwrap().requires_grad());
        assert!(!inputs[1].to_tensor_cell().unwrap().requires_grad());
        case.requires_grad[0] = vec![true, true];
        assert!(prepare_inputs(&case).is_err());
    }
}
