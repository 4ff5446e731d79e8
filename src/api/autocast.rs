//! Autocast: matrix products in half precision inside a scope, everything else as written
//! (PyTorch's `torch.autocast`).
//!
//! Inside [`autocast`], `matmul`, `bmm`, `linear`, `conv1d` and `conv2d` on `f32` operands round their operands
//! to the scope's type (`f16` or `bf16`), multiply them there (accumulating in `f32`, as
//! cuBLAS and PyTorch do), round the product once to the low type and hand it back widened to
//! `f32`. The casts are recorded, so gradients come back in `f32` to the `f32` parameters
//! (the "master weights"). Softmax, losses, reductions and element-wise ops are not touched:
//! they run in `f32`, which is where PyTorch's autocast puts them too.
//!
//! Why the result is `f32` and not the low type, as in PyTorch: in devtype the element type is
//! part of the tensor's type, so a scope cannot change what `Linear<D, f32>::forward` returns.
//! The values are exactly PyTorch's (a low-precision product, rounded once); what differs is
//! that activations between layers are stored in `f32`.

use crate::core::error::{Error, Result};
use crate::core::DType;
use crate::graph::{In, Out};
use std::cell::Cell;

thread_local! {
    static AUTOCAST: Cell<Option<DType>> = const { Cell::new(None) };
}

/// An element type autocast can run products in: `f16` or `bf16`.
pub trait LowPrecision: crate::core::Float {}
impl LowPrecision for half::f16 {}
impl LowPrecision for half::bf16 {}

/// Runs `f` with matrix products in `E` (`f16` or `bf16`) on this thread, as PyTorch's
/// `with torch.autocast(device_type, dtype=E):`. Scopes nest; the innermost wins, and the
/// previous setting comes back when `f` returns or panics.
///
/// ```
/// use devtype::amp::autocast;
/// use devtype::nn::Linear;
/// use devtype::prelude::*;
///
/// let model = Linear::new(10, 2, Cpu);
/// let x = Tensor::randn([4, 10], Cpu);
/// let out = autocast::<bf16, _>(|| model.forward(&x)); // a bf16 product, f32 parameters
/// let exact = model.forward(&x);
/// assert!((&out - &exact).abs().max_all().item() < 0.05);
/// ```
pub fn autocast<E: LowPrecision, R>(f: impl FnOnce() -> R) -> R {
    let _guard = AutocastGuard::enter(Some(E::DTYPE));
    f()
}

/// [`autocast`] with the type as a run-time value (`DType::F16` or `DType::BF16`), for the
/// `DynTensor` front. Any other type is an `Err`, and `f` does not run.
pub fn autocast_dtype<R>(dtype: DType, f: impl FnOnce() -> R) -> Result<R> {
    if !matches!(dtype, DType::F16 | DType::BF16) {
        return Err(Error::Autograd(format!(
            "autocast runs products in Half or BFloat16, not {}",
            dtype.scalar_type_name()
        )));
    }
    let _guard = AutocastGuard::enter(Some(dtype));
    Ok(f())
}

/// The type products run in on this thread, if inside an [`autocast`] scope.
#[inline]
pub fn autocast_type() -> Option<DType> {
    AUTOCAST.with(Cell::get)
}

/// Restores the previous setting when dropped, also on a panic.
struct AutocastGuard {
    previous: Option<DType>,
}

impl AutocastGuard {
    fn enter(dtype: Option<DType>) -> Self {
        AutocastGuard {
            previous: AUTOCAST.with(|c| c.replace(dtype)),
        }
    }
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        AUTOCAST.with(|c| c.set(self.previous));
    }
}

/// The low type a product of these operands runs in: `Some` inside a scope when every operand
/// is `f32` (PyTorch casts only `float32` operands; other types run as they are).
#[inline]
pub(crate) fn product_type(operands: &[In<'_>]) -> Option<DType> {
    let low = autocast_type()?;
    operands
        .iter()
        .all(|t| t.value.dtype == DType::F32)
        .then_some(low)
}

/// Runs `op` on the operands cast to `low` (casts recorded), and casts its result back to
/// `f32` (recorded too): the product rounded once to `low`, in an `f32` tensor.
pub(crate) fn in_low<const N: usize>(
    low: DType,
    operands: [In<'_>; N],
    op: impl FnOnce([In<'_>; N]) -> Result<Out>,
) -> Result<Out> {
    let cast: Vec<Out> = operands
        .iter()
        .map(|t| super::copy::cast(*t, low))
        .collect::<Result<_>>()?;
    let inputs: [In<'_>; N] = std::array::from_fn(|i| cast[i].input());
    let out = op(inputs)?;
    super::copy::cast(out.input(), DType::F32)
}
