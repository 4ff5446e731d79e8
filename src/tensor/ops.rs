//! The typed front of every op: methods with `try_` twins, and `std::ops` operators.
//! Device agreement is proven by the types, so nothing here checks devices at run time.

use super::operand::{HasDevice, OperandOn};
use super::{infallible, Element, Float, Numeric, Tensor};
use crate::core::error::Result;
use crate::core::raw::{Operand, RawTensor};
use crate::device::Device;
use crate::ops::{self, BinaryOp, CompareOp, ReduceOp, UnaryOp};
use std::ops::{Add, Div, Mul, Neg, Sub};

/// Tensors to join with [`Tensor::cat`] or [`Tensor::stack`]: a slice or `Vec` of tensors or
/// references, or a tuple `(&a, &b, ...)` whose later members must be on the first one's device.
pub trait TensorList<D: Device, E: Element> {
    #[doc(hidden)]
    fn collect_raw(&self) -> Vec<&RawTensor>;
}

impl<D: Device, E: Element> TensorList<D, E> for [Tensor<D, E>] {
    fn collect_raw(&self) -> Vec<&RawTensor> {
        self.iter().map(|t| &t.raw).collect()
    }
}
impl<D: Device, E: Element> TensorList<D, E> for [&Tensor<D, E>] {
    fn collect_raw(&self) -> Vec<&RawTensor> {
        self.iter().map(|t| &t.raw).collect()
    }
}
impl<D: Device, E: Element, const N: usize> TensorList<D, E> for [&Tensor<D, E>; N] {
    fn collect_raw(&self) -> Vec<&RawTensor> {
        self.iter().map(|t| &t.raw).collect()
    }
}
impl<D: Device, E: Element> TensorList<D, E> for Vec<Tensor<D, E>> {
    fn collect_raw(&self) -> Vec<&RawTensor> {
        self.iter().map(|t| &t.raw).collect()
    }
}
impl<D: Device, E: Element, T: TensorList<D, E> + ?Sized> TensorList<D, E> for &T {
    fn collect_raw(&self) -> Vec<&RawTensor> {
        (**self).collect_raw()
    }
}

macro_rules! tuple_list {
    ($first:ident $(, $rest:ident)*) => {
        impl<$first: HasDevice $(, $rest: OperandOn<$first::Device> + HasDevice<Element = $first::Element>)*>
            TensorList<$first::Device, $first::Element> for ($first, $($rest,)*)
        {
            #[allow(non_snake_case)]
            fn collect_raw(&self) -> Vec<&RawTensor> {
                let ($first, $($rest,)*) = self;
                vec![$first.raw() $(, $rest.raw())*]
            }
        }
    };
}
tuple_list!(A);
tuple_list!(A, B);
tuple_list!(A, B, C);
tuple_list!(A, B, C, F);
tuple_list!(A, B, C, F, G);
tuple_list!(A, B, C, F, G, H);

/// Defines `try_x(&self) -> Result<Self>` and `x(&self) -> Self` for a unary op.
macro_rules! unary_ops {
    ($bound:ident: $($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl<D: Device, E: $bound> Tensor<D, E> {
            $(
                paste::paste! {
                    $(#[$doc])*
                    pub fn [<try_ $name>](&self) -> Result<Self> {
                        Ok(self.wrap(ops::unary::unary(Operand::Borrowed(&self.raw), UnaryOp::$op)?))
                    }
                }
                infallible!($(#[$doc])* pub fn $name(&self) -> Self);
            )*
        }
    };
}

unary_ops!(Numeric:
    /// `max(x, 0)` element-wise.
    relu => Relu,
    /// `|x|` element-wise.
    abs => Abs,
    /// `x * x` element-wise.
    square => Square,
);
unary_ops!(Float:
    /// `e^x` element-wise.
    exp => Exp,
    /// Natural logarithm element-wise.
    log => Log,
    /// Square root element-wise.
    sqrt => Sqrt,
    /// Hyperbolic tangent element-wise.
    tanh => Tanh,
    /// Logistic sigmoid element-wise.
    sigmoid => Sigmoid,
    /// `1 / x` element-wise.
    reciprocal => Reciprocal,
);

impl<D: Device, E: Numeric> Tensor<D, E> {
    /// `-x`, the fallible form of the `-` operator.
    pub fn try_neg(&self) -> Result<Self> {
        Ok(self.wrap(ops::unary::unary(
            Operand::Borrowed(&self.raw),
            UnaryOp::Neg,
        )?))
    }

    /// `relu` that reuses this tensor's buffer when nothing else holds it.
    pub fn try_relu_owned(self) -> Result<Self> {
        let device = self.device;
        Ok(Tensor::from_raw(
            ops::unary::unary(Operand::Owned(self.raw), UnaryOp::Relu)?,
            device,
        ))
    }

    /// `relu` on an owned tensor, writing in place when nothing else holds its buffer:
    /// `(x + y).relu_owned()` makes one pass over fresh memory instead of two.
    #[track_caller]
    pub fn relu_owned(self) -> Self {
        match self.try_relu_owned() {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    #[inline]
    fn binary<R: OperandOn<D> + HasDevice<Element = E>>(
        lhs: Operand<'_>,
        rhs: R,
        op: BinaryOp,
        device: D,
    ) -> Result<Self> {
        ops::binary::binary(lhs, rhs.into_operand(), op).map(|raw| Tensor::from_raw(raw, device))
    }

    /// `self + rhs` with broadcasting: the fallible form of `+`.
    pub fn try_add<R: OperandOn<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        Self::binary(
            Operand::Borrowed(&self.raw),
            rhs,
            BinaryOp::Add,
            self.device,
        )
    }
    /// `self - rhs` with broadcasting: the fallible form of `-`.
    pub fn try_sub<R: OperandOn<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        Self::binary(
            Operand::Borrowed(&self.raw),
            rhs,
            BinaryOp::Sub,
            self.device,
        )
    }
    /// `self * rhs` with broadcasting: the fallible form of `*`.
    pub fn try_mul<R: OperandOn<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        Self::binary(
            Operand::Borrowed(&self.raw),
            rhs,
            BinaryOp::Mul,
            self.device,
        )
    }
    /// `self / rhs` with broadcasting (floating point only): the fallible form of `/`.
    pub fn try_div<R: OperandOn<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        Self::binary(
            Operand::Borrowed(&self.raw),
            rhs,
            BinaryOp::Div,
            self.device,
        )
    }
    /// The larger of each pair, with broadcasting (`torch.maximum`).
    pub fn try_maximum<R: OperandOn<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        Self::binary(
            Operand::Borrowed(&self.raw),
            rhs,
            BinaryOp::Maximum,
            self.device,
        )
    }
    infallible!(
        /// The larger of each pair, with broadcasting (`torch.maximum`).
        pub fn maximum[R: OperandOn<D> + HasDevice<Element = E>](&self, rhs: R) -> Self
    );
    /// The smaller of each pair, with broadcasting (`torch.minimum`).
    pub fn try_minimum<R: OperandOn<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        Self::binary(
            Operand::Borrowed(&self.raw),
            rhs,
            BinaryOp::Minimum,
            self.device,
        )
    }

    /// `relu(self + rhs)` in one pass, with broadcasting: PyTorch's fused `_add_relu`. The sum
    /// is never written out, so this moves three tensors' worth of memory where
    /// `(a + b).relu()` moves five.
    pub fn try_add_relu<R: OperandOn<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        Self::binary(
            Operand::Borrowed(&self.raw),
            rhs,
            BinaryOp::AddRelu,
            self.device,
        )
    }
    infallible!(
        /// `relu(self + rhs)` in one pass, with broadcasting (PyTorch's fused `_add_relu`).
        ///
        /// ```
        /// use devtype::prelude::*;
        /// let x = Tensor::from_vec(vec![1.0, -3.0], [2], Cpu);
        /// let y = Tensor::from_vec(vec![0.5, 1.0], [2], Cpu);
        /// assert_eq!(x.add_relu(&y).to_vec(), [1.5, 0.0]);
        /// ```
        pub fn add_relu[R: OperandOn<D> + HasDevice<Element = E>](&self, rhs: R) -> Self
    );

    fn scalar_op(&self, s: E, op: BinaryOp, scalar_first: bool) -> Result<Self> {
        Ok(self.wrap(ops::binary::binary_scalar(
            Operand::Borrowed(&self.raw),
            s.to_scalar(),
            op,
            scalar_first,
        )?))
    }
    /// `self + s`.
    pub fn try_add_scalar(&self, s: E) -> Result<Self> {
        self.scalar_op(s, BinaryOp::Add, false)
    }
    /// `self * s`.
    pub fn try_mul_scalar(&self, s: E) -> Result<Self> {
        self.scalar_op(s, BinaryOp::Mul, false)
    }
    /// `self` to the power `s` (floating point only).
    pub fn try_pow_scalar(&self, s: E) -> Result<Self> {
        self.scalar_op(s, BinaryOp::Pow, false)
    }
    infallible!(
        /// `self` to the power `s` (floating point only).
        pub fn pow_scalar(&self, s: E) -> Self
    );
    /// `max(self, s)` element-wise (PyTorch's `clamp_min`).
    pub fn try_clamp_min(&self, s: E) -> Result<Self> {
        self.scalar_op(s, BinaryOp::Maximum, false)
    }
    infallible!(
        /// `max(self, s)` element-wise (PyTorch's `clamp_min`).
        pub fn clamp_min(&self, s: E) -> Self
    );

    /// Sum over dimensions `dims` (all when empty), dropping them unless `keepdim`.
    pub fn try_sum_dims(&self, dims: &[isize], keepdim: bool) -> Result<Self> {
        Ok(self.wrap(ops::reduce::reduce(
            &self.raw,
            dims,
            keepdim,
            ReduceOp::Sum,
        )?))
    }
    infallible!(
        /// Sum over dimensions `dims` (all when empty), dropping them unless `keepdim`.
        pub fn sum_dims(&self, dims: &[isize], keepdim: bool) -> Self
    );
    /// Sum over dimension `dim` (negative counts from the end).
    pub fn try_sum(&self, dim: isize) -> Result<Self> {
        self.try_sum_dims(&[dim], false)
    }
    infallible!(
        /// Sum over dimension `dim` (negative counts from the end).
        pub fn sum(&self, dim: isize) -> Self
    );
    /// Sum of all elements, as a 0-dimensional tensor.
    pub fn try_sum_all(&self) -> Result<Self> {
        self.try_sum_dims(&[], false)
    }
    infallible!(
        /// Sum of all elements, as a 0-dimensional tensor.
        pub fn sum_all(&self) -> Self
    );
    /// Largest element over `dim`.
    pub fn try_max(&self, dim: isize) -> Result<Self> {
        Ok(self.wrap(ops::reduce::reduce(
            &self.raw,
            &[dim],
            false,
            ReduceOp::Max,
        )?))
    }
    infallible!(
        /// Largest element over `dim`.
        pub fn max(&self, dim: isize) -> Self
    );
    /// Largest element over `dim`, keeping it as size 1.
    pub fn try_max_keepdim(&self, dim: isize) -> Result<Self> {
        Ok(self.wrap(ops::reduce::reduce(&self.raw, &[dim], true, ReduceOp::Max)?))
    }
    infallible!(
        /// Largest element over `dim`, keeping it as size 1.
        pub fn max_keepdim(&self, dim: isize) -> Self
    );
    /// Largest element of all.
    pub fn try_max_all(&self) -> Result<Self> {
        Ok(self.wrap(ops::reduce::reduce(&self.raw, &[], false, ReduceOp::Max)?))
    }
    infallible!(
        /// Largest element of all.
        pub fn max_all(&self) -> Self
    );
    /// Smallest element over `dim`.
    pub fn try_min(&self, dim: isize) -> Result<Self> {
        Ok(self.wrap(ops::reduce::reduce(
            &self.raw,
            &[dim],
            false,
            ReduceOp::Min,
        )?))
    }
    infallible!(
        /// Smallest element over `dim`.
        pub fn min(&self, dim: isize) -> Self
    );
    /// Index of the largest element over `dim` (the first one on ties).
    pub fn try_argmax(&self, dim: isize) -> Result<Tensor<D, i64>> {
        Ok(self.wrap(ops::reduce::arg_reduce(&self.raw, dim, false, true)?))
    }
    infallible!(
        /// Index of the largest element over `dim` (the first one on ties).
        pub fn argmax(&self, dim: isize) -> Tensor<D, i64>
    );
    /// Index of the smallest element over `dim`.
    pub fn try_argmin(&self, dim: isize) -> Result<Tensor<D, i64>> {
        Ok(self.wrap(ops::reduce::arg_reduce(&self.raw, dim, false, false)?))
    }
    infallible!(
        /// Index of the smallest element over `dim`.
        pub fn argmin(&self, dim: isize) -> Tensor<D, i64>
    );
}

impl<D: Device, E: Float> Tensor<D, E> {
    /// Mean over dimensions `dims` (all when empty), dropping them unless `keepdim`.
    pub fn try_mean_dims(&self, dims: &[isize], keepdim: bool) -> Result<Self> {
        Ok(self.wrap(ops::reduce::reduce(
            &self.raw,
            dims,
            keepdim,
            ReduceOp::Mean,
        )?))
    }
    infallible!(
        /// Mean over dimensions `dims` (all when empty), dropping them unless `keepdim`.
        pub fn mean_dims(&self, dims: &[isize], keepdim: bool) -> Self
    );
    /// Mean over dimension `dim`.
    pub fn try_mean(&self, dim: isize) -> Result<Self> {
        self.try_mean_dims(&[dim], false)
    }
    infallible!(
        /// Mean over dimension `dim`.
        pub fn mean(&self, dim: isize) -> Self
    );
    /// Mean of all elements, as a 0-dimensional tensor.
    pub fn try_mean_all(&self) -> Result<Self> {
        self.try_mean_dims(&[], false)
    }
    infallible!(
        /// Mean of all elements, as a 0-dimensional tensor.
        pub fn mean_all(&self) -> Self
    );

    /// Matrix product with `torch.matmul`'s rules: 2-D, batched (batch dims broadcast), vectors.
    pub fn try_matmul<R: OperandOn<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        Ok(self.wrap(ops::matmul::matmul(&self.raw, rhs.raw())?))
    }
    infallible!(
        /// Matrix product with `torch.matmul`'s rules: 2-D, batched (batch dims broadcast), vectors.
        ///
        /// ```
        /// use devtype::prelude::*;
        /// let a = Tensor::<Cpu>::ones([4, 10], Cpu);
        /// let b = Tensor::<Cpu>::ones([10, 2], Cpu);
        /// assert_eq!(a.matmul(&b).to_vec(), vec![10.0; 8]);
        /// ```
        pub fn matmul[R: OperandOn<D> + HasDevice<Element = E>](&self, rhs: R) -> Self
    );

    /// Softmax over `dim`.
    pub fn try_softmax(&self, dim: isize) -> Result<Self> {
        Ok(self.wrap(ops::softmax::softmax(&self.raw, dim, false)?))
    }
    infallible!(
        /// Softmax over `dim`.
        pub fn softmax(&self, dim: isize) -> Self
    );
    /// Log-softmax over `dim`, computed stably.
    pub fn try_log_softmax(&self, dim: isize) -> Result<Self> {
        Ok(self.wrap(ops::softmax::softmax(&self.raw, dim, true)?))
    }
    infallible!(
        /// Log-softmax over `dim`, computed stably.
        pub fn log_softmax(&self, dim: isize) -> Self
    );

    /// `self @ weight.T + bias`, fused, as `torch.nn.functional.linear`.
    pub fn try_linear<W: OperandOn<D> + HasDevice<Element = E>>(
        &self,
        weight: W,
        bias: Option<&Tensor<D, E>>,
    ) -> Result<Self> {
        Ok(self.wrap(ops::linear::linear(
            &self.raw,
            weight.raw(),
            bias.map(|b| &b.raw),
        )?))
    }
}

impl<D: Device, E: Element> Tensor<D, E> {
    /// The same elements with another shape; one size may be `-1`. A view when the strides
    /// allow, otherwise a copy (as `torch.reshape`).
    pub fn try_reshape(&self, shape: &[isize]) -> Result<Self> {
        Ok(self.wrap(ops::shape::reshape(&self.raw, shape)?))
    }
    infallible!(
        /// The same elements with another shape; one size may be `-1`. A view when the strides
        /// allow, otherwise a copy (as `torch.reshape`).
        pub fn reshape(&self, shape: &[isize]) -> Self
    );
    /// A view with another shape; fails when that needs a copy (as `torch.Tensor.view`).
    pub fn try_view(&self, shape: &[isize]) -> Result<Self> {
        Ok(self.wrap(ops::shape::view(&self.raw, shape)?))
    }
    infallible!(
        /// A view with another shape; fails when that needs a copy (as `torch.Tensor.view`).
        pub fn view(&self, shape: &[isize]) -> Self
    );
    /// Swaps two dimensions (a view).
    pub fn try_transpose(&self, dim0: isize, dim1: isize) -> Result<Self> {
        Ok(self.wrap(ops::shape::transpose(&self.raw, dim0, dim1)?))
    }
    infallible!(
        /// Swaps two dimensions (a view).
        pub fn transpose(&self, dim0: isize, dim1: isize) -> Self
    );
    /// The transpose of a matrix (a view); vectors and scalars come back unchanged.
    pub fn try_t(&self) -> Result<Self> {
        if self.dims() < 2 {
            return Ok(self.clone());
        }
        if self.dims() > 2 {
            return Err(crate::Error::Shape(format!(
                "t() expects a tensor with <= 2 dimensions, but self is {}D",
                self.dims()
            )));
        }
        self.try_transpose(0, 1)
    }
    infallible!(
        /// The transpose of a matrix (a view); vectors and scalars come back unchanged.
        pub fn t(&self) -> Self
    );
    /// Reorders the dimensions (a view).
    pub fn try_permute(&self, order: &[isize]) -> Result<Self> {
        Ok(self.wrap(ops::shape::permute(&self.raw, order)?))
    }
    infallible!(
        /// Reorders the dimensions (a view).
        pub fn permute(&self, order: &[isize]) -> Self
    );
    /// Inserts a dimension of size 1 (a view).
    pub fn try_unsqueeze(&self, dim: isize) -> Result<Self> {
        Ok(self.wrap(ops::shape::unsqueeze(&self.raw, dim)?))
    }
    infallible!(
        /// Inserts a dimension of size 1 (a view).
        pub fn unsqueeze(&self, dim: isize) -> Self
    );
    /// Removes dimension `dim` if its size is 1 (a view).
    pub fn try_squeeze(&self, dim: isize) -> Result<Self> {
        Ok(self.wrap(ops::shape::squeeze(&self.raw, dim)?))
    }
    infallible!(
        /// Removes dimension `dim` if its size is 1 (a view).
        pub fn squeeze(&self, dim: isize) -> Self
    );
    /// Merges dimensions `start..=end` into one.
    pub fn try_flatten(&self, start: isize, end: isize) -> Result<Self> {
        Ok(self.wrap(ops::shape::flatten(&self.raw, start, end)?))
    }
    infallible!(
        /// Merges dimensions `start..=end` into one.
        pub fn flatten(&self, start: isize, end: isize) -> Self
    );
    /// Elements `start..start + len` along `dim` (a view).
    pub fn try_narrow(&self, dim: isize, start: usize, len: usize) -> Result<Self> {
        Ok(self.wrap(ops::shape::narrow(&self.raw, dim, start, len)?))
    }
    infallible!(
        /// Elements `start..start + len` along `dim` (a view).
        pub fn narrow(&self, dim: isize, start: usize, len: usize) -> Self
    );
    /// Broadcasts to `shape` without copying.
    pub fn try_expand(&self, shape: &[usize]) -> Result<Self> {
        Ok(self.wrap(ops::shape::expand(&self.raw, shape)?))
    }
    infallible!(
        /// Broadcasts to `shape` without copying.
        pub fn expand(&self, shape: &[usize]) -> Self
    );
    /// A contiguous copy, or the same tensor when already contiguous.
    pub fn try_contiguous(&self) -> Result<Self> {
        Ok(self.wrap(self.raw.contiguous()?))
    }
    infallible!(
        /// A contiguous copy, or the same tensor when already contiguous.
        pub fn contiguous(&self) -> Self
    );

    /// Joins tensors along `dim`: `Tensor::cat((&a, &b), 0)` or `Tensor::cat(&v, 0)`.
    pub fn try_cat<L: TensorList<D, E>>(tensors: L, dim: isize) -> Result<Self> {
        let raws = tensors.collect_raw();
        let device = raws
            .first()
            .and_then(|r| D::from_dyn(r.device))
            .ok_or_else(|| {
                crate::Error::Shape("torch.cat(): expected a non-empty list of Tensors".into())
            })?;
        Ok(Tensor::from_raw(ops::cat::cat(&raws, dim)?, device))
    }
    /// Joins tensors along `dim`: `Tensor::cat((&a, &b), 0)` or `Tensor::cat(&v, 0)`.
    ///
    /// Panics with the error's text where [`try_cat`](Self::try_cat) returns it.
    #[track_caller]
    pub fn cat<L: TensorList<D, E>>(tensors: L, dim: isize) -> Self {
        match Self::try_cat(tensors, dim) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
    /// Stacks equally shaped tensors along a new dimension `dim`.
    pub fn try_stack<L: TensorList<D, E>>(tensors: L, dim: isize) -> Result<Self> {
        let raws = tensors.collect_raw();
        let device = raws
            .first()
            .and_then(|r| D::from_dyn(r.device))
            .ok_or_else(|| crate::Error::Shape("stack expects a non-empty TensorList".into()))?;
        Ok(Tensor::from_raw(ops::cat::stack(&raws, dim)?, device))
    }
    /// Stacks equally shaped tensors along a new dimension `dim`.
    ///
    /// Panics with the error's text where [`try_stack`](Self::try_stack) returns it.
    #[track_caller]
    pub fn stack<L: TensorList<D, E>>(tensors: L, dim: isize) -> Self {
        match Self::try_stack(tensors, dim) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    /// Slices along `dim` picked by the 1-D `index` (PyTorch's `index_select`).
    pub fn try_index_select<I: OperandOn<D> + HasDevice<Element = i64>>(
        &self,
        dim: isize,
        index: I,
    ) -> Result<Self> {
        Ok(self.wrap(ops::index::index_select(&self.raw, dim, index.raw())?))
    }
    infallible!(
        /// Slices along `dim` picked by the 1-D `index` (PyTorch's `index_select`).
        pub fn index_select[I: OperandOn<D> + HasDevice<Element = i64>](&self, dim: isize, index: I) -> Self
    );
    /// `out[i][j] = self[i][index[i][j]]` along `dim` (PyTorch's `gather`).
    pub fn try_gather<I: OperandOn<D> + HasDevice<Element = i64>>(
        &self,
        dim: isize,
        index: I,
    ) -> Result<Self> {
        Ok(self.wrap(ops::index::gather(&self.raw, dim, index.raw())?))
    }
    infallible!(
        /// `out[i][j] = self[i][index[i][j]]` along `dim` (PyTorch's `gather`).
        pub fn gather[I: OperandOn<D> + HasDevice<Element = i64>](&self, dim: isize, index: I) -> Self
    );

    fn compare<R: OperandOn<D> + HasDevice<Element = E>>(
        &self,
        rhs: R,
        op: CompareOp,
    ) -> Result<Tensor<D, bool>> {
        Ok(self.wrap(ops::binary::compare(&self.raw, rhs.raw(), op)?))
    }
}

macro_rules! comparisons {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl<D: Device, E: Element> Tensor<D, E> {
            $(
                paste::paste! {
                    $(#[$doc])*
                    pub fn [<try_ $name>]<R: OperandOn<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Tensor<D, bool>> {
                        self.compare(rhs, CompareOp::$op)
                    }
                    $(#[$doc])*
                    pub fn [<try_ $name _scalar>](&self, rhs: E) -> Result<Tensor<D, bool>> {
                        Ok(self.wrap(ops::binary::compare_scalar(&self.raw, rhs.to_scalar(), CompareOp::$op)?))
                    }
                    infallible!($(#[$doc])* pub fn [<$name _scalar>](&self, rhs: E) -> Tensor<D, bool>);
                }
                infallible!($(#[$doc])* pub fn $name[R: OperandOn<D> + HasDevice<Element = E>](&self, rhs: R) -> Tensor<D, bool>);
            )*
        }
    };
}
comparisons!(
    /// Element-wise `==`, as a `bool` tensor.
    eq => Eq,
    /// Element-wise `!=`, as a `bool` tensor.
    ne => Ne,
    /// Element-wise `<`, as a `bool` tensor.
    lt => Lt,
    /// Element-wise `<=`, as a `bool` tensor.
    le => Le,
    /// Element-wise `>`, as a `bool` tensor.
    gt => Gt,
    /// Element-wise `>=`, as a `bool` tensor.
    ge => Ge,
);

impl<D: Device> Tensor<D, bool> {
    /// Elements of `on_true` where `self` holds, else of `on_false`, broadcasting all three
    /// (PyTorch's `torch.where(cond, a, b)`).
    pub fn try_where_cond<E: Element, A, B>(&self, on_true: A, on_false: B) -> Result<Tensor<D, E>>
    where
        A: OperandOn<D> + HasDevice<Element = E>,
        B: OperandOn<D> + HasDevice<Element = E>,
    {
        Ok(self.wrap(ops::where_cond::where_cond(
            &self.raw,
            on_true.raw(),
            on_false.raw(),
        )?))
    }
    /// Elements of `on_true` where `self` holds, else of `on_false`.
    ///
    /// Panics with the error's text where [`try_where_cond`](Self::try_where_cond) returns it.
    #[track_caller]
    pub fn where_cond<E: Element, A, B>(&self, on_true: A, on_false: B) -> Tensor<D, E>
    where
        A: OperandOn<D> + HasDevice<Element = E>,
        B: OperandOn<D> + HasDevice<Element = E>,
    {
        match self.try_where_cond(on_true, on_false) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
}

/// `a op b` for the operators: owned operands lend their buffers to the result.
macro_rules! operator {
    ($trait:ident, $method:ident, $op:ident) => {
        impl<D: Device, E: Numeric, R: OperandOn<D> + HasDevice<Element = E>> $trait<R>
            for Tensor<D, E>
        {
            type Output = Tensor<D, E>;
            #[track_caller]
            fn $method(self, rhs: R) -> Tensor<D, E> {
                let device = self.device;
                match Tensor::binary(Operand::Owned(self.raw), rhs, BinaryOp::$op, device) {
                    Ok(t) => t,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        impl<D: Device, E: Numeric, R: OperandOn<D> + HasDevice<Element = E>> $trait<R>
            for &Tensor<D, E>
        {
            type Output = Tensor<D, E>;
            #[track_caller]
            fn $method(self, rhs: R) -> Tensor<D, E> {
                match Tensor::binary(
                    Operand::Borrowed(&self.raw),
                    rhs,
                    BinaryOp::$op,
                    self.device,
                ) {
                    Ok(t) => t,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        scalar_operand!($trait, $method, $op, f32);
        scalar_operand!($trait, $method, $op, f64);
        scalar_operand!($trait, $method, $op, i64);
        scalar_first!($trait, $method, $op, f32);
        scalar_first!($trait, $method, $op, f64);
        scalar_first!($trait, $method, $op, i64);
    };
}

macro_rules! scalar_operand {
    ($trait:ident, $method:ident, $op:ident, $t:ty) => {
        impl<D: Device> $trait<$t> for Tensor<D, $t> {
            type Output = Tensor<D, $t>;
            #[track_caller]
            fn $method(self, rhs: $t) -> Tensor<D, $t> {
                let device = self.device;
                match ops::binary::binary_scalar(
                    Operand::Owned(self.raw),
                    rhs.to_scalar(),
                    BinaryOp::$op,
                    false,
                ) {
                    Ok(t) => Tensor::from_raw(t, device),
                    Err(e) => panic!("{e}"),
                }
            }
        }
        impl<D: Device> $trait<$t> for &Tensor<D, $t> {
            type Output = Tensor<D, $t>;
            #[track_caller]
            fn $method(self, rhs: $t) -> Tensor<D, $t> {
                match self.scalar_op(rhs, BinaryOp::$op, false) {
                    Ok(t) => t,
                    Err(e) => panic!("{e}"),
                }
            }
        }
    };
}

macro_rules! scalar_first {
    ($trait:ident, $method:ident, $op:ident, $t:ty) => {
        impl<D: Device> $trait<Tensor<D, $t>> for $t {
            type Output = Tensor<D, $t>;
            #[track_caller]
            fn $method(self, rhs: Tensor<D, $t>) -> Tensor<D, $t> {
                let device = rhs.device;
                match ops::binary::binary_scalar(
                    Operand::Owned(rhs.raw),
                    self.to_scalar(),
                    BinaryOp::$op,
                    true,
                ) {
                    Ok(t) => Tensor::from_raw(t, device),
                    Err(e) => panic!("{e}"),
                }
            }
        }
        impl<D: Device> $trait<&Tensor<D, $t>> for $t {
            type Output = Tensor<D, $t>;
            #[track_caller]
            fn $method(self, rhs: &Tensor<D, $t>) -> Tensor<D, $t> {
                match rhs.scalar_op(self, BinaryOp::$op, true) {
                    Ok(t) => t,
                    Err(e) => panic!("{e}"),
                }
            }
        }
    };
}

operator!(Add, add, Add);
operator!(Sub, sub, Sub);
operator!(Mul, mul, Mul);
operator!(Div, div, Div);

impl<D: Device, E: Numeric> Neg for Tensor<D, E> {
    type Output = Tensor<D, E>;
    #[track_caller]
    fn neg(self) -> Tensor<D, E> {
        let device = self.device;
        match ops::unary::unary(Operand::Owned(self.raw), UnaryOp::Neg) {
            Ok(t) => Tensor::from_raw(t, device),
            Err(e) => panic!("{e}"),
        }
    }
}

impl<D: Device, E: Numeric> Neg for &Tensor<D, E> {
    type Output = Tensor<D, E>;
    #[track_caller]
    fn neg(self) -> Tensor<D, E> {
        match self.try_neg() {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
}
