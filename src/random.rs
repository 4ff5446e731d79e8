//! Seedable random numbers that are the same on every device.
//!
//! Each value is a hash of `(seed, position)` (SplitMix64), so a kernel on the GPU produces the
//! very numbers the CPU produces for the same seed, and a tensor created directly on the device
//! needs nothing from the host. `manual_seed` resets the stream, as `torch.manual_seed` does.

use crate::core::DynDevice;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

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

/// Where the numbers of one draw come from: the seed and first position, as values, or, for a
/// draw recorded into a CUDA graph, read by the kernel from device memory when it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Draw {
    /// The seed (unused when `state` is set: the kernel reads it).
    pub(crate) seed: u64,
    /// The first position; with `state` set, relative to the position the kernel reads.
    pub(crate) offset: u64,
    /// 0 for a draw whose seed and offset are the values above; otherwise the device address
    /// of the graph's `[seed, offset]` (two `u64`), which the kernel reads and adds `offset`
    /// to, as PyTorch's `PhiloxCudaState` in a captured graph (`seed_extragraph`,
    /// `offset_extragraph`, `offset_intragraph`).
    pub(crate) state: u64,
}

/// A capture of GPU `ordinal`'s stream in progress: its draws are relative to `state`.
struct GraphDraws {
    ordinal: usize,
    state: u64,
    used: u64,
}

/// The captures in progress (at most one per GPU); `CAPTURING` says whether there is any, so an
/// eager draw takes no lock.
static GRAPHS: Mutex<Vec<GraphDraws>> = Mutex::new(Vec::new());
static CAPTURING: AtomicBool = AtomicBool::new(false);

/// Reserves `count` positions for a draw made on `device`. Outside a capture of that device's
/// stream this is [`reserve`]; inside one, the host's stream does not move: the draw takes the
/// next `count` positions after the graph's earlier draws, relative to the `[seed, offset]`
/// that each replay writes to the graph's device state (see [`begin_graph`]).
pub(crate) fn reserve_on(device: DynDevice, count: u64) -> Draw {
    if CAPTURING.load(Ordering::SeqCst) {
        if let Some(ordinal) = device.cuda_index() {
            let mut graphs = GRAPHS.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(g) = graphs.iter_mut().find(|g| g.ordinal == ordinal) {
                let offset = g.used;
                g.used += count;
                return Draw {
                    seed: 0,
                    offset,
                    state: g.state,
                };
            }
        }
    }
    let (seed, offset) = reserve(count);
    Draw {
        seed,
        offset,
        state: 0,
    }
}

/// Starts recording GPU `ordinal`'s draws relative to the device memory at `state` (two
/// `u64`: the seed, then the position the graph's draws start from at a replay).
pub(crate) fn begin_graph(ordinal: usize, state: u64) {
    let mut graphs = GRAPHS.lock().unwrap_or_else(|p| p.into_inner());
    graphs.retain(|g| g.ordinal != ordinal);
    graphs.push(GraphDraws {
        ordinal,
        state,
        used: 0,
    });
    CAPTURING.store(true, Ordering::SeqCst);
}

/// Ends the recording started by [`begin_graph`]: the number of positions one replay of the
/// graph draws (PyTorch's `wholegraph_increment`).
pub(crate) fn end_graph(ordinal: usize) -> u64 {
    let mut graphs = GRAPHS.lock().unwrap_or_else(|p| p.into_inner());
    let used = graphs
        .iter()
        .find(|g| g.ordinal == ordinal)
        .map_or(0, |g| g.used);
    graphs.retain(|g| g.ordinal != ordinal);
    CAPTURING.store(!graphs.is_empty(), Ordering::SeqCst);
    used
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
