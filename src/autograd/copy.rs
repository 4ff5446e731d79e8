//! Moves between devices and `where`: `to(dev)` (the gradient moves back to the source
//! device) and `where_cond` (each branch gets the gradient where it was picked).

use super::dyn_var::{DynOperand, DynVar};
use super::kit;
use super::var::{In, Out, Var, VarOperand};
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::device::{Device, DynDevice};
use crate::dyn_tensor::check::same_device_elementwise;
use crate::graph::record;
use crate::ops;
use crate::tensor::{Float, HasDevice, Tensor};
use crate::DynTensor;

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

impl<D: Device, E: Float> Var<D, E> {
    /// This tensor on `dev`, typed on it; gradients flow back to this device.
    pub fn try_to<D2: Device>(&self, dev: D2) -> Result<Var<D2, E>> {
        Ok(Var::from_out(
            to_device(self.input(), dev.dyn_device())?,
            dev,
        ))
    }

    /// Returns this tensor on `dev` (a new tracked tensor; rebind it: `let x = x.to(dev);`).
    ///
    /// Panics with the error's text where [`try_to`](Self::try_to) returns it.
    #[must_use = "`.to(device)` returns a new tensor and leaves this one where it was: rebind it with `let x = x.to(dev);`"]
    #[track_caller]
    pub fn to<D2: Device>(&self, dev: D2) -> Var<D2, E> {
        match self.try_to(dev) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    /// Elements of `on_true` where `cond` holds, else of `on_false`, broadcasting all three.
    pub fn try_where_cond<A, B>(cond: &Tensor<D, bool>, on_true: A, on_false: B) -> Result<Self>
    where
        A: VarOperand<D> + HasDevice<Element = E>,
        B: VarOperand<D> + HasDevice<Element = E>,
    {
        Ok(Var::from_out(
            where_cond(&cond.raw, In::of(&on_true), In::of(&on_false))?,
            cond.device(),
        ))
    }

    /// Elements of `on_true` where `cond` holds, else of `on_false`.
    ///
    /// Panics with the error's text where [`try_where_cond`](Self::try_where_cond) returns it.
    #[track_caller]
    pub fn where_cond<A, B>(cond: &Tensor<D, bool>, on_true: A, on_false: B) -> Self
    where
        A: VarOperand<D> + HasDevice<Element = E>,
        B: VarOperand<D> + HasDevice<Element = E>,
    {
        match Self::try_where_cond(cond, on_true, on_false) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }
}

impl DynVar {
    /// A copy on `dev` that stays in the graph (the gradient moves back).
    pub fn to(&self, dev: DynDevice) -> Result<DynVar> {
        let dev = dev.open()?;
        Ok(DynVar::from_out(to_device(self.input(), dev)?))
    }

    /// `cond ? on_true : on_false` element-wise; devices checked as PyTorch's `where`.
    pub fn where_cond<A: DynOperand, B: DynOperand>(
        cond: &DynTensor,
        on_true: A,
        on_false: B,
    ) -> Result<DynVar> {
        let (a, b) = (on_true.parts(), on_false.parts());
        same_device_elementwise(&[&cond.raw, a.value, b.value], false)?;
        Ok(DynVar::from_out(where_cond(&cond.raw, a, b)?))
    }
}
