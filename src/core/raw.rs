//! The untyped core every front sits on: storage, layout, element type and device.
//!
//! `Tensor<D, E>` is a phantom-typed wrapper of [`RawTensor`] that skips the device check the
//! compiler already made; `DynTensor` wraps the same thing and checks at run time. Every kernel
//! is written once, against `RawTensor`.

use super::layout::{Dims, Layout};
use super::{DType, Element};
use crate::core::cpu_storage::CpuStorage;
use crate::core::error::{Error, Result};
use crate::core::storage::{SharedStorage, Storage};
use crate::core::DynDevice;
use std::borrow::Cow;

/// A tensor without a static device or element type.
#[derive(Clone)]
pub struct RawTensor {
    pub(crate) storage: SharedStorage,
    pub(crate) layout: Layout,
    pub(crate) dtype: DType,
    pub(crate) device: DynDevice,
}

/// An operand that may be owned (its buffer can then be reused for the result).
pub type Operand<'a> = Cow<'a, RawTensor>;

impl std::fmt::Debug for RawTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "RawTensor({:?}, {:?}, {})",
            self.layout, self.dtype, self.device
        )
    }
}

impl RawTensor {
    /// A contiguous CPU tensor owning `data`.
    #[inline]
    pub(crate) fn from_cpu_vec<E: Element>(data: Vec<E>, shape: Dims) -> Self {
        debug_assert_eq!(data.len(), shape.iter().product::<usize>());
        RawTensor {
            storage: SharedStorage::new(Storage::Cpu(E::into_cpu_storage(data))),
            layout: Layout::contiguous(shape),
            dtype: E::DTYPE,
            device: DynDevice::cpu(),
        }
    }

    /// A CPU tensor owning `data` (inline when tiny: one allocation in all) with the
    /// contiguous `layout` (`Layout::contiguous` of its shape). Compute that layout before the
    /// kernel that fills `data`, not right before this call: a layout written just before the
    /// result is moved stalls the move (store forwarding fails on its narrow stores; see
    /// [`RawTensor::cpu_filled`]).
    #[inline(always)]
    pub(crate) fn from_cpu_buffer<E: Element>(
        data: crate::core::pool::PooledVec<E>,
        layout: Layout,
    ) -> Self {
        debug_assert_eq!(data.as_slice().len(), layout.numel());
        let storage = SharedStorage::new(Storage::Cpu(E::buffer_into_cpu_storage(data)));
        RawTensor::from_cpu_storage::<E>(storage, layout)
    }

    /// A CPU tensor of `E` on `storage` with the contiguous `layout` (see
    /// [`RawTensor::from_cpu_buffer`] for when to compute it).
    #[inline(always)]
    pub(crate) fn from_cpu_storage<E: Element>(storage: SharedStorage, layout: Layout) -> Self {
        debug_assert!(
            layout.offset == 0 && layout.strides == Layout::contiguous(layout.shape).strides
        );
        RawTensor {
            storage,
            layout,
            dtype: E::DTYPE,
            device: DynDevice::cpu(),
        }
    }

    /// A contiguous CPU tensor of `shape` whose `len` values `fill` writes, every one (it may be
    /// handed a recycled buffer's stale values), where they stay:
    /// inside the storage's own allocation when they fit there (see
    /// [`SharedStorage::tiny_cpu`]: a buffer built on the stack and moved in costs a
    /// store-forwarding stall per result), else in a pooled buffer. Fails only when the host
    /// has no room for the buffer.
    #[inline(always)]
    pub(crate) fn cpu_filled<E: Element>(
        shape: Dims,
        len: usize,
        fill: impl FnOnce(&mut [E]),
    ) -> Result<Self> {
        debug_assert_eq!(len, shape.iter().product::<usize>());
        // The layout first, so that its stores have left the store buffer by the time the
        // result is moved (after `fill`): a layout computed right before the move stalls it
        // (store forwarding fails on the narrow stores it reads back).
        let layout = Layout::contiguous(shape);
        if len <= crate::core::pool::INLINE {
            let storage = SharedStorage::tiny_cpu::<E>(len, fill);
            return Ok(RawTensor::from_cpu_storage::<E>(storage, layout));
        }
        let mut buffer = crate::core::pool::PooledVec::<E>::with_len(len)?;
        fill(buffer.as_mut_slice());
        Ok(RawTensor::from_cpu_buffer(buffer, layout))
    }

    #[inline]
    pub(crate) fn shape(&self) -> &[usize] {
        &self.layout.shape
    }

    #[inline]
    pub(crate) fn rank(&self) -> usize {
        self.layout.rank()
    }

    #[inline]
    pub(crate) fn numel(&self) -> usize {
        self.layout.numel()
    }

    /// The whole CPU storage as a slice of `E`, if this is a CPU tensor of `E`.
    #[inline]
    pub(crate) fn cpu_storage(&self) -> Option<&CpuStorage> {
        match &*self.storage {
            Storage::Cpu(s) => Some(s),
            Storage::Cuda(_) => None,
        }
    }

    /// The whole CPU storage as a slice of `E`.
    #[inline]
    pub(crate) fn cpu_slice<E: Element>(&self) -> Option<&[E]> {
        self.cpu_storage().and_then(E::cpu_slice)
    }

    /// The values as a mutable slice, when this tensor is the only user of its storage and
    /// covers it whole and in order: then an op can write its result in place.
    #[inline]
    pub(crate) fn unique_cpu_data<E: Element>(&mut self) -> Option<&mut [E]> {
        if self.layout.offset != 0 || self.dtype != E::DTYPE || !self.layout.is_contiguous() {
            return None;
        }
        let numel = self.numel();
        match self.storage.get_mut()? {
            Storage::Cpu(s) => E::cpu_slice_mut(s).filter(|v| v.len() == numel),
            Storage::Cuda(_) => None,
        }
    }

    /// The same storage seen through another layout.
    #[inline]
    pub(crate) fn with_layout(&self, layout: Layout) -> Self {
        RawTensor {
            storage: self.storage.clone(),
            layout,
            dtype: self.dtype,
            device: self.device,
        }
    }

    /// Checks the element type.
    #[inline]
    pub(crate) fn expect_dtype(&self, dtype: DType) -> Result<()> {
        if self.dtype == dtype {
            Ok(())
        } else {
            Err(Error::DTypeMismatch {
                expected: dtype,
                found: self.dtype,
            })
        }
    }
}
