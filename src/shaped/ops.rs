//! The ops of [`Shaped`]: each computes its result shape in the types, checks what can be
//! checked there, and calls the dynamic op.
//!
//! For an op with an operand `R` on a receiver of shape `S`, two traits of `R`: `...Out<S>`
//! computes the result shape and holds whenever the ranks fit, and the check (`Broadcasts<S>`,
//! `Matmuls<S>`, ...) sends static sizes to the leaf traits of [`check`](super::check). The
//! result type does not depend on the check, so a wrong size is one error, where it is made.

use super::check::*;
use super::table::{TableSize, ToDimOrDyn};
use super::{Axis, Dim, Dyn, Shape, ShapeOf, Shaped, C};
use crate::core::error::Result;
use crate::device::Device;
use crate::tensor::{ArgumentOn, ElementIs, Float, MatrixElementIs, Numeric, OperandOn, Tensor};
use crate::tensor::{Element, HasDevice};
use typenum::{IsEqual, B0, B1, U1};

type Eq<A, B> = <A as IsEqual<B>>::Output;

/// `T` when `Self` is `B1`, `F` when it is `B0`.
pub trait If<T, F> {
    /// The choice.
    type Out;
}
impl<T, F> If<T, F> for B1 {
    type Out = T;
}
impl<T, F> If<T, F> for B0 {
    type Out = F;
}

/// `N` as a typenum unsigned, for `C<N>` in the table ([`TableSize`]).
type Tu<A> = <A as TableSize>::U;

macro_rules! dim_arith {
    ($($(#[$doc:meta])* $name:ident $op:ident $what:literal;)*) => {$(
        $(#[$doc])*
        pub trait $name<B> {
            #[doc = concat!("`Self ", $what, " B`.")]
            type Out: Dim;
        }
        impl<B: Dim> $name<B> for Dyn {
            type Out = Dyn;
        }
        impl<const A: usize> $name<Dyn> for C<A> {
            type Out = Dyn;
        }
        impl<const A: usize, const B: usize> $name<C<B>> for C<A>
        where
            C<A>: TableSize,
            C<B>: TableSize,
            Tu<C<A>>: std::ops::$op<Tu<C<B>>>,
            <Tu<C<A>> as std::ops::$op<Tu<C<B>>>>::Output: ToDimOrDyn,
        {
            type Out = <<Tu<C<A>> as std::ops::$op<Tu<C<B>>>>::Output as ToDimOrDyn>::Dim;
        }
    )*};
}

dim_arith! {
    /// The product of two dimensions, computed with typenum: static when both are and the
    /// product is in the table, otherwise [`Dyn`].
    DimMul Mul "*";
    /// The sum of two dimensions, computed with typenum: static when both are and the sum is in
    /// the table, otherwise [`Dyn`].
    DimAdd Add "+";
}

/// The element count of a shape: static when every size is.
pub trait Numel {
    /// The product of the sizes, as a dimension.
    type N: Dim;
}
impl Numel for () {
    type N = C<1>;
}
impl<A: Dim> Numel for (A,) {
    type N = A;
}
impl<A: Dim + DimMul<B>, B: Dim> Numel for (A, B) {
    type N = <A as DimMul<B>>::Out;
}
impl<A: Dim + DimMul<B>, B: Dim, T: Dim> Numel for (A, B, T)
where
    <A as DimMul<B>>::Out: DimMul<T>,
{
    type N = <<A as DimMul<B>>::Out as DimMul<T>>::Out;
}
impl<A: Dim + DimMul<B>, B: Dim, T: Dim, V: Dim> Numel for (A, B, T, V)
where
    <A as DimMul<B>>::Out: DimMul<T>,
    <<A as DimMul<B>>::Out as DimMul<T>>::Out: DimMul<V>,
{
    type N = <<<A as DimMul<B>>::Out as DimMul<T>>::Out as DimMul<V>>::Out;
}

// ---------------------------------------------------------------------------------------------
// Broadcasting.

/// The broadcast of two sizes (`Self` the receiver's): static when both are (the one that is
/// not 1), otherwise [`Dyn`]. Always holds; [`BcDimOk`] checks.
pub trait BcDim<B> {
    /// The result's size.
    type Out: Dim;
}
impl<B: Dim> BcDim<B> for Dyn {
    type Out = Dyn;
}
impl<const A: usize> BcDim<Dyn> for C<A> {
    type Out = Dyn;
}
impl<const A: usize, const B: usize> BcDim<C<B>> for C<A>
where
    C<A>: TableSize,
    Tu<C<A>>: IsEqual<U1>,
    Eq<Tu<C<A>>, U1>: If<C<B>, C<A>>,
    <Eq<Tu<C<A>>, U1> as If<C<B>, C<A>>>::Out: Dim,
{
    type Out = <Eq<Tu<C<A>>, U1> as If<C<B>, C<A>>>::Out;
}

/// [`SizesBroadcast`] when one of three bits is `B1` (equal sizes, or either is 1), otherwise
/// [`SizesDiffer`].
pub trait AnyBit {
    /// The verdict.
    type Out;
}
impl<X, Y> AnyBit for (B1, X, Y) {
    type Out = SizesBroadcast;
}
impl<Y> AnyBit for (B0, B1, Y) {
    type Out = SizesBroadcast;
}
impl AnyBit for (B0, B0, B1) {
    type Out = SizesBroadcast;
}
impl AnyBit for (B0, B0, B0) {
    type Out = SizesDiffer;
}

/// Two sizes at dimension `DIM` broadcast: checked when both are static.
pub trait BcDimOk<B, const DIM: usize> {}
impl<B: Dim, const DIM: usize> BcDimOk<B, DIM> for Dyn {}
impl<const A: usize, const DIM: usize> BcDimOk<Dyn, DIM> for C<A> {}
impl<const A: usize, const B: usize, const DIM: usize> BcDimOk<C<B>, DIM> for C<A>
where
    C<A>: TableSize,
    C<B>: TableSize,
    Tu<C<A>>: IsEqual<Tu<C<B>>> + IsEqual<U1>,
    Tu<C<B>>: IsEqual<U1>,
    (Eq<Tu<C<A>>, Tu<C<B>>>, Eq<Tu<C<A>>, U1>, Eq<Tu<C<B>>, U1>): AnyBit,
    <(Eq<Tu<C<A>>, Tu<C<B>>>, Eq<Tu<C<A>>, U1>, Eq<Tu<C<B>>, U1>) as AnyBit>::Out:
        BroadcastSizes<A, B, DIM>,
{
}

/// The broadcast of two shapes (aligned from the last dimension).
pub trait BroadcastShape<S2> {
    /// The result shape.
    type Out: Shape;
}
/// Two shapes broadcast (every pair of static sizes checked).
pub trait BroadcastShapeOk<S2> {}

/// An operand that broadcasts with a receiver of shape `S` (the check).
pub trait Broadcasts<S>: ShapeOf {}
impl<S: BroadcastShapeOk<R::Shape>, R: ShapeOf> Broadcasts<S> for R {}

/// The shape of an element-wise result of a receiver of shape `S` and this operand.
pub trait BroadcastOut<S>: ShapeOf {
    /// The result shape.
    type Out: Shape;
}
impl<S: BroadcastShape<R::Shape>, R: ShapeOf> BroadcastOut<S> for R {
    type Out = <S as BroadcastShape<R::Shape>>::Out;
}

macro_rules! elementwise {
    ($($(#[$doc:meta])* $name:ident $try:ident $(: $trait:ident $method:ident)?;)*) => {
        impl<D: Device, E: Numeric, S: Shape> Shaped<D, E, S> {
            $(
                $(#[$doc])*
                pub fn $try<R>(&self, other: R) -> Result<Shaped<D, E, R::Out>>
                where
                    R: OperandOn<D> + ElementIs<E> + Broadcasts<S> + BroadcastOut<S>,
                {
                    self.tensor.$try(other).map(Shaped::wrap)
                }

                $(#[$doc])*
                ///
                /// Panics with the error's text where the `try_` form returns it.
                #[track_caller]
                pub fn $name<R>(&self, other: R) -> Shaped<D, E, R::Out>
                where
                    R: OperandOn<D> + ElementIs<E> + Broadcasts<S> + BroadcastOut<S>,
                {
                    Shaped::wrap(self.tensor.$name(other))
                }
            )*
        }
        $($(
            impl<D: Device, E: Numeric, S: Shape, R> std::ops::$trait<R> for Shaped<D, E, S>
            where
                R: OperandOn<D> + ElementIs<E> + Broadcasts<S> + BroadcastOut<S>,
            {
                type Output = Shaped<D, E, R::Out>;
                #[track_caller]
                fn $method(self, other: R) -> Self::Output {
                    Shaped::$name(&self, other)
                }
            }
            impl<D: Device, E: Numeric, S: Shape, R> std::ops::$trait<R> for &Shaped<D, E, S>
            where
                R: OperandOn<D> + ElementIs<E> + Broadcasts<S> + BroadcastOut<S>,
            {
                type Output = Shaped<D, E, R::Out>;
                #[track_caller]
                fn $method(self, other: R) -> Self::Output {
                    Shaped::$name(self, other)
                }
            }
        )?)*
    };
}

elementwise! {
    /// `self + other`, broadcast as in PyTorch: sizes checked at compile time where both are static.
    add try_add: Add add;
    /// `self - other`, broadcast.
    sub try_sub: Sub sub;
    /// `self * other`, broadcast.
    mul try_mul: Mul mul;
    /// `self / other`, broadcast.
    div try_div: Div div;
    /// The element-wise maximum, broadcast.
    maximum try_maximum;
}

macro_rules! same_shape {
    ($($(#[$doc:meta])* $bound:ident $name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            impl<D: Device, E: $bound, S: Shape> Shaped<D, E, S> {
                $(#[$doc])*
                ///
                /// Panics with the error's text where the dynamic op returns it.
                #[track_caller]
                pub fn $name(&self $(, $arg: $ty)*) -> Self {
                    Shaped::wrap(self.tensor.$name($($arg),*))
                }
            }
        )*
    };
}

same_shape! {
    /// `max(x, 0)`; same shape.
    Numeric relu();
    /// `-x`; same shape.
    Numeric neg();
    /// `|x|`; same shape.
    Numeric abs();
    /// `x * x`; same shape.
    Numeric square();
    /// `e^x`; same shape.
    Float exp();
    /// `ln x`; same shape.
    Float log();
    /// `tanh x`; same shape.
    Float tanh();
    /// `1 / (1 + e^-x)`; same shape.
    Float sigmoid();
    /// `x + s`; same shape.
    Numeric add_scalar(s: E);
    /// `x * s`; same shape.
    Numeric mul_scalar(s: E);
}

// ---------------------------------------------------------------------------------------------
// Matrix products.

/// The inner sizes of `mm` (`Self` the first's columns, `K2` the second's rows), with the
/// outer sizes `M` and `N` for the message: checked when both inner sizes are static.
pub trait MmK<K2, M, N> {}
impl<const K: usize, const K2: usize, const M: usize, const N: usize> MmK<C<K2>, C<M>, C<N>>
    for C<K>
where
    (): MmSizes<M, K, K2, N>,
{
}
impl<const K: usize, const K2: usize, const N: usize> MmK<C<K2>, Dyn, C<N>> for C<K> where
    (): MmSizesRowsDyn<K, K2, N>
{
}
impl<const K: usize, const K2: usize, const M: usize> MmK<C<K2>, C<M>, Dyn> for C<K> where
    (): MmSizesColsDyn<M, K, K2>
{
}
impl<const K: usize, const K2: usize> MmK<C<K2>, Dyn, Dyn> for C<K> where (): MmSizesBothDyn<K, K2> {}
impl<K2, M, N> MmK<K2, M, N> for Dyn {}
impl<const K: usize, M, N> MmK<Dyn, M, N> for C<K> {}

/// The inner sizes of `addmm` (`linear`): as [`MmK`], with `linear`'s message.
pub trait AddmmK<K2, M, N> {}
impl<const K: usize, const K2: usize, const M: usize, const N: usize> AddmmK<C<K2>, C<M>, C<N>>
    for C<K>
where
    (): AddmmSizes<M, K, K2, N>,
{
}
impl<const K: usize, const K2: usize, const N: usize> AddmmK<C<K2>, Dyn, C<N>> for C<K> where
    (): AddmmSizesRowsDyn<K, K2, N>
{
}
impl<const K: usize, const K2: usize, M: Dim> AddmmK<C<K2>, M, Dyn> for C<K> {}
impl<K2, M, N> AddmmK<K2, M, N> for Dyn {}
impl<const K: usize, M, N> AddmmK<Dyn, M, N> for C<K> {}

/// The shape of `a.matmul(&b)`: `[m, k] @ [k, n]` and `[b, m, k] @ [k, n]`.
pub trait MatmulShape<S2> {
    /// The result shape.
    type Out: Shape;
}
impl<M: Dim, K: Dim, K2: Dim, N: Dim> MatmulShape<(K2, N)> for (M, K) {
    type Out = (M, N);
}
impl<Bt: Dim, M: Dim, K: Dim, K2: Dim, N: Dim> MatmulShape<(K2, N)> for (Bt, M, K) {
    type Out = (Bt, M, N);
}

/// `a.matmul(&b)`'s check.
pub trait MatmulShapeOk<S2> {}
impl<M: Dim, K: Dim + MmK<K2, M, N>, K2: Dim, N: Dim> MatmulShapeOk<(K2, N)> for (M, K) {}
// PyTorch folds the batch into the rows (`(b*m)xk`); the folded count is written `?`.
impl<Bt: Dim, M: Dim, K: Dim + MmK<K2, Dyn, N>, K2: Dim, N: Dim> MatmulShapeOk<(K2, N)>
    for (Bt, M, K)
{
}

/// The second matrix of `matmul` on a receiver of shape `S` (the check).
pub trait Matmuls<S>: ShapeOf {}
impl<S: MatmulShapeOk<R::Shape>, R: ShapeOf> Matmuls<S> for R {}

/// The shape of `matmul` of a receiver of shape `S` and this matrix.
pub trait MatmulOut<S>: ShapeOf {
    /// The result shape.
    type Out: Shape;
}
impl<S: MatmulShape<R::Shape>, R: ShapeOf> MatmulOut<S> for R {
    type Out = <S as MatmulShape<R::Shape>>::Out;
}

/// `bmm`'s batch and inner sizes: checked when all four are static.
pub trait BmmK<Rhs> {}
impl<const X1: usize, const K1: usize, const X2: usize, const K2: usize> BmmK<(C<X2>, C<K2>)>
    for (C<X1>, C<K1>)
where
    (): BmmSizes<X1, K1, X2, K2>,
{
}
impl<K1, Y2, K2> BmmK<(Y2, K2)> for (Dyn, K1) {}
impl<const X1: usize, Y2, K2> BmmK<(Y2, K2)> for (C<X1>, Dyn) {}
impl<const X1: usize, const K1: usize, K2> BmmK<(Dyn, K2)> for (C<X1>, C<K1>) {}
impl<const X1: usize, const K1: usize, const X2: usize> BmmK<(C<X2>, Dyn)> for (C<X1>, C<K1>) {}

/// The batch of matrices of `bmm` on a receiver of shape `S = (B, M, K)` (the check).
pub trait Bmms<S>: ShapeOf {}
impl<B1: Dim, M: Dim, K1: Dim, B2: Dim, K2: Dim, N: Dim, R> Bmms<(B1, M, K1)> for R
where
    R: ShapeOf<Shape = (B2, K2, N)>,
    (B1, K1): BmmK<(B2, K2)>,
{
}

/// The ops on matrices.
impl<D: Device, E: Float, S: Shape> Shaped<D, E, S> {
    /// `self @ other` (`torch.matmul`) of `[m, k] @ [k, n]` or `[b, m, k] @ [k, n]`; the
    /// inner sizes are checked at compile time where both are static.
    pub fn try_matmul<R>(&self, other: R) -> Result<Shaped<D, E, R::Out>>
    where
        R: ArgumentOn<D> + MatrixElementIs<E> + Matmuls<S> + MatmulOut<S>,
    {
        self.tensor.try_matmul(other).map(Shaped::wrap)
    }

    /// `self @ other`; see [`try_matmul`](Self::try_matmul).
    ///
    /// Panics with the error's text where [`try_matmul`](Self::try_matmul) returns it.
    #[track_caller]
    pub fn matmul<R>(&self, other: R) -> Shaped<D, E, R::Out>
    where
        R: ArgumentOn<D> + MatrixElementIs<E> + Matmuls<S> + MatmulOut<S>,
    {
        Shaped::wrap(self.tensor.matmul(other))
    }
}

impl<D: Device, E: Float, B1: Dim, M: Dim, K: Dim> Shaped<D, E, (B1, M, K)> {
    /// Batched `[b, m, k] @ [b, k, n]` (`bmm`: no broadcasting); batch and inner sizes checked at
    /// compile time where static.
    pub fn try_bmm<R, B2: Dim, K2: Dim, N: Dim>(&self, other: R) -> Result<Shaped<D, E, (B1, M, N)>>
    where
        R: ArgumentOn<D> + MatrixElementIs<E> + ShapeOf<Shape = (B2, K2, N)> + Bmms<(B1, M, K)>,
    {
        self.tensor.try_bmm(other).map(Shaped::wrap)
    }

    /// Batched `[b, m, k] @ [b, k, n]`; see [`try_bmm`](Self::try_bmm).
    ///
    /// Panics with the error's text where [`try_bmm`](Self::try_bmm) returns it.
    #[track_caller]
    pub fn bmm<R, B2: Dim, K2: Dim, N: Dim>(&self, other: R) -> Shaped<D, E, (B1, M, N)>
    where
        R: ArgumentOn<D> + MatrixElementIs<E> + ShapeOf<Shape = (B2, K2, N)> + Bmms<(B1, M, K)>,
    {
        Shaped::wrap(self.tensor.bmm(other))
    }
}

/// A weight `[out, in]` for inputs `[m, k]` (the check of `linear`).
pub trait LinearWeight<M, K>: ShapeOf {}
impl<M: Dim, K: Dim, O: Dim, I: Dim, R> LinearWeight<M, K> for R
where
    R: ShapeOf<Shape = (O, I)>,
    K: AddmmK<I, M, O>,
{
}

impl<D: Device, E: Float, M: Dim, K: Dim> Shaped<D, E, (M, K)> {
    /// `x @ weight.T + bias` (`F.linear`), `weight` `[out, in]`, `bias` `[out]`; `in` is checked
    /// against the input's features at compile time where both are static.
    pub fn try_linear<R, O: Dim, I: Dim>(
        &self,
        weight: R,
        bias: Option<&Shaped<D, E, (O,)>>,
    ) -> Result<Shaped<D, E, (M, O)>>
    where
        R: ArgumentOn<D> + MatrixElementIs<E> + ShapeOf<Shape = (O, I)> + LinearWeight<M, K>,
    {
        self.tensor
            .try_linear(weight, bias.map(|b| b.tensor()))
            .map(Shaped::wrap)
    }

    /// `x @ weight.T + bias`; see [`try_linear`](Self::try_linear).
    ///
    /// Panics with the error's text where [`try_linear`](Self::try_linear) returns it.
    #[track_caller]
    pub fn linear<R, O: Dim, I: Dim>(
        &self,
        weight: R,
        bias: Option<&Shaped<D, E, (O,)>>,
    ) -> Shaped<D, E, (M, O)>
    where
        R: ArgumentOn<D> + MatrixElementIs<E> + ShapeOf<Shape = (O, I)> + LinearWeight<M, K>,
    {
        super::or_panic(self.try_linear(weight, bias))
    }

    /// The transpose `[k, m]`.
    pub fn t(&self) -> Shaped<D, E, (K, M)> {
        Shaped::wrap(self.tensor.t())
    }
}

// ---------------------------------------------------------------------------------------------
// Shape changes.

/// A static target shape of `reshape` from `FROM` elements, with `TO` of its own.
pub trait ReshapeTarget<const FROM: usize, const TO: usize> {}
impl<const A: usize, const FROM: usize, const TO: usize> ReshapeTarget<FROM, TO> for (C<A>,) where
    (): Reshape1<A, FROM, TO>
{
}
impl<const A: usize, const B: usize, const FROM: usize, const TO: usize> ReshapeTarget<FROM, TO>
    for (C<A>, C<B>)
where
    (): Reshape2<A, B, FROM, TO>,
{
}
impl<const A: usize, const B: usize, const T: usize, const FROM: usize, const TO: usize>
    ReshapeTarget<FROM, TO> for (C<A>, C<B>, C<T>)
where
    (): Reshape3<A, B, T, FROM, TO>,
{
}
impl<
        const A: usize,
        const B: usize,
        const T: usize,
        const V: usize,
        const FROM: usize,
        const TO: usize,
    > ReshapeTarget<FROM, TO> for (C<A>, C<B>, C<T>, C<V>)
where
    (): Reshape4<A, B, T, V, FROM, TO>,
{
}

/// The element counts `(from, to)` of a reshape to `S2`: checked when both are static.
pub trait NumelAgree<S2> {}
impl<S2, const FROM: usize, const TO: usize> NumelAgree<S2> for (C<FROM>, C<TO>) where
    S2: ReshapeTarget<FROM, TO>
{
}
impl<S2, N> NumelAgree<S2> for (Dyn, N) {}
impl<S2, const FROM: usize> NumelAgree<S2> for (C<FROM>, Dyn) {}

/// A shape this one can be reshaped to (same element count where both are static).
pub trait ReshapesTo<S2> {}
impl<S: Numel, S2: Numel> ReshapesTo<S2> for S where (S::N, S2::N): NumelAgree<S2> {}

/// `flatten(1, -1)`: `[b, h, w]` to `[b, h * w]`, the product computed with typenum.
#[diagnostic::on_unimplemented(
    message = "`flatten` keeps dimension 0 and multiplies the others: it takes a tensor of rank 3 or 4, not one of shape `{Self}`",
    label = "a tensor of shape `{Self}`",
    note = "for another layout, `reshape::<(...)>()` to the shape you mean"
)]
pub trait Flatten {
    /// The result shape.
    type Out: Shape;
}
impl<A: Dim, B: Dim + DimMul<T>, T: Dim> Flatten for (A, B, T) {
    type Out = (A, <B as DimMul<T>>::Out);
}
impl<A: Dim, B: Dim + DimMul<T>, T: Dim, V: Dim> Flatten for (A, B, T, V)
where
    <B as DimMul<T>>::Out: DimMul<V>,
{
    type Out = (A, <<B as DimMul<T>>::Out as DimMul<V>>::Out);
}

/// `transpose::<I, J>()`'s result shape.
#[diagnostic::on_unimplemented(
    message = "Dimension out of range (transpose::<{I}, {J}> of a tensor of shape `{Self}`)",
    label = "dimension {I} or {J} is not in this shape",
    note = "dimensions count from 0: a tensor of rank r has dimensions 0 to r - 1"
)]
pub trait Transpose<const I: usize, const J: usize> {
    /// The result shape.
    type Out: Shape;
}

/// `permute::<(C<i>, ...)>()`'s result shape.
#[diagnostic::on_unimplemented(
    message = "permute(): `{P}` is not an order of the dimensions of a tensor of shape `{Self}`",
    label = "`{P}` is not an order of the dimensions of `{Self}`",
    note = "give each dimension exactly once: `permute::<(C<2>, C<0>, C<1>)>()` for a tensor of rank 3"
)]
pub trait Permute<P> {
    /// The result shape.
    type Out: Shape;
}

/// `cat::<DIM>`'s result shape: the sum at `DIM` (typenum), the receiver's sizes elsewhere.
pub trait CatShape<S2, const DIM: usize> {
    /// The result shape.
    type Out: Shape;
}
/// `cat::<DIM>`'s check: every other pair of static sizes equal.
pub trait CatShapeOk<S2, const DIM: usize> {}

/// One size of `cat::<DIM>` at dimension `AT != DIM`: checked when both are static.
pub trait CatDimOk<B, const DIM: usize, const AT: usize> {}
impl<const A: usize, const B: usize, const DIM: usize, const AT: usize> CatDimOk<C<B>, DIM, AT>
    for C<A>
where
    (): CatSizes<DIM, AT, A, B>,
{
}
impl<B, const DIM: usize, const AT: usize> CatDimOk<B, DIM, AT> for Dyn {}
impl<const A: usize, const DIM: usize, const AT: usize> CatDimOk<Dyn, DIM, AT> for C<A> {}

/// The second tensor of `cat::<DIM>` on a receiver of shape `S` (the check).
pub trait Cats<S, const DIM: usize>: ShapeOf {}
impl<S: CatShapeOk<R::Shape, DIM>, R: ShapeOf, const DIM: usize> Cats<S, DIM> for R {}

/// The shape of `cat::<DIM>` of a receiver of shape `S` and this tensor.
pub trait CatOut<S, const DIM: usize>: ShapeOf {
    /// The result shape.
    type Out: Shape;
}
impl<S: CatShape<R::Shape, DIM>, R: ShapeOf, const DIM: usize> CatOut<S, DIM> for R {
    type Out = <S as CatShape<R::Shape, DIM>>::Out;
}

/// `stack`'s check: the shapes are equal where both sizes are static (and of one rank).
#[diagnostic::on_unimplemented(
    message = "stack expects each tensor to be equal size, but got `{Self}` at entry 0 and `{S2}` at entry 1",
    label = "this tensor has another rank",
    note = "`stack` joins tensors of one shape along a new dimension; `cat` joins along an existing one"
)]
pub trait StackShapeOk<S2> {}

/// One pair of sizes of `stack` (at dimension `AT` of shapes `S1` and `S2`): checked when both
/// are static.
pub trait StackDimOk<B, const AT: usize, S1, S2> {}
impl<const A: usize, const B: usize, const AT: usize, S1, S2> StackDimOk<C<B>, AT, S1, S2> for C<A> where
    (): StackSizes<S1, S2, AT, A, B>
{
}
impl<B, const AT: usize, S1, S2> StackDimOk<B, AT, S1, S2> for Dyn {}
impl<const A: usize, const AT: usize, S1, S2> StackDimOk<Dyn, AT, S1, S2> for C<A> {}

/// The second tensor of `stack` on a receiver of shape `S` (the check).
pub trait Stacks<S>: ShapeOf {}
impl<S: StackShapeOk<R::Shape>, R: ShapeOf> Stacks<S> for R {}

/// An index of `index_select`: a vector (the check).
pub trait Indexes: ShapeOf {}
impl<R: ShapeOf> Indexes for R where (): IndexIsVector<R::Shape> {}

/// The shape `index_select` over dim `DIM` of `S` with index `R` gives: dim `DIM` becomes the
/// index's length.
pub type Selected<S, const DIM: usize, R> =
    <S as HasDim<DIM>>::Replaced<<<R as ShapeOf>::Shape as IndexLen>::Len>;

/// The length of an index of `index_select`: its size when it is a vector (and [`Dyn`] for
/// another rank, which [`Indexes`] rejects), so that the result type always exists.
pub trait IndexLen {
    /// The length.
    type Len: Dim;
}
impl IndexLen for () {
    type Len = Dyn;
}
impl<L: Dim> IndexLen for (L,) {
    type Len = L;
}
impl<A, B> IndexLen for (A, B) {
    type Len = Dyn;
}
impl<A, B, T> IndexLen for (A, B, T) {
    type Len = Dyn;
}
impl<A, B, T, V> IndexLen for (A, B, T, V) {
    type Len = Dyn;
}

/// `S2`'s sizes as PyTorch's `reshape` takes them: a [`Dyn`] size is `-1`.
fn minus_one_for_dyn<S2: Shape>() -> Vec<isize> {
    S2::sizes()
        .iter()
        .map(|s| s.map_or(-1, |s| s as isize))
        .collect()
}

impl<D: Device, E: Element, S: Shape> Shaped<D, E, S> {
    /// The same elements in shape `S2` (`reshape`; a [`Dyn`] size is PyTorch's `-1`). The
    /// element counts are checked at compile time where both are static.
    pub fn try_reshape<S2: Shape>(&self) -> Result<Shaped<D, E, S2>>
    where
        S: ReshapesTo<S2>,
    {
        self.tensor
            .try_reshape(&minus_one_for_dyn::<S2>())
            .map(Shaped::wrap)
    }

    /// `reshape` to `S2`; see [`try_reshape`](Self::try_reshape).
    ///
    /// Panics with the error's text where [`try_reshape`](Self::try_reshape) returns it.
    #[track_caller]
    pub fn reshape<S2: Shape>(&self) -> Shaped<D, E, S2>
    where
        S: ReshapesTo<S2>,
    {
        super::or_panic(self.try_reshape())
    }

    /// The same elements viewed in shape `S2` (`view`: no copy; a non-contiguous tensor is the
    /// run-time error it is in PyTorch). Element counts checked as in
    /// [`try_reshape`](Self::try_reshape).
    pub fn try_view<S2: Shape>(&self) -> Result<Shaped<D, E, S2>>
    where
        S: ReshapesTo<S2>,
    {
        self.tensor
            .try_view(&minus_one_for_dyn::<S2>())
            .map(Shaped::wrap)
    }

    /// `view` as `S2`; see [`try_view`](Self::try_view).
    ///
    /// Panics with the error's text where [`try_view`](Self::try_view) returns it.
    #[track_caller]
    pub fn view<S2: Shape>(&self) -> Shaped<D, E, S2>
    where
        S: ReshapesTo<S2>,
    {
        super::or_panic(self.try_view())
    }

    /// `flatten(1, -1)` (`nn.Flatten`): `[b, h, w]` to `[b, h * w]`, the size in the type.
    ///
    /// The result shape is a method parameter fixed by the bound (`O` is never written): with
    /// no parameter, rustc would test the bound while looking the method up, and a wrong rank
    /// would read "the method `flatten` exists ... but its trait bounds were not satisfied"
    /// instead of [`Flatten`]'s sentence.
    pub fn flatten<O: Shape>(&self) -> Shaped<D, E, O>
    where
        S: Flatten<Out = O>,
    {
        Shaped::wrap(self.tensor.flatten(1, -1))
    }

    /// Dimensions `I` and `J` swapped.
    pub fn transpose<const I: usize, const J: usize>(&self) -> Shaped<D, E, S::Out>
    where
        S: Transpose<I, J>,
    {
        Shaped::wrap(self.tensor.transpose(I as isize, J as isize))
    }

    /// The dimensions in the order `P`, written `(C<2>, C<0>, C<1>)`.
    pub fn permute<P: Shape>(&self) -> Shaped<D, E, S::Out>
    where
        S: Permute<P>,
    {
        let order: Vec<isize> = P::sizes().iter().map(|s| s.unwrap_or(0) as isize).collect();
        Shaped::wrap(self.tensor.permute(&order))
    }

    /// `torch.cat([self, other], DIM)`, written `a.cat(Axis::<1>, &b)` (the dim first: given after, rustc would infer it from the sizes): the size at `DIM` is the sum (in the type); the other
    /// sizes are checked at compile time where both are static.
    pub fn try_cat<const DIM: usize, R>(
        &self,
        _dim: Axis<DIM>,
        other: R,
    ) -> Result<Shaped<D, E, R::Out>>
    where
        R: ArgumentOn<D> + ElementIs<E> + Cats<S, DIM> + CatOut<S, DIM>,
    {
        Tensor::try_cat(
            [&self.tensor, &super::typed_on(&other, self.device())],
            DIM as isize,
        )
        .map(Shaped::wrap)
    }

    /// `torch.cat([self, other], DIM)`; see [`try_cat`](Self::try_cat).
    ///
    /// Panics with the error's text where [`try_cat`](Self::try_cat) returns it.
    #[track_caller]
    pub fn cat<const DIM: usize, R>(&self, dim: Axis<DIM>, other: R) -> Shaped<D, E, R::Out>
    where
        R: ArgumentOn<D> + ElementIs<E> + Cats<S, DIM> + CatOut<S, DIM>,
    {
        super::or_panic(self.try_cat(dim, other))
    }

    /// `torch.stack([self, other], DIM)`, written `a.stack(Axis::<0>, &b)`: a new dimension of
    /// size 2 at `DIM` (in the type); the shapes are checked at compile time where both sizes
    /// are static, at run time (PyTorch's text) where one is [`Dyn`].
    pub fn try_stack<const DIM: usize, R>(
        &self,
        _dim: Axis<DIM>,
        other: R,
    ) -> Result<Shaped<D, E, S::Inserted<C<2>>>>
    where
        S: HasGap<DIM>,
        S::Inserted<C<2>>: Shape,
        R: ArgumentOn<D> + ElementIs<E> + Stacks<S>,
    {
        Tensor::try_stack(
            [&self.tensor, &super::typed_on(&other, self.device())],
            DIM as isize,
        )
        .map(Shaped::wrap)
    }

    /// `torch.stack([self, other], DIM)`; see [`try_stack`](Self::try_stack).
    ///
    /// Panics with the error's text where [`try_stack`](Self::try_stack) returns it.
    #[track_caller]
    pub fn stack<const DIM: usize, R>(
        &self,
        dim: Axis<DIM>,
        other: R,
    ) -> Shaped<D, E, S::Inserted<C<2>>>
    where
        S: HasGap<DIM>,
        S::Inserted<C<2>>: Shape,
        R: ArgumentOn<D> + ElementIs<E> + Stacks<S>,
    {
        super::or_panic(self.try_stack(dim, other))
    }

    /// `torch.stack(tensors, DIM)` of `N` tensors of this one type, written
    /// `Shaped::stack_all(Axis::<0>, [&a, &b, &c])`: a new dimension of size `N` at `DIM`. Their
    /// static sizes agree by type; the [`Dyn`] ones are checked at run time.
    pub fn try_stack_all<const DIM: usize, const N: usize>(
        _dim: Axis<DIM>,
        tensors: [&Self; N],
    ) -> Result<Shaped<D, E, S::Inserted<C<N>>>>
    where
        S: HasGap<DIM>,
        S::Inserted<C<N>>: Shape,
    {
        Tensor::try_stack(tensors.map(|t| &t.tensor), DIM as isize).map(Shaped::wrap)
    }

    /// `torch.stack(tensors, DIM)`; see [`try_stack_all`](Self::try_stack_all).
    ///
    /// Panics with the error's text where [`try_stack_all`](Self::try_stack_all) returns it.
    #[track_caller]
    pub fn stack_all<const DIM: usize, const N: usize>(
        dim: Axis<DIM>,
        tensors: [&Self; N],
    ) -> Shaped<D, E, S::Inserted<C<N>>>
    where
        S: HasGap<DIM>,
        S::Inserted<C<N>>: Shape,
    {
        super::or_panic(Self::try_stack_all(dim, tensors))
    }

    /// The entries of dimension `DIM` at `index` (`x.index_select(Axis::<0>, &i)`): that size
    /// becomes the index's. The dim must exist and the index be a vector (at compile time).
    pub fn try_index_select<const DIM: usize, R>(
        &self,
        _dim: Axis<DIM>,
        index: R,
    ) -> Result<Shaped<D, E, Selected<S, DIM, R>>>
    where
        S: HasDim<DIM>,
        Selected<S, DIM, R>: Shape,
        R: ArgumentOn<D> + HasDevice<Element = i64> + Indexes,
        R::Shape: IndexLen,
    {
        self.tensor
            .try_index_select(DIM as isize, index)
            .map(Shaped::wrap)
    }

    /// `index_select`; see [`try_index_select`](Self::try_index_select).
    ///
    /// Panics with the error's text where [`try_index_select`](Self::try_index_select) returns
    /// it.
    #[track_caller]
    pub fn index_select<const DIM: usize, R>(
        &self,
        dim: Axis<DIM>,
        index: R,
    ) -> Shaped<D, E, Selected<S, DIM, R>>
    where
        S: HasDim<DIM>,
        Selected<S, DIM, R>: Shape,
        R: ArgumentOn<D> + HasDevice<Element = i64> + Indexes,
        R::Shape: IndexLen,
    {
        super::or_panic(self.try_index_select(dim, index))
    }
}

// ---------------------------------------------------------------------------------------------
// Reductions and softmax.

macro_rules! reduce {
    ($($(#[$doc:meta])* $bound:ident $name:ident $keep:ident => $dynamic:expr, $dynamic_keep:expr;)*) => {
        $(
            impl<D: Device, E: $bound, S: Shape> Shaped<D, E, S> {
                $(#[$doc])*
                /// Dimension `DIM` disappears.
                #[track_caller]
                pub fn $name<const DIM: usize>(&self) -> Shaped<D, E, S::Removed>
                where
                    S: HasDim<DIM>,
                    S::Removed: Shape,
                {
                    let f: fn(&Tensor<D, E>, isize) -> Tensor<D, E> = $dynamic;
                    Shaped::wrap(f(&self.tensor, DIM as isize))
                }

                $(#[$doc])*
                /// Dimension `DIM` stays, of size 1 (`keepdim=True`).
                #[track_caller]
                pub fn $keep<const DIM: usize>(&self) -> Shaped<D, E, S::Kept>
                where
                    S: HasDim<DIM>,
                    S::Kept: Shape,
                {
                    let f: fn(&Tensor<D, E>, isize) -> Tensor<D, E> = $dynamic_keep;
                    Shaped::wrap(f(&self.tensor, DIM as isize))
                }
            }
        )*
    };
}

reduce! {
    /// The sum over dimension `DIM`.
    Numeric sum sum_keepdim => |t, d| t.sum_dim(d), |t, d| t.sum_dims(&[d], true);
    /// The mean over dimension `DIM`.
    Float mean mean_keepdim => |t, d| t.mean_dim(d), |t, d| t.mean_dims(&[d], true);
    /// The maximum over dimension `DIM`.
    Numeric max max_keepdim => |t, d| t.max(d).values, |t, d| t.max_keepdim(d).values;
}

impl<D: Device, E: Numeric, S: Shape> Shaped<D, E, S> {
    /// The sum of every element: shape `()`.
    pub fn sum_all(&self) -> Shaped<D, E, ()> {
        Shaped::wrap(self.tensor.sum_all())
    }

    /// The index of the maximum over dimension `DIM`, which disappears.
    pub fn argmax<const DIM: usize>(&self) -> Shaped<D, i64, S::Removed>
    where
        S: HasDim<DIM>,
        S::Removed: Shape,
    {
        Shaped::wrap(self.tensor.argmax(DIM as isize))
    }
}

impl<D: Device, E: Float, S: Shape> Shaped<D, E, S> {
    /// The mean of every element: shape `()`.
    pub fn mean_all(&self) -> Shaped<D, E, ()> {
        Shaped::wrap(self.tensor.mean_all())
    }

    /// `softmax` over dimension `DIM` (which must exist); same shape.
    pub fn softmax<const DIM: usize>(&self) -> Self
    where
        S: HasDim<DIM>,
    {
        Shaped::wrap(self.tensor.softmax(DIM as isize))
    }

    /// `log_softmax` over dimension `DIM` (which must exist); same shape.
    pub fn log_softmax<const DIM: usize>(&self) -> Self
    where
        S: HasDim<DIM>,
    {
        Shaped::wrap(self.tensor.log_softmax(DIM as isize))
    }
}

/// The batch sizes of logits and targets: checked when both are static.
pub trait BatchAgree<N2> {}
impl<const N: usize, const M: usize> BatchAgree<C<M>> for C<N> where (): BatchSizes<N, M> {}
impl<N2> BatchAgree<N2> for Dyn {}
impl<const N: usize> BatchAgree<Dyn> for C<N> {}

/// Targets for logits `[n, classes]` (the check of `cross_entropy`).
pub trait TargetsFor<N>: ShapeOf {}
impl<N: Dim + BatchAgree<N2>, N2: Dim, R: ShapeOf<Shape = (N2,)>> TargetsFor<N> for R {}

impl<D: Device, E: Float, N: Dim, K: Dim> Shaped<D, E, (N, K)> {
    /// The mean cross-entropy of logits `[n, classes]` and class indices `[n]`; the batch sizes
    /// are checked at compile time where both are static.
    pub fn try_cross_entropy<R>(&self, targets: R) -> Result<Shaped<D, E, ()>>
    where
        R: ArgumentOn<D> + HasDevice<Element = i64> + TargetsFor<N>,
    {
        self.tensor.try_cross_entropy(targets).map(Shaped::wrap)
    }

    /// The mean cross-entropy; see [`try_cross_entropy`](Self::try_cross_entropy).
    ///
    /// Panics with the error's text where [`try_cross_entropy`](Self::try_cross_entropy)
    /// returns it.
    #[track_caller]
    pub fn cross_entropy<R>(&self, targets: R) -> Shaped<D, E, ()>
    where
        R: ArgumentOn<D> + HasDevice<Element = i64> + TargetsFor<N>,
    {
        super::or_panic(self.try_cross_entropy(targets))
    }
}

impl<D: Device, E: Float> Shaped<D, E, ()> {
    /// The value, on the host.
    pub fn item(&self) -> E
    where
        D: crate::device::HostSync,
    {
        self.tensor.item()
    }

    /// Back-propagates from this scalar (see [`Tensor::backward`]).
    pub fn backward(&self) {
        self.tensor.backward()
    }
}
