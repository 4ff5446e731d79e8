//! Moves between devices and dtypes, and `where`: `to(dev)` (the gradient moves back to the source
//! device) and `where_cond` (each branch gets the gradient where it was picked).

use super::declare::{Dtypes, OpInfo};
use super::kit;
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::core::{DType, Element};
use crate::device::{CopyTo, Device, DynDevice};
use crate::dyn_tensor::check::same_device_elementwise;
use crate::graph::{record, In, Out};
use crate::ops;
use crate::tensor::operand::sealed::AsRaw;
use crate::tensor::{HasDevice, OperandOn, Tensor};
use crate::DynTensor;

/// `to`, `to_dtype` and `where_cond`, written by hand on both fronts (their result's device or
/// element type is a type parameter, and `where_cond`'s receiver is the mask).
pub(crate) const OPS: &[OpInfo] = &[
    OpInfo::by_hand("to", module_path!(), Dtypes::Element, &["device"]),
    OpInfo::by_hand("to_dtype", module_path!(), Dtypes::Element, &["dtype"]),
    OpInfo::by_hand(
        "where_cond",
        module_path!(),
        Dtypes::Element,
        &["operand", "operand"],
    ),
];

/// `a` on `device`, recorded.
pub(crate) fn to_device(a: In<'_>, device: DynDevice) -> Result<Out> {
    let value = a.value.to_device(device)?;
    let node = record("ToCopyBackward0", &[a.node], |_| {
        let source = a.value.device;
        move |g| Ok(vec![Some(g.to_device(source)?)])
    });
    Ok(Out { value, node })
}

/// `cond ? a : b`, recorded.
pub(crate) fn where_cond(cond: &RawTensor, a: In<'_>, b: In<'_>) -> Result<Out> {
    let value = ops::where_cond::where_cond(cond, a.value, b.value)?;
    let node = record("WhereBackward0", &[a.node, b.node], |needs| {
        let (need_a, need_b) = (needs[0], needs[1]);
        let (c, sa, sb) = (
            cond.clone(),
            a.value.shape().to_vec(),
            b.value.shape().to_vec(),
        );
        move |g| {
            let zero = kit::full_scalar(0.0, &g)?;
            let ga = need_a
                .then(|| kit::sum_to(ops::where_cond::where_cond(&c, &g, &zero)?, &sa))
                .transpose()?;
            let gb = need_b
                .then(|| kit::sum_to(ops::where_cond::where_cond(&c, &zero, &g)?, &sb))
                .transpose()?;
            Ok(vec![ga, gb])
        }
    });
    Ok(Out { value, node })
}

/// `a` converted to `dtype`, recorded: the gradient is converted back (floating point only;
/// integer results are not tracked).
pub(crate) fn cast(a: In<'_>, dtype: DType) -> Result<Out> {
    let value = ops::copy::cast(a.value, dtype)?;
    let node = if dtype.is_float() {
        record("ToCopyBackward0", &[a.node], |_| {
            let source = a.value.dtype;
            move |g| Ok(vec![Some(ops::copy::cast(&g, source)?)])
        })
    } else {
        None
    };
    Ok(Out { value, node })
}

impl<D: Device, E: Element> Tensor<D, E> {
    /// This tensor on `dev`, typed on it (see [`to`](Self::to)); a tracked tensor's gradient
    /// flows back to this device.
    pub fn try_to<D2: Device>(&self, dev: D2) -> Result<Tensor<D2, E>>
    where
        D: CopyTo<D2>,
    {
        self.move_to(dev)
    }

    /// [`try_to`](Self::try_to) for the crate's code generic over both devices (moving a
    /// module's parameters): a copy off a capturing device that the host would wait for fails
    /// at run time there, with the driver's error.
    pub(crate) fn move_to<D2: Device>(&self, dev: D2) -> Result<Tensor<D2, E>> {
        Ok(Tensor::from_out(
            to_device(self.input(), dev.dyn_device())?,
            dev,
        ))
    }

    /// Returns this tensor on `dev`, as PyTorch's `tensor.to(device)`: a **new** tensor, or a
    /// new handle to the same storage when it is already there. The original stays where it
    /// was, so rebind: `let x = x.to(dev);`.
    ///
    /// Not from a capturing device to the CPU (a copy the host would wait for, inside a CUDA
    /// graph's capture): that does not compile (see [`CopyTo`]).
    ///
    /// Panics with the error's text where [`try_to`](Self::try_to) returns it (out of memory).
    #[must_use = "`.to(device)` returns a new tensor and leaves this one where it was: rebind it with `let x = x.to(dev);`"]
    #[track_caller]
    pub fn to<D2: Device>(&self, dev: D2) -> Tensor<D2, E>
    where
        D: CopyTo<D2>,
    {
        match self.try_to(dev) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    /// The values converted to another element type (PyTorch's `x.to(torch.float64)`).
    pub fn try_to_dtype<E2: Element>(&self) -> Result<Tensor<D, E2>> {
        Ok(Tensor::from_out(
            cast(self.input(), E2::DTYPE)?,
            self.device(),
        ))
    }

    /// The values converted to another element type (PyTorch's `x.to(torch.float64)`).
    ///
    /// Panics with the error's text where [`try_to_dtype`](Self::try_to_dtype) returns it.
    #[must_use = "`to_dtype` returns a new tensor"]
    #[track_caller]
    pub fn to_dtype<E2: Element>(&self) -> Tensor<D, E2> {
        match self.try_to_dtype() {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
}

/// PyTorch's cast methods (`x.float()`, `x.half()`, ...), each `to_dtype` to one type.
macro_rules! casts {
    ($($name:ident => $e:ty, $dtype:ident, $torch:literal;)*) => {
        impl<D: Device, E: Element> Tensor<D, E> {
            $(
                #[doc = concat!("The values as `", stringify!($e), "` (PyTorch's `x.", $torch, "()`); a tracked float tensor's gradient flows back.")]
                #[must_use = "casts return a new tensor"]
                #[track_caller]
                pub fn $name(&self) -> Tensor<D, $e> {
                    self.to_dtype::<$e>()
                }
            )*
        }

        impl DynTensor {
            $(
                #[doc = concat!("The values as `", stringify!($dtype), "` (PyTorch's `x.", $torch, "()`).")]
                pub fn $name(&self) -> Result<DynTensor> {
                    self.to_dtype(DType::$dtype)
                }
            )*
        }
    };
}

casts! {
    float => f32, F32, "float";
    double => f64, F64, "double";
    half => half::f16, F16, "half";
    bfloat16 => half::bf16, BF16, "bfloat16";
    long => i64, I64, "long";
    bool => bool, Bool, "bool";
}

/// A `bool` mask that selects between branches of type `A` in `where_cond`: a mask on the
/// branches' device.
///
/// `where` is a TensorIterator op, so the message names the first non-CPU device first, as
/// PyTorch's `torch.where` (the mask counts first).
#[diagnostic::on_unimplemented(
    message = "Expected all tensors to be on the same device, but found at least two devices, `{First}` and `{Second}`",
    label = "this branch is on `{Want}`, but the mask (`self`) is on `{Found}`",
    note = "move the mask with the branches: `let mask = mask.to(dev);`, or build it from tensors on `dev`"
)]
pub trait MaskFor<
    A: HasDevice,
    Want: Device = <A as HasDevice>::Device,
    Found: Device = <Self as HasDevice>::Device,
    First: Device = <Found as Device>::NamedFirst<Want>,
    Second: Device = <Found as Device>::NamedSecond<Want>,
>: HasDevice
{
}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Element> MaskFor<Tensor<D, E>> for Tensor<D, bool> {}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Element> MaskFor<&Tensor<D, E>> for Tensor<D, bool> {}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Element> MaskFor<&&Tensor<D, E>> for Tensor<D, bool> {}

impl<M: Device> Tensor<M, bool> {
    /// Elements of `on_true` where `self` holds, else of `on_false`, broadcasting all three
    /// (PyTorch's `torch.where(cond, a, b)`); each branch gets the gradient where it was picked.
    ///
    /// The result is on `on_true`'s device; the mask and `on_false` must be there too. A mask
    /// left on the CPU is the one error, in PyTorch's words (`cuda:0 and cpu`).
    pub fn try_where_cond<A, B>(
        &self,
        on_true: A,
        on_false: B,
    ) -> Result<Tensor<A::Device, A::Element>>
    where
        A: HasDevice,
        B: OperandOn<A::Device> + HasDevice<Element = A::Element>,
        Self: MaskFor<A>,
    {
        let device = on_true.typed_device();
        Ok(Tensor::from_out(
            where_cond(&self.raw, on_true.input(), on_false.input())?,
            device,
        ))
    }

    /// Elements of `on_true` where `self` holds, else of `on_false`.
    ///
    /// Panics with the error's text where [`try_where_cond`](Self::try_where_cond) returns it.
    #[track_caller]
    pub fn where_cond<A, B>(&self, on_true: A, on_false: B) -> Tensor<A::Device, A::Element>
    where
        A: HasDevice,
        B: OperandOn<A::Device> + HasDevice<Element = A::Element>,
        Self: MaskFor<A>,
    {
        match self.try_where_cond(on_true, on_false) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
}

impl DynTensor {
    /// A copy on `dev`, or a handle to the same storage when already there; a tracked
    /// tensor's gradient flows back.
    pub fn to(&self, dev: DynDevice) -> Result<DynTensor> {
        let dev = dev.open()?;
        Ok(DynTensor::from_out(to_device(self.input(), dev)?))
    }

    /// The values converted to `dtype`.
    pub fn to_dtype(&self, dtype: DType) -> Result<DynTensor> {
        Ok(DynTensor::from_out(cast(self.input(), dtype)?))
    }

    /// `self ? on_true : on_false` element-wise; `self` is a `bool` tensor; devices checked
    /// as PyTorch's `where`. The branches meet in their result type, as in PyTorch
    /// (`where(cond, f32, i64)` is `f32`).
    pub fn where_cond(&self, on_true: &DynTensor, on_false: &DynTensor) -> Result<DynTensor> {
        same_device_elementwise(&[&self.raw, &on_true.raw, &on_false.raw], false)?;
        let to = super::binary::result_type(&on_true.raw, &on_false.raw);
        let cast = |t: &DynTensor| -> Result<Option<Out>> {
            (t.dtype() != to).then(|| cast(t.input(), to)).transpose()
        };
        let (a, b) = (cast(on_true)?, cast(on_false)?);
        Ok(DynTensor::from_out(where_cond(
            &self.raw,
            a.as_ref().map_or(on_true.input(), Out::input),
            b.as_ref().map_or(on_false.input(), Out::input),
        )?))
    }
}
