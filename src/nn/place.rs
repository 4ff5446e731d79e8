//! Where a module's parameters and buffers are, as a type: what lets `Sequential::new` and an
//! optimizer's `step` name both devices when a layer or a model is on another one.

use crate::device::Device;

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
}

impl<D: Device> Placed for D {
    type First<R: Device> = <D as Device>::OperandFirst<R>;
    type Second<R: Device> = <D as Device>::OperandSecond<R>;
}

impl Placed for Anywhere {
    type First<R: Device> = R;
    type Second<R: Device> = R;
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

/// A tuple of layers that are all on one device (or on none): what `Sequential::new` takes.
/// `Device` is that device.
///
/// One blanket impl over [`LayerTuple`]: a failed check is then reported from the return
/// type's projection, at the call, without a second note for `new`'s own bound.
#[doc(hidden)]
pub trait Layers {
    /// The device of every layer that has one ([`Anywhere`] when none has).
    type Device: Placed;
    /// `Self`, once checked: `Sequential::new` returns a `Sequential` of it, so that a
    /// rejected tuple makes no second error where the model is used.
    type Checked;
    /// `self`, as [`Checked`](Layers::Checked).
    fn into_checked(self) -> Self::Checked;
}

impl<T: LayerTuple> Layers for T {
    type Device = T::Device;
    type Checked = T::Checked;
    fn into_checked(self) -> T::Checked {
        LayerTuple::into_checked(self)
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

/// [`Layers`] for any [`LayerTupleN`]. (rustc still lists the `LayerTupleN` tuple impls under
/// a failed check: the root of a failed projection is the trait whose impl holds the
/// `LayerAt` bounds.)
#[doc(hidden)]
pub trait LayerTuple {
    /// As [`Layers::Device`].
    type Device: Placed;
    /// As [`Layers::Checked`].
    type Checked;
    /// As [`Layers::into_checked`].
    fn into_checked(self) -> Self::Checked;
}

impl<T: LayerTupleN> LayerTuple for T {
    type Device = T::Device;
    type Checked = T::Checked;
    fn into_checked(self) -> T::Checked {
        LayerTupleN::into_checked(self)
    }
}

/// [`Layers`] for each tuple size.
#[doc(hidden)]
pub trait LayerTupleN {
    /// As [`Layers::Device`].
    type Device: Placed;
    /// As [`Layers::Checked`].
    type Checked;
    /// As [`Layers::into_checked`].
    fn into_checked(self) -> Self::Checked;
}

impl<A> LayerTupleN for (A,)
where
    A: LayerAt<Anywhere, 0>,
    <A as LayerAt<Anywhere, 0>>::Next: Keep<Self>,
{
    type Device = <A as LayerAt<Anywhere, 0>>::Next;
    type Checked = <<A as LayerAt<Anywhere, 0>>::Next as Keep<Self>>::Out;
    fn into_checked(self) -> Self::Checked {
        <<A as LayerAt<Anywhere, 0>>::Next as Keep<Self>>::keep(self)
    }
}

impl<A, B> LayerTupleN for (A, B)
where
    A: LayerAt<Anywhere, 0>,
    B: LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>,
    <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next: Keep<Self>,
{
    type Device = <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next;
    type Checked = <<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next as Keep<Self>>::Out;
    fn into_checked(self) -> Self::Checked {
        <<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next as Keep<Self>>::keep(self)
    }
}

impl<A, B, C> LayerTupleN for (A, B, C)
where
    A: LayerAt<Anywhere, 0>,
    B: LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>,
    C: LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>,
    <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next: Keep<Self>,
{
    type Device =
        <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next;
    type Checked = <<C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next as Keep<Self>>::Out;
    fn into_checked(self) -> Self::Checked {
        <<C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next as Keep<Self>>::keep(self)
    }
}

impl<A, B, C, F> LayerTupleN for (A, B, C, F)
where
    A: LayerAt<Anywhere, 0>,
    B: LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>,
    C: LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>,
    F: LayerAt<
        <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
        3,
    >,
    <F as LayerAt<
        <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
        3,
    >>::Next: Keep<Self>,
{
    type Device = <F as LayerAt<
        <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
        3,
    >>::Next;
    type Checked = <<F as LayerAt<
        <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
        3,
    >>::Next as Keep<Self>>::Out;
    fn into_checked(self) -> Self::Checked {
        <<F as LayerAt<
            <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
            3,
        >>::Next as Keep<Self>>::keep(self)
    }
}

impl<A, B, C, F, G> LayerTupleN for (A, B, C, F, G)
where
    A: LayerAt<Anywhere, 0>,
    B: LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>,
    C: LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>,
    F: LayerAt<
        <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
        3,
    >,
    G: LayerAt<
        <F as LayerAt<
            <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
            3,
        >>::Next,
        4,
    >,
    <G as LayerAt<
        <F as LayerAt<
            <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
            3,
        >>::Next,
        4,
    >>::Next: Keep<Self>,
{
    type Device = <G as LayerAt<
        <F as LayerAt<
            <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
            3,
        >>::Next,
        4,
    >>::Next;
    type Checked = <<G as LayerAt<
        <F as LayerAt<
            <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
            3,
        >>::Next,
        4,
    >>::Next as Keep<Self>>::Out;
    fn into_checked(self) -> Self::Checked {
        <<G as LayerAt<
            <F as LayerAt<
                <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
                3,
            >>::Next,
            4,
        >>::Next as Keep<Self>>::keep(self)
    }
}

impl<A, B, C, F, G, H> LayerTupleN for (A, B, C, F, G, H)
where
    A: LayerAt<Anywhere, 0>,
    B: LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>,
    C: LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>,
    F: LayerAt<
        <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
        3,
    >,
    G: LayerAt<
        <F as LayerAt<
            <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
            3,
        >>::Next,
        4,
    >,
    H: LayerAt<
        <G as LayerAt<
            <F as LayerAt<
                <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
                3,
            >>::Next,
            4,
        >>::Next,
        5,
    >,
    <H as LayerAt<
        <G as LayerAt<
            <F as LayerAt<
                <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
                3,
            >>::Next,
            4,
        >>::Next,
        5,
    >>::Next: Keep<Self>,
{
    type Device = <H as LayerAt<
        <G as LayerAt<
            <F as LayerAt<
                <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
                3,
            >>::Next,
            4,
        >>::Next,
        5,
    >>::Next;
    type Checked = <<H as LayerAt<
        <G as LayerAt<
            <F as LayerAt<
                <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
                3,
            >>::Next,
            4,
        >>::Next,
        5,
    >>::Next as Keep<Self>>::Out;
    fn into_checked(self) -> Self::Checked {
        <<H as LayerAt<<G as LayerAt<<F as LayerAt<<C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next, 3>>::Next, 4>>::Next, 5>>::Next as Keep<Self>>::keep(self)
    }
}

impl<A, B, C, F, G, H, J> LayerTupleN for (A, B, C, F, G, H, J)
where
    A: LayerAt<Anywhere, 0>,
    B: LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>,
    C: LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>,
    F: LayerAt<<C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next, 3>,
    G: LayerAt<<F as LayerAt<<C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next, 3>>::Next, 4>,
    H: LayerAt<<G as LayerAt<<F as LayerAt<<C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next, 3>>::Next, 4>>::Next, 5>,
    J: LayerAt<<H as LayerAt<<G as LayerAt<<F as LayerAt<<C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next, 3>>::Next, 4>>::Next, 5>>::Next, 6>,
    <J as LayerAt<<H as LayerAt<<G as LayerAt<<F as LayerAt<<C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next, 3>>::Next, 4>>::Next, 5>>::Next, 6>>::Next: Keep<Self>,
{
    type Device = <J as LayerAt<<H as LayerAt<<G as LayerAt<<F as LayerAt<<C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next, 3>>::Next, 4>>::Next, 5>>::Next, 6>>::Next;
    type Checked = <<J as LayerAt<<H as LayerAt<<G as LayerAt<<F as LayerAt<<C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next, 3>>::Next, 4>>::Next, 5>>::Next, 6>>::Next as Keep<Self>>::Out;
    fn into_checked(self) -> Self::Checked {
        <<J as LayerAt<<H as LayerAt<<G as LayerAt<<F as LayerAt<<C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next, 3>>::Next, 4>>::Next, 5>>::Next, 6>>::Next as Keep<Self>>::keep(self)
    }
}

impl<A, B, C, F, G, H, J, K> LayerTupleN for (A, B, C, F, G, H, J, K)
where
    A: LayerAt<Anywhere, 0>,
    B: LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>,
    C: LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>,
    F: LayerAt<
        <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
        3,
    >,
    G: LayerAt<
        <F as LayerAt<
            <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
            3,
        >>::Next,
        4,
    >,
    H: LayerAt<
        <G as LayerAt<
            <F as LayerAt<
                <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
                3,
            >>::Next,
            4,
        >>::Next,
        5,
    >,
    J:
        LayerAt<
            <H as LayerAt<
                <G as LayerAt<
                    <F as LayerAt<
                        <C as LayerAt<
                            <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                            2,
                        >>::Next,
                        3,
                    >>::Next,
                    4,
                >>::Next,
                5,
            >>::Next,
            6,
        >,
    K: LayerAt<
        <J as LayerAt<
            <H as LayerAt<
                <G as LayerAt<
                    <F as LayerAt<
                        <C as LayerAt<
                            <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                            2,
                        >>::Next,
                        3,
                    >>::Next,
                    4,
                >>::Next,
                5,
            >>::Next,
            6,
        >>::Next,
        7,
    >,
    <K as LayerAt<
        <J as LayerAt<
            <H as LayerAt<
                <G as LayerAt<
                    <F as LayerAt<
                        <C as LayerAt<
                            <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                            2,
                        >>::Next,
                        3,
                    >>::Next,
                    4,
                >>::Next,
                5,
            >>::Next,
            6,
        >>::Next,
        7,
    >>::Next: Keep<Self>,
{
    type Device = <K as LayerAt<
        <J as LayerAt<
            <H as LayerAt<
                <G as LayerAt<
                    <F as LayerAt<
                        <C as LayerAt<
                            <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                            2,
                        >>::Next,
                        3,
                    >>::Next,
                    4,
                >>::Next,
                5,
            >>::Next,
            6,
        >>::Next,
        7,
    >>::Next;
    type Checked = <<K as LayerAt<
        <J as LayerAt<
            <H as LayerAt<
                <G as LayerAt<
                    <F as LayerAt<
                        <C as LayerAt<
                            <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                            2,
                        >>::Next,
                        3,
                    >>::Next,
                    4,
                >>::Next,
                5,
            >>::Next,
            6,
        >>::Next,
        7,
    >>::Next as Keep<Self>>::Out;
    fn into_checked(self) -> Self::Checked {
        <<K as LayerAt<
            <J as LayerAt<
                <H as LayerAt<
                    <G as LayerAt<
                        <F as LayerAt<
                            <C as LayerAt<
                                <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                                2,
                            >>::Next,
                            3,
                        >>::Next,
                        4,
                    >>::Next,
                    5,
                >>::Next,
                6,
            >>::Next,
            7,
        >>::Next as Keep<Self>>::keep(self)
    }
}

impl<A, B, C, F, G, H, J, K, L> LayerTupleN for (A, B, C, F, G, H, J, K, L)
where
    A: LayerAt<Anywhere, 0>,
    B: LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>,
    C: LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>,
    F: LayerAt<
        <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
        3,
    >,
    G: LayerAt<
        <F as LayerAt<
            <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
            3,
        >>::Next,
        4,
    >,
    H: LayerAt<
        <G as LayerAt<
            <F as LayerAt<
                <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
                3,
            >>::Next,
            4,
        >>::Next,
        5,
    >,
    J:
        LayerAt<
            <H as LayerAt<
                <G as LayerAt<
                    <F as LayerAt<
                        <C as LayerAt<
                            <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                            2,
                        >>::Next,
                        3,
                    >>::Next,
                    4,
                >>::Next,
                5,
            >>::Next,
            6,
        >,
    K: LayerAt<
        <J as LayerAt<
            <H as LayerAt<
                <G as LayerAt<
                    <F as LayerAt<
                        <C as LayerAt<
                            <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                            2,
                        >>::Next,
                        3,
                    >>::Next,
                    4,
                >>::Next,
                5,
            >>::Next,
            6,
        >>::Next,
        7,
    >,
    L: LayerAt<
        <K as LayerAt<
            <J as LayerAt<
                <H as LayerAt<
                    <G as LayerAt<
                        <F as LayerAt<
                            <C as LayerAt<
                                <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                                2,
                            >>::Next,
                            3,
                        >>::Next,
                        4,
                    >>::Next,
                    5,
                >>::Next,
                6,
            >>::Next,
            7,
        >>::Next,
        8,
    >,
    <L as LayerAt<
        <K as LayerAt<
            <J as LayerAt<
                <H as LayerAt<
                    <G as LayerAt<
                        <F as LayerAt<
                            <C as LayerAt<
                                <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                                2,
                            >>::Next,
                            3,
                        >>::Next,
                        4,
                    >>::Next,
                    5,
                >>::Next,
                6,
            >>::Next,
            7,
        >>::Next,
        8,
    >>::Next: Keep<Self>,
{
    type Device = <L as LayerAt<
        <K as LayerAt<
            <J as LayerAt<
                <H as LayerAt<
                    <G as LayerAt<
                        <F as LayerAt<
                            <C as LayerAt<
                                <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                                2,
                            >>::Next,
                            3,
                        >>::Next,
                        4,
                    >>::Next,
                    5,
                >>::Next,
                6,
            >>::Next,
            7,
        >>::Next,
        8,
    >>::Next;
    type Checked = <<L as LayerAt<
        <K as LayerAt<
            <J as LayerAt<
                <H as LayerAt<
                    <G as LayerAt<
                        <F as LayerAt<
                            <C as LayerAt<
                                <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                                2,
                            >>::Next,
                            3,
                        >>::Next,
                        4,
                    >>::Next,
                    5,
                >>::Next,
                6,
            >>::Next,
            7,
        >>::Next,
        8,
    >>::Next as Keep<Self>>::Out;
    fn into_checked(self) -> Self::Checked {
        <<L as LayerAt<
            <K as LayerAt<
                <J as LayerAt<
                    <H as LayerAt<
                        <G as LayerAt<
                            <F as LayerAt<
                                <C as LayerAt<
                                    <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                                    2,
                                >>::Next,
                                3,
                            >>::Next,
                            4,
                        >>::Next,
                        5,
                    >>::Next,
                    6,
                >>::Next,
                7,
            >>::Next,
            8,
        >>::Next as Keep<Self>>::keep(self)
    }
}

impl<A, B, C, F, G, H, J, K, L, M> LayerTupleN for (A, B, C, F, G, H, J, K, L, M)
where
    A: LayerAt<Anywhere, 0>,
    B: LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>,
    C: LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>,
    F: LayerAt<
        <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
        3,
    >,
    G: LayerAt<
        <F as LayerAt<
            <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
            3,
        >>::Next,
        4,
    >,
    H: LayerAt<
        <G as LayerAt<
            <F as LayerAt<
                <C as LayerAt<<B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next, 2>>::Next,
                3,
            >>::Next,
            4,
        >>::Next,
        5,
    >,
    J:
        LayerAt<
            <H as LayerAt<
                <G as LayerAt<
                    <F as LayerAt<
                        <C as LayerAt<
                            <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                            2,
                        >>::Next,
                        3,
                    >>::Next,
                    4,
                >>::Next,
                5,
            >>::Next,
            6,
        >,
    K: LayerAt<
        <J as LayerAt<
            <H as LayerAt<
                <G as LayerAt<
                    <F as LayerAt<
                        <C as LayerAt<
                            <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                            2,
                        >>::Next,
                        3,
                    >>::Next,
                    4,
                >>::Next,
                5,
            >>::Next,
            6,
        >>::Next,
        7,
    >,
    L: LayerAt<
        <K as LayerAt<
            <J as LayerAt<
                <H as LayerAt<
                    <G as LayerAt<
                        <F as LayerAt<
                            <C as LayerAt<
                                <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                                2,
                            >>::Next,
                            3,
                        >>::Next,
                        4,
                    >>::Next,
                    5,
                >>::Next,
                6,
            >>::Next,
            7,
        >>::Next,
        8,
    >,
    M: LayerAt<
        <L as LayerAt<
            <K as LayerAt<
                <J as LayerAt<
                    <H as LayerAt<
                        <G as LayerAt<
                            <F as LayerAt<
                                <C as LayerAt<
                                    <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                                    2,
                                >>::Next,
                                3,
                            >>::Next,
                            4,
                        >>::Next,
                        5,
                    >>::Next,
                    6,
                >>::Next,
                7,
            >>::Next,
            8,
        >>::Next,
        9,
    >,
    <M as LayerAt<
        <L as LayerAt<
            <K as LayerAt<
                <J as LayerAt<
                    <H as LayerAt<
                        <G as LayerAt<
                            <F as LayerAt<
                                <C as LayerAt<
                                    <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                                    2,
                                >>::Next,
                                3,
                            >>::Next,
                            4,
                        >>::Next,
                        5,
                    >>::Next,
                    6,
                >>::Next,
                7,
            >>::Next,
            8,
        >>::Next,
        9,
    >>::Next: Keep<Self>,
{
    type Device = <M as LayerAt<
        <L as LayerAt<
            <K as LayerAt<
                <J as LayerAt<
                    <H as LayerAt<
                        <G as LayerAt<
                            <F as LayerAt<
                                <C as LayerAt<
                                    <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                                    2,
                                >>::Next,
                                3,
                            >>::Next,
                            4,
                        >>::Next,
                        5,
                    >>::Next,
                    6,
                >>::Next,
                7,
            >>::Next,
            8,
        >>::Next,
        9,
    >>::Next;
    type Checked = <<M as LayerAt<
        <L as LayerAt<
            <K as LayerAt<
                <J as LayerAt<
                    <H as LayerAt<
                        <G as LayerAt<
                            <F as LayerAt<
                                <C as LayerAt<
                                    <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                                    2,
                                >>::Next,
                                3,
                            >>::Next,
                            4,
                        >>::Next,
                        5,
                    >>::Next,
                    6,
                >>::Next,
                7,
            >>::Next,
            8,
        >>::Next,
        9,
    >>::Next as Keep<Self>>::Out;
    fn into_checked(self) -> Self::Checked {
        <<M as LayerAt<
            <L as LayerAt<
                <K as LayerAt<
                    <J as LayerAt<
                        <H as LayerAt<
                            <G as LayerAt<
                                <F as LayerAt<
                                    <C as LayerAt<
                                        <B as LayerAt<<A as LayerAt<Anywhere, 0>>::Next, 1>>::Next,
                                        2,
                                    >>::Next,
                                    3,
                                >>::Next,
                                4,
                            >>::Next,
                            5,
                        >>::Next,
                        6,
                    >>::Next,
                    7,
                >>::Next,
                8,
            >>::Next,
            9,
        >>::Next as Keep<Self>>::keep(self)
    }
}
