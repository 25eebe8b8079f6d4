//! `torch.nn.functional` for scripted source: which names are aten builtins, which are
//! Python functions PyTorch scripts from torch/nn/functional.py, and our own TorchScript
//! rewrite of those functions (the `functional_prelude/*.py` files), compiled on demand.
//!
//! PyTorch, scripting `torch.nn.functional.relu(x)`, compiles the Python source of
//! `relu` into `__torch__.torch.nn.functional.relu` and calls it (`prim::CallFunction`).
//! ferrojit has no Python at run time, so the bodies here are written by us with PyTorch's
//! signatures, argument checks and messages. Names that are the very same object as an aten
//! builtin (`F.conv2d is torch.conv2d`) become that builtin call, as PyTorch's
//! `_find_builtin` makes them; `boolean_dispatch` functions (`max_pool2d` with
//! `return_indices`) pick one of two functions by a constant argument.

use ferrojit_ir::source::SourceFile;

use crate::ast::{Expr, ExprKind, Keyword};
use crate::compilation_unit::CompilationUnit;
use crate::error::FrontendError;
use crate::source::SourceRange;

/// The qualifier PyTorch gives functions scripted from torch/nn/functional.py.
pub(crate) const FUNCTIONAL_QUALIFIER: &str = "__torch__.torch.nn.functional";

/// The module path scripted source reaches the functions through.
const FUNCTIONAL_MODULE: &str = "torch.nn.functional.";

/// The prelude's source files, one family of functions each; defined together under
/// [`FUNCTIONAL_QUALIFIER`], so a function of one file may call a helper of another.
const PRELUDE_FILES: [&str; 5] = [
    include_str!("functional_prelude/activations.py"),
    include_str!("functional_prelude/pooling.py"),
    include_str!("functional_prelude/normalization.py"),
    include_str!("functional_prelude/losses.py"),
    include_str!("functional_prelude/sampling.py"),
];

/// `torch.nn.functional` names bound to the aten builtin itself (`_add_docstr(torch.X)`),
/// which scripting emits as that operator, not as a function call.
const BUILTIN_ALIASES: &[(&str, &str)] = &[
    ("conv1d", "aten::conv1d"),
    ("conv2d", "aten::conv2d"),
    ("conv3d", "aten::conv3d"),
    ("conv_transpose1d", "aten::conv_transpose1d"),
    ("conv_transpose2d", "aten::conv_transpose2d"),
    ("conv_transpose3d", "aten::conv_transpose3d"),
    ("conv_tbc", "aten::conv_tbc"),
    ("avg_pool1d", "aten::avg_pool1d"),
    ("avg_pool2d", "aten::avg_pool2d"),
    ("avg_pool3d", "aten::avg_pool3d"),
    ("adaptive_avg_pool1d", "aten::adaptive_avg_pool1d"),
    ("gelu", "aten::gelu"),
    ("softplus", "aten::softplus"),
    ("softshrink", "aten::softshrink"),
    ("hardshrink", "aten::hardshrink"),
    ("logsigmoid", "aten::log_sigmoid"),
    ("prelu", "aten::prelu"),
    ("linear", "aten::linear"),
    ("bilinear", "aten::bilinear"),
    ("one_hot", "aten::one_hot"),
    ("cosine_similarity", "aten::cosine_similarity"),
    ("pairwise_distance", "aten::pairwise_distance"),
    ("pdist", "aten::pdist"),
    ("pixel_shuffle", "aten::pixel_shuffle"),
    ("pixel_unshuffle", "aten::pixel_unshuffle"),
    ("channel_shuffle", "aten::channel_shuffle"),
    ("native_channel_shuffle", "aten::native_channel_shuffle"),
    ("relu_", "aten::relu_"),
    ("elu_", "aten::elu_"),
    ("selu_", "aten::selu_"),
    ("celu_", "aten::celu_"),
    ("leaky_relu_", "aten::leaky_relu_"),
    ("hardtanh_", "aten::hardtanh_"),
    ("threshold_", "aten::threshold_"),
];

/// Names bound to a function of another name (`threshold = _threshold`): the call names
/// the function PyTorch compiled.
const RENAMED: &[(&str, &str)] = &[("threshold", "_threshold")];

/// `boolean_dispatch` functions: the flag's name and position, the function called when it
/// is `True` and the one called when it is `False` (its default).
struct BooleanDispatch {
    name: &'static str,
    flag: &'static str,
    position: usize,
    if_true: &'static str,
    if_false: &'static str,
}

const BOOLEAN_DISPATCH: &[BooleanDispatch] = &[
    BooleanDispatch {
        name: "max_pool1d",
        flag: "return_indices",
        position: 6,
        if_true: "max_pool1d_with_indices",
        if_false: "_max_pool1d",
    },
    BooleanDispatch {
        name: "max_pool2d",
        flag: "return_indices",
        position: 6,
        if_true: "max_pool2d_with_indices",
        if_false: "_max_pool2d",
    },
    BooleanDispatch {
        name: "max_pool3d",
        flag: "return_indices",
        position: 6,
        if_true: "max_pool3d_with_indices",
        if_false: "_max_pool3d",
    },
    BooleanDispatch {
        name: "adaptive_max_pool1d",
        flag: "return_indices",
        position: 2,
        if_true: "adaptive_max_pool1d_with_indices",
        if_false: "_adaptive_max_pool1d",
    },
    BooleanDispatch {
        name: "adaptive_max_pool2d",
        flag: "return_indices",
        position: 2,
        if_true: "adaptive_max_pool2d_with_indices",
        if_false: "_adaptive_max_pool2d",
    },
    BooleanDispatch {
        name: "adaptive_max_pool3d",
        flag: "return_indices",
        position: 2,
        if_true: "adaptive_max_pool3d_with_indices",
        if_false: "_adaptive_max_pool3d",
    },
    BooleanDispatch {
        name: "fractional_max_pool2d",
        flag: "return_indices",
        position: 4,
        if_true: "fractional_max_pool2d_with_indices",
        if_false: "_fractional_max_pool2d",
    },
    BooleanDispatch {
        name: "fractional_max_pool3d",
        flag: "return_indices",
        position: 4,
        if_true: "fractional_max_pool3d_with_indices",
        if_false: "_fractional_max_pool3d",
    },
];

/// Functions PyTorch declares with `@_overload`s, and our function for each overload in
/// PyTorch's order (scripting calls the first whose schema the arguments match).
const OVERLOADS: &[(&str, &[&str])] = &[
    (
        "interpolate",
        &[
            "_interpolate_int_size",
            "interpolate",
            "_interpolate_int_size_float_scale",
            "_interpolate_float_scale",
        ],
    ),
    ("upsample", &["_upsample_int_size", "upsample"]),
    (
        "upsample_nearest",
        &["_upsample_nearest_int_size", "upsample_nearest"],
    ),
    (
        "upsample_bilinear",
        &[
            "_upsample_bilinear_int_size",
            "upsample_bilinear",
            "_upsample_bilinear_int_size_list_scale",
            "_upsample_bilinear_list_scale",
        ],
    ),
];

/// What a call of `torch.nn.functional.NAME` compiles to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FunctionalCall {
    /// An aten operator, e.g. `aten::conv2d`.
    Builtin(&'static str),
    /// A TorchScript function of the unit, by qualified name.
    Function(String),
    /// The first of these functions whose schema the arguments match.
    Overloaded(Vec<String>),
}

/// The `NAME` of a `torch.nn.functional.NAME` callee, if `dotted` is one.
pub(crate) fn functional_name(dotted: &str) -> Option<&str> {
    dotted
        .strip_prefix(FUNCTIONAL_MODULE)
        .filter(|name| !name.is_empty() && !name.contains('.'))
}

/// As [`functional_name`], also through a module alias of the file being compiled
/// (`F.relu` after `import torch.nn.functional as F`).
pub(crate) fn functional_callee(
    unit: &CompilationUnit,
    qualifier: &str,
    dotted: &str,
) -> Option<String> {
    if let Some(name) = functional_name(dotted) {
        return Some(name.to_string());
    }
    let (root, name) = dotted.split_once('.')?;
    let module = unit.module_alias(qualifier, root)?;
    functional_name(&format!("{module}.{name}")).map(str::to_string)
}

/// Resolves a call of `torch.nn.functional.<name>` with these (unemitted) arguments.
/// `Ok(None)` when neither PyTorch's builtins nor the prelude (nor the archive's own
/// `__torch__.torch.nn.functional` code) define the name.
pub(crate) fn resolve_functional_call(
    unit: &CompilationUnit,
    name: &str,
    args: &[Expr],
    keywords: &[Keyword],
    range: &SourceRange,
) -> Result<Option<FunctionalCall>, FrontendError> {
    if let Some((_, builtin)) = BUILTIN_ALIASES.iter().find(|(alias, _)| *alias == name) {
        return Ok(Some(FunctionalCall::Builtin(builtin)));
    }
    let function = match BOOLEAN_DISPATCH.iter().find(|d| d.name == name) {
        Some(dispatch) => dispatched_function(dispatch, args, keywords, range)?,
        None => RENAMED
            .iter()
            .find(|(alias, _)| *alias == name)
            .map_or(name, |(_, renamed)| *renamed),
    };
    if let Some((_, overloads)) = OVERLOADS.iter().find(|(overloaded, _)| *overloaded == name) {
        // An archive never calls these by the module path; the prelude defines them all.
        define_prelude(unit)?;
        let qualified = overloads
            .iter()
            .map(|overload| format!("{FUNCTIONAL_QUALIFIER}.{overload}"))
            .collect();
        return Ok(Some(FunctionalCall::Overloaded(qualified)));
    }
    let qualified = format!("{FUNCTIONAL_QUALIFIER}.{function}");
    // Archive code that carries its own torch/nn/functional.py keeps calling it: asking
    // first loads that file, and the prelude is then never defined over it.
    if unit.has_function(&qualified)? {
        return Ok(Some(FunctionalCall::Function(qualified)));
    }
    if define_prelude(unit).is_err() {
        // The qualifier already holds other definitions of these names (an archive's file).
        return Ok(None);
    }
    Ok(unit
        .has_function(&qualified)?
        .then_some(FunctionalCall::Function(qualified)))
}

/// Defines the prelude's functions in `unit`, once.
fn define_prelude(unit: &CompilationUnit) -> Result<(), FrontendError> {
    unit.define_source_once(FUNCTIONAL_QUALIFIER, || {
        SourceFile::new("<torch.nn.functional prelude>", PRELUDE_FILES.concat())
    })
}

/// Chooses between a `boolean_dispatch` pair by the flag's constant value, as scripting
/// does; the flag must be a literal `True`/`False` when given.
fn dispatched_function(
    dispatch: &BooleanDispatch,
    args: &[Expr],
    keywords: &[Keyword],
    range: &SourceRange,
) -> Result<&'static str, FrontendError> {
    let keyword = keywords
        .iter()
        .find(|k| k.name.as_ref().is_some_and(|n| n.name == dispatch.flag))
        .map(|k| &k.value);
    let flag = match args.get(dispatch.position).or(keyword) {
        None => false,
        Some(Expr {
            kind: ExprKind::Bool(value),
            ..
        }) => *value,
        Some(_) => {
            return Err(FrontendError::new(
                format!(
                    "Keyword argument '{}' for boolean dispatch at position was not constant",
                    dispatch.flag
                ),
                range.clone(),
            ))
        }
    };
    Ok(if flag {
        dispatch.if_true
    } else {
        dispatch.if_false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_direct_members_of_the_module_are_functional_names() {
        assert_eq!(functional_name("torch.nn.functional.relu"), Some("relu"));
        assert_eq!(functional_name("torch.nn.functional."), None);
        assert_eq!(functional_name("torch.nn.functional.a.b"), None);
        assert_eq!(functional_name("torch.relu"), None);
    }

    #[test]
    fn the_prelude_parses_and_defines_every_dispatch_target() {
        struct NoOperators;
        impl crate::operators::OperatorSchemas for NoOperators {
            fn overloads(&self, _: &str) -> Vec<std::sync::Arc<ferrojit_ir::FunctionSchema>> {
                Vec::new()
            }
        }
        let unit = CompilationUnit::new(std::sync::Arc::new(NoOperators));
        define_prelude(&unit).expect("the prelude parses");
        for dispatch in BOOLEAN_DISPATCH {
            for target in [dispatch.if_true, dispatch.if_false] {
                let qualified = format!("{FUNCTIONAL_QUALIFIER}.{target}");
                assert!(unit.has_function(&qualified).unwrap(), "{qualified}");
            }
        }
        for (_, overloads) in OVERLOADS {
            for overload in *overloads {
                let qualified = format!("{FUNCTIONAL_QUALIFIER}.{overload}");
                assert!(unit.has_function(&qualified).unwrap(), "{qualified}");
            }
        }
        for (_, renamed) in RENAMED {
            let qualified = format!("{FUNCTIONAL_QUALIFIER}.{renamed}");
            assert!(unit.has_function(&qualified).unwrap(), "{qualified}");
        }
        // A builtin alias is never also a prelude function: the alias would hide it.
        for (alias, _) in BUILTIN_ALIASES {
            let qualified = format!("{FUNCTIONAL_QUALIFIER}.{alias}");
            assert!(!unit.has_function(&qualified).unwrap(), "{qualified}");
        }
    }
}
