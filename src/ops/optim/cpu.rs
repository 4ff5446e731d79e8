//! CPU kernels of the fused optimizer updates: one pass over parameter, gradient and state,
//! in place, split across threads for large parameters.

use super::{AdamScalars, AdamUpdate, OpMath, SgdUpdate};
use crate::backend::cpu::parallel::map_items;
use crate::backend::cpu::vmath::vectorized;
use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::core::{DType, Element, Float};
use crate::ops::copy::cpu::make_unique;

/// Elements per parallel task.
const CHUNK: usize = 1 << 14;

/// A new state buffer of zeros shaped like `like`.
fn zeros_like<T: Float>(like: &RawTensor) -> Result<RawTensor> {
    Ok(RawTensor::from_cpu_vec(
        crate::core::pool::zeroed_vec::<T>(like.numel())?,
        like.layout.shape,
    ))
}

/// The kernels zip the buffers: a shorter one would silently leave part of the parameter
/// unchanged. `check_sgd`/`check_adam` rule this out; this is the kernels' own guard.
fn same_lengths(lengths: &[usize]) -> Result<()> {
    if lengths.windows(2).all(|w| w[0] == w[1]) {
        Ok(())
    } else {
        Err(Error::Shape(format!(
            "optimizer kernel: parameter, gradient and state have different lengths {lengths:?}"
        )))
    }
}

fn parallel(len: usize) -> bool {
    len >= crate::backend::cpu::strided::PARALLEL_THRESHOLD && !cfg!(miri)
}

/// The skip flag's value (checked in `ops::optim`: one bool in host memory).
fn skipped(skip: Option<&RawTensor>) -> Result<bool> {
    Ok(match skip {
        Some(s) => s.item::<bool>()?,
        None => false,
    })
}

fn sgd_typed<T: OpMath>(
    param: &mut RawTensor,
    grad: &RawTensor,
    buffer: &mut Option<RawTensor>,
    u: &SgdUpdate,
    skip: bool,
) -> Result<()> {
    if skip {
        // As the GPU kernel: nothing changes, a buffer this step creates stays zeros.
        if u.momentum != 0.0 && buffer.is_none() {
            *buffer = Some(zeros_like::<T>(param)?);
        }
        return Ok(());
    }
    let g = crate::ops::copy::cpu::contiguous_or_self(grad)?;
    let gs = &g.cpu_slice::<T>().expect("cpu")[g.layout.contiguous_range().expect("contiguous")];
    make_unique::<T>(param)?;
    let p = param.unique_cpu_data::<T>().expect("made unique");
    same_lengths(&[p.len(), gs.len()])?;
    // Hyper-parameters and arithmetic in the compute type; each stored value rounds once.
    let (lr, wd) = (T::Acc::from_f64(u.lr), T::Acc::from_f64(u.weight_decay));
    if u.momentum == 0.0 {
        let step = move |p: &mut [T], g: &[T]| {
            vectorized(
                #[inline(always)]
                move || {
                    for (p, &g) in p.iter_mut().zip(g) {
                        let pi = p.up();
                        let d = g.up() + wd * pi;
                        *p = T::down(pi - lr * d);
                    }
                },
            )
        };
        if parallel(p.len()) {
            let items = p.chunks_mut(CHUNK).zip(gs.chunks(CHUNK)).collect();
            map_items(items, &|(p, g)| step(p, g));
        } else {
            step(p, gs);
        }
        return Ok(());
    }
    let first = buffer.is_none();
    if buffer.is_none() {
        *buffer = Some(zeros_like::<T>(param)?);
    }
    let buf = buffer.as_mut().expect("set above");
    make_unique::<T>(buf)?;
    let b = buf.unique_cpu_data::<T>().expect("made unique");
    let p = param.unique_cpu_data::<T>().expect("made unique");
    same_lengths(&[p.len(), gs.len(), b.len()])?;
    let (mom, keep) = (
        T::Acc::from_f64(u.momentum),
        T::Acc::from_f64(1.0 - u.dampening),
    );
    let nesterov = u.nesterov;
    // `move`: the closure owns its scalars and flags, so the loop reads them from registers
    // (by reference they were reloaded every element and the loop stayed scalar: 23 GB/s
    // against 43 for Adam's, `cargo bench --bench cpu -- S`). Each loop runs inside
    // `vectorized`, as wide as the CPU allows, with the same bits (no FMA).
    let step = move |p: &mut [T], g: &[T], b: &mut [T]| {
        vectorized(
            #[inline(always)]
            move || {
                for ((p, &g), b) in p.iter_mut().zip(g).zip(b.iter_mut()) {
                    let pi = p.up();
                    let d = g.up() + wd * pi;
                    let bi = if first { d } else { mom * b.up() + keep * d };
                    *b = T::down(bi);
                    let d = if nesterov { d + mom * bi } else { bi };
                    *p = T::down(pi - lr * d);
                }
            },
        )
    };
    if parallel(p.len()) {
        let items = p
            .chunks_mut(CHUNK)
            .zip(gs.chunks(CHUNK))
            .zip(b.chunks_mut(CHUNK))
            .collect();
        map_items(items, &|((p, g), b)| step(p, g, b));
    } else {
        step(p, gs, b);
    }
    Ok(())
}

fn adam_typed<T: OpMath>(
    param: &mut RawTensor,
    grad: &RawTensor,
    exp_avg: &mut Option<RawTensor>,
    exp_avg_sq: &mut Option<RawTensor>,
    u: &AdamUpdate,
    corrections: Option<&RawTensor>,
    skip: bool,
) -> Result<()> {
    if skip {
        // As the GPU kernel: nothing changes, moments this step creates stay zeros.
        for state in [exp_avg, exp_avg_sq] {
            if state.is_none() {
                *state = Some(zeros_like::<T>(param)?);
            }
        }
        return Ok(());
    }
    // Bias corrections of a step count kept in a tensor (checked in `ops::optim::adam`).
    let corrections = corrections.map(|c| c.to_vec::<T::Acc>()).transpose()?;
    let g = crate::ops::copy::cpu::contiguous_or_self(grad)?;
    let gs = &g.cpu_slice::<T>().expect("cpu")[g.layout.contiguous_range().expect("contiguous")];
    make_unique::<T>(param)?;
    if exp_avg.is_none() {
        *exp_avg = Some(zeros_like::<T>(param)?);
    }
    let m = exp_avg.as_mut().expect("set above");
    make_unique::<T>(m)?;
    if exp_avg_sq.is_none() {
        *exp_avg_sq = Some(zeros_like::<T>(param)?);
    }
    let v = exp_avg_sq.as_mut().expect("set above");
    make_unique::<T>(v)?;
    let (m, v) = (
        m.unique_cpu_data::<T>().expect("unique"),
        v.unique_cpu_data::<T>().expect("unique"),
    );
    let p = param.unique_cpu_data::<T>().expect("made unique");
    same_lengths(&[p.len(), gs.len(), m.len(), v.len()])?;
    let AdamScalars {
        b1,
        b2,
        one_b1,
        one_b2,
        eps,
        l2,
        decay,
        mut step_size,
        mut inv_sqrt_bc2,
    } = u.scalars::<T::Acc>();
    if let Some(c) = &corrections {
        same_lengths(&[c.len(), 2])?;
        (step_size, inv_sqrt_bc2) = (c[0], c[1]);
    }
    let step = move |p: &mut [T], g: &[T], m: &mut [T], v: &mut [T]| {
        vectorized(
            #[inline(always)]
            move || {
                for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
                    let pi = p.up();
                    let g = g.up() + l2 * pi;
                    let mi = b1 * m.up() + one_b1 * g;
                    let vi = b2 * v.up() + one_b2 * g * g;
                    *m = T::down(mi);
                    *v = T::down(vi);
                    let denom = vi.sqrt() * inv_sqrt_bc2 + eps;
                    *p = T::down(pi * decay - step_size * mi / denom);
                }
            },
        )
    };
    if parallel(p.len()) {
        let items = p
            .chunks_mut(CHUNK)
            .zip(gs.chunks(CHUNK))
            .zip(m.chunks_mut(CHUNK))
            .zip(v.chunks_mut(CHUNK))
            .collect();
        map_items(items, &|(((p, g), m), v)| step(p, g, m, v));
    } else {
        step(p, gs, m, v);
    }
    Ok(())
}

pub(crate) fn sgd(
    param: &mut RawTensor,
    grad: &RawTensor,
    buffer: &mut Option<RawTensor>,
    u: &SgdUpdate,
    skip: Option<&RawTensor>,
) -> Result<()> {
    let s = skipped(skip)?;
    match param.dtype {
        DType::F32 => sgd_typed::<f32>(param, grad, buffer, u, s),
        DType::F64 => sgd_typed::<f64>(param, grad, buffer, u, s),
        // Half parameters (PyTorch keeps f32 master weights under AMP; these are for pure
        // half training): the update runs in f32 and each stored value rounds once.
        DType::F16 => sgd_typed::<half::f16>(param, grad, buffer, u, s),
        DType::BF16 => sgd_typed::<half::bf16>(param, grad, buffer, u, s),
        _ => unreachable!("checked in sgd"),
    }
}

pub(crate) fn adam(
    param: &mut RawTensor,
    grad: &RawTensor,
    m: &mut Option<RawTensor>,
    v: &mut Option<RawTensor>,
    u: &AdamUpdate,
    c: Option<&RawTensor>,
    skip: Option<&RawTensor>,
) -> Result<()> {
    let s = skipped(skip)?;
    match param.dtype {
        DType::F32 => adam_typed::<f32>(param, grad, m, v, u, c, s),
        DType::F64 => adam_typed::<f64>(param, grad, m, v, u, c, s),
        DType::F16 => adam_typed::<half::f16>(param, grad, m, v, u, c, s),
        DType::BF16 => adam_typed::<half::bf16>(param, grad, m, v, u, c, s),
        _ => unreachable!("checked in adam"),
    }
}

impl super::OptimKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn sgd(
        self,
        param: &mut RawTensor,
        grad: &RawTensor,
        buffer: &mut Option<RawTensor>,
        u: &SgdUpdate,
        skip: Option<&RawTensor>,
    ) -> Result<()> {
        sgd(param, grad, buffer, u, skip)
    }
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn adam(
        self,
        param: &mut RawTensor,
        grad: &RawTensor,
        m: &mut Option<RawTensor>,
        v: &mut Option<RawTensor>,
        u: &AdamUpdate,
        corrections: Option<&RawTensor>,
        skip: Option<&RawTensor>,
    ) -> Result<()> {
        adam(param, grad, m, v, u, corrections, skip)
    }
}
