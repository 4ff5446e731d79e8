//! Layers with their feature sizes in the type, and a model builder whose layers must chain.
//!
//! ```
//! use devtype::prelude::*;
//! use devtype::nn::ReLU;
//! use devtype::shaped::nn::{StaticLinear, Seq};
//! use devtype::shaped::{Dyn, Shaped, C};
//!
//! let model = Seq::new(StaticLinear::<Cpu, 784, 128>::new(Cpu))
//!     .then(ReLU)
//!     .then(StaticLinear::<Cpu, 128, 10>::new(Cpu)); // `StaticLinear::<Cpu, 64, 10>` does not compile
//! let x: Shaped<Cpu, f32, (Dyn, C<784>)> = Shaped::randn([32, 784], Cpu);
//! let logits = model.forward(&x);            // Shaped<Cpu, f32, (Dyn, C<10>)>
//! assert_eq!(logits.shape(), &[32, 10]);
//! assert_eq!(model.named_parameters()[2].0, "2.weight");
//! ```
//!
//! A [`Seq`] is a [`Module`], so optimizers, `save` and `load` take it as they take a
//! [`Sequential`](crate::nn::Sequential); parameters are named by position as there.

use super::check::ChainSizes;
use super::ops::AddmmK;
use super::{Dim, Dyn, ShapeOf, Shaped, C};
use crate::core::error::Result;
use crate::device::Device;
use crate::nn::{join_name, Forward, Module, ReLU};
use crate::tensor::{Float, HasDevice, ModuleInput, Tensor};
use std::marker::PhantomData;

/// `nn.Linear(IN, OUT)` with its sizes in the type: `StaticLinear<Cuda<0>, 784, 512>`.
///
/// Not named `Linear`: with two public `Linear`s, rustc would write the other one
/// `devtype::nn::Linear` in every diagnostic that names it, lessons included.
#[derive(Clone)]
pub struct StaticLinear<D: Device, const IN: usize, const OUT: usize, E: Float = f32> {
    inner: crate::nn::Linear<D, E>,
}

/// Prints the parameters, as `Linear`'s `Debug` (not on a capturing device).
impl<D: crate::device::HostSync, const IN: usize, const OUT: usize, E: Float> std::fmt::Debug
    for StaticLinear<D, IN, OUT, E>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticLinear")
            .field("inner", &self.inner)
            .finish()
    }
}

impl<D: Device, const IN: usize, const OUT: usize> StaticLinear<D, IN, OUT, f32> {
    /// A layer of `f32` with PyTorch's default initialisation, created directly on `dev`.
    pub fn try_new(dev: D) -> Result<Self> {
        crate::nn::Linear::try_new(IN, OUT, dev).map(|inner| StaticLinear { inner })
    }

    /// A layer of `f32` with PyTorch's default initialisation, created directly on `dev`.
    ///
    /// Panics with the error's text where [`try_new`](Self::try_new) returns it.
    #[track_caller]
    pub fn new(dev: D) -> Self {
        super::or_panic(Self::try_new(dev))
    }
}

impl<D: Device, const IN: usize, const OUT: usize, E: Float> StaticLinear<D, IN, OUT, E> {
    /// The dynamic layer inside (its weight is `[OUT, IN]`).
    pub fn inner(&self) -> &crate::nn::Linear<D, E> {
        &self.inner
    }

    /// A layer from a dynamic one, whose weight must be `[OUT, IN]`.
    pub fn try_from_inner(inner: crate::nn::Linear<D, E>) -> Result<Self> {
        Shaped::<D, E, (C<OUT>, C<IN>)>::try_from_tensor(inner.weight().clone())?;
        Ok(StaticLinear { inner })
    }

    /// `x @ weight.T + bias` for `x` of shape `[batch, IN]`: another width does not compile
    /// where it is static (PyTorch's `addmm` sentence), and is the same `Err` at run time where it
    /// is [`Dyn`].
    pub fn try_forward<B: Dim, K: Dim, X>(&self, x: X) -> Result<Shaped<D, E, (B, C<OUT>)>>
    where
        X: ModuleInput<D> + HasDevice<Element = E> + ShapeOf<Shape = (B, K)> + Takes<IN, OUT>,
    {
        super::typed_on::<D, E>(&x, self.inner.weight().device())
            .try_linear(self.inner.weight(), self.inner.bias())
            .map(Shaped::wrap)
    }

    /// `x @ weight.T + bias`; see [`try_forward`](Self::try_forward).
    ///
    /// Panics with the error's text where [`try_forward`](Self::try_forward) returns it.
    #[track_caller]
    pub fn forward<B: Dim, K: Dim, X>(&self, x: X) -> Shaped<D, E, (B, C<OUT>)>
    where
        X: ModuleInput<D> + HasDevice<Element = E> + ShapeOf<Shape = (B, K)> + Takes<IN, OUT>,
    {
        super::or_panic(self.try_forward(x))
    }
}

/// An input `[batch, k]` of a layer taking `IN` features to `OUT` (the check).
pub trait Takes<const IN: usize, const OUT: usize>: ShapeOf {}
impl<B: Dim, K: Dim + AddmmK<C<IN>, B, C<OUT>>, X, const IN: usize, const OUT: usize> Takes<IN, OUT>
    for X
where
    X: ShapeOf<Shape = (B, K)>,
{
}

impl<D: Device, const IN: usize, const OUT: usize, E: Float> Module<D, E>
    for StaticLinear<D, IN, OUT, E>
{
    type On<D2: Device> = StaticLinear<D2, IN, OUT, E>;

    fn try_to<D2: Device>(&self, dev: D2) -> Result<Self::On<D2>>
    where
        D: crate::device::CopyTo<D2>,
    {
        self.inner.try_to(dev).map(|inner| StaticLinear { inner })
    }

    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
        self.inner.visit_parameters(prefix, f)
    }

    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
        self.inner.visit_parameters_mut(prefix, f)
    }

    fn visit_buffers(&self, prefix: &str, f: &mut dyn FnMut(&str, crate::nn::Buffer<D, E>)) {
        self.inner.visit_buffers(prefix, f)
    }

    fn visit_buffers_mut(
        &mut self,
        prefix: &str,
        f: &mut dyn FnMut(&str, crate::nn::BufferMut<'_, D, E>),
    ) {
        self.inner.visit_buffers_mut(prefix, f)
    }
}

/// A layer of a [`Seq`]: what it makes of `F` input features.
pub trait Layer<D: Device, E: Float>: Module<D, E> {
    /// The output features for `F` input features.
    type Out<F: Dim>: Dim;
    /// The same layer on `D2`.
    type LayerOn<D2: Device>: Layer<D2, E>;
    /// The layer on `D2`.
    fn layer_to<D2: Device>(&self, dev: D2) -> Result<Self::LayerOn<D2>>
    where
        D: crate::device::CopyTo<D2>;
    /// The layer applied to a `[batch, F]` tensor.
    fn run(&self, x: &Tensor<D, E>) -> Result<Tensor<D, E>>;
    /// The device of its parameters, `None` for a layer without any.
    fn device(&self) -> Option<D>;
}

/// A layer that takes `F` features (the check at [`Seq::then`]).
pub trait Accepts<F> {}
impl<const K: usize, const IN: usize, const OUT: usize, D: Device, E: Float> Accepts<C<K>>
    for StaticLinear<D, IN, OUT, E>
where
    (): ChainSizes<K, IN, OUT>,
{
}
impl<const IN: usize, const OUT: usize, D: Device, E: Float> Accepts<Dyn>
    for StaticLinear<D, IN, OUT, E>
{
}
impl<F> Accepts<F> for ReLU {}

impl<D: Device, const IN: usize, const OUT: usize, E: Float> Layer<D, E>
    for StaticLinear<D, IN, OUT, E>
{
    type Out<F: Dim> = C<OUT>;
    type LayerOn<D2: Device> = StaticLinear<D2, IN, OUT, E>;
    fn layer_to<D2: Device>(&self, dev: D2) -> Result<Self::LayerOn<D2>>
    where
        D: crate::device::CopyTo<D2>,
    {
        self.try_to(dev)
    }
    fn run(&self, x: &Tensor<D, E>) -> Result<Tensor<D, E>> {
        x.try_linear(self.inner.weight(), self.inner.bias())
    }
    fn device(&self) -> Option<D> {
        Some(self.inner.weight().device())
    }
}

impl<D: Device, E: Float> Layer<D, E> for ReLU {
    type Out<F: Dim> = F;
    type LayerOn<D2: Device> = ReLU;
    fn layer_to<D2: Device>(&self, _dev: D2) -> Result<ReLU> {
        Ok(ReLU)
    }
    fn run(&self, x: &Tensor<D, E>) -> Result<Tensor<D, E>> {
        Ok(Forward::<D, E>::forward(self, x))
    }
    fn device(&self) -> Option<D> {
        None
    }
}

/// The layers of a [`Seq`], nested: `((first,), second)`.
pub trait LayerStack<D: Device, E: Float> {
    /// The number of layers.
    const LEN: usize;
    /// The same layers on `D2`.
    type On<D2: Device>: LayerStack<D2, E>;
    /// The layers on `D2`.
    fn stack_to<D2: Device>(&self, dev: D2) -> Result<Self::On<D2>>
    where
        D: crate::device::CopyTo<D2>;
    /// The layers applied in order.
    fn run(&self, x: &Tensor<D, E>) -> Result<Tensor<D, E>>;
    /// Every parameter, named by position.
    fn visit(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>));
    /// Every parameter, mutably, named by position.
    fn visit_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>));
    /// Every buffer, named by position.
    fn visit_buffers(&self, _prefix: &str, _f: &mut dyn FnMut(&str, crate::nn::Buffer<D, E>)) {}
    /// Every buffer, mutably, named by position.
    fn visit_buffers_mut(
        &mut self,
        _prefix: &str,
        _f: &mut dyn FnMut(&str, crate::nn::BufferMut<'_, D, E>),
    ) {
    }
    /// Training mode on or off.
    fn training(&mut self, on: bool);
    /// The device of the parameters, `None` for layers without any.
    fn device(&self) -> Option<D>;
}

impl<D: Device, E: Float, L: Layer<D, E>> LayerStack<D, E> for (L,) {
    const LEN: usize = 1;
    type On<D2: Device> = (L::LayerOn<D2>,);
    fn stack_to<D2: Device>(&self, dev: D2) -> Result<Self::On<D2>>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok((self.0.layer_to(dev)?,))
    }
    fn run(&self, x: &Tensor<D, E>) -> Result<Tensor<D, E>> {
        self.0.run(x)
    }
    fn visit(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
        self.0.visit_parameters(&join_name(prefix, "0"), f)
    }
    fn visit_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
        self.0.visit_parameters_mut(&join_name(prefix, "0"), f)
    }
    fn visit_buffers(&self, prefix: &str, f: &mut dyn FnMut(&str, crate::nn::Buffer<D, E>)) {
        self.0.visit_buffers(&join_name(prefix, "0"), f)
    }
    fn visit_buffers_mut(
        &mut self,
        prefix: &str,
        f: &mut dyn FnMut(&str, crate::nn::BufferMut<'_, D, E>),
    ) {
        self.0.visit_buffers_mut(&join_name(prefix, "0"), f)
    }
    fn training(&mut self, on: bool) {
        self.0.set_training(on)
    }
    fn device(&self) -> Option<D> {
        self.0.device()
    }
}

impl<D: Device, E: Float, P: LayerStack<D, E>, L: Layer<D, E>> LayerStack<D, E> for (P, L) {
    const LEN: usize = P::LEN + 1;
    type On<D2: Device> = (P::On<D2>, L::LayerOn<D2>);
    fn stack_to<D2: Device>(&self, dev: D2) -> Result<Self::On<D2>>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok((self.0.stack_to(dev)?, self.1.layer_to(dev)?))
    }
    fn run(&self, x: &Tensor<D, E>) -> Result<Tensor<D, E>> {
        self.1.run(&self.0.run(x)?)
    }
    fn visit(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
        self.0.visit(prefix, f);
        self.1
            .visit_parameters(&join_name(prefix, &P::LEN.to_string()), f)
    }
    fn visit_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
        self.0.visit_mut(prefix, f);
        self.1
            .visit_parameters_mut(&join_name(prefix, &P::LEN.to_string()), f)
    }
    fn visit_buffers(&self, prefix: &str, f: &mut dyn FnMut(&str, crate::nn::Buffer<D, E>)) {
        self.0.visit_buffers(prefix, f);
        self.1
            .visit_buffers(&join_name(prefix, &P::LEN.to_string()), f)
    }
    fn visit_buffers_mut(
        &mut self,
        prefix: &str,
        f: &mut dyn FnMut(&str, crate::nn::BufferMut<'_, D, E>),
    ) {
        self.0.visit_buffers_mut(prefix, f);
        self.1
            .visit_buffers_mut(&join_name(prefix, &P::LEN.to_string()), f)
    }
    fn training(&mut self, on: bool) {
        self.0.training(on);
        self.1.set_training(on)
    }
    fn device(&self) -> Option<D> {
        self.0.device().or_else(|| self.1.device())
    }
}

/// The widths a [`Seq`] carries in its type (no data).
type Sizes<In, First, Out> = PhantomData<fn() -> (In, First, Out)>;

/// Layers applied in order (`nn.Sequential`) whose sizes must chain: built with
/// [`Seq::new`] and [`then`](Seq::then), which does not compile when a layer does not take
/// what the layers before it give. `IN` is the input width, `FIRST` the first layer's output
/// width (for the input's message), `OUT` the output width.
pub struct Seq<L, In, First, Out> {
    layers: L,
    _sizes: Sizes<In, First, Out>,
}

impl<L: Clone, In, First, Out> Clone for Seq<L, In, First, Out> {
    fn clone(&self) -> Self {
        Seq {
            layers: self.layers.clone(),
            _sizes: PhantomData,
        }
    }
}

impl<D: Device, E: Float, const IN: usize, const OUT: usize>
    Seq<(StaticLinear<D, IN, OUT, E>,), C<IN>, C<OUT>, C<OUT>>
{
    /// A model that starts with `first`.
    pub fn new(first: StaticLinear<D, IN, OUT, E>) -> Self {
        Seq {
            layers: (first,),
            _sizes: PhantomData,
        }
    }
}

impl<L, In, First, Out: Dim> Seq<L, In, First, Out> {
    /// The model with `layer` appended: it must take `Out` features (a `StaticLinear<IN, _>` with
    /// `IN` the width so far, or an activation).
    pub fn then<D: Device, E: Float, N: Layer<D, E> + Accepts<Out>>(
        self,
        layer: N,
    ) -> Seq<(L, N), In, First, N::Out<Out>>
    where
        L: LayerStack<D, E>,
    {
        Seq {
            layers: (self.layers, layer),
            _sizes: PhantomData,
        }
    }

    /// The layers, nested as they were appended: `((first,), second)`.
    pub fn layers(&self) -> &L {
        &self.layers
    }
}

/// An input `[batch, k]` of a model whose first layer takes `In` features to `First` (the
/// check).
pub trait ModelInput<In, First>: ShapeOf {}
impl<B: Dim, K: Dim + AddmmK<In, B, First>, X, In, First> ModelInput<In, First> for X where
    X: ShapeOf<Shape = (B, K)>
{
}

impl<L, In: Dim, First: Dim, Out: Dim> Seq<L, In, First, Out> {
    /// The layers applied in order to `x` of shape `[batch, In]`.
    pub fn try_forward<D: Device, E: Float, B: Dim, K: Dim, X>(
        &self,
        x: X,
    ) -> Result<Shaped<D, E, (B, Out)>>
    where
        L: LayerStack<D, E>,
        X: ModuleInput<D>
            + HasDevice<Element = E>
            + ShapeOf<Shape = (B, K)>
            + ModelInput<In, First>,
    {
        // A `Seq` starts with a `StaticLinear`, so it has a device; the input is on it (its bound).
        let dev = self
            .layers
            .device()
            .or_else(|| D::from_dyn(x.typed_device().dyn_device()));
        let Some(dev) = dev else {
            return Err(crate::Error::Shape("a model without parameters".into()));
        };
        let x = super::typed_on::<D, E>(&x, dev);
        self.layers.run(&x).map(Shaped::wrap)
    }

    /// The layers applied in order; see [`try_forward`](Self::try_forward).
    ///
    /// Panics with the error's text where [`try_forward`](Self::try_forward) returns it.
    #[track_caller]
    pub fn forward<D: Device, E: Float, B: Dim, K: Dim, X>(&self, x: X) -> Shaped<D, E, (B, Out)>
    where
        L: LayerStack<D, E>,
        X: ModuleInput<D>
            + HasDevice<Element = E>
            + ShapeOf<Shape = (B, K)>
            + ModelInput<In, First>,
    {
        super::or_panic(self.try_forward(x))
    }
}

impl<D: Device, E: Float, L: LayerStack<D, E>, In: 'static, First: 'static, Out: 'static>
    Module<D, E> for Seq<L, In, First, Out>
{
    type On<D2: Device> = Seq<L::On<D2>, In, First, Out>;

    fn try_to<D2: Device>(&self, dev: D2) -> Result<Self::On<D2>>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok(Seq {
            layers: self.layers.stack_to(dev)?,
            _sizes: PhantomData,
        })
    }

    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
        self.layers.visit(prefix, f)
    }

    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
        self.layers.visit_mut(prefix, f)
    }

    fn visit_buffers(&self, prefix: &str, f: &mut dyn FnMut(&str, crate::nn::Buffer<D, E>)) {
        LayerStack::visit_buffers(&self.layers, prefix, f)
    }

    fn visit_buffers_mut(
        &mut self,
        prefix: &str,
        f: &mut dyn FnMut(&str, crate::nn::BufferMut<'_, D, E>),
    ) {
        LayerStack::visit_buffers_mut(&mut self.layers, prefix, f)
    }

    fn set_training(&mut self, training: bool) {
        self.layers.training(training)
    }
}

impl<D: Device, const IN: usize, const OUT: usize, E: Float> crate::nn::Placement
    for StaticLinear<D, IN, OUT, E>
{
    type Device = D;
}

/// The device of a [`Seq`]'s layers: its first layer's (a `StaticLinear`, so a device).
pub trait StackPlacement {
    /// The first layer's placement.
    type Device: crate::nn::Placed;
}
impl<L: crate::nn::Placement> StackPlacement for (L,) {
    type Device = L::Device;
}
impl<P: StackPlacement, L> StackPlacement for (P, L) {
    type Device = P::Device;
}

impl<L: StackPlacement, In, First, Out> crate::nn::Placement for Seq<L, In, First, Out> {
    type Device = L::Device;
}

impl<D: Device, const IN: usize, const OUT: usize, E: Float> crate::nn::Precision
    for StaticLinear<D, IN, OUT, E>
{
    type Element = E;
}

/// The element type of a [`Seq`]'s layers: its first layer's (they share one, by type).
pub trait StackPrecision {
    /// The first layer's element type.
    type Element;
}
impl<L: crate::nn::Precision> StackPrecision for (L,) {
    type Element = L::Element;
}
impl<P: StackPrecision, L> StackPrecision for (P, L) {
    type Element = P::Element;
}

impl<L: StackPrecision, In, First, Out> crate::nn::Precision for Seq<L, In, First, Out> {
    type Element = L::Element;
}
