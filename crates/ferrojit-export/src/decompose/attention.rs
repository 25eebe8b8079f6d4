//! The decomposition of `scaled_dot_product_attention` on CPU, as torch 2.15 lowers it:
//! 3-d inputs gain a leading dimension (and lose it at the end); a boolean mask becomes
//! `where(mask, 0.0, -inf)`; then ATen's math kernel: `q * sqrt(scale)`, a causal mask as
//! `tril` of ones written with `arange`, `kᵀ * sqrt(scale)`, `matmul` (expand/view/bmm),
//! `+ mask`, `_safe_softmax` (`_softmax`, zeroing rows that are all `-inf`), `matmul` with
//! `v`. When ATen would pick its CPU flash kernel (4-d, equal head sizes, no dropout), the
//! result goes through `permute(2, 0, 1, 3)`, a contiguous `clone` and `permute(1, 2, 0, 3)`,
//! as PyTorch's decomposition of that kernel keeps its layout.

use super::emitter::{
    cpu, not_applicable, Emitter, Original, LAYOUT_STRIDED, MEMORY_FORMAT_CONTIGUOUS,
    MEMORY_FORMAT_PRESERVE,
};
use super::linear_algebra::matmul;
use super::Rule;
use crate::error::Result;
use crate::model::Argument;
use std::collections::BTreeMap;

pub(crate) fn register(table: &mut BTreeMap<&'static str, Rule>) {
    table.insert(
        "torch.ops.aten.scaled_dot_product_attention.default",
        scaled_dot_product_attention,
    );
}

/// The export ScalarType number of bool.
const BOOL: i64 = 12;

fn tensor(name: &str) -> Argument {
    Argument::Tensor(name.to_string())
}

fn unsqueeze(emitter: &mut Emitter, value: &str, dim: i64) -> Result<String> {
    emitter.call(
        "torch.ops.aten.unsqueeze.default",
        vec![tensor(value), Argument::Int(dim)],
        vec![],
    )
}

/// `where(mask, 0.0, -inf)` in the query's dtype.
fn boolean_mask_to_additive(emitter: &mut Emitter, mask: &str, dtype: i64) -> Result<String> {
    let minus_infinity = emitter.call(
        "torch.ops.aten.scalar_tensor.default",
        vec![Argument::Float(f64::NEG_INFINITY)],
        vec![("dtype", Argument::ScalarType(dtype)), ("device", cpu())],
    )?;
    let zero = emitter.call(
        "torch.ops.aten.scalar_tensor.default",
        vec![Argument::Float(0.0)],
        vec![
            ("dtype", Argument::ScalarType(dtype)),
            ("layout", Argument::Layout(LAYOUT_STRIDED)),
            ("device", cpu()),
        ],
    )?;
    emitter.call(
        "torch.ops.aten.where.self",
        vec![tensor(mask), tensor(&zero), tensor(&minus_infinity)],
        vec![],
    )
}

/// `ones(L, S, bool).tril()` as the reference writes `tril`, made additive.
fn causal_mask(emitter: &mut Emitter, rows: i64, columns: i64, dtype: i64) -> Result<String> {
    let ones = emitter.call(
        "torch.ops.aten.full.default",
        vec![Argument::Ints(vec![rows, columns]), Argument::Bool(true)],
        vec![
            ("dtype", Argument::ScalarType(BOOL)),
            ("layout", Argument::Layout(LAYOUT_STRIDED)),
            ("device", cpu()),
            ("pin_memory", Argument::Bool(false)),
        ],
    )?;
    let arange = |emitter: &mut Emitter, end: i64| {
        emitter.call(
            "torch.ops.aten.arange.start_step",
            vec![Argument::Int(0), Argument::Int(end)],
            vec![
                ("layout", Argument::Layout(LAYOUT_STRIDED)),
                ("device", cpu()),
                ("pin_memory", Argument::Bool(false)),
            ],
        )
    };
    let column_index = arange(emitter, columns)?;
    let column_index = unsqueeze(emitter, &column_index, -2)?;
    let row_index = arange(emitter, rows)?;
    let row_index = unsqueeze(emitter, &row_index, -1)?;
    let offset = emitter.call(
        "torch.ops.aten.sub.Tensor",
        vec![tensor(&column_index), tensor(&row_index)],
        vec![],
    )?;
    let lower = emitter.call(
        "torch.ops.aten.le.Scalar",
        vec![tensor(&offset), Argument::Int(0)],
        vec![],
    )?;
    let mask = emitter.call(
        "torch.ops.aten.logical_and.default",
        vec![tensor(&lower), tensor(&ones)],
        vec![],
    )?;
    boolean_mask_to_additive(emitter, &mask, dtype)
}

/// `_safe_softmax(x, -1)`: softmax, with rows that are entirely `-inf` giving zeros.
fn safe_softmax(emitter: &mut Emitter, scores: &str) -> Result<String> {
    let softmax = emitter.call(
        "torch.ops.aten._softmax.default",
        vec![tensor(scores), Argument::Int(-1), Argument::Bool(false)],
        vec![],
    )?;
    let masked = emitter.call(
        "torch.ops.aten.eq.Scalar",
        vec![tensor(scores), Argument::Float(f64::NEG_INFINITY)],
        vec![],
    )?;
    let kept = emitter.call(
        "torch.ops.aten.logical_not.default",
        vec![tensor(&masked)],
        vec![],
    )?;
    let any_kept = emitter.call(
        "torch.ops.aten.any.dim",
        vec![tensor(&kept), Argument::Int(-1), Argument::Bool(true)],
        vec![],
    )?;
    let all_masked = emitter.call(
        "torch.ops.aten.logical_not.default",
        vec![tensor(&any_kept)],
        vec![],
    )?;
    let zeros = emitter.call(
        "torch.ops.aten.full_like.default",
        vec![tensor(&softmax), Argument::Int(0)],
        vec![
            ("pin_memory", Argument::Bool(false)),
            (
                "memory_format",
                Argument::MemoryFormat(MEMORY_FORMAT_PRESERVE),
            ),
        ],
    )?;
    emitter.call(
        "torch.ops.aten.where.self",
        vec![tensor(&all_masked), tensor(&zeros), tensor(&softmax)],
        vec![],
    )
}

fn scaled_dot_product_attention(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let mut query = original.tensor("query")?;
    let mut key = original.tensor("key")?;
    let mut value = original.tensor("value")?;
    let mut mask = original.optional_tensor("attn_mask")?;
    let dropout = original.float_or("dropout_p", 0.0)?;
    let is_causal = original.bool_or("is_causal", false)?;
    let scale = match original.get("scale") {
        None | Some(Argument::None) => None,
        Some(_) => Some(original.float_or("scale", 0.0)?),
    };
    if dropout != 0.0 {
        return Err(not_applicable(
            "attention with dropout (it draws random numbers)",
        ));
    }
    if original.bool_or("enable_gqa", false)? {
        return Err(not_applicable("grouped-query attention"));
    }
    if is_causal && mask.is_some() {
        return Err(not_applicable("attention with both is_causal and a mask"));
    }
    let dtype = emitter.dtype(&query)?;
    if !matches!(dtype, 6 | 7 | 8 | 13) {
        return Err(not_applicable("attention on a non-float dtype"));
    }
    let ranks = [
        emitter.dim(&query)?,
        emitter.dim(&key)?,
        emitter.dim(&value)?,
    ];
    let three_d = ranks == [3, 3, 3];
    if !three_d && ranks != [4, 4, 4] {
        return Err(not_applicable(format!(
            "attention on inputs of ranks {ranks:?}"
        )));
    }
    if three_d {
        query = unsqueeze(emitter, &query, 0)?;
        key = unsqueeze(emitter, &key, 0)?;
        value = unsqueeze(emitter, &value, 0)?;
        if let Some(name) = mask.take() {
            let mut current = name;
            while emitter.dim(&current)? < 4 {
                current = unsqueeze(emitter, &current, 0)?;
            }
            mask = Some(current);
        }
    }
    let query_sizes = emitter.sizes(&query)?;
    let key_sizes = emitter.sizes(&key)?;
    let value_sizes = emitter.sizes(&value)?;
    if query_sizes[1] != key_sizes[1] || key_sizes[1] != value_sizes[1] {
        return Err(not_applicable(
            "attention with different head counts (grouped-query)",
        ));
    }
    let flash = query_sizes[3] == key_sizes[3]
        && key_sizes[3] == value_sizes[3]
        && query_sizes[0] == key_sizes[0]
        && key_sizes[0] == value_sizes[0];
    if let Some(name) = &mask {
        if emitter.dtype(name)? == BOOL {
            mask = Some(boolean_mask_to_additive(emitter, name, dtype)?);
        }
    }
    let head_size = query_sizes[3] as f64;
    let factor = scale.unwrap_or(1.0 / head_size.sqrt());
    if factor < 0.0 {
        return Err(not_applicable("attention with a negative scale"));
    }
    let factor = factor.sqrt();
    let scaled_query = emitter.call(
        "torch.ops.aten.mul.Scalar",
        vec![tensor(&query), Argument::Float(factor)],
        vec![],
    )?;
    if is_causal {
        mask = Some(causal_mask(emitter, query_sizes[2], key_sizes[2], dtype)?);
    }
    let key_transposed = emitter.call(
        "torch.ops.aten.permute.default",
        vec![tensor(&key), Argument::Ints(vec![0, 1, 3, 2])],
        vec![],
    )?;
    let scaled_key = emitter.call(
        "torch.ops.aten.mul.Scalar",
        vec![tensor(&key_transposed), Argument::Float(factor)],
        vec![],
    )?;
    let mut scores = matmul(emitter, &scaled_query, &scaled_key)?;
    if let Some(mask) = mask {
        scores = emitter.call(
            "torch.ops.aten.add.Tensor",
            vec![tensor(&scores), tensor(&mask)],
            vec![],
        )?;
    }
    let weights = safe_softmax(emitter, &scores)?;
    let mut out = matmul(emitter, &weights, &value)?;
    if flash {
        let permuted = emitter.call(
            "torch.ops.aten.permute.default",
            vec![tensor(&out), Argument::Ints(vec![2, 0, 1, 3])],
            vec![],
        )?;
        let copy = emitter.call(
            "torch.ops.aten.clone.default",
            vec![tensor(&permuted)],
            vec![(
                "memory_format",
                Argument::MemoryFormat(MEMORY_FORMAT_CONTIGUOUS),
            )],
        )?;
        out = emitter.call(
            "torch.ops.aten.permute.default",
            vec![tensor(&copy), Argument::Ints(vec![1, 2, 0, 3])],
            vec![],
        )?;
    }
    if three_d {
        out = emitter.call(
            "torch.ops.aten.squeeze.dims",
            vec![tensor(&out), Argument::Ints(vec![0])],
            vec![],
        )?;
    }
    Ok(vec![out])
}
