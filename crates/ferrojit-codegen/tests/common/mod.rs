//! Helpers shared by the codegen tests: ULP distance and running a one-op group.

#![allow(dead_code)]

use ferrojit_codegen::GroupCache;
use ferrojit_ir::parse_graph;
use ferrojit_tensor::Tensor;

/// Distance in representable f32 values; +0 and -0 are the same point, two NaNs agree,
/// NaN against a number is infinitely far (u64::MAX).
pub fn ulp_distance(a: f32, b: f32) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    let ordered = |x: f32| -> i64 {
        let bits = i64::from(x.to_bits() as i32);
        if bits < 0 {
            i64::from(i32::MIN) - bits
        } else {
            bits
        }
    };
    (ordered(a) - ordered(b)).unsigned_abs()
}

/// Runs `graph_text` (one f32 input) through a fresh cache and returns the first output.
pub fn run_unary_group(graph_text: &str, input: &Tensor) -> Vec<f32> {
    let graph = parse_graph(graph_text).expect("test graph parses");
    let cache = GroupCache::new();
    let outputs = cache
        .run_group(1, &graph, std::slice::from_ref(input))
        .expect("group runs")
        .expect("group compiles");
    outputs[0].to_vec::<f32>().expect("f32 output")
}
