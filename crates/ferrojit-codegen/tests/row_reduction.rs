//! Fused groups that end with a row reduction (softmax or log_softmax over the last dim)
//! against PyTorch 2.15's f32 results (tests/fixtures/codegen/generate_row_reductions.py),
//! plus the launcher's choices: other dims fall back, rows split across threads, the cache
//! keeps the reduction apart.
//!
//! Stated bounds against PyTorch (checked below over every element of every case):
//! softmax within `SOFTMAX_ULP` ULP (or `SOFTMAX_ABSOLUTE` where the result is below
//! 1e-30, near exp's underflow, where ULPs of subnormals mean little); log_softmax within
//! `LOG_SOFTMAX_ABSOLUTE` * max(1, |expected|) (the result is a difference, x - max -
//! log(sum), so near 0 a ULP bound would measure cancellation, not the kernel).

mod common;

use common::ulp_distance;
use ferrojit_codegen::GroupCache;
use ferrojit_ir::parse_graph;
use ferrojit_tensor::Tensor;
use std::path::PathBuf;

const SOFTMAX_ULP: u64 = 3;
const SOFTMAX_ABSOLUTE: f32 = 1e-37;
const LOG_SOFTMAX_ABSOLUTE: f32 = 5e-7;

/// (case, rows, length, scale), as generate_row_reductions.py writes them.
const CASES: &[(&str, usize, usize, f64)] = &[
    ("attention", 48, 16, 0.25),
    ("odd", 7, 37, 0.125),
    ("single", 5, 1, 1.0),
    ("long", 3, 700, 0.5),
];

fn fixture(name: &str) -> Vec<f32> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/codegen")
        .join(format!("{name}.f32"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `softmax(x * scale + bias, dim)` (or log_softmax) as a group's subgraph.
fn scores_graph(reduction: &str, scale: f64, dim: i64) -> String {
    format!(
        "graph(%x : Tensor, %bias : Tensor):
  %one : int = prim::Constant[value=1]()
  %scale : float = prim::Constant[value={scale:?}]()
  %dim : int = prim::Constant[value={dim}]()
  %none : NoneType = prim::Constant()
  %a : Tensor = aten::mul(%x, %scale)
  %b : Tensor = aten::add(%a, %bias, %one)
  %y : Tensor = aten::{reduction}(%b, %dim, %none)
  return (%y)
"
    )
}

fn run(cache: &GroupCache, key: u64, text: &str, inputs: &[Tensor]) -> Option<Vec<f32>> {
    let graph = parse_graph(text).expect("test graph parses");
    cache
        .run_group(key, &graph, inputs)
        .expect("group runs")
        .map(|outputs| outputs[0].to_vec::<f32>().expect("f32 output"))
}

#[test]
fn fused_softmax_and_log_softmax_match_pytorch_within_stated_bounds() {
    let cache = GroupCache::new();
    let mut worst_softmax_ulp = 0;
    let mut worst_log_softmax = 0.0f32;
    for (number, &(case, rows, length, scale)) in CASES.iter().enumerate() {
        let x = Tensor::from_vec(fixture(&format!("row_{case}_x")), &[rows, length]).unwrap();
        let bias = Tensor::from_vec(fixture(&format!("row_{case}_bias")), &[length]).unwrap();
        let inputs = [x, bias];
        for (offset, reduction) in ["softmax", "log_softmax"].iter().enumerate() {
            let expected = fixture(&format!("row_{case}_{reduction}"));
            let actual = run(
                &cache,
                (number * 2 + offset) as u64,
                &scores_graph(reduction, scale, -1),
                &inputs,
            )
            .unwrap_or_else(|| panic!("{case} {reduction} compiles"));
            assert_eq!(actual.len(), expected.len());
            for (i, (&a, &e)) in actual.iter().zip(&expected).enumerate() {
                if *reduction == "softmax" {
                    let ulp = ulp_distance(a, e);
                    let tiny = e.abs() < 1e-30 && (a - e).abs() <= SOFTMAX_ABSOLUTE;
                    assert!(
                        ulp <= SOFTMAX_ULP || tiny,
                        "{case} softmax element {i}: {a:e} vs PyTorch {e:e} ({ulp} ulp)"
                    );
                    if !tiny {
                        worst_softmax_ulp = worst_softmax_ulp.max(ulp);
                    }
                } else {
                    let error = (a - e).abs() / e.abs().max(1.0);
                    assert!(
                        error <= LOG_SOFTMAX_ABSOLUTE || (a == e),
                        "{case} log_softmax element {i}: {a:e} vs PyTorch {e:e}"
                    );
                    if a != e {
                        worst_log_softmax = worst_log_softmax.max(error);
                    }
                }
            }
        }
    }
    eprintln!("worst softmax {worst_softmax_ulp} ulp, worst log_softmax {worst_log_softmax:e}");
    assert_eq!(cache.stats().compiled, 2 * CASES.len());
}

#[test]
fn a_reduction_over_another_dim_falls_back_and_the_cache_keeps_kinds_apart() {
    let cache = GroupCache::new();
    let (case, rows, length, scale) = CASES[0];
    let x = Tensor::from_vec(fixture(&format!("row_{case}_x")), &[rows, length]).unwrap();
    let bias = Tensor::from_vec(fixture(&format!("row_{case}_bias")), &[length]).unwrap();
    let inputs = [x, bias];
    // dim 0 of a rank-2 group: not a row reduction, so the interpreter runs it.
    assert!(run(&cache, 7, &scores_graph("softmax", scale, 0), &inputs).is_none());
    // dim 1 is the last dim of rank 2: compiled, and equal to dim -1's result.
    let by_rank = run(&cache, 8, &scores_graph("softmax", scale, 1), &inputs).expect("dim 1");
    let by_last = run(&cache, 9, &scores_graph("softmax", scale, -1), &inputs).expect("dim -1");
    assert_eq!(by_rank, by_last);
    // The same group key reused for a log_softmax group is a different kernel.
    let log = run(&cache, 9, &scores_graph("log_softmax", scale, -1), &inputs).expect("log");
    assert!(log.iter().zip(&by_last).any(|(l, s)| l != s));
    // A group that also returns the value it reduces runs in the interpreter.
    let both = "graph(%x : Tensor):
  %dim : int = prim::Constant[value=-1]()
  %none : NoneType = prim::Constant()
  %a : Tensor = aten::exp(%x)
  %y : Tensor = aten::softmax(%a, %dim, %none)
  return (%y, %a)
";
    assert!(run(&cache, 10, both, &inputs[..1]).is_none());
}

#[test]
fn rows_split_across_threads_match_one_row_at_a_time() {
    // 2048 rows of 96: above the parallel threshold, so each thread gets a range of rows.
    let (rows, length) = (2048usize, 96usize);
    let values: Vec<f32> = (0..rows * length)
        .map(|i| ((i * 7919) % 1013) as f32 / 97.0 - 5.0)
        .collect();
    let bias: Vec<f32> = (0..length).map(|i| (i % 5) as f32 * 0.5).collect();
    let inputs = [
        Tensor::from_vec(values, &[rows, length]).unwrap(),
        Tensor::from_vec(bias, &[length]).unwrap(),
    ];
    let cache = GroupCache::new();
    let text = scores_graph("softmax", 0.5, -1);
    let whole = run(&cache, 1, &text, &inputs).expect("compiles");
    // Row by row through the same kernel, one call per row.
    for row in [0usize, 1, 1023, 2047] {
        let one_row = [
            inputs[0].narrow(0, row as i64, 1).unwrap().contiguous(),
            inputs[1].clone(),
        ];
        let alone = run(&cache, 1, &text, &one_row).expect("compiles");
        assert_eq!(
            &whole[row * length..(row + 1) * length],
            alone.as_slice(),
            "row {row}"
        );
        let total: f32 = alone.iter().sum();
        assert!((total - 1.0).abs() < 1e-5, "row {row} sums to {total}");
    }
}
