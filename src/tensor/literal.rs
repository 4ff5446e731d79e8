//! `tensor!`: a tensor from nested array literals, the shape read from the nesting.

use super::Tensor;
use crate::core::error::Result;
use crate::core::Element;
use crate::device::Device;

/// A value `tensor!` takes: an element (a 0-dim tensor) or an array of them, nested. Arrays of
/// unequal lengths are not one type, so ragged input does not compile.
pub trait TensorLiteral {
    /// The element type.
    type Element: Element;
    /// Appends the sizes of the nesting, outermost first.
    fn literal_shape(&self, shape: &mut Vec<usize>);
    /// Appends the elements in row-major order.
    fn literal_values(&self, out: &mut Vec<Self::Element>);
}

impl<E: Element> TensorLiteral for E {
    type Element = E;
    fn literal_shape(&self, _: &mut Vec<usize>) {}
    fn literal_values(&self, out: &mut Vec<E>) {
        out.push(*self);
    }
}

impl<T: TensorLiteral, const N: usize> TensorLiteral for [T; N] {
    type Element = T::Element;
    fn literal_shape(&self, shape: &mut Vec<usize>) {
        shape.push(N);
        // An empty level stops here: PyTorch's `tensor([])` is 1-dim of 0 as well.
        if let Some(first) = self.first() {
            first.literal_shape(shape);
        }
    }
    fn literal_values(&self, out: &mut Vec<T::Element>) {
        for x in self {
            x.literal_values(out);
        }
    }
}

impl<D: Device, E: Element> Tensor<D, E> {
    /// The tensor a [`tensor!`](crate::tensor!) literal writes: `data`'s nesting is the shape.
    pub fn try_from_literal<L: TensorLiteral<Element = E>>(data: &L, dev: D) -> Result<Self> {
        let mut shape = Vec::new();
        data.literal_shape(&mut shape);
        let mut values = Vec::with_capacity(shape.iter().product());
        data.literal_values(&mut values);
        if values.is_empty() {
            shape.truncate(1);
            shape.resize(1, 0);
        }
        Self::try_from_vec(values, &shape[..], dev)
    }

    /// The tensor a [`tensor!`](crate::tensor!) literal writes.
    ///
    /// Panics where [`try_from_literal`](Self::try_from_literal) returns an error (a host
    /// out of memory, a failed upload).
    #[track_caller]
    pub fn from_literal<L: TensorLiteral<Element = E>>(data: &L, dev: D) -> Self {
        match Self::try_from_literal(data, dev) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
}

/// A tensor from a nested array literal on a device, the shape read from the nesting
/// (PyTorch's `torch.tensor([[1., 2.], [3., 4.]], device=dev)`). Ragged rows do not compile.
/// The element type is the literal's: write `1f32` (or name the result's type) for `f32`,
/// since Rust's untyped float literals are `f64`.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::tensor;
/// let x: Tensor<Cpu, f32> = tensor!([[1., 2.], [3., 4.]], Cpu);
/// assert_eq!(x.shape(), &[2, 2]);
/// assert_eq!(x.to_vec(), [1.0, 2.0, 3.0, 4.0]);
/// let i = tensor!([[1i64], [2], [3]], Cpu);
/// assert_eq!(i.shape(), &[3, 1]);
/// let s = tensor!(2.5f64, Cpu);
/// assert_eq!(s.shape(), &[] as &[usize]);
/// ```
///
/// ```compile_fail
/// use devtype::prelude::*;
/// let ragged = devtype::tensor!([[1f32, 2.], [3.]], Cpu);
/// ```
#[macro_export]
macro_rules! tensor {
    ($data:expr, $dev:expr $(,)?) => {
        $crate::Tensor::from_literal(&$data, $dev)
    };
}
