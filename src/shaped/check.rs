//! The leaf checks: one trait per sentence, with the sizes as `const` parameters, implemented
//! only where they agree. Their messages are what the compiler prints for a shape mistake.
//!
//! Each is implemented for `()` (or, for broadcasting, for the comparison's result bits), never
//! for the operand's type: rustc then reports the leaf's message, at the operand.

macro_rules! mm_family {
    ($op:literal, $fix:literal, $all:ident, $rows:ident, $cols:ident, $both:ident) => {
        #[doc = concat!("`", $op, "` with every size static: `K1 == K2`.")]
        #[diagnostic::on_unimplemented(
            message = "mm: mat1 and mat2 shapes cannot be multiplied ({M}x{K1} and {K2}x{N})",
            label = "this matrix has {K2} rows, the first has {K1} columns",
            note = $fix
        )]
        pub trait $all<const M: usize, const K1: usize, const K2: usize, const N: usize> {}
        impl<const M: usize, const K: usize, const N: usize> $all<M, K, K, N> for () {}

        #[doc = concat!("`", $op, "` with the first matrix's row count dynamic (`?`): `K1 == K2`.")]
        #[diagnostic::on_unimplemented(
            message = "mm: mat1 and mat2 shapes cannot be multiplied (?x{K1} and {K2}x{N})",
            label = "this matrix has {K2} rows, the first has {K1} columns",
            note = $fix
        )]
        pub trait $rows<const K1: usize, const K2: usize, const N: usize> {}
        impl<const K: usize, const N: usize> $rows<K, K, N> for () {}

        #[doc = concat!("`", $op, "` with the second matrix's column count dynamic (`?`): `K1 == K2`.")]
        #[diagnostic::on_unimplemented(
            message = "mm: mat1 and mat2 shapes cannot be multiplied ({M}x{K1} and {K2}x?)",
            label = "this matrix has {K2} rows, the first has {K1} columns",
            note = $fix
        )]
        pub trait $cols<const M: usize, const K1: usize, const K2: usize> {}
        impl<const M: usize, const K: usize> $cols<M, K, K> for () {}

        #[doc = concat!("`", $op, "` with both outer sizes dynamic (`?`): `K1 == K2`.")]
        #[diagnostic::on_unimplemented(
            message = "mm: mat1 and mat2 shapes cannot be multiplied (?x{K1} and {K2}x?)",
            label = "this matrix has {K2} rows, the first has {K1} columns",
            note = $fix
        )]
        pub trait $both<const K1: usize, const K2: usize> {}
        impl<const K: usize> $both<K, K> for () {}
    };
}

mm_family!(
    "mm",
    "in `a.matmul(&b)`, `b` needs as many rows as `a` has columns: fix the size, or transpose `b` with `b.t()`",
    MmSizes,
    MmSizesRowsDyn,
    MmSizesColsDyn,
    MmSizesBothDyn
);

/// `linear(x, w)` with every size static: `w` (`[out, in]`) takes `in == K1` features.
#[diagnostic::on_unimplemented(
    message = "addmm: mat1 and mat2 shapes cannot be multiplied ({M}x{K1} and {K2}x{N})",
    label = "this weight takes {K2} input features, the input has {K1}",
    note = "a `StaticLinear<IN, OUT>` takes inputs of `IN` features: its `IN` must be the input's last size"
)]
pub trait AddmmSizes<const M: usize, const K1: usize, const K2: usize, const N: usize> {}
impl<const M: usize, const K: usize, const N: usize> AddmmSizes<M, K, K, N> for () {}

/// `linear(x, w)` with a dynamic batch (`?`).
#[diagnostic::on_unimplemented(
    message = "addmm: mat1 and mat2 shapes cannot be multiplied (?x{K1} and {K2}x{N})",
    label = "this takes {K2} input features, the input has {K1}",
    note = "a `StaticLinear<IN, OUT>` takes inputs of `IN` features: its `IN` must be the input's last size"
)]
pub trait AddmmSizesRowsDyn<const K1: usize, const K2: usize, const N: usize> {}
impl<const K: usize, const N: usize> AddmmSizesRowsDyn<K, K, N> for () {}

/// A layer appended to a [`Seq`](super::nn::Seq): it must take what the previous layers give.
#[diagnostic::on_unimplemented(
    message = "addmm: mat1 and mat2 shapes cannot be multiplied (?x{K1} and {K2}x{N})",
    label = "this layer takes {K2} input features, the layers before it give {K1}",
    note = "each `StaticLinear<IN, OUT>` must take the previous layer's `OUT`: make this layer `StaticLinear<{K1}, {N}>`, or the previous one give {K2}"
)]
pub trait ChainSizes<const K1: usize, const K2: usize, const N: usize> {}
impl<const K: usize, const N: usize> ChainSizes<K, K, N> for () {}

/// `bmm` with the batch and inner sizes static.
#[diagnostic::on_unimplemented(
    message = "Expected size for first two dimensions of batch2 tensor to be: [{B1}, {K1}] but got: [{B2}, {K2}].",
    label = "this batch is [{B2}, {K2}, _], the first is [{B1}, _, {K1}]",
    note = "`bmm` does not broadcast: both batches need the same batch size, and the second as many rows as the first has columns"
)]
pub trait BmmSizes<const B1: usize, const K1: usize, const B2: usize, const K2: usize> {}
impl<const B: usize, const K: usize> BmmSizes<B, K, B, K> for () {}

/// Two static sizes at one dimension of an element-wise op: equal, or one of them 1.
///
/// typenum compares them; the comparison is [`SizesBroadcast`] or [`SizesDiffer`], and only
/// the first implements this trait.
#[diagnostic::on_unimplemented(
    message = "The size of tensor a ({A}) must match the size of tensor b ({B}) at non-singleton dimension {DIM}",
    label = "this operand has size {B} at dimension {DIM}, the receiver {A}",
    note = "sizes broadcast when they are equal or one of them is 1, compared from the last dimension: fix the size, or `unsqueeze` the operand where a 1 is meant"
)]
pub trait BroadcastSizes<const A: usize, const B: usize, const DIM: usize> {}
impl<const A: usize, const B: usize, const DIM: usize> BroadcastSizes<A, B, DIM>
    for SizesBroadcast
{
}

/// Two sizes that broadcast (equal, or one of them 1).
#[derive(Debug)]
pub struct SizesBroadcast;
/// Two sizes that do not broadcast.
#[derive(Debug)]
pub struct SizesDiffer;

macro_rules! reshape_leaf {
    ($name:ident, $shape:literal, $($d:ident)*) => {
        #[doc = concat!("`reshape` to a static shape of rank ", stringify!($($d)*), ": the element counts agree.")]
        #[diagnostic::on_unimplemented(
            message = $shape,
            label = "this shape has {TO} elements, the tensor {FROM}",
            note = "`reshape` and `view` keep the element count: make the sizes multiply to {FROM}, or make one of them `Dyn`"
        )]
        pub trait $name<$(const $d: usize,)* const FROM: usize, const TO: usize> {}
        impl<$(const $d: usize,)* const N: usize> $name<$($d,)* N, N> for () {}
    };
}
reshape_leaf!(
    Reshape1,
    "shape '[{A}]' is invalid for input of size {FROM}",
    A
);
reshape_leaf!(Reshape2, "shape '[{A}, {B}]' is invalid for input of size {FROM}", A B);
reshape_leaf!(Reshape3, "shape '[{A}, {B}, {T}]' is invalid for input of size {FROM}", A B T);
reshape_leaf!(Reshape4, "shape '[{A}, {B}, {T}, {U}]' is invalid for input of size {FROM}", A B T U);

/// `cat` along `DIM`: the other dimensions agree.
#[diagnostic::on_unimplemented(
    message = "Sizes of tensors must match except in dimension {DIM}. Expected size {A} but got size {B} for tensor number 1 in the list.",
    label = "this tensor has size {B} at dimension {AT}, the first {A}",
    note = "`cat` joins along one dimension; every other size must be equal"
)]
pub trait CatSizes<const DIM: usize, const AT: usize, const A: usize, const B: usize> {}
impl<const DIM: usize, const AT: usize, const A: usize> CatSizes<DIM, AT, A, A> for () {}

/// `cross_entropy`: one target per row of logits.
#[diagnostic::on_unimplemented(
    message = "Expected input batch_size ({N}) to match target batch_size ({M}).",
    label = "{M} targets for {N} rows of logits",
    note = "the logits are `[batch, classes]` and the targets `[batch]`: one class index per row"
)]
pub trait BatchSizes<const N: usize, const M: usize> {}
impl<const N: usize> BatchSizes<N, N> for () {}

/// A dimension given as a `const` (`sum::<DIM>()`, `softmax::<DIM>()`): it must exist.
#[diagnostic::on_unimplemented(
    message = "Dimension out of range (dimension {DIM} of a tensor of shape `{Self}`)",
    label = "dimension {DIM} is not in this shape",
    note = "dimensions count from 0: a tensor of rank r has dimensions 0 to r - 1"
)]
pub trait HasDim<const DIM: usize> {
    /// The shape without dimension `DIM`.
    type Removed;
    /// The shape with dimension `DIM` set to 1.
    type Kept;
    /// The size at `DIM`.
    type At;
    /// The shape with dimension `DIM` replaced by `R`.
    type Replaced<R>;
}

/// `stack`: the two shapes (`S1`, `S2`) are equal at dimension `AT`.
#[diagnostic::on_unimplemented(
    message = "stack expects each tensor to be equal size, but got `{S1}` at entry 0 and `{S2}` at entry 1",
    label = "this tensor has size {B} at dimension {AT}, the first {A}",
    note = "`stack` joins tensors of one shape along a new dimension: make the sizes equal, or `cat` along an existing dimension"
)]
pub trait StackSizes<S1, S2, const AT: usize, const A: usize, const B: usize> {}
impl<S1, S2, const AT: usize, const A: usize> StackSizes<S1, S2, AT, A, A> for () {}

/// `index_select`'s index is a vector.
#[diagnostic::on_unimplemented(
    message = "index_select(): Index is supposed to be a vector",
    label = "this index has shape `{S}`",
    note = "the index is one dimension of positions, `(L,)`: `reshape::<(Dyn,)>()` a flat list of them"
)]
pub trait IndexIsVector<S> {}
impl<L> IndexIsVector<(L,)> for () {}

/// A new dimension given as a `const` (`stack(Axis::<DIM>, ..)`): from 0 to the rank.
#[diagnostic::on_unimplemented(
    message = "Dimension out of range (new dimension {DIM} of the stack of tensors of shape `{Self}`)",
    label = "dimension {DIM} is past the end of the result",
    note = "`stack` of tensors of rank r takes a dimension from 0 to r"
)]
pub trait HasGap<const DIM: usize> {
    /// The shape with a dimension `Z` inserted at `DIM`.
    type Inserted<Z>;
}
