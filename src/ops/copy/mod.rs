//! Copies: contiguous copies of strided views, moves between devices, element-type casts.

pub(super) mod cpu;
pub(crate) mod cuda;

pub(crate) use cpu::copy_into;

use crate::core::error::{Error, Result};
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::core::{DType, DynDevice, Element};

/// Queues a copy of `src`'s values into `dst`'s own memory on a GPU (PyTorch's
/// `dst.copy_(src)`): `src` of `dst`'s dtype, on its GPU, broadcast to `dst`'s shape (PyTorch's
/// text where it does not broadcast); either may be a strided view. What a CUDA graph needs:
/// the copy writes the memory the graph reads at every replay (a new tensor would not be).
/// The callers make sure no one else reads `dst` as a value (a `StaticTensor`'s buffer, a
/// running statistic no handle shares), so the write is the update they mean.
pub(crate) fn copy_into_gpu(dst: &mut RawTensor, src: &RawTensor) -> Result<()> {
    let (Some(ordinal), true, true) = (
        dst.device.cuda_index(),
        src.device == dst.device,
        src.dtype == dst.dtype,
    ) else {
        return Err(Error::Internal {
            context: "copy_into_gpu",
            message: format!(
                "a {} tensor on {} copied into a {} tensor on {}",
                src.dtype.torch_name(),
                src.device,
                dst.dtype.torch_name(),
                dst.device
            ),
        });
    };
    let dst_shape = dst.layout.shape;
    let src_shape = &src.layout.shape;
    let both = crate::core::layout::broadcast_shapes(&dst_shape, src_shape)?;
    if both[..] != dst_shape[..] {
        return Err(Error::Shape(format!(
            "output with shape {:?} doesn't match the broadcast shape {:?}",
            &dst_shape[..],
            &both[..]
        )));
    }
    // The source's strides seen over `dst`'s shape: 0 where it broadcasts.
    let rank = dst_shape.len();
    let lead = rank - src_shape.len();
    let strides: Vec<usize> = (0..rank)
        .map(|i| {
            if i < lead || src_shape[i - lead] == 1 {
                0
            } else {
                src.layout.strides[i - lead]
            }
        })
        .collect();
    let gpu = crate::backend::cuda::context::get(ordinal)?;
    let to = crate::backend::cuda::memory::ptr(dst)?;
    let from = crate::backend::cuda::memory::ptr(src)?;
    cuda::copy_strided(
        gpu,
        dst.dtype,
        &dst_shape,
        (to, &dst.layout.strides),
        (from, &strides),
    )
}

/// A contiguous copy of `t`, on the same device, made even when `t` is contiguous already:
/// kernels call [`RawTensor::contiguous`], which copies only a strided view.
fn copy_contiguous(t: &RawTensor) -> Result<RawTensor> {
    dispatch!([t], |be| be.contiguous(t))
}

/// A copy on another device. `device` is resolved and differs from `t.device`.
pub(crate) fn to_device(t: &RawTensor, device: DynDevice) -> Result<RawTensor> {
    match (t.device.cuda_index(), device.cuda_index()) {
        (None, Some(ordinal)) => cuda::upload(&t.contiguous()?, ordinal),
        (Some(_), None) => cuda::download(t),
        (Some(_), Some(ordinal)) => cuda::device_to_device(t, ordinal),
        (None, None) => Ok(t.clone()),
    }
}

/// The values converted to another element type (PyTorch's `x.to(torch.float64)`).
pub(crate) fn cast(t: &RawTensor, dtype: DType) -> Result<RawTensor> {
    if t.dtype == dtype {
        return Ok(t.clone());
    }
    dispatch!([t], |be| be.cast(t, dtype))
}

/// The untyped tensor's methods that copy: they run kernels, so they live here, above the
/// backends, and not in `core`.
impl RawTensor {
    /// A contiguous tensor on `device` made from host values (the length is checked).
    pub(crate) fn from_vec<E: Element>(
        data: Vec<E>,
        shape: &[usize],
        device: DynDevice,
    ) -> Result<Self> {
        let dims = Dims::shape(shape)?;
        let numel: usize = dims.iter().product();
        if data.len() != numel {
            return Err(Error::LengthMismatch {
                len: data.len(),
                shape: shape.to_vec(),
                numel,
            });
        }
        let t = RawTensor::from_cpu_vec(data, dims);
        if device.is_cpu() {
            Ok(t)
        } else {
            t.to_device(device)
        }
    }

    /// The values in row-major order, copied to the host. On a GPU this waits for it.
    pub(crate) fn to_vec<E: Element>(&self) -> Result<Vec<E>> {
        self.expect_dtype(E::DTYPE)?;
        match self.cpu_storage() {
            Some(s) => {
                let data = E::cpu_slice(s).ok_or(Error::DTypeMismatch {
                    expected: E::DTYPE,
                    found: s.dtype(),
                })?;
                if let Some(r) = self.layout.contiguous_range() {
                    return crate::core::pool::copy_to_vec(&data[r]);
                }
                let mut out = crate::core::pool::zeroed_vec::<E>(self.numel())?;
                crate::backend::cpu::strided::map1(data, &self.layout, &mut out, |x| x);
                Ok(out)
            }
            None => {
                let host = self.to_device(DynDevice::cpu())?;
                host.to_vec()
            }
        }
    }

    /// The one value of a one-element tensor (PyTorch's `.item()`).
    pub(crate) fn item<E: Element>(&self) -> Result<E> {
        if self.numel() != 1 {
            return Err(Error::ItemNotScalar(self.numel()));
        }
        Ok(self.to_vec::<E>()?[0])
    }

    /// A contiguous copy (or `self` when already contiguous).
    pub(crate) fn contiguous(&self) -> Result<Self> {
        if self.layout.is_contiguous() {
            return Ok(self.clone());
        }
        copy_contiguous(self)
    }

    /// Moves to `device`: the same storage when already there, else a copy.
    pub(crate) fn to_device(&self, device: DynDevice) -> Result<Self> {
        let device = device.resolved();
        if device == self.device {
            return Ok(self.clone());
        }
        to_device(self, device)
    }
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait CopyKernel {
    fn contiguous(self, t: &RawTensor) -> Result<RawTensor>;
    fn cast(self, t: &RawTensor, dtype: DType) -> Result<RawTensor>;
}
