//! Every op of both fronts, declared once, beside its backward rule.
//!
//! One file per op family. Each holds the family's recorded ops (the forward, which calls the
//! kernels in [`crate::ops`], and the backward rule, written with the same device-generic ops)
//! and one [`declare_ops!`](declare) table that makes the methods of `Tensor` (with `try_`
//! twins) and of `DynTensor` (with PyTorch's device check) from the same declaration. A
//! tracked input (a parameter, or a result of one) records its rule on either front; untracked
//! inputs record nothing.
//!
//! To add an op: its kernels in `ops/<family>/` (`cpu.rs`, `cuda.rs`, `kernels/<family>.cu`),
//! then one declaration (and, if it is differentiable, its rule; if not, `no_grad("why")`)
//! here. The declaration adds the op's row to the op table ([`op_table`]); the test suites
//! that read the table then fail, naming the op, until it has a case in each (`tests/parity.rs`,
//! `tests/autograd_ops.rs`, `tests/common/ops.rs`) or its declaration says why a suite cannot
//! run it (`untested(suite: "why")`).

pub(crate) mod declare;

pub use declare::{Dtypes, OpInfo};

mod autocast;

mod binary;
mod cat;
pub(crate) mod conv;
mod copy;
mod gradcheck;
mod index;
mod kit;
mod linear;
mod loss;
mod matmul;
mod operators;
mod reduce;
mod select;
mod shape;
mod slice;
mod softmax;
mod unary;

pub use autocast::{autocast, autocast_dtype, autocast_type, LowPrecision};
pub use cat::{JoinList, TensorList};
pub use conv::Size2;
pub use copy::MaskFor;
pub use gradcheck::{gradcheck, gradcheck_dyn, gradcheck_with, GradcheckOptions};
pub use select::ValuesIndices;
pub use slice::{IndexItem, IndexItems, IndexSpec};

pub(crate) mod rules {
    //! The recorded ops, for the modules in `nn`.
    pub(crate) use super::binary::binary;
    pub(crate) use super::conv::{conv, ConvOptions};
    pub(crate) use super::linear::linear;
    pub(crate) use super::loss::{
        bce_with_logits, cross_entropy, huber_loss, l1_loss, nll_loss, smooth_l1_loss,
    };
    pub(crate) use super::reduce::sum_mean;
    pub(crate) use super::unary::{relu_owned, unary};
}

/// Every op of both fronts, family by family: the declared ones (each `declare_ops!` table's
/// `OPS`) and the ones written by hand (`cat`, `stack`, `to`, `to_dtype`, `where_cond`).
const OPS: &[&[OpInfo]] = &[
    binary::OPS,
    cat::OPS,
    conv::OPS,
    copy::OPS,
    index::OPS,
    linear::OPS,
    loss::OPS,
    matmul::OPS,
    reduce::OPS,
    select::OPS,
    slice::OPS,
    shape::OPS,
    softmax::OPS,
    unary::OPS,
];

/// Every op declared with `declare_ops!` (see [`declare`]), by name.
#[doc(hidden)]
pub fn declared_ops() -> Vec<&'static str> {
    op_table()
        .filter(|op| !op.by_hand)
        .map(|op| op.name)
        .collect()
}

/// The op table: every op of both fronts, as its declaration states it (name, argument kinds,
/// element types, whether it has a gradient, the test suites it is not run in and why). The
/// tests iterate it, or check their own lists against it, so that a new op is tested wherever
/// it is declared. Static data: nothing on an op's call path reads it.
#[doc(hidden)]
pub fn op_table() -> impl Iterator<Item = &'static OpInfo> {
    OPS.iter().flat_map(|family| family.iter())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names_are_unique() {
        let mut names: Vec<_> = op_table().map(|op| op.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "an op is in the table twice");
    }

    #[test]
    fn ops_with_bool_or_index_results_say_they_have_no_gradient() {
        for op in op_table() {
            if matches!(op.result, "Bool" | "Long") {
                assert!(
                    !op.has_grad(),
                    "{}: a {} result has no gradient; mark it `no_grad(\"..\")`",
                    op.name,
                    op.result
                );
            }
        }
    }
}
