//! Learning-rate schedules (PyTorch's `torch.optim.lr_scheduler`), stepping any optimizer
//! through [`Optimizer::set_lr`].

use super::Optimizer;
use crate::core::error::{Error, Result};
use crate::device::Device;
use crate::tensor::Float;
use std::f64::consts::PI;

/// How a [`OneCycleLR`](LrScheduler::one_cycle_lr) phase moves between its two rates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnnealStrategy {
    /// Cosine annealing (PyTorch's default, `anneal_strategy="cos"`).
    Cos,
    /// Linear annealing (`anneal_strategy="linear"`). Named `Lin`, not `Linear`: a second
    /// public item named `Linear` makes rustc write `devtype::nn::Linear` in every diagnostic
    /// that names the layer.
    Lin,
}

/// One phase of a one-cycle schedule: from `start` to `end`, ending at step `end_step`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Phase {
    end_step: f64,
    start: f64,
    end: f64,
}

/// The rule of a schedule.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Step {
        step_size: i64,
        gamma: f64,
    },
    MultiStep {
        milestones: Vec<i64>,
        gamma: f64,
    },
    Exponential {
        gamma: f64,
    },
    CosineAnnealing {
        t_max: i64,
        eta_min: f64,
    },
    LinearLr {
        start_factor: f64,
        end_factor: f64,
        total_iters: i64,
    },
    OneCycle {
        total_steps: i64,
        phases: Vec<Phase>,
        strategy: AnnealStrategy,
    },
    Sequential {
        schedulers: Vec<LrScheduler>,
        milestones: Vec<i64>,
    },
}

/// A learning-rate schedule: PyTorch's `StepLR`, `MultiStepLR`, `ExponentialLR`,
/// `CosineAnnealingLR`, `LinearLR`, `OneCycleLR` and `SequentialLR`, with their formulas
/// (the recursive, "chainable" forms PyTorch's `get_lr` uses, so the rates are PyTorch's to
/// the last bit, `CosineAnnealingLR`'s included).
///
/// As in PyTorch, building a schedule sets the optimizer's learning rate for step 0 (the
/// optimizer's current rate is the base rate), and each [`step`](Self::step), called after
/// `opt.step()`, sets the next one. The schedule keeps no reference to the optimizer: it
/// steps any [`Optimizer`] given to it (one parameter group: devtype's optimizers have one
/// learning rate). Its position is [`last_epoch`](Self::last_epoch), saved and restored by
/// [`state`](Self::state) and [`load_state`](Self::load_state) (in a full checkpoint).
///
/// ```
/// use devtype::prelude::*;
/// use devtype::optim::{LrScheduler, Optimizer, Sgd};
/// let mut opt = Sgd::<Cpu>::new(0.1);
/// let mut warmup = LrScheduler::linear_lr(&mut opt, 0.25, 1.0, 3).unwrap();
/// assert_eq!(opt.lr(), 0.025);
/// for _ in 0..3 {
///     // opt.step(&mut model) ...
///     warmup.step(&mut opt).unwrap();
/// }
/// assert_eq!(opt.lr(), 0.1);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct LrScheduler {
    kind: Kind,
    base_lr: f64,
    last_epoch: i64,
    last_lr: f64,
}

fn value_error(message: String) -> Error {
    Error::InvalidOptimizerArgument(message)
}

impl LrScheduler {
    fn start<D: Device, E: Float, O: Optimizer<D, E>>(kind: Kind, opt: &mut O) -> Self {
        let mut s = LrScheduler {
            kind,
            base_lr: opt.lr(),
            last_epoch: -1,
            last_lr: opt.lr(),
        };
        s.initial_step(opt);
        s
    }

    fn initial_step<D: Device, E: Float, O: Optimizer<D, E>>(&mut self, opt: &mut O) {
        self.last_epoch += 1;
        let lr = self.get_lr(opt.lr());
        self.set(opt, lr);
    }

    fn set<D: Device, E: Float, O: Optimizer<D, E>>(&mut self, opt: &mut O, lr: f64) {
        opt.set_lr(lr);
        self.last_lr = lr;
    }

    /// `StepLR`: the rate times `gamma` every `step_size` steps.
    pub fn step_lr<D: Device, E: Float, O: Optimizer<D, E>>(
        opt: &mut O,
        step_size: i64,
        gamma: f64,
    ) -> Result<Self> {
        Ok(Self::start(Kind::Step { step_size, gamma }, opt))
    }

    /// `MultiStepLR`: the rate times `gamma` at each milestone (a milestone given `k` times
    /// multiplies by `gamma^k`, as PyTorch's counter does).
    pub fn multi_step_lr<D: Device, E: Float, O: Optimizer<D, E>>(
        opt: &mut O,
        milestones: &[i64],
        gamma: f64,
    ) -> Result<Self> {
        let mut milestones = milestones.to_vec();
        milestones.sort_unstable();
        Ok(Self::start(Kind::MultiStep { milestones, gamma }, opt))
    }

    /// `ExponentialLR`: the rate times `gamma` every step.
    pub fn exponential_lr<D: Device, E: Float, O: Optimizer<D, E>>(
        opt: &mut O,
        gamma: f64,
    ) -> Result<Self> {
        Ok(Self::start(Kind::Exponential { gamma }, opt))
    }

    /// `CosineAnnealingLR`: from the base rate down to `eta_min` over `t_max` steps along a
    /// cosine, and back up (PyTorch's recursive form, which keeps going past `t_max`).
    pub fn cosine_annealing_lr<D: Device, E: Float, O: Optimizer<D, E>>(
        opt: &mut O,
        t_max: i64,
        eta_min: f64,
    ) -> Result<Self> {
        if t_max <= 0 {
            return Err(value_error(format!(
                "Expected positive integer T_max, but got {t_max}"
            )));
        }
        Ok(Self::start(Kind::CosineAnnealing { t_max, eta_min }, opt))
    }

    /// `LinearLR` (warm-up): the base rate times a factor going linearly from `start_factor`
    /// to `end_factor` over `total_iters` steps, then constant.
    pub fn linear_lr<D: Device, E: Float, O: Optimizer<D, E>>(
        opt: &mut O,
        start_factor: f64,
        end_factor: f64,
        total_iters: i64,
    ) -> Result<Self> {
        if !(start_factor > 0.0 && start_factor <= 1.0) {
            return Err(value_error(
                "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.".into(),
            ));
        }
        if !(0.0..=1.0).contains(&end_factor) {
            return Err(value_error(
                "Ending multiplicative factor expected to be between 0 and 1.".into(),
            ));
        }
        Ok(Self::start(
            Kind::LinearLr {
                start_factor,
                end_factor,
                total_iters,
            },
            opt,
        ))
    }

    /// `OneCycleLR` (without momentum cycling: PyTorch's `cycle_momentum=False`): from
    /// `max_lr / div_factor` up to `max_lr` over the first `pct_start` of `total_steps`, then
    /// down to `max_lr / div_factor / final_div_factor`; with `three_phase`, back to the
    /// initial rate first and then down. PyTorch's defaults: `pct_start = 0.3`,
    /// [`AnnealStrategy::Cos`], `div_factor = 25`, `final_div_factor = 1e4`, two phases.
    /// Stepping more than `total_steps` times is PyTorch's error (and changes nothing).
    #[allow(clippy::too_many_arguments)]
    pub fn one_cycle_lr<D: Device, E: Float, O: Optimizer<D, E>>(
        opt: &mut O,
        max_lr: f64,
        total_steps: i64,
        pct_start: f64,
        strategy: AnnealStrategy,
        div_factor: f64,
        final_div_factor: f64,
        three_phase: bool,
    ) -> Result<Self> {
        if total_steps <= 0 {
            return Err(value_error(format!(
                "Expected positive integer total_steps, but got {total_steps}"
            )));
        }
        if !(0.0..=1.0).contains(&pct_start) {
            return Err(value_error(format!(
                "Expected float between 0 and 1 pct_start, but got {}",
                crate::ops::optim::py_float(pct_start)
            )));
        }
        let initial = max_lr / div_factor;
        let min_lr = initial / final_div_factor;
        let total = total_steps as f64;
        let phases = if three_phase {
            vec![
                Phase {
                    end_step: pct_start * total - 1.0,
                    start: initial,
                    end: max_lr,
                },
                Phase {
                    end_step: 2.0 * pct_start * total - 2.0,
                    start: max_lr,
                    end: initial,
                },
                Phase {
                    end_step: total - 1.0,
                    start: initial,
                    end: min_lr,
                },
            ]
        } else {
            vec![
                Phase {
                    end_step: pct_start * total - 1.0,
                    start: initial,
                    end: max_lr,
                },
                Phase {
                    end_step: total - 1.0,
                    start: max_lr,
                    end: min_lr,
                },
            ]
        };
        // PyTorch sets the group's lr to the initial rate, its base, before the first step.
        opt.set_lr(initial);
        Ok(Self::start(
            Kind::OneCycle {
                total_steps,
                phases,
                strategy,
            },
            opt,
        ))
    }

    /// `OneCycleLR` with PyTorch's defaults for everything but `max_lr` and `total_steps`.
    pub fn one_cycle_lr_default<D: Device, E: Float, O: Optimizer<D, E>>(
        opt: &mut O,
        max_lr: f64,
        total_steps: i64,
    ) -> Result<Self> {
        Self::one_cycle_lr(
            opt,
            max_lr,
            total_steps,
            0.3,
            AnnealStrategy::Cos,
            25.0,
            1e4,
            false,
        )
    }

    /// `SequentialLR`: `schedulers[i]` from milestone `i - 1` on (each made on `opt`, in
    /// order, as in PyTorch); at a milestone the next one restarts from its step 0.
    pub fn sequential_lr<D: Device, E: Float, O: Optimizer<D, E>>(
        opt: &mut O,
        schedulers: Vec<LrScheduler>,
        milestones: &[i64],
    ) -> Result<Self> {
        if schedulers.is_empty() {
            return Err(value_error(
                "SequentialLR expects at least one scheduler, but got no scheduler.".into(),
            ));
        }
        if milestones.len() != schedulers.len() - 1 {
            return Err(value_error(format!(
                "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone points, but got number of schedulers {} and the number of milestones to be equal to {}",
                schedulers.len(),
                milestones.len()
            )));
        }
        let mut schedulers = schedulers;
        let base_lr = schedulers[0].base_lr;
        // Back to the initial rate, the others' construction steps undone, and the first
        // scheduler's initial step redone.
        opt.set_lr(base_lr);
        // Every schedule of one optimizer starts from its initial rate (PyTorch's
        // `initial_lr`, set by the first schedule made on it), not from the rate the
        // construction of the previous one left.
        for s in &mut schedulers {
            s.last_epoch -= 1;
            s.base_lr = base_lr;
        }
        schedulers[0].initial_step(opt);
        let last_lr = schedulers[0].last_lr;
        Ok(LrScheduler {
            kind: Kind::Sequential {
                schedulers,
                milestones: milestones.to_vec(),
            },
            base_lr,
            last_epoch: 0,
            last_lr,
        })
    }

    /// The rate for `last_epoch`, from the optimizer's current rate `lr` (PyTorch's `get_lr`).
    fn get_lr(&self, lr: f64) -> f64 {
        let e = self.last_epoch;
        let base = self.base_lr;
        match &self.kind {
            Kind::Step { step_size, gamma } => {
                if e == 0 || e % step_size != 0 {
                    lr
                } else {
                    lr * gamma
                }
            }
            Kind::MultiStep { milestones, gamma } => {
                let count = milestones.iter().filter(|&&m| m == e).count();
                if count == 0 {
                    lr
                } else {
                    lr * gamma.powi(count as i32)
                }
            }
            Kind::Exponential { gamma } => {
                if e == 0 {
                    lr
                } else {
                    lr * gamma
                }
            }
            Kind::CosineAnnealing { t_max, eta_min } => {
                let t = *t_max as f64;
                if e == 0 {
                    lr
                } else if (e - 1 - t_max).rem_euclid(2 * t_max) == 0 {
                    lr + (base - eta_min) * (1.0 - (PI / t).cos()) / 2.0
                } else {
                    (1.0 + (PI * e as f64 / t).cos()) / (1.0 + (PI * (e - 1) as f64 / t).cos())
                        * (lr - eta_min)
                        + eta_min
                }
            }
            Kind::LinearLr {
                start_factor,
                end_factor,
                total_iters,
            } => {
                if e == 0 {
                    lr * start_factor
                } else if e > *total_iters {
                    lr
                } else {
                    lr * (1.0
                        + (end_factor - start_factor)
                            / (*total_iters as f64 * start_factor
                                + (e - 1) as f64 * (end_factor - start_factor)))
                }
            }
            Kind::OneCycle {
                phases, strategy, ..
            } => {
                let step = e as f64;
                let mut start_step = 0.0;
                let mut out = lr;
                for (i, phase) in phases.iter().enumerate() {
                    if step <= phase.end_step || i == phases.len() - 1 {
                        let pct = (step - start_step) / (phase.end_step - start_step);
                        out = match strategy {
                            AnnealStrategy::Cos => {
                                phase.end
                                    + (phase.start - phase.end) / 2.0 * ((PI * pct).cos() + 1.0)
                            }
                            AnnealStrategy::Lin => (phase.end - phase.start) * pct + phase.start,
                        };
                        break;
                    }
                    start_step = phase.end_step;
                }
                out
            }
            Kind::Sequential { .. } => lr,
        }
    }

    /// The rate at `last_epoch` in closed form (PyTorch's `_get_closed_form_lr`, used when a
    /// [`sequential_lr`](Self::sequential_lr) restarts a schedule at a milestone).
    fn closed_form_lr(&self, lr: f64) -> f64 {
        let e = self.last_epoch;
        let base = self.base_lr;
        match &self.kind {
            Kind::Step { step_size, gamma } => base * gamma.powi((e / step_size) as i32),
            Kind::MultiStep { milestones, gamma } => {
                base * gamma.powi(milestones.iter().filter(|&&m| m <= e).count() as i32)
            }
            Kind::Exponential { gamma } => base * gamma.powi(e as i32),
            Kind::CosineAnnealing { t_max, eta_min } => {
                eta_min + (base - eta_min) * (1.0 + (PI * e as f64 / *t_max as f64).cos()) / 2.0
            }
            Kind::LinearLr {
                start_factor,
                end_factor,
                total_iters,
            } => {
                base * (start_factor
                    + (end_factor - start_factor) * (*total_iters).min(e) as f64
                        / *total_iters as f64)
            }
            _ => self.get_lr(lr),
        }
    }

    /// Advances one step and sets the optimizer's rate (PyTorch's `scheduler.step()`, after
    /// `opt.step()`). Errors (a one-cycle schedule stepped past `total_steps`, with PyTorch's
    /// text) change nothing.
    pub fn step<D: Device, E: Float, O: Optimizer<D, E>>(&mut self, opt: &mut O) -> Result<()> {
        if let Kind::OneCycle { total_steps, .. } = &self.kind {
            if self.last_epoch + 1 > *total_steps {
                return Err(value_error(format!(
                    "Tried to step {} times. The specified number of total steps is {total_steps}",
                    self.last_epoch + 1
                )));
            }
        }
        self.last_epoch += 1;
        let e = self.last_epoch;
        if let Kind::Sequential {
            schedulers,
            milestones,
        } = &mut self.kind
        {
            let idx = milestones.iter().filter(|&&m| m <= e).count();
            let s = &mut schedulers[idx];
            if idx > 0 && milestones[idx - 1] == e {
                s.last_epoch = 0;
                let lr = s.closed_form_lr(opt.lr());
                s.set(opt, lr);
            } else {
                s.step(opt)?;
            }
            self.last_lr = s.last_lr;
            return Ok(());
        }
        let lr = self.get_lr(opt.lr());
        self.set(opt, lr);
        Ok(())
    }

    /// The rate the last step set (PyTorch's `get_last_lr()[0]`).
    pub fn get_last_lr(&self) -> f64 {
        self.last_lr
    }

    /// Steps taken since the schedule was made (PyTorch's `last_epoch`).
    pub fn last_epoch(&self) -> i64 {
        self.last_epoch
    }

    /// The schedule's position, for a checkpoint: `last_epoch` and `_last_lr`, then those of
    /// each scheduler of a sequential schedule, in order.
    pub fn state(&self) -> Vec<f64> {
        let mut out = vec![self.last_epoch as f64, self.last_lr];
        if let Kind::Sequential { schedulers, .. } = &self.kind {
            for s in schedulers {
                out.extend(s.state());
            }
        }
        out
    }

    /// Restores a position saved by [`state`](Self::state) into a schedule built with the
    /// same settings; checks its length first (a state of another schedule changes nothing).
    pub fn load_state(&mut self, state: &[f64]) -> Result<()> {
        if state.len() != self.state().len() {
            return Err(value_error(format!(
                "the schedule's state has {} values, but this schedule keeps {}: it was saved from another schedule",
                state.len(),
                self.state().len()
            )));
        }
        self.restore(state);
        Ok(())
    }

    fn restore(&mut self, state: &[f64]) -> usize {
        self.last_epoch = state[0] as i64;
        self.last_lr = state[1];
        let mut at = 2;
        if let Kind::Sequential { schedulers, .. } = &mut self.kind {
            for s in schedulers {
                at += s.restore(&state[at..]);
            }
        }
        at
    }
}
