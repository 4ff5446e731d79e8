//! Devices as types ([`Cpu`], [`Cuda<N>`]) and as a run-time value ([`DynDevice`]).
//!
//! A tensor's device is its type parameter: `Tensor<Cpu>` and `Tensor<Cuda<0>>` are different
//! types, so an op that mixes them does not compile. A [`Cuda<N>`] value is a capability: the
//! only way to get one is [`Cuda::open`], which fails cleanly (never panics) when there is no
//! driver or no such GPU. Holding one proves the device is usable.

pub use crate::core::DynDevice;

use crate::core::error::Result;
use std::fmt;

pub(crate) mod graph;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Cpu {}
    impl<const N: usize> Sealed for super::Cuda<N> {}
    impl<const N: usize> Sealed for super::graph::Capturing<super::Cuda<N>> {}
}

/// A device whose values the host may wait for: [`Cpu`] and [`Cuda<N>`], not a device whose
/// stream is being captured into a CUDA graph ([`Capturing`](crate::cuda::Capturing)).
///
/// The operations that make the host wait for the GPU (`to_vec`, `item`, printing, `to`,
/// `synchronize`) ask for it; generic code that reads values back names it too:
/// `fn show<D: Device + HostSync>(x: &Tensor<D>)`.
#[diagnostic::on_unimplemented(
    message = "cannot synchronize while the stream is capturing: the host may not wait for `{Self}`'s values here",
    label = "this makes the host wait for the GPU",
    note = "on a `Capturing<Cuda<N>>` device the GPU work is recorded into a CUDA graph, not run: operation not permitted when stream is capturing",
    note = "inside a captured step, give the result to a `cuda::StaticTensor` (`out.set(&y)`) and read it after `graph.replay()?` with `out.read()`",
    note = "in a generic function that reads values back (not a captured step), ask for it: `fn f<D: Device + HostSync>(...)`"
)]
pub trait HostSync: Device {}
impl HostSync for Cpu {}
impl<const N: usize> HostSync for Cuda<N> {}

/// A device whose tensors may be copied to `D2` with `to(dev)`: every device to a GPU, and a
/// device the host may wait for ([`HostSync`]) to any device; not a capturing device
/// ([`Capturing`](crate::cuda::Capturing)) to the CPU, a copy the host would wait for.
///
/// `tensor.to(dev)` asks for it. Generic code rarely names it: `D: Device + HostSync` moves to
/// any device (`x.to(Cpu)` in a `fn f<D: Device + HostSync>`), and any `D: Device` moves to a
/// GPU; a function generic over both devices asks for `D: CopyTo<D2>`.
#[diagnostic::on_unimplemented(
    message = "cannot synchronize while the stream is capturing: the host may not wait for `{Self}`'s values to move them to `{D2}`",
    label = "this makes the host wait for the GPU",
    note = "on a `Capturing<Cuda<N>>` device the GPU work is recorded into a CUDA graph, not run: operation not permitted when stream is capturing",
    note = "inside a captured step, give the result to a `cuda::StaticTensor` (`out.set(&y)`) and move it after `graph.replay()?`: `out.read().to(Cpu)`",
    note = "in a generic function that moves tensors between two devices, ask for it: `fn f<D: CopyTo<D2>, D2: Device>(...)`, or `D: Device + HostSync`"
)]
pub trait CopyTo<D2: Device>: Device {}
impl<D: HostSync, D2: Device> CopyTo<D2> for D {}
impl<const N: usize, const M: usize> CopyTo<Cuda<M>> for graph::Capturing<Cuda<N>> {}
impl<const N: usize, const M: usize> CopyTo<graph::Capturing<Cuda<M>>>
    for graph::Capturing<Cuda<N>>
{
}

/// A device a tensor can live on: [`Cpu`] or [`Cuda<N>`]. Sealed: devtype knows how to run
/// every op on each of them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a device type: use `Cpu` or `Cuda<N>` (or a generic `D: Device`)",
    label = "not a device type",
    note = "`DynDevice` is a run-time value: keep a `DynTensor`, or convert with `.try_into_typed::<Cuda<0>>()`"
)]
pub trait Device:
    sealed::Sealed + Copy + Send + Sync + 'static + fmt::Debug + fmt::Display + PartialEq + Eq
{
    /// The same device as a run-time value.
    fn dyn_device(&self) -> DynDevice;

    /// Recovers the typed device from a run-time one, if it is this device.
    ///
    /// For `Cuda<N>` this only succeeds for a device that has been opened, so the capability
    /// rule holds: no `Cuda<N>` value exists without an open device.
    fn from_dyn(device: DynDevice) -> Option<Self>;

    /// The device this type stands for, as a run-time value (`Cuda<0>` is `cuda:0`), without
    /// opening it: error texts name it.
    #[doc(hidden)]
    fn type_device() -> DynDevice;

    /// Waits until all work queued on this device has finished (a no-op on the CPU).
    ///
    /// Time GPU code only after this, as PyTorch's `torch.cuda.synchronize()`. Not available
    /// on a capturing device (see [`HostSync`]).
    fn synchronize(&self) -> Result<()>
    where
        Self: HostSync;

    /// Of this device and `Other`, the one PyTorch's element-wise device check names first:
    /// the first non-CPU device (`cuda:0 and cpu`, whichever operand is on the CPU).
    ///
    /// Only the compile error's headline reads it (see [`OperandOn`](crate::OperandOn)).
    #[doc(hidden)]
    type NamedFirst<Other: Device>: Device;
    /// The other device of the pair that [`NamedFirst`](Device::NamedFirst) names first.
    #[doc(hidden)]
    type NamedSecond<Other: Device>: Device;
    /// The same order seen from the operand's side (`Self` is the operand's device, `Recv` the
    /// receiver's): a CPU operand puts the receiver first even when `Recv` is generic.
    #[doc(hidden)]
    type OperandFirst<Recv: Device>: Device;
    /// The other device of the pair that [`OperandFirst`](Device::OperandFirst) names first.
    #[doc(hidden)]
    type OperandSecond<Recv: Device>: Device;
}

/// The host CPU. Always available.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cpu;

impl fmt::Display for Cpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cpu")
    }
}

impl Device for Cpu {
    // The other device is named first: it is the non-CPU one (or the CPU too).
    type NamedFirst<Other: Device> = Other;
    type NamedSecond<Other: Device> = Cpu;
    type OperandFirst<Recv: Device> = Recv;
    type OperandSecond<Recv: Device> = Cpu;
    #[inline]
    fn dyn_device(&self) -> DynDevice {
        DynDevice::cpu()
    }
    fn from_dyn(device: DynDevice) -> Option<Self> {
        device.is_cpu().then_some(Cpu)
    }
    fn type_device() -> DynDevice {
        DynDevice::cpu()
    }
    fn synchronize(&self) -> Result<()>
    where
        Self: HostSync,
    {
        Ok(())
    }
}

/// GPU number `N`, opened through CUDA. Get one with [`Cuda::open`].
///
/// ```
/// use devtype::prelude::*;
/// match Cuda::<0>::open() {
///     Ok(gpu) => println!("running on {gpu}"),
///     Err(e) => println!("no GPU here: {e}"),
/// }
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cuda<const N: usize> {
    _opened: (),
}

impl<const N: usize> Cuda<N> {
    /// Opens GPU `N`: creates its context and stream once per process (later calls share them).
    ///
    /// Fails with PyTorch's `Found no NVIDIA driver on your system. ...` when no driver loads,
    /// and with `invalid device ordinal` when the driver has no GPU `N`. Never panics.
    pub fn open() -> Result<Self> {
        crate::backend::cuda::context::open(N)?;
        Ok(Cuda { _opened: () })
    }

    /// The index `N`.
    pub const fn ordinal(&self) -> usize {
        N
    }
}

impl<const N: usize> fmt::Debug for Cuda<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cuda<{N}>")
    }
}

impl<const N: usize> fmt::Display for Cuda<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cuda:{N}")
    }
}

impl<const N: usize> Device for Cuda<N> {
    // A GPU is named before the CPU, and before a later operand's GPU.
    type NamedFirst<Other: Device> = Cuda<N>;
    type NamedSecond<Other: Device> = Other;
    type OperandFirst<Recv: Device> = Recv::NamedFirst<Cuda<N>>;
    type OperandSecond<Recv: Device> = Recv::NamedSecond<Cuda<N>>;
    #[inline]
    fn dyn_device(&self) -> DynDevice {
        DynDevice::cuda(N)
    }
    fn type_device() -> DynDevice {
        DynDevice::cuda(N)
    }
    fn from_dyn(device: DynDevice) -> Option<Self> {
        (device.cuda_index() == Some(N) && crate::backend::cuda::context::is_open(N))
            .then_some(Cuda { _opened: () })
    }
    fn synchronize(&self) -> Result<()>
    where
        Self: HostSync,
    {
        crate::backend::cuda::synchronize(N)
    }
}

/// Something generic over the device, run by [`run_on_best_device`].
///
/// This is the typed form of the seed's `device = "cuda" if available else "cpu"`: write the
/// job once as a generic function, and let devtype pick the device.
pub trait DeviceJob {
    /// What the job returns.
    type Output;
    /// Runs the job on `device` (a device whose values the host may read: write
    /// `fn run<D: Device + HostSync>` to read them, or just `D: Device`).
    fn run<D: Device + HostSync>(self, device: D) -> Self::Output;
}

/// Runs `job` on `Cuda<0>` when it opens, otherwise on [`Cpu`].
///
/// ```
/// use devtype::prelude::*;
/// use devtype::device::{run_on_best_device, DeviceJob};
///
/// struct Shape;
/// impl DeviceJob for Shape {
///     type Output = Vec<usize>;
///     fn run<D: Device>(self, dev: D) -> Vec<usize> {
///         let ones = Tensor::<D>::ones([4, 2], dev);  // created directly on the device
///         ones.shape().to_vec()
///     }
/// }
/// assert_eq!(run_on_best_device(Shape), vec![4, 2]);
/// ```
pub fn run_on_best_device<J: DeviceJob>(job: J) -> J::Output {
    match Cuda::<0>::open() {
        Ok(gpu) => job.run(gpu),
        Err(_) => job.run(Cpu),
    }
}

/// Opening and waiting: the device value meets the backends here, above them.
impl DynDevice {
    /// Opens the device if it is a GPU (a no-op on the CPU); fails as [`Cuda::open`](crate::Cuda::open).
    pub fn open(self) -> Result<Self> {
        if let Some(i) = self.cuda_index() {
            crate::backend::cuda::context::open(i)?;
        }
        Ok(self.resolved())
    }

    /// Waits for all work queued on this device.
    pub fn synchronize(self) -> Result<()> {
        match self.cuda_index() {
            Some(i) => crate::backend::cuda::synchronize(i),
            None => Ok(()),
        }
    }
}

impl From<Cpu> for DynDevice {
    fn from(_: Cpu) -> Self {
        DynDevice::cpu()
    }
}

impl<const N: usize> From<Cuda<N>> for DynDevice {
    fn from(_: Cuda<N>) -> Self {
        DynDevice::cuda(N)
    }
}

/// The device type's own name, `Cpu` or `Cuda<0>`, as error texts and `Debug` output show it.
pub(crate) fn type_label<D: Device>() -> &'static str {
    std::any::type_name::<D>()
        .rsplit("::")
        .next()
        .unwrap_or("?")
}
