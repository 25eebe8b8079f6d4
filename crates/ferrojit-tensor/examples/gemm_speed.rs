//! A speed comparison, not a test: the packed GEMM kernels with a fused bias + GELU epilogue
//! against matrixmultiply's sgemm followed by a separate bias + GELU pass, single thread.
//! Run with `cargo run --release -p ferrojit-tensor --example gemm_speed`.

use ferrojit_tensor::gemm::{
    gemm, Activation, ChannelAxis, Epilogue, Kernel, Operand, PackedMatrix, Side, StridedMatrix,
};
use std::time::Instant;

/// Deterministic values in [-1, 1) (a linear congruential generator).
fn values(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Single-thread timings: the packed kernels
/// with a fused bias + GELU epilogue against matrixmultiply's sgemm followed by a separate
/// bias + GELU pass, on resnet18's im2col GEMMs and the encoder's linears at sequence 128.
/// The methods alternate within each round and the fastest round counts, so a busy machine
/// slows them alike; the epilogue-free products are timed too.
fn main() {
    ferrojit_tensor::ops::parallel::set_num_threads(1);
    // (m, k, n, weight side): conv = weight (cout x cin*9) @ cols, linear = x @ W.T.
    let shapes = [
        (64, 576, 3136, Side::Left),
        (128, 1152, 784, Side::Left),
        (256, 2304, 196, Side::Left),
        (512, 4608, 49, Side::Left),
        (128, 768, 768, Side::Right),
        (128, 768, 3072, Side::Right),
        (128, 3072, 768, Side::Right),
    ];
    let kernels: Vec<Kernel> = Kernel::available()
        .into_iter()
        .filter(|&k| k != Kernel::Portable)
        .collect();
    for (m, k, n, side) in shapes {
        let a = values(m * k, 1);
        let b = values(k * n, 2);
        let channels = if side == Side::Left { m } else { n };
        let bias = values(channels, 3);
        let axis = if side == Side::Left {
            ChannelAxis::Rows
        } else {
            ChannelAxis::Columns
        };
        let gelu = Epilogue {
            axis,
            shift: Some(&bias),
            activation: Activation::Gelu,
            ..Epilogue::NONE
        };
        let flops = 2.0 * (m * n * k) as f64;
        let mut c = vec![0f32; m * n];
        let sa = StridedMatrix::row_major(&a, m, k).unwrap();
        let sb = StridedMatrix::row_major(&b, k, n).unwrap();
        let packed: Vec<PackedMatrix> = kernels
            .iter()
            .map(|&kernel| {
                PackedMatrix::pack(&if side == Side::Left { sa } else { sb }, side, kernel)
            })
            .collect();
        // best[method][epilogue?]: 0 = matrixmultiply, then one per kernel.
        let mut best = vec![[f64::INFINITY; 2]; 1 + kernels.len()];
        for _ in 0..9 {
            for (e, epi) in [Epilogue::NONE, gelu].iter().enumerate() {
                let t = Instant::now();
                // SAFETY: a is m x k, b is k x n, c is m x n, all row-major and distinct.
                unsafe {
                    matrixmultiply::sgemm(
                        m,
                        k,
                        n,
                        1.0,
                        a.as_ptr(),
                        k as isize,
                        1,
                        b.as_ptr(),
                        n as isize,
                        1,
                        0.0,
                        c.as_mut_ptr(),
                        n as isize,
                        1,
                    )
                };
                epi.apply_tile(&mut c, n, 0, m, 0, n);
                best[0][e] = best[0][e].min(t.elapsed().as_secs_f64());
                for (slot, p) in packed.iter().enumerate() {
                    let (lhs, rhs) = if side == Side::Left {
                        (Operand::Packed(p), Operand::Strided(sb))
                    } else {
                        (Operand::Strided(sa), Operand::Packed(p))
                    };
                    let t = Instant::now();
                    gemm(lhs, rhs, &mut c, epi).unwrap();
                    best[slot + 1][e] = best[slot + 1][e].min(t.elapsed().as_secs_f64());
                }
            }
        }
        let show = |name: &str, [plain, fused]: [f64; 2]| {
            format!(
                "{name} {:.2} ms ({:.0} GFLOPS) / +bias+gelu {:.2} ms",
                plain * 1e3,
                flops / plain / 1e9,
                fused * 1e3
            )
        };
        let mut line = format!("{m}x{k}x{n}: {}", show("matrixmultiply", best[0]));
        for (kernel, times) in kernels.iter().zip(&best[1..]) {
            line += &format!("; {}", show(&format!("{kernel:?}"), *times));
        }
        println!("{line}");
    }
}
