//! Operator aliases (`aten::subtract` for `aten::sub`) shared by the compiler, which rewrites
//! them as PyTorch does, and the runtime, which registers them.

/// PyTorch's operator aliases and the operator each one stands for (`NormalizeOps`,
/// torch/csrc/jit/passes/normalize_ops.cpp, plus what torch 2.15 also rewrites: `concat`,
/// `concatenate` and `arctan2`). The compiler emits the canonical operator when the call's
/// first argument is a tensor, as PyTorch's cleanup does, so graphs and saved code name
/// `aten::sub`, never `aten::subtract`. The runtime registers each alias too (the canonical
/// operator's overloads under the alias's name), for calls with other first arguments and for
/// graphs that kept one.
pub const OPERATOR_ALIASES: &[(&str, &str)] = &[
    ("aten::absolute", "aten::abs"),
    ("aten::absolute_", "aten::abs_"),
    ("aten::clip", "aten::clamp"),
    ("aten::clip_", "aten::clamp_"),
    ("aten::ger", "aten::outer"),
    ("aten::arccos", "aten::acos"),
    ("aten::arccos_", "aten::acos_"),
    ("aten::arcsin", "aten::asin"),
    ("aten::arcsin_", "aten::asin_"),
    ("aten::arctan", "aten::atan"),
    ("aten::arctan_", "aten::atan_"),
    ("aten::arctan2", "aten::atan2"),
    ("aten::arctan2_", "aten::atan2_"),
    ("aten::arccosh", "aten::acosh"),
    ("aten::arccosh_", "aten::acosh_"),
    ("aten::arcsinh", "aten::asinh"),
    ("aten::arcsinh_", "aten::asinh_"),
    ("aten::arctanh", "aten::atanh"),
    ("aten::arctanh_", "aten::atanh_"),
    ("aten::fix", "aten::trunc"),
    ("aten::fix_", "aten::trunc_"),
    ("aten::negative", "aten::neg"),
    ("aten::negative_", "aten::neg_"),
    ("aten::subtract", "aten::sub"),
    ("aten::subtract_", "aten::sub_"),
    ("aten::greater_equal", "aten::ge"),
    ("aten::greater_equal_", "aten::ge_"),
    ("aten::greater", "aten::gt"),
    ("aten::greater_", "aten::gt_"),
    ("aten::less_equal", "aten::le"),
    ("aten::less_equal_", "aten::le_"),
    ("aten::less", "aten::lt"),
    ("aten::less_", "aten::lt_"),
    ("aten::not_equal", "aten::ne"),
    ("aten::not_equal_", "aten::ne_"),
    ("aten::divide", "aten::div"),
    ("aten::divide_", "aten::div_"),
    ("aten::multiply", "aten::mul"),
    ("aten::multiply_", "aten::mul_"),
    ("aten::true_divide", "aten::div"),
    ("aten::true_divide_", "aten::div_"),
    ("aten::row_stack", "aten::vstack"),
    ("aten::concat", "aten::cat"),
    ("aten::concatenate", "aten::cat"),
    ("aten::swapdims", "aten::transpose"),
    ("aten::swapdims_", "aten::transpose_"),
    ("aten::swapaxes", "aten::transpose"),
    ("aten::swapaxes_", "aten::transpose_"),
    ("aten::moveaxis", "aten::movedim"),
];

/// The operator `alias` stands for, if it is one of [`OPERATOR_ALIASES`].
pub fn canonical_operator(alias: &str) -> Option<&'static str> {
    OPERATOR_ALIASES
        .iter()
        .find(|(name, _)| *name == alias)
        .map(|(_, canonical)| *canonical)
}
