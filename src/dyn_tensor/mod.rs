//! `DynTensor`: the device is a run-time value, and every mistake is an `Err` with PyTorch's text.
//!
//! Use it when the device comes from a config file or a command line (`"cuda:0".parse()`).
//! Each op checks devices first, exactly as PyTorch does (and with its message), then calls the
//! same kernels as the typed front. Nothing panics on bad input except the operators, which
//! panic with the error's text (as PyTorch raises).

pub(crate) mod check;
mod grad;

use crate::core::error::{Error, Result};
use crate::core::layout::checked_numel;
use crate::core::layout::Dims;
use crate::core::raw::{Operand, RawTensor};
use crate::device::{Device, DynDevice};
use crate::graph::{Node, Out};
use crate::ops::creation::{create, Fill};
use crate::tensor::operand::sealed::AsRaw;
use crate::tensor::{DType, Element, IntoShape, Scalar, Tensor};
use std::sync::Arc;

/// A tensor whose device and element type are run-time values.
///
/// `clone()` is a new handle to the same storage (no copy). Tensors are values: an in-place
/// op (`add_`, `+=`) rebinds the one handle it is applied to, so clones, views and the tensor
/// a view came from keep their values (PyTorch writes through views; here a slice is assigned
/// with [`slice_scatter`](DynTensor::slice_scatter)).
///
/// ```
/// use devtype::prelude::*;
/// # fn main() -> Result<(), devtype::Error> {
/// let dev: DynDevice = "cpu".parse()?;
/// let x = DynTensor::randn([4, 10], dev)?;
/// let w = DynTensor::ones([10, 2], dev)?;
/// let out = x.matmul(&w)?;
/// assert_eq!(out.shape(), &[4, 2]);
/// assert_eq!(out.device().to_string(), "cpu");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct DynTensor {
    pub(crate) raw: RawTensor,
    /// The autograd node, as on the typed front.
    pub(crate) node: Option<Arc<Node>>,
}

impl DynTensor {
    #[inline]
    pub(crate) fn from_raw(raw: RawTensor) -> Self {
        DynTensor { raw, node: None }
    }

    /// Wraps an op's result (value and node).
    #[inline(always)]
    pub(crate) fn from_out(out: Out) -> Self {
        DynTensor {
            raw: out.value,
            node: out.node,
        }
    }

    fn create(shape: impl IntoShape, dtype: DType, dev: DynDevice, fill: Fill) -> Result<Self> {
        let dims = Dims::shape(shape.as_dims())?;
        let dev = dev.open()?;
        Ok(DynTensor::from_raw(create(dims, dtype, dev, fill)?))
    }

    /// `f32` zeros on `dev`.
    pub fn zeros(shape: impl IntoShape, dev: DynDevice) -> Result<Self> {
        Self::create(shape, DType::F32, dev, Fill::Constant(Scalar::Int(0)))
    }

    /// `f32` ones on `dev`.
    pub fn ones(shape: impl IntoShape, dev: DynDevice) -> Result<Self> {
        Self::create(shape, DType::F32, dev, Fill::Constant(Scalar::Int(1)))
    }

    /// Every element `value` (an `f64`, `i64` or `bool`: integers stay exact), of element type
    /// `dtype`, on `dev`.
    ///
    /// A value `dtype` cannot hold is an `Err`, as PyTorch's `torch.full` checks it: `1e6` as
    /// `F16` gives `value cannot be converted to type c10::Half without overflow`, `NaN` or
    /// `1e30` as `I64` gives `... type int64_t ...`. Infinities and NaN go into the
    /// floating-point dtypes as they are; any value goes into `Bool`.
    ///
    /// ```
    /// use devtype::{DType, DynDevice, DynTensor};
    /// let err = DynTensor::full([2], 1e6, DType::F16, DynDevice::cpu()).unwrap_err();
    /// assert_eq!(err.to_string(), "value cannot be converted to type c10::Half without overflow");
    /// ```
    pub fn full(
        shape: impl IntoShape,
        value: impl Into<Scalar>,
        dtype: DType,
        dev: DynDevice,
    ) -> Result<Self> {
        let value = value.into();
        value.check_fits(dtype)?;
        Self::create(shape, dtype, dev, Fill::Constant(value))
    }

    /// Zeros with the shape, element type and device of `other`.
    pub fn zeros_like(other: &DynTensor) -> Result<Self> {
        Self::full(other.shape(), 0.0, other.dtype(), other.device())
    }

    /// Ones with the shape, element type and device of `other`.
    pub fn ones_like(other: &DynTensor) -> Result<Self> {
        Self::full(other.shape(), 1.0, other.dtype(), other.device())
    }

    /// `value` everywhere, with the shape, element type and device of `other` (PyTorch's
    /// `torch.full_like`).
    pub fn full_like(other: &DynTensor, value: impl Into<Scalar>) -> Result<Self> {
        Self::full(other.shape(), value, other.dtype(), other.device())
    }

    /// `f32` values `0, 1, ..., end - 1` on `dev`.
    pub fn arange(end: usize, dev: DynDevice) -> Result<Self> {
        Self::create(
            [end],
            DType::F32,
            dev,
            Fill::Range {
                start: 0.0,
                step: 1.0,
            },
        )
    }

    /// `start, start + step, ...` up to but excluding `end`, of element type `dtype`, on `dev`
    /// (PyTorch's `torch.arange(start, end, step, dtype=dtype)`), with PyTorch's checks and
    /// texts: `step must be nonzero`, `unsupported range: 0 -> nan`, `upper bound and lower
    /// bound inconsistent with step sign`. For `I64` the values are first converted to integers
    /// as PyTorch does (truncated; NaN or infinity is an overflow `Err`).
    ///
    /// ```
    /// use devtype::{DType, DynDevice, DynTensor};
    /// let t = DynTensor::arange_step(5.0, -5.0, -2.5, DType::F32, DynDevice::cpu())?;
    /// assert_eq!(t.to_string(), "tensor([ 5.0000,  2.5000,  0.0000, -2.5000])");
    /// let err = DynTensor::arange_step(0.0, f64::NAN, 1.0, DType::F32, DynDevice::cpu());
    /// assert_eq!(err.unwrap_err().to_string(), "unsupported range: 0 -> nan");
    /// # Ok::<(), devtype::Error>(())
    /// ```
    pub fn arange_step(
        start: f64,
        end: f64,
        step: f64,
        dtype: DType,
        dev: DynDevice,
    ) -> Result<Self> {
        let (n, fill) = crate::ops::creation::arange(start, end, step, dtype)?;
        Self::create([n], dtype, dev, fill)
    }

    /// `f32` uniform random values in `[0, 1)` on `dev`.
    pub fn rand(shape: impl IntoShape, dev: DynDevice) -> Result<Self> {
        let n = checked_numel(shape.as_dims())?;
        Self::create(shape, DType::F32, dev, Fill::uniform(n, dev))
    }

    /// `f32` standard normal random values on `dev`.
    pub fn randn(shape: impl IntoShape, dev: DynDevice) -> Result<Self> {
        let n = checked_numel(shape.as_dims())?;
        Self::create(shape, DType::F32, dev, Fill::normal(n, dev))
    }

    /// A tensor from host values in row-major order; the length must match the shape.
    pub fn from_vec<E: Element>(
        data: Vec<E>,
        shape: impl IntoShape,
        dev: DynDevice,
    ) -> Result<Self> {
        let dev = dev.open()?;
        Ok(DynTensor::from_raw(RawTensor::from_vec(
            data,
            shape.as_dims(),
            dev,
        )?))
    }

    /// The device, as a value: `cpu`, `cuda:0`.
    #[inline]
    pub fn device(&self) -> DynDevice {
        self.raw.device
    }

    /// The element type.
    #[inline]
    pub fn dtype(&self) -> DType {
        self.raw.dtype
    }

    /// The sizes of the dimensions.
    #[inline]
    pub fn shape(&self) -> &[usize] {
        self.raw.shape()
    }

    /// The number of dimensions.
    #[inline]
    pub fn dim(&self) -> usize {
        self.raw.rank()
    }

    /// The number of elements.
    #[inline]
    pub fn numel(&self) -> usize {
        self.raw.numel()
    }

    /// The values in row-major order as `E` (which must be the element type).
    pub fn to_vec<E: Element>(&self) -> Result<Vec<E>> {
        self.raw.to_vec()
    }

    /// The value of a one-element tensor (PyTorch's `.item()`).
    pub fn item<E: Element>(&self) -> Result<E> {
        self.raw.item()
    }

    /// This tensor as a typed `Tensor<D, E>`; fails (naming both) when it is on another device
    /// or of another element type.
    ///
    /// ```
    /// use devtype::prelude::*;
    /// let d = DynTensor::zeros([2], DynDevice::cpu()).unwrap();
    /// let t: Tensor<Cpu> = d.try_into_typed::<Cpu>().unwrap();
    /// assert_eq!(t.shape(), &[2]);
    /// ```
    pub fn try_into_typed<D: Device>(self) -> Result<Tensor<D, f32>> {
        self.try_into_tensor::<D, f32>()
    }

    /// This tensor as `Tensor<D, E>` for any element type.
    pub fn try_into_tensor<D: Device, E: Element>(self) -> Result<Tensor<D, E>> {
        let device = D::from_dyn(self.raw.device).ok_or_else(|| Error::WrongTypedDevice {
            expected: crate::device::type_label::<D>().to_string(),
            wanted: D::type_device(),
            found: self.raw.device,
        })?;
        self.raw.expect_dtype(E::DTYPE)?;
        Ok(Tensor::from_out(
            Out {
                value: self.raw,
                node: self.node,
            },
            device,
        ))
    }
}

impl std::fmt::Debug for DynTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::fmt::Display for DynTensor {
    /// Prints like PyTorch; on a GPU this waits for it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        crate::tensor::display::format_tracked(&self.raw, self.node.as_deref(), f)
    }
}

/// The bridges from the typed front: here, above it, so that the typed front knows nothing of
/// this one.
impl<D: Device, E: Element> Tensor<D, E> {
    /// The same tensor with its device as a run-time value (free: no copy, no check).
    pub fn into_dyn(self) -> DynTensor {
        DynTensor {
            raw: self.raw,
            node: self.node,
        }
    }

    /// A dynamic handle to the same storage (and, when tracked, the same node).
    pub fn to_dyn(&self) -> DynTensor {
        self.clone().into_dyn()
    }
}

impl<D: Device, E: Element> TryFrom<DynTensor> for Tensor<D, E> {
    type Error = Error;
    fn try_from(t: DynTensor) -> Result<Self> {
        t.try_into_tensor()
    }
}

impl<D: Device, E: Element> From<Tensor<D, E>> for DynTensor {
    fn from(t: Tensor<D, E>) -> Self {
        t.into_dyn()
    }
}

impl AsRaw for DynTensor {
    #[inline]
    fn raw(&self) -> &RawTensor {
        &self.raw
    }
    #[inline]
    fn into_operand<'a>(self) -> Operand<'a>
    where
        Self: 'a,
    {
        Operand::Owned(self.raw)
    }
    #[inline]
    fn grad_node(&self) -> Option<&Arc<Node>> {
        self.node.as_ref()
    }
}

crate::tensor::operand::borrowed_as_raw! {
    impl<> for &DynTensor;
}

#[cfg(test)]
mod tests;
