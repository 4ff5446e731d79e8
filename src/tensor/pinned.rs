//! Page-locked host tensors and the asynchronous copies that only they allow.
//!
//! A copy from ordinary (pageable) host memory is synchronous: the driver stages it through
//! its own page-locked buffer before the call returns, so it cannot overlap the GPU's work.
//! PyTorch's `x.to(dev, non_blocking=True)` is asynchronous only when `x` is pinned; devtype
//! makes that a type: [`to_async`](PinnedTensor::to_async) exists on [`PinnedTensor`] (made by
//! [`Tensor::pin_memory`]), and on `Tensor<Cpu>` it does not compile (see [`AsyncSource`]).
//!
//! ```
//! use devtype::prelude::*;
//! use devtype::PinnedTensor;
//!
//! let batch = Tensor::<Cpu>::ones([2, 3], Cpu);
//! let pinned: PinnedTensor = batch.pin_memory();   // page-locked (ordinary memory without a GPU)
//! assert_eq!(pinned.to_vec(), vec![1.0; 6]);        // read like any CPU tensor
//! let upload = pinned.to_async(Cpu);                // on a GPU: queued on its copy stream
//! let x = upload.into_tensor();
//! assert_eq!(x.shape(), &[2, 3]);
//! ```
//!
//! The source cannot be written or freed while a copy from it is in flight: the [`Upload`]
//! borrows it, and after that the block itself stays fenced by the copy's event (a later write
//! waits for it; the pool reuses the block only once it has completed).

use super::Tensor;
use crate::backend::cuda::pinned::pool;
use crate::core::error::Result;
use crate::core::layout::Layout;
use crate::core::pinned::Fence;
use crate::core::pool::PooledVec;
use crate::core::raw::RawTensor;
use crate::core::storage::{SharedStorage, Storage};
use crate::core::{DynDevice, Element};
use crate::device::{Cpu, Cuda, Device};
use std::marker::PhantomData;
use std::sync::Arc;

/// A host tensor in page-locked (pinned) memory: the only source of an asynchronous copy to a
/// GPU ([`to_async`](Self::to_async)). Made by [`Tensor::pin_memory`] (PyTorch's
/// `x.pin_memory()`); reads like a `Tensor<Cpu, E>` (it dereferences to one); written only
/// through [`as_mut_slice`](Self::as_mut_slice).
///
/// Without a CUDA driver the memory is ordinary host memory (devtype says so once on stderr;
/// PyTorch raises an error instead), so code written for a GPU runs on a CPU-only machine;
/// [`is_pinned`](Self::is_pinned) tells which.
pub struct PinnedTensor<E: Element = f32> {
    cpu: Tensor<Cpu, E>,
}

impl<E: Element> Tensor<Cpu, E> {
    /// A copy of this tensor in page-locked host memory (PyTorch's `x.pin_memory()`), from a
    /// pool that reuses blocks; see [`PinnedTensor`]. The copy does not track gradients.
    pub fn try_pin_memory(&self) -> Result<PinnedTensor<E>> {
        let mut out = PinnedTensor::try_zeros(self.shape())?;
        let src = self.raw.contiguous()?;
        let data = src
            .cpu_storage()
            .and_then(E::cpu_slice)
            .expect("a CPU tensor of E");
        let range = src.layout.contiguous_range().expect("contiguous");
        out.try_as_mut_slice()?.copy_from_slice(&data[range]);
        Ok(out)
    }

    /// A copy of this tensor in page-locked host memory (PyTorch's `x.pin_memory()`).
    ///
    /// Panics with the error's text where [`try_pin_memory`](Self::try_pin_memory) returns it.
    #[track_caller]
    pub fn pin_memory(&self) -> PinnedTensor<E> {
        self.try_pin_memory().unwrap_or_else(|e| panic!("{e}"))
    }

    /// Not available from pageable memory: `to_async` compiles only on a [`PinnedTensor`]
    /// (the bound names [`AsyncSource`], whose error message says why and what to write).
    pub fn to_async<D: Device>(&self, dev: D) -> Upload<'_, D, E>
    where
        Self: AsyncSource<Element = E>,
    {
        self.as_pinned().to_async(dev)
    }
}

/// What an asynchronous copy ([`to_async`](PinnedTensor::to_async), PyTorch's
/// `non_blocking=True`) can start from: page-locked memory, that is, a [`PinnedTensor`] only.
/// Sealed.
#[diagnostic::on_unimplemented(
    message = "`to_async` needs pinned memory: call `.pin_memory()` on this `{Self}` first",
    label = "pageable host memory: a copy from it cannot be asynchronous",
    note = "a copy from pageable memory is synchronous: the driver stages it through a page-locked buffer before returning, so it cannot overlap the GPU's work",
    note = "as PyTorch advises, pin first: `x.pin_memory().to_async(dev)` (PyTorch: `x.pin_memory().to(dev, non_blocking=True)`), or copy synchronously with `x.to(dev)`"
)]
pub trait AsyncSource: sealed::Sealed {
    /// The element type.
    type Element: Element;
    /// The pinned tensor itself.
    fn as_pinned(&self) -> &PinnedTensor<Self::Element>;
}

mod sealed {
    pub trait Sealed {}
    impl<E: crate::core::Element> Sealed for super::PinnedTensor<E> {}
}

impl<E: Element> AsyncSource for PinnedTensor<E> {
    type Element = E;
    fn as_pinned(&self) -> &PinnedTensor<E> {
        self
    }
}

impl<E: Element> PinnedTensor<E> {
    /// A pinned tensor of zeros of `shape`, to fill with [`as_mut_slice`](Self::as_mut_slice).
    pub fn try_zeros(shape: impl super::IntoShape) -> Result<Self> {
        let dims = crate::core::layout::Dims::shape(shape.as_dims())?;
        let numel = crate::core::layout::checked_numel(shape.as_dims())?;
        let bytes = numel
            .checked_mul(std::mem::size_of::<E>())
            .ok_or(crate::Error::CpuOutOfMemory { bytes: u64::MAX })?;
        let block = pool().take(bytes)?;
        let values = PooledVec::<E>::from_host_block(block, numel);
        let raw = RawTensor {
            storage: SharedStorage::new(Storage::Cpu(E::buffer_into_cpu_storage(values))),
            layout: Layout::contiguous(dims),
            dtype: E::DTYPE,
            device: DynDevice::cpu(),
        };
        Ok(PinnedTensor {
            cpu: Tensor::from_raw(raw, Cpu),
        })
    }

    /// A pinned tensor of zeros of `shape`.
    ///
    /// Panics with the error's text where [`try_zeros`](Self::try_zeros) returns it.
    #[track_caller]
    pub fn zeros(shape: impl super::IntoShape) -> Self {
        Self::try_zeros(shape).unwrap_or_else(|e| panic!("{e}"))
    }

    /// `host` as a pinned tensor (sharing its storage) when its values are a whole block of the
    /// pinned pool, as [`into_cpu`](Self::into_cpu) leaves them.
    pub(crate) fn from_pinned_storage(host: &Tensor<Cpu, E>) -> Option<Self> {
        let raw = &host.raw;
        let storage = raw.cpu_storage()?;
        storage.host_block()?;
        let whole = raw.layout.offset == 0
            && raw.layout.is_contiguous()
            && E::cpu_slice(storage)?.len() == raw.numel();
        whole.then(|| PinnedTensor {
            cpu: Tensor::from_raw(raw.clone(), Cpu),
        })
    }

    /// The tensor as a CPU tensor, to read it wherever one is read (also by `Deref`).
    pub fn as_cpu(&self) -> &Tensor<Cpu, E> {
        &self.cpu
    }

    /// The CPU tensor, giving up the pinned type (the memory stays page-locked until the
    /// storage goes).
    pub fn into_cpu(self) -> Tensor<Cpu, E> {
        self.cpu
    }

    /// True when the memory is page-locked; false where devtype fell back to ordinary memory
    /// (no CUDA driver).
    pub fn is_pinned(&self) -> bool {
        self.block().is_some_and(|b| b.is_pinned())
    }

    fn block(&self) -> Option<&crate::core::pinned::HostBlock> {
        self.cpu.raw.cpu_storage()?.host_block()
    }

    /// The values, to write in place (a batch prepared in pinned memory). Takes `&mut self`,
    /// so it does not compile while an [`Upload`] from this tensor lives; after one, it waits
    /// for that copy to have read the values (no wait when it has). When another tensor shares
    /// the storage (a clone of [`as_cpu`](Self::as_cpu)), this one first gets its own pinned
    /// copy, so the other never sees the writes.
    pub fn try_as_mut_slice(&mut self) -> Result<&mut [E]> {
        if self.cpu.raw.unique_cpu_data::<E>().is_none() {
            *self = self.cpu.try_pin_memory()?;
        }
        Ok(self
            .cpu
            .raw
            .unique_cpu_data::<E>()
            .expect("a fresh pinned tensor is unshared"))
    }

    /// The values, to write in place; see [`try_as_mut_slice`](Self::try_as_mut_slice).
    ///
    /// Panics with the error's text where `try_as_mut_slice` returns it.
    #[track_caller]
    pub fn as_mut_slice(&mut self) -> &mut [E] {
        self.try_as_mut_slice().unwrap_or_else(|e| panic!("{e}"))
    }

    /// Queues a copy to `dev` (PyTorch's `x.to(dev, non_blocking=True)`) and returns at once.
    ///
    /// On a GPU the copy runs on the device's copy stream, overlapping its compute stream, and
    /// the compute stream waits for exactly this copy's event: the result is usable at once,
    /// every op on it runs after the copy, and no host wait is needed. The returned [`Upload`]
    /// borrows this tensor, so it cannot be written or dropped while the guard lives. On the
    /// CPU (or from memory that could not be pinned) it is a plain copy.
    pub fn try_to_async<D: Device>(&self, dev: D) -> Result<Upload<'_, D, E>> {
        let (raw, fence) = match dev.dyn_device().cuda_index() {
            Some(ordinal) => crate::ops::copy::cuda::upload_async(&self.cpu.raw, ordinal)?,
            None => (self.cpu.raw.clone(), None),
        };
        Ok(Upload {
            tensor: Tensor::from_raw(raw, dev),
            fence,
            _source: PhantomData,
        })
    }

    /// Queues a copy to `dev`; see [`try_to_async`](Self::try_to_async).
    ///
    /// Panics with the error's text where `try_to_async` returns it.
    #[track_caller]
    pub fn to_async<D: Device>(&self, dev: D) -> Upload<'_, D, E> {
        self.try_to_async(dev).unwrap_or_else(|e| panic!("{e}"))
    }
}

impl<E: Element> std::ops::Deref for PinnedTensor<E> {
    type Target = Tensor<Cpu, E>;
    fn deref(&self) -> &Tensor<Cpu, E> {
        &self.cpu
    }
}

impl<E: Element> std::fmt::Debug for PinnedTensor<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PinnedTensor(pinned={}, {:?})",
            self.is_pinned(),
            self.cpu
        )
    }
}

/// A copy from a [`PinnedTensor`] in flight (see [`PinnedTensor::to_async`]). It borrows the
/// source, so the source cannot be written or dropped until the guard is dropped, waited on,
/// or turned into its tensor.
#[must_use = "the copy's result is in the guard: take it with `.into_tensor()` (no wait) or `.wait()`"]
pub struct Upload<'a, D: Device, E: Element> {
    tensor: Tensor<D, E>,
    fence: Option<Arc<dyn Fence>>,
    _source: PhantomData<&'a PinnedTensor<E>>,
}

impl<D: Device, E: Element> Upload<'_, D, E> {
    /// The copy's result, usable at once: ops on it are queued after the copy (stream order).
    pub fn tensor(&self) -> &Tensor<D, E> {
        &self.tensor
    }

    /// The copy's result, ending the borrow of the source without waiting; a later write to
    /// the source waits for the copy (see [`PinnedTensor::as_mut_slice`]).
    pub fn into_tensor(self) -> Tensor<D, E> {
        self.tensor
    }

    /// True once the copy has finished (never waits).
    pub fn is_complete(&self) -> bool {
        self.fence.as_ref().is_none_or(|f| f.is_complete())
    }

    /// Waits for the copy to finish (a counted host sync when it has not) and returns the
    /// result.
    pub fn wait(self) -> Result<Tensor<D, E>> {
        if let Some(f) = &self.fence {
            if !f.is_complete() {
                f.wait()?;
            }
        }
        Ok(self.tensor)
    }
}

/// The destination of an asynchronous copy from a GPU: the host, [`Cpu`] (into pinned
/// memory, see [`Tensor::to_async`](Tensor::<Cuda<0>>::to_async)).
///
/// A copy to another GPU is not a download: it is a plain `x.to(dev)`, queued on the
/// device's stream without a host wait.
#[diagnostic::on_unimplemented(
    message = "`to_async` on a GPU tensor copies to the host: pass `Cpu`, not `{Self}`",
    label = "a GPU tensor's `to_async` downloads into pinned host memory",
    note = "to another GPU, copy with `x.to(dev)` (queued on the stream, no host wait); to the host, `x.to_async(Cpu).wait()?`"
)]
pub trait HostDevice: Device {}

impl HostDevice for Cpu {}

impl<const N: usize, E: Element> Tensor<Cuda<N>, E> {
    /// Queues a copy of this tensor into a new pinned host tensor and returns at once
    /// (PyTorch's `x.to("cpu", non_blocking=True)`, whose result is only safe to read after a
    /// sync). The values come out of the [`Download`] only through its
    /// [`wait`](Download::wait), so nothing reads them early.
    pub fn try_to_async<H: HostDevice>(&self, _dev: H) -> Result<Download<E>> {
        let mut value = PinnedTensor::<E>::try_zeros(self.shape())?;
        let fence = crate::ops::copy::cuda::download_async(&self.raw, &mut value.cpu.raw)?;
        Ok(Download { value, fence })
    }

    /// Queues a copy to pinned host memory; see [`try_to_async`](Self::try_to_async).
    ///
    /// Panics with the error's text where `try_to_async` returns it.
    #[track_caller]
    pub fn to_async<H: HostDevice>(&self, dev: H) -> Download<E> {
        self.try_to_async(dev).unwrap_or_else(|e| panic!("{e}"))
    }
}

/// A copy from a GPU into pinned host memory in flight; the values are readable only through
/// [`wait`](Self::wait). Dropping it without waiting is fine: the memory goes back to the pool
/// and is handed out again only once the copy has finished.
#[must_use = "the values arrive only through `.wait()`"]
pub struct Download<E: Element> {
    value: PinnedTensor<E>,
    fence: Arc<dyn Fence>,
}

/// What a [`Download`] is not until `.wait()` returns: readable. No type implements it, so
/// reading a download without waiting is a compile error that names `.wait()`.
#[diagnostic::on_unimplemented(
    message = "the values of a `Download` arrive only through `.wait()`: it is a copy in flight, not a tensor",
    label = "this copy may not have finished: wait for it first",
    note = "`let x = x_gpu.to_async(Cpu).wait()?;` then `x.to_vec()` (PyTorch: `x.to(\"cpu\", non_blocking=True)` is only safe to read after `torch.cuda.synchronize()`)"
)]
pub trait Waited {
    /// Never called: no type implements `Waited`.
    #[doc(hidden)]
    fn never(&self) -> !;
}

impl<E: Element> Download<E> {
    /// Not available: the values come out of [`wait`](Self::wait) (a compile error that says
    /// so).
    pub fn to_vec(&self) -> Vec<E>
    where
        Self: Waited,
    {
        self.never()
    }

    /// Not available: the value comes out of [`wait`](Self::wait) (a compile error that says
    /// so).
    pub fn item(&self) -> E
    where
        Self: Waited,
    {
        self.never()
    }

    /// Not available: the tensor comes out of [`wait`](Self::wait) (a compile error that says
    /// so).
    pub fn into_tensor(self) -> Tensor<Cpu, E>
    where
        Self: Waited,
    {
        self.never()
    }

    /// True once the copy has finished (never waits).
    pub fn is_complete(&self) -> bool {
        self.fence.is_complete()
    }

    /// Waits for the copy (a counted host sync when it has not finished) and returns the
    /// values.
    pub fn wait(self) -> Result<PinnedTensor<E>> {
        if !self.fence.is_complete() {
            self.fence.wait()?;
        }
        Ok(self.value)
    }
}
