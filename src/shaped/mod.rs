//! Shapes in the type, opt-in: a shape mistake between static sizes is a compile error worded
//! as PyTorch words it at run time.
//!
//! [`Shaped<D, E, S>`] is today's [`Tensor<D, E>`] with its shape `S` in its type. `S` is a
//! tuple with one dimension per axis, each either a number, [`C<N>`](C), or [`Dyn`], a size
//! known only at run time (the batch, usually):
//!
//! ```
//! use devtype::prelude::*;
//! use devtype::shaped::{Dyn, Shaped, C};
//!
//! let x: Shaped<Cpu, f32, (Dyn, C<784>)> = Tensor::randn([64, 784], Cpu).into_shaped();
//! let w: Shaped<Cpu, f32, (C<784>, C<10>)> = Shaped::randn([784, 10], Cpu);
//! let y = x.matmul(&w);                       // Shaped<Cpu, f32, (Dyn, C<10>)>, inferred
//! let p = y.softmax::<1>();                   // the dim is in the type too
//! assert_eq!(p.shape(), &[64, 10]);
//! let t: Tensor<Cpu> = p.into_tensor();       // back to the dynamic API, free
//! ```
//!
//! `x.matmul(&w)` with `w: Shaped<_, _, (C<512>, C<10>)>` does not compile:
//!
//! ```text
//! error[E0277]: mm: mat1 and mat2 shapes cannot be multiplied (?x784 and 512x10)
//!   |     let y = x.matmul(&w);
//!   |                      ^^ this matrix has 512 rows, the receiver has 784 columns
//! ```
//!
//! # The rule
//!
//! Where both sizes are static, the op is checked at compile time, and the message is
//! PyTorch's sentence with the numbers (a `?` stands for a [`Dyn`] size, whose value the
//! compiler cannot know). Where one side is [`Dyn`], the op runs through the dynamic tensor
//! and a mismatch is the `Err` (or the panic) it has always been, with the same text. A result
//! dimension is static when the sizes it comes from are, otherwise [`Dyn`].
//!
//! Ops that compute a size (`flatten`: `H * W`; `cat`: `A + B`; `reshape`: the element count)
//! compute it with `typenum` and turn the result back into a [`C<N>`](C), so the types stay
//! readable and no message shows typenum's types.
//!
//! # The checked ops
//!
//! | op | checked at compile time (static sizes) | at run time (a `Dyn` size), PyTorch's text | lesson |
//! |---|---|---|---|
//! | `+ - * /`, `add`, `sub`, `mul`, `div`, `maximum` | broadcasting from the last dim, ranks 1-4: `The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1` | the same sentence | `shape_add_sizes` |
//! | `matmul` (2-D @ 2-D, 3-D @ 2-D) | inner sizes: `mm: mat1 and mat2 shapes cannot be multiplied (?x784 and 512x10)` | `... (64x784 and 512x10)` | `shape_matmul_sizes` |
//! | `linear(&w, bias)` | `in` of `w = [out, in]`: `addmm: mat1 and mat2 shapes cannot be multiplied (64x784 and 512x10)` | the same sentence | `shape_linear_weight` |
//! | `bmm` | batch and inner sizes: `Expected size for first two dimensions of batch2 tensor to be: [3, 10] but got: [4, 10].` | the same sentence | `shape_bmm_batch` |
//! | [`nn::StaticLinear::forward`], [`nn::Seq::forward`] | the input's width (`addmm:` sentence) | the same sentence | `shape_model_input_width` |
//! | [`nn::Seq::then`] | the new layer takes the width so far (`addmm:` sentence) | - (all static) | `shape_sequential_not_chained` |
//! | `reshape::<S2>()`, `view::<S2>()` | element count (typenum product): `shape '[2, 5]' is invalid for input of size 40` | the same sentence (`Dyn` is `-1`) | `shape_reshape_count` |
//! | `flatten()` | rank 3 or 4; `H * W` (`* C`) computed in the type | - | `shape_flatten_rank` |
//! | `transpose::<I, J>()`, `t()` | the dims exist (`Dimension out of range ...`); result in the type | - | `shape_transpose_dim` |
//! | `permute::<(C<i>, ...)>()` | an order of the dims (`permute(): ... is not an order ...`) | - | `shape_permute_order` |
//! | `cat(Axis::<D>, &b)` | other sizes equal: `Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 in the list.`; the size at `D` is the typenum sum | the same sentence | `shape_cat_sizes` |
//! | `stack(Axis::<D>, &b)`, `Shaped::stack_all(Axis::<D>, [&a, ..])` | equal shapes: ``stack expects each tensor to be equal size, but got `(C<2>, C<3>)` at entry 0 and `(C<2>, C<4>)` at entry 1``; new dim of size 2 (or `N`) | `... but got [2, 3] at entry 0 and [4, 3] at entry 1` | `shape_stack_sizes` |
//! | `sum/mean/max::<D>()`, `sum/mean/max_keepdim::<D>()`, `argmax::<D>()` | the dim exists; it disappears, or stays as `C<1>` | - | `shape_reduce_dim` |
//! | `softmax::<D>()`, `log_softmax::<D>()` | the dim exists; same shape | - | `shape_softmax_dim` |
//! | `index_select(Axis::<D>, &i)` | the dim exists; the index is a vector (`index_select(): Index is supposed to be a vector`); size at `D` becomes the index's | - | `shape_index_select_index` |
//! | `cross_entropy(&targets)` | batch sizes: `Expected input batch_size (32) to match target batch_size (16).` | the same sentence | `shape_cross_entropy_batch` |
//! | `Shaped::try_from_tensor`, `Tensor::try_into_shaped` | - | the rank (`Expected 2D tensor, but got input of size: [4]`), then each static size | - |
//! | two devices (any op above) | the device sentence, not a shape one | - | `shape_devices_mixed` |
//!
//! # The table of static sizes
//!
//! typenum maps a `const usize` to its types only through a table of impls, one per size, and
//! rustc's cost for such a table grows with the square of its length (measured on a test crate
//! with the table both ways: `cargo check` takes at most 1.4 s of CPU for 1,025 sizes, 6.2 s for
//! 4,097, 77 s for 16,385). So devtype keeps
//! its own table ([`TableSize`] one way, [`ToDim`] the other) of 1,491 sizes: every size from 0
//! to 1024, the multiples of 16 up to 4096, of 64 up to 16384 and of 1024 up to 65536 (the
//! widths of real models: 3072, 4096, 11008, 14336, 28672, 49152, 65536, ...), the powers of 2
//! up to 2^30 and of 10 up to 10^9, and by name the vocabularies 30522, 32000, 32064, 50257,
//! 50304, 100277, 128256, 151936, 152064, 250002, 256000, the widths 18944 and 27648, and the
//! flattened images 100352 (2048x7x7), 150528 (3x224x224) and 268203 (3x299x299).
//! `scripts/gen_shaped.py` writes it; extend it there.
//!
//! - A size that is only written or compared (`C<3001>` in `matmul`, `linear`, `bmm`,
//!   `cross_entropy`, `cat`'s other sizes, a `StaticLinear<_, 3001, _>`) has no limit: those
//!   checks compare `const` parameters, not typenum numbers.
//! - A size an op computes *with* (broadcasting, `flatten`, `cat`'s joined dim, `reshape`'s
//!   element count) must be in the table; outside it the error says so, in words, at the
//!   operand (lesson `shape_size_outside_table`):
//!   ``error[E0277]: `C<3001>` is not in devtype's table of static sizes, which the type-level
//!   arithmetic of this op needs``, with the fix: make that dimension [`Dyn`].
//! - A size an op computes (`28 * 28`, `600 + 600`) is `C<N>` when `N` is in the table and
//!   [`Dyn`] when it is not (`300 * 300 = 90000`): never an error, the check moves to run time.
//!
//! # How it is built
//!
//! - `Shaped` holds a `Tensor<D, E>`; every op calls the dynamic op on it, so values,
//!   autograd and devices are the dynamic API's, and the shape is only a type.
//! - A checked op asks for two traits of its operand: one that computes the result shape
//!   (and always holds, so that a mistake is one error, not a cascade), and one that checks.
//!   The checking trait's impls send a static pair of sizes to a *leaf* trait with `const`
//!   parameters (`MmSizes<64, 784, 512, 10>`), implemented only where they agree, whose
//!   `#[diagnostic::on_unimplemented]` message interpolates them. rustc reports the leaf's
//!   message at the operand, because the leaf's `Self` (`()`) is not the operand's type.
//! - The device and element checks are the dynamic API's traits ([`OperandOn`],
//!   [`ArgumentOn`](crate::tensor::ArgumentOn), [`ElementIs`](crate::tensor::ElementIs)),
//!   implemented for `Shaped` too: mixing devices still reads as the device sentence.
//!
//! # What rustc 1.95 allows, and what it does not
//!
//! - A `Dyn` size has no value at compile time, so the message writes it `?`
//!   (`?x784 and 512x10`); PyTorch would print the batch size.
//! - The leaf's `Self` must not be the operand's type: when it is, rustc reports the operand's
//!   bound with its generic text (``the trait bound `&Shaped<..>: Matmuls<..>` is not
//!   satisfied``) and the numbers only in a label.
//! - The result shape must not come from the checking trait: a return type projected through
//!   a bound that fails puts the error on the method's name instead of the operand.
//! - `cat` takes its dim first, `a.cat(Axis::<1>, &b)`: given after the operand, rustc infers
//!   the dim from the one impl whose sizes agree and reports ``expected `1`, found `0` `` at
//!   the dim instead of the size sentence.
//! - A dimension out of range cannot print PyTorch's `[-2, 1]`: the rank is not a `const`
//!   parameter anywhere (that needs `generic_const_exprs`), so the message names the shape.
//!
//! [`nn`] holds `StaticLinear` with its sizes in the type and a [`nn::Seq`] builder whose layers
//! must chain.

mod check;
mod gen;
pub mod nn;
mod ops;
mod table;

pub use check::*;
pub use ops::*;
pub use table::{TableSize, ToDim, ToDimOrDyn};

use crate::core::error::{Error, Result};
use crate::device::Device;
use crate::tensor::operand::sealed::AsRaw;
use crate::tensor::{Element, HasDevice, IntoShape, ModuleInput, OperandOn, Tensor};
use std::marker::PhantomData;

/// A dimension whose size is known only at run time (`?` in the messages).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dyn;

/// A dimension of static size `N`: `C<784>`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct C<const N: usize>;

mod sealed {
    pub trait Sealed {}
}

/// A dimension: [`C<N>`](C) or [`Dyn`].
pub trait Dim: sealed::Sealed + 'static {
    /// The size, if static.
    const SIZE: Option<usize>;
}

impl sealed::Sealed for Dyn {}
impl Dim for Dyn {
    const SIZE: Option<usize> = None;
}
impl<const N: usize> sealed::Sealed for C<N> {}
impl<const N: usize> Dim for C<N> {
    const SIZE: Option<usize> = Some(N);
}

/// A shape: a tuple of 0 to 4 [`Dim`]s, `(Dyn, C<784>)`.
pub trait Shape: 'static {
    /// The number of dimensions.
    const RANK: usize;
    /// Each dimension's static size (`None` for [`Dyn`]).
    fn sizes() -> Vec<Option<usize>>;
}

macro_rules! shape_tuple {
    ($($d:ident)*) => {
        impl<$($d: Dim),*> Shape for ($($d,)*) {
            const RANK: usize = <[&str]>::len(&[$(stringify!($d)),*]);
            fn sizes() -> Vec<Option<usize>> {
                vec![$($d::SIZE),*]
            }
        }
    };
}
shape_tuple!();
shape_tuple!(A);
shape_tuple!(A B);
shape_tuple!(A B T);
shape_tuple!(A B T U);

/// The value, or a panic with the error's text: the panicking form of every `try_` op here.
#[track_caller]
pub(crate) fn or_panic<T>(r: Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

/// Whether `shape` fits `S`; the error says where it does not.
fn fit<S: Shape>(shape: &[usize]) -> Result<()> {
    let want = S::sizes();
    if want.len() != shape.len() {
        return Err(Error::Shape(format!(
            "Expected {}D tensor, but got input of size: {:?}",
            want.len(),
            shape
        )));
    }
    for (dim, (w, &got)) in want.iter().zip(shape).enumerate() {
        if let Some(w) = *w {
            if w != got {
                return Err(Error::BroadcastMismatch { a: got, b: w, dim });
            }
        }
    }
    Ok(())
}

/// A [`Tensor<D, E>`] whose shape `S` is in its type; see the [module](self) documentation.
pub struct Shaped<D, E: Element, S> {
    tensor: Tensor<D, E>,
    _shape: PhantomData<S>,
}

impl<D: Device, E: Element, S> Clone for Shaped<D, E, S> {
    /// A new handle to the same storage, as [`Tensor::clone`].
    fn clone(&self) -> Self {
        Shaped {
            tensor: self.tensor.clone(),
            _shape: PhantomData,
        }
    }
}

impl<D: Device, E: Element, S: Shape> std::fmt::Debug for Shaped<D, E, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Shaped{:?}", self.tensor.shape())
    }
}

impl<D: Device, E: Element, S: Shape> Shaped<D, E, S> {
    /// The result of an op whose shape the types computed (checked in debug builds).
    #[inline]
    pub(crate) fn wrap(tensor: Tensor<D, E>) -> Self {
        debug_assert!(fit::<S>(tensor.shape()).is_ok(), "{:?}", tensor.shape());
        Shaped {
            tensor,
            _shape: PhantomData,
        }
    }

    /// `tensor` with its shape checked against `S` (the rank, then every static size).
    ///
    /// ```
    /// use devtype::prelude::*;
    /// use devtype::shaped::{Dyn, Shaped, C};
    ///
    /// let t = Tensor::zeros([3, 4], Cpu);
    /// let e = Shaped::<Cpu, f32, (Dyn, C<5>)>::try_from_tensor(t).unwrap_err();
    /// assert_eq!(e.to_string(), "The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1");
    /// ```
    pub fn try_from_tensor(tensor: Tensor<D, E>) -> Result<Self> {
        fit::<S>(tensor.shape())?;
        Ok(Shaped {
            tensor,
            _shape: PhantomData,
        })
    }

    /// `tensor` with its shape checked against `S`.
    ///
    /// Panics with the error's text where [`try_from_tensor`](Self::try_from_tensor) returns it.
    #[track_caller]
    pub fn from_tensor(tensor: Tensor<D, E>) -> Self {
        or_panic(Self::try_from_tensor(tensor))
    }

    /// Zeros of shape `sizes`, which must fit `S`.
    pub fn try_zeros(sizes: impl IntoShape, dev: D) -> Result<Self> {
        fit::<S>(sizes.as_dims())?;
        Tensor::try_zeros(sizes, dev).map(Self::wrap)
    }

    /// Zeros of shape `sizes`, which must fit `S`.
    ///
    /// Panics with the error's text where [`try_zeros`](Self::try_zeros) returns it.
    #[track_caller]
    pub fn zeros(sizes: impl IntoShape, dev: D) -> Self {
        or_panic(Self::try_zeros(sizes, dev))
    }

    /// The tensor, with the dynamic API (a borrow: free).
    #[inline]
    pub fn tensor(&self) -> &Tensor<D, E> {
        &self.tensor
    }

    /// The tensor, with the dynamic API (a move: free).
    #[inline]
    pub fn into_tensor(self) -> Tensor<D, E> {
        self.tensor
    }

    /// The sizes, at run time.
    #[inline]
    pub fn shape(&self) -> &[usize] {
        self.tensor.shape()
    }

    /// The device.
    #[inline]
    pub fn device(&self) -> D {
        self.tensor.device()
    }

    /// The elements, in row-major order.
    pub fn try_to_vec(&self) -> Result<Vec<E>>
    where
        D: crate::device::HostSync,
    {
        self.tensor.try_to_vec()
    }

    /// The elements, in row-major order.
    ///
    /// Panics with the error's text where [`try_to_vec`](Self::try_to_vec) returns it.
    #[track_caller]
    pub fn to_vec(&self) -> Vec<E>
    where
        D: crate::device::HostSync,
    {
        self.tensor.to_vec()
    }

    /// A copy on `dev`, same shape.
    pub fn try_to<D2: Device>(&self, dev: D2) -> Result<Shaped<D2, E, S>>
    where
        D: crate::device::CopyTo<D2>,
    {
        self.tensor.try_to(dev).map(Shaped::wrap)
    }

    /// A copy on `dev`, same shape.
    ///
    /// Panics with the error's text where [`try_to`](Self::try_to) returns it.
    #[track_caller]
    #[must_use = "`.to(device)` returns a new tensor and leaves the original where it was: `let x = x.to(dev);`"]
    pub fn to<D2: Device>(&self, dev: D2) -> Shaped<D2, E, S>
    where
        D: crate::device::CopyTo<D2>,
    {
        Shaped::wrap(self.tensor.to(dev))
    }
}

impl<D: Device, E: crate::tensor::Float, S: Shape> Shaped<D, E, S> {
    /// Standard-normal values of shape `sizes`, which must fit `S`.
    pub fn try_randn(sizes: impl IntoShape, dev: D) -> Result<Self> {
        fit::<S>(sizes.as_dims())?;
        Tensor::<D, E>::random(sizes, dev, true).map(Self::wrap)
    }

    /// Standard-normal values of shape `sizes`, which must fit `S`.
    ///
    /// Panics with the error's text where [`try_randn`](Self::try_randn) returns it.
    #[track_caller]
    pub fn randn(sizes: impl IntoShape, dev: D) -> Self {
        or_panic(Self::try_randn(sizes, dev))
    }
}

impl<D: Device, E: Element, S: Shape> From<Shaped<D, E, S>> for Tensor<D, E> {
    fn from(t: Shaped<D, E, S>) -> Self {
        t.tensor
    }
}

impl<D: Device, E: Element> Tensor<D, E> {
    /// This tensor with its shape in its type, checked against `S` ([`Shaped`]).
    pub fn try_into_shaped<S: Shape>(self) -> Result<Shaped<D, E, S>> {
        Shaped::try_from_tensor(self)
    }

    /// This tensor with its shape in its type, checked against `S` ([`Shaped`]).
    ///
    /// Panics with the error's text where [`try_into_shaped`](Self::try_into_shaped) returns
    /// it.
    #[track_caller]
    pub fn into_shaped<S: Shape>(self) -> Shaped<D, E, S> {
        Shaped::from_tensor(self)
    }
}

// The device and element checks of the dynamic API apply to shaped operands as they are.

macro_rules! operand_impls {
    ($ty:ty, $($by_ref:tt)?) => {
        impl<D: Device, E: Element, S> AsRaw for $ty {
            #[inline]
            fn raw(&self) -> &crate::core::raw::RawTensor {
                self.tensor.raw()
            }
            #[inline]
            fn into_operand<'a>(self) -> crate::core::raw::Operand<'a>
            where
                Self: 'a,
            {
                ($($by_ref)? self.tensor).into_operand()
            }
            #[inline]
            fn grad_node(&self) -> Option<&std::sync::Arc<crate::graph::Node>> {
                self.tensor.grad_node()
            }
        }

        impl<D: Device, E: Element, S> HasDevice for $ty {
            type Device = D;
            type Element = E;
            #[inline]
            fn typed_device(&self) -> D {
                self.tensor.device()
            }
        }

        #[diagnostic::do_not_recommend]
        impl<D: Device, E: Element, S> OperandOn<D> for $ty {}

        #[diagnostic::do_not_recommend]
        impl<D: Device, E: Element, S> ModuleInput<D> for $ty {
            type Out = D;
        }
    };
}
operand_impls!(Shaped<D, E, S>,);
operand_impls!(&Shaped<D, E, S>, &);
// `&x` where `x: &Shaped` (see `HasDevice`).
operand_impls!(&&Shaped<D, E, S>, &);

/// A dimension given as a value: `a.cat(Axis::<1>, &b)`, `x.index_select(Axis::<0>, &i)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Axis<const N: usize>;

/// `x` as a tensor on `dev` (same storage and autograd node), for an operand whose bounds
/// already say that it is on `dev` with elements `E`.
pub(crate) fn typed_on<D: Device, E: Element>(x: &impl AsRaw, dev: D) -> Tensor<D, E> {
    Tensor::from_out(
        crate::graph::Out {
            value: x.raw().clone(),
            node: x.grad_node().cloned(),
        },
        dev,
    )
}

/// A shaped tensor or a reference to one: the operand of a shaped op.
pub trait ShapeOf: HasDevice {
    /// Its shape.
    type Shape: Shape;
    /// The tensor.
    #[doc(hidden)]
    fn as_tensor(&self) -> &Tensor<Self::Device, Self::Element>;
}

impl<D: Device, E: Element, S: Shape> ShapeOf for Shaped<D, E, S> {
    type Shape = S;
    #[inline]
    fn as_tensor(&self) -> &Tensor<D, E> {
        &self.tensor
    }
}

impl<D: Device, E: Element, S: Shape> ShapeOf for &Shaped<D, E, S> {
    type Shape = S;
    #[inline]
    fn as_tensor(&self) -> &Tensor<D, E> {
        &self.tensor
    }
}

impl<D: Device, E: Element, S: Shape> ShapeOf for &&Shaped<D, E, S> {
    type Shape = S;
    #[inline]
    fn as_tensor(&self) -> &Tensor<D, E> {
        &self.tensor
    }
}
