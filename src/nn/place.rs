//! Where a module's parameters and buffers are, as a type: what lets `Sequential::new` and an
//! optimizer's `step` name both devices when a layer or a model is on another one.

use crate::device::Device;
use crate::tensor::Element;

/// The placement of a module without parameters or buffers ([`ReLU`](super::ReLU),
/// [`MSELoss`](super::MSELoss)): it runs on whatever device its input is on, so it agrees with
/// every other layer. Not a [`Device`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Anywhere;

/// A module's parameters and buffers, placed on one device as a type.
///
/// `Linear<D>` is placed on `D`, `ReLU` [`Anywhere`], a `Sequential` on the device of its
/// placed layers. [`module!`](crate::module) implements it for a user's model; `Sequential::new`
/// and [`Optimizer::step`](crate::optim::Optimizer::step) ask for it, so that a layer or model
/// on another device is a compile error naming both devices.
pub trait Placement {
    /// `D` for a module on `D`; [`Anywhere`] for one without parameters or buffers.
    type Device: Placed;
}

/// The element type of a module's parameters and buffers, as a type: `E` for `Linear<D, E>`,
/// [`Anywhere`] for a module without any (`ReLU`), the common one of a `Sequential`'s layers.
///
/// Only diagnostics read it: a model of `bf16` stepped by an `f32` optimizer is a compile error
/// that names both element types (a dtype sentence, not a device one).
/// [`module!`](crate::module) implements it for a user's model.
pub trait Precision {
    /// `E` for a module whose parameters are `E`; [`Anywhere`] for one without parameters.
    type Element;
}

/// Two element types of layers of one model: equal, or one of them [`Anywhere`] (a layer
/// without parameters). `Joined` is the element type of both.
#[doc(hidden)]
pub trait ElementAgree<Other> {
    /// The element type both agree on.
    type Joined;
}

impl<E: Element> ElementAgree<E> for E {
    type Joined = E;
}

impl<E: Element> ElementAgree<Anywhere> for E {
    type Joined = E;
}

impl<C> ElementAgree<C> for Anywhere {
    type Joined = C;
}

/// A [`Placement`]'s device: [`Cpu`](crate::Cpu), [`Cuda<N>`](crate::Cuda), or [`Anywhere`].
///
/// Its associated types put two devices in PyTorch's order for a diagnostic (the first
/// non-CPU device first).
pub trait Placed {
    /// Of this device and `R`, the one PyTorch names first.
    #[doc(hidden)]
    type First<R: Device>;
    /// Of this device and `R`, the one PyTorch names second.
    #[doc(hidden)]
    type Second<R: Device>;
    /// This device, or `R` for a placement that goes with any device.
    #[doc(hidden)]
    type Or<R: Device>: Device;
    /// `T`, once a device check has this placement: a check written through it is not made
    /// (and reports nothing) when the device check fails.
    #[doc(hidden)]
    type Through<T>;
}

impl<D: Device> Placed for D {
    type First<R: Device> = <D as Device>::OperandFirst<R>;
    type Second<R: Device> = <D as Device>::OperandSecond<R>;
    type Or<R: Device> = D;
    type Through<T> = T;
}

impl Placed for Anywhere {
    type First<R: Device> = R;
    type Second<R: Device> = R;
    type Or<R: Device> = R;
    type Through<T> = T;
}

/// Two placements that can hold layers of one model: equal devices, or one of them
/// [`Anywhere`]. `Joined` is the device of both.
#[doc(hidden)]
pub trait Agree<Other> {
    /// The device both agree on.
    type Joined: Placed;
}

impl<D: Device> Agree<D> for D {
    type Joined = D;
}

impl<D: Device> Agree<Anywhere> for D {
    type Joined = D;
}

impl<C: Placed> Agree<C> for Anywhere {
    type Joined = C;
}

/// The layer at position `I` of a `Sequential` whose layers before it are on `Before`.
///
/// Implemented for every layer that is on `Before` (or has no device, or follows only layers
/// without one); the defaulted `Found` is the layer's own device: leave it out.
#[diagnostic::on_unimplemented(
    message = "Expected all tensors to be on the same device, but found at least two devices, `{Found}` and `{Before}`",
    label = "layer {I} of this `Sequential` is on `{Found}`, but the layers before it are on `{Before}`",
    note = "move the layer with the others: `Linear::new(..).to(dev)`, or build the whole model on the CPU and move it once: `let model = Sequential::new((..)).to(dev);`"
)]
pub trait LayerAt<Before, const I: usize, Found = <Self as Placement>::Device>: Placement {
    /// The device of this layer and the ones before it.
    type Next: Placed;
}

#[diagnostic::do_not_recommend]
impl<L: Placement, Before, const I: usize> LayerAt<Before, I> for L
where
    L::Device: Agree<Before>,
{
    type Next = <L::Device as Agree<Before>>::Joined;
}

/// The layer at position `I` of a `Sequential` whose layers before it have parameters of
/// element type `Before` (checked once every layer is on one device).
///
/// Implemented for every layer whose parameters are `Before` (or that has none); the defaulted
/// `Found` is the layer's own element type: leave it out. A layer of another element type is
/// PyTorch's `addmm` sentence, met at the first forward (`mat1` is the activation the layers
/// before it produce, `mat2` this layer's weight).
#[diagnostic::on_unimplemented(
    message = "mat1 and mat2 must have the same dtype, but got `{Before}` and `{Found}`",
    label = "layer {I} of this `Sequential` has `{Found}` parameters, but the layers before it are `{Before}`",
    note = "build every layer with one element type (`Linear::<_, {Before}>::with_element(..)`), or keep the model in `f32` and run the products in low precision under `autocast::<f16, _>(|| model.forward(&x))`"
)]
pub trait LayerElementAt<Before, const I: usize, Found = <Self as Precision>::Element>:
    Precision
{
    /// The element type of this layer and the ones before it.
    type Next;
}

#[diagnostic::do_not_recommend]
impl<L: Precision, Before, const I: usize> LayerElementAt<Before, I> for L
where
    L::Element: ElementAgree<Before>,
{
    type Next = <L::Element as ElementAgree<Before>>::Joined;
}

/// A tuple of layers that are all on one device (or on none): what `Sequential::new` takes.
/// `Device` is that device.
///
/// One blanket impl, whose device `D` is bound through the hidden [`LayerTupleN`] (one impl
/// per tuple size): a failed check is then reached only from `new`'s `T: Layers` bound, so
/// rustc reports it once, at the tuple, with the `LayerAt` sentence and without listing the
/// tuple impls (the top of the failed chain is `Layers`, which has no list to print). A tuple
/// that fails leaves `D` unknown, so `Sequential::new` has no type to return and the model
/// makes no second error where it is used.
#[doc(hidden)]
pub trait Layers {
    /// The device of every layer that has one ([`Anywhere`] when none has).
    type Device: Placed;
    /// The element type of every layer that has parameters ([`Anywhere`] when none has).
    type Element;
    /// `Self`, once checked: `Sequential::new` returns a `Sequential` of it, so that a
    /// rejected tuple makes no second error where the model is used.
    type Checked;
    /// `self`, as [`Checked`](Layers::Checked).
    fn into_checked(self) -> Self::Checked;
}

impl<T, D, El> Layers for T
where
    T: LayerTupleN<Device = D, Element = El>,
    D: Placed + Keep<T>,
    El: KeepElement<<D as Keep<T>>::Out>,
{
    type Device = D;
    type Element = El;
    type Checked = <El as KeepElement<<D as Keep<T>>::Out>>::Out;
    fn into_checked(self) -> Self::Checked {
        El::keep(D::keep(self))
    }
}

/// `T`, through the element type of a [`Layers`] check, as [`Keep`] through its device: a
/// tuple whose element types disagree gives `Sequential::new` no type to return either.
#[doc(hidden)]
pub trait KeepElement<T> {
    /// `T`.
    type Out;
    /// `t`.
    fn keep(t: T) -> Self::Out;
}

impl<E: Element, T> KeepElement<T> for E {
    type Out = T;
    fn keep(t: T) -> T {
        t
    }
}

impl<T> KeepElement<T> for Anywhere {
    type Out = T;
    fn keep(t: T) -> T {
        t
    }
}

/// `T`, through a device of a [`Layers`] check: normalizes only once the check has a device,
/// so a tuple that fails it gives `Sequential::new` no type to return (and no second error).
#[doc(hidden)]
pub trait Keep<T> {
    /// `T`.
    type Out;
    /// `t`.
    fn keep(t: T) -> Self::Out;
}

impl<D: Device, T> Keep<T> for D {
    type Out = T;
    fn keep(t: T) -> T {
        t
    }
}

impl<T> Keep<T> for Anywhere {
    type Out = T;
    fn keep(t: T) -> T {
        t
    }
}

/// The device of a tuple of layers, for each tuple size: layer `I` must agree with the
/// device of the layers before it ([`LayerAt`]). Only [`Layers`] uses it.
#[doc(hidden)]
pub trait LayerTupleN {
    /// As [`Layers::Device`].
    type Device: Placed;
    /// As [`Layers::Element`].
    type Element;
}

/// `impl LayerTupleN for (A, B, ..)`: each layer is `LayerAt<device of the ones before, I>`,
/// starting from [`Anywhere`]; the tuple's device is the last layer's `Next`. Then, through
/// that device (so that a layer on another device is one error, not two), each layer is
/// `LayerElementAt<element type of the ones before, I>`.
macro_rules! layer_tuple {
    // Devices done: the element types, each layer seen through the tuple's device `$dev`.
    (@elem [$($all:ident)*] [$($bounds:tt)*] $dev:ty; $before:ty;) => {
        impl<$($all),*> LayerTupleN for ($($all,)*)
        where
            $($bounds)*
        {
            type Device = $dev;
            type Element = $before;
        }
    };
    (@elem [$($all:ident)*] [$($bounds:tt)*] $dev:ty; $before:ty; $t:ident $i:tt $(, $rt:ident $ri:tt)*) => {
        layer_tuple!(
            @elem [$($all)*] [$($bounds)* <$dev as Placed>::Through<$t>: LayerElementAt<$before, $i>,]
            $dev; <<$dev as Placed>::Through<$t> as LayerElementAt<$before, $i>>::Next; $($rt $ri),*
        );
    };
    (@impl [$($all:ident)*] [$($bounds:tt)*] [$($layers:tt)*] $before:ty;) => {
        layer_tuple!(@elem [$($all)*] [$($bounds)*] $before; Anywhere; $($layers)*);
    };
    (@impl [$($all:ident)*] [$($bounds:tt)*] [$($layers:tt)*] $before:ty; $t:ident $i:tt $(, $rt:ident $ri:tt)*) => {
        layer_tuple!(
            @impl [$($all)* $t] [$($bounds)* $t: LayerAt<$before, $i>,] [$($layers)*]
            <$t as LayerAt<$before, $i>>::Next; $($rt $ri),*
        );
    };
    ($($t:ident $i:tt),+) => {
        layer_tuple!(@impl [] [] [$($t $i),+] Anywhere; $($t $i),+);
    };
}

layer_tuple!(A 0);
layer_tuple!(A 0, B 1);
layer_tuple!(A 0, B 1, C 2);
layer_tuple!(A 0, B 1, C 2, F 3);
layer_tuple!(A 0, B 1, C 2, F 3, G 4);
layer_tuple!(A 0, B 1, C 2, F 3, G 4, H 5);
layer_tuple!(A 0, B 1, C 2, F 3, G 4, H 5, J 6);
layer_tuple!(A 0, B 1, C 2, F 3, G 4, H 5, J 6, K 7);
layer_tuple!(A 0, B 1, C 2, F 3, G 4, H 5, J 6, K 7, L 8);
layer_tuple!(A 0, B 1, C 2, F 3, G 4, H 5, J 6, K 7, L 8, M 9);
