//! CPU kernel for fused cross-entropy.

use super::{CrossEntropyOptions, Reduction};
use crate::core::error::{Error, Result};
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::core::{DType, Float};
use crate::ops::half;
use crate::ops::unary::UnaryMath;

fn typed<T: Float + UnaryMath>(
    logits: &RawTensor,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
    (n, c): (usize, usize),
) -> Result<RawTensor> {
    let targets = targets.to_vec::<i64>()?;
    for &t in &targets {
        if t != options.ignore_index && (t < 0 || t >= c as i64) {
            return Err(Error::Shape(format!("Target {t} is out of bounds.")));
        }
    }
    let weight = weight.map(|w| w.to_vec::<T>()).transpose()?;
    let x = crate::ops::copy::cpu::contiguous_or_self(logits)?;
    let data = &x.cpu_slice::<T>().expect("cpu")[x.layout.offset..x.layout.offset + n * c];
    let mut losses = crate::core::pool::zeroed_vec::<T>(n)?;
    let (mut total, mut total_weight) = (T::ZERO, T::ZERO);
    for (i, row) in data.chunks(c.max(1)).enumerate().take(n) {
        let t = targets[i];
        if t == options.ignore_index {
            continue;
        }
        let max = row.iter().fold(T::NEG_INFINITY, |m, &v| m.max_nan(v));
        let lse = max + UnaryMath::log(row.iter().map(|&v| UnaryMath::exp(v - max)).sum::<T>());
        let w = weight.as_ref().map_or(T::ONE, |w| w[t as usize]);
        let loss = w * (lse - row[t as usize]);
        losses[i] = loss;
        total += loss;
        total_weight += w;
    }
    Ok(match options.reduction {
        Reduction::None => {
            let shape = if logits.rank() == 1 {
                Dims::EMPTY
            } else {
                Dims::shape(&[n])?
            };
            RawTensor::from_cpu_vec(losses, shape)
        }
        Reduction::Sum => RawTensor::from_cpu_vec(vec![total], Dims::EMPTY),
        Reduction::Mean => RawTensor::from_cpu_vec(vec![total / total_weight], Dims::EMPTY),
    })
}

pub(crate) fn cross_entropy(
    logits: &RawTensor,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
    nc: (usize, usize),
) -> Result<RawTensor> {
    match logits.dtype {
        DType::F32 => typed::<f32>(logits, targets, weight, options, nc),
        DType::F64 => typed::<f64>(logits, targets, weight, options, nc),
        DType::F16 | DType::BF16 => {
            let (l, w) = (half::widen(logits)?, half::widen_opt(weight)?);
            half::narrow(
                typed::<f32>(&l, targets, w.as_ref(), options, nc)?,
                logits.dtype,
            )
        }
        _ => unreachable!("checked"),
    }
}

impl super::LossKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn cross_entropy(
        self,
        logits: &RawTensor,
        targets: &RawTensor,
        weight: Option<&RawTensor>,
        options: CrossEntropyOptions,
        nc: (usize, usize),
    ) -> Result<RawTensor> {
        cross_entropy(logits, targets, weight, options, nc)
    }
}
