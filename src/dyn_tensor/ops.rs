//! The dynamic front of every op: check devices as PyTorch does, then call the shared kernels.

use super::check::{same_device_arguments, same_device_elementwise};
use super::DynTensor;
use crate::core::error::Result;
use crate::core::raw::{Operand, RawTensor};
use crate::ops::loss::{CrossEntropyOptions, Reduction};
use crate::ops::{self, BinaryOp, CompareOp, ReduceOp, UnaryOp};
use crate::tensor::{DType, Element, Scalar};
use std::ops::{Add, Div, Mul, Neg, Sub};

/// When a CPU 0-dim operand joins a GPU op, its value is passed as a scalar (read from the
/// host, so no sync). Returns `Some((value, scalar_is_first))` in that case.
fn cpu_scalar_operand(a: &RawTensor, b: &RawTensor) -> Result<Option<(Scalar, bool)>> {
    let to_f64 = |t: &RawTensor| -> Result<Scalar> {
        Ok(match t.dtype {
            DType::F32 => t.item::<f32>()?.to_scalar(),
            DType::F64 => t.item::<f64>()?.to_scalar(),
            DType::I64 => t.item::<i64>()?.to_scalar(),
            DType::Bool => t.item::<bool>()?.to_scalar(),
        })
    };
    if a.device == b.device {
        return Ok(None);
    }
    if b.device.is_cpu() && b.rank() == 0 {
        return Ok(Some((to_f64(b)?, false)));
    }
    if a.device.is_cpu() && a.rank() == 0 {
        return Ok(Some((to_f64(a)?, true)));
    }
    Ok(None)
}

macro_rules! binary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl DynTensor {
            $(
                $(#[$doc])*
                pub fn $name(&self, other: &DynTensor) -> Result<DynTensor> {
                    self.binary(other, BinaryOp::$op)
                }
                paste::paste! {
                    #[doc = concat!("`self ", stringify!($name), " scalar` (an `f64`, `i64` or `bool`; integers stay exact).")]
                    pub fn [<$name _scalar>](&self, scalar: impl Into<Scalar>) -> Result<DynTensor> {
                        Ok(DynTensor::from_raw(ops::binary::binary_scalar(Operand::Borrowed(&self.raw), scalar.into(), BinaryOp::$op, false)?))
                    }
                }
            )*
        }
    };
}
binary_methods!(
    /// `self + other` with broadcasting.
    add => Add,
    /// `self - other` with broadcasting.
    sub => Sub,
    /// `self * other` with broadcasting.
    mul => Mul,
    /// `self / other` with broadcasting.
    div => Div,
    /// Element-wise maximum with broadcasting.
    maximum => Maximum,
    /// Element-wise minimum with broadcasting.
    minimum => Minimum,
    /// `self` to the power `other`, element-wise.
    pow => Pow,
    /// `relu(self + other)` in one pass, with broadcasting (PyTorch's fused `_add_relu`): the
    /// sum is never written out, so it moves 3 tensors' worth of memory instead of 5.
    add_relu => AddRelu,
);

macro_rules! unary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl DynTensor {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> Result<DynTensor> {
                    Ok(DynTensor::from_raw(ops::unary::unary(Operand::Borrowed(&self.raw), UnaryOp::$op)?))
                }
            )*
        }
    };
}
unary_methods!(
    /// `-x`.
    neg => Neg,
    /// `max(x, 0)`.
    relu => Relu,
    /// `|x|`.
    abs => Abs,
    /// `x * x`.
    square => Square,
    /// `e^x`.
    exp => Exp,
    /// `ln x`.
    log => Log,
    /// `√x`.
    sqrt => Sqrt,
    /// `tanh x`.
    tanh => Tanh,
    /// `1 / (1 + e^-x)`.
    sigmoid => Sigmoid,
    /// `1 / x`.
    reciprocal => Reciprocal,
);

/// The comparison with its operands swapped: `a < b` is `b > a`.
fn mirrored(op: CompareOp) -> CompareOp {
    match op {
        CompareOp::Eq => CompareOp::Eq,
        CompareOp::Ne => CompareOp::Ne,
        CompareOp::Lt => CompareOp::Gt,
        CompareOp::Le => CompareOp::Ge,
        CompareOp::Gt => CompareOp::Lt,
        CompareOp::Ge => CompareOp::Le,
    }
}

macro_rules! compare_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl DynTensor {
            $(
                $(#[$doc])*
                pub fn $name(&self, other: &DynTensor) -> Result<DynTensor> {
                    same_device_elementwise(&[&self.raw, &other.raw], true)?;
                    let out = match cpu_scalar_operand(&self.raw, &other.raw)? {
                        Some((v, false)) => ops::binary::compare_scalar(&self.raw, v, CompareOp::$op)?,
                        // `scalar op t` is `t op' scalar` with the comparison mirrored, so the
                        // kernel only ever sees the GPU tensor.
                        Some((v, true)) => ops::binary::compare_scalar(&other.raw, v, mirrored(CompareOp::$op))?,
                        None => ops::binary::compare(&self.raw, &other.raw, CompareOp::$op)?,
                    };
                    Ok(DynTensor::from_raw(out))
                }
            )*
        }
    };
}
compare_methods!(
    /// Element-wise `==` (a `bool` tensor).
    eq => Eq,
    /// Element-wise `!=`.
    ne => Ne,
    /// Element-wise `<`.
    lt => Lt,
    /// Element-wise `<=`.
    le => Le,
    /// Element-wise `>`.
    gt => Gt,
    /// Element-wise `>=`.
    ge => Ge,
);

impl DynTensor {
    fn binary(&self, other: &DynTensor, op: BinaryOp) -> Result<DynTensor> {
        if self.raw.device == other.raw.device {
            // The common case: one device, nothing more to check, and the result handed
            // straight through (no copy of the tensor on the way out).
            return ops::binary::binary(
                Operand::Borrowed(&self.raw),
                Operand::Borrowed(&other.raw),
                op,
            )
            .map(DynTensor::from_raw);
        }
        same_device_elementwise(&[&self.raw, &other.raw], true)?;
        let out = match cpu_scalar_operand(&self.raw, &other.raw)? {
            Some((value, scalar_first)) => {
                let tensor = if scalar_first { &other.raw } else { &self.raw };
                let scalar_dtype = if scalar_first {
                    self.raw.dtype
                } else {
                    other.raw.dtype
                };
                if scalar_dtype != tensor.dtype {
                    return Err(crate::Error::DTypeMismatch {
                        expected: tensor.dtype,
                        found: scalar_dtype,
                    });
                }
                ops::binary::binary_scalar(Operand::Borrowed(tensor), value, op, scalar_first)?
            }
            None => ops::binary::binary(
                Operand::Borrowed(&self.raw),
                Operand::Borrowed(&other.raw),
                op,
            )?,
        };
        Ok(DynTensor::from_raw(out))
    }

    /// Matrix product with `torch.matmul`'s rules; devices checked as `mm`/`bmm`.
    pub fn matmul(&self, other: &DynTensor) -> Result<DynTensor> {
        let method = if self.dims() > 2 || other.dims() > 2 {
            "wrapper_CUDA_bmm"
        } else {
            "wrapper_CUDA_mm"
        };
        same_device_arguments(method, &[("self", &self.raw), ("mat2", &other.raw)])?;
        Ok(DynTensor::from_raw(ops::matmul::matmul(
            &self.raw, &other.raw,
        )?))
    }

    /// `self @ weight.T + bias`, devices checked as PyTorch's `addmm` (bias first, then `mat1`).
    pub fn linear(&self, weight: &DynTensor, bias: Option<&DynTensor>) -> Result<DynTensor> {
        match bias {
            Some(b) => same_device_arguments(
                "wrapper_CUDA_addmm",
                &[("self", &b.raw), ("mat1", &self.raw), ("mat2", &weight.raw)],
            )?,
            None => same_device_arguments(
                "wrapper_CUDA_mm",
                &[("self", &self.raw), ("mat2", &weight.raw)],
            )?,
        };
        Ok(DynTensor::from_raw(ops::linear::linear(
            &self.raw,
            &weight.raw,
            bias.map(|b| &b.raw),
        )?))
    }

    fn reduce(&self, dims: &[isize], keepdim: bool, op: ReduceOp) -> Result<DynTensor> {
        Ok(DynTensor::from_raw(ops::reduce::reduce(
            &self.raw, dims, keepdim, op,
        )?))
    }

    /// Sum over `dims` (all when empty).
    pub fn sum_dims(&self, dims: &[isize], keepdim: bool) -> Result<DynTensor> {
        self.reduce(dims, keepdim, ReduceOp::Sum)
    }
    /// Sum over `dim`.
    pub fn sum(&self, dim: isize) -> Result<DynTensor> {
        self.reduce(&[dim], false, ReduceOp::Sum)
    }
    /// Sum of all elements (0-dim).
    pub fn sum_all(&self) -> Result<DynTensor> {
        self.reduce(&[], false, ReduceOp::Sum)
    }
    /// Mean over `dims` (all when empty).
    pub fn mean_dims(&self, dims: &[isize], keepdim: bool) -> Result<DynTensor> {
        self.reduce(dims, keepdim, ReduceOp::Mean)
    }
    /// Mean over `dim`.
    pub fn mean(&self, dim: isize) -> Result<DynTensor> {
        self.reduce(&[dim], false, ReduceOp::Mean)
    }
    /// Mean of all elements (0-dim).
    pub fn mean_all(&self) -> Result<DynTensor> {
        self.reduce(&[], false, ReduceOp::Mean)
    }
    /// Largest element over `dim`.
    pub fn max(&self, dim: isize) -> Result<DynTensor> {
        self.reduce(&[dim], false, ReduceOp::Max)
    }
    /// Smallest element over `dim`.
    pub fn min(&self, dim: isize) -> Result<DynTensor> {
        self.reduce(&[dim], false, ReduceOp::Min)
    }
    /// Index of the largest element over `dim` (`i64`).
    pub fn argmax(&self, dim: isize) -> Result<DynTensor> {
        Ok(DynTensor::from_raw(ops::reduce::arg_reduce(
            &self.raw, dim, false, true,
        )?))
    }
    /// Index of the smallest element over `dim` (`i64`).
    pub fn argmin(&self, dim: isize) -> Result<DynTensor> {
        Ok(DynTensor::from_raw(ops::reduce::arg_reduce(
            &self.raw, dim, false, false,
        )?))
    }

    /// Another shape with the same elements (a view when possible); one size may be `-1`.
    pub fn reshape(&self, shape: &[isize]) -> Result<DynTensor> {
        Ok(DynTensor::from_raw(ops::shape::reshape(&self.raw, shape)?))
    }
    /// A view with another shape, or an error when that needs a copy.
    pub fn view(&self, shape: &[isize]) -> Result<DynTensor> {
        Ok(DynTensor::from_raw(ops::shape::view(&self.raw, shape)?))
    }
    /// Swaps two dimensions (a view).
    pub fn transpose(&self, dim0: isize, dim1: isize) -> Result<DynTensor> {
        Ok(DynTensor::from_raw(ops::shape::transpose(
            &self.raw, dim0, dim1,
        )?))
    }
    /// Reorders the dimensions (a view).
    pub fn permute(&self, order: &[isize]) -> Result<DynTensor> {
        Ok(DynTensor::from_raw(ops::shape::permute(&self.raw, order)?))
    }
    /// Inserts a dimension of size 1.
    pub fn unsqueeze(&self, dim: isize) -> Result<DynTensor> {
        Ok(DynTensor::from_raw(ops::shape::unsqueeze(&self.raw, dim)?))
    }
    /// Removes dimension `dim` if its size is 1.
    pub fn squeeze(&self, dim: isize) -> Result<DynTensor> {
        Ok(DynTensor::from_raw(ops::shape::squeeze(&self.raw, dim)?))
    }
    /// Merges dimensions `start..=end`.
    pub fn flatten(&self, start: isize, end: isize) -> Result<DynTensor> {
        Ok(DynTensor::from_raw(ops::shape::flatten(
            &self.raw, start, end,
        )?))
    }
    /// Elements `start..start + len` along `dim` (a view).
    pub fn narrow(&self, dim: isize, start: usize, len: usize) -> Result<DynTensor> {
        Ok(DynTensor::from_raw(ops::shape::narrow(
            &self.raw, dim, start, len,
        )?))
    }
    /// Broadcasts to `shape` without copying (zero strides), as `torch.Tensor.expand`.
    pub fn expand(&self, shape: &[usize]) -> Result<DynTensor> {
        Ok(DynTensor::from_raw(ops::shape::expand(&self.raw, shape)?))
    }
    /// A contiguous copy, or the same tensor when already contiguous.
    pub fn contiguous(&self) -> Result<DynTensor> {
        Ok(DynTensor::from_raw(self.raw.contiguous()?))
    }

    /// Joins tensors along `dim`; all on one device (checked as PyTorch's `cat`).
    pub fn cat(tensors: &[&DynTensor], dim: isize) -> Result<DynTensor> {
        let raws = Self::same_device_list(tensors)?;
        Ok(DynTensor::from_raw(ops::cat::cat(&raws, dim)?))
    }
    /// Stacks equally shaped tensors along a new dimension.
    pub fn stack(tensors: &[&DynTensor], dim: isize) -> Result<DynTensor> {
        let raws = Self::same_device_list(tensors)?;
        Ok(DynTensor::from_raw(ops::cat::stack(&raws, dim)?))
    }
    fn same_device_list<'a>(tensors: &[&'a DynTensor]) -> Result<Vec<&'a RawTensor>> {
        let raws: Vec<&RawTensor> = tensors.iter().map(|t| &t.raw).collect();
        if !raws.is_empty() {
            let args: Vec<(&'static str, &RawTensor)> =
                raws.iter().map(|r| ("tensors", *r)).collect();
            same_device_arguments("wrapper_CUDA_cat", &args)?;
        }
        Ok(raws)
    }

    /// Softmax over `dim`.
    pub fn softmax(&self, dim: isize) -> Result<DynTensor> {
        Ok(DynTensor::from_raw(ops::softmax::softmax(
            &self.raw, dim, false,
        )?))
    }
    /// Log-softmax over `dim`.
    pub fn log_softmax(&self, dim: isize) -> Result<DynTensor> {
        Ok(DynTensor::from_raw(ops::softmax::softmax(
            &self.raw, dim, true,
        )?))
    }

    /// Slices along `dim` picked by `index` (checked as PyTorch's `index_select`).
    pub fn index_select(&self, dim: isize, index: &DynTensor) -> Result<DynTensor> {
        same_device_arguments(
            "wrapper_CUDA__index_select",
            &[("self", &self.raw), ("index", &index.raw)],
        )?;
        Ok(DynTensor::from_raw(ops::index::index_select(
            &self.raw, dim, &index.raw,
        )?))
    }
    /// `out[i][j] = self[i][index[i][j]]` along `dim` (checked as PyTorch's `gather`).
    pub fn gather(&self, dim: isize, index: &DynTensor) -> Result<DynTensor> {
        same_device_arguments(
            "wrapper_CUDA_gather",
            &[("self", &self.raw), ("index", &index.raw)],
        )?;
        Ok(DynTensor::from_raw(ops::index::gather(
            &self.raw, dim, &index.raw,
        )?))
    }
    /// `self ? on_true : on_false` element-wise; `self` is a `bool` tensor.
    pub fn where_cond(&self, on_true: &DynTensor, on_false: &DynTensor) -> Result<DynTensor> {
        same_device_elementwise(&[&self.raw, &on_true.raw, &on_false.raw], false)?;
        Ok(DynTensor::from_raw(ops::where_cond::where_cond(
            &self.raw,
            &on_true.raw,
            &on_false.raw,
        )?))
    }

    /// Cross-entropy of `self` (logits `[batch, classes]`) against class indices `targets`,
    /// optionally weighted per class; devices checked as PyTorch's `nll_loss_forward`.
    pub fn cross_entropy(
        &self,
        targets: &DynTensor,
        weight: Option<&DynTensor>,
        reduction: Reduction,
        ignore_index: i64,
    ) -> Result<DynTensor> {
        let mut args = vec![("self", &self.raw), ("target", &targets.raw)];
        if let Some(w) = weight {
            args.push(("weight", &w.raw));
        }
        same_device_arguments("wrapper_CUDA_nll_loss_forward", &args)?;
        Ok(DynTensor::from_raw(ops::loss::cross_entropy(
            &self.raw,
            &targets.raw,
            weight.map(|w| &w.raw),
            CrossEntropyOptions {
                reduction,
                ignore_index,
            },
        )?))
    }
}

macro_rules! dyn_operator {
    ($trait:ident, $method:ident) => {
        impl $trait<&DynTensor> for &DynTensor {
            type Output = DynTensor;
            /// Panics with PyTorch's text on a device, shape or dtype mismatch; use the method
            /// of the same name for a `Result`.
            #[track_caller]
            fn $method(self, rhs: &DynTensor) -> DynTensor {
                match DynTensor::$method(self, rhs) {
                    Ok(t) => t,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        impl $trait<DynTensor> for DynTensor {
            type Output = DynTensor;
            #[track_caller]
            fn $method(self, rhs: DynTensor) -> DynTensor {
                $trait::$method(&self, &rhs)
            }
        }
        impl $trait<&DynTensor> for DynTensor {
            type Output = DynTensor;
            #[track_caller]
            fn $method(self, rhs: &DynTensor) -> DynTensor {
                $trait::$method(&self, rhs)
            }
        }
        impl $trait<f64> for &DynTensor {
            type Output = DynTensor;
            #[track_caller]
            fn $method(self, rhs: f64) -> DynTensor {
                paste::paste! {
                    match self.[<$method _scalar>](rhs) {
                        Ok(t) => t,
                        Err(e) => panic!("{e}"),
                    }
                }
            }
        }
    };
}
dyn_operator!(Add, add);
dyn_operator!(Sub, sub);
dyn_operator!(Mul, mul);
dyn_operator!(Div, div);

impl Neg for &DynTensor {
    type Output = DynTensor;
    #[track_caller]
    fn neg(self) -> DynTensor {
        match DynTensor::neg(self) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
}
