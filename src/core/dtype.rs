//! Element types: the `E` in `Tensor<D, E>`.

use crate::core::cpu_storage::CpuStorage;
use half::{bf16, f16};
use std::fmt;

/// The element type of a tensor, as a run-time value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit float (`torch.float32`), the default.
    F32,
    /// 64-bit float (`torch.float64`).
    F64,
    /// 64-bit signed integer (`torch.int64`), used for class indices.
    I64,
    /// Booleans (`torch.bool`), the result of comparisons.
    Bool,
    /// IEEE 754 half precision (`torch.float16`, PyTorch's `Half`): 11-bit significand,
    /// 5-bit exponent (largest finite value 65504).
    F16,
    /// bfloat16 (`torch.bfloat16`, PyTorch's `BFloat16`): the exponent range of `f32` with an
    /// 8-bit significand.
    BF16,
}

impl DType {
    /// PyTorch's `ScalarType` name, as in `expected scalar type Float but found Double`.
    pub const fn scalar_type_name(self) -> &'static str {
        match self {
            DType::F32 => "Float",
            DType::F64 => "Double",
            DType::I64 => "Long",
            DType::Bool => "Bool",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
        }
    }

    /// PyTorch's `TypeMeta` name, as in `expected m1 and m2 to have the same dtype, but got: float != double`.
    pub const fn type_meta_name(self) -> &'static str {
        match self {
            DType::F32 => "float",
            DType::F64 => "double",
            DType::I64 => "long int",
            DType::Bool => "bool",
            DType::F16 => "c10::Half",
            DType::BF16 => "c10::BFloat16",
        }
    }

    /// The C++ type PyTorch's checked scalar conversion names (`c10::Half`, `int64_t`), as in
    /// `value cannot be converted to type c10::Half without overflow`.
    pub const fn cpp_type_name(self) -> &'static str {
        match self {
            DType::F32 => "float",
            DType::F64 => "double",
            DType::I64 => "int64_t",
            DType::Bool => "bool",
            DType::F16 => "c10::Half",
            DType::BF16 => "c10::BFloat16",
        }
    }

    /// PyTorch's name of the dtype object (`torch.float16`), as `print` shows it.
    pub const fn torch_name(self) -> &'static str {
        match self {
            DType::F32 => "torch.float32",
            DType::F64 => "torch.float64",
            DType::I64 => "torch.int64",
            DType::Bool => "torch.bool",
            DType::F16 => "torch.float16",
            DType::BF16 => "torch.bfloat16",
        }
    }

    /// Size of one element in bytes.
    pub const fn size_in_bytes(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::Bool => 1,
            DType::F16 | DType::BF16 => 2,
        }
    }

    /// True for the floating-point dtypes: `F32`, `F64`, `F16` and `BF16`.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    }

    /// True for the 16-bit floating-point dtypes, `F16` and `BF16`, whose CPU kernels compute
    /// in `f32` and round once.
    pub const fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }

    /// `torch.promote_types(a, b)`: the dtype both convert to. Categories rank bool <
    /// integer < floating point, and the higher category wins; within a category the wider
    /// type wins, and `F16` with `BF16` (neither holds the other) gives `F32`.
    ///
    /// ```
    /// use devtype::DType;
    /// assert_eq!(DType::promote_types(DType::I64, DType::F16), DType::F16);
    /// assert_eq!(DType::promote_types(DType::F16, DType::BF16), DType::F32);
    /// assert_eq!(DType::promote_types(DType::F32, DType::F64), DType::F64);
    /// ```
    pub const fn promote_types(a: DType, b: DType) -> DType {
        use DType::*;
        match (a, b) {
            (x, y) if x as u8 == y as u8 => x,
            (Bool, x) | (x, Bool) => x,
            (I64, x) | (x, I64) => x,
            (F64, _) | (_, F64) => F64,
            // F32 with a half type, or F16 with BF16.
            _ => F32,
        }
    }

    /// `torch.can_cast(from, to)`: whether an op computing in `from` may write its result into
    /// a `to` tensor (in-place ops). Floating point never casts to an integer or `bool`, and
    /// nothing but `bool` casts to `bool`; narrowing within a category is allowed.
    pub const fn can_cast(from: DType, to: DType) -> bool {
        let float_to_integral = from.is_float() && !to.is_float();
        let non_bool_to_bool = !matches!(from, DType::Bool) && matches!(to, DType::Bool);
        !float_to_integral && !non_bool_to_bool
    }

    /// Every dtype, narrowest category first.
    pub const ALL: [DType; 6] = [
        DType::Bool,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];
}

/// PyTorch's `torch.result_type` over a list of operands, in its three priority classes:
/// tensors with at least one dimension, 0-dim tensors, and wrapped numbers (Rust scalars).
/// A lower class only matters when it is of a higher category than everything above it
/// (`f16_tensor * 2.5` stays `F16`, `i64_tensor * 2.5` is `F32`, a 0-dim `F64` tensor with an
/// `F32` tensor gives `F32`), and a float scalar counts as the default dtype, `F32`.
///
/// ```
/// use devtype::{DType, ResultType, Scalar};
/// let r = ResultType::new().tensor(DType::I64, 1).scalar(Scalar::Float(2.5));
/// assert_eq!(r.finish(), DType::F32);
/// let r = ResultType::new().tensor(DType::F32, 2).tensor(DType::F64, 0);
/// assert_eq!(r.finish(), DType::F32);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResultType {
    dim: Option<DType>,
    zero_dim: Option<DType>,
    wrapped: Option<DType>,
}

impl ResultType {
    /// No operands yet.
    pub const fn new() -> Self {
        ResultType {
            dim: None,
            zero_dim: None,
            wrapped: None,
        }
    }

    const fn join(state: Option<DType>, dtype: DType) -> Option<DType> {
        match state {
            None => Some(dtype),
            Some(s) => Some(DType::promote_types(s, dtype)),
        }
    }

    /// Adds a tensor of `dtype` with `rank` dimensions.
    pub const fn tensor(mut self, dtype: DType, rank: usize) -> Self {
        if rank == 0 {
            self.zero_dim = Self::join(self.zero_dim, dtype);
        } else {
            self.dim = Self::join(self.dim, dtype);
        }
        self
    }

    /// Adds a wrapped number: a float counts as `F32` (the default dtype), an integer as
    /// `I64`, a boolean as `Bool`.
    pub const fn scalar(mut self, s: Scalar) -> Self {
        let dtype = match s {
            Scalar::Float(_) => DType::F32,
            Scalar::Int(_) => DType::I64,
            Scalar::Bool(_) => DType::Bool,
        };
        self.wrapped = Self::join(self.wrapped, dtype);
        self
    }

    /// PyTorch's `combine_categories(higher, lower)`.
    const fn combine(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
        match (higher, lower) {
            (Some(h), _) if h.is_float() => Some(h),
            (Some(h), Some(l)) if matches!(h, DType::Bool) || l.is_float() => {
                Some(DType::promote_types(h, l))
            }
            (Some(h), _) => Some(h),
            (None, l) => l,
        }
    }

    /// The result type (`F32` when no operand was added).
    pub const fn finish(self) -> DType {
        match Self::combine(self.dim, Self::combine(self.zero_dim, self.wrapped)) {
            Some(d) => d,
            None => DType::F32,
        }
    }
}

/// A scalar operand (`x + 2`, `x.eq_scalar(7)`, `Tensor::full(.., v, ..)`), kept exactly: an
/// integer stays an integer, so `i64` tensors with integer scalars are exact beyond 2^53, as in
/// PyTorch. Made from `f64`, `f32`, `i64`, `i32` and `bool` with `into()`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A floating-point value.
    Float(f64),
    /// An integer value.
    Int(i64),
    /// A boolean.
    Bool(bool),
}

impl Scalar {
    /// The value as `f64` (rounded for integers beyond 2^53).
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Float(v) => v,
            Scalar::Int(v) => v as f64,
            Scalar::Bool(b) => b as u8 as f64,
        }
    }

    /// PyTorch's `checked_convert` of a scalar written into a tensor of `dtype` (a fill, a
    /// `clamp` bound): `Err(ScalarOverflow)` when the value is outside the dtype's finite range.
    /// Infinities and NaN go into the floating-point dtypes as they are; NaN, infinities and
    /// values outside `[-2^63, 2^63)` do not go into `I64`; anything goes into `Bool`.
    ///
    /// PyTorch compares against `i64::MAX as f64` (2^63) with `>`, so `2^63` itself passes its
    /// check and then converts with undefined behaviour in C++; here it is refused.
    pub(crate) fn check_fits(self, dtype: DType) -> crate::core::error::Result<()> {
        let max = match dtype {
            DType::Bool | DType::F64 => return Ok(()),
            DType::F32 => f32::MAX as f64,
            DType::F16 => f16::MAX.to_f64(),
            DType::BF16 => bf16::MAX.to_f64(),
            // 2^63: the first value past `i64::MAX`.
            DType::I64 => 9_223_372_036_854_775_808.0,
        };
        let fits = match self {
            Scalar::Bool(_) => true,
            Scalar::Int(i) => dtype == DType::I64 || (i as f64).abs() <= max,
            Scalar::Float(v) if dtype == DType::I64 => v >= -max && v < max,
            // NaN and the infinities are values of every floating-point dtype.
            Scalar::Float(v) => v.is_nan() || v.is_infinite() || v.abs() <= max,
        };
        if fits {
            Ok(())
        } else {
            Err(crate::core::error::Error::ScalarOverflow {
                type_name: dtype.cpp_type_name(),
            })
        }
    }

    /// True for `0`, `0.0`, `-0.0` and `false`.
    pub fn is_zero(self) -> bool {
        match self {
            Scalar::Float(v) => v == 0.0,
            Scalar::Int(v) => v == 0,
            Scalar::Bool(b) => !b,
        }
    }
}

impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}
impl From<f32> for Scalar {
    fn from(v: f32) -> Self {
        Scalar::Float(v as f64)
    }
}
impl From<i64> for Scalar {
    fn from(v: i64) -> Self {
        Scalar::Int(v)
    }
}
impl From<i32> for Scalar {
    fn from(v: i32) -> Self {
        Scalar::Int(v as i64)
    }
}
impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.scalar_type_name())
    }
}

pub(crate) mod sealed {
    use crate::core::cpu_storage::CpuStorage;

    /// Crate-private plumbing of [`Element`](super::Element): how a `Vec<Self>` sits in storage.
    pub trait ElementStorage: Sized + crate::core::pool::ZeroBits {
        fn cpu_slice(storage: &CpuStorage) -> Option<&[Self]>;
        fn cpu_slice_mut(storage: &mut CpuStorage) -> Option<&mut [Self]>;
        fn cpu_buffer_mut(
            storage: &mut CpuStorage,
        ) -> Option<&mut crate::core::pool::PooledVec<Self>>
        where
            Self: super::Element;
        fn into_cpu_storage(data: Vec<Self>) -> CpuStorage;
        fn buffer_into_cpu_storage(data: crate::core::pool::PooledVec<Self>) -> CpuStorage
        where
            Self: super::Element;
        fn pool() -> &'static crate::core::pool::Pool<Self>;
    }
}

/// A type a tensor can hold: `f32`, `f64`, `f16`, `bf16`, `i64` or `bool`.
pub trait Element:
    sealed::ElementStorage
    + Copy
    + Send
    + Sync
    + 'static
    + fmt::Debug
    + fmt::Display
    + PartialEq
    + PartialOrd
    + Default
{
    /// The run-time tag.
    const DTYPE: DType;
    /// Zero (or `false`).
    const ZERO: Self;
    /// One (or `true`).
    const ONE: Self;
    /// Converts from `f64` (rounding toward zero for integers, `!= 0` for booleans).
    fn from_f64(value: f64) -> Self;
    /// Converts to `f64`.
    fn to_f64(self) -> f64;
    /// The value as an exact [`Scalar`].
    fn to_scalar(self) -> Scalar;
    /// Converts from a [`Scalar`]: exact for integers into `i64`; floats into integers round
    /// toward zero (saturating), anything into `bool` is `!= 0`.
    fn from_scalar(s: Scalar) -> Self;
}

mod numeric_sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for i64 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

/// Element types with arithmetic: `f32`, `f64`, `f16`, `bf16`, `i64`.
pub trait Numeric: Element + numeric_sealed::Sealed {}
impl Numeric for f32 {}
impl Numeric for f64 {}
impl Numeric for f16 {}
impl Numeric for bf16 {}
impl Numeric for i64 {}

/// Floating-point elements: the ones with `exp`, `log`, `softmax`, `matmul` and gradients.
pub trait Float:
    Element
    + Numeric
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::ops::AddAssign
    + std::iter::Sum
{
    /// Negative infinity, the identity of `max`.
    const NEG_INFINITY: Self;
    /// `e^self`.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// `self^exponent`.
    fn powf(self, exponent: Self) -> Self;
    /// The larger of two values (NaN propagates, as in PyTorch).
    fn max_nan(self, other: Self) -> Self;
    /// Neither infinite nor NaN.
    fn is_finite(self) -> bool;
}

macro_rules! element {
    ($t:ty, $variant:ident, $zero:expr, $one:expr, |$v:ident| $from:expr, |$s:ident| $to:expr,
     |$sc:ident| $to_scalar:expr, |$fs:ident| $from_scalar:expr) => {
        impl sealed::ElementStorage for $t {
            #[inline]
            fn cpu_slice(storage: &CpuStorage) -> Option<&[Self]> {
                match storage {
                    CpuStorage::$variant(b) => Some(b.as_slice()),
                    _ => None,
                }
            }
            #[inline]
            fn cpu_slice_mut(storage: &mut CpuStorage) -> Option<&mut [Self]> {
                match storage {
                    CpuStorage::$variant(b) => Some(b.as_mut_slice()),
                    _ => None,
                }
            }
            #[inline]
            fn cpu_buffer_mut(
                storage: &mut CpuStorage,
            ) -> Option<&mut crate::core::pool::PooledVec<Self>> {
                match storage {
                    CpuStorage::$variant(b) => Some(b),
                    _ => None,
                }
            }
            #[inline]
            fn into_cpu_storage(data: Vec<Self>) -> CpuStorage {
                CpuStorage::$variant(crate::core::pool::PooledVec::new(data))
            }
            #[inline]
            fn buffer_into_cpu_storage(data: crate::core::pool::PooledVec<Self>) -> CpuStorage {
                CpuStorage::$variant(data)
            }
            fn pool() -> &'static crate::core::pool::Pool<Self> {
                static POOL: crate::core::pool::Pool<$t> = crate::core::pool::Pool::new();
                &POOL
            }
        }
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            const ZERO: Self = $zero;
            const ONE: Self = $one;
            #[inline]
            fn from_f64($v: f64) -> Self {
                $from
            }
            #[inline]
            fn to_f64(self) -> f64 {
                let $s = self;
                $to
            }
            #[inline]
            fn to_scalar(self) -> Scalar {
                let $sc = self;
                $to_scalar
            }
            #[inline]
            fn from_scalar($fs: Scalar) -> Self {
                $from_scalar
            }
        }
    };
}

element!(
    f32,
    F32,
    0.0,
    1.0,
    |v| v as f32,
    |s| s as f64,
    |s| Scalar::Float(s as f64),
    |s| s.to_f64() as f32
);
element!(
    f64,
    F64,
    0.0,
    1.0,
    |v| v,
    |s| s,
    |s| Scalar::Float(s),
    |s| s.to_f64()
);
element!(
    i64,
    I64,
    0,
    1,
    |v| v as i64,
    |s| s as f64,
    |s| Scalar::Int(s),
    |s| match s {
        Scalar::Int(v) => v,
        Scalar::Float(v) => v as i64,
        Scalar::Bool(b) => b as i64,
    }
);
element!(
    bool,
    Bool,
    false,
    true,
    |v| v != 0.0,
    |s| if s { 1.0 } else { 0.0 },
    |s| Scalar::Bool(s),
    |s| match s {
        Scalar::Int(v) => v != 0,
        Scalar::Float(v) => v != 0.0,
        Scalar::Bool(b) => b,
    }
);

macro_rules! float {
    ($t:ty) => {
        impl Float for $t {
            const NEG_INFINITY: Self = <$t>::NEG_INFINITY;
            #[inline]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            #[inline]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline]
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            #[inline]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline]
            fn powf(self, exponent: Self) -> Self {
                <$t>::powf(self, exponent)
            }
            #[inline]
            fn max_nan(self, other: Self) -> Self {
                if self.is_nan() || self > other {
                    self
                } else if other.is_nan() {
                    other
                } else {
                    other
                }
            }
            #[inline]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
        }
    };
}
float!(f32);
float!(f64);

element!(
    f16,
    F16,
    f16::ZERO,
    f16::ONE,
    // Through f32, as C++'s `static_cast<c10::Half>(double)` in PyTorch (`half`'s own
    // `from_f64` drops low bits before rounding, so it can round an f32 tie the wrong way).
    |v| f16::from_f32(v as f32),
    |s| s.to_f64(),
    |s| Scalar::Float(s.to_f64()),
    |s| f16::from_f32(s.to_f64() as f32)
);
element!(
    bf16,
    BF16,
    bf16::ZERO,
    bf16::ONE,
    // Through f32, as C++'s `static_cast<c10::BFloat16>(double)` in PyTorch (`half`'s own
    // `from_f64` drops low bits before rounding, so it can round an f32 tie the wrong way).
    |v| bf16::from_f32(v as f32),
    |s| s.to_f64(),
    |s| Scalar::Float(s.to_f64()),
    |s| bf16::from_f32(s.to_f64() as f32)
);

/// The 16-bit floats, `f16` and `bf16`: stored narrow, computed in `f32` (PyTorch's
/// `opmath_type`), rounded once when a result is written.
pub(crate) trait Half: Float {
    /// Widens exactly.
    fn widen(self) -> f32;
    /// Rounds to nearest, ties to even.
    fn narrow(v: f32) -> Self;
}

macro_rules! half_float {
    ($t:ty) => {
        impl Half for $t {
            #[inline(always)]
            fn widen(self) -> f32 {
                self.to_f32()
            }
            #[inline(always)]
            fn narrow(v: f32) -> Self {
                <$t>::from_f32(v)
            }
        }
        // Each function computes in f32 and rounds once, as PyTorch's CPU kernels do.
        impl Float for $t {
            const NEG_INFINITY: Self = <$t>::NEG_INFINITY;
            #[inline]
            fn exp(self) -> Self {
                <$t>::from_f32(self.to_f32().exp())
            }
            #[inline]
            fn ln(self) -> Self {
                <$t>::from_f32(self.to_f32().ln())
            }
            #[inline]
            fn sqrt(self) -> Self {
                <$t>::from_f32(self.to_f32().sqrt())
            }
            #[inline]
            fn tanh(self) -> Self {
                <$t>::from_f32(self.to_f32().tanh())
            }
            #[inline]
            fn abs(self) -> Self {
                <$t>::from_f32(self.to_f32().abs())
            }
            #[inline]
            fn powf(self, exponent: Self) -> Self {
                <$t>::from_f32(self.to_f32().powf(exponent.to_f32()))
            }
            #[inline]
            fn max_nan(self, other: Self) -> Self {
                if self.is_nan() || self > other {
                    self
                } else {
                    other
                }
            }
            #[inline]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
        }
    };
}
half_float!(f16);
half_float!(bf16);
