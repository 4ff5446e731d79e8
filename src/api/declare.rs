//! `declare_ops!`: one declaration per op makes its methods on both fronts.
//!
//! A declaration names the op, the element types it takes, its arguments by kind, its result,
//! the device check of the dynamic front, and one body: a recorded op (forward plus backward
//! rule) over the untyped tensors. From it come
//!
//! - `Tensor::try_<op>` (returns `Result`) and `Tensor::<op>` (`#[track_caller]`, panics with
//!   the error's text), where tensor arguments must be on the receiver's device: a device
//!   mix-up does not compile;
//! - `DynTensor::<op>` (returns `Result`), which first runs the declared device check, as
//!   PyTorch does before any kernel (the TensorIterator form for element-wise ops, the
//!   argument-check form for the others; DESIGN section 4).
//!
//! Both fronts run the same body, so a tracked input records the same backward rule on both,
//! and an op cannot exist on one front only. Each file's declarations are listed in its
//! `DECLARED`, which the parity test reads.
//!
//! Argument kinds:
//!
//! | kind        | typed front                                      | dynamic front            | the body sees     |
//! |-------------|--------------------------------------------------|--------------------------|-------------------|
//! | `OperandOn<D>` | `impl OperandOn<D> + HasDevice<Element = E>`  | `&DynTensor`             | `In`              |
//! | `ArgumentOn<D>` | `impl ArgumentOn<D> + HasDevice<Element = E>` | `&DynTensor`          | `In`              |
//! | `OptTensor` | `Option<&Tensor<D, E>>`                          | `Option<&DynTensor>`     | `Option<In>`      |
//! | `Index`     | `impl ArgumentOn<D> + HasDevice<Element = i64>`  | `&DynTensor`             | `&RawTensor`      |
//!
//! `OperandOn` is for element-wise ops (its message names the first non-CPU device first, as
//! PyTorch's TensorIterator check), `ArgumentOn` for argument-checked ones (first argument
//! first).
//! | `Scalar`    | `E`                                              | `impl Into<Scalar>`      | `Scalar`          |
//! | `Dims`      | `&[isize]`                                       | `&[isize]`               | `&[isize]`        |
//! | any type    | itself                                           | itself                   | itself            |
//!
//! Results: `Same` (`Tensor<D, E>`), `Bool` (`Tensor<D, bool>`), `Long` (`Tensor<D, i64>`); the
//! dynamic front returns a `DynTensor` for each.

/// The typed front's parameter type for an argument kind.
macro_rules! typed_param {
    (OptTensor) => { Option<&$crate::tensor::Tensor<D, E>> };
    (Index) => { impl $crate::tensor::ArgumentOn<D> + $crate::tensor::HasDevice<Element = i64> };
    (Scalar) => { E };
    (Dims) => { &[isize] };
    // `OperandOn<D>` (or `ArgumentOn<D>`), spelled in the declaration. rustc's "required by a
    // bound" snippet still shows this macro, not the declaration: it points at the macro for
    // any bound a `macro_rules!` macro assembles (issue 10, item 9).
    // The element type is asked for through a trait whose message is PyTorch's dtype sentence
    // (element-wise: TensorIterator's; `ArgumentOn` ops are matrix products: `mm`'s).
    (OperandOn $lt:tt $d:ident $gt:tt) => { impl OperandOn<D> + $crate::tensor::ElementIs<E> };
    (ArgumentOn $lt:tt $d:ident $gt:tt) => { impl ArgumentOn<D> + $crate::tensor::MatrixElementIs<E> };
    ($t:ty) => { $t };
}

/// The dynamic front's parameter type for an argument kind.
macro_rules! dyn_param {
    (OperandOn<D>) => { &$crate::DynTensor };
    (ArgumentOn<D>) => { &$crate::DynTensor };
    (OptTensor) => { Option<&$crate::DynTensor> };
    (Index) => { &$crate::DynTensor };
    (Scalar) => { impl Into<$crate::core::Scalar> };
    (Dims) => { &[isize] };
    ($t:ty) => { $t };
}

/// What the body sees of a typed argument.
macro_rules! typed_arg {
    (OperandOn<D>, $a:ident) => {
        $crate::tensor::operand::sealed::AsRaw::input(&$a)
    };
    (ArgumentOn<D>, $a:ident) => {
        $crate::tensor::operand::sealed::AsRaw::input(&$a)
    };
    (OptTensor, $a:ident) => {
        $a.map(|t| $crate::tensor::operand::sealed::AsRaw::input(t))
    };
    (Index, $a:ident) => {
        $crate::tensor::operand::sealed::AsRaw::raw(&$a)
    };
    (Scalar, $a:ident) => {
        $crate::core::Element::to_scalar($a)
    };
    ($t:tt, $a:ident) => {
        $a
    };
}

/// What the body sees of a dynamic argument.
macro_rules! dyn_arg {
    (OperandOn<D>, $a:ident) => {
        $crate::tensor::operand::sealed::AsRaw::input($a)
    };
    (ArgumentOn<D>, $a:ident) => {
        $crate::tensor::operand::sealed::AsRaw::input($a)
    };
    (OptTensor, $a:ident) => {
        $a.map(|t| $crate::tensor::operand::sealed::AsRaw::input(t))
    };
    (Index, $a:ident) => {
        &$a.raw
    };
    (Scalar, $a:ident) => {
        $a.into()
    };
    ($t:tt, $a:ident) => {
        $a
    };
}

/// The typed front's result type for a result kind.
macro_rules! typed_out {
    (Same) => { $crate::tensor::Tensor<D, E> };
    (Bool) => { $crate::tensor::Tensor<D, bool> };
    (Long) => { $crate::tensor::Tensor<D, i64> };
}

/// Declares ops on both fronts; see the module documentation.
macro_rules! declare_ops {
    ($(
        $(#[$doc:meta])*
        $bound:ident fn $name:ident($x:ident $(, $arg:ident: $kind:tt $(<$gen:ident>)?)*) -> $out:ident
            check $check:block
            = $body:expr;
    )*) => {
        /// The ops declared here, by name (read by the parity test).
        pub(crate) const DECLARED: &[&str] = &[$(stringify!($name)),*];
        $(
            paste::paste! {
                impl<D: $crate::device::Device, E: $crate::core::$bound> $crate::tensor::Tensor<D, E> {
                    $(#[$doc])*
                    #[inline]
                    // `HasDevice<Element = E>` names the element type; it is not redundant.
                    #[allow(clippy::implied_bounds_in_impls)]
                    pub fn [<try_ $name>](&self $(, $arg: $crate::api::declare::typed_param!($kind $(<$gen>)?))*)
                        -> $crate::core::error::Result<$crate::api::declare::typed_out!($out)>
                    {
                        let $x = $crate::tensor::operand::sealed::AsRaw::input(self);
                        $(let $arg = $crate::api::declare::typed_arg!($kind $(<$gen>)?, $arg);)*
                        let device = self.device();
                        let out: $crate::core::error::Result<$crate::graph::Out> = $body;
                        out.map(|out| $crate::tensor::Tensor::from_out(out, device))
                    }

                    $(#[$doc])*
                    #[doc = concat!("\n\nPanics with the error's text where [`try_", stringify!($name), "`](Self::try_", stringify!($name), ") returns it.")]
                    #[track_caller]
                    #[allow(clippy::implied_bounds_in_impls)]
                    pub fn $name(&self $(, $arg: $crate::api::declare::typed_param!($kind $(<$gen>)?))*)
                        -> $crate::api::declare::typed_out!($out)
                    {
                        match self.[<try_ $name>]($($arg),*) {
                            Ok(v) => v,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }

                impl $crate::DynTensor {
                    $(#[$doc])*
                    #[doc = "\n\nDevices are checked first, as PyTorch checks them, and a mismatch is an `Err` with its text."]
                    pub fn $name(&self $(, $arg: $crate::api::declare::dyn_param!($kind $(<$gen>)?))*)
                        -> $crate::core::error::Result<$crate::DynTensor>
                    {
                        let $x = $crate::tensor::operand::sealed::AsRaw::input(self);
                        $(let $arg = $crate::api::declare::dyn_arg!($kind $(<$gen>)?, $arg);)*
                        $check
                        let out: $crate::core::error::Result<$crate::graph::Out> = $body;
                        out.map($crate::DynTensor::from_out)
                    }
                }
            }
        )*
    };
}

pub(crate) use {declare_ops, dyn_arg, dyn_param, typed_arg, typed_out, typed_param};
