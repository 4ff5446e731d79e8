//! `Tensor<D, E>`: a tensor whose device `D` is part of its type.

pub(crate) mod display;
mod grad;
mod literal;
pub(crate) mod operand;
mod pinned;
pub(crate) mod static_io;

pub use crate::core::{DType, Element, Float, Numeric, Scalar, MAX_DIMS};
pub use literal::TensorLiteral;
pub use operand::{
    ArgumentOn, AssignElementIs, ClassTargets, ElementIs, GradElementIs, GradOn, HasDevice,
    InputElementIs, Is, MatrixElementIs, ModuleInput, OperandOn,
};
pub use pinned::{AsyncSource, Download, HostDevice, PinnedTensor, Upload, Waited};

use crate::core::error::Result;
use crate::core::layout::{self, Dims};
use crate::core::raw::RawTensor;
use crate::device::{Device, HostSync};
use crate::graph::Node;
use crate::ops::creation::{create, Fill};
use std::marker::PhantomData;
use std::sync::Arc;

/// A shape given as `[4, 2]`, `&[4, 2]`, `vec![4, 2]` or `&v`.
pub trait IntoShape {
    /// The sizes.
    fn as_dims(&self) -> &[usize];
}

impl<const N: usize> IntoShape for [usize; N] {
    fn as_dims(&self) -> &[usize] {
        self
    }
}
impl<const N: usize> IntoShape for &[usize; N] {
    fn as_dims(&self) -> &[usize] {
        *self
    }
}
impl IntoShape for &[usize] {
    fn as_dims(&self) -> &[usize] {
        self
    }
}
impl IntoShape for Vec<usize> {
    fn as_dims(&self) -> &[usize] {
        self
    }
}
impl IntoShape for &Vec<usize> {
    fn as_dims(&self) -> &[usize] {
        self
    }
}

/// A tensor of `E` (default `f32`) on device `D`.
///
/// Create it directly on its device, move it with [`to`](Tensor::to) (which returns a new
/// tensor: rebind it), and combine it only with tensors on the same device; anything else does
/// not compile.
///
/// ```
/// use devtype::prelude::*;
///
/// let dev = Cpu; // or Cuda::<0>::open()?
/// let x = Tensor::randn([4, 10], Cpu);
/// let x = x.to(dev);                           // tensors return a copy: rebind!
/// let ones = Tensor::ones([4, 10], dev);       // created directly on the device
/// assert_eq!((&x + &ones).shape(), &[4, 10]);
/// ```
///
/// `D` is a [`Device`] type: every way to make or use a tensor asks for it. The struct itself
/// leaves that bound off, so that a type that is not a device (`try_into_typed::<DynDevice>()`)
/// is one error where it is given, not one more for each `Tensor<DynDevice>` it would name.
pub struct Tensor<D, E: Element = f32> {
    pub(crate) raw: RawTensor,
    /// The autograd node: a parameter's leaf, or the op that made this tensor from tracked
    /// inputs; `None` when gradients do not flow into it.
    pub(crate) node: Option<Arc<Node>>,
    device: D,
    _element: PhantomData<E>,
}

impl<D: Device, E: Element> Clone for Tensor<D, E> {
    /// A new handle to the same storage (no copy), as PyTorch's `y = x`, and a new value as far
    /// as writes go: an in-place operator on either handle rebinds that handle only, so the
    /// other keeps its values (in PyTorch, `x += 1` would change `y` too). Because storages
    /// are never written while shared, no copy is needed for that, and a tensor saved for a
    /// backward pass can never be modified under it.
    fn clone(&self) -> Self {
        Tensor {
            raw: self.raw.clone(),
            node: self.node.clone(),
            device: self.device,
            _element: PhantomData,
        }
    }
}

/// Generates `name(args) -> T` that panics with the error text of `try_name(args) -> Result<T>`.
macro_rules! infallible {
    ($(#[$doc:meta])* $vis:vis fn $name:ident $([$($generics:tt)*])? (&self $(, $arg:ident : $ty:ty)*) -> $out:ty) => {
        paste::paste! {
            $(#[$doc])*
            #[doc = concat!("\n\nPanics with the error's text where [`try_", stringify!($name), "`](Self::try_", stringify!($name), ") returns it.")]
            #[track_caller]
            $vis fn $name $(<$($generics)*>)? (&self $(, $arg : $ty)*) -> $out {
                match self.[<try_ $name>]($($arg),*) {
                    Ok(v) => v,
                    Err(e) => panic!("{e}"),
                }
            }
        }
    };
    ($(#[$doc:meta])* $vis:vis fn $name:ident $([$($generics:tt)*])? ($($arg:ident : $ty:ty),*) -> $out:ty) => {
        paste::paste! {
            $(#[$doc])*
            #[doc = concat!("\n\nPanics with the error's text where [`try_", stringify!($name), "`](Self::try_", stringify!($name), ") returns it.")]
            #[track_caller]
            $vis fn $name $(<$($generics)*>)? ($($arg : $ty),*) -> $out {
                match Self::[<try_ $name>]($($arg),*) {
                    Ok(v) => v,
                    Err(e) => panic!("{e}"),
                }
            }
        }
    };
}

impl<D: Device, E: Element> Tensor<D, E> {
    /// Wraps an untyped tensor known to be on `device` with elements `E`.
    #[inline]
    pub(crate) fn from_raw(raw: RawTensor, device: D) -> Self {
        debug_assert_eq!(raw.dtype, E::DTYPE);
        debug_assert_eq!(raw.device, device.dyn_device());
        Tensor {
            raw,
            node: None,
            device,
            _element: PhantomData,
        }
    }

    /// Wraps an op's result (value and node), known to be on `device`.
    #[inline(always)]
    pub(crate) fn from_out(out: crate::graph::Out, device: D) -> Self {
        let mut t = Tensor::from_raw(out.value, device);
        t.node = out.node;
        t
    }

    fn create(shape: impl IntoShape, dev: D, fill: Fill) -> Result<Self> {
        let dims = Dims::shape(shape.as_dims())?;
        Ok(Tensor::from_raw(
            create(dims, E::DTYPE, dev.dyn_device(), fill)?,
            dev,
        ))
    }

    /// A tensor of zeros, created directly on `dev` (PyTorch's `torch.zeros(4, 2, device=dev)`).
    pub fn try_zeros(shape: impl IntoShape, dev: D) -> Result<Self> {
        Self::create(shape, dev, Fill::Constant(Scalar::Int(0)))
    }
    infallible!(
        /// A tensor of zeros, created directly on `dev` (PyTorch's `torch.zeros(4, 2, device=dev)`).
        pub fn zeros(shape: impl IntoShape, dev: D) -> Self
    );

    /// A tensor of ones, created directly on `dev`.
    pub fn try_ones(shape: impl IntoShape, dev: D) -> Result<Self> {
        Self::create(shape, dev, Fill::Constant(Scalar::Int(1)))
    }
    infallible!(
        /// A tensor of ones, created directly on `dev`.
        pub fn ones(shape: impl IntoShape, dev: D) -> Self
    );

    /// A tensor with every element `value`, created directly on `dev`.
    pub fn try_full(shape: impl IntoShape, value: E, dev: D) -> Result<Self> {
        Self::create(shape, dev, Fill::Constant(value.to_scalar()))
    }
    infallible!(
        /// A tensor with every element `value`, created directly on `dev`.
        pub fn full(shape: impl IntoShape, value: E, dev: D) -> Self
    );

    /// A 0-dimensional tensor holding `value`.
    pub fn try_scalar(value: E, dev: D) -> Result<Self> {
        Self::try_full([], value, dev)
    }
    infallible!(
        /// A 0-dimensional tensor holding `value`.
        pub fn scalar(value: E, dev: D) -> Self
    );

    /// `0, 1, ..., end - 1` (PyTorch's `torch.arange(end)`).
    pub fn try_arange(end: usize, dev: D) -> Result<Self> {
        Self::create(
            [end],
            dev,
            Fill::Range {
                start: 0.0,
                step: 1.0,
            },
        )
    }
    infallible!(
        /// `0, 1, ..., end - 1` (PyTorch's `torch.arange(end)`).
        pub fn arange(end: usize, dev: D) -> Self
    );

    /// `start, start + step, ...` up to but excluding `end` (PyTorch's `torch.arange(start, end, step)`).
    ///
    /// PyTorch's checks and texts: `step must be nonzero`, `unsupported range: 0 -> nan` for a
    /// bound that is not finite, `upper bound and lower bound inconsistent with step sign`
    /// when `step` points away from `end`. For `i64` the three values are first converted to
    /// integers as PyTorch does (truncated; NaN or infinity is `value cannot be converted to
    /// type int64_t without overflow`).
    ///
    /// ```
    /// use devtype::prelude::*;
    /// let err = Tensor::<Cpu>::try_arange_step(0.0, 1.0, -1.0, Cpu).unwrap_err();
    /// assert_eq!(err.to_string(), "upper bound and lower bound inconsistent with step sign");
    /// ```
    pub fn try_arange_step(start: f64, end: f64, step: f64, dev: D) -> Result<Self> {
        let (n, fill) = crate::ops::creation::arange(start, end, step, E::DTYPE)?;
        Self::create([n], dev, fill)
    }
    infallible!(
        /// `start, start + step, ...` up to but excluding `end`.
        pub fn arange_step(start: f64, end: f64, step: f64, dev: D) -> Self
    );

    /// A tensor from host values in row-major order; the length must match the shape.
    pub fn try_from_vec(data: Vec<E>, shape: impl IntoShape, dev: D) -> Result<Self> {
        Ok(Tensor::from_raw(
            RawTensor::from_vec(data, shape.as_dims(), dev.dyn_device())?,
            dev,
        ))
    }
    infallible!(
        /// A tensor from host values in row-major order; the length must match the shape.
        ///
        /// ```
        /// use devtype::prelude::*;
        /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2], Cpu);
        /// assert_eq!(t.to_string(), "tensor([[1., 2.],\n        [3., 4.]])");
        /// ```
        pub fn from_vec(data: Vec<E>, shape: impl IntoShape, dev: D) -> Self
    );

    /// Zeros with the shape, element type and device of `other` (PyTorch's
    /// `torch.zeros_like(x)`: `Tensor::zeros_like(&x)` needs no annotation). Zeros of
    /// another element type next to `x`: `Tensor::<_, i64>::zeros(x.shape(), x.device())`.
    ///
    /// ```
    /// use devtype::prelude::*;
    /// let x = Tensor::<Cpu, f64>::ones([2, 3], Cpu);
    /// let z = Tensor::zeros_like(&x);
    /// assert_eq!((z.shape(), z.dtype()), (&[2usize, 3][..], DType::F64));
    /// ```
    pub fn try_zeros_like(other: &Tensor<D, E>) -> Result<Self> {
        Self::try_zeros(other.shape(), other.device)
    }
    infallible!(
        /// Zeros with the shape, element type and device of `other`.
        pub fn zeros_like(other: &Tensor<D, E>) -> Self
    );

    /// Ones with the shape, element type and device of `other` (PyTorch's
    /// `torch.ones_like(x)`).
    pub fn try_ones_like(other: &Tensor<D, E>) -> Result<Self> {
        Self::try_ones(other.shape(), other.device)
    }
    infallible!(
        /// Ones with the shape, element type and device of `other`.
        pub fn ones_like(other: &Tensor<D, E>) -> Self
    );

    /// `value` everywhere, with the shape and device of `other` (PyTorch's
    /// `torch.full_like(other, value)`; the element type is `value`'s).
    ///
    /// ```
    /// use devtype::prelude::*;
    /// let x = Tensor::<Cpu, f32>::zeros([2, 3], Cpu);
    /// let y = Tensor::full_like(&x, 7.0f32);
    /// assert_eq!((y.shape(), y.to_vec()[0]), (&[2usize, 3][..], 7.0));
    /// ```
    pub fn try_full_like<E2: Element>(other: &Tensor<D, E2>, value: E) -> Result<Self> {
        Self::try_full(other.shape(), value, other.device)
    }
    infallible!(
        /// `value` everywhere, with the shape and device of `other`.
        pub fn full_like[E2: Element](other: &Tensor<D, E2>, value: E) -> Self
    );

    /// The device this tensor is on, to create others next to it: `Tensor::zeros(s, x.device())`.
    #[inline]
    pub fn device(&self) -> D {
        self.device
    }

    /// The sizes of the dimensions (PyTorch's `x.shape`).
    #[inline]
    pub fn shape(&self) -> &[usize] {
        self.raw.shape()
    }

    /// The number of dimensions (PyTorch's `x.dim()`).
    #[inline]
    pub fn dim(&self) -> usize {
        self.raw.rank()
    }

    /// The number of elements.
    #[inline]
    pub fn numel(&self) -> usize {
        self.raw.numel()
    }

    /// The element type as a value.
    #[inline]
    pub fn dtype(&self) -> DType {
        E::DTYPE
    }

    /// Strides in elements, per dimension.
    pub fn strides(&self) -> &[usize] {
        &self.raw.layout.strides
    }

    /// True when the elements sit in row-major order without gaps.
    pub fn is_contiguous(&self) -> bool {
        self.raw.layout.is_contiguous()
    }

    /// The values in row-major order. On a GPU this copies to the host and waits for it.
    pub fn try_to_vec(&self) -> Result<Vec<E>>
    where
        D: HostSync,
    {
        self.raw.to_vec()
    }
    /// The values in row-major order. On a GPU this copies to the host and waits for it.
    ///
    /// Panics with the error's text where [`try_to_vec`](Self::try_to_vec) returns it.
    #[track_caller]
    pub fn to_vec(&self) -> Vec<E>
    where
        D: HostSync,
    {
        match self.try_to_vec() {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    /// The value of a one-element tensor (PyTorch's `.item()`); on a GPU this waits for it.
    pub fn try_item(&self) -> Result<E>
    where
        D: HostSync,
    {
        self.raw.item()
    }
    /// The value of a one-element tensor (PyTorch's `.item()`); on a GPU this waits for it.
    ///
    /// Panics with the error's text where [`try_item`](Self::try_item) returns it.
    #[track_caller]
    pub fn item(&self) -> E
    where
        D: HostSync,
    {
        match self.try_item() {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    /// True when both tensors share one storage (as after `to` onto the same device).
    pub fn shares_storage_with<E2: Element>(&self, other: &Tensor<D, E2>) -> bool {
        self.raw.storage.ptr_eq(&other.raw.storage)
    }
}

/// Random constructors make `f32` tensors, so `Tensor::randn([4, 10], Cpu)` needs no element
/// type (as `HashMap::new()` needs no hasher); [`randn_like`](Tensor::randn_like) and
/// [`rand_like`](Tensor::rand_like) give other floating-point types.
impl<D: Device> Tensor<D, f32> {
    /// Uniform random values in `[0, 1)`, created directly on `dev` (seeded by
    /// [`manual_seed`](crate::manual_seed)).
    pub fn try_rand(shape: impl IntoShape, dev: D) -> Result<Self> {
        Self::random(shape, dev, false)
    }
    infallible!(
        /// Uniform random values in `[0, 1)`, created directly on `dev` (PyTorch's `torch.rand`).
        pub fn rand(shape: impl IntoShape, dev: D) -> Self
    );

    /// Standard normal random values, created directly on `dev` (PyTorch's `torch.randn`).
    ///
    /// ```
    /// use devtype::prelude::*;
    /// let x = Tensor::randn([4, 10], Cpu); // a Tensor<Cpu, f32>
    /// assert_eq!(x.shape(), &[4, 10]);
    /// ```
    pub fn try_randn(shape: impl IntoShape, dev: D) -> Result<Self> {
        Self::random(shape, dev, true)
    }
    infallible!(
        /// Standard normal random values, created directly on `dev` (PyTorch's `torch.randn`).
        pub fn randn(shape: impl IntoShape, dev: D) -> Self
    );
}

impl<D: Device, E: Float> Tensor<D, E> {
    pub(crate) fn random(shape: impl IntoShape, dev: D, normal: bool) -> Result<Self> {
        let numel = layout::checked_numel(shape.as_dims())?;
        let fill = if normal {
            Fill::normal(numel, dev.dyn_device())
        } else {
            Fill::uniform(numel, dev.dyn_device())
        };
        Self::create(shape, dev, fill)
    }

    /// Uniform random values in `[0, 1)` with this tensor's shape, element type and device
    /// (PyTorch's `torch.rand_like`).
    pub fn try_rand_like(&self) -> Result<Self> {
        Self::random(self.shape(), self.device(), false)
    }
    infallible!(
        /// Uniform random values in `[0, 1)` with this tensor's shape, element type and device.
        pub fn rand_like(&self) -> Self
    );

    /// Standard normal random values with this tensor's shape, element type and device
    /// (PyTorch's `torch.randn_like`): `Tensor::<Cpu, f64>::zeros([3], Cpu).randn_like()`.
    pub fn try_randn_like(&self) -> Result<Self> {
        Self::random(self.shape(), self.device(), true)
    }
    infallible!(
        /// Standard normal random values with this tensor's shape, element type and device.
        pub fn randn_like(&self) -> Self
    );
}

/// `Debug` for a struct of the crate holding tensors on `D`, as `#[derive(Debug)]` writes it,
/// for the devices whose values the host may read (a tensor's `Debug` prints its values, so a
/// capturing device's tensors have none; see [`HostSync`]).
macro_rules! debug_on_host {
    ($ty:ident<D $(, $e:ident: $bound:path)?> { $($field:ident),* $(,)? }) => {
        impl<D: $crate::device::HostSync $(, $e: $bound)?> std::fmt::Debug for $ty<D $(, $e)?> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    $(.field(stringify!($field), &self.$field))*
                    .finish()
            }
        }
    };
}
pub(crate) use debug_on_host;

/// Prints the values, as `Display` does without the autograd marks. On a GPU this waits for
/// it, so a capturing device's tensors do not print (see [`HostSync`]).
impl<D: HostSync, E: Element> std::fmt::Debug for Tensor<D, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        display::format(&self.raw, f)
    }
}

impl<D: HostSync, E: Element> std::fmt::Display for Tensor<D, E> {
    /// Prints like PyTorch: `tensor([[1., 2.]], device='cuda:0')`, with `requires_grad=True`
    /// for a parameter and `grad_fn=<SumBackward0>` for a tracked op's result. On a GPU this
    /// waits for it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        display::format_tracked(&self.raw, self.node.as_deref(), f)
    }
}
