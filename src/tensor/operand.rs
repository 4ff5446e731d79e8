//! The traits that turn a device mix-up into a compile error with PyTorch's words.
//!
//! An op that takes a second tensor asks for `R: OperandOn<D>` (element-wise ops) or
//! `R: ArgumentOn<D>` (argument-checked ops), implemented only for tensors on `D`. The traits'
//! defaulted parameters are the operand's own device (and, for `OperandOn`, the two devices in
//! PyTorch's order), so when one is missing rustc prints our message with both devices filled
//! in:
//!
//! ```text
//! error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//! ```
//!
//! Modules and losses ask for [`ModuleInput<D>`] instead, whose label says that the input is on
//! one device and the module's parameters or buffers on another.

use super::{Element, Tensor};
use crate::core::raw::{Operand, RawTensor};
use crate::device::Device;

pub(crate) mod sealed {
    use super::{Operand, RawTensor};

    /// Crate-private access to the untyped tensor behind a typed one.
    pub trait AsRaw {
        /// The untyped tensor.
        fn raw(&self) -> &RawTensor;
        /// The untyped tensor, owned when `self` is owned (so its buffer can be reused).
        fn into_operand<'a>(self) -> Operand<'a>
        where
            Self: 'a;
        /// The autograd node when this tensor is tracked.
        fn grad_node(&self) -> Option<&std::sync::Arc<crate::graph::Node>>;
        /// The value and node, as recorded ops take them.
        #[inline]
        fn input(&self) -> crate::graph::In<'_> {
            crate::graph::In {
                value: self.raw(),
                node: self.grad_node(),
            }
        }
    }
}

/// Anything that is a tensor on a known device: `Tensor<D, E>`, `&Tensor<D, E>`, and
/// `&&Tensor<D, E>` (`&x` where `x: &Tensor<D, E>`, as generic code often writes it).
pub trait HasDevice: sealed::AsRaw {
    /// The device the tensor is on.
    type Device: Device;
    /// Its element type.
    type Element: Element;
    /// The device, as a value.
    #[doc(hidden)]
    fn typed_device(&self) -> Self::Device;
}

impl<D: Device, E: Element> sealed::AsRaw for Tensor<D, E> {
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
    fn grad_node(&self) -> Option<&std::sync::Arc<crate::graph::Node>> {
        self.node.as_ref()
    }
}

/// `AsRaw` for references to tensors, each a type that derefs to a tensor with `raw` and
/// `node` fields: the tensor, borrowed. For `&Tensor`, `&&Tensor` (`&x` where `x: &Tensor`,
/// as generic code often writes it) and `&DynTensor`.
macro_rules! borrowed_as_raw {
    ($(impl<$($g:ident: $b:path),*> for $ty:ty;)*) => {$(
        impl<$($g: $b),*> $crate::tensor::operand::sealed::AsRaw for $ty {
            #[inline]
            fn raw(&self) -> &$crate::core::raw::RawTensor {
                &self.raw
            }
            #[inline]
            fn into_operand<'a>(self) -> $crate::core::raw::Operand<'a>
            where
                Self: 'a,
            {
                $crate::core::raw::Operand::Borrowed(&self.raw)
            }
            #[inline]
            fn grad_node(&self) -> Option<&std::sync::Arc<$crate::graph::Node>> {
                self.node.as_ref()
            }
        }
    )*};
}
pub(crate) use borrowed_as_raw;

borrowed_as_raw! {
    impl<D: Device, E: Element> for &Tensor<D, E>;
    impl<D: Device, E: Element> for &&Tensor<D, E>;
}

/// `HasDevice` for a tensor and the references to it that are operands.
macro_rules! has_device {
    ($($ty:ty),*) => {$(
        impl<D: Device, E: Element> HasDevice for $ty {
            type Device = D;
            type Element = E;
            #[inline]
            fn typed_device(&self) -> D {
                self.device()
            }
        }
    )*};
}

has_device!(Tensor<D, E>, &Tensor<D, E>, &&Tensor<D, E>);

/// A tensor operand of an element-wise op, comparison or `where_cond` on device `D`:
/// `Tensor<D, E>`, `&Tensor<D, E>` or `&&Tensor<D, E>`.
///
/// `+ - * /`, `add`, `maximum`, `eq`, `lt`, `where_cond`, ... require their other operands to
/// implement `OperandOn<D>` for the device `D` of `self`. A tensor on another device does not,
/// and the compiler says so in PyTorch's words, with the devices in PyTorch's order: the
/// TensorIterator check names the first non-CPU device first (`cuda:0 and cpu`, whichever
/// operand is on the CPU), as [`DynTensor`](crate::DynTensor) does. The defaulted parameters
/// `First` and `Second` compute that order; leave them out when naming the trait.
#[diagnostic::on_unimplemented(
    message = "Expected all tensors to be on the same device, but found at least two devices, `{First}` and `{Second}`",
    label = "this operand is on `{Found}`, expected `{D}`",
    note = "`.to(device)` returns a new tensor and leaves the original where it was: `let x = x.to(dev);`",
    note = "when possible, create tensors directly on the device: `Tensor::zeros(shape, dev)`; inside `forward`, on the input's: `Tensor::zeros(shape, x.device())` or `Tensor::zeros_like(&x)`"
)]
pub trait OperandOn<
    D: Device,
    Found: Device = <Self as HasDevice>::Device,
    First: Device = <Found as Device>::OperandFirst<D>,
    Second: Device = <Found as Device>::OperandSecond<D>,
>: HasDevice
{
}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Element> OperandOn<D> for Tensor<D, E> {}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Element> OperandOn<D> for &Tensor<D, E> {}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Element> OperandOn<D> for &&Tensor<D, E> {}

/// A tensor argument of an argument-checked op on device `D` (`matmul`, `linear`, `cat`,
/// `gather`, `index_select`, ...): `Tensor<D, E>`, `&Tensor<D, E>` or `&&Tensor<D, E>`.
///
/// PyTorch checks these ops' arguments in order and names the first argument's device first
/// (`cuda:0 and cpu` for a GPU receiver, `cpu and cuda:0` for a CPU one); so does this
/// trait's message. Every [`OperandOn<D>`] is an `ArgumentOn<D>`, so generic code can ask for
/// either.
#[diagnostic::on_unimplemented(
    message = "Expected all tensors to be on the same device, but found at least two devices, `{D}` and `{Found}`",
    label = "this operand is on `{Found}`, expected `{D}`",
    note = "`.to(device)` returns a new tensor and leaves the original where it was: `let x = x.to(dev);`",
    note = "when possible, create tensors directly on the device: `Tensor::zeros(shape, dev)`; inside `forward`, on the input's: `Tensor::zeros(shape, x.device())` or `Tensor::zeros_like(&x)`"
)]
pub trait ArgumentOn<D: Device, Found: Device = <Self as HasDevice>::Device>: HasDevice {}

#[diagnostic::do_not_recommend]
impl<D: Device, T: OperandOn<D>> ArgumentOn<D> for T {}

/// A tensor operand of an element-wise op or comparison whose receiver has elements `E`.
///
/// devtype does not promote element types (PyTorch computes `float + long` as float): an
/// operand with other elements does not compile, and the message is the one PyTorch's
/// same-dtype check gives. Implemented for every tensor of `E` (and so in generic code for any
/// `HasDevice<Element = E>`); the defaulted `Found` is the operand's own: leave it out.
#[diagnostic::on_unimplemented(
    message = "Found dtype `{Found}` but expected `{E}`",
    label = "this operand's elements are `{Found}`, the receiver's are `{E}`",
    note = "devtype does not promote element types as PyTorch does: convert one side explicitly, `x.to_dtype::<{E}>()`"
)]
pub trait ElementIs<E: Element, Found = <Self as HasDevice>::Element>: HasDevice {}

#[diagnostic::do_not_recommend]
impl<E: Element, T: HasDevice<Element = E>> ElementIs<E> for T {}

/// The operand of an in-place op (`+=`, `-=`, `*=`, `/=`) on a tensor with elements `E`.
///
/// In place, the result keeps the receiver's element type, so an operand of another type is
/// PyTorch's cast error (`result type Float can't be cast to the desired output type Long`),
/// not the general same-dtype one; the fix is to convert the receiver (and rebind), not to
/// round the operand. Implemented for every tensor of `E`; leave `Found` out.
#[diagnostic::on_unimplemented(
    message = "result type `{Found}` can't be cast to the desired output type `{E}`",
    label = "this operand's elements are `{Found}`; in place, the result keeps the receiver's `{E}`",
    note = "convert the receiver and rebind it: `let x = x.to_dtype::<{Found}>();` then `x += ...` (converting the operand to `{E}` would round it)"
)]
pub trait AssignElementIs<E: Element, Found = <Self as HasDevice>::Element>: HasDevice {}

#[diagnostic::do_not_recommend]
impl<E: Element, T: HasDevice<Element = E>> AssignElementIs<E> for T {}

/// The input of a module whose parameters have elements `E` (`Linear`, `Sequential`, an
/// activation, a loss's logits).
///
/// An input of other elements gives the sentence of PyTorch's `F.linear`, input (`m1`)
/// first. Implemented for every tensor of `E`; leave `Found` out.
#[diagnostic::on_unimplemented(
    message = "expected m1 and m2 to have the same dtype, but got: `{Found}` != `{E}`",
    label = "this input's elements are `{Found}`, but the module's parameters are `{E}`",
    note = "convert the input to the module's type, `let x = x.to_dtype::<{E}>();` (every batch, or once in the data set); for low precision keep an `f32` model and run it under `autocast::<f16, _>(|| ...)`, where the products run in `f16` by themselves"
)]
pub trait InputElementIs<E: Element, Found = <Self as HasDevice>::Element>:
    HasDevice<Element = E>
{
}

#[diagnostic::do_not_recommend]
impl<E: Element, T: HasDevice<Element = E>> InputElementIs<E> for T {}

/// Class-index targets (`i64`) of a classification loss (`CrossEntropyLoss`).
///
/// Targets of another type (float targets of the class-index shape) give PyTorch's sentence.
/// Leave `Found` out.
#[diagnostic::on_unimplemented(
    message = "expected target dtype to be Long or Byte, but got `{Found}`",
    label = "these targets' elements are `{Found}`: class indices are `i64`",
    note = "class indices are integers: `let y = y.to_dtype::<i64>();` (or build them as `Tensor::<_, i64>::from_vec(..)`)"
)]
pub trait ClassTargets<Found = <Self as HasDevice>::Element>: HasDevice {}

#[diagnostic::do_not_recommend]
impl<T: HasDevice<Element = i64>> ClassTargets for T {}

/// A gradient given by hand for a tensor on `D` ([`Tensor::try_set_grad`],
/// [`Tensor::backward_with`]): `Tensor<D, E>`, `&Tensor<D, E>` or `&&Tensor<D, E>`.
///
/// A gradient on another device is a compile error with PyTorch's device sentence (in its
/// order) and the fix; one of other elements fails [`ElementIs`]. Leave the defaulted
/// parameters out.
#[diagnostic::on_unimplemented(
    message = "Expected all tensors to be on the same device, but found at least two devices, `{First}` and `{Second}`",
    label = "this gradient is on `{Found}`, but its tensor is on `{D}`",
    note = "a gradient lives on its tensor's device: create it there, `Tensor::ones_like(&p)` or `Tensor::zeros(p.shape(), p.device())`, or move it: `g.to(p.device())`"
)]
pub trait GradOn<
    D: Device,
    Found: Device = <Self as HasDevice>::Device,
    First: Device = <Found as Device>::OperandFirst<D>,
    Second: Device = <Found as Device>::OperandSecond<D>,
>: HasDevice
{
}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Element> GradOn<D> for Tensor<D, E> {}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Element> GradOn<D> for &Tensor<D, E> {}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Element> GradOn<D> for &&Tensor<D, E> {}

/// A gradient given by hand for a parameter with elements `E` ([`Tensor::try_set_grad`]).
///
/// A gradient of other elements is PyTorch's sentence for `p.grad = g` (its first sentence:
/// devtype has no `grad_dtype` to set). Implemented for every tensor of `E`; leave `Found` out.
#[diagnostic::on_unimplemented(
    message = "attempting to assign a gradient with dtype `{Found}` to a tensor with grad_dtype `{E}`",
    label = "this gradient's elements are `{Found}`, but its parameter's are `{E}`",
    note = "a gradient has its parameter's element type: convert it, `g.to_dtype::<{E}>()`, or create it so: `Tensor::zeros_like(&p)`"
)]
pub trait GradElementIs<E: Element, Found = <Self as HasDevice>::Element>: HasDevice {}

#[diagnostic::do_not_recommend]
impl<E: Element, T: HasDevice<Element = E>> GradElementIs<E> for T {}

/// The second matrix of a matrix product (`matmul`, `bmm`, `linear`) whose first has
/// elements `E`; a matrix of other elements gives PyTorch's `mm` message.
#[diagnostic::on_unimplemented(
    message = "expected m1 and m2 to have the same dtype, but got: `{E}` != `{Found}`",
    label = "this matrix's elements are `{Found}`, the receiver's are `{E}`",
    note = "convert one side explicitly: `m2.to_dtype::<{E}>()` (PyTorch names these types `float`, `double`, `long int`)"
)]
pub trait MatrixElementIs<E: Element, Found = <Self as HasDevice>::Element>: HasDevice {}

#[diagnostic::do_not_recommend]
impl<E: Element, T: HasDevice<Element = E>> MatrixElementIs<E> for T {}

/// An input of a module or loss whose parameters and buffers live on device `D`.
///
/// `model.forward(&x)` with `x` on the CPU and the model on `Cuda<0>` does not compile; the
/// message names both fixes: move the batch, or move the model once.
#[diagnostic::on_unimplemented(
    message = "Expected all tensors to be on the same device, but found at least two devices, `{D}` and `{Found}`",
    label = "this input is on `{Found}`, but the module's parameters and buffers are on `{D}`",
    note = "move the input with `let x = x.to(dev);` (every batch, inside the loop), or the module once with `let model = model.to(dev);` (a loss with class weights too: `let loss_fn = loss_fn.to(dev);`)"
)]
pub trait ModuleInput<D: Device, Found: Device = <Self as HasDevice>::Device>: HasDevice {
    /// The device of the module's output: `D` (its bound says so to generic code).
    ///
    /// A module's `forward` returns [`Output<I, D, E>`](crate::nn::Output), a tensor on this
    /// device. For an input on another device it cannot be computed, so the compiler reports
    /// the one error here and nothing downstream (a loss would otherwise see logits on the
    /// model's device and targets on the batch's).
    type Out: Is<D, Itself = D>;
}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Element> ModuleInput<D> for Tensor<D, E> {
    type Out = D;
}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Element> ModuleInput<D> for &Tensor<D, E> {
    type Out = D;
}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Element> ModuleInput<D> for &&Tensor<D, E> {
    type Out = D;
}

/// `T` itself: `<T as Is<T>>::Itself` is `T`. As a bound on [`ModuleInput::Out`] it lets
/// generic code see that a module's output is on the module's device.
#[doc(hidden)]
pub trait Is<T> {
    /// `T`.
    type Itself;
}

impl<T> Is<T> for T {
    type Itself = T;
}
