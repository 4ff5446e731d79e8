//! Seedable random numbers that are the same on every device.
//!
//! Each value is a hash of `(seed, position)` (SplitMix64), so a kernel on the GPU produces the
//! very numbers the CPU produces for the same seed, and a tensor created directly on the device
//! needs nothing from the host. `manual_seed` resets the stream, as `torch.manual_seed` does.

use std::sync::atomic::{AtomicU64, Ordering};

static SEED: AtomicU64 = AtomicU64::new(0x5EED_DE71_7E00_0001);
static OFFSET: AtomicU64 = AtomicU64::new(0);

/// Seeds every random creation function (`rand`, `randn`, `Linear::new`, dropout masks).
///
/// ```
/// use devtype::prelude::*;
/// devtype::manual_seed(7);
/// let a = Tensor::randn([3], Cpu).to_vec();
/// devtype::manual_seed(7);
/// assert_eq!(a, Tensor::randn([3], Cpu).to_vec());
/// ```
pub fn manual_seed(seed: u64) {
    SEED.store(seed, Ordering::SeqCst);
    OFFSET.store(0, Ordering::SeqCst);
}

/// Reserves `count` positions of the stream: returns `(seed, first position)`.
pub(crate) fn reserve(count: u64) -> (u64, u64) {
    (
        SEED.load(Ordering::SeqCst),
        OFFSET.fetch_add(count, Ordering::SeqCst),
    )
}

/// SplitMix64's finaliser: a bijective 64-bit mix.
#[inline]
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The 64 random bits at `position` of the stream of `seed`.
#[inline]
pub(crate) fn bits(seed: u64, position: u64) -> u64 {
    mix(seed ^ mix(position.wrapping_add(0x9E37_79B9_7F4A_7C15)))
}

/// Uniform in `[0, 1)` with 53 random bits.
#[inline]
pub(crate) fn uniform(seed: u64, position: u64) -> f64 {
    (bits(seed, position) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// The largest `f32` below 1: `uniform` rounded to `f32` is clamped to it, so `rand` in `f32`
/// stays in `[0, 1)` (the GPU kernel clamps the same way).
pub(crate) const F32_BELOW_ONE: f64 = 1.0 - f32::EPSILON as f64 / 2.0;

/// Standard normal by Box-Muller over positions `2i` and `2i + 1`.
#[inline]
pub(crate) fn normal(seed: u64, i: u64) -> f64 {
    let u1 = 1.0 - uniform(seed, 2 * i); // (0, 1]
    let u2 = uniform(seed, 2 * i + 1);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The state of the random generator: its seed and its position in the stream (what
/// `torch.get_rng_state()` gives PyTorch users). Saved in a full training checkpoint, so that
/// a resumed run draws the numbers the uninterrupted run draws.
///
/// ```
/// use devtype::prelude::*;
/// devtype::manual_seed(3);
/// let _ = Tensor::randn([5], Cpu);
/// let state = devtype::get_rng_state();
/// let a = Tensor::randn([3], Cpu).to_vec();
/// devtype::set_rng_state(state);
/// assert_eq!(a, Tensor::randn([3], Cpu).to_vec());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RngState {
    /// The seed of the stream.
    pub seed: u64,
    /// The next position of the stream.
    pub offset: u64,
}

/// The generator's state (PyTorch's `torch.get_rng_state()`).
pub fn get_rng_state() -> RngState {
    RngState {
        seed: SEED.load(Ordering::SeqCst),
        offset: OFFSET.load(Ordering::SeqCst),
    }
}

/// Restores a state from [`get_rng_state`] (PyTorch's `torch.set_rng_state`).
pub fn set_rng_state(state: RngState) {
    SEED.store(state.seed, Ordering::SeqCst);
    OFFSET.store(state.offset, Ordering::SeqCst);
}
