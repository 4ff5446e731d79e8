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
//!   argument-check form for the others: `docs/pytorch-reference.md`, sections 1a and 1b).
//!
//! Both fronts run the same body, so a tracked input records the same backward rule on both,
//! and an op cannot exist on one front only. A declaration may add `, dynamic <expr>` after its
//! body: the dynamic front then runs that instead, for the dtype rules PyTorch's op has beyond
//! `torch.result_type` (true division of integers gives a float, `sum` of `bool` an `i64`, ...),
//! which the typed front never meets (its element type is fixed, and it keeps refusing them). Each file's declarations are listed in its
//! `DECLARED`, which the parity test reads.
//!
//! Argument kinds:
//!
//! | kind        | typed front                                      | dynamic front            | the body sees     |
//! |-------------|--------------------------------------------------|--------------------------|-------------------|
//! | `(impl B)`  | `impl B`, the bounds `B` as declared             | `&DynTensor`             | `In`              |
//! | `OptTensor` | `Option<&Tensor<D, E>>`                          | `Option<&DynTensor>`     | `Option<In>`      |
//! | `Scalar`    | `E`                                              | `impl Into<Scalar>`      | `Scalar`          |
//! | `Dims`      | `&[isize]`                                       | `&[isize]`               | `&[isize]`        |
//! | any type    | itself                                           | itself                   | itself            |
//!
//! A tensor argument is declared with its typed front's bounds, in parentheses:
//! `(impl OperandOn<D> + ElementIs<E>)` for element-wise ops (the message names the first
//! non-CPU device first, as PyTorch's TensorIterator check, and the dtype check is
//! TensorIterator's), `(impl ArgumentOn<D> + MatrixElementIs<E>)` for argument-checked matrix
//! products (first argument first; `mm`'s dtype check), `(impl ArgumentOn<D> + HasDevice<Element =
//! i64>)` for indices. The bounds are the declaration's own tokens, so when one does not hold,
//! rustc's "required by a bound" note shows the op's declaration line, not this macro.
//!
//! Results: `Same` (`Tensor<D, E>`), `Bool` (`Tensor<D, bool>`), `Long` (`Tensor<D, i64>`); the
//! dynamic front returns a `DynTensor` for each. `Pair` is PyTorch's `(values, indices)` result
//! (`max(dim)`, `sort`, `topk`): the body returns two recorded results, each front a
//! [`ValuesIndices`](crate::api::ValuesIndices) of its tensors.

/// The typed front's parameter type for an argument kind.
macro_rules! typed_param {
    // A tensor argument: the bounds as declared, with the declaration's spans.
    ((impl $($bound:tt)*)) => { impl $($bound)* };
    (OptTensor) => { Option<&$crate::tensor::Tensor<D, E>> };
    (Scalar) => { E };
    (Dims) => { &[isize] };
    ($t:ty) => { $t };
}

/// The dynamic front's parameter type for an argument kind.
macro_rules! dyn_param {
    ((impl $($bound:tt)*)) => { &$crate::DynTensor };
    (OptTensor) => { Option<&$crate::DynTensor> };
    (Scalar) => { impl Into<$crate::core::Scalar> };
    (Dims) => { &[isize] };
    ($t:ty) => { $t };
}

/// What the body sees of a typed argument.
macro_rules! typed_arg {
    ((impl $($bound:tt)*), $a:ident) => {
        $crate::tensor::operand::sealed::AsRaw::input(&$a)
    };
    (OptTensor, $a:ident) => {
        $a.map(|t| $crate::tensor::operand::sealed::AsRaw::input(t))
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
    ((impl $($bound:tt)*), $a:ident) => {
        $crate::tensor::operand::sealed::AsRaw::input($a)
    };
    (OptTensor, $a:ident) => {
        $a.map(|t| $crate::tensor::operand::sealed::AsRaw::input(t))
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
    (Pair) => { $crate::api::ValuesIndices<$crate::tensor::Tensor<D, E>, $crate::tensor::Tensor<D, i64>> };
}

/// What a body returns for a result kind: one recorded result, or two (values and indices).
macro_rules! body_out {
    (Pair) => {
        ($crate::graph::Out, $crate::graph::Out)
    };
    ($other:ident) => {
        $crate::graph::Out
    };
}

/// The typed front's result from a body's.
macro_rules! typed_wrap {
    (Pair, $out:expr, $device:expr) => {{
        let (values, indices) = $out;
        $crate::api::ValuesIndices {
            values: $crate::tensor::Tensor::from_out(values, $device),
            indices: $crate::tensor::Tensor::from_out(indices, $device),
        }
    }};
    ($other:ident, $out:expr, $device:expr) => {
        $crate::tensor::Tensor::from_out($out, $device)
    };
}

/// The dynamic front's result type for a result kind.
macro_rules! dyn_out {
    (Pair) => { $crate::api::ValuesIndices<$crate::DynTensor, $crate::DynTensor> };
    ($other:ident) => { $crate::DynTensor };
}

/// The dynamic front's result from a body's.
macro_rules! dyn_wrap {
    (Pair, $out:expr) => {{
        let (values, indices) = $out;
        $crate::api::ValuesIndices {
            values: $crate::DynTensor::from_out(values),
            indices: $crate::DynTensor::from_out(indices),
        }
    }};
    ($other:ident, $out:expr) => {
        $crate::DynTensor::from_out($out)
    };
}

/// The dynamic front's body: the declared `dynamic` one when there is one, else the shared one.
macro_rules! dyn_body {
    ($body:expr) => {
        $body
    };
    ($body:expr, $dyn_body:expr) => {
        $dyn_body
    };
}

/// Declares ops on both fronts; see the module documentation.
macro_rules! declare_ops {
    ($(
        $(#[$doc:meta])*
        $bound:ident fn $name:ident($x:ident $(, $arg:ident: $kind:tt)*) -> $out:ident
            check $check:block
            = $body:expr $(, dynamic $dyn_body:expr)?;
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
                    pub fn [<try_ $name>](&self $(, $arg: $crate::api::declare::typed_param!($kind))*)
                        -> $crate::core::error::Result<$crate::api::declare::typed_out!($out)>
                    {
                        let $x = $crate::tensor::operand::sealed::AsRaw::input(self);
                        $(let $arg = $crate::api::declare::typed_arg!($kind, $arg);)*
                        let device = self.device();
                        let out: $crate::core::error::Result<$crate::api::declare::body_out!($out)> = $body;
                        out.map(|out| $crate::api::declare::typed_wrap!($out, out, device))
                    }

                    $(#[$doc])*
                    #[doc = concat!("\n\nPanics with the error's text where [`try_", stringify!($name), "`](Self::try_", stringify!($name), ") returns it.")]
                    #[track_caller]
                    #[allow(clippy::implied_bounds_in_impls)]
                    pub fn $name(&self $(, $arg: $crate::api::declare::typed_param!($kind))*)
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
                    pub fn $name(&self $(, $arg: $crate::api::declare::dyn_param!($kind))*)
                        -> $crate::core::error::Result<$crate::api::declare::dyn_out!($out)>
                    {
                        let $x = $crate::tensor::operand::sealed::AsRaw::input(self);
                        $(let $arg = $crate::api::declare::dyn_arg!($kind, $arg);)*
                        $check
                        let out: $crate::core::error::Result<$crate::api::declare::body_out!($out)> =
                            $crate::api::declare::dyn_body!($body $(, $dyn_body)?);
                        out.map(|out| $crate::api::declare::dyn_wrap!($out, out))
                    }
                }
            }
        )*
    };
}

pub(crate) use {
    body_out, declare_ops, dyn_arg, dyn_body, dyn_out, dyn_param, dyn_wrap, typed_arg, typed_out,
    typed_param, typed_wrap,
};
