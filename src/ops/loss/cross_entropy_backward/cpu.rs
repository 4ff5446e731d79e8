//! CPU kernel of the cross-entropy gradient.

use crate::backend::cpu::vmath::vectorized;
use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::core::{DType, Float};
use crate::ops::half;
use crate::ops::loss::{CrossEntropyOptions, Reduction};
use crate::ops::unary::UnaryMath;

fn typed<T: Float + UnaryMath>(
    logits: &RawTensor,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
    grad_out: &RawTensor,
    (n, c): (usize, usize),
) -> Result<RawTensor> {
    let targets = targets.to_vec::<i64>()?;
    let weight = weight.map(|w| w.to_vec::<T>()).transpose()?;
    let go = grad_out.to_vec::<T>()?;
    let class_weight = |t: i64| weight.as_ref().map_or(T::ONE, |w| w[t as usize]);
    let mut total_weight = T::ZERO;
    for &t in &targets {
        if t == options.ignore_index {
            continue;
        }
        if t < 0 || t >= c as i64 {
            return Err(Error::Shape(format!("Target {t} is out of bounds.")));
        }
        total_weight += class_weight(t);
    }
    let x = crate::ops::copy::cpu::contiguous_or_self(logits)?;
    let start = x.layout.offset;
    let data = &x.cpu_slice::<T>().expect("cpu")[start..start + n * c];
    let mut out = T::pool().take(n * c)?;
    for (i, (row, dst)) in data
        .chunks(c.max(1))
        .zip(out.chunks_mut(c.max(1)))
        .enumerate()
        .take(n)
    {
        let t = targets[i];
        if t == options.ignore_index {
            dst.fill(T::ZERO);
            continue;
        }
        let scale = match options.reduction {
            Reduction::Mean => class_weight(t) * go[0] / total_weight,
            Reduction::Sum => class_weight(t) * go[0],
            Reduction::None => class_weight(t) * go[i],
        };
        let max = row.iter().fold(T::NEG_INFINITY, |m, &v| m.max_nan(v));
        vectorized(
            #[inline(always)]
            || {
                for (d, &v) in dst.iter_mut().zip(row) {
                    *d = UnaryMath::exp(v - max);
                }
            },
        );
        let mut sum = T::ZERO;
        for &e in dst.iter() {
            sum += e;
        }
        let k = scale / sum;
        for d in dst.iter_mut() {
            *d = *d * k;
        }
        dst[t as usize] = dst[t as usize] - scale;
    }
    Ok(RawTensor::from_cpu_vec(out, logits.layout.shape))
}

pub(crate) fn cross_entropy_backward(
    logits: &RawTensor,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
    grad_out: &RawTensor,
    nc: (usize, usize),
) -> Result<RawTensor> {
    match logits.dtype {
        DType::F32 => typed::<f32>(logits, targets, weight, options, grad_out, nc),
        DType::F64 => typed::<f64>(logits, targets, weight, options, grad_out, nc),
        DType::F16 | DType::BF16 => {
            let (l, w, g) = (
                half::widen(logits)?,
                half::widen_opt(weight)?,
                half::widen(grad_out)?,
            );
            half::narrow(
                typed::<f32>(&l, targets, w.as_ref(), options, &g, nc)?,
                logits.dtype,
            )
        }
        _ => unreachable!("checked"),
    }
}

impl super::CrossEntropyBackwardKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn cross_entropy_backward(
        self,
        logits: &RawTensor,
        targets: &RawTensor,
        weight: Option<&RawTensor>,
        options: CrossEntropyOptions,
        grad_out: &RawTensor,
        nc: (usize, usize),
    ) -> Result<RawTensor> {
        cross_entropy_backward(logits, targets, weight, options, grad_out, nc)
    }
}
