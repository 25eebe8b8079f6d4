//! PyTorch's CPU random numbers: the mt19937 default generator behind `torch.manual_seed`, and
//! the uniform, normal, integer, permutation, bernoulli, exponential and multinomial kernels
//! drawing from it in ATen's order, so the same seed gives PyTorch 2.x's values.
//!
//! What each piece follows: ATen's sources, and where torch 2.15 differs from the sources read
//! (the 24-bit half/bfloat16 uniforms, the `to` rounding rule, the 2^28 switch, the half and
//! bfloat16 normal blocks, the fused multiply-adds) its observed output, all checked against
//! torch 2.15 on x86-64 by tests/fixtures/random/generate.py and `random_ops_match_pytorch` in
//! crates/ferrojit-conformance/tests/ops_nn.rs:
//!
//! - [`Generator`]: `at::mt19937` (core/MT19937RNGEngine.h) seeded with the low 32 bits of the
//!   seed; `random()` is one tempered 32-bit output, `random64()` two of them, the first in the
//!   high half (CPUGeneratorImpl.cpp). Seeding clears the cached normal sample.
//! - Uniform floats (core/TransformationHelper.h `uniform_real`): float, half and bfloat16 take
//!   the low 24 bits of `random()` times 2^-24, double the low 53 bits of `random64()` times
//!   2^-53; `from + x * (to - from)` is one fused multiply-add (the x86 wheel is built with FMA
//!   contraction) in float (double for double), rounded to the dtype, and a result that rounds
//!   up to `to` becomes `from`.
//! - Normals (native/cpu/DistributionTemplates.h `normal_kernel`): a contiguous tensor of at least
//!   16 elements is filled with uniforms, then transformed 16 at a time by Box-Muller (element
//!   `j` and `j + 8` of each block share a pair), and when the size is not a multiple of 16 the
//!   last 16 elements are redrawn and transformed again. Float uses the AVX2 kernel's Cephes
//!   log/sin/cos polynomials (native/cpu/avx_mathfun.h), reproduced here lane by lane with the
//!   same fused multiply-adds; half and bfloat16 go through that float kernel too but draw
//!   uniforms only for whole blocks before the redrawn tail; double uses libm's log/cos/sin.
//!   Smaller or strided tensors use `normal_distribution<double>` per element (two 53-bit
//!   uniforms, `sqrt(-2 log1p(-u2))` times cos/sin of `2 pi u1`), whose sine half is cached in
//!   the generator for the next normal draw, across calls.
//! - Integers: `random_(from, to)` (core/DistributionsHelper.h `uniform_int_from_to`) is
//!   `(draw % range) + from`, the draw being `random64()` once the range reaches 2^28 and
//!   `random()` below, for every dtype (releases before 2.x switched at 2^32, and only for
//!   64-bit and float dtypes). For floating dtypes `from` and `to` are first moved inward to
//!   values the dtype holds (native/DistributionTemplates.h `update_from`, `update_to`).
//!   `randperm` (native/TensorFactories.cpp) swaps element `i` with `i + random() % (n - i)`
//!   for n below 2^32 / 20, and above runs the inside-out shuffle with `random64() % (i + 1)`.
//! - Bernoulli: `bernoulli_(p)` compares a 53-bit uniform with `p` per element; `bernoulli(p)` with
//!   a tensor of probabilities uses 24-bit float uniforms unless the probabilities are double.
//!   The MKL stream kernel PyTorch has for `bernoulli_(p)` is compiled only into Meta's internal
//!   builds (`FBCODE_CAFFE2`); the public x86 wheel draws from this generator, as here.
//! - Exponential (core/DistributionsHelper.h `exponential_distribution<double>`,
//!   core/TransformationHelper.h `exponential`): one 53-bit uniform `u` per element and
//!   `-1 / lambda * log1p(-u)` in double, cast to the dtype, for every float dtype. PyTorch's
//!   MKL `vRngExponential` kernel is disabled in every build since pytorch issue 132395
//!   (`#if (... || 1)` in native/cpu/DistributionKernels.cpp); the generator confirms that
//!   the wheel takes two 32-bit draws per element and matches this formula with glibc's log1p.
//! - Multinomial (native/Distributions.cpp `multinomial_out`): without replacement or for one
//!   sample, `argmax`/`topk` of `p / q` with `q = empty_like(p).exponential_(1)`; with
//!   replacement, native/cpu/MultinomialKernel.cpp's cumulative sums (double for double
//!   weights, float otherwise) searched with one 53-bit uniform per sample.
//!
//! `torch.Generator` objects are [`SharedGenerator`]s: a kernel draws from the one a
//! [`GeneratorScope`] entered on its thread (an op's `generator=` argument), else from the
//! default generator.
//!
//! Elements are drawn in the order PyTorch's TensorIterator walks the tensor: memory order for
//! dense tensors, strides sorted innermost-first otherwise. libm's double log/cos/sin/log1p
//! (normals of double, normals of any dtype on the per-element path, and exponentials) come
//! from the platform, so they match PyTorch bit for bit on the same C library and to within an
//! ulp or two elsewhere.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::display::format_g;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Result, TensorError};
use crate::macros::dispatch_dtype;
use crate::shape::{check_allocation, checked_numel, contiguous_strides};
use crate::storage::Storage;
use crate::tensor::Tensor;

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

// ----- the generator ----------------------------------------------------------------------

const MT_N: usize = 624;
const MT_M: usize = 397;
const MT_MATRIX_A: u32 = 0x9908_b0df;
const MT_UPPER: u32 = 0x8000_0000;
const MT_LOWER: u32 = 0x7fff_ffff;

/// The seed PyTorch's generators historically start from (`c10::detail::default_rng_seed_val`).
/// PyTorch now seeds its default CPU generator from the OS at startup; ferrojit keeps this
/// fixed value so unseeded runs are reproducible.
pub const DEFAULT_SEED: u64 = 67_280_421_310_721;

/// PyTorch's CPU generator: a 32-bit Mersenne Twister plus the cached second sample of the last
/// double Box-Muller pair.
#[derive(Clone)]
pub struct Generator {
    state: [u32; MT_N],
    /// Outputs left before the next twist (1 right after seeding, as in ATen).
    left: usize,
    next: usize,
    seed: u64,
    next_double_normal: Option<f64>,
}

impl std::fmt::Debug for Generator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator")
            .field("seed", &self.seed)
            .field("left", &self.left)
            .field("next", &self.next)
            .field("next_double_normal", &self.next_double_normal)
            .finish_non_exhaustive()
    }
}

impl Generator {
    /// A generator seeded like `torch.Generator().manual_seed(seed)`: only the low 32 bits of
    /// the seed reach the Mersenne Twister, but the whole seed is remembered.
    pub fn new(seed: u64) -> Generator {
        let mut state = [0u32; MT_N];
        state[0] = seed as u32;
        for j in 1..MT_N {
            let prev = state[j - 1];
            state[j] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(j as u32);
        }
        Generator {
            state,
            left: 1,
            next: 0,
            seed,
            next_double_normal: None,
        }
    }

    /// The seed this generator was last seeded with.
    pub fn initial_seed(&self) -> u64 {
        self.seed
    }

    fn twist(&mut self) {
        let s = &mut self.state;
        for i in 0..MT_N {
            let following = s[(i + 1) % MT_N];
            let y = (s[i] & MT_UPPER) | (following & MT_LOWER);
            let mag = if following & 1 == 1 { MT_MATRIX_A } else { 0 };
            s[i] = s[(i + MT_M) % MT_N] ^ (y >> 1) ^ mag;
        }
        self.left = MT_N;
        self.next = 0;
    }

    /// One tempered 32-bit output (`CPUGeneratorImpl::random`).
    pub fn random(&mut self) -> u32 {
        self.left -= 1;
        if self.left == 0 {
            self.twist();
        }
        let mut y = self.state[self.next];
        self.next += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// Two outputs, the first in the high half (`CPUGeneratorImpl::random64`).
    pub fn random64(&mut self) -> u64 {
        let high = u64::from(self.random());
        let low = u64::from(self.random());
        (high << 32) | low
    }

    /// A float in [0, 1) from the low 24 bits of one output.
    pub fn uniform_f32(&mut self) -> f32 {
        (self.random() & 0x00ff_ffff) as f32 * (1.0 / 16_777_216.0)
    }

    /// A double in [0, 1) from the low 53 bits of two outputs.
    pub fn uniform_f64(&mut self) -> f64 {
        (self.random64() & ((1u64 << 53) - 1)) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// A standard normal from `at::normal_distribution<double>`: Box-Muller on two 53-bit
    /// uniforms, returning the cosine half and caching the sine half for the next call.
    pub fn normal_f64(&mut self) -> f64 {
        if let Some(cached) = self.next_double_normal.take() {
            return cached;
        }
        let u1 = self.uniform_f64();
        let u2 = self.uniform_f64();
        let radius = (-2.0 * (-u2).ln_1p()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        self.next_double_normal = Some(radius * theta.sin());
        radius * theta.cos()
    }

    /// An exponential sample from `at::exponential_distribution<double>`: one 53-bit uniform
    /// `u`, then `-1 / lambda * log1p(-u)` (the CPU branch of `transformation::exponential`),
    /// in double whatever the tensor's dtype. `u == 0` gives `+0`, which PyTorch keeps.
    pub fn exponential_f64(&mut self, lambda: f64) -> f64 {
        let u = self.uniform_f64();
        (-1.0 / lambda) * (-u).ln_1p()
    }

    /// A uniform integer in `[low, high)` (`high > low`), drawn as `random_(low, high)` draws
    /// for an int64 tensor.
    pub fn next_range(&mut self, low: i64, high: i64) -> i64 {
        let range = (high as u64).wrapping_sub(low as u64);
        random_from_to(self, range, low)
    }

    /// Same as [`Generator::random64`].
    pub fn next_u64(&mut self) -> u64 {
        self.random64()
    }

    /// Same as [`Generator::uniform_f64`].
    pub fn next_f64(&mut self) -> f64 {
        self.uniform_f64()
    }

    /// Same as [`Generator::normal_f64`].
    pub fn next_normal(&mut self) -> f64 {
        self.normal_f64()
    }
}

/// `uniform_int_from_to_distribution`: `(draw % range) + base`, wrapping like the C++, where
/// the draw is `random64()` once the range reaches 2^28 (keeping the modulo skew small) and
/// `random()` below.
pub(crate) fn random_from_to(g: &mut Generator, range: u64, base: i64) -> i64 {
    let draw = if range >= 1 << 28 {
        g.random64()
    } else {
        u64::from(g.random())
    };
    (draw % range.max(1)).wrapping_add(base as u64) as i64
}

fn global_generator() -> &'static Mutex<Generator> {
    static GLOBAL: OnceLock<Mutex<Generator>> = OnceLock::new();
    GLOBAL.get_or_init(|| Mutex::new(Generator::new(DEFAULT_SEED)))
}

/// `torch.manual_seed(seed)`: reseeds the default generator.
pub fn manual_seed(seed: u64) {
    *global_generator()
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Generator::new(seed);
}

/// A seed nobody chose (`c10::detail::getNonDeterministicRandom` on the CPU): 64 bits from
/// `/dev/urandom`, or, where that cannot be read, the clock hashed with the standard
/// library's randomly keyed hasher.
pub fn nondeterministic_seed() -> u64 {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_ok() {
        return u64::from_ne_bytes(bytes);
    }
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(now);
    hasher.finish()
}

/// `torch.seed()`: reseeds the default generator with a non-deterministic seed and returns
/// it, so `manual_seed` with that value replays the draws that follow.
pub fn seed() -> u64 {
    let seed = nondeterministic_seed();
    manual_seed(seed);
    seed
}

/// `Generator.seed()` (`aten::seed`): reseeds `generator` like [`seed`] does the default one.
pub fn reseed(generator: &SharedGenerator) -> u64 {
    let seed = nondeterministic_seed();
    *generator.lock().unwrap_or_else(PoisonError::into_inner) = Generator::new(seed);
    seed
}

/// The default generator's seed.
pub fn initial_seed() -> u64 {
    global_generator()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .initial_seed()
}

/// A `torch.Generator` object: shared by every handle on it, as in PyTorch.
pub type SharedGenerator = Arc<Mutex<Generator>>;

/// `torch.Generator(seed=seed)`: a new generator, independent of the default one.
pub fn new_generator(seed: u64) -> SharedGenerator {
    Arc::new(Mutex::new(Generator::new(seed)))
}

thread_local! {
    /// The generator a `generator=` argument names for the kernel running on this thread
    /// (set by [`with_generator`]); `None` means the default generator.
    static EXPLICIT_GENERATOR: RefCell<Option<SharedGenerator>> = const { RefCell::new(None) };
}

/// While alive, the kernels called on this thread draw from the generator it was entered
/// with (ATen's `generator=` argument); dropping it restores the previous choice.
#[must_use = "the generator applies only while the scope is alive"]
pub struct GeneratorScope {
    previous: Option<Option<SharedGenerator>>,
}

impl GeneratorScope {
    /// Draws from `generator` until the scope is dropped; `None` leaves the choice as it is
    /// (the default generator, unless an outer scope chose another).
    pub fn enter(generator: Option<&SharedGenerator>) -> GeneratorScope {
        let previous = generator.map(|generator| {
            EXPLICIT_GENERATOR.with(|slot| slot.borrow_mut().replace(generator.clone()))
        });
        GeneratorScope { previous }
    }
}

impl Drop for GeneratorScope {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            EXPLICIT_GENERATOR.with(|slot| *slot.borrow_mut() = previous);
        }
    }
}

/// Runs `f` with the kernels it calls drawing from `generator` (the default generator when
/// `None`). Draws happen on the calling thread, so a thread-local choice covers every kernel.
pub fn with_generator<R>(generator: Option<&SharedGenerator>, f: impl FnOnce() -> R) -> R {
    let _scope = GeneratorScope::enter(generator);
    f()
}

/// Runs `f` with the generator in effect locked: the one [`with_generator`] chose, else the
/// default generator.
pub fn with_default_generator<R>(f: impl FnOnce(&mut Generator) -> R) -> R {
    if let Some(explicit) = EXPLICIT_GENERATOR.with(|slot| slot.borrow().clone()) {
        let mut guard = explicit.lock().unwrap_or_else(PoisonError::into_inner);
        return f(&mut guard);
    }
    let mut guard = global_generator()
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    f(&mut guard)
}

// ----- AVX2 Box-Muller (float) --------------------------------------------------------------

// Cephes constants as avx_mathfun.h spells them: double literals narrowed to float.
const MIN_NORM_POS: f32 = f32::MIN_POSITIVE;
const SQRT_HALF: f32 = std::f64::consts::FRAC_1_SQRT_2 as f32;
const LOG_P: [f32; 9] = [
    7.037_683_629_2e-2_f64 as f32,
    -1.151_461_031_0e-1_f64 as f32,
    1.167_699_874_0e-1_f64 as f32,
    -1.242_014_084_6e-1_f64 as f32,
    1.424_932_278_7e-1_f64 as f32,
    -1.666_805_766_5e-1_f64 as f32,
    2.000_071_476_5e-1_f64 as f32,
    -2.499_999_399_3e-1_f64 as f32,
    3.333_333_117_4e-1_f64 as f32,
];
const LOG_Q1: f32 = -2.121_944_40e-4_f64 as f32;
const LOG_Q2: f32 = 0.693_359_375_f64 as f32;
const FOUR_OVER_PI: f32 = 1.273_239_544_735_16_f64 as f32;
const MINUS_DP: [f32; 3] = [
    -0.785_156_25_f64 as f32,
    -2.418_756_484_985_351_6e-4_f64 as f32,
    -3.774_894_977_445_941e-8_f64 as f32,
];
const SIN_P: [f32; 3] = [
    -1.951_529_589_1e-4_f64 as f32,
    8.332_160_873_6e-3_f64 as f32,
    -1.666_665_461_1e-1_f64 as f32,
];
const COS_P: [f32; 3] = [
    2.443_315_711_809_948e-5_f64 as f32,
    -1.388_731_625_493_765e-3_f64 as f32,
    4.166_664_568_298_827e-2_f64 as f32,
];
const TWO_PI_F32: f32 = (2.0 * std::f64::consts::PI) as f32;

/// One lane of `log256_ps`. Every multiply whose only use is an add is fused, as GCC contracts
/// the intrinsics in PyTorch's AVX2 build.
fn avx2_log(x: f32) -> f32 {
    let invalid = x <= 0.0;
    // _mm256_max_ps(x, m) returns m unless x > m (so NaN becomes m too).
    let x = if x > MIN_NORM_POS { x } else { MIN_NORM_POS };
    let bits = x.to_bits();
    let mut e = ((bits >> 23) as i32 - 0x7f) as f32;
    let mut m = f32::from_bits((bits & !0x7f80_0000) | 0.5f32.to_bits());
    e += 1.0;
    let below = m < SQRT_HALF;
    let tmp = if below { m } else { 0.0 };
    m -= 1.0;
    e -= if below { 1.0 } else { 0.0 };
    m += tmp;
    let z = m * m;
    let mut y = LOG_P[0];
    for &p in &LOG_P[1..] {
        y = y.mul_add(m, p);
    }
    y *= m;
    y = y.mul_add(z, e * LOG_Q1);
    y = (-z).mul_add(0.5, y);
    let r = e.mul_add(LOG_Q2, m + y);
    if invalid {
        f32::NAN
    } else {
        r
    }
}

/// One lane of `sincos256_ps`: `(sin x, cos x)`.
fn avx2_sincos(x: f32) -> (f32, f32) {
    let mut sign_sin = x.to_bits() & 0x8000_0000;
    let mut x = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    let scaled = x * FOUR_OVER_PI;
    // _mm256_cvttps_epi32: truncation, 0x80000000 when out of range.
    let mut j = if scaled < 2_147_483_648.0 {
        scaled as i32
    } else {
        i32::MIN
    };
    j = j.wrapping_add(1) & !1;
    let y = j as f32;
    let swap_sin = ((j & 4) as u32) << 29;
    let poly_sin = j & 2 == 0;
    for &dp in &MINUS_DP {
        x = y.mul_add(dp, x);
    }
    let sign_cos = ((!j.wrapping_sub(2) & 4) as u32) << 29;
    sign_sin ^= swap_sin;
    let z = x * x;
    let mut c = COS_P[0].mul_add(z, COS_P[1]);
    c = c.mul_add(z, COS_P[2]);
    c *= z;
    c = c.mul_add(z, -(z * 0.5));
    c += 1.0;
    let mut s = SIN_P[0].mul_add(z, SIN_P[1]);
    s = s.mul_add(z, SIN_P[2]);
    s *= z;
    s = s.mul_add(x, x);
    // The kernel blends with masks and adds: sin = (mask ? 0 : c) + (mask ? s : 0), and
    // cos = (c - (mask ? 0 : c)) + (s - (mask ? s : 0)).
    let (sin_part_c, sin_part_s) = if poly_sin { (0.0, s) } else { (c, 0.0) };
    let sin = sin_part_c + sin_part_s;
    let cos = (c - sin_part_c) + (s - sin_part_s);
    (
        f32::from_bits(sin.to_bits() ^ sign_sin),
        f32::from_bits(cos.to_bits() ^ sign_cos),
    )
}

/// `normal_fill_16_AVX2`: Box-Muller on one block of 16 uniforms.
fn normal_block_f32(block: &mut [f32], mean: f32, std: f32) {
    for j in 0..8 {
        let u1 = 1.0 - block[j];
        let u2 = block[j + 8];
        let radius = (-2.0 * avx2_log(u1)).sqrt();
        let (sin, cos) = avx2_sincos(TWO_PI_F32 * u2);
        block[j] = (radius * cos).mul_add(std, mean);
        block[j + 8] = (radius * sin).mul_add(std, mean);
    }
}

/// `normal_fill_16<double>` (with the final multiply-add fused, as compiled).
fn normal_block_f64(block: &mut [f64], mean: f64, std: f64) {
    for j in 0..8 {
        let u1 = 1.0 - block[j];
        let u2 = block[j + 8];
        let radius = (-2.0 * u1.ln()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u2;
        block[j] = (radius * theta.cos()).mul_add(std, mean);
        block[j + 8] = (radius * theta.sin()).mul_add(std, mean);
    }
}

/// Block Box-Muller over `n >= 16` values, redrawing and recomputing the last 16 when `n` is
/// not a multiple of 16. `draw_all` draws uniforms for every element up front (float and
/// double); otherwise only for whole blocks (PyTorch's half and bfloat16 path).
fn normal_fill<V: Copy + Default>(
    g: &mut Generator,
    n: usize,
    draw_all: bool,
    mut uniform: impl FnMut(&mut Generator) -> V,
    mut transform: impl FnMut(&mut [V]),
) -> Vec<V> {
    let whole = n / 16 * 16;
    let first = if draw_all { n } else { whole };
    let mut data: Vec<V> = (0..first).map(|_| uniform(g)).collect();
    data.resize(n, V::default());
    for block in data[..whole].chunks_exact_mut(16) {
        transform(block);
    }
    if !n.is_multiple_of(16) {
        let tail = &mut data[n - 16..];
        for v in tail.iter_mut() {
            *v = uniform(g);
        }
        transform(tail);
    }
    data
}

// ----- iteration order and layouts ----------------------------------------------------------

/// PyTorch's `is_non_overlapping_and_dense` for a geometry.
fn non_overlapping_and_dense(sizes: &[usize], strides: &[usize]) -> bool {
    let mut dims: Vec<usize> = (0..sizes.len()).filter(|&d| sizes[d] >= 2).collect();
    dims.sort_by_key(|&d| strides[d]);
    let mut required = 1usize;
    for d in dims {
        if strides[d] != required {
            return false;
        }
        required = required.saturating_mul(sizes[d]);
    }
    true
}

/// The dims innermost first, ordered as TensorIterator's `reorder_dimensions` (and c10's
/// `infer_dense_strides`) order one tensor: an insertion sort by stride that skips ambiguous
/// comparisons (a zero stride, or equal strides with the smaller size first).
fn stride_permutation(sizes: &[usize], strides: &[usize]) -> Vec<usize> {
    let ndim = sizes.len();
    let mut perm: Vec<usize> = (0..ndim).rev().collect();
    let should_swap = |d0: usize, d1: usize| -> i32 {
        let (s0, s1) = (strides[d0], strides[d1]);
        if s0 == 0 || s1 == 0 {
            0
        } else if s0 < s1 {
            -1
        } else if s0 > s1 || sizes[d0] > sizes[d1] {
            1
        } else {
            0
        }
    };
    for i in 1..ndim {
        let mut dim1 = i;
        for dim0 in (0..i).rev() {
            match should_swap(perm[dim0], perm[dim1]) {
                c if c > 0 => {
                    perm.swap(dim0, dim1);
                    dim1 = dim0;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
    perm
}

/// The logical (row-major) index of each element in the order PyTorch's kernels visit a tensor
/// of this geometry, or `None` when that is the logical order itself.
fn iteration_order(sizes: &[usize], strides: &[usize]) -> Option<Vec<usize>> {
    let ndim = sizes.len();
    let numel: usize = sizes.iter().product();
    let identity_strides = contiguous_strides(sizes);
    let contiguous = sizes
        .iter()
        .zip(strides.iter().zip(&identity_strides))
        .all(|(&size, (&stride, &expected))| size == 1 || stride == expected);
    if contiguous || numel <= 1 {
        return None;
    }
    let perm = if non_overlapping_and_dense(sizes, strides) {
        // TensorIterator's fast setup walks dense tensors in memory order.
        let mut dims: Vec<usize> = (0..ndim).collect();
        dims.sort_by_key(|&d| (sizes[d] < 2, strides[d]));
        dims
    } else {
        stride_permutation(sizes, strides)
    };
    let mut order = Vec::with_capacity(numel);
    let mut index = vec![0usize; ndim];
    let mut logical = 0usize;
    for _ in 0..numel {
        order.push(logical);
        for &d in &perm {
            index[d] += 1;
            logical += identity_strides[d];
            if index[d] < sizes[d] {
                break;
            }
            logical -= identity_strides[d] * sizes[d];
            index[d] = 0;
        }
    }
    Some(order)
}

/// Strides `empty_like(t)` gives (preserve format): `t`'s own when it is non-overlapping and
/// dense, otherwise dense strides in the same dim order.
fn like_strides(sizes: &[usize], strides: &[usize]) -> Vec<usize> {
    if non_overlapping_and_dense(sizes, strides) {
        return strides.to_vec();
    }
    let perm = stride_permutation(sizes, strides);
    let mut out = vec![0usize; sizes.len()];
    let mut next = 1usize;
    for &d in &perm {
        out[d] = next;
        next = next.saturating_mul(sizes[d].max(1));
    }
    out
}

/// Values drawn in visiting order, rearranged into logical order.
fn to_logical<V: Copy + Default>(values: Vec<V>, order: Option<Vec<usize>>) -> Vec<V> {
    match order {
        None => values,
        Some(order) => {
            let mut out = vec![V::default(); values.len()];
            for (value, index) in values.into_iter().zip(order) {
                out[index] = value;
            }
            out
        }
    }
}

/// Writes values drawn in visiting order into `target`.
fn write_drawn<T: Element + Default>(target: &Tensor, values: Vec<T>) -> Result<Tensor> {
    let order = iteration_order(target.sizes(), target.strides());
    let logical = to_logical(values, order);
    target.copy_(&Tensor::from_values(logical, target.sizes()))
}

pub(crate) fn require_float_dtype(dtype: DType, op: &'static str) -> Result<()> {
    if dtype.is_floating_point() {
        Ok(())
    } else {
        Err(TensorError::NotImplementedForDType { op, dtype })
    }
}

// ----- kernels ------------------------------------------------------------------------------

/// `uniform_kernel`: `n` values of `T` in [from, to).
fn uniform_values<T: Element>(g: &mut Generator, n: usize, from: f64, to: f64) -> Vec<T> {
    let (from_t, to_t) = (T::from_f64(from), T::from_f64(to));
    let keep_below_to = |r: T| if r == to_t { from_t } else { r };
    if T::DTYPE == DType::Float64 {
        let span = to - from;
        (0..n)
            .map(|_| keep_below_to(T::from_f64(g.uniform_f64().mul_add(span, from))))
            .collect()
    } else {
        let (from_f, to_f) = (from as f32, to as f32);
        let span = to_f - from_f;
        (0..n)
            .map(|_| {
                let v = g.uniform_f32().mul_add(span, from_f);
                keep_below_to(T::from_f64(f64::from(v)))
            })
            .collect()
    }
}

/// `normal_kernel` for a tensor of `n` elements; `contiguous` picks the block path (n >= 16).
fn normal_values<T: Element>(
    g: &mut Generator,
    n: usize,
    contiguous: bool,
    mean: f64,
    std: f64,
) -> Vec<T> {
    if n >= 16 && contiguous {
        match T::DTYPE {
            DType::Float64 => {
                return normal_fill(g, n, true, Generator::uniform_f64, |b| {
                    normal_block_f64(b, mean, std)
                })
                .into_iter()
                .map(T::from_f64)
                .collect();
            }
            DType::Float32 | DType::Float16 | DType::BFloat16 => {
                let (mean, std) = (mean as f32, std as f32);
                let draw_all = T::DTYPE == DType::Float32;
                return normal_fill(g, n, draw_all, Generator::uniform_f32, |b| {
                    normal_block_f32(b, mean, std)
                })
                .into_iter()
                .map(|v| T::from_f64(f64::from(v)))
                .collect();
            }
            _ => {}
        }
    }
    (0..n)
        .map(|_| T::from_f64(g.normal_f64().mul_add(std, mean)))
        .collect()
}

/// `torch.rand(sizes)`: uniform in [0, 1).
pub fn rand(sizes: &[usize], dtype: DType) -> Result<Tensor> {
    let t = empty(sizes, dtype)?;
    t.uniform_(0.0, 1.0)
}

/// `torch.randn(sizes)`: standard normal.
pub fn randn(sizes: &[usize], dtype: DType) -> Result<Tensor> {
    let t = empty(sizes, dtype)?;
    t.normal_(0.0, 1.0)
}

/// `torch.rand_like(t, dtype)`: laid out like `t` (so a transposed `t` is filled in memory order).
pub fn rand_like(t: &Tensor, dtype: DType) -> Result<Tensor> {
    empty_like(t, dtype)?.uniform_(0.0, 1.0)
}

/// `torch.randn_like(t, dtype)`: laid out like `t`, which also decides the normal path taken.
pub fn randn_like(t: &Tensor, dtype: DType) -> Result<Tensor> {
    empty_like(t, dtype)?.normal_(0.0, 1.0)
}

fn empty(sizes: &[usize], dtype: DType) -> Result<Tensor> {
    Tensor::zeros(sizes, dtype)
}

pub(crate) fn empty_like(t: &Tensor, dtype: DType) -> Result<Tensor> {
    let numel = checked_numel(t.sizes())?;
    check_allocation(numel, dtype)?;
    let strides = like_strides(t.sizes(), t.strides());
    Ok(Tensor::from_parts(
        Storage::zeros(dtype, numel),
        0,
        t.sizes().to_vec(),
        strides,
    ))
}

/// The name PyTorch's range checks print for a dtype (its C++ type name).
fn cpp_type_name(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "bool",
        DType::UInt8 => "unsigned char",
        DType::Int8 => "signed char",
        DType::Int16 => "short",
        DType::Int32 => "int",
        DType::Int64 => "long",
        DType::Float16 => "c10::Half",
        DType::BFloat16 => "c10::BFloat16",
        DType::Float32 => "float",
        DType::Float64 => "double",
        DType::ComplexFloat => "c10::complex<float>",
        DType::ComplexDouble => "c10::complex<double>",
    }
}

/// `check_from_to_in_range`: `from` and `to - 1` must fit the dtype.
pub(crate) fn check_random_bounds(from: i64, to_inclusive: i64, dtype: DType) -> Result<()> {
    let (min, max): (f64, f64) = match dtype {
        DType::Bool => (0.0, 1.0),
        DType::UInt8 => (0.0, f64::from(u8::MAX)),
        DType::Int8 => (f64::from(i8::MIN), f64::from(i8::MAX)),
        DType::Int16 => (f64::from(i16::MIN), f64::from(i16::MAX)),
        DType::Int32 => (f64::from(i32::MIN), f64::from(i32::MAX)),
        DType::Float16 => (-65504.0, 65504.0),
        DType::BFloat16 => (-3.389_531_389_251_535_5e38, 3.389_531_389_251_535_5e38),
        DType::Float32 => (f64::from(f32::MIN), f64::from(f32::MAX)),
        _ => return Ok(()),
    };
    for (value, name) in [(from, "from"), (to_inclusive, "to - 1")] {
        let v = value as f64;
        if v < min || v > max {
            return Err(invalid(format!(
                "{name} is out of bounds for {}",
                cpp_type_name(dtype)
            )));
        }
    }
    Ok(())
}

/// Integer values into a tensor of `dtype` (C++ casts: wrapping, floats via float).
pub(crate) fn integer_tensor(values: Vec<i64>, sizes: &[usize], dtype: DType) -> Tensor {
    dispatch_dtype!(dtype, T => Tensor::from_values(
        values.into_iter().map(<T as Element>::from_i64).collect::<Vec<T>>(),
        sizes,
    ))
}

/// The mantissa digits of a floating dtype (`std::numeric_limits<scalar_t>::digits`).
pub(crate) fn float_digits(dtype: DType) -> Option<u32> {
    match dtype {
        DType::Float16 => Some(11),
        DType::BFloat16 => Some(8),
        DType::Float32 => Some(24),
        DType::Float64 => Some(53),
        _ => None,
    }
}

/// `v` cast to a floating dtype and back to int64 (saturating where C++ would overflow).
fn through_float(v: i64, dtype: DType) -> i64 {
    dispatch_dtype!(dtype, T => <T as Element>::from_i64(v).to_f64() as i64)
}

/// `update_from` / `update_to`: when `from + 1` (`to - 1`) does not survive a round trip
/// through the dtype, move the bound inward to a value it holds.
pub(crate) fn update_float_bounds(from: i64, to: i64, digits: u32, dtype: DType) -> (i64, i64) {
    let step = |magnitude: i64| -> i64 {
        let n = (63 - magnitude.unsigned_abs().max(1).leading_zeros()) as i64;
        1i64.checked_shl((n - i64::from(digits) + 1).clamp(0, 62) as u32)
            .unwrap_or(0)
    };
    let mut from = from;
    let from_plus_1 = through_float(from.saturating_add(1), dtype);
    if from_plus_1 < from {
        from = from_plus_1.saturating_add(step(from.saturating_add(1)));
    }
    let mut to = to;
    let to_minus_1 = through_float(to.saturating_sub(1), dtype);
    if to_minus_1 >= to {
        to = to_minus_1.saturating_sub(step(to.saturating_sub(1)));
    }
    (from, to)
}

/// `torch.randint(low, high, sizes)`.
pub fn randint(low: i64, high: i64, sizes: &[usize], dtype: DType) -> Result<Tensor> {
    if high <= low {
        return Err(invalid(format!(
            "random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )));
    }
    let (low, high) = match float_digits(dtype) {
        Some(digits) => {
            let (from, to) = update_float_bounds(low, high, digits, dtype);
            if from >= to {
                return Err(invalid(format!(
                    "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got from={from} >= to={to}"
                )));
            }
            (from, to)
        }
        None => (low, high),
    };
    check_random_bounds(low, high - 1, dtype)?;
    let numel = checked_numel(sizes)?;
    check_allocation(numel, dtype)?;
    let range = (high as u64).wrapping_sub(low as u64);
    let values: Vec<i64> =
        with_default_generator(|g| (0..numel).map(|_| random_from_to(g, range, low)).collect());
    Ok(integer_tensor(values, sizes, dtype))
}

/// `randperm_cpu`'s switch from the 32-bit swap loop to the 64-bit inside-out shuffle.
pub const RANDPERM_LARGE_N: usize = (u32::MAX / 20) as usize;

/// `torch.randperm(n)`: a random permutation of `0..n`, shuffled as PyTorch's CPU kernel does.
pub fn randperm(n: i64, dtype: DType) -> Result<Tensor> {
    if n < 0 {
        return Err(invalid(format!("n must be non-negative, got{n}")));
    }
    let limit: Option<(i64, &str)> = match dtype {
        DType::Float16 => Some((
            (1 << 11) + 1,
            "n cannot be greater than 2049 for Half type.",
        )),
        DType::Float32 => Some((
            (1 << 24) + 1,
            "n cannot be greater than 2^24+1 for Float type.",
        )),
        DType::Float64 => Some((
            (1 << 53) + 1,
            "n cannot be greater than 2^53+1 for Double type.",
        )),
        _ => None,
    };
    if let Some((max, message)) = limit {
        if n > max {
            return Err(invalid(message));
        }
    }
    let n = usize::try_from(n).map_err(|_| TensorError::SizeOverflow)?;
    check_allocation(n, dtype)?;
    check_allocation(n, DType::Int64)?;
    let perm = with_default_generator(|g| randperm_values(g, n));
    Ok(integer_tensor(perm, &[n], dtype))
}

fn randperm_values(g: &mut Generator, n: usize) -> Vec<i64> {
    if n < RANDPERM_LARGE_N {
        let mut perm: Vec<i64> = (0..n as i64).collect();
        for i in 0..n.saturating_sub(1) {
            let z = (u64::from(g.random()) % (n - i) as u64) as usize;
            perm.swap(i, i + z);
        }
        perm
    } else {
        let mut perm = vec![0i64; n];
        for i in 0..n {
            let z = (g.random64() % (i as u64 + 1)) as usize;
            perm[i] = perm[z];
            perm[z] = i as i64;
        }
        perm
    }
}

/// One keep/drop draw per element of a tensor laid out with `strides`, in visiting order,
/// returned in logical order: `bernoulli_(p)` with a 53-bit uniform each.
pub(crate) fn bernoulli_draws(sizes: &[usize], strides: &[usize], p: f64) -> Vec<bool> {
    let n: usize = sizes.iter().product();
    let drawn: Vec<bool> =
        with_default_generator(|g| (0..n).map(|_| g.uniform_f64() < p).collect());
    to_logical(drawn, iteration_order(sizes, strides))
}

/// The layout `empty_like(t)` would give `t`'s shape (for dropout's noise tensor).
pub(crate) fn like_layout(t: &Tensor) -> Vec<usize> {
    like_strides(t.sizes(), t.strides())
}

/// `p / q` in the dtype's arithmetic: double for double, float (then rounded once to the
/// dtype) for float, half and bfloat16, as ATen's CPU `div` computes them.
fn divide_in_dtype<T: Element>(p: T, q: T) -> T {
    if T::DTYPE == DType::Float64 {
        T::from_f64(p.to_f64() / q.to_f64())
    } else {
        T::from_f64(f64::from(p.to_f64() as f32 / q.to_f64() as f32))
    }
}

/// The largest category count `multinomial` accepts (`FLOAT32_MAX_CONSECUTIVE_INT`).
const MULTINOMIAL_MAX_CATEGORIES: usize = 1 << 24;

/// `multinomial_with_replacement_apply` (native/cpu/MultinomialKernel.cpp) for `n_dist` rows
/// of `n_categories` probabilities, accumulated in `F` (double for double inputs, float for
/// the others; `narrow` converts, exactly for values of the input dtype). Rows are checked
/// and sampled one after the other, so a bad row fails after the rows before it drew.
fn multinomial_with_replacement<F>(
    g: &mut Generator,
    probs: &[f64],
    n_dist: usize,
    n_categories: usize,
    n_sample: usize,
    narrow: fn(f64) -> F,
) -> Result<Vec<i64>>
where
    F: Copy + PartialOrd + std::ops::Add<Output = F> + std::ops::Div<Output = F> + Into<f64>,
{
    let (zero, one) = (narrow(0.0), narrow(1.0));
    let mut out = Vec::with_capacity(n_dist * n_sample);
    let mut cumulative = vec![zero; n_categories];
    for i in 0..n_dist {
        let row = &probs[i * n_categories..(i + 1) * n_categories];
        let mut sum = zero;
        for (slot, &p) in cumulative.iter_mut().zip(row) {
            let value = narrow(p);
            // ATen tests `value >= 0` first, which NaN fails too: it is reported as "< 0".
            let wide: f64 = value.into();
            if wide.is_nan() || wide < 0.0 {
                return Err(invalid(
                    "invalid multinomial distribution (encountering probability entry < 0)",
                ));
            }
            if !wide.is_finite() {
                return Err(invalid(
                    "invalid multinomial distribution (encountering probability entry = infinity or NaN)",
                ));
            }
            sum = sum + value;
            *slot = sum;
        }
        // Never NaN: every value added was finite and non-negative.
        if sum.into() <= 0.0 {
            return Err(invalid(
                "invalid multinomial distribution (sum of probabilities <= 0)",
            ));
        }
        for slot in cumulative.iter_mut() {
            *slot = *slot / sum;
        }
        // The last bucket is forced to 1 so that every draw lands somewhere, even when the
        // normalised sum rounds below 1.
        cumulative[n_categories - 1] = one;
        for _ in 0..n_sample {
            let u = g.uniform_f64();
            let (mut left, mut right) = (0usize, n_categories);
            while right > left {
                let mid = left + (right - left) / 2;
                if cumulative[mid].into() < u {
                    left = mid + 1;
                } else {
                    right = mid;
                }
            }
            out.push(left as i64);
        }
    }
    Ok(out)
}

impl Tensor {
    /// `Tensor.uniform_(from, to)`.
    pub fn uniform_(&self, from: f64, to: f64) -> Result<Tensor> {
        require_float_dtype(self.dtype(), "check_uniform_bounds")?;
        if from > to {
            return Err(invalid(format!(
                "uniform_ expects to return a [from, to) range, but found from={from} > to={to}"
            )));
        }
        let n = self.numel();
        if n == 0 {
            return Ok(self.clone());
        }
        dispatch_dtype!(self.dtype(), T => {
            let values: Vec<T> = with_default_generator(|g| uniform_values::<T>(g, n, from, to));
            self.write_values_in_order(values)
        })
    }

    /// `Tensor.normal_(mean, std)`.
    pub fn normal_(&self, mean: f64, std: f64) -> Result<Tensor> {
        require_float_dtype(self.dtype(), "normal_kernel_cpu")?;
        if std < 0.0 {
            return Err(invalid(format!(
                "normal expects std >= 0.0, but found std {std}"
            )));
        }
        let n = self.numel();
        if n == 0 {
            return Ok(self.clone());
        }
        let contiguous = self.is_contiguous();
        dispatch_dtype!(self.dtype(), T => {
            let values: Vec<T> =
                with_default_generator(|g| normal_values::<T>(g, n, contiguous, mean, std));
            self.write_values_in_order(values)
        })
    }

    /// `Tensor.bernoulli_(p)`: each element becomes 1 with probability `p`.
    pub fn bernoulli_scalar_(&self, p: f64) -> Result<Tensor> {
        if !(0.0..=1.0).contains(&p) {
            return Err(invalid(format!(
                "bernoulli_ expects p to be in [0, 1], but got p={p}"
            )));
        }
        let n = self.numel();
        let values: Vec<i64> =
            with_default_generator(|g| (0..n).map(|_| i64::from(g.uniform_f64() < p)).collect());
        dispatch_dtype!(self.dtype(), T => self.write_values_in_order(
            values.into_iter().map(<T as Element>::from_i64).collect::<Vec<T>>()
        ))
    }

    /// `torch.bernoulli(self)`: draws 0/1 with the probabilities in `self` (24-bit float
    /// uniforms, or 53-bit ones when the probabilities are double).
    pub fn bernoulli(&self) -> Result<Tensor> {
        require_float_dtype(self.dtype(), "bernoulli_tensor_cpu_p_")?;
        let p = self.to_f64_vec();
        if p.iter().any(|&v| !(0.0..=1.0).contains(&v)) {
            return Err(invalid(
                "Expected p_in >= 0 && p_in <= 1 to be true, but got false.",
            ));
        }
        let double = self.dtype() == DType::Float64;
        let values: Vec<i64> = with_default_generator(|g| {
            p.iter()
                .map(|&pi| {
                    let hit = if double {
                        g.uniform_f64() < pi
                    } else {
                        g.uniform_f32() < pi as f32
                    };
                    i64::from(hit)
                })
                .collect()
        });
        Ok(integer_tensor(values, self.sizes(), self.dtype()))
    }

    /// `Tensor.exponential_(lambd)`: each element an exponential sample with rate `lambda`,
    /// drawn in double and rounded to the dtype (double to float to half for the half types).
    ///
    /// The public x86 wheel of PyTorch 2.15 takes this mt19937 path for every dtype: its MKL
    /// `vRngExponential` kernel is compiled out (`#if ... || 1` in
    /// native/cpu/DistributionKernels.cpp, pytorch issue 132395).
    pub fn exponential_(&self, lambda: f64) -> Result<Tensor> {
        if lambda.is_nan() || lambda <= 0.0 {
            return Err(invalid(format!(
                "exponential_ expects lambda > 0.0, but found lambda={}",
                format_g(lambda, 6)
            )));
        }
        let n = self.numel();
        if n == 0 {
            return Ok(self.clone());
        }
        if !self.dtype().is_floating_point() {
            return Err(invalid(format!(
                "Exponential distribution is a continuous probability distribution. dtype must be a floating point but you specified {}",
                self.dtype().scalar_type_name()
            )));
        }
        dispatch_dtype!(self.dtype(), T => {
            let values: Vec<T> = with_default_generator(|g| {
                (0..n).map(|_| T::from_f64(g.exponential_f64(lambda))).collect()
            });
            self.write_values_in_order(values)
        })
    }

    /// `torch.exponential(self, lambd)` (the functional form): a copy laid out like `self`
    /// (so a transpose draws in memory order), filled by [`Tensor::exponential_`].
    pub fn exponential(&self, lambda: f64) -> Result<Tensor> {
        empty_like(self, self.dtype())?.exponential_(lambda)
    }

    /// `torch.multinomial(self, n_sample, replacement)`: `n_sample` category indices per row
    /// of the (unnormalised) weights `self`, as int64, drawn as PyTorch 2.15's CPU kernels
    /// draw them (native/Distributions.cpp `multinomial_out`):
    ///
    /// - without replacement, or for one sample: `q = empty_like(self).exponential_(1)`,
    ///   then `self / q` in the dtype, then `argmax` (one sample) or `topk` of the last dim
    ///   (ties, such as zero weights, resolved as libstdc++'s selection does);
    /// - with replacement: per row a cumulative distribution and a binary search per
    ///   53-bit uniform (native/cpu/MultinomialKernel.cpp).
    pub fn multinomial(&self, n_sample: i64, replacement: bool) -> Result<Tensor> {
        self.multinomial_checked(n_sample, replacement, DType::Int64)
    }

    /// `torch.multinomial(..., out=out)`: `out` must be int64; it is written in place when
    /// its shape is the result's, otherwise a tensor of the result's shape is returned.
    pub fn multinomial_out(
        &self,
        n_sample: i64,
        replacement: bool,
        out: &Tensor,
    ) -> Result<Tensor> {
        self.multinomial_checked(n_sample, replacement, out.dtype())?
            .write_into_out(out)
    }

    /// `multinomial_out`'s checks, in ATen's order (the output dtype's after the input's),
    /// then the sampling.
    fn multinomial_checked(
        &self,
        n_sample: i64,
        replacement: bool,
        out_dtype: DType,
    ) -> Result<Tensor> {
        if !(1..=2).contains(&self.dim()) {
            return Err(invalid("prob_dist must be 1 or 2 dim"));
        }
        if !self.dtype().is_floating_point() {
            return Err(invalid(format!(
                "multinomial only supports floating-point dtypes for input, got: {}",
                self.dtype().scalar_type_name()
            )));
        }
        if out_dtype != DType::Int64 {
            return Err(invalid(format!(
                "multinomial expects Long tensor out, got: {}",
                out_dtype.scalar_type_name()
            )));
        }
        if n_sample <= 0 {
            return Err(invalid("cannot sample n_sample <= 0 samples"));
        }
        let n_categories = self.sizes()[self.dim() - 1];
        let n_sample = usize::try_from(n_sample).map_err(|_| TensorError::SizeOverflow)?;
        if !replacement && n_sample > n_categories {
            return Err(invalid(
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement",
            ));
        }
        if n_categories > MULTINOMIAL_MAX_CATEGORIES {
            return Err(invalid("number of categories cannot exceed 2^24"));
        }
        let n_dist = if self.dim() == 2 { self.sizes()[0] } else { 1 };
        let out_sizes: Vec<usize> = if self.dim() == 1 {
            vec![n_sample]
        } else {
            vec![n_dist, n_sample]
        };
        let total = n_dist
            .checked_mul(n_sample)
            .ok_or(TensorError::SizeOverflow)?;
        check_allocation(total, DType::Int64)?;
        if total == 0 {
            return Tensor::zeros(&out_sizes, DType::Int64);
        }
        if !replacement || n_sample == 1 {
            return self.multinomial_by_exponentials(n_sample);
        }
        let probs = self.to_f64_vec();
        let values = with_default_generator(|g| {
            if self.dtype() == DType::Float64 {
                multinomial_with_replacement(g, &probs, n_dist, n_categories, n_sample, |v| v)
            } else {
                multinomial_with_replacement(g, &probs, n_dist, n_categories, n_sample, |v| {
                    v as f32
                })
            }
        })?;
        Ok(Tensor::from_values(values, &out_sizes))
    }

    /// The exponential-race path of `multinomial_out`: `argmax` / `topk` of `self / q` with
    /// `q ~ Exp(1)` drawn in the layout `empty_like(self)` has.
    fn multinomial_by_exponentials(&self, n_sample: usize) -> Result<Tensor> {
        if self.numel() == 0 {
            return Err(invalid(
                "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.",
            ));
        }
        let probs = self.to_f64_vec();
        // `max < inf && min >= 0`: NaN fails both.
        if !probs.iter().all(|p| (0.0..f64::INFINITY).contains(p)) {
            return Err(invalid(
                "probability tensor contains either `inf`, `nan` or element < 0",
            ));
        }
        // A sum of non-negative values is zero exactly when every value is, in any precision.
        let n_categories = self.sizes()[self.dim() - 1];
        if probs
            .chunks(n_categories)
            .any(|row| row.iter().all(|&p| p == 0.0))
        {
            return Err(invalid(
                "invalid multinomial distribution (sum of probabilities <= 0)",
            ));
        }
        let q_strides = like_strides(self.sizes(), self.strides());
        let order = iteration_order(self.sizes(), &q_strides);
        let n = probs.len();
        let ratios = dispatch_dtype!(self.dtype(), T => {
            let drawn: Vec<T> = with_default_generator(|g| {
                (0..n).map(|_| T::from_f64(g.exponential_f64(1.0))).collect()
            });
            let q = to_logical(drawn, order);
            let ratios: Vec<T> = probs
                .iter()
                .zip(q)
                .map(|(&p, q)| divide_in_dtype(T::from_f64(p), q))
                .collect();
            Tensor::from_values(ratios, self.sizes())
        });
        if n_sample == 1 {
            ratios.argmax(Some(-1), true, true)
        } else {
            Ok(ratios.topk(n_sample as i64, -1, true)?.1)
        }
    }

    /// Writes values drawn in PyTorch's visiting order into this tensor.
    pub(crate) fn write_values_in_order<T: Element + Default>(
        &self,
        values: Vec<T>,
    ) -> Result<Tensor> {
        if self.is_contiguous() {
            return self.copy_(&Tensor::from_values(values, self.sizes()));
        }
        write_drawn(self, values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_matches_the_reference_sequence() {
        // The 10000th output of std::mt19937 seeded with 5489 is 4123659995 (C++11 [rand.predef]).
        let mut g = Generator::new(5489);
        let mut last = 0;
        for _ in 0..10_000 {
            last = g.random();
        }
        assert_eq!(last, 4_123_659_995);
    }

    #[test]
    fn seeding_uses_the_low_32_bits_and_keeps_the_seed() {
        let mut a = Generator::new(5);
        let mut b = Generator::new((1 << 32) + 5);
        assert_eq!(a.random(), b.random());
        assert_eq!(b.initial_seed(), (1 << 32) + 5);
    }

    #[test]
    fn iteration_order_of_a_transpose_is_memory_order() {
        // A [3, 2] view of [2, 3] storage: memory order visits (0,0), (1,0), (2,0), (0,1), ...
        let order = iteration_order(&[3, 2], &[1, 3]).unwrap();
        assert_eq!(order, vec![0, 2, 4, 1, 3, 5]);
        assert!(iteration_order(&[2, 3], &[3, 1]).is_none());
        // A strided slice keeps logical order.
        assert_eq!(iteration_order(&[2, 2], &[4, 2]).unwrap(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn doubles_print_as_cpp_streams_print_them() {
        for (value, text) in [
            (0.0, "0"),
            (-1.0, "-1"),
            (0.001, "0.001"),
            (-2.5e-7, "-2.5e-07"),
            (123_456.7, "123457"),
            (1_234_567.0, "1.23457e+06"),
            (9.999_999, "10"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(format_g(value, 6), text);
        }
    }

    #[test]
    fn exponential_takes_one_uniform_and_maps_zero_to_zero() {
        // The generator never rounds u up to 1, so log1p(-u) stays finite; u == 0 gives +0.
        assert_eq!(
            ((-1.0f64 / 2.0) * (-0.0f64).ln_1p()).to_bits(),
            0.0f64.to_bits()
        );
        let mut g = Generator::new(9);
        let mut h = Generator::new(9);
        let u = h.uniform_f64();
        assert_eq!(g.exponential_f64(4.0), -0.25 * (-u).ln_1p());
        assert_eq!(g.random(), h.random());
    }

    #[test]
    fn cephes_log_and_sincos_are_close_to_libm() {
        for i in 1..1000 {
            let x = i as f32 / 1000.0;
            assert!((avx2_log(x) - x.ln()).abs() <= 1e-6 * x.ln().abs().max(1.0));
            let theta = x * TWO_PI_F32;
            let (s, c) = avx2_sincos(theta);
            assert!((s - theta.sin()).abs() < 1e-6 && (c - theta.cos()).abs() < 1e-6);
        }
    }
}
