//! Times a 5-op pointwise chain on 1M f32 elements, `sigmoid(x * w + b) * x + x` style:
//! the fused, Cranelift-compiled group against ferrojit-tensor's kernels op by op, and an
//! inline-only chain (no transcendental) to show the generated loop alone.
//! Run: `cargo run --release -p ferrojit-codegen --example pointwise_speed`.
//! Prints the median of 21 runs for each, at the configured intra-op thread count
//! (`FERROJIT_NUM_THREADS`).

use std::time::{Duration, Instant};

use ferrojit_codegen::GroupCache;
use ferrojit_ir::parse_graph;
use ferrojit_tensor::ops::parallel::num_threads;
use ferrojit_tensor::{Scalar, Tensor};

const CHAIN: &str = "graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %one : int = prim::Constant[value=1]()
  %xw : Tensor = aten::mul(%x, %w)
  %z : Tensor = aten::add(%xw, %b, %one)
  %s : Tensor = aten::sigmoid(%z)
  %m : Tensor = aten::mul(%s, %x)
  %y : Tensor = aten::add(%m, %x, %one)
  return (%y)
";

const INLINE_CHAIN: &str = "graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %one : int = prim::Constant[value=1]()
  %xw : Tensor = aten::mul(%x, %w)
  %z : Tensor = aten::add(%xw, %b, %one)
  %r : Tensor = aten::relu(%z)
  %m : Tensor = aten::mul(%r, %x)
  %y : Tensor = aten::sub(%m, %b, %one)
  return (%y)
";

fn median(mut f: impl FnMut()) -> Duration {
    f(); // warm up (and compile, for the fused path)
    let mut times: Vec<Duration> = (0..21)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let n = 1 << 20;
    let make = |seed: usize| -> Tensor {
        let values: Vec<f32> = (0..n)
            .map(|i| (((i * 7919 + seed * 104_729) % 2001) as f32 / 1000.0) - 1.0)
            .collect();
        Tensor::from_vec(values, &[n]).expect("input")
    };
    let (x, w, b) = (make(1), make(2), make(3));
    let inputs = [x.clone(), w.clone(), b.clone()];
    let one = Scalar::Int(1);
    let cache = GroupCache::new();
    let chain = parse_graph(CHAIN).expect("chain parses");
    let inline_chain = parse_graph(INLINE_CHAIN).expect("inline chain parses");

    let fused = median(|| {
        let out = cache
            .run_group(1, &chain, &inputs)
            .expect("runs")
            .expect("compiles");
        std::hint::black_box(out);
    });
    let unfused = median(|| {
        let z = x.mul(&w).and_then(|xw| xw.add(&b, &one)).expect("ops");
        let y = z
            .sigmoid()
            .and_then(|s| s.mul(&x))
            .and_then(|m| m.add(&x, &one));
        std::hint::black_box(y.expect("ops"));
    });
    let fused_inline = median(|| {
        let out = cache
            .run_group(2, &inline_chain, &inputs)
            .expect("runs")
            .expect("compiles");
        std::hint::black_box(out);
    });
    let unfused_inline = median(|| {
        let z = x.mul(&w).and_then(|xw| xw.add(&b, &one)).expect("ops");
        let y = z
            .relu()
            .and_then(|r| r.mul(&x))
            .and_then(|m| m.sub(&b, &one));
        std::hint::black_box(y.expect("ops"));
    });

    // The two paths must agree before their times mean anything.
    let fused_out = cache.run_group(1, &chain, &inputs).unwrap().unwrap()[0]
        .to_vec::<f32>()
        .unwrap();
    let reference = x
        .mul(&w)
        .and_then(|xw| xw.add(&b, &one))
        .and_then(|z| z.sigmoid())
        .and_then(|s| s.mul(&x))
        .and_then(|m| m.add(&x, &one))
        .and_then(|y| y.to_vec::<f32>())
        .unwrap();
    let worst = fused_out
        .iter()
        .zip(&reference)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);

    println!(
        "pointwise chain on {n} f32 elements, {} threads, median of 21",
        num_threads()
    );
    println!(
        "mul-add-sigmoid-mul-add   fused {:>8.3} ms   op by op {:>8.3} ms   speedup {:.2}x",
        fused.as_secs_f64() * 1e3,
        unfused.as_secs_f64() * 1e3,
        unfused.as_secs_f64() / fused.as_secs_f64()
    );
    println!(
        "mul-add-relu-mul-sub      fused {:>8.3} ms   op by op {:>8.3} ms   speedup {:.2}x",
        fused_inline.as_secs_f64() * 1e3,
        unfused_inline.as_secs_f64() * 1e3,
        unfused_inline.as_secs_f64() / fused_inline.as_secs_f64()
    );
    println!("max |fused - op by op| = {worst:e}");
}
