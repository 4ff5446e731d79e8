//! Three interleaved spirals: a small two-dimensional classification problem that a linear
//! model cannot solve and a small MLP can, generated from a seed.

use super::Dataset;
use crate::core::error::{Error, Result};
use crate::device::Cpu;
use crate::tensor::Tensor;
use std::f32::consts::TAU;

/// `points` points on three interleaved spirals, labelled by arm (`0`, `1`, `2`), the same for
/// the same `seed` on every machine.
///
/// Point `i` lies on arm `i % 3`, at a radius `t` uniform in `[0.05, 1)` and an angle of
/// `2π·arm/3 + 2·2π·t` (two turns) plus a little normal noise; its inputs are `[x, y]`.
///
/// ```
/// let data = devtype::data::spirals(300, 2024);
/// assert_eq!((data.len(), data.features(), data.classes), (300, 2, 3));
/// assert_eq!(data.labels.to_vec()[..4], [0, 1, 2, 0]);
/// ```
///
/// Panics with the error's text where [`try_spirals`] returns it.
#[track_caller]
pub fn spirals(points: usize, seed: u64) -> Dataset {
    match try_spirals(points, seed) {
        Ok(data) => data,
        Err(error) => panic!("{error}"),
    }
}

/// [`spirals`], or [`Error::CpuOutOfMemory`] (nothing allocated) when the host has no room
/// for `points` points.
///
/// ```
/// use devtype::data::try_spirals;
/// assert_eq!(try_spirals(30, 1)?.len(), 30);
/// assert!(try_spirals(1 << 62, 1).is_err()); // 64 EiB of inputs: refused, not an abort
/// # Ok::<(), devtype::Error>(())
/// ```
pub fn try_spirals(points: usize, seed: u64) -> Result<Dataset> {
    let mut random = SplitMix64(seed);
    let out_of_memory = || Error::CpuOutOfMemory {
        bytes: (points as u64).saturating_mul(16),
    };
    let mut inputs: Vec<f32> = Vec::new();
    let mut labels: Vec<i64> = Vec::new();
    inputs
        .try_reserve_exact(points.checked_mul(2).ok_or_else(out_of_memory)?)
        .map_err(|_| out_of_memory())?;
    labels
        .try_reserve_exact(points)
        .map_err(|_| out_of_memory())?;
    for i in 0..points {
        let arm = i % 3;
        let radius = 0.05 + 0.95 * random.uniform();
        let angle = TAU * (arm as f32 / 3.0 + 2.0 * radius) + 0.1 * random.normal();
        inputs.extend_from_slice(&[radius * angle.cos(), radius * angle.sin()]);
        labels.push(arm as i64);
    }
    Ok(Dataset {
        inputs: Tensor::try_from_vec(inputs, [points, 2], Cpu)?,
        labels: Tensor::try_from_vec(labels, [points], Cpu)?,
        classes: 3,
    })
}

/// SplitMix64, a small sequential generator: the same numbers for the same seed everywhere.
struct SplitMix64(u64);

impl SplitMix64 {
    /// The next 64 random bits.
    fn next_bits(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        crate::random::mix(self.0)
    }

    /// Uniform in `[0, 1)` with 24 random bits.
    fn uniform(&mut self) -> f32 {
        (self.next_bits() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Standard normal (Box-Muller, the cosine half).
    fn normal(&mut self) -> f32 {
        let (u1, u2) = (1.0 - self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (TAU * u2).cos()
    }
}
