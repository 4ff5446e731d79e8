//! The fused norm pass of `clip_grad_norm_` (`nn::utils`): the sum of squares of every
//! gradient of a model in one pass that reads each element once, instead of a square, a
//! reduction and a square root per gradient (three passes, one of them writing).
//!
//! CPU only for now: on a GPU, `clip_grad_norm_` keeps its composed form (per-gradient norms
//! on the device, no host sync); a one-launch multi-tensor kernel there is future work.

pub(super) mod cpu;

pub(crate) use cpu::sum_of_squares;
