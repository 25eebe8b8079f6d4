//! Micro-kernels: one `MR x NR` output tile from a packed `A` panel (`kc x MR`, a column of
//! `MR` values per step) and a packed `B` panel (`kc x NR`, a row of `NR` values per step).
//! AVX-512 (8 x 32) and AVX2+FMA (6 x 16) versions are picked at run time; a portable one
//! (4 x 8) runs everywhere else.

/// Which micro-kernel a packed matrix was laid out for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Plain Rust, any CPU.
    Portable,
    /// 256-bit vectors with fused multiply-add.
    Avx2Fma,
    /// 512-bit vectors.
    Avx512,
}

impl Kernel {
    /// Rows of the output tile.
    pub const fn mr(self) -> usize {
        match self {
            Kernel::Portable => 4,
            Kernel::Avx2Fma => 6,
            Kernel::Avx512 => 8,
        }
    }

    /// Columns of the output tile.
    pub const fn nr(self) -> usize {
        match self {
            Kernel::Portable => 8,
            Kernel::Avx2Fma => 16,
            Kernel::Avx512 => 32,
        }
    }

    /// Whether this CPU can run the kernel.
    pub fn is_available(self) -> bool {
        match self {
            Kernel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2Fma => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The fastest kernel this CPU runs, or the one `FERROJIT_GEMM_KERNEL` (`portable`,
    /// `avx2`, `avx512`) names when the CPU has it. Decided once per process.
    pub fn best() -> Kernel {
        static BEST: std::sync::OnceLock<Kernel> = std::sync::OnceLock::new();
        *BEST.get_or_init(|| {
            let requested = std::env::var("FERROJIT_GEMM_KERNEL").ok();
            let forced = match requested.as_deref().map(str::trim) {
                Some("portable") => Some(Kernel::Portable),
                Some("avx2") => Some(Kernel::Avx2Fma),
                Some("avx512") => Some(Kernel::Avx512),
                _ => None,
            };
            if let Some(k) = forced.filter(|k| k.is_available()) {
                return k;
            }
            [Kernel::Avx512, Kernel::Avx2Fma]
                .into_iter()
                .find(|k| k.is_available())
                .unwrap_or(Kernel::Portable)
        })
    }

    /// Every kernel this CPU runs (for tests that compare them).
    pub fn available() -> Vec<Kernel> {
        [Kernel::Portable, Kernel::Avx2Fma, Kernel::Avx512]
            .into_iter()
            .filter(|k| k.is_available())
            .collect()
    }

    /// Computes one full tile: `c[i * c_stride + j] (+)= sum_p a[p * MR + i] * b[p * NR + j]`
    /// for `i < MR`, `j < NR`, adding to `c` when `accumulate` is set and overwriting it
    /// otherwise.
    ///
    /// Panics (instead of reading or writing out of bounds) when a panel is shorter than
    /// `kc` steps or `c` cannot hold the tile.
    pub(crate) fn tile(
        self,
        kc: usize,
        a: &[f32],
        b: &[f32],
        c: &mut [f32],
        c_stride: usize,
        accumulate: bool,
    ) {
        let (mr, nr) = (self.mr(), self.nr());
        assert!(
            c_stride >= nr && c.len() >= (mr - 1) * c_stride + nr,
            "gemm kernel: output tile out of bounds"
        );
        // SAFETY: the assert above: `c` holds rows `0..MR` of `NR` values at `c_stride`, and
        // it is borrowed exclusively for the call.
        unsafe { self.tile_raw(kc, a, b, c.as_mut_ptr(), c_stride, accumulate) }
    }

    /// [`Kernel::tile`] writing through a raw pointer, for callers whose tasks write
    /// disjoint tiles of one buffer.
    ///
    /// # Safety
    /// `c` points to `MR` rows of `NR` writable values `c_stride` apart (`c_stride >= NR`)
    /// that nothing else reads or writes during the call. The panels are checked here.
    pub(crate) unsafe fn tile_raw(
        self,
        kc: usize,
        a: &[f32],
        b: &[f32],
        c: *mut f32,
        c_stride: usize,
        accumulate: bool,
    ) {
        let (mr, nr) = (self.mr(), self.nr());
        assert!(a.len() >= kc * mr, "gemm kernel: A panel too short");
        assert!(b.len() >= kc * nr, "gemm kernel: B panel too short");
        assert!(c_stride >= nr, "gemm kernel: output rows overlap");
        match self {
            // SAFETY: the caller vouches for the tile's rows (see above).
            Kernel::Portable => unsafe { portable_tile(kc, a, b, c, c_stride, accumulate) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2Fma => {
                assert!(self.is_available(), "gemm kernel: CPU lacks AVX2+FMA");
                // SAFETY: the CPU has AVX2 and FMA (asserted just above). The asserts at the
                // top guarantee that `a` holds `kc * 6` values and `b` holds `kc * 16`; the
                // caller vouches for rows `0..6` of 16 values at stride `c_stride` in `c`,
                // which are all the addresses the kernel forms.
                unsafe { x86::avx2_tile(kc, a.as_ptr(), b.as_ptr(), c, c_stride, accumulate) }
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => {
                assert!(self.is_available(), "gemm kernel: CPU lacks AVX-512F");
                // SAFETY: the CPU has AVX-512F (asserted just above); the asserts at the top
                // cover `kc * 8` values of `a` and `kc * 32` of `b`, and the caller vouches
                // for 8 rows of 32 at `c_stride` in `c`: every address the kernel forms.
                unsafe { x86::avx512_tile(kc, a.as_ptr(), b.as_ptr(), c, c_stride, accumulate) }
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!("gemm kernel: {self:?} exists only on x86_64"),
        }
    }
}

const PORTABLE_MR: usize = Kernel::Portable.mr();
const PORTABLE_NR: usize = Kernel::Portable.nr();

/// # Safety
/// `c` points to `PORTABLE_MR` rows of `PORTABLE_NR` writable values `c_stride` apart that
/// nothing else uses during the call.
unsafe fn portable_tile(
    kc: usize,
    a: &[f32],
    b: &[f32],
    c: *mut f32,
    c_stride: usize,
    accumulate: bool,
) {
    let mut acc = [[0f32; PORTABLE_NR]; PORTABLE_MR];
    for (a_step, b_step) in a
        .chunks_exact(PORTABLE_MR)
        .zip(b.chunks_exact(PORTABLE_NR))
        .take(kc)
    {
        for (acc_row, &x) in acc.iter_mut().zip(a_step) {
            for (v, &y) in acc_row.iter_mut().zip(b_step) {
                *v = x.mul_add(y, *v);
            }
        }
    }
    for (i, acc_row) in acc.iter().enumerate() {
        // SAFETY: row `i < PORTABLE_MR` of the tile the caller vouches for.
        let out = unsafe { std::slice::from_raw_parts_mut(c.add(i * c_stride), PORTABLE_NR) };
        for (o, &v) in out.iter_mut().zip(acc_row) {
            *o = if accumulate { *o + v } else { v };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// 6 x 16 tile with AVX2+FMA: 12 accumulators, 2 loads of `b` and 6 broadcasts of `a`
    /// per step.
    ///
    /// # Safety
    /// The CPU supports AVX2 and FMA; `a` points to `kc * 6` readable values, `b` to
    /// `kc * 16`, and `c` to 6 rows of 16 writable values `c_stride` apart.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn avx2_tile(
        kc: usize,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        c_stride: usize,
        accumulate: bool,
    ) {
        const MR: usize = 6;
        let mut acc = [[_mm256_setzero_ps(); 2]; MR];
        for p in 0..kc {
            // SAFETY: `p < kc`, so these reads stay in the panels the caller vouches for.
            unsafe {
                let b0 = _mm256_loadu_ps(b.add(p * 16));
                let b1 = _mm256_loadu_ps(b.add(p * 16 + 8));
                for (i, acc_row) in acc.iter_mut().enumerate() {
                    let x = _mm256_broadcast_ss(&*a.add(p * MR + i));
                    acc_row[0] = _mm256_fmadd_ps(x, b0, acc_row[0]);
                    acc_row[1] = _mm256_fmadd_ps(x, b1, acc_row[1]);
                }
            }
        }
        for (i, acc_row) in acc.iter().enumerate() {
            for (h, &v) in acc_row.iter().enumerate() {
                // SAFETY: row `i < 6`, columns `h * 8..h * 8 + 8 <= 16`: inside the tile.
                unsafe {
                    let dst = c.add(i * c_stride + h * 8);
                    let v = if accumulate {
                        _mm256_add_ps(_mm256_loadu_ps(dst), v)
                    } else {
                        v
                    };
                    _mm256_storeu_ps(dst, v);
                }
            }
        }
    }

    /// 8 x 32 tile with AVX-512F: 16 accumulators, 2 loads of `b` and 8 broadcasts of `a`
    /// per step.
    ///
    /// # Safety
    /// The CPU supports AVX-512F; `a` points to `kc * 8` readable values, `b` to `kc * 32`,
    /// and `c` to 8 rows of 32 writable values `c_stride` apart.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avx512_tile(
        kc: usize,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        c_stride: usize,
        accumulate: bool,
    ) {
        const MR: usize = 8;
        let mut acc = [[_mm512_setzero_ps(); 2]; MR];
        for p in 0..kc {
            // SAFETY: `p < kc`, so these reads stay in the panels the caller vouches for.
            unsafe {
                let b0 = _mm512_loadu_ps(b.add(p * 32));
                let b1 = _mm512_loadu_ps(b.add(p * 32 + 16));
                for (i, acc_row) in acc.iter_mut().enumerate() {
                    let x = _mm512_set1_ps(*a.add(p * MR + i));
                    acc_row[0] = _mm512_fmadd_ps(x, b0, acc_row[0]);
                    acc_row[1] = _mm512_fmadd_ps(x, b1, acc_row[1]);
                }
            }
        }
        for (i, acc_row) in acc.iter().enumerate() {
            for (h, &v) in acc_row.iter().enumerate() {
                // SAFETY: row `i < 8`, columns `h * 16..h * 16 + 16 <= 32`: inside the tile.
                unsafe {
                    let dst = c.add(i * c_stride + h * 16);
                    let v = if accumulate {
                        _mm512_add_ps(_mm512_loadu_ps(dst), v)
                    } else {
                        v
                    };
                    _mm512_storeu_ps(dst, v);
                }
            }
        }
    }
}
