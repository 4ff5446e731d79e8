//! CPU kernels for element-wise arithmetic and comparisons.

use super::{BinaryOp, CompareOp};
use crate::backend::cpu::strided::{
    map1, map2, zip_contiguous, zip_contiguous_in_place, zip_in_place,
};
use crate::core::dtype::sealed::ElementStorage;
use crate::core::dtype::Half;
use crate::core::error::Result;
use crate::core::layout::{Dims, Layout};
use crate::core::pool::{PooledVec, INLINE};
use crate::core::raw::{Operand, RawTensor};
use crate::core::storage::SharedStorage;
use crate::core::{DType, Element, Float, Scalar};
use crate::ops::half::{
    map_blocks, map_blocks_in_place, zip_blocks, zip_blocks_in_place, HalfBlock,
};
use half::{bf16, f16};

/// Arithmetic every numeric element type has. Integer ops wrap instead of panicking.
pub(crate) trait Arith: Element {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn maximum(self, o: Self) -> Self;
    fn minimum(self, o: Self) -> Self;
    fn pow(self, o: Self) -> Self;
    fn add_relu(self, o: Self) -> Self;
}

macro_rules! float_arith {
    ($t:ty) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self - o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                self / o
            }
            #[inline(always)]
            fn maximum(self, o: Self) -> Self {
                if self.is_nan() || self > o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn minimum(self, o: Self) -> Self {
                if self.is_nan() || self < o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                Float::powf(self, o)
            }
            #[inline(always)]
            fn add_relu(self, o: Self) -> Self {
                let s = self + o;
                if s > 0.0 || s.is_nan() {
                    s
                } else {
                    0.0
                }
            }
        }
    };
}
float_arith!(f32);
float_arith!(f64);

// f16 and bf16: each op in f32 (exact inputs), rounded once. The per-element path of broadcast
// and strided operands; contiguous ones run the f32 ops in blocks (`binary_half`).
macro_rules! half_arith {
    ($t:ty) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                Half::narrow(self.widen() + o.widen())
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                Half::narrow(self.widen() - o.widen())
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                Half::narrow(self.widen() * o.widen())
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                Half::narrow(self.widen() / o.widen())
            }
            #[inline(always)]
            fn maximum(self, o: Self) -> Self {
                if self.is_nan() || self > o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn minimum(self, o: Self) -> Self {
                if self.is_nan() || self < o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                Half::narrow(Arith::pow(self.widen(), o.widen()))
            }
            #[inline(always)]
            fn add_relu(self, o: Self) -> Self {
                Half::narrow(Arith::add_relu(self.widen(), o.widen()))
            }
        }
    };
}
half_arith!(f16);
half_arith!(bf16);

impl Arith for i64 {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        self.wrapping_sub(o)
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self.wrapping_mul(o)
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        self.checked_div(o).unwrap_or(0)
    }
    #[inline(always)]
    fn maximum(self, o: Self) -> Self {
        self.max(o)
    }
    #[inline(always)]
    fn minimum(self, o: Self) -> Self {
        self.min(o)
    }
    #[inline(always)]
    fn pow(self, o: Self) -> Self {
        self.wrapping_pow(o.clamp(0, u32::MAX as i64) as u32)
    }
    #[inline(always)]
    fn add_relu(self, o: Self) -> Self {
        self.wrapping_add(o).max(0)
    }
}

impl Arith for bool {
    fn add(self, o: Self) -> Self {
        self | o
    }
    fn sub(self, o: Self) -> Self {
        self ^ o
    }
    fn mul(self, o: Self) -> Self {
        self & o
    }
    fn div(self, o: Self) -> Self {
        self & o
    }
    fn maximum(self, o: Self) -> Self {
        self | o
    }
    fn minimum(self, o: Self) -> Self {
        self & o
    }
    fn pow(self, o: Self) -> Self {
        self | !o
    }
    fn add_relu(self, o: Self) -> Self {
        self | o
    }
}

/// Calls `$go` with the op turned into a closure (each op gets its own inlined loop).
macro_rules! with_op {
    ($op:expr, |$f:ident| $go:expr) => {
        match $op {
            BinaryOp::Add => {
                let $f = Arith::add;
                $go
            }
            BinaryOp::Sub => {
                let $f = Arith::sub;
                $go
            }
            BinaryOp::Mul => {
                let $f = Arith::mul;
                $go
            }
            BinaryOp::Div => {
                let $f = Arith::div;
                $go
            }
            BinaryOp::Maximum => {
                let $f = Arith::maximum;
                $go
            }
            BinaryOp::Minimum => {
                let $f = Arith::minimum;
                $go
            }
            BinaryOp::Pow => {
                let $f = Arith::pow;
                $go
            }
            BinaryOp::AddRelu => {
                let $f = Arith::add_relu;
                $go
            }
        }
    };
}

/// `a op b` when both are a few host values (at most `INLINE`) of one element type and one
/// shape, each the whole of its storage in order (a loss, a step size, a running count): no broadcasting, no
/// layout arithmetic and no device to find, so the answer is written straight into a new
/// inline buffer. `None` sends every other case, and every error, down the general path.
#[inline(always)]
pub(crate) fn tiny(a: &RawTensor, b: &RawTensor, op: BinaryOp) -> Option<RawTensor> {
    tiny_as(a.dtype, a, b, op)
}

/// [`tiny`] for operands of element type `dtype` (other storages go down the general path);
/// with a constant `dtype` (the typed front's), only that type's case is compiled.
#[inline(always)]
pub(crate) fn tiny_as(
    dtype: DType,
    a: &RawTensor,
    b: &RawTensor,
    op: BinaryOp,
) -> Option<RawTensor> {
    use crate::core::cpu_storage::CpuStorage as C;
    use crate::core::storage::Storage::Cpu;
    match (dtype, &*a.storage, &*b.storage) {
        (DType::F32, Cpu(C::F32(x)), Cpu(C::F32(y))) => tiny_typed(x, y, a, b, op),
        (DType::F64, Cpu(C::F64(x)), Cpu(C::F64(y))) => tiny_typed(x, y, a, b, op),
        (DType::I64, Cpu(C::I64(x)), Cpu(C::I64(y))) if !op.float_only() => {
            tiny_typed(x, y, a, b, op)
        }
        _ => None,
    }
}

#[inline(always)]
fn tiny_typed<T: Arith>(
    x: &PooledVec<T>,
    y: &PooledVec<T>,
    a: &RawTensor,
    b: &RawTensor,
    op: BinaryOp,
) -> Option<RawTensor> {
    let (x, y) = (x.as_slice(), y.as_slice());
    if x.len() > INLINE {
        return None;
    }
    // Rank 0 or 1 starting at the storage's first element and covering all of it: the
    // values are the storage, in order (a rank-1 view of more than one element has stride 1).
    let whole = |t: &RawTensor, len: usize| {
        let l = &t.layout;
        l.offset == 0
            && match (l.shape.len(), l.shape.first()) {
                (0, _) => len == 1,
                (1, Some(&n)) => n == len && (n == 1 || l.strides[0] == 1),
                _ => false,
            }
    };
    if a.layout.shape != b.layout.shape || !whole(a, x.len()) || !whole(b, y.len()) {
        return None;
    }
    // A plain loop (at most `INLINE` values: never a parallel one), into the result's own
    // allocation.
    // The op is chosen outside the fill, so each fill is a short loop that inlines.
    let storage = with_op!(op, |f| SharedStorage::tiny_cpu::<T>(x.len(), |out| {
        for ((o, &p), &q) in out.iter_mut().zip(x).zip(y) {
            *o = f(p, q);
        }
    }));
    // `a`'s layout is the result's when it is the canonical one (offset 0, stride 1): copied,
    // not computed. A layout written field by field and moved at once (into the `Result`,
    // the `Out`, the tensor) stalls each move on the narrow stores it reads back (store
    // forwarding fails); a copy of one already in memory does not: the 1-element add took 39
    // ns with the computed layout, 31 with the copied one (the commit says how measured).
    let layout = if a.layout.shape.is_empty() || a.layout.strides[0] == 1 {
        a.layout
    } else {
        crate::core::layout::Layout::contiguous(a.layout.shape)
    };
    Some(RawTensor::from_cpu_storage::<T>(storage, layout))
}

fn binary_typed<T: Arith>(
    mut a: Operand<'_>,
    mut b: Operand<'_>,
    shape: Dims,
    op: BinaryOp,
) -> Result<RawTensor> {
    // Same shape, both contiguous: the common case, without any layout arithmetic.
    let same = a.layout.shape == shape && b.layout.shape == shape;
    if same {
        if let (Some(ra), Some(rb)) = (a.layout.contiguous_range(), b.layout.contiguous_range()) {
            if let Operand::Owned(owner) = &mut a {
                let other = &b.cpu_slice::<T>().expect("dtype checked")[rb.clone()];
                if let Some(dst) = owner.unique_cpu_data::<T>() {
                    with_op!(op, |f| zip_contiguous_in_place(dst, other, f));
                    return Ok(a.into_owned());
                }
            }
            let x = &a.cpu_slice::<T>().expect("cpu")[ra];
            let y = &b.cpu_slice::<T>().expect("cpu")[rb];
            // Tiny results (a loss, a step size) take the infallible inline buffer directly.
            let mut out = if x.len() <= INLINE {
                PooledVec::<T>::inline(x.len())
            } else {
                PooledVec::<T>::with_len(x.len())?
            };
            let layout = Layout::contiguous(shape);
            with_op!(op, |f| zip_contiguous(x, y, out.as_mut_slice(), f));
            return Ok(RawTensor::from_cpu_buffer(out, layout));
        }
    }
    let la = a.layout.broadcast_to(&shape).expect("broadcast checked");
    let lb = b.layout.broadcast_to(&shape).expect("broadcast checked");
    // Write into an owned operand that nobody else uses and that already has the result's shape.
    if let Operand::Owned(owner) = &mut a {
        if owner.layout.shape == shape {
            let other = b.cpu_slice::<T>().expect("dtype checked");
            if let Some(dst) = owner.unique_cpu_data::<T>() {
                with_op!(op, |f| zip_in_place(dst, other, &lb, f));
                return Ok(a.into_owned());
            }
        }
    }
    if let Operand::Owned(owner) = &mut b {
        if owner.layout.shape == shape {
            let other = a.cpu_slice::<T>().expect("dtype checked");
            if let Some(dst) = owner.unique_cpu_data::<T>() {
                with_op!(op, |f| zip_in_place(dst, other, &la, |y: T, x: T| f(x, y)));
                return Ok(b.into_owned());
            }
        }
    }
    let (x, y) = (
        a.cpu_slice::<T>().expect("cpu"),
        b.cpu_slice::<T>().expect("cpu"),
    );
    let mut out = T::pool().take(shape.iter().product())?;
    with_op!(op, |f| map2(x, &la, y, &lb, &mut out, f));
    Ok(RawTensor::from_cpu_vec(out, shape))
}

#[inline(always)]
pub(crate) fn binary(
    a: Operand<'_>,
    b: Operand<'_>,
    shape: Dims,
    op: BinaryOp,
) -> Result<RawTensor> {
    // Each arm hands back the kernel's own `Result`, so the tensor is written once, in place.
    match a.dtype {
        DType::F32 => binary_typed::<f32>(a, b, shape, op),
        DType::F64 => binary_typed::<f64>(a, b, shape, op),
        DType::I64 => binary_typed::<i64>(a, b, shape, op),
        DType::Bool => binary_typed::<bool>(a, b, shape, op),
        DType::F16 => binary_half::<f16>(a, b, shape, op),
        DType::BF16 => binary_half::<bf16>(a, b, shape, op),
    }
}

/// `a op b` on `f16`/`bf16`: same-shape contiguous operands run in blocks (widened to `f32`,
/// the `f32` op, narrowed once: the bits of the per-element path, at vector speed). Broadcast
/// and strided operands, and `maximum`/`minimum` (which only pick one of the inputs, so they
/// never round, and keep a signaling NaN's bits as they are), take the per-element path.
fn binary_half<H: HalfBlock + Arith>(
    mut a: Operand<'_>,
    b: Operand<'_>,
    shape: Dims,
    op: BinaryOp,
) -> Result<RawTensor> {
    let same = a.layout.shape == shape && b.layout.shape == shape;
    let picks = matches!(op, BinaryOp::Maximum | BinaryOp::Minimum);
    if same && !picks {
        if let (Some(ra), Some(rb)) = (a.layout.contiguous_range(), b.layout.contiguous_range()) {
            if let Operand::Owned(owner) = &mut a {
                let other = &b.cpu_slice::<H>().expect("dtype checked")[rb.clone()];
                if let Some(dst) = owner.unique_cpu_data::<H>() {
                    with_op!(op, |f| zip_blocks_in_place(dst, other, |p: f32, q: f32| f(
                        p, q
                    )));
                    return Ok(a.into_owned());
                }
            }
            let x = &a.cpu_slice::<H>().expect("cpu")[ra];
            let y = &b.cpu_slice::<H>().expect("cpu")[rb];
            let mut out = if x.len() <= INLINE {
                PooledVec::<H>::inline(x.len())
            } else {
                PooledVec::<H>::with_len(x.len())?
            };
            let layout = Layout::contiguous(shape);
            with_op!(op, |f| zip_blocks(
                x,
                y,
                out.as_mut_slice(),
                |p: f32, q: f32| f(p, q)
            ));
            return Ok(RawTensor::from_cpu_buffer(out, layout));
        }
    }
    binary_typed::<H>(a, b, shape, op)
}

fn scalar_typed<T: Arith>(
    mut a: Operand<'_>,
    s: Scalar,
    op: BinaryOp,
    scalar_first: bool,
) -> Result<RawTensor> {
    let s = T::from_scalar(s);
    if let Operand::Owned(owner) = &mut a {
        if let Some(dst) = owner.unique_cpu_data::<T>() {
            with_op!(op, |f| {
                if scalar_first {
                    crate::backend::cpu::strided::for_each_chunk(dst, |_, c| {
                        c.iter_mut().for_each(move |x| *x = f(s, *x))
                    })
                } else {
                    crate::backend::cpu::strided::for_each_chunk(dst, |_, c| {
                        c.iter_mut().for_each(move |x| *x = f(*x, s))
                    })
                }
            });
            return Ok(a.into_owned());
        }
    }
    let x = a.cpu_slice::<T>().expect("cpu");
    let mut out = PooledVec::<T>::with_len(a.numel())?;
    let layout = Layout::contiguous(a.layout.shape);
    with_op!(op, |f| {
        if scalar_first {
            map1(x, &a.layout, out.as_mut_slice(), move |v| f(s, v))
        } else {
            map1(x, &a.layout, out.as_mut_slice(), move |v| f(v, s))
        }
    });
    Ok(RawTensor::from_cpu_buffer(out, layout))
}

/// `a op s` on `f16`/`bf16`: the scalar stays an `f32` (PyTorch's CPU kernels keep a wrapped
/// number in `opmath_type`, not rounded to the tensor's type), the op runs in `f32`, and each
/// result is rounded once; contiguous operands in blocks (`crate::ops::half`).
fn scalar_half<H: HalfBlock>(
    mut a: Operand<'_>,
    s: Scalar,
    op: BinaryOp,
    scalar_first: bool,
) -> Result<RawTensor> {
    let s = s.to_f64() as f32;
    if let Operand::Owned(owner) = &mut a {
        if let Some(dst) = owner.unique_cpu_data::<H>() {
            with_op!(op, |f| {
                if scalar_first {
                    map_blocks_in_place(dst, move |v: f32| f(s, v))
                } else {
                    map_blocks_in_place(dst, move |v: f32| f(v, s))
                }
            });
            return Ok(a.into_owned());
        }
    }
    let x = a.cpu_slice::<H>().expect("cpu");
    let mut out = PooledVec::<H>::with_len(a.numel())?;
    let layout = Layout::contiguous(a.layout.shape);
    if let Some(r) = a.layout.contiguous_range() {
        // In blocks, as above.
        let x = &x[r];
        with_op!(op, |f| {
            if scalar_first {
                map_blocks(x, out.as_mut_slice(), move |v: f32| f(s, v))
            } else {
                map_blocks(x, out.as_mut_slice(), move |v: f32| f(v, s))
            }
        });
        return Ok(RawTensor::from_cpu_buffer(out, layout));
    }
    // A strided view: per element.
    with_op!(op, |f| {
        if scalar_first {
            map1(x, &a.layout, out.as_mut_slice(), move |v| {
                H::narrow(f(s, v.widen()))
            })
        } else {
            map1(x, &a.layout, out.as_mut_slice(), move |v| {
                H::narrow(f(v.widen(), s))
            })
        }
    });
    Ok(RawTensor::from_cpu_buffer(out, layout))
}

pub(crate) fn binary_scalar(
    a: Operand<'_>,
    s: Scalar,
    op: BinaryOp,
    scalar_first: bool,
) -> Result<RawTensor> {
    match a.dtype {
        DType::F32 => scalar_typed::<f32>(a, s, op, scalar_first),
        DType::F64 => scalar_typed::<f64>(a, s, op, scalar_first),
        DType::I64 => scalar_typed::<i64>(a, s, op, scalar_first),
        DType::Bool => scalar_typed::<bool>(a, s, op, scalar_first),
        DType::F16 => scalar_half::<f16>(a, s, op, scalar_first),
        DType::BF16 => scalar_half::<bf16>(a, s, op, scalar_first),
    }
}

fn cmp_fn<T: PartialOrd>(op: CompareOp) -> fn(T, T) -> bool {
    match op {
        CompareOp::Eq => |x, y| x == y,
        CompareOp::Ne => |x, y| x != y,
        CompareOp::Lt => |x, y| x < y,
        CompareOp::Le => |x, y| x <= y,
        CompareOp::Gt => |x, y| x > y,
        CompareOp::Ge => |x, y| x >= y,
    }
}

pub(crate) fn compare(
    a: &RawTensor,
    b: &RawTensor,
    shape: Dims,
    op: CompareOp,
) -> Result<RawTensor> {
    let la: Layout = a.layout.broadcast_to(&shape)?;
    let lb: Layout = b.layout.broadcast_to(&shape)?;
    let mut out = <bool as ElementStorage>::pool().take(shape.iter().product())?;
    let sa = a.cpu_storage().expect("cpu");
    cpu_dispatch!(sa, |x: T| {
        let y = b.cpu_slice::<T>().expect("dtype checked");
        let f = cmp_fn::<T>(op);
        map2(x, &la, y, &lb, &mut out, f);
    });
    Ok(RawTensor::from_cpu_vec(out, shape))
}

pub(crate) fn compare_scalar(a: &RawTensor, s: Scalar, op: CompareOp) -> Result<RawTensor> {
    let mut out = <bool as ElementStorage>::pool().take(a.numel())?;
    let sa = a.cpu_storage().expect("cpu");
    cpu_dispatch!(sa, |x: T| {
        let f = cmp_fn::<T>(op);
        let s = T::from_scalar(s);
        map1(x, &a.layout, &mut out, move |v| f(v, s));
    });
    Ok(RawTensor::from_cpu_vec(out, a.layout.shape))
}

impl super::BinaryKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn binary(
        self,
        a: Operand<'_>,
        b: Operand<'_>,
        shape: Dims,
        op: BinaryOp,
    ) -> Result<RawTensor> {
        binary(a, b, shape, op)
    }
    #[inline(always)]
    fn binary_scalar(
        self,
        a: Operand<'_>,
        s: Scalar,
        op: BinaryOp,
        scalar_first: bool,
    ) -> Result<RawTensor> {
        binary_scalar(a, s, op, scalar_first)
    }
    #[inline(always)]
    fn compare(
        self,
        a: &RawTensor,
        b: &RawTensor,
        shape: Dims,
        op: CompareOp,
    ) -> Result<RawTensor> {
        compare(a, b, shape, op)
    }
    #[inline(always)]
    fn compare_scalar(self, a: &RawTensor, s: Scalar, op: CompareOp) -> Result<RawTensor> {
        compare_scalar(a, s, op)
    }
}
