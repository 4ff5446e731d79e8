//! CPU kernels for copies and casts.

use crate::backend::cpu::strided::{map1, Strided};
use crate::core::error::Result;
use crate::core::layout::Layout;
use crate::core::raw::RawTensor;
use crate::core::{DType, Element};

/// The elements of a view in row-major order.
pub(crate) fn gather_strided<T: Element>(data: &[T], layout: &Layout) -> Result<Vec<T>> {
    let mut out = T::pool().take(layout.numel())?;
    map1(data, layout, &mut out, |x| x);
    Ok(out)
}

/// Writes `src` (seen through `lsrc`) into `dst` (seen through `ldst`); shapes match.
pub(crate) fn copy_into<T: Element>(dst: &mut [T], ldst: &Layout, src: &[T], lsrc: &Layout) {
    let walk = Strided::new([ldst, lsrc]);
    walk.runs(0..ldst.numel(), |_, [od, os], len, [sd, ss]| {
        if sd == 1 && ss == 1 {
            dst[od..od + len].copy_from_slice(&src[os..os + len]);
        } else {
            for i in 0..len {
                dst[od + i * sd] = src[os + i * ss];
            }
        }
    });
}

/// Makes `t` the only owner of a contiguous buffer of `T` that it covers whole (copying it when
/// shared or a view), so that an op can write it in place without changing what other handles
/// see (optimizer steps, loss scaling).
pub(crate) fn make_unique<T: Element>(t: &mut RawTensor) -> Result<()> {
    if t.unique_cpu_data::<T>().is_none() {
        *t = contiguous(t)?;
    }
    Ok(())
}

/// A contiguous copy of a CPU tensor (any view).
pub(crate) fn contiguous(t: &RawTensor) -> Result<RawTensor> {
    let s = t.cpu_storage().expect("cpu");
    Ok(cpu_dispatch!(s, |data: T| RawTensor::from_cpu_vec(
        gather_strided::<T>(data, &t.layout)?,
        t.layout.shape
    )))
}

/// The tensor itself when contiguous, else a contiguous copy: what a CPU kernel calls instead of
/// `RawTensor::contiguous`, which goes back through the dispatcher (a kernel is a leaf).
pub(crate) fn contiguous_or_self(t: &RawTensor) -> Result<RawTensor> {
    if t.layout.is_contiguous() {
        Ok(t.clone())
    } else {
        contiguous(t)
    }
}

/// The values of a CPU tensor converted to `dtype`.
pub(crate) fn cast(t: &RawTensor, dtype: DType) -> Result<RawTensor> {
    if let Some(done) = cast_half(t, dtype) {
        return done;
    }
    let s = t.cpu_storage().expect("cpu");
    cpu_dispatch!(s, |data: T| cast_slice::<T>(data, &t.layout, dtype))
}

/// Casts between `f32`, `f16` and `bf16` of a contiguous view, in blocks (the same bits as the
/// per-element cast: widening is exact, and `f16` <-> `bf16` goes through `f32` there too).
/// `None` for every other pair of dtypes and for strided views.
fn cast_half(t: &RawTensor, dtype: DType) -> Option<Result<RawTensor>> {
    use crate::core::cpu_storage::CpuStorage as C;
    use crate::ops::half::{convert_into, narrow_into, widen_into};
    let r = t.layout.contiguous_range()?;
    let n = r.len();
    let shape = t.layout.shape;
    fn out<U: Element>(
        n: usize,
        fill: impl FnOnce(&mut [U]),
        shape: crate::core::layout::Dims,
    ) -> Result<RawTensor> {
        let mut v = U::pool().take(n)?;
        fill(&mut v);
        Ok(RawTensor::from_cpu_vec(v, shape))
    }
    Some(match (t.cpu_storage()?, dtype) {
        (C::F32(v), DType::F16) => out(n, |o| narrow_into::<half::f16>(&v.as_slice()[r], o), shape),
        (C::F32(v), DType::BF16) => {
            out(n, |o| narrow_into::<half::bf16>(&v.as_slice()[r], o), shape)
        }
        (C::F16(v), DType::F32) => out(n, |o| widen_into(&v.as_slice()[r], o), shape),
        (C::BF16(v), DType::F32) => out(n, |o| widen_into(&v.as_slice()[r], o), shape),
        (C::F16(v), DType::BF16) => out(
            n,
            |o| convert_into::<half::f16, half::bf16>(&v.as_slice()[r], o),
            shape,
        ),
        (C::BF16(v), DType::F16) => out(
            n,
            |o| convert_into::<half::bf16, half::f16>(&v.as_slice()[r], o),
            shape,
        ),
        _ => return None,
    })
}

fn cast_slice<T: Element>(data: &[T], layout: &Layout, dtype: DType) -> Result<RawTensor> {
    fn go<T: Element, U: Element>(data: &[T], layout: &Layout) -> Result<RawTensor> {
        let mut out = U::pool().take(layout.numel())?;
        map1(data, layout, &mut out, |x| U::from_f64(x.to_f64()));
        Ok(RawTensor::from_cpu_vec(out, layout.shape))
    }
    match dtype {
        DType::F32 => go::<T, f32>(data, layout),
        DType::F64 => go::<T, f64>(data, layout),
        DType::I64 => go::<T, i64>(data, layout),
        DType::Bool => go::<T, bool>(data, layout),
        DType::F16 => go::<T, half::f16>(data, layout),
        DType::BF16 => go::<T, half::bf16>(data, layout),
    }
}

impl super::CopyKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn contiguous(self, t: &RawTensor) -> Result<RawTensor> {
        contiguous(t)
    }
    #[inline(always)]
    fn cast(self, t: &RawTensor, dtype: DType) -> Result<RawTensor> {
        cast(t, dtype)
    }
}
