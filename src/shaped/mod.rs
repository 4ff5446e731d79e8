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
//! readable and no message shows typenum's types. The cost of that: a size that is computed
//! must be one typenum maps from a `usize` (0 to 1024, the powers of two and of ten, and a few
//! more; `table.rs` lists them). Sizes that are only written (`C<3000>`) have no limit, except
//! where they take part in a check computed by typenum (broadcasting, the element count).
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
    pub fn try_to_vec(&self) -> Result<Vec<E>> {
        self.tensor.try_to_vec()
    }

    /// The elements, in row-major order.
    ///
    /// Panics with the error's text where [`try_to_vec`](Self::try_to_vec) returns it.
    #[track_caller]
    pub fn to_vec(&self) -> Vec<E> {
        self.tensor.to_vec()
    }

    /// A copy on `dev`, same shape.
    pub fn try_to<D2: Device>(&self, dev: D2) -> Result<Shaped<D2, E, S>> {
        self.tensor.try_to(dev).map(Shaped::wrap)
    }

    /// A copy on `dev`, same shape.
    ///
    /// Panics with the error's text where [`try_to`](Self::try_to) returns it.
    #[track_caller]
    #[must_use = "`.to(device)` returns a new tensor and leaves the original where it was: `let x = x.to(dev);`"]
    pub fn to<D2: Device>(&self, dev: D2) -> Shaped<D2, E, S> {
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
