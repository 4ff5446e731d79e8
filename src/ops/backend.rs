//! The one boundary between the ops and the devices: the [`Backend`] trait, with one method per
//! kernel entry of every op family, implemented by [`CpuBackend`] and [`CudaBackend`], and the
//! one place that looks at where operands are ([`on`], used through `dispatch!`).
//!
//! This is candle's `BackendStorage` idea fitted to devtype: candle's storage enum matches
//! `(Cpu, Cpu)`, `(Cuda, Cuda)` and returns a device-mismatch error for anything else in every
//! method; here that match is written once ([`on`]), returns a [`Device`] holding what the
//! backend needs (the GPU's context), and each op family's `mod.rs` plans shapes and checks
//! dtypes, then calls one [`Backend`] method through `dispatch!`. The methods delegate to the
//! kernels beside each family (`ops/<family>/{cpu,cuda}.rs`), statically: the CPU path is
//! inlined as before.

use super::amp::ScaleSchedule;
use super::binary::{BinaryOp, CompareOp};
use super::creation::Fill;
use super::loss::CrossEntropyOptions;
use super::matmul::MatmulPlan;
use super::optim::{AdamUpdate, SgdUpdate};
use super::reduce::{ReduceOp, ReducePlan};
use super::sort::Lines;
use super::unary::UnaryOp;
use super::{
    amp, bias_grad, binary, cat, copy, creation, cross_entropy_backward, index, linear, loss,
    matmul, optim, reduce, relu_backward, scatter, softmax, sort, unary, where_cond,
};
use crate::backend::cuda::context::{self, GpuContext};
use crate::core::error::{Error, Result};
use crate::core::layout::Dims;
use crate::core::raw::{Operand, RawTensor};
use crate::core::storage::Storage;
use crate::core::{DType, DynDevice, Scalar};

/// Where a set of operands is, with what its backend needs.
#[derive(Clone, Copy)]
pub(crate) enum Device {
    Cpu,
    Cuda(&'static GpuContext),
}

/// The device every operand is on, or PyTorch's device-mismatch error naming the first non-CPU
/// device and the first operand on another one. This is the only place the ops look at a
/// storage's variant. The caller passes at least one operand.
///
/// The devices decide the mismatch; the storages decide the backend: host memory runs on the
/// CPU, device memory on its GPU, and operands whose storages disagree (with equal devices)
/// are an internal error, never a CUDA launch. (Host memory labelled `cuda:N` runs on the CPU,
/// as it always did: the fronts' tests fake GPU tensors that way.)
#[inline(always)]
pub(crate) fn on(operands: &[&RawTensor]) -> Result<Device> {
    let first = operands[0];
    let device = first.device.cuda_index();
    for t in &operands[1..] {
        if t.device.cuda_index() != device {
            return Err(mismatch(first.device, t.device));
        }
    }
    let all = |cpu: bool| {
        operands[1..]
            .iter()
            .all(|t| matches!(&*t.storage, Storage::Cpu(_)) == cpu)
    };
    match (&*first.storage, device) {
        (Storage::Cpu(_), _) if all(true) => Ok(Device::Cpu),
        (Storage::Cuda(_), Some(ordinal)) if all(false) => Ok(Device::Cuda(context::get(ordinal)?)),
        (_, _) => Err(Error::Internal {
            context: "ops::backend::on",
            message: format!(
                "tensors on {} hold memory of different kinds (host and device)",
                first.device
            ),
        }),
    }
}

/// The device to create a tensor on.
pub(crate) fn on_device(device: DynDevice) -> Result<Device> {
    match device.resolved().cuda_index() {
        None => Ok(Device::Cpu),
        Some(ordinal) => Ok(Device::Cuda(context::get(ordinal)?)),
    }
}

/// PyTorch's `Expected all tensors to be on the same device, but found at least two devices,
/// cuda:0 and cpu!`: the non-CPU device of the two first.
#[cold]
fn mismatch(a: DynDevice, b: DynDevice) -> Error {
    let (first, second) = if a.is_cpu() { (b, a) } else { (a, b) };
    Error::DeviceMismatch { first, second }
}

/// `dispatch!([a, b], |be| be.binary(a, b, shape, op))`: finds the device of the operands once
/// ([`on`], `?` on a mismatch) and runs the body with `be` bound to that device's [`Backend`],
/// monomorphised for each (no dynamic call on the CPU path).
/// `dispatch!(device = d, |be| ...)` does the same for a device value (creation).
macro_rules! dispatch {
    (@run $device:expr, |$be:ident| $body:expr) => {{
        #[allow(unused_imports)]
        use $crate::ops::backend::Backend as _;
        match $device {
            $crate::ops::backend::Device::Cpu => {
                let $be = $crate::ops::backend::CpuBackend;
                $body
            }
            $crate::ops::backend::Device::Cuda(gpu) => {
                let $be = $crate::ops::backend::CudaBackend(gpu);
                $body
            }
        }
    }};
    (device = $d:expr, |$be:ident| $body:expr) => {
        dispatch!(@run $crate::ops::backend::on_device($d)?, |$be| $body)
    };
    ([$($t:expr),+ $(,)?], |$be:ident| $body:expr) => {
        dispatch!(@run $crate::ops::backend::on(&[$($t),+])?, |$be| $body)
    };
}

/// Host memory.
#[derive(Clone, Copy)]
pub(crate) struct CpuBackend;

/// One GPU, whose context the CUDA kernels launch on.
#[derive(Clone, Copy)]
pub(crate) struct CudaBackend(pub(crate) &'static GpuContext);

/// Every kernel entry of every op family, on one device. The operands are on that device
/// ([`on`] checked it) and the family's `mod.rs` has planned shapes and checked dtypes.
pub(crate) trait Backend {
    // copy
    fn contiguous(self, t: &RawTensor) -> Result<RawTensor>;
    fn cast(self, t: &RawTensor, dtype: DType) -> Result<RawTensor>;
    fn cat(self, tensors: &[&RawTensor], d: usize, shape: Dims) -> Result<RawTensor>;
    // creation
    fn create(self, shape: Dims, dtype: DType, fill: Fill) -> Result<RawTensor>;
    // element-wise
    fn unary(self, a: Operand<'_>, op: UnaryOp) -> Result<RawTensor>;
    fn binary(self, a: Operand<'_>, b: Operand<'_>, shape: Dims, op: BinaryOp)
        -> Result<RawTensor>;
    fn binary_scalar(
        self,
        a: Operand<'_>,
        s: Scalar,
        op: BinaryOp,
        scalar_first: bool,
    ) -> Result<RawTensor>;
    fn compare(self, a: &RawTensor, b: &RawTensor, shape: Dims, op: CompareOp)
        -> Result<RawTensor>;
    fn compare_scalar(self, a: &RawTensor, s: Scalar, op: CompareOp) -> Result<RawTensor>;
    fn where_cond(
        self,
        c: &RawTensor,
        a: &RawTensor,
        b: &RawTensor,
        shape: Dims,
    ) -> Result<RawTensor>;
    fn relu_backward(self, grad: Operand<'_>, y: &RawTensor) -> Result<RawTensor>;
    // reductions and rows
    fn reduce(self, a: &RawTensor, plan: &ReducePlan, op: ReduceOp) -> Result<RawTensor>;
    fn arg_reduce(self, a: &RawTensor, plan: &ReducePlan, max: bool) -> Result<RawTensor>;
    fn cumsum(self, a: &RawTensor, lines: Lines, reverse: bool) -> Result<RawTensor>;
    fn sort(
        self,
        a: &RawTensor,
        lines: Lines,
        descending: bool,
        k: usize,
        shape: Dims,
    ) -> Result<(RawTensor, RawTensor)>;
    fn bias_grad(self, grad: &RawTensor) -> Result<RawTensor>;
    fn softmax(self, a: RawTensor, log: bool) -> Result<RawTensor>;
    fn cross_entropy(
        self,
        logits: &RawTensor,
        targets: &RawTensor,
        weight: Option<&RawTensor>,
        options: CrossEntropyOptions,
        nc: (usize, usize),
    ) -> Result<RawTensor>;
    fn cross_entropy_backward(
        self,
        logits: &RawTensor,
        targets: &RawTensor,
        weight: Option<&RawTensor>,
        options: CrossEntropyOptions,
        grad_out: &RawTensor,
        nc: (usize, usize),
    ) -> Result<RawTensor>;
    // indexing
    fn index_select(
        self,
        a: &RawTensor,
        d: usize,
        index: &RawTensor,
        shape: Dims,
    ) -> Result<RawTensor>;
    fn gather(self, a: &RawTensor, d: usize, index: &RawTensor, shape: Dims) -> Result<RawTensor>;
    fn scatter_add(
        self,
        shape: Dims,
        dim: usize,
        index: &RawTensor,
        src: &RawTensor,
    ) -> Result<RawTensor>;
    fn index_add(
        self,
        shape: Dims,
        dim: usize,
        index: &RawTensor,
        src: &RawTensor,
    ) -> Result<RawTensor>;
    // matrix products
    fn matmul(self, a: &RawTensor, b: &RawTensor, plan: &MatmulPlan) -> Result<RawTensor>;
    fn linear(
        self,
        x: &RawTensor,
        w: &RawTensor,
        bias: Option<&RawTensor>,
        plan: (usize, usize, usize, Dims),
    ) -> Result<RawTensor>;
    // optimizers
    fn sgd(
        self,
        param: &mut RawTensor,
        grad: &RawTensor,
        buffer: &mut Option<RawTensor>,
        u: &SgdUpdate,
        skip: Option<&RawTensor>,
    ) -> Result<()>;
    #[allow(clippy::too_many_arguments)]
    fn adam(
        self,
        param: &mut RawTensor,
        grad: &RawTensor,
        m: &mut Option<RawTensor>,
        v: &mut Option<RawTensor>,
        u: &AdamUpdate,
        corrections: Option<&RawTensor>,
        skip: Option<&RawTensor>,
    ) -> Result<()>;
    // loss scaling
    fn unscale_(
        self,
        grad: &mut RawTensor,
        inv_scale: &RawTensor,
        found_inf: &mut RawTensor,
    ) -> Result<()>;
    fn update_scale_(
        self,
        scale: &mut RawTensor,
        growth_tracker: &mut RawTensor,
        found_inf: &RawTensor,
        schedule: ScaleSchedule,
    ) -> Result<()>;
}

/// Writes both impls of [`Backend`]: each method forwards to `<family>::<module>::<method>`,
/// the CUDA ones with the GPU first.
macro_rules! backend_impl {
    ($ty:ty, $module:ident, |$self_:ident| $($gpu:expr)?) => {
        impl Backend for $ty {
            #[inline(always)]
            fn contiguous($self_, t: &RawTensor) -> Result<RawTensor> {
                copy::$module::contiguous($($gpu,)? t)
            }
            #[inline(always)]
            fn cast($self_, t: &RawTensor, dtype: DType) -> Result<RawTensor> {
                copy::$module::cast($($gpu,)? t, dtype)
            }
            #[inline(always)]
            fn cat($self_, tensors: &[&RawTensor], d: usize, shape: Dims) -> Result<RawTensor> {
                cat::$module::cat($($gpu,)? tensors, d, shape)
            }
            #[inline(always)]
            fn create($self_, shape: Dims, dtype: DType, fill: Fill) -> Result<RawTensor> {
                creation::$module::create($($gpu,)? shape, dtype, fill)
            }
            #[inline(always)]
            fn unary($self_, a: Operand<'_>, op: UnaryOp) -> Result<RawTensor> {
                unary::$module::unary($($gpu,)? a, op)
            }
            #[inline(always)]
            fn binary(
                $self_,
                a: Operand<'_>,
                b: Operand<'_>,
                shape: Dims,
                op: BinaryOp,
            ) -> Result<RawTensor> {
                binary::$module::binary($($gpu,)? a, b, shape, op)
            }
            #[inline(always)]
            fn binary_scalar(
                $self_,
                a: Operand<'_>,
                s: Scalar,
                op: BinaryOp,
                scalar_first: bool,
            ) -> Result<RawTensor> {
                binary::$module::binary_scalar($($gpu,)? a, s, op, scalar_first)
            }
            #[inline(always)]
            fn compare(
                $self_,
                a: &RawTensor,
                b: &RawTensor,
                shape: Dims,
                op: CompareOp,
            ) -> Result<RawTensor> {
                binary::$module::compare($($gpu,)? a, b, shape, op)
            }
            #[inline(always)]
            fn compare_scalar($self_, a: &RawTensor, s: Scalar, op: CompareOp) -> Result<RawTensor> {
                binary::$module::compare_scalar($($gpu,)? a, s, op)
            }
            #[inline(always)]
            fn where_cond(
                $self_,
                c: &RawTensor,
                a: &RawTensor,
                b: &RawTensor,
                shape: Dims,
            ) -> Result<RawTensor> {
                where_cond::$module::where_cond($($gpu,)? c, a, b, shape)
            }
            #[inline(always)]
            fn relu_backward($self_, grad: Operand<'_>, y: &RawTensor) -> Result<RawTensor> {
                relu_backward::$module::relu_backward($($gpu,)? grad, y)
            }
            #[inline(always)]
            fn reduce($self_, a: &RawTensor, plan: &ReducePlan, op: ReduceOp) -> Result<RawTensor> {
                reduce::$module::reduce($($gpu,)? a, plan, op)
            }
            #[inline(always)]
            fn arg_reduce($self_, a: &RawTensor, plan: &ReducePlan, max: bool) -> Result<RawTensor> {
                reduce::$module::arg_reduce($($gpu,)? a, plan, max)
            }

            fn cumsum($self_, a: &RawTensor, lines: Lines, reverse: bool) -> Result<RawTensor> {
                sort::$module::cumsum($($gpu,)? a, lines, reverse)
            }

            fn sort(
                $self_,
                a: &RawTensor,
                lines: Lines,
                descending: bool,
                k: usize,
                shape: Dims,
            ) -> Result<(RawTensor, RawTensor)> {
                sort::$module::sort($($gpu,)? a, lines, descending, k, shape)
            }
            #[inline(always)]
            fn bias_grad($self_, grad: &RawTensor) -> Result<RawTensor> {
                bias_grad::$module::bias_grad($($gpu,)? grad)
            }
            #[inline(always)]
            fn softmax($self_, a: RawTensor, log: bool) -> Result<RawTensor> {
                softmax::$module::softmax($($gpu,)? a, log)
            }
            #[inline(always)]
            fn cross_entropy(
                $self_,
                logits: &RawTensor,
                targets: &RawTensor,
                weight: Option<&RawTensor>,
                options: CrossEntropyOptions,
                nc: (usize, usize),
            ) -> Result<RawTensor> {
                loss::$module::cross_entropy($($gpu,)? logits, targets, weight, options, nc)
            }
            #[inline(always)]
            fn cross_entropy_backward(
                $self_,
                logits: &RawTensor,
                targets: &RawTensor,
                weight: Option<&RawTensor>,
                options: CrossEntropyOptions,
                grad_out: &RawTensor,
                nc: (usize, usize),
            ) -> Result<RawTensor> {
                cross_entropy_backward::$module::cross_entropy_backward(
                    $($gpu,)? logits, targets, weight, options, grad_out, nc,
                )
            }
            #[inline(always)]
            fn index_select(
                $self_,
                a: &RawTensor,
                d: usize,
                index: &RawTensor,
                shape: Dims,
            ) -> Result<RawTensor> {
                index::$module::index_select($($gpu,)? a, d, index, shape)
            }
            #[inline(always)]
            fn gather(
                $self_,
                a: &RawTensor,
                d: usize,
                index: &RawTensor,
                shape: Dims,
            ) -> Result<RawTensor> {
                index::$module::gather($($gpu,)? a, d, index, shape)
            }
            #[inline(always)]
            fn scatter_add(
                $self_,
                shape: Dims,
                dim: usize,
                index: &RawTensor,
                src: &RawTensor,
            ) -> Result<RawTensor> {
                scatter::$module::scatter_add($($gpu,)? shape, dim, index, src)
            }
            #[inline(always)]
            fn index_add(
                $self_,
                shape: Dims,
                dim: usize,
                index: &RawTensor,
                src: &RawTensor,
            ) -> Result<RawTensor> {
                scatter::$module::index_add($($gpu,)? shape, dim, index, src)
            }
            #[inline(always)]
            fn matmul($self_, a: &RawTensor, b: &RawTensor, plan: &MatmulPlan) -> Result<RawTensor> {
                matmul::$module::matmul($($gpu,)? a, b, plan)
            }
            #[inline(always)]
            fn linear(
                $self_,
                x: &RawTensor,
                w: &RawTensor,
                bias: Option<&RawTensor>,
                plan: (usize, usize, usize, Dims),
            ) -> Result<RawTensor> {
                linear::$module::linear($($gpu,)? x, w, bias, plan)
            }
            #[inline(always)]
            fn sgd(
                $self_,
                param: &mut RawTensor,
                grad: &RawTensor,
                buffer: &mut Option<RawTensor>,
                u: &SgdUpdate,
                skip: Option<&RawTensor>,
            ) -> Result<()> {
                optim::$module::sgd($($gpu,)? param, grad, buffer, u, skip)
            }
            #[inline(always)]
            fn adam(
                $self_,
                param: &mut RawTensor,
                grad: &RawTensor,
                m: &mut Option<RawTensor>,
                v: &mut Option<RawTensor>,
                u: &AdamUpdate,
                corrections: Option<&RawTensor>,
                skip: Option<&RawTensor>,
            ) -> Result<()> {
                optim::$module::adam($($gpu,)? param, grad, m, v, u, corrections, skip)
            }
            #[inline(always)]
            fn unscale_(
                $self_,
                grad: &mut RawTensor,
                inv_scale: &RawTensor,
                found_inf: &mut RawTensor,
            ) -> Result<()> {
                amp::$module::unscale_($($gpu,)? grad, inv_scale, found_inf)
            }
            #[inline(always)]
            fn update_scale_(
                $self_,
                scale: &mut RawTensor,
                growth_tracker: &mut RawTensor,
                found_inf: &RawTensor,
                schedule: ScaleSchedule,
            ) -> Result<()> {
                amp::$module::update_scale_($($gpu,)? scale, growth_tracker, found_inf, schedule)
            }
        }
    };
}

backend_impl!(CpuBackend, cpu, |self|);
backend_impl!(CudaBackend, cuda, |self| self.0);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mismatch_names_the_non_cpu_device_first() {
        let (cpu, gpu0, gpu1) = (DynDevice::cpu(), DynDevice::cuda(0), DynDevice::cuda(1));
        for (a, b, first, second) in [
            (cpu, gpu0, gpu0, cpu),
            (gpu0, cpu, gpu0, cpu),
            (gpu0, gpu1, gpu0, gpu1),
        ] {
            assert_eq!(mismatch(a, b), Error::DeviceMismatch { first, second });
        }
    }

    #[test]
    fn host_operands_dispatch_to_the_cpu() {
        let a = RawTensor::from_cpu_vec(vec![1.0f32, 2.0], Dims::shape(&[2]).unwrap());
        let b = RawTensor::from_cpu_vec(vec![3i64], Dims::EMPTY);
        assert!(matches!(on(&[&a, &b]), Ok(Device::Cpu)));
        assert!(matches!(on_device(DynDevice::cpu()), Ok(Device::Cpu)));
        // Host memory labelled cuda:0 (the fronts' tests' fake GPU tensors) runs on the CPU,
        // never in CUDA code; with a tensor labelled cpu it is a device mismatch.
        let mut fake = a.clone();
        fake.device = DynDevice::cuda(0);
        assert!(matches!(on(&[&fake, &fake]), Ok(Device::Cpu)));
        assert_eq!(
            on(&[&a, &fake]).err(),
            Some(Error::DeviceMismatch {
                first: DynDevice::cuda(0),
                second: DynDevice::cpu()
            })
        );
    }
}
