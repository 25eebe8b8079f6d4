//! `torch.norm`, `torch.tensordot`, `torch.cdist`, `torch.stft`, `torch.unique` and
//! `torch.unique_consecutive`: Python functions of torch/functional.py that PyTorch scripts
//! from their own source. ferrojit has no Python, so their TorchScript is written here
//! ([`TORCH_FUNCTIONAL_SOURCE`]) and compiled on demand under [`TORCH_FUNCTIONAL_QUALIFIER`];
//! a call becomes the `prim::CallFunction` PyTorch emits.
//!
//! PyTorch picks among their variants in two ways, and so does this module: `norm` and
//! `tensordot` are `@overload`ed on their argument types (the first variant whose schema
//! matches is called), `unique` and `unique_consecutive` are `boolean_dispatch`es on the
//! constant flags `return_inverse` and `return_counts`, which decide what they return.
//!
//! Only code scripted from source resolves these names here: in archive code PyTorch prints
//! its builtin `aten::norm`, `aten::cdist`, ... as `torch.norm(...)`, `torch.cdist(...)`, so
//! there `torch.X` stays the operator.

use std::sync::Arc;

use ferrojit_ir::{Prim, ValueId};

use super::calls::{KeywordArgument, PositionalArgument};
use super::Emitter;
use crate::ast::{Expr, ExprKind, Keyword};
use crate::error::FrontendError;
use crate::source::{SourceFile, SourceRange};

/// Where the functions are defined: the qualified names PyTorch gives torch/functional.py's.
pub const TORCH_FUNCTIONAL_QUALIFIER: &str = "__torch__.torch.functional";

/// The functions, in TorchScript. They call the operators through `torch.ops.aten` so that
/// `torch.norm` inside them cannot reach this module again. Their arguments, defaults,
/// checks and messages are torch/functional.py's, except that `norm` and `tensordot` take no
/// `out=` (ferrojit registers no `linalg_vector_norm.out` or `tensordot.out`).
pub const TORCH_FUNCTIONAL_SOURCE: &str = r#"
def _range_list(start: int, end: int) -> List[int]:
    values: List[int] = []
    for value in range(start, end):
        values.append(value)
    return values

def _norm_str(input: Tensor, p: str = "fro", dim: Optional[List[int]] = None, keepdim: bool = False, dtype: Optional[int] = None) -> Tensor:
    fro_as_vector_norm = p == "fro"
    if dim is not None:
        if len(dim) > 2:
            fro_as_vector_norm = False
    if fro_as_vector_norm:
        return torch.ops.aten.linalg_vector_norm(input, 2, dim, keepdim, dtype=dtype)
    matrix_dims = _range_list(0, input.dim())
    if dim is not None:
        matrix_dims = dim
    return torch.ops.aten.linalg_matrix_norm(input, p, matrix_dims, keepdim, dtype=dtype)

def _norm_number(input: Tensor, p: Optional[number], dim: Optional[List[int]] = None, keepdim: bool = False, dtype: Optional[int] = None) -> Tensor:
    if p is None:
        return torch.ops.aten.linalg_vector_norm(input, 2.0, dim, keepdim, dtype=dtype)
    else:
        return torch.ops.aten.linalg_vector_norm(input, p, dim, keepdim, dtype=dtype)

def _norm_number_int_dim(input: Tensor, p: Optional[number], dim: Optional[int] = None, keepdim: bool = False, dtype: Optional[int] = None) -> Tensor:
    dims: Optional[List[int]] = None
    if dim is not None:
        dims = [dim]
    return _norm_number(input, p, dims, keepdim, dtype)

def _norm_str_int_dim(input: Tensor, p: str = "fro", dim: Optional[int] = None, keepdim: bool = False, dtype: Optional[int] = None) -> Tensor:
    dims: Optional[List[int]] = None
    if dim is not None:
        dims = [dim]
    return _norm_str(input, p, dims, keepdim, dtype)

def _tensordot_count(a: Tensor, b: Tensor, dims: int = 2) -> Tensor:
    if dims < 0:
        raise RuntimeError("tensordot expects dims >= 0, but got dims={}".format(dims))
    if dims > min(a.dim(), b.dim()):
        raise RuntimeError("tensordot expects dims < ndim_a or ndim_b, but got dims={}".format(dims))
    return torch.ops.aten.tensordot(a, b, _range_list(-dims, 0), _range_list(0, dims))

def _tensordot_tuple(a: Tensor, b: Tensor, dims: Tuple[List[int], List[int]]) -> Tensor:
    dims_a, dims_b = dims
    return torch.ops.aten.tensordot(a, b, dims_a, dims_b)

def _tensordot_list(a: Tensor, b: Tensor, dims: List[List[int]]) -> Tensor:
    dims_a, dims_b = dims
    return torch.ops.aten.tensordot(a, b, dims_a, dims_b)

def _tensordot_tensor(a: Tensor, b: Tensor, dims: Tensor) -> Tensor:
    if dims.numel() > 1:
        if dims.size()[0] != 2:
            raise AssertionError("dims tensor must have size 2 in first dimension, got {}".format(dims.size()[0]))
        dims_a: List[int] = dims[0].tolist()
        dims_b: List[int] = dims[1].tolist()
        return torch.ops.aten.tensordot(a, b, dims_a, dims_b)
    count = int(dims.item())
    if count < 0:
        raise RuntimeError("tensordot expects dims >= 0, but got dims={}".format(dims))
    return torch.ops.aten.tensordot(a, b, _range_list(-count, 0), _range_list(0, count))

def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    if compute_mode == "use_mm_for_euclid_dist_if_necessary":
        return torch.ops.aten.cdist(x1, x2, p, None)
    elif compute_mode == "use_mm_for_euclid_dist":
        return torch.ops.aten.cdist(x1, x2, p, 1)
    elif compute_mode == "donot_use_mm_for_euclid_dist":
        return torch.ops.aten.cdist(x1, x2, p, 2)
    else:
        raise ValueError("{} is not a valid value for compute_mode".format(compute_mode))

def stft(input: Tensor, n_fft: int, hop_length: Optional[int] = None, win_length: Optional[int] = None, window: Optional[Tensor] = None, center: bool = True, pad_mode: str = "reflect", normalized: bool = False, onesided: Optional[bool] = None, return_complex: Optional[bool] = None, align_to_window: Optional[bool] = None) -> Tensor:
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:
        signal_dim = input.dim()
        extended_shape: List[int] = []
        for index in range(3 - signal_dim):
            extended_shape.append(1)
        for size in input.size():
            extended_shape.append(size)
        pad = n_fft // 2
        input = torch.ops.aten.pad(input.view(extended_shape), [pad, pad], pad_mode, None)
        input = input.view(input.size()[-signal_dim:])
    return torch.ops.aten.stft(input, n_fft, hop_length, win_length, window, normalized, onesided, return_complex, align_to_window)

def _unique_impl(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim: Optional[int] = None) -> Tuple[Tensor, Tensor, Tensor]:
    if dim is not None:
        return torch.ops.aten.unique_dim(input, dim, sorted=sorted, return_inverse=return_inverse, return_counts=return_counts)
    else:
        return torch.ops.aten._unique2(input, sorted=sorted, return_inverse=return_inverse, return_counts=return_counts)

def _return_output(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim: Optional[int] = None) -> Tensor:
    output, inverse_indices, counts = _unique_impl(input, sorted, return_inverse, return_counts, dim)
    return output

def _return_inverse(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    output, inverse_indices, counts = _unique_impl(input, sorted, return_inverse, return_counts, dim)
    return output, inverse_indices

def _return_counts(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    output, inverse_indices, counts = _unique_impl(input, sorted, return_inverse, return_counts, dim)
    return output, counts

def _return_inverse_and_counts(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim: Optional[int] = None) -> Tuple[Tensor, Tensor, Tensor]:
    return _unique_impl(input, sorted, return_inverse, return_counts, dim)

def _unique_consecutive_impl(input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: Optional[int] = None) -> Tuple[Tensor, Tensor, Tensor]:
    return torch.ops.aten.unique_consecutive(input, return_inverse=return_inverse, return_counts=return_counts, dim=dim)

def _consecutive_return_output(input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: Optional[int] = None) -> Tensor:
    output, inverse_indices, counts = _unique_consecutive_impl(input, return_inverse, return_counts, dim)
    return output

def _consecutive_return_inverse(input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    output, inverse_indices, counts = _unique_consecutive_impl(input, return_inverse, return_counts, dim)
    return output, inverse_indices

def _consecutive_return_counts(input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    output, inverse_indices, counts = _unique_consecutive_impl(input, return_inverse, return_counts, dim)
    return output, counts

def _consecutive_return_inverse_and_counts(input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: Optional[int] = None) -> Tuple[Tensor, Tensor, Tensor]:
    return _unique_consecutive_impl(input, return_inverse, return_counts, dim)
"#;

/// A `boolean_dispatch`: the function called depends on two constant flags, given at a
/// position or by name (absent means false).
struct FlagDispatch {
    first_flag: (usize, &'static str),
    second_flag: (usize, &'static str),
    /// By (first, second): neither, first only, second only, both.
    functions: [&'static str; 4],
}

const UNIQUE: FlagDispatch = FlagDispatch {
    first_flag: (2, "return_inverse"),
    second_flag: (3, "return_counts"),
    functions: [
        "_return_output",
        "_return_inverse",
        "_return_counts",
        "_return_inverse_and_counts",
    ],
};

const UNIQUE_CONSECUTIVE: FlagDispatch = FlagDispatch {
    first_flag: (1, "return_inverse"),
    second_flag: (2, "return_counts"),
    functions: [
        "_consecutive_return_output",
        "_consecutive_return_inverse",
        "_consecutive_return_counts",
        "_consecutive_return_inverse_and_counts",
    ],
};

/// The overloads of `torch.norm` and `torch.tensordot`, in PyTorch's declaration order.
const NORM_OVERLOADS: &[&str] = &[
    "_norm_str",
    "_norm_number",
    "_norm_number_int_dim",
    "_norm_str_int_dim",
];
const TENSORDOT_OVERLOADS: &[&str] = &[
    "_tensordot_count",
    "_tensordot_tuple",
    "_tensordot_list",
    "_tensordot_tensor",
];

impl<'a> Emitter<'a> {
    /// `torch.<name>(...)` of one of this module's functions, or `None` for other names.
    pub(crate) fn try_emit_torch_functional_call(
        &mut self,
        name: &str,
        args: &[Expr],
        keywords: &[Keyword],
        range: &SourceRange,
    ) -> Result<Option<ValueId>, FrontendError> {
        if self.context.unit.compiles_archive_code()
            || self.context.qualifier == TORCH_FUNCTIONAL_QUALIFIER
        {
            return Ok(None);
        }
        let overloads: Vec<&str> = match name {
            "norm" => NORM_OVERLOADS.to_vec(),
            "tensordot" => TENSORDOT_OVERLOADS.to_vec(),
            "cdist" => vec!["cdist"],
            "stft" => vec!["stft"],
            "unique" => vec![self.flag_dispatch(&UNIQUE, name, args, keywords, range)?],
            "unique_consecutive" => {
                vec![self.flag_dispatch(&UNIQUE_CONSECUTIVE, name, args, keywords, range)?]
            }
            _ => return Ok(None),
        };
        self.context
            .unit
            .define_source_once(TORCH_FUNCTIONAL_QUALIFIER, || {
                SourceFile::new(
                    format!("<{TORCH_FUNCTIONAL_QUALIFIER}>"),
                    TORCH_FUNCTIONAL_SOURCE,
                )
            })?;
        let (positional, named) = self.emit_arguments(args, keywords)?;
        self.location = Some(range.clone());
        self.emit_overloaded_function_call(&overloads, &positional, &named, range)
            .map(Some)
    }

    /// The function a `boolean_dispatch` picks: PyTorch requires its flags to be constants,
    /// since they decide the result's type.
    fn flag_dispatch(
        &self,
        dispatch: &FlagDispatch,
        name: &str,
        args: &[Expr],
        keywords: &[Keyword],
        range: &SourceRange,
    ) -> Result<&'static str, FrontendError> {
        let flag = |(index, flag_name): (usize, &str)| -> Result<bool, FrontendError> {
            let given = args.get(index).or_else(|| {
                keywords
                    .iter()
                    .find(|k| k.name.as_ref().is_some_and(|n| n.name == flag_name))
                    .map(|k| &k.value)
            });
            match given.map(|expr| &expr.kind) {
                None => Ok(false),
                Some(ExprKind::Bool(value)) => Ok(*value),
                Some(_) => Err(self.error(
                    format!(
                        "torch.{name}: {flag_name} must be a constant True or False (PyTorch chooses the function by it)"
                    ),
                    range,
                )),
            }
        };
        let first = flag(dispatch.first_flag)?;
        let second = flag(dispatch.second_flag)?;
        Ok(dispatch.functions[usize::from(first) + 2 * usize::from(second)])
    }

    /// Calls the first of `names` (functions of [`TORCH_FUNCTIONAL_QUALIFIER`]) whose schema
    /// the arguments match, as PyTorch resolves a call of an `@overload`ed function.
    fn emit_overloaded_function_call(
        &mut self,
        names: &[&str],
        positional: &[PositionalArgument],
        named: &[KeywordArgument],
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        let mut schemas = Vec::new();
        let mut qualified_names = Vec::new();
        for name in names {
            let qualified = format!("{TORCH_FUNCTIONAL_QUALIFIER}.{name}");
            let function = self.context.unit.function(&qualified)?;
            schemas.push(Arc::new(function.schema().clone()));
            qualified_names.push(qualified);
        }
        let (schema, matched) = self.match_schemas(&schemas, positional, named, range)?;
        let index = schemas
            .iter()
            .position(|candidate| Arc::ptr_eq(candidate, &schema))
            .unwrap_or(0);
        self.location = Some(range.clone());
        let node = self.insert(
            Prim::CallFunction.name(),
            &matched.inputs,
            &matched.return_types,
        );
        self.graph.set_attribute(
            node,
            "name",
            ferrojit_ir::AttributeValue::Str(qualified_names[index].clone()),
        );
        self.pack_outputs(node)
    }
}
