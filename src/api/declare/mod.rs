//! `declare_ops!`: one declaration per op makes its methods on both fronts.
//!
//! A declaration names the op, the element types it takes, its arguments by kind, its result,
//! the device check of the dynamic front where its kinds do not imply it, and one body: a recorded op (forward plus backward
//! rule) over the untyped tensors. From it come
//!
//! - `Tensor::try_<op>` (returns `Result`) and `Tensor::<op>` (`#[track_caller]`, panics with
//!   the error's text), where tensor arguments must be on the receiver's device: a device
//!   mix-up does not compile;
//! - `DynTensor::<op>` (returns `Result`), which first runs the op's device check, as
//!   PyTorch does before any kernel (the TensorIterator form for element-wise ops, the
//!   argument-check form for the others: `docs/pytorch-reference.md`, sections 1a and 1b).
//!
//! Both fronts run the same body, so a tracked input records the same backward rule on both,
//! and an op cannot exist on one front only. A declaration may add `, dynamic <expr>` after its
//! body: the dynamic front then runs that instead, for the dtype rules PyTorch's op has beyond
//! `torch.result_type` (true division of integers gives a float, `sum` of `bool` an `i64`, ...),
//! which the typed front never meets (its element type is fixed, and it keeps refusing them).
//!
//! The whole form, the optional parts in brackets:
//!
//! ```text
//! /// docs
//! Bound fn name(x, arg: kind, ..) -> Result [check { .. }] [no_grad("why")]
//!     [untested(suite: "why", ..)] = body [, dynamic body];
//! ```
//!
//! - `check { .. }`: the dynamic front's device check, written only where the op's rule differs
//!   from the one its kinds imply. Without it: no tensor argument, no check; every tensor
//!   argument element-wise (`(impl OperandOn<D> ..)`), TensorIterator's check over `x` and them
//!   (a CPU 0-dim operand allowed); an argument-checked tensor (`(impl ArgumentOn<D> ..)`) or an
//!   `OptTensor` is a compile error asking for the `check`, since PyTorch's message for those
//!   names the kernel (`wrapper_CUDA_gather`) or follows the op's own rule.
//! - `no_grad("why")`: the op records no backward rule (a `bool` or index result). The op table
//!   says so, and the gradient checks skip the op with this reason.
//! - `untested(suite: "why")`: a test suite that iterates the op table and does not run this op
//!   (`parity`, `gradcheck`, `reference`, `half_ops`, `cuda_ops`, `cuda_half`), and why.
//!
//! Each file's declarations make its `OPS`, rows of the op table ([`OpInfo`]: name, element
//! types, argument kinds, result, gradient, the suites it is untested in); `crate::op_table`
//! chains them with the ops written by hand (`cat`, `stack`, `to`, `to_dtype`, `where_cond`).
//! The tests read the table (`tests/common/ops.rs`), so a newly declared op fails each suite
//! that does not run it, by name, until it is tested there or says why not.
//!
//! Argument kinds:
//!
//! | kind        | typed front                                      | dynamic front            | the body sees     |
//! |-------------|--------------------------------------------------|--------------------------|-------------------|
//! | `(impl B)`  | `impl B`, the bounds `B` as declared             | `&DynTensor`             | `In`              |
//! | `OptTensor` | `Option<&Tensor<D, E>>`                          | `Option<&DynTensor>`     | `Option<In>`      |
//! | `Scalar`    | `E`                                              | `impl Into<Scalar>`      | `Scalar`          |
//! | `Dims`      | `&[isize]`                                       | `&[isize]`               | `&[isize]`        |
//! | a plain type| itself                                           | itself                   | itself            |
//!
//! The plain types are a closed list (`isize`, `usize`, `bool`, `i64`, `f64`, `Reduction`,
//! `IndexItems`, `Size2`; `known_kinds!` in `kinds.rs` adds one), so a misspelt kind is a compile error
//! that says so, naming the op, instead of an unrelated type error in the generated methods:
//!
//! ```
//! # mod api { pub mod declare {
//! #     include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/api/declare/kinds.rs"));
//! # } }
//! // Known kinds: the tokens after the list are kept.
//! api::declare::known_kinds!(op [(impl OperandOn<D> + ElementIs<E>) Scalar Dims isize] fn kept() {});
//! # fn main() { kept() }
//! ```
//!
//! ```compile_fail
//! # mod api { pub mod declare {
//! #     include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/api/declare/kinds.rs"));
//! # } }
//! // `Scaler`: "`Scaler` (an argument of `op`) is not an argument kind; the kinds are ..."
//! api::declare::known_kinds!(op [(impl OperandOn<D> + ElementIs<E>) Scaler Dims isize] fn kept() {});
//! # fn main() { kept() }
//! ```
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

/// The element types an op takes: its declaration's bound (`Element`, `Numeric`, `Float`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtypes {
    /// Every element type, `bool` included.
    Element,
    /// Every element type but `bool`.
    Numeric,
    /// The floating-point types (`f64`, `f32`, `f16`, `bf16`).
    Float,
}

impl Dtypes {
    /// Whether an op of these element types takes `dtype` (on the typed front; the dynamic
    /// front may promote first).
    pub const fn takes(self, dtype: crate::core::DType) -> bool {
        match self {
            Dtypes::Element => true,
            Dtypes::Numeric => !matches!(dtype, crate::core::DType::Bool),
            Dtypes::Float => dtype.is_float(),
        }
    }
}

/// One op of both fronts as its declaration states it: a row of the op table
/// ([`op_table`](crate::op_table)) that the tests read, so a newly declared op is tested
/// wherever the tests iterate the table, or fails them with its name.
#[derive(Clone, Copy, Debug)]
pub struct OpInfo {
    /// The method's name on both fronts (`Tensor::<name>`, `Tensor::try_<name>`,
    /// `DynTensor::<name>`).
    pub name: &'static str,
    /// The module that declares it (`devtype::api::binary`); see [`family`](Self::family).
    pub module: &'static str,
    /// The element types it takes.
    pub dtypes: Dtypes,
    /// The argument kinds after `self`, in order: `"operand"` (an element-wise tensor),
    /// `"argument"` (an argument-checked tensor), or the kind as declared (`"Scalar"`,
    /// `"isize"`, ...).
    pub args: &'static [&'static str],
    /// The result kind: `"Same"`, `"Bool"`, `"Long"` or `"Pair"`.
    pub result: &'static str,
    /// Why the op has no gradient (`no_grad("..")` in its declaration), or `None` when it
    /// records a backward rule.
    pub no_grad: Option<&'static str>,
    /// The test suites that do not run the op, each with the reason its declaration gives
    /// (`untested(suite: "..")`).
    pub untested: &'static [(&'static str, &'static str)],
    /// Written by hand on both fronts (`cat`, `stack`, `to`, `to_dtype`, `where_cond`: their
    /// signatures do not fit a declaration) rather than by `declare_ops!`.
    pub by_hand: bool,
}

impl OpInfo {
    /// A row for an op written by hand on both fronts.
    pub(crate) const fn by_hand(
        name: &'static str,
        module: &'static str,
        dtypes: Dtypes,
        args: &'static [&'static str],
    ) -> OpInfo {
        OpInfo {
            name,
            module,
            dtypes,
            args,
            result: "Same",
            no_grad: None,
            untested: &[],
            by_hand: true,
        }
    }

    /// The op's family: the file of `src/api/` that declares it (`"binary"`, `"unary"`,
    /// `"reduce"`, ...).
    pub fn family(&self) -> &'static str {
        self.module.rsplit("::").next().unwrap_or(self.module)
    }

    /// Whether the op records a backward rule.
    pub const fn has_grad(&self) -> bool {
        self.no_grad.is_none()
    }

    /// The reason its declaration gives for not running in test suite `suite`, if it does.
    pub fn untested_in(&self, suite: &str) -> Option<&'static str> {
        self.untested
            .iter()
            .find(|(s, _)| *s == suite)
            .map(|(_, why)| *why)
    }
}

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

/// The type of a typed argument as the body sees it (what [`typed_arg`] makes).
macro_rules! body_param {
    ((impl $($bound:tt)*)) => { $crate::graph::In<'_> };
    (OptTensor) => { Option<$crate::graph::In<'_>> };
    (Scalar) => { $crate::core::Scalar };
    (Dims) => { &[isize] };
    ($t:ty) => { $t };
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

/// The dynamic front's device check: the declared `check` where there is one, else the one the
/// argument kinds imply (see the module documentation).
macro_rules! device_check {
    ($op:ident $x:ident [$check:block] $($rest:tt)*) => {
        $check
    };
    ($op:ident $x:ident [] $($arg:ident: $kind:tt),*) => {
        $crate::api::declare::derived_check!(@ $op $x [] $($arg: $kind,)*)
    };
}

/// The device check the argument kinds imply: none without tensor arguments, TensorIterator's
/// (a CPU 0-dim operand allowed) when every tensor argument is element-wise, and a compile
/// error asking for an explicit `check` otherwise.
macro_rules! derived_check {
    (@ $op:ident $x:ident []) => {};
    (@ $op:ident $x:ident [$($t:ident)+]) => {
        $crate::dyn_tensor::check::same_device_elementwise(&[$x.value $(, $t.value)+], true)?;
    };
    (@ $op:ident $x:ident [$($t:ident)*] $a:ident: (impl OperandOn<D> $($bound:tt)*), $($rest:tt)*) => {
        $crate::api::declare::derived_check!(@ $op $x [$($t)* $a] $($rest)*)
    };
    (@ $op:ident $x:ident [$($t:ident)*] $a:ident: (impl $($bound:tt)*), $($rest:tt)*) => {
        compile_error!(concat!(
            "declare_ops!: `", stringify!($op), "` takes the argument-checked tensor `",
            stringify!($a), "`; PyTorch's message names the kernel, so write the op's ",
            "`check { same_device_arguments(..)?; }`"
        ));
    };
    (@ $op:ident $x:ident [$($t:ident)*] $a:ident: OptTensor, $($rest:tt)*) => {
        compile_error!(concat!(
            "declare_ops!: `", stringify!($op), "` takes the optional tensor `", stringify!($a),
            "`; write the op's `check` (which tensors are checked, and how, is the op's own rule)"
        ));
    };
    (@ $op:ident $x:ident [$($t:ident)*] $a:ident: $kind:tt, $($rest:tt)*) => {
        $crate::api::declare::derived_check!(@ $op $x [$($t)*] $($rest)*)
    };
}

/// A short name of an argument kind, for the op table.
macro_rules! kind_name {
    ((impl OperandOn<D> $($bound:tt)*)) => {
        "operand"
    };
    ((impl ArgumentOn<D> $($bound:tt)*)) => {
        "argument"
    };
    ($kind:tt) => {
        stringify!($kind)
    };
}

/// `None`, or `Some` of the one expression given.
macro_rules! optional {
    () => {
        None
    };
    ($e:expr) => {
        Some($e)
    };
}

/// Declares ops on both fronts; see the module documentation.
macro_rules! declare_ops {
    ($(
        $(#[$doc:meta])*
        $bound:ident fn $name:ident($x:ident $(, $arg:ident: $kind:tt)*) -> $out:ident
            $(check $check:block)?
            $(no_grad($why:literal))?
            $(untested($($test:ident: $reason:literal),+ $(,)?))?
            = $body:expr $(, dynamic $dyn_body:expr)?;
    )*) => {
        /// The ops declared here, as their declarations state them (read by the tests).
        pub(crate) const OPS: &[$crate::api::declare::OpInfo] = &[$(
            $crate::api::declare::OpInfo {
                name: stringify!($name),
                module: module_path!(),
                dtypes: $crate::api::declare::Dtypes::$bound,
                args: &[$($crate::api::declare::kind_name!($kind)),*],
                result: stringify!($out),
                no_grad: $crate::api::declare::optional!($($why)?),
                untested: &[$($((stringify!($test), $reason)),+)?],
                by_hand: false,
            }
        ),*];
        $(
            $crate::api::declare::known_kinds! { $name [$($kind)*]
            paste::paste! {
                /// The typed front's body, compiled once, here: the front is generic, so
                /// what it inlined would be compiled again in every crate that calls it
                /// (the kernels behind an inlined body came to 1.4 MB of a small user
                /// program's code, rebuilt at every change; `scripts/user-build.sh`).
                #[inline(never)]
                fn [<__ $name _typed_body>](
                    $x: $crate::graph::In<'_>
                    $(, $arg: $crate::api::declare::body_param!($kind))*
                ) -> $crate::core::error::Result<$crate::api::declare::body_out!($out)> {
                    $body
                }

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
                        let out = [<__ $name _typed_body>]($x $(, $arg)*);
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
                        $crate::api::declare::device_check!($name $x [$($check)?] $($arg: $kind),*);
                        let out: $crate::core::error::Result<$crate::api::declare::body_out!($out)> =
                            $crate::api::declare::dyn_body!($body $(, $dyn_body)?);
                        out.map(|out| $crate::api::declare::dyn_wrap!($out, out))
                    }
                }
            }
            }
        )*
    };
}

mod kinds;

pub(crate) use kinds::known_kinds;
pub(crate) use {
    body_out, body_param, declare_ops, derived_check, device_check, dyn_arg, dyn_body, dyn_out,
    dyn_param, dyn_wrap, kind_name, optional, typed_arg, typed_out, typed_param, typed_wrap,
};

#[cfg(test)]
mod tests {
    use crate::api::binary::binary;
    use crate::ops::BinaryOp;
    use crate::tensor::{ElementIs, OperandOn};
    use crate::{Cpu, DynTensor, Tensor};

    declare_ops! {
        /// `self + other`, declared here to check a declaration's optional parts.
        Numeric fn declared_for_test(x, other: (impl OperandOn<D> + ElementIs<E>)) -> Same
            untested(cuda_ops: "a test of the macro", cuda_half: "a test of the macro")
            = binary(x, other, BinaryOp::Add);
    }

    #[test]
    fn a_declaration_makes_its_row_and_both_fronts() {
        let [op] = OPS else { panic!("one row") };
        assert_eq!(op.name, "declared_for_test");
        assert_eq!(op.family(), "tests");
        assert_eq!(op.args, ["operand"]);
        assert_eq!(op.result, "Same");
        assert!(op.has_grad() && !op.by_hand);
        assert_eq!(op.untested_in("cuda_half"), Some("a test of the macro"));
        assert_eq!(op.untested_in("parity"), None);
        let (a, b) = (
            Tensor::<Cpu>::from_vec(vec![1.0, 2.0], [2], Cpu),
            Tensor::<Cpu>::from_vec(vec![3.0, 4.0], [2], Cpu),
        );
        assert_eq!(a.declared_for_test(&b).to_vec(), vec![4.0, 6.0]);
        let sum: DynTensor = a.to_dyn().declared_for_test(&b.to_dyn()).unwrap();
        assert_eq!(sum.to_vec::<f32>().unwrap(), vec![4.0, 6.0]);
    }
}
