//! Modules (layers and losses), typed on the device of their parameters and buffers.
//!
//! A module's inputs go through [`ModuleInput<D>`](crate::ModuleInput): feeding a batch that is
//! still on the CPU to a model on `Cuda<0>` is a compile error whose label says the input is on
//! one device and the module's parameters on another. [`Module::to`] returns the module typed
//! on the new device, moving every parameter and buffer; a model of several layers moves with
//! one call. Its parameters are tracked [`Tensor`]s (made with `Tensor::parameter`), so `forward` records the graph that
//! `loss.backward()` walks.
//!
//! A model is a struct of layers plus one line, [`module!`](crate::module), which writes its
//! `Module` impl (moving, naming and visiting the fields); `forward` is the model's own code:
//!
//! ```
//! use devtype::prelude::*;
//! use devtype::nn::{Linear, ReLU};
//!
//! struct Mlp<D: Device> {
//!     fc1: Linear<D>,
//!     act: ReLU,
//!     fc2: Linear<D>,
//! }
//! devtype::module!(Mlp<D> { fc1, act, fc2 });
//!
//! impl<D: Device> Forward<D> for Mlp<D> {
//!     fn forward<I: ModuleInput<D> + HasDevice<Element = f32>>(&self, x: I) -> Tensor<D> {
//!         self.fc2.forward(self.act.forward(self.fc1.forward(x)))
//!     }
//! }
//!
//! let dev = Cpu;                                   // or Cuda::<0>::open()?
//! let model = Mlp { fc1: Linear::new(4, 8, Cpu), act: ReLU, fc2: Linear::new(8, 2, Cpu) };
//! let model = model.to(dev);                       // every parameter moves, typed on dev
//! let names: Vec<String> = model.named_parameters().into_iter().map(|(n, _)| n).collect();
//! assert_eq!(names, ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]);
//! let y = model.forward(&Tensor::randn([3, 4], Cpu).to(dev));
//! assert_eq!(y.shape(), &[3, 2]);
//! ```
//!
//! The dynamic modules ([`DynLinear`], [`DynSequential`], ...) move in place and return
//! `&mut Self`, as PyTorch's `Module.to` does.

mod activation;
mod activations;
mod attention;
mod checkpoint;
mod conv;
mod dyn_norm;
mod dynamic;
mod embedding;
pub mod functional;
pub mod init;
mod linear;
mod loss;
mod norm;
mod place;
mod sequential;
pub mod utils;

pub use crate::ops::loss::Reduction;
pub use activation::{Dropout, ReLU};
pub use activations::{Flatten, LeakyReLU, SiLU, Sigmoid, Softmax, Tanh, GELU};
pub use attention::MultiheadAttention;
pub(crate) use checkpoint::{
    buffer_tensors as checkpoint_buffer_tensors, commit_load, prepare_load,
    read as checkpoint_read, read_raw as checkpoint_read_raw, write as checkpoint_write,
    write_with_metadata as checkpoint_write_with_metadata, Loaded,
};
pub use checkpoint::{load, load_tensors, save};
pub use conv::{AdaptiveAvgPool2d, AvgPool2d, Conv1d, Conv2d, DynConv1d, DynConv2d, MaxPool2d};
pub use dyn_norm::{DynBatchNorm1d, DynBatchNorm2d, DynEmbedding, DynGroupNorm, DynLayerNorm};
pub use dynamic::{
    DynBCEWithLogitsLoss, DynBuffer, DynCrossEntropyLoss, DynLinear, DynModule, DynNLLLoss,
    DynSequential,
};
pub use embedding::Embedding;
pub use functional::{Approximate, AttnMask};
pub use linear::Linear;
pub use loss::{
    BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss,
    TargetOn,
};
pub use norm::{BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, RMSNorm};
#[doc(hidden)]
pub use place::{Agree, ElementAgree, Keep, KeepElement, LayerTupleN, Layers};
pub use place::{Anywhere, LayerAt, LayerElementAt, Placed, Placement, Precision};
pub use sequential::Sequential;

use crate::core::error::Result;
use crate::device::Device;
use crate::tensor::{Element, Float, HasDevice, InputElementIs, ModuleInput, Tensor};

/// Something with a `forward` from tensors on `D` to a tracked tensor on `D`.
///
/// The input may be a [`Tensor`], tracked or not (or a reference to one), on
/// the module's device `D`: anything else does not compile.
pub trait Forward<D: Device, E: Float = f32> {
    /// Runs the module on `input`, which must be on the module's device.
    ///
    /// Implementations return `Tensor<D, E>`, which is what [`Output<I, D, E>`] is for any
    /// input on `D`.
    ///
    /// An input of other elements is PyTorch's `F.linear` dtype sentence
    /// ([`InputElementIs`]). `InputElementIs<E>` implies `HasDevice<Element = E>`, so an
    /// implementation may keep writing `I: ModuleInput<D> + HasDevice<Element = E>`.
    fn forward<I: ModuleInput<D> + InputElementIs<E>>(&self, input: I) -> Output<I, D, E>;
}

/// What a module's `forward` returns for an input `I`: `Tensor<D, E>`, on the module's device
/// `D`, for every input on `D` (generic code included: `I: ModuleInput<D>` says so).
///
/// Spelled through [`ModuleInput::Out`] so that an input on another
/// device is one error, at the model: the output then has no type, and nothing that uses it
/// (the loss, with targets on the batch's device) reports a second one.
pub type Output<I, D, E = f32> =
    Tensor<<<I as ModuleInput<D>>::Out as crate::tensor::Is<D>>::Itself, E>;

/// A tensor that can become a parameter of a module on device `D` with elements `E`:
/// `Tensor<D, E>` or `&Tensor<D, E>` (a new handle to the same parameter).
///
/// What [`Linear::set_weight`] takes: a tensor on another device is a compile error in
/// PyTorch's words (PyTorch meets it at the next forward, as `addmm`'s `mat2`).
#[diagnostic::on_unimplemented(
    message = "Expected all tensors to be on the same device, but found at least two devices, `{D}` and `{Found}`",
    label = "this tensor is on `{Found}`, but the module's parameters are on `{D}`",
    note = "move the tensor to the module's device first (`.to(dev)` returns a new tensor): `layer.set_weight(w.to(dev));`"
)]
pub trait ParameterOn<D: Device, E: Float, Found: Device = <Self as HasDevice>::Device>:
    HasDevice
{
    /// The tensor as a parameter on `D`: itself when it is a parameter already.
    #[doc(hidden)]
    fn into_parameter(self) -> Tensor<D, E>;
}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Float> ParameterOn<D, E> for Tensor<D, E> {
    fn into_parameter(self) -> Tensor<D, E> {
        if self.requires_grad() && self.is_leaf() {
            self
        } else {
            Tensor::parameter(self)
        }
    }
}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Float> ParameterOn<D, E> for &Tensor<D, E> {
    fn into_parameter(self) -> Tensor<D, E> {
        self.clone().into_parameter()
    }
}

/// `&w` where `w: &Tensor` (see [`HasDevice`]).
#[diagnostic::do_not_recommend]
impl<D: Device, E: Float> ParameterOn<D, E> for &&Tensor<D, E> {
    fn into_parameter(self) -> Tensor<D, E> {
        (*self).into_parameter()
    }
}

/// The identity of a parameter: its autograd node, which every handle to it shares (the
/// handles of a tied weight included). `None` for a tensor that does not require grad.
pub(crate) fn identity<D: Device, E: Float>(p: &Tensor<D, E>) -> Option<usize> {
    p.node().map(crate::graph::Node::address)
}

/// Calls `f` once per parameter of `model` (the first handle of each, by [`identity`]),
/// mutably, stopping at the first error; every later handle to the same parameter (a tied
/// weight) is then given the first one's value, so the tie holds and nothing is updated twice.
pub(crate) fn for_each_unique_mut<D: Device, E: Float, M: Module<D, E> + ?Sized>(
    model: &mut M,
    mut f: impl FnMut(&str, &mut Tensor<D, E>) -> Result<()>,
) -> Result<()> {
    let mut done: std::collections::HashMap<usize, crate::core::raw::RawTensor> =
        std::collections::HashMap::new();
    let mut result = Ok(());
    model.visit_parameters_mut("", &mut |name, p| {
        // Aliases of what was done are kept in step even after an error.
        let id = identity(p);
        if let Some(value) = id.and_then(|id| done.get(&id)) {
            *p.raw_mut() = value.clone();
            return;
        }
        if result.is_err() {
            return;
        }
        result = f(name, p);
        if let (Ok(()), Some(id)) = (&result, id) {
            done.insert(id, p.raw.clone());
        }
    });
    result
}

/// Parameters moved in one [`move_scope`], by the identity of their source: the value and the
/// node of the moved parameter.
type Moved = std::collections::HashMap<
    usize,
    (
        crate::core::raw::RawTensor,
        std::sync::Arc<crate::graph::Node>,
    ),
>;

thread_local! {
    /// The parameters moved so far by the outermost [`move_scope`] on this thread: `None`
    /// outside one.
    static MOVED: std::cell::RefCell<Option<Moved>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f`, the `try_to` of a module, as one move: a parameter that two of its layers hold
/// (a tied weight) is moved once and stays one parameter on the new device. Nested scopes
/// (the layers' own `try_to`) join the outermost one. Used by [`module!`](crate::module),
/// `Vec` and `Sequential`; a hand-written `Module` whose layers share a parameter calls it
/// around its `try_to` too.
#[doc(hidden)]
pub fn move_scope<R>(f: impl FnOnce() -> R) -> R {
    struct Outermost(bool);
    impl Drop for Outermost {
        fn drop(&mut self) {
            if self.0 {
                MOVED.with(|m| *m.borrow_mut() = None);
            }
        }
    }
    let outermost = MOVED.with(|m| {
        let mut m = m.borrow_mut();
        let first = m.is_none();
        if first {
            *m = Some(std::collections::HashMap::new());
        }
        first
    });
    let _reset = Outermost(outermost);
    f()
}

/// `prefix.name`, or `name` when `prefix` is empty: the names of `named_parameters()`.
#[doc(hidden)]
pub fn join_name(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else if name.is_empty() {
        prefix.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// A module whose parameters and buffers live on `D`: it can move to another device (typed
/// on it), and enumerate its parameters by name (for optimizers and checkpoints).
///
/// Layers implement it; a user's model implements it with one line, [`module!`](crate::module).
#[diagnostic::on_unimplemented(
    message = "Expected all tensors to be on the same device, but `{Self}` is not a module on `{D}`",
    label = "the parameters and buffers of this module are not on `{D}`",
    note = "move the module once with `let model = model.to(dev);`, or an optimizer's state with `let opt = opt.to(dev);`"
)]
pub trait Module<D: Device, E: Float = f32> {
    /// The same module on device `D2`.
    type On<D2: Device>: Module<D2, E>;

    /// The module with every parameter and buffer on `dev`, typed on it.
    ///
    /// A capturing device's module moves to a GPU, not to the CPU: that copy would make the
    /// host wait inside a CUDA graph's capture (see [`CopyTo`](crate::CopyTo)).
    fn try_to<D2: Device>(&self, dev: D2) -> Result<Self::On<D2>>
    where
        D: crate::device::CopyTo<D2>;

    /// The module with every parameter and buffer on `dev`, typed on it: rebind it,
    /// `let model = model.to(dev);` (the original stays where it was).
    ///
    /// Panics with the error's text where [`try_to`](Self::try_to) returns it (out of memory).
    #[must_use = "`to` returns the module typed on the new device: `let model = model.to(dev);`"]
    #[track_caller]
    fn to<D2: Device>(&self, dev: D2) -> Self::On<D2>
    where
        Self: Sized,
        D: crate::device::CopyTo<D2>,
    {
        match self.try_to(dev) {
            Ok(m) => m,
            Err(e) => panic!("{e}"),
        }
    }

    /// Calls `f` with the full name and value of every parameter, in a fixed order.
    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>));

    /// Calls `f` with the full name of every parameter and the parameter itself, mutably
    /// (optimizers update them; checkpoints load them).
    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>));

    /// Calls `f` with the full name and value of every buffer, in a fixed order: state that
    /// moves and is saved with the module but is not trained (PyTorch's `register_buffer`),
    /// such as [`BatchNorm2d`]'s `running_mean`. Layers without buffers have none (the
    /// default); containers pass it through to every layer.
    fn visit_buffers(&self, _prefix: &str, _f: &mut dyn FnMut(&str, Buffer<D, E>)) {}

    /// Calls `f` with the full name of every buffer and the buffer itself, mutably
    /// (checkpoints load them), in the order of [`visit_buffers`](Self::visit_buffers).
    fn visit_buffers_mut(&mut self, _prefix: &str, _f: &mut dyn FnMut(&str, BufferMut<'_, D, E>)) {}

    /// Switches training behaviour (dropout, batch statistics) on or off; layers without any
    /// ignore it.
    fn set_training(&mut self, _training: bool) {}

    /// The buffers with their names (`bn.running_mean`, `bn.num_batches_tracked`, ...), as
    /// PyTorch's `named_buffers()`; never among [`parameters`](Self::parameters).
    fn named_buffers(&self) -> Vec<(String, Buffer<D, E>)> {
        let mut out = Vec::new();
        self.visit_buffers("", &mut |name, b| out.push((name.to_string(), b)));
        out
    }

    /// The parameters with their names (`fc1.weight`, `0.bias`, ...), as PyTorch's
    /// `named_parameters()`. Each is a handle to the same parameter (gradients are shared).
    ///
    /// Each parameter comes once, under the first name it is visited by, as PyTorch's
    /// `remove_duplicate=True`: a weight tied to another layer's (`set_weight(&other.weight())`)
    /// is listed under the first layer's name only.
    fn named_parameters(&self) -> Vec<(String, Tensor<D, E>)> {
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        self.visit_parameters("", &mut |name, p| {
            if identity(p).is_none_or(|id| seen.insert(id)) {
                out.push((name.to_string(), p.clone()));
            }
        });
        out
    }

    /// The parameters, in the order of [`named_parameters`](Self::named_parameters).
    fn parameters(&self) -> Vec<Tensor<D, E>> {
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }

    /// The number of scalar parameters, each parameter counted once (a tied weight too).
    fn num_parameters(&self) -> usize {
        self.named_parameters().iter().map(|(_, p)| p.numel()).sum()
    }

    /// Clears every parameter's gradient (PyTorch's `zero_grad(set_to_none=True)`). A tied
    /// weight has one gradient, whichever of its names clears it (clearing it again is a
    /// no-op, so this visits without the bookkeeping of a deduplicated walk).
    fn zero_grad(&self) {
        self.visit_parameters("", &mut |_, p| p.zero_grad());
    }

    /// Training mode (dropout active), as PyTorch's `model.train()`.
    fn train(&mut self) {
        self.set_training(true);
    }

    /// Evaluation mode (dropout off), as PyTorch's `model.eval()`.
    fn eval(&mut self) {
        self.set_training(false);
    }

    /// Saves the parameters and buffers to a safetensors file, under their
    /// `named_parameters()` and `named_buffers()` names (PyTorch's `state_dict` names).
    fn save(&self, path: impl AsRef<std::path::Path>) -> Result<()>
    where
        Self: Sized,
    {
        save(self, path)
    }

    /// Loads every parameter and buffer from a safetensors file onto the module's device `D` (the file
    /// may have been written from any device, in any floating-point type: values are
    /// converted, as PyTorch's `load_state_dict` converts). A missing or mis-shaped tensor is
    /// an error naming it, and the module is left unchanged (see [`load`]).
    fn load(&mut self, path: impl AsRef<std::path::Path>) -> Result<()>
    where
        Self: Sized,
    {
        load(self, path)
    }
}

/// A buffer of a module, as [`Module::visit_buffers`] gives it: state that moves and is saved
/// with the module but is not trained (PyTorch's `register_buffer`).
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::{BatchNorm1d, Buffer};
///
/// let bn = BatchNorm1d::new(3, Cpu);
/// let names: Vec<String> = bn.named_buffers().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["running_mean", "running_var", "num_batches_tracked"]);
/// assert!(matches!(bn.named_buffers()[2].1, Buffer::Count(0)));
/// ```
#[derive(Clone)]
pub enum Buffer<D: Device, E: Float = f32> {
    /// A tensor of the module's element type on its device (`running_mean`), a handle to it.
    Tensor(Tensor<D, E>),
    /// A count kept on the host (`num_batches_tracked`), saved as a 0-dim `i64` tensor as
    /// PyTorch saves it.
    Count(i64),
}

/// A buffer of a module, mutably, as [`Module::visit_buffers_mut`] gives it (see [`Buffer`]).
pub enum BufferMut<'a, D: Device, E: Float = f32> {
    /// A tensor of the module's element type on its device (`running_mean`).
    Tensor(&'a mut Tensor<D, E>),
    /// A count kept on the host (`num_batches_tracked`).
    Count(&'a mut i64),
}

impl<D: Device, E: Float> Module<D, E> for Tensor<D, E> {
    type On<D2: Device> = Tensor<D2, E>;

    /// The parameter on `dev`: still a parameter (a leaf), with its gradient moved along.
    /// Within one move of a model ([`move_scope`]), a parameter met again (a tied weight) is
    /// the one moved the first time: the tie holds on the new device, as in PyTorch.
    fn try_to<D2: Device>(&self, dev: D2) -> Result<Tensor<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        let Some(node) = self.node() else {
            return self.detach().move_to(dev);
        };
        let id = crate::graph::Node::address(node);
        if let Some((raw, node)) = MOVED.with(|m| m.borrow().as_ref()?.get(&id).cloned()) {
            if raw.device == dev.dyn_device() {
                let mut same = Tensor::from_raw(raw, dev);
                same.node = Some(node);
                return Ok(same);
            }
        }
        let moved = Tensor::parameter(self.detach().move_to(dev)?);
        if let Some(g) = node.grad() {
            moved.try_set_grad(Some(
                crate::Tensor::<D, E>::from_raw(g, self.device()).move_to(dev)?,
            ))?;
        }
        MOVED.with(|m| {
            if let (Some(m), Some(n)) = (m.borrow_mut().as_mut(), moved.node()) {
                m.insert(id, (moved.raw.clone(), n.clone()));
            }
        });
        Ok(moved)
    }

    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
        if self.requires_grad() {
            f(prefix, self);
        }
    }

    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
        if self.requires_grad() {
            f(prefix, self);
        }
    }
}

impl<D: Device, E: Element> Precision for Tensor<D, E> {
    type Element = E;
}

impl<M: Precision> Precision for Vec<M> {
    type Element = M::Element;
}

impl<D: Device, E: Element> Placement for Tensor<D, E> {
    type Device = D;
}

impl<M: Placement> Placement for Vec<M> {
    type Device = M::Device;
}

impl<D: Device, E: Float, M: Module<D, E>> Module<D, E> for Vec<M> {
    type On<D2: Device> = Vec<M::On<D2>>;

    fn try_to<D2: Device>(&self, dev: D2) -> Result<Self::On<D2>>
    where
        D: crate::device::CopyTo<D2>,
    {
        move_scope(|| self.iter().map(|m| m.try_to(dev)).collect())
    }

    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
        for (i, m) in self.iter().enumerate() {
            m.visit_parameters(&join_name(prefix, &i.to_string()), f);
        }
    }

    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
        for (i, m) in self.iter_mut().enumerate() {
            m.visit_parameters_mut(&join_name(prefix, &i.to_string()), f);
        }
    }

    fn visit_buffers(&self, prefix: &str, f: &mut dyn FnMut(&str, Buffer<D, E>)) {
        for (i, m) in self.iter().enumerate() {
            m.visit_buffers(&join_name(prefix, &i.to_string()), f);
        }
    }

    fn visit_buffers_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, BufferMut<'_, D, E>)) {
        for (i, m) in self.iter_mut().enumerate() {
            m.visit_buffers_mut(&join_name(prefix, &i.to_string()), f);
        }
    }

    fn set_training(&mut self, training: bool) {
        for m in self {
            m.set_training(training);
        }
    }
}

/// A field that [`module!`](crate::module)'s `keep` copies as it is when the module moves:
/// one whose type does not change with the device (a size, a flag, a name).
///
/// A field that holds a tensor changes type with the device (`Tensor<D>` becomes
/// `Tensor<D2>`), so listing it under `keep` is a compile error that says where it belongs.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`keep` copies a field as it is, but `{Self}` changes type when the module moves (it becomes `{Moved}`)",
    label = "this field holds a tensor: it must move with the module's parameters, not be copied",
    note = "list a tensor with the modules, `module!(Name<D> {{ fc, scale }})`: it then moves with the model and is saved and updated as a parameter; `keep` is for plain values (sizes, flags)"
)]
pub trait KeptAsIs<Moved> {
    /// The copy.
    fn kept(&self) -> Moved;
}

impl<T: Clone> KeptAsIs<T> for T {
    fn kept(&self) -> T {
        self.clone()
    }
}

/// The second impl of [`KeptAsIs`], which keeps rustc from inferring the moved field's type
/// from the only impl (it then takes it from the moved struct, and a field whose type changes
/// is reported with `KeptAsIs`'s message, not as a type mismatch). Not `Clone`.
#[doc(hidden)]
#[derive(Debug)]
pub struct NotKept;

impl<T> KeptAsIs<NotKept> for T {
    fn kept(&self) -> NotKept {
        NotKept
    }
}

/// `field`, copied for the moved module (see [`KeptAsIs`]).
#[doc(hidden)]
pub fn keep_field<T: KeptAsIs<U>, U>(field: &T) -> U {
    field.kept()
}

/// Implements [`Module`](crate::nn::Module) for a struct of modules, in one line: moving it
/// moves every field, and its parameters are named `field.weight`, ... as in PyTorch.
///
/// `module!(Name<D> { field, ... })` for a struct generic over its device `D` (elements
/// `f32`), or `module!(Name<D, E> { ... })` when it is generic over the element type too.
/// Fields that are not modules (sizes, flags) are copied along when listed after `keep`:
/// `module!(Name<D> { fc1, fc2 } keep { hidden })`.
#[macro_export]
macro_rules! module {
    ($name:ident < $d:ident > { $($field:ident),* $(,)? } $(keep { $($plain:ident),* $(,)? })?) => {
        $crate::module!(@impl $name [$d: $crate::Device] [$d] [$name < $d >] [f32] [D2] [$name<D2>] { $($field),* } { $($($plain),*)? });
    };
    ($name:ident < $d:ident, $e:ident > { $($field:ident),* $(,)? } $(keep { $($plain:ident),* $(,)? })?) => {
        $crate::module!(@impl $name [$d: $crate::Device, $e: $crate::Float] [$d] [$name < $d, $e >] [$e] [D2] [$name<D2, $e>] { $($field),* } { $($($plain),*)? });
    };
    (@impl $sname:ident [$($gen:tt)*] [$d:ident] [$ty:ty] [$e:ty] [$d2:ident] [$on:ty] { $($field:ident),* } { $($plain:ident),* }) => {
        impl<$($gen)*> $crate::nn::Placement for $ty {
            type Device = $d;
        }

        impl<$($gen)*> $crate::nn::Precision for $ty {
            type Element = $e;
        }

        impl<$($gen)*> $crate::nn::Module<$d, $e> for $ty {
            type On<$d2: $crate::Device> = $on;

            fn try_to<$d2: $crate::Device>(&self, dev: $d2) -> $crate::Result<$on>
            where
                $d: $crate::CopyTo<$d2>,
            {
                $crate::nn::move_scope(|| ::core::result::Result::Ok($sname {
                    $($field: <_ as $crate::nn::Module<$d, $e>>::try_to(&self.$field, dev)?,)*
                    // `$plain` alone as the argument: a diagnostic points at the user's field.
                    $($plain: { let $plain = &self.$plain; $crate::nn::keep_field($plain) },)*
                }))
            }

            fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &$crate::Tensor<$d, $e>)) {
                $(<_ as $crate::nn::Module<$d, $e>>::visit_parameters(&self.$field, &$crate::nn::join_name(prefix, stringify!($field)), f);)*
            }

            fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut $crate::Tensor<$d, $e>)) {
                $(<_ as $crate::nn::Module<$d, $e>>::visit_parameters_mut(&mut self.$field, &$crate::nn::join_name(prefix, stringify!($field)), f);)*
            }

            fn visit_buffers(&self, prefix: &str, f: &mut dyn FnMut(&str, $crate::nn::Buffer<$d, $e>)) {
                $(<_ as $crate::nn::Module<$d, $e>>::visit_buffers(&self.$field, &$crate::nn::join_name(prefix, stringify!($field)), f);)*
            }

            fn visit_buffers_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, $crate::nn::BufferMut<'_, $d, $e>)) {
                $(<_ as $crate::nn::Module<$d, $e>>::visit_buffers_mut(&mut self.$field, &$crate::nn::join_name(prefix, stringify!($field)), f);)*
            }

            fn set_training(&mut self, training: bool) {
                $(<_ as $crate::nn::Module<$d, $e>>::set_training(&mut self.$field, training);)*
                let _ = training;
            }
        }
    };
}
